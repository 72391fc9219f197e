--[[
  Freezes a venue fleet-wide until a time, only ever extending an existing freeze (a short
  Retry-After seen by one worker never shortens a long ban another worker recorded).

  Input:
    KEYS[1] venue control hash (<prefix>:venue:{<venue>}:control)
    ARGV[1] freeze end, epoch ms
    ARGV[2] cause: 429 | 418 | budget | manual

  Output:
    { frozenUntilMs, cause, extended (1 | 0) }
]]
local untilMs = tonumber(ARGV[1])
local current = tonumber(redis.call("HGET", KEYS[1], "fu") or "0")
if untilMs > current then
  redis.call("HSET", KEYS[1], "fu", untilMs, "fc", ARGV[2])
  return { untilMs, ARGV[2], 1 }
end
return { current, redis.call("HGET", KEYS[1], "fc") or "", 0 }
