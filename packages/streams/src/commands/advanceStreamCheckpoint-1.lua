--[[
  Moves a stream's checkpoint forward: each symbol's last stored trade id becomes the larger of
  the stored and the given one (a late batch never moves it back).

  Input:
    KEYS[1] checkpoint, hash: "_token" -> fence, "t:<symbol>" -> last stored trade id
    ARGV[1] the holder's lease token
    ARGV[2..] symbol, trade id, symbol, trade id, ...

  Output:
    0 - refused: a holder with a higher token claimed the checkpoint
    1 - moved (or already at least there)
]]
local fence = tonumber(redis.call("HGET", KEYS[1], "_token") or "0")
if tonumber(ARGV[1]) < fence then return 0 end
for i = 2, #ARGV, 2 do
  local cur = tonumber(redis.call("HGET", KEYS[1], "t:" .. ARGV[i]) or "-1")
  if tonumber(ARGV[i + 1]) > cur then redis.call("HSET", KEYS[1], "t:" .. ARGV[i], ARGV[i + 1]) end
end
return 1
