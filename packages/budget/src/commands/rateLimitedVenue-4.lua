--[[
  A venue answered 429/418. In one step, so any number of workers reporting the same incident
  act as one:
  - halve its fleet-wide concurrency (floor min) once per incident and start a new observation window;
  - decide the freeze (escalation) and write it (the freeze record and the queue limiter derived
    from it, by the same rule as freezeVenue-3.lua: a freeze is only ever extended).

  Escalation (when ARGV[6] base > 0). The control hash keeps the escalation level `el` and the
  end of the last rate-limit freeze `ee`:
  - a 429 while that freeze is still in force belongs to the incident that caused it (requests
    already in flight when the venue started refusing): no escalation, the freeze only grows to
    a later time the venue itself gave;
  - a 429 within `clean` ms after that freeze ended means the freeze was too short: level + 1;
  - a 429 after a clean period (or the first one ever) starts over at level 0.
  The freeze length is min(cap, base * 2^level). At level 0 a time the venue gave (Retry-After,
  418 ban end) is used as is; at higher levels it is still a minimum. With base 0 the caller
  gives the freeze end itself (ARGV[5]) and no escalation state is touched.

  Input:
    KEYS[1] venue control hash (<prefix>:venue:{<venue>}:control)
    KEYS[2] venue latency list (<prefix>:venue:{<venue>}:latency)
    KEYS[3] the venue queue's limiter key (<prefix>:{<venue>}:limiter)
    KEYS[4] the venue queue's meta hash (<prefix>:{<venue>}:meta)
    ARGV[1] now, epoch ms on the fleet's timeline (the Redis server's clock, FleetTimeline)
    ARGV[2] min concurrency
    ARGV[3] max concurrency
    ARGV[4] halve cooldown ms: 429s within it after a halving (requests already in flight when
            the venue started refusing) do not halve again
    ARGV[5] freeze end the venue gave, epoch ms on the fleet's timeline (0: none)
    ARGV[6] base freeze ms (the connector's freezeMs; 0: no escalation, freeze until ARGV[5])
    ARGV[7] freeze cap ms
    ARGV[8] clean period ms that resets the escalation
    ARGV[9] cause: 429 | 418
    ARGV[10] limiter value (at least any rate-limit max, so the limiter reads as full)
    ARGV[11] rate-limit max installed when the queue has none (never reached by counting)
    ARGV[12] rate-limit duration ms installed with that max
    ARGV[13] start concurrency: the value of a venue without one (see reportOutcome-3.lua)

  Hash fields: c concurrency, cs window start, n outcomes, f failures, m latencies, lh last halving, l4 last 429/418,
  fu frozen until, fc freeze cause, el escalation level, ee end of the last rate-limit freeze.

  Output:
    { concurrency, halved (1 | 0), frozenUntilMs (0 when not frozen), escalation level (-1 without escalation) }
]]
local now = tonumber(ARGV[1])
local minC = tonumber(ARGV[2])
local maxC = tonumber(ARGV[3])
local c = tonumber(redis.call("HGET", KEYS[1], "c") or ARGV[13])
c = math.min(maxC, math.max(minC, c))
local halved = 0
local lastHalved = tonumber(redis.call("HGET", KEYS[1], "lh") or "-1e300")
if now - lastHalved >= tonumber(ARGV[4]) then
  c = math.max(minC, math.floor(c / 2))
  halved = 1
  redis.call("HSET", KEYS[1], "lh", now)
end
redis.call("HSET", KEYS[1], "c", c, "cs", now, "n", 0, "f", 0, "m", 0, "l4", now)
redis.call("DEL", KEYS[2])

local venueUntil = tonumber(ARGV[5])
local base = tonumber(ARGV[6])
local untilMs = venueUntil
local level = -1
if base > 0 then
  local ee = tonumber(redis.call("HGET", KEYS[1], "ee") or "0")
  local el = redis.call("HGET", KEYS[1], "el")
  if ee > now then
    -- The same incident: keep its level and freeze; only a later time from the venue extends it.
    level = tonumber(el or "0")
  else
    if el and now - ee < tonumber(ARGV[8]) then
      level = tonumber(el) + 1
    else
      level = 0
    end
    local cap = tonumber(ARGV[7])
    -- 2^level overflows nothing before the cap is reached; level stops growing once it is.
    local length = math.min(cap, base * math.pow(2, math.min(level, 40)))
    if level > 0 and base * math.pow(2, level - 1) >= cap then
      level = level - 1
    end
    if venueUntil > 0 and level == 0 then
      untilMs = venueUntil
    else
      untilMs = math.max(venueUntil, now + length)
    end
    redis.call("HSET", KEYS[1], "el", level)
  end
  if untilMs > ee then
    redis.call("HSET", KEYS[1], "ee", untilMs)
  end
end

-- The freeze record and its limiter, as freezeVenue-3.lua writes them.
local fu = tonumber(redis.call("HGET", KEYS[1], "fu") or "0")
if untilMs > fu and untilMs > now then
  fu = untilMs
  redis.call("HSET", KEYS[1], "fu", fu, "fc", ARGV[9])
end
if fu <= now then
  return { c, halved, 0, level }
end
local want = math.ceil(fu - now)
if redis.call("PTTL", KEYS[3]) < want then
  if redis.call("HEXISTS", KEYS[4], "max") == 0 then
    redis.call("HSET", KEYS[4], "max", ARGV[11], "duration", ARGV[12])
  end
  redis.call("SET", KEYS[3], ARGV[10], "PX", want)
end
return { c, halved, fu, level }
