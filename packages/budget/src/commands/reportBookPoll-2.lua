--[[
  Counts one finished book poll of a venue in its current cooldown window and, on a failure that
  brings the window to at least minPolls polls with at least failureRatio of them failed, starts
  the venue's order-book cooldown (unless one is in force) and starts the count over. One step on
  keys sharing the venue's hash tag, so N workers count as one.

  Input:
    KEYS[1] the venue's poll counts of the current window (<prefix>:venue:{<venue>}:cooldown:window)
    KEYS[2] the venue's cooldown end, epoch ms on the fleet's timeline, expiring with it (<prefix>:venue:{<venue>}:cooldown)
    ARGV[1] now, epoch ms on the fleet's timeline (the Redis server's clock, FleetTimeline)
    ARGV[2] window ms (the window is floor(now / windowMs))
    ARGV[3] '1' when this poll failed, else '0'
    ARGV[4] failure ratio that starts a cooldown
    ARGV[5] polls a window needs before it can start one
    ARGV[6] cooldown ms

  Hash fields: w window index, n polls, f failed polls.

  Output:
    { cooldown end (0: none), 1 when this call started it else 0 }
]]
local now = tonumber(ARGV[1])
local w = math.floor(now / tonumber(ARGV[2]))
if tonumber(redis.call("HGET", KEYS[1], "w") or "-1") ~= w then
  redis.call("HSET", KEYS[1], "w", w, "n", 0, "f", 0)
end
redis.call("PEXPIRE", KEYS[1], 2 * tonumber(ARGV[2]))
local n = redis.call("HINCRBY", KEYS[1], "n", 1)
local f = tonumber(redis.call("HGET", KEYS[1], "f"))
if ARGV[3] == "1" then
  f = redis.call("HINCRBY", KEYS[1], "f", 1)
end
local untilMs = tonumber(redis.call("GET", KEYS[2]) or "0")
if untilMs > now then
  return { untilMs, 0 }
end
if ARGV[3] == "1" and n >= tonumber(ARGV[5]) and f >= tonumber(ARGV[4]) * n then
  untilMs = now + tonumber(ARGV[6])
  redis.call("SET", KEYS[2], untilMs, "PX", tonumber(ARGV[6]))
  redis.call("HSET", KEYS[1], "n", 0, "f", 0)
  return { untilMs, 1 }
end
return { 0, 0 }
