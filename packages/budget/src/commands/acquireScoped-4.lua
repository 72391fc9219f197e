--[[
  Spend from one scope's budget (Xetra: one market) and from the venue's aggregate budget over all
  its scopes, fleet-wide, decided in one step: granted only when both have room, and then charged
  to both. The aggregate is the venue's one limiter across every scope (the proactive-limiter
  design's: 5 per 2 s across all downloads, 0.4 s apart), so scopes together never exceed the
  venue's limit; a scope's own budget keeps each scope within it too.

  even  (no bursts): grants are at least `interval` = periodMs / limit apart per unit of weight;
        a mode key holds the earliest time of the next grant (a GCRA with no burst tolerance).
  burst (strict sliding window): at most `floor(limit)` weight in any `periodMs`; a mode key is a
        sorted set of the grants of the last period (score: grant time), a seq key a counter naming
        them (two grants in the same millisecond must stay two members).

  Input:
    KEYS[1] <prefix>:venue:{<venue>}:budget:scope:<scope>:<mode>
    KEYS[2] <prefix>:venue:{<venue>}:budget:scope:<scope>:seq
    KEYS[3] <prefix>:venue:{<venue>}:budget:scopes:<mode>   (the venue's aggregate)
    KEYS[4] <prefix>:venue:{<venue>}:budget:scopes:seq
    ARGV[1] now, epoch ms (the caller's clock)
    ARGV[2] weight
    ARGV[3] limit per period (limit * headroom, may be fractional)
    ARGV[4] period ms
    ARGV[5] 'even' | 'burst'

  Output:
    { 1 | 0 granted, granted: used weight of the venue's aggregate now (burst) or 1 (even)
                    refused: earliest retry time as a string, epoch ms (the later of the two budgets') }
]]
local now = tonumber(ARGV[1])
local weight = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local period = tonumber(ARGV[4])

if ARGV[5] == "even" then
  local interval = period / limit
  local scopeNext = tonumber(redis.call("GET", KEYS[1]) or "0")
  local venueNext = tonumber(redis.call("GET", KEYS[3]) or "0")
  local nextAt = math.max(scopeNext, venueNext)
  if now < nextAt then
    return { 0, string.format("%.3f", nextAt) }
  end
  local after = string.format("%.3f", now + weight * interval)
  local ttl = math.ceil(weight * interval) + period
  redis.call("SET", KEYS[1], after, "PX", ttl)
  redis.call("SET", KEYS[3], after, "PX", ttl)
  return { 1, "1" }
end

local cap = math.floor(limit + 1e-9)
-- The earliest time `weight` more fits into the sliding window of `set`, or nil when it fits now.
local function waitFor(set)
  -- A grant exactly one period old has left the window.
  redis.call("ZREMRANGEBYSCORE", set, "-inf", now - period)
  local used = redis.call("ZCARD", set)
  if used + weight <= cap then
    return nil, used
  end
  local oldest = redis.call("ZRANGE", set, used + weight - cap - 1, used + weight - cap - 1, "WITHSCORES")
  return tonumber(oldest[2]) + period, used
end
local scopeAt = waitFor(KEYS[1])
local venueAt, venueUsed = waitFor(KEYS[3])
if scopeAt or venueAt then
  return { 0, string.format("%.3f", math.max(scopeAt or 0, venueAt or 0)) }
end
for _, pair in ipairs({ { KEYS[1], KEYS[2] }, { KEYS[3], KEYS[4] } }) do
  for _ = 1, weight do
    local seq = redis.call("INCR", pair[2])
    redis.call("ZADD", pair[1], now, tostring(seq))
  end
  redis.call("PEXPIRE", pair[1], period * 2)
  redis.call("PEXPIRE", pair[2], period * 2)
end
return { 1, tostring(venueUsed + weight) }
