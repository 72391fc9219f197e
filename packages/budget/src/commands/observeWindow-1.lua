--[[
  Raises (never lowers) the used weight of one fixed window of a venue's Redis budget to what the
  venue reported. The key and its integer value are rate-limiter-flexible's own (RateLimiterRedis
  INCRBYs it), so grants and corrections count in one number. The library's set() would overwrite
  (lowering a count other workers raised meanwhile) and a get() then penalty() of the difference
  is two steps (concurrent reports of the same header would each add it); this is the max in one.

  Input:
    KEYS[1] the window's counter (<prefix>:venue:{<venue>}:budget:fw:<window index>)
    ARGV[1] used weight the venue reported
    ARGV[2] ms until the key may expire (the rest of the window, rounded up to whole seconds like the library's TTLs)

  Output:
    the window's used weight after the call
]]
local reported = tonumber(ARGV[1])
local used = tonumber(redis.call("GET", KEYS[1]) or "0")
if reported > used then
  redis.call("SET", KEYS[1], reported, "PX", tonumber(ARGV[2]))
  return reported
end
return used
