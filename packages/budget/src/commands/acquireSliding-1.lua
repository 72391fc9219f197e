--[[
  Sliding-window spend of a venue's Redis budget, decided in one step (rate-limiter-flexible's
  windows are fixed). The budget's specification (decideAcquire, acquire-math.ts), as the store
  budgets follow it: slot = floor(now * slots / periodMs); slots below slot - slots have left the
  window and are dropped; granted when the rest plus weight is at most the limit, then added to
  the slot of now.

  Input:
    KEYS[1] the window's slots (<prefix>:venue:{<venue>}:budget:sw), a hash: slot index -> weight
    ARGV[1] now, epoch ms (budget timeline)
    ARGV[2] weight
    ARGV[3] effective limit
    ARGV[4] period ms
    ARGV[5] slots per period (SLIDING_SLOTS)

  Output:
    { 1 | 0 granted, the slots still in the window after the decision: index, weight, index, weight, … }
]]
local now = tonumber(ARGV[1])
local weight = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local period = tonumber(ARGV[4])
local perPeriod = tonumber(ARGV[5])
local slot = math.floor(now * perPeriod / period)
local stored = redis.call("HGETALL", KEYS[1])
local live = {}
local used = 0
for i = 1, #stored, 2 do
  local index = tonumber(stored[i])
  if index < slot - perPeriod then
    redis.call("HDEL", KEYS[1], stored[i])
  else
    local w = tonumber(stored[i + 1])
    used = used + w
    live[#live + 1] = index
    live[#live + 1] = w
  end
end
if used + weight > limit then
  return { 0, live }
end
local after = redis.call("HINCRBY", KEYS[1], tostring(slot), weight)
redis.call("PEXPIRE", KEYS[1], period * 2)
local found = false
for i = 1, #live, 2 do
  if live[i] == slot then
    live[i + 1] = after
    found = true
  end
end
if not found then
  live[#live + 1] = slot
  live[#live + 1] = after
end
return { 1, live }
