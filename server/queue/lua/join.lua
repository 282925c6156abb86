-- join.lua: put a user in line, or return the attempt they already hold.
-- KEYS and ARGV[1..2]: see lib.lua.
-- ARGV[3] user id
-- Returns {result, status, seq, detail, waiting, admitted at, admission no, admitted, rate, batch, interval}:
--   result NEW | EXISTS, or an error code with nothing changed;
--   detail is the 1-based position while WAITING, the expiry in ms when ACTIVE.
local user = ARGV[3]
local cfg = redis.call('HMGET', K_CFG, 'capacity', 'policy', 'paused', 'opens', 'closes', 'ttl')
if not cfg[1] then
  return {'EVENT_NOT_FOUND'}
end

local ws = redis.call('ZSCORE', K_W, user)
if ws then
  return {'EXISTS', 'WAITING', ws, redis.call('ZRANK', K_W, user) + 1, redis.call('ZCARD', K_W), 0, 0, progress()}
end
local as, at, no = active_attempt(user)
if as then
  local exp = tonumber(redis.call('ZSCORE', K_A, user)) or 0
  if exp > NOW then
    return {'EXISTS', 'ACTIVE', as, exp, redis.call('ZCARD', K_W), at, no, progress()}
  end
  retire(user, 'E', 'expired')
end

local opens, closes = tonumber(cfg[4]) or 0, tonumber(cfg[5]) or 0
if opens > 0 and NOW < opens then
  return {'EVENT_NOT_OPEN'}
end
if closes > 0 and NOW >= closes then
  return {'EVENT_CLOSED'}
end

local seq = redis.call('INCR', K_SEQ)
redis.call('HINCRBY', K_N, 'joined', 1)
emit('joined', seq, user)
local waiting = redis.call('ZCARD', K_W)
-- Only the capacity policy admits on join: batch promotes on ticks alone, and
-- adaptive must not let anyone in past a downstream it may have found down.
if waiting == 0 and cfg[3] ~= '1' and cfg[2] == 'capacity' then
  local live = redis.call('ZCOUNT', K_A, '(' .. NOW, '+inf')
  if live < tonumber(cfg[1]) then
    local exp, no = admit(user, seq, tonumber(cfg[6]))
    return {'NEW', 'ACTIVE', seq, exp, 0, NOW, no, progress()}
  end
end
redis.call('ZADD', K_W, seq, user)
return {'NEW', 'WAITING', seq, waiting + 1, waiting + 1, 0, 0, progress()}
