-- crowd_lease.lua: claim, renew or give up the lease on a practice drop's
-- crowd, which one replica at a time plays (crowd_join.lua checks it).
-- KEYS[1] lease STRING holder replica id, expiring (PX)
-- ARGV[1] replica id, ARGV[2] lease ms, or 0 to give the lease up if held
-- Returns 1 when ARGV[1] holds the lease after the call, else 0.
local holder = redis.call('GET', KEYS[1])
if ARGV[2] == '0' then
  if holder == ARGV[1] then
    redis.call('DEL', KEYS[1])
  end
  return 0
end
if not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if holder ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
