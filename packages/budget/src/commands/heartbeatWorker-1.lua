--[[
  Records a worker as alive for a venue and counts the live ones, pruning the dead, in one step.

  Input:
    KEYS[1] venue worker set, sorted by last heartbeat (<prefix>:venue:{<venue>}:workers)
    ARGV[1] now, epoch ms
    ARGV[2] worker id
    ARGV[3] liveness window ms: a worker not seen for this long is dead

  Output:
    number of live workers (including this one)
]]
local now = tonumber(ARGV[1])
redis.call("ZADD", KEYS[1], now, ARGV[2])
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", "(" .. (now - tonumber(ARGV[3])))
redis.call("PEXPIRE", KEYS[1], tonumber(ARGV[3]) * 2)
return redis.call("ZCARD", KEYS[1])
