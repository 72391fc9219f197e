--[[
  A venue answered 429/418: halve its fleet-wide concurrency (floor min) once per incident,
  start a new observation window, and extend its freeze.

  Input:
    KEYS[1] venue control hash (<prefix>:venue:{<venue>}:control)
    KEYS[2] venue latency list (<prefix>:venue:{<venue>}:latency)
    ARGV[1] now, epoch ms
    ARGV[2] min concurrency
    ARGV[3] max concurrency
    ARGV[4] halve cooldown ms: 429s within it after a halving (requests already in flight when
            the venue started refusing) do not halve again
    ARGV[5] freeze end, epoch ms (0: no freeze)
    ARGV[6] freeze cause

  Hash fields: c concurrency, cs window start, n outcomes, f failures, lh last halving,
               fu frozen until, fc freeze cause.

  Output:
    { concurrency, halved (1 | 0), frozenUntilMs }
]]
local now = tonumber(ARGV[1])
local minC = tonumber(ARGV[2])
local maxC = tonumber(ARGV[3])
local c = tonumber(redis.call("HGET", KEYS[1], "c") or ARGV[3])
c = math.min(maxC, math.max(minC, c))
local halved = 0
local lastHalved = tonumber(redis.call("HGET", KEYS[1], "lh") or "-1e300")
if now - lastHalved >= tonumber(ARGV[4]) then
  c = math.max(minC, math.floor(c / 2))
  halved = 1
  redis.call("HSET", KEYS[1], "lh", now)
end
redis.call("HSET", KEYS[1], "c", c, "cs", now, "n", 0, "f", 0)
redis.call("DEL", KEYS[2])
local fu = tonumber(redis.call("HGET", KEYS[1], "fu") or "0")
local untilMs = tonumber(ARGV[5])
if untilMs > fu then
  fu = untilMs
  redis.call("HSET", KEYS[1], "fu", fu, "fc", ARGV[6])
end
return { c, halved, fu }
