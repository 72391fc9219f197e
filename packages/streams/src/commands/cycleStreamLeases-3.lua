--[[
  One lease cycle of one worker over the fleet's named streams, in one round trip: beats the
  worker's membership, drops expired leases and members, renews the worker's leases, releases
  what it holds beyond its fair share or what left the stream set, and takes free streams up to
  its fair share. Runs atomically, so two workers can never both take one stream.

  Time is the Redis server's (TIME), so workers with skewed clocks agree on every expiry. A lease
  and a membership written in one cycle expire at the same moment: a dead worker stops counting
  as live exactly when its leases free up, so the survivors' fair share grows in time to take them.

  Lease value: "<expiresAt ms>|<epoch>|<acquiredAt ms>|<worker id>" (worker id last: it may hold "|").
  The epoch is the fencing token: KEYS[3] keeps it per stream and counts up on every acquisition,
  and is never reset, so a holder that lost its lease can always be told apart from the next one.

  Input:
    KEYS[1] live workers, sorted set: worker id -> membership expiry ms
    KEYS[2] leases, hash: stream name -> lease value
    KEYS[3] epochs, hash: stream name -> last epoch handed out
    ARGV[1] worker id
    ARGV[2] lease (and membership) time to live, ms
    ARGV[3..] the stream set as this worker knows it (unique names)

  Output:
    { server now ms, live workers, fair share,
      { name, epoch, name, epoch, ... } every lease the worker holds after the cycle,
      { names released to balance, newest acquired first },
      { names released because they left the stream set },
      number of workers this cycle found dead (membership expired) and dropped }
]]
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local me = ARGV[1]
local ttl = tonumber(ARGV[2])
local total = #ARGV - 2

local reaped = redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
redis.call("ZADD", KEYS[1], now + ttl, me)
local live = redis.call("ZCARD", KEYS[1])
local share = math.ceil(total / live)

local wanted = {}
for i = 3, #ARGV do
  wanted[ARGV[i]] = true
end

local busy = {}
local mine = {}
local removed = {}
local flat = redis.call("HGETALL", KEYS[2])
for i = 1, #flat, 2 do
  local name = flat[i]
  local x, e, a, w = string.match(flat[i + 1], "^(%d+)|(%d+)|(%d+)|(.*)$")
  if tonumber(x) <= now then
    redis.call("HDEL", KEYS[2], name)
  elseif w == me and not wanted[name] then
    redis.call("HDEL", KEYS[2], name)
    removed[#removed + 1] = name
  else
    busy[name] = true
    if w == me then
      mine[#mine + 1] = { name = name, epoch = tonumber(e), at = tonumber(a) }
    end
  end
end

-- Newest acquired first: its session has built the least state, and long-held streams stay put.
table.sort(mine, function(p, q)
  if p.at ~= q.at then
    return p.at > q.at
  end
  return p.name > q.name
end)
local balanced = {}
local held = {}
for i, lease in ipairs(mine) do
  if #mine - #balanced > share then
    redis.call("HDEL", KEYS[2], lease.name)
    balanced[#balanced + 1] = lease.name
  else
    redis.call("HSET", KEYS[2], lease.name, (now + ttl) .. "|" .. lease.epoch .. "|" .. lease.at .. "|" .. me)
    held[#held + 1] = lease.name
    held[#held + 1] = lease.epoch
  end
end

local count = #held / 2
for i = 3, #ARGV do
  if count >= share then
    break
  end
  local name = ARGV[i]
  if not busy[name] then
    local epoch = redis.call("HINCRBY", KEYS[3], name, 1)
    redis.call("HSET", KEYS[2], name, (now + ttl) .. "|" .. epoch .. "|" .. now .. "|" .. me)
    held[#held + 1] = name
    held[#held + 1] = epoch
    count = count + 1
  end
end

return { now, live, share, held, balanced, removed, reaped }
