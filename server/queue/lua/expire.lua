-- expire.lua: end every active window that has run out; run by the lease holder
-- on a short sweep, independent of the admission interval.
-- KEYS: cfg, a, as, f, n, s, lease, dv (lib.lua describes each)
-- ARGV[1..2]: see lib.lua.
-- ARGV[3] replica id, ARGV[4] lease ms, ARGV[5] most to expire in one call
-- Returns {'LEADER', expired, ms until the next admission tick is due}
-- or {'FOLLOWER', lease ms left} or {'GONE'} when the event does not exist.
if redis.call('EXISTS', K_CFG) == 0 then
  return {'GONE'}
end
if not hold_lease(ARGV[3], ARGV[4]) then
  return {'FOLLOWER', redis.call('PTTL', K_LEASE)}
end
local due = redis.call('ZRANGEBYSCORE', K_A, '-inf', NOW, 'LIMIT', 0, tonumber(ARGV[5]))
for _, user in ipairs(due) do
  retire(user, 'E', 'expired')
end
local nt = tonumber(redis.call('HGET', K_N, 'next_tick')) or 0
local wait = nt - NOW
if wait < 0 then wait = 0 end
return {'LEADER', #due, wait}
