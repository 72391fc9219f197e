--[[
  Releases one lock if the caller's token holds it, then takes another (as acquireLock-1.lua):
  a unit's job-lock release sent with the next unit's acquire, in one call. Both keys are under
  one venue's hash tag (one Redis Cluster slot).

  Input:
    KEYS[1] lock key to release
    KEYS[2] lock key to take
    ARGV[1] token holding KEYS[1]
    ARGV[2] token of the caller for KEYS[2]
    ARGV[3] time to live in ms

  Output:
    1 - the caller holds KEYS[2] for ARGV[3] ms from now
    0 - someone else holds it
]]
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("DEL", KEYS[1])
end
local current = redis.call("GET", KEYS[2])
if current == ARGV[2] then
  redis.call("PEXPIRE", KEYS[2], ARGV[3])
  return 1
end
if current then
  return 0
end
redis.call("SET", KEYS[2], ARGV[2], "PX", ARGV[3])
return 1
