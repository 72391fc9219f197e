--[[
  Extends a lock only when the caller's token still holds it, so a holder that paused past its
  TTL cannot extend a lock another process has taken since.

  Input:
    KEYS[1] lock key
    ARGV[1] token of the caller
    ARGV[2] new time to live in ms

  Output:
    1 - extended
    0 - not held by this token (expired or taken by another)
]]
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return 1
end
return 0
