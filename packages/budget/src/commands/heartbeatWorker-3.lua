--[[
  Records a worker as alive for a venue and counts the live ones, pruning the dead, in one step;
  and detects a fleet restart for the venue's AIMD concurrency.

  Fleet restart: the venue control hash keeps `lw`, the last time any worker beat for the venue.
  When a beat finds it older than the restart period (no live worker for that long: the whole
  fleet was down or scaled to zero), the fleet's learnt concurrency is stale: it is set back to
  the start value (the floor for venues with opaque limits) with a new observation window, and
  the fleet re-learns. One worker restarting inside a live fleet finds `lw` fresh (the others
  beat) and changes nothing.

  Input:
    KEYS[1] venue worker set, sorted by last heartbeat (<prefix>:venue:{<venue>}:workers)
    KEYS[2] venue control hash (<prefix>:venue:{<venue>}:control)
    KEYS[3] venue latency list (<prefix>:venue:{<venue>}:latency)
    ARGV[1] now, epoch ms on the fleet's timeline (the Redis server's clock, FleetTimeline)
    ARGV[2] worker id
    ARGV[3] liveness window ms: a worker not seen for this long is dead
    ARGV[4] restart period ms (0: never reset)
    ARGV[5] start concurrency

  Output:
    { number of live workers (including this one), 1 when this beat reset the concurrency else 0 }
]]
local now = tonumber(ARGV[1])
local restartMs = tonumber(ARGV[4])
local reset = 0
if restartMs > 0 then
  local lw = redis.call("HGET", KEYS[2], "lw")
  if lw and now - tonumber(lw) > restartMs and redis.call("HEXISTS", KEYS[2], "c") == 1 then
    redis.call("HSET", KEYS[2], "c", tonumber(ARGV[5]), "cs", now, "n", 0, "f", 0, "m", 0)
    redis.call("HINCRBY", KEYS[2], "rs", 1)
    redis.call("DEL", KEYS[3])
    reset = 1
  end
end
redis.call("HSET", KEYS[2], "lw", now)
redis.call("ZADD", KEYS[1], now, ARGV[2])
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", "(" .. (now - tonumber(ARGV[3])))
redis.call("PEXPIRE", KEYS[1], tonumber(ARGV[3]) * 2)
return { redis.call("ZCARD", KEYS[1]), reset }
