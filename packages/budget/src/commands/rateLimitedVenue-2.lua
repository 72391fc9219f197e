--[[
  A venue answered 429/418: halve its fleet-wide concurrency (floor min) once per incident and
  start a new observation window. The freeze the venue asked for is written by freezeVenue-3.lua
  (FleetVenueControl.onRateLimited runs both), the one writer of the freeze record.

  Input:
    KEYS[1] venue control hash (<prefix>:venue:{<venue>}:control)
    KEYS[2] venue latency list (<prefix>:venue:{<venue>}:latency)
    ARGV[1] now, epoch ms
    ARGV[2] min concurrency
    ARGV[3] max concurrency
    ARGV[4] halve cooldown ms: 429s within it after a halving (requests already in flight when
            the venue started refusing) do not halve again

  Hash fields: c concurrency, cs window start, n outcomes, f failures, lh last halving.

  Output:
    { concurrency, halved (1 | 0) }
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
return { c, halved }
