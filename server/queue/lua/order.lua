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
-- An order almost always comes from its caller's live active attempt: that
-- is read at once (two reads), with its seq string and lane for the
-- records. Anything else takes owned's full lookup, which reads the same
-- and so finds no ACTIVE attempt either, for its refusal.
local v
if ARGV[5] == '1' then
  v = redis.call('HGET', K_AS, user)
end
if not (v and parse_attempt(v) == seq and (tonumber(redis.call('ZSCORE', K_A, user)) or 0) > NOW) then
  local st, refused = owned(user, seq, ARGV[5])
  if not st then
    return refused
  end
  return {'NOT_ACTIVE', st}
end
local sseq, lane = string.match(v, '^[^|]*'), ''
if string.sub(v, -2) == '|p' then lane = 'p' end
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
if redis.call('HSETNX', K_ST, seat, user .. '|' .. sseq .. '|' .. oid) == 0 then
  return {'SEAT_TAKEN'}
end
if hold then
  redis.call('HDEL', K_HD, seat)
end
retire_attempt(user, sseq, lane, ARGV[1], 'D', 'done', 'seat', seat, 'o', oid)
return {'OK'}
