--[[
  Writes a venue's freeze (budget, manual, and 429/418 without escalation come here;
  rateLimitedVenue-4.lua writes it by the same rule in the step that decides the escalation).
  Records the freeze in the venue's control hash, only ever
  extending it (a short Retry-After seen by one worker never shortens a long ban another worker
  recorded), and derives from that record what BullMQ needs to stop handing out the venue's units:
  its queue's limiter key, set to expire when the record ends. BullMQ only honours the limiter key
  when the queue has a global rate-limit max, so a count limit too high to ever trip is installed
  when none is set. All three keys carry the venue's hash tag (one Redis Cluster slot).

  Input:
    KEYS[1] venue control hash (<prefix>:venue:{<venue>}:control)
    KEYS[2] the venue queue's limiter key (<prefix>:{<venue>}:limiter)
    KEYS[3] the venue queue's meta hash (<prefix>:{<venue>}:meta)
    ARGV[1] now, epoch ms on the fleet's timeline (the Redis server's clock, FleetTimeline)
    ARGV[2] freeze end, epoch ms on the fleet's timeline (0 or past: only re-derive the limiter from the record)
    ARGV[3] cause: 429 | 418 | budget | manual
    ARGV[4] limiter value (at least any rate-limit max, so the limiter reads as full)
    ARGV[5] rate-limit max installed when the queue has none (never reached by counting)
    ARGV[6] rate-limit duration ms installed with that max

  Hash fields: fu frozen until, fc freeze cause.

  Output:
    { frozenUntilMs (0 when not frozen), cause, extended (1 | 0) }
]]
local now = tonumber(ARGV[1])
local untilMs = tonumber(ARGV[2])
local fu = tonumber(redis.call("HGET", KEYS[1], "fu") or "0")
local extended = 0
if untilMs > fu and untilMs > now then
  fu = untilMs
  redis.call("HSET", KEYS[1], "fu", fu, "fc", ARGV[3])
  extended = 1
end
if fu <= now then
  return { 0, "", 0 }
end
local want = math.ceil(fu - now)
if redis.call("PTTL", KEYS[2]) < want then
  if redis.call("HEXISTS", KEYS[3], "max") == 0 then
    redis.call("HSET", KEYS[3], "max", ARGV[5], "duration", ARGV[6])
  end
  redis.call("SET", KEYS[2], ARGV[4], "PX", want)
end
return { fu, redis.call("HGET", KEYS[1], "fc") or "", extended }
