--[[
  Spend from one scope's budget (Xetra: one market), fleet-wide, decided in one step.

  even  (no bursts): grants are at least `interval` = periodMs / limit apart per unit of weight;
        KEYS[1] holds the earliest time of the next grant (a GCRA with no burst tolerance).
  burst (strict sliding window): at most `floor(limit)` weight in any `periodMs`; KEYS[1] is a sorted
        set of the grants of the last period (score: grant time), KEYS[2] a counter naming them
        (two grants in the same millisecond must stay two members).

  Input:
    KEYS[1] <prefix>:venue:{<venue>}:budget:scope:<scope>:<mode>
    KEYS[2] <prefix>:venue:{<venue>}:budget:scope:<scope>:seq
    ARGV[1] now, epoch ms (the caller's clock)
    ARGV[2] weight
    ARGV[3] limit per period (limit * headroom, may be fractional)
    ARGV[4] period ms
    ARGV[5] 'even' | 'burst'

  Output:
    { 1 | 0 granted, granted: used weight of the scope now (burst) or 1 (even)
                    refused: earliest retry time as a string, epoch ms }
]]
local now = tonumber(ARGV[1])
local weight = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local period = tonumber(ARGV[4])
if ARGV[5] == "even" then
  local interval = period / limit
  local nextAt = tonumber(redis.call("GET", KEYS[1]) or "0")
  if now < nextAt then
    return { 0, string.format("%.3f", nextAt) }
  end
  local after = now + weight * interval
  redis.call("SET", KEYS[1], string.format("%.3f", after), "PX", math.ceil(after - now) + period)
  return { 1, "1" }
end
local cap = math.floor(limit + 1e-9)
-- A grant exactly one period old has left the window.
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now - period)
local used = redis.call("ZCARD", KEYS[1])
if used + weight <= cap then
  for _ = 1, weight do
    local seq = redis.call("INCR", KEYS[2])
    redis.call("ZADD", KEYS[1], now, tostring(seq))
  end
  redis.call("PEXPIRE", KEYS[1], period * 2)
  redis.call("PEXPIRE", KEYS[2], period * 2)
  return { 1, tostring(used + weight) }
end
-- Refused: wait until enough of the oldest grants have left the window.
local oldest = redis.call("ZRANGE", KEYS[1], used + weight - cap - 1, used + weight - cap - 1, "WITHSCORES")
return { 0, string.format("%.3f", tonumber(oldest[2]) + period) }
