--[[
  Deletes a lock only when the caller's token holds it (never someone else's lock).

  Input:
    KEYS[1] lock key
    ARGV[1] token of the caller

  Output:
    1 - released
    0 - not held by this token
]]
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("DEL", KEYS[1])
  return 1
end
return 0
