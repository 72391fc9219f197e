--[[
  Looks up a batch of unit ids in one venue queue: one call per batch instead of two commands per
  unit, so a large enqueue costs Redis and the client little before its addBulk.

  Input:
    KEYS[1] the queue's "meta" key: routes the call to the venue's Cluster slot. Every job key is
            built as ARGV[1] .. id and carries the same hash tag (BullMQ's own scripts build job
            keys from the queue prefix the same way).
    ARGV[1] key prefix of the queue's job hashes, "<prefix>:{<venue>}:"
    ARGV[2..] unit ids

  Output: one integer per id, in order
    0 - no job with this id
    1 - a job that has not finished (waiting, prioritized, delayed or active)
    2 - a finished job (completed or failed: its hash has finishedOn)
]]
local prefix = ARGV[1]
local out = {}
for i = 2, #ARGV do
  local key = prefix .. ARGV[i]
  if redis.call("HEXISTS", key, "finishedOn") == 1 then
    out[i - 1] = 2
  elseif redis.call("EXISTS", key) == 1 then
    out[i - 1] = 1
  else
    out[i - 1] = 0
  end
end
return out
