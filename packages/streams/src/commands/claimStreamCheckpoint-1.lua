--[[
  Takes a stream's checkpoint for a new holder: raises the fence to the holder's lease token and
  returns every field. A token below the fence is refused: a newer holder claimed it since.

  Input:
    KEYS[1] checkpoint, hash: "_token" -> fence, "t:<symbol>" -> last stored trade id
    ARGV[1] the holder's lease token

  Output:
    false - a holder with a higher token fenced this one out
    { field, value, field, value, ... } - the whole hash, fence included
]]
local fence = tonumber(redis.call("HGET", KEYS[1], "_token") or "0")
local token = tonumber(ARGV[1])
if token < fence then return false end
redis.call("HSET", KEYS[1], "_token", ARGV[1])
return redis.call("HGETALL", KEYS[1])
