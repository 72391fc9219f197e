--[[
  Replaces a venue's active order-book set only if the stored version is still the one the writer
  read (a concurrent discovery of the same venue makes the later one fail and run again): set and
  version in one step. Both keys carry the venue's hash tag, so on Redis Cluster they share a slot.

  Input:
    KEYS[1] the set's version (<prefix>:venue:{<venue>}:active:v)
    KEYS[2] the set, JSON (<prefix>:venue:{<venue>}:active:set)
    ARGV[1] the version the writer read (0: none yet)
    ARGV[2] the new set, JSON
    ARGV[3] the new set's version

  Output:
    -1 when swapped, else the stored version (another discovery swapped the set in between)
]]
local cur = tonumber(redis.call("GET", KEYS[1]) or "0")
if cur ~= tonumber(ARGV[1]) then
  return cur
end
redis.call("SET", KEYS[2], ARGV[2])
redis.call("SET", KEYS[1], ARGV[3])
return -1
