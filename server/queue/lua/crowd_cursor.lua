-- crowd_cursor.lua: raise a practice drop's crowd cursor that Redis lost
-- (its data flushed, the event rebuilt from SQL) back to where the crowd
-- had joined, so that no index joins twice. Only the lease holder may.
-- KEYS[1] crowd HASH (cursor), KEYS[2] lease STRING (crowd_lease.lua)
-- ARGV[1] replica id, ARGV[2] the cursor to raise to
-- Returns the cursor after the call, or -1 when ARGV[1] holds no lease.
if redis.call('GET', KEYS[2]) ~= ARGV[1] then
  return -1
end
local cur = tonumber(redis.call('HGET', KEYS[1], 'cursor') or '0')
local want = tonumber(ARGV[2])
if cur < want then
  redis.call('HSET', KEYS[1], 'cursor', want)
  return want
end
return cur
