--[[
  Reads every live lease with the server's time, in one call on the node that holds them (on a
  Cluster, TIME sent on its own could reach another node, with its own clock).

  Input:
    KEYS[1] leases, hash: stream name -> "<expiresAt>|<epoch>|<acquiredAt>|<worker id>"

  Output: { name, lease value, name, lease value, ... } for the leases not yet expired
]]
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local live = {}
local flat = redis.call("HGETALL", KEYS[1])
for i = 1, #flat, 2 do
  local x = tonumber(string.match(flat[i + 1], "^(%d+)|"))
  if x > now then
    live[#live + 1] = flat[i]
    live[#live + 1] = flat[i + 1]
  end
end
return live
