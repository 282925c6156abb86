-- expire.lua: end active windows that have run out, at most ARGV[5] in one
-- call; run by the lease holder on a short sweep, independent of the
-- admission interval.
-- KEYS: cfg, a, as, f, n, s, lease, dv, hd, hu (lib.lua describes each)
-- ARGV[1..2]: see lib.lua.
-- ARGV[3] replica id, ARGV[4] lease ms, ARGV[5] most to expire in this call
-- Returns {'LEADER', expired, ms until the next admission tick is due (0
-- while a tick is left unfinished), ms until the earliest window left ends
-- (-1 when none is)} or {'FOLLOWER', lease ms left} or {'GONE'} when the
-- event does not exist.
-- The windows end as retire would end each, with one write per key and one
-- stream entry for them all.
if redis.call('EXISTS', K_CFG) == 0 then
  return {'GONE'}
end
if not hold_lease(ARGV[3], ARGV[4]) then
  return {'FOLLOWER', redis.call('PTTL', K_LEASE)}
end
-- ARGV as given and string literals: redis.call formats no number.
local due = redis.call('ZRANGEBYSCORE', K_A, '-inf', ARGV[1], 'LIMIT', '0', ARGV[5])
if #due > 0 then
  local vals = redis.call('HMGET', K_AS, unpack(due))
  redis.call('ZREM', K_A, unpack(due))
  redis.call('HDEL', K_AS, unpack(due))
  if redis.call('EXISTS', K_DV) == 1 then
    for _, user in ipairs(due) do
      unbind(user)
    end
  end
  if redis.call('EXISTS', K_HU) == 1 then
    for _, user in ipairs(due) do
      release_hold(user)
    end
  end
  local fin, e, names = {}, new_batch('expired'), decimals({}, '', 1, #due)
  for i, user in ipairs(due) do
    local v = vals[i]
    if v then
      -- "seq|at|no[|p]" (see as in lib.lua): only the seq and lane matter here.
      local seq, lane = string.match(v, '^[^|]*'), ''
      if string.sub(v, -2) == '|p' then lane = 'p' end
      fin[#fin + 1] = seq
      fin[#fin + 1] = 'E'
      batch_add_named(e, names[e.n + 1], seq, lane, user)
    end
  end
  if e.n > 0 then
    redis.call('HSET', K_F, unpack(fin))
    redis.call('HINCRBY', K_N, 'expired', e.n)
    batch_emit(e)
  end
end
local n = redis.call('HMGET', K_N, 'next_tick', 'tick_p', 'tick_w')
local wait = (tonumber(n[1]) or 0) - NOW
if wait < 0 or (tonumber(n[2]) or 0) + (tonumber(n[3]) or 0) > 0 then wait = 0 end
local first, ends = redis.call('ZRANGE', K_A, '0', '0', 'WITHSCORES'), -1
if first[2] then ends = math.max(tonumber(first[2]) - NOW, 0) end
return {'LEADER', #due, wait, ends}
