--[[
  Counts one connection attempt against a venue's fleet-wide limit, or refuses it, as a sliding
  log: at most ARGV[1] attempts in any ARGV[2] ms, however the venue aligns its own window.

  Time is the Redis server's (TIME), so every worker counts on one clock.

  Input:
    KEYS[1] attempt log, sorted set: attempt id -> time ms
    ARGV[1] attempts allowed per window
    ARGV[2] window, ms
    ARGV[3] a unique id for this attempt

  Output:
    { 1, attempts left in the window } - counted: the caller may connect
    { 0, ms until the oldest attempt leaves the window } - refused
]]
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now - window)
local count = redis.call("ZCARD", KEYS[1])
if count >= limit then
  local oldest = redis.call("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")
  return { 0, math.max(1, tonumber(oldest[2]) + window - now) }
end
redis.call("ZADD", KEYS[1], now, ARGV[3])
redis.call("PEXPIRE", KEYS[1], window)
return { 1, limit - count - 1 }
