-- leave.lua: give up a place in line or an active slot.
-- KEYS: cfg, w, a, as, f, n, s, p, dv, hd, hu (lib.lua describes each)
-- ARGV[1..2]: see lib.lua.
-- ARGV[3] user id, ARGV[4] seq, ARGV[5] "1" when the caller owns the token
-- Returns {'OK', previous status} or an error code with nothing changed.
-- Leaving a finished attempt changes nothing and answers OK again. A left
-- record carries w=1 when a waiting place was given up (later users move up),
-- and l=p when that place was in the priority lane.
if redis.call('EXISTS', K_CFG) == 0 then
  return {'EVENT_NOT_FOUND'}
end
local user, seq = ARGV[3], tonumber(ARGV[4])
local st, refused, lane = owned(user, seq, ARGV[5])
if not st then
  return refused
end
if st == 'WAITING' then
  if lane == 'p' then
    redis.call('ZREM', K_P, user)
  else
    redis.call('ZREM', K_W, user)
  end
  unbind(user)
  redis.call('HSET', K_F, seq, 'L')
  redis.call('HINCRBY', K_N, 'left', 1)
  emit_lane('left', seq, user, lane, 'w', 1)
elseif st == 'ACTIVE' then
  retire(user, 'L', 'left')
end
return {'OK', st}
