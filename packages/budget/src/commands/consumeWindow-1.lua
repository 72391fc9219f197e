--[[
  rate-limiter-flexible's increment script for a venue's fixed-window Redis budget
  (RateLimiterRedis `customIncrTtlLuaScript`), with one change: a weight that does not fit is not
  added. The library's own script adds first and its caller compares after, so a refused weight
  stayed counted until a `reward` gave it back: anyone reading the window meanwhile (tickfleet
  status, the dashboard, another worker's decision) saw more than was granted, even more than
  the limit. The library still sees the sum it would have stored, so it refuses exactly as before.
  With one key per clock window this is the fixed window of the budget's specification
  (decideAcquire, acquire-math.ts): granted when used + weight <= limit.

  Input (as the library calls it):
    KEYS[1] the window's counter (<prefix>:venue:{<venue>}:budget:fw:<window index>)
    ARGV[1] weight to spend
    ARGV[2] seconds the key lives when created (the rest of the window)
    ARGV[3] the limiter's points: the window's effective limit
    ARGV[4] the limiter's duration (unused: every window has its own key)

  Output:
    { weight the window would hold with this one (stored only when within ARGV[3]), ms to live }
]]
redis.call("SET", KEYS[1], 0, "EX", ARGV[2], "NX")
local wanted = tonumber(redis.call("GET", KEYS[1])) + tonumber(ARGV[1])
local consumed = wanted
if wanted <= tonumber(ARGV[3]) then
  consumed = redis.call("INCRBY", KEYS[1], ARGV[1])
end
local ttl = redis.call("PTTL", KEYS[1])
if ttl == -1 then
  redis.call("EXPIRE", KEYS[1], ARGV[2])
  ttl = 1000 * ARGV[2]
end
return { consumed, ttl }
