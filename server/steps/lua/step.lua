-- step.lua: one order step of one active attempt, in the flow's order.
-- KEYS[1] as (the event's active attempts), KEYS[2] this attempt's step log,
-- KEYS[3] hd (seat holds), KEYS[4] st (seats taken), KEYS[5] the step's
-- durations (ZSET: seq -> ms) over the event's people, KEYS[6] hu (the holds
-- by holder, which the queue's scripts read to free a hold when its attempt
-- ends).
-- ARGV[1] now in ms, ARGV[2] user id, ARGV[3] seq, ARGV[4] step,
-- ARGV[5] the step before it in the flow ('' for the first), ARGV[6] value,
-- ARGV[7] mode: 'do' checks and records; 'check' checks only (the buying
-- step, before the order); 'done' records only (the buying step, after it),
-- ARGV[8] how long the log is kept, in ms.
-- The log holds adm (admitted at), t:<step> (done at), d:<step> (ms it
-- took), v:<step> (the choice), cap (the captcha's answer while one is out).
-- Returns {'OK', done at, ms} or an error code with nothing recorded.
local now, user, seq, step = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), ARGV[4]
local prev, value, mode, ttl = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local log = KEYS[2]
local me = user .. '|' .. seq

if redis.call('HEXISTS', log, 't:' .. step) == 1 then
  if mode == 'check' then
    return {'DONE'}
  end
  return {'OK', redis.call('HGET', log, 't:' .. step), redis.call('HGET', log, 'd:' .. step)}
end

-- holder_active says whether the hold h ("user|seq") belongs to an active attempt.
local function holder_active(h)
  local hu, hs = string.match(h, '^(.*)|(%d+)$')
  local v = redis.call('HGET', KEYS[1], hu)
  return v ~= false and tonumber(string.match(v, '^(%d+)|')) == tonumber(hs)
end

if mode ~= 'done' then
  local v = redis.call('HGET', KEYS[1], user)
  if not v or tonumber(string.match(v, '^(%d+)|')) ~= seq then
    return {'NOT_ACTIVE'}
  end
  if redis.call('HEXISTS', log, 'adm') == 0 then
    redis.call('HSET', log, 'adm', string.match(v, '^%d+|(%d+)|'))
  end
end
local since
if prev == '' then
  since = tonumber(redis.call('HGET', log, 'adm'))
else
  since = tonumber(redis.call('HGET', log, 't:' .. prev))
end
if not since then
  return {'STEP_OUT_OF_ORDER'}
end

if mode ~= 'done' then
  if step == 'captcha' then
    -- One try per image: a wrong answer costs a new one.
    local want = redis.call('HGET', log, 'cap')
    redis.call('HDEL', log, 'cap')
    if not want or want ~= value then
      return {'CAPTCHA_WRONG'}
    end
  elseif step == 'seat' then
    if redis.call('HEXISTS', KEYS[4], value) == 1 then
      return {'SEAT_TAKEN'}
    end
    local h = redis.call('HGET', KEYS[3], value)
    if h and h ~= me and holder_active(h) then
      return {'SEAT_TAKEN'}
    end
    redis.call('HSET', KEYS[3], value, me)
    redis.call('HSET', KEYS[6], user, seq .. '|' .. value)
  elseif step == 'confirm' or step == 'payment' then
    local seat = redis.call('HGET', log, 'v:seat')
    if not seat or redis.call('HGET', KEYS[3], seat) ~= me then
      return {'STEP_OUT_OF_ORDER'}
    end
  end
end
if mode == 'check' then
  return {'OK'}
end

local took = now - since
redis.call('HSET', log, 't:' .. step, now, 'd:' .. step, took)
if value ~= '' and step ~= 'captcha' then
  redis.call('HSET', log, 'v:' .. step, value)
end
redis.call('PEXPIRE', log, ttl)
redis.call('ZADD', KEYS[5], took, seq)
redis.call('PEXPIRE', KEYS[5], ttl)
return {'OK', now, took}
