-- order.lua: buy one seat with an active token, atomically; the token becomes DONE.
-- KEYS: cfg, w, a, as, f, n, st, s, p, dv, hd, hu (lib.lua describes each)
-- ARGV[1..2]: see lib.lua.
-- ARGV[3] user id, ARGV[4] seq, ARGV[5] "1" when the caller owns the token,
-- ARGV[6] seat id (already checked to exist), ARGV[7] order id
-- Returns {'OK'} or an error code (NOT_ACTIVE adds the status) with nothing changed.
local cfg = redis.call('HMGET', K_CFG, 'seats')
if not cfg[1] then
  return {'EVENT_NOT_FOUND'}
end
local user, seq, seat, oid = ARGV[3], tonumber(ARGV[4]), ARGV[6], ARGV[7]
local st, refused = owned(user, seq, ARGV[5])
if not st then
  return refused
end
if st ~= 'ACTIVE' then
  return {'NOT_ACTIVE', st}
end
if redis.call('HLEN', K_ST) >= tonumber(cfg[1]) then
  return {'SOLD_OUT'}
end
-- A seat another active attempt holds (server/steps "seat") is not for sale.
local hold = redis.call('HGET', K_HD, seat)
if hold then
  local hu, hs = string.match(hold, '^(.*)|(%d+)$')
  if hu ~= user or tonumber(hs) ~= seq then
    local hseq = active_attempt(hu)
    if hseq == tonumber(hs) then
      return {'SEAT_TAKEN'}
    end
  end
end
if redis.call('HSETNX', K_ST, seat, user .. '|' .. seq .. '|' .. oid) == 0 then
  return {'SEAT_TAKEN'}
end
if hold then
  redis.call('HDEL', K_HD, seat)
end
retire(user, 'D', 'done', 'seat', seat, 'o', oid)
return {'OK'}
