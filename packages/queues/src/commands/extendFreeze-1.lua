--[[
  Freezes a BullMQ queue until a time by setting its rate-limiter key, only ever lengthening an
  existing freeze: a short Retry-After seen by one worker must not cut short a long ban another
  worker recorded. Workers see the key in moveToActive and wait out its PTTL.

  Input:
    KEYS[1] the queue's limiter key (<prefix>:<queue>:limiter)
    ARGV[1] freeze length in ms from now
    ARGV[2] value stored (at least the queue's global rate-limit max, so the limiter counts as full)

  Output:
    remaining freeze in ms after the call (the longer of the old and the new)
]]
local want = tonumber(ARGV[1])
local pttl = redis.call("PTTL", KEYS[1])
if pttl >= want then
  return pttl
end
redis.call("SET", KEYS[1], ARGV[2], "PX", want)
return want
