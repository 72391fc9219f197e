--[[
  Takes a lock, or refreshes it when the caller already holds it (re-entrant by token).

  Input:
    KEYS[1] lock key
    ARGV[1] token of the caller
    ARGV[2] time to live in ms

  Output:
    1 - the caller holds the lock for ARGV[2] ms from now
    0 - someone else holds it
]]
local current = redis.call("GET", KEYS[1])
if current == ARGV[1] then
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return 1
end
if current then
  return 0
end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
return 1
