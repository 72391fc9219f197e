--[[
  A worker leaves the fleet's streams at once (graceful shutdown): drops its membership and every
  lease it holds, so the others' fair share grows and they take the streams on their next cycle
  instead of waiting for the leases to expire.

  Input:
    KEYS[1] live workers, sorted set (see cycleStreamLeases-3.lua)
    KEYS[2] leases, hash: stream name -> "<expiresAt>|<epoch>|<acquiredAt>|<worker id>"
    ARGV[1] worker id

  Output: the names of the streams released
]]
local me = ARGV[1]
redis.call("ZREM", KEYS[1], me)
local released = {}
local flat = redis.call("HGETALL", KEYS[2])
for i = 1, #flat, 2 do
  local w = string.match(flat[i + 1], "^%d+|%d+|%d+|(.*)$")
  if w == me then
    redis.call("HDEL", KEYS[2], flat[i])
    released[#released + 1] = flat[i]
  end
end
return released
