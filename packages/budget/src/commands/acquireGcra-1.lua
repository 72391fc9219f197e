--[[
  GCRA spend of a venue's Redis budget, decided in one step (rate-limiter-flexible has no GCRA).
  The budget's specification (decideAcquire, acquire-math.ts), as the store budgets follow it:
  T = periodMs / limit; tat' = max(tat, now) + weight * T; granted when tat' - now <= periodMs
  (1e-6 absorbs float rounding of weight * T).

  Input:
    KEYS[1] theoretical arrival time (<prefix>:venue:{<venue>}:budget:gcra), epoch ms as a string
    ARGV[1] now, epoch ms (budget timeline)
    ARGV[2] weight
    ARGV[3] effective limit
    ARGV[4] period ms

  Output:
    { 1 | 0 granted, tat after the decision as a string (unchanged on refusal; "" when none) }
]]
local now = tonumber(ARGV[1])
local weight = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local period = tonumber(ARGV[4])
local stored = redis.call("GET", KEYS[1])
local tat = tonumber(stored or "0")
local newTat = math.max(tat, now) + weight * (period / limit)
if newTat - now <= period + 1e-6 then
  -- The bucket is empty again at newTat: the key may go then (plus a period of slack).
  redis.call("SET", KEYS[1], string.format("%.3f", newTat), "PX", math.ceil(newTat - now) + period)
  return { 1, string.format("%.3f", newTat) }
end
return { 0, stored or "" }
