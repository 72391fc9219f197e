--[[
  Records a batch of a venue's unit outcomes and request latencies (from one worker; workers
  batch them for a few hundred ms so the fleet's hot path does not pay one round trip per unit)
  and applies AIMD to the venue's fleet-wide concurrency in the same step, so N workers never
  fight over it. The failure ratio is over units (n outcomes, f failures); the p95 is over
  requests (m latencies in the window, the last sampleSize kept), as the design's control signal
  is defined: a unit of many requests (a Xetra market-day, minutes long) is judged by how fast
  the venue answers each of them, not by how long the whole unit took.
  - gentle decrease: a failure ratio above maxFailureRatio with at least minSamples outcomes, or
    a p95 latency above maxP95LatencyMs with at least minSamples latencies (the high thresholds),
    subtracts 1 (floor min) and starts a new window;
  - additive increase, once increaseAfterMs (the minimum adjustment interval) have passed since
    the window started and it holds minSamples latencies: adds 1 (ceiling max) only when all of
    these hold: no 429 for stableMs (hash field l4, written by rateLimitedVenue-4.lua), the venue
    is not frozen, the failure ratio is under half of maxFailureRatio and the p95 under
    lowP95LatencyMs (the low thresholds: between low and high nothing changes, so the value does
    not oscillate; the failure ratio is over the units the window holds, 0 without any); either
    way a new window starts, so the fleet adds at most 1 per increaseAfterMs. An interval that
    ends with fewer than minSamples latencies judges nothing and keeps its window open: a venue
    answering fewer than minSamples requests per interval is judged over a longer window, never
    over a few samples, and never loses the samples a decrease needs (a window closed every
    interval with 10 of 20 outcomes never reached the decrease).

  In the same step it records the batch in the venue's health record (KEYS[3]), which
  venueHealth() judges: a ring of `nb` buckets of `bms` ms each (fields b<i> bucket number, o<i>
  successes, f<i> failures, c<i> failures by cause as JSON), the streaks of failures (fs) and of
  successes (ss) in a row fleet-wide, the last success (okt) and the last error (let time, lec
  cause, lem message, already sanitized by the caller). A slot whose bucket number is not the
  current one holds an older bucket and starts over; readers sum the slots still in the window.

  Input:
    KEYS[1] venue control hash (<prefix>:venue:{<venue>}:control)
    KEYS[2] venue latency list (<prefix>:venue:{<venue>}:latency)
    KEYS[3] venue health hash (<prefix>:venue:{<venue>}:health)
    ARGV[1] now, epoch ms on the fleet's timeline (the Redis server's clock, FleetTimeline)
    ARGV[2] failures among the batch's outcomes
    ARGV[3] min concurrency
    ARGV[4] max concurrency
    ARGV[5] increaseAfterMs
    ARGV[6] maxFailureRatio
    ARGV[7] maxP95LatencyMs
    ARGV[8] minSamples
    ARGV[9] sampleSize (latencies kept for the p95)
    ARGV[10] records the batch's successful units stored
    ARGV[11] lowP95LatencyMs
    ARGV[12] stableMs
    ARGV[13] start concurrency: the value of a venue without one (a new venue, or one whose fleet
             restarted: see heartbeatWorker-3.lua)
    ARGV[14] the batch's health report ("" when the batch has no unit outcome), JSON: { bms, nb, ttl (ms the record lives unreported),
             causes: { <cause>: failures }, tail: "o" | "f" (the batch's last outcome), run
             (outcomes of that kind at the batch's end), uniform (the whole batch is that kind),
             okAt?: last success ms, err?: { t, c, m } the batch's last failure }
    ARGV[15] number of unit outcomes in the batch (0 or more)
    ARGV[16..] request latencies in ms (0 or more; the batch has at least one outcome or latency)

  Hash fields of the window: cs start, n outcomes, f failures, m latencies.
  Besides the window, the hash keeps two fleet-wide totals that only grow (the dashboard's units/s
  and records/s): "tu" units that succeeded, "tr" records they stored.

  Output:
    { concurrency, change: 1 increased | -1 decreased | 0 unchanged }
]]
local now = tonumber(ARGV[1])
local minC = tonumber(ARGV[3])
local minSamples = tonumber(ARGV[8])
local maxC = tonumber(ARGV[4])
local c = tonumber(redis.call("HGET", KEYS[1], "c") or ARGV[13])
c = math.min(maxC, math.max(minC, c))
local cs = tonumber(redis.call("HGET", KEYS[1], "cs") or ARGV[1])
local count = tonumber(ARGV[15])
local n = redis.call("HINCRBY", KEYS[1], "n", count)
local m = redis.call("HINCRBY", KEYS[1], "m", #ARGV - 15)
redis.call("HINCRBY", KEYS[1], "tu", count - tonumber(ARGV[2]))
redis.call("HINCRBY", KEYS[1], "tr", tonumber(ARGV[10]))
local f
if ARGV[2] == "0" then
  f = tonumber(redis.call("HGET", KEYS[1], "f") or "0")
else
  f = redis.call("HINCRBY", KEYS[1], "f", tonumber(ARGV[2]))
end
if #ARGV > 15 then
  redis.call("RPUSH", KEYS[2], unpack(ARGV, 16))
  redis.call("LTRIM", KEYS[2], -tonumber(ARGV[9]), -1)
end

local function p95()
  local values = redis.call("LRANGE", KEYS[2], 0, -1)
  local count = #values
  if count == 0 then return 0 end
  local nums = {}
  for i = 1, count do nums[i] = tonumber(values[i]) end
  table.sort(nums)
  return nums[math.max(1, math.ceil(0.95 * count))]
end

local function resetWindow()
  redis.call("HSET", KEYS[1], "cs", now, "n", 0, "f", 0, "m", 0)
  redis.call("DEL", KEYS[2])
end

local ratio = 0
if n > 0 then ratio = f / n end
local change = 0
if (n >= minSamples and ratio > tonumber(ARGV[6])) or (m >= minSamples and p95() > tonumber(ARGV[7])) then
  if c > minC then
    c = c - 1
    change = -1
  end
  resetWindow()
else
  local fu = tonumber(redis.call("HGET", KEYS[1], "fu") or "0")
  if now - cs >= tonumber(ARGV[5]) and fu <= now and m >= minSamples then
    local l4 = tonumber(redis.call("HGET", KEYS[1], "l4") or "-1e300")
    if now - l4 >= tonumber(ARGV[12]) and (ratio == 0 or ratio < tonumber(ARGV[6]) / 2) and p95() < tonumber(ARGV[11]) and c < maxC then
      c = c + 1
      change = 1
    end
    resetWindow()
  else
    redis.call("HSET", KEYS[1], "cs", cs)
  end
end
redis.call("HSET", KEYS[1], "c", c)
if ARGV[14] == "" then
  return { c, change }
end

local h = cjson.decode(ARGV[14])
local bms = tonumber(h.bms)
local nb = tonumber(h.nb)
local stored = redis.call("HMGET", KEYS[3], "bms", "nb")
local storedNb = tonumber(stored[2]) or 0
if tonumber(stored[1]) ~= bms or storedNb ~= nb then
  -- Another bucket size or count: the stored slots mean nothing under it.
  for i = 0, storedNb - 1 do redis.call("HDEL", KEYS[3], "b" .. i, "o" .. i, "f" .. i, "c" .. i) end
  redis.call("HSET", KEYS[3], "bms", bms, "nb", nb)
end
local bucket = math.floor(now / bms)
local slot = bucket % nb
local cur = redis.call("HMGET", KEYS[3], "b" .. slot, "o" .. slot, "f" .. slot, "c" .. slot)
local okN, failN, causes = 0, 0, {}
if tonumber(cur[1]) == bucket then
  okN = tonumber(cur[2]) or 0
  failN = tonumber(cur[3]) or 0
  if cur[4] then causes = cjson.decode(cur[4]) end
end
local failures = tonumber(ARGV[2])
for cause, n in pairs(h.causes) do causes[cause] = (causes[cause] or 0) + n end
redis.call("HSET", KEYS[3], "b" .. slot, bucket, "o" .. slot, okN + count - failures, "f" .. slot, failN + failures, "c" .. slot, cjson.encode(causes))
local streak, other = "ss", "fs"
if h.tail == "f" then streak, other = "fs", "ss" end
if h.uniform then
  redis.call("HINCRBY", KEYS[3], streak, h.run)
else
  redis.call("HSET", KEYS[3], streak, h.run)
end
redis.call("HSET", KEYS[3], other, 0)
if h.okAt and h.okAt > (tonumber(redis.call("HGET", KEYS[3], "okt")) or 0) then redis.call("HSET", KEYS[3], "okt", h.okAt) end
if h.err and h.err.t >= (tonumber(redis.call("HGET", KEYS[3], "let")) or 0) then
  redis.call("HSET", KEYS[3], "let", h.err.t, "lec", h.err.c, "lem", h.err.m)
end
redis.call("PEXPIRE", KEYS[3], h.ttl)
return { c, change }
