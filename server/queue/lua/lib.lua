-- lib.lua: helpers prepended to every rushline script (not a script itself).
--
-- Every script gets the same KEYS, all under one hash tag {ev:<id>}:
--   KEYS[1]  cfg    HASH   event config mirrored from SQL (capacity, batch, ...)
--   KEYS[2]  seq    STRING arrival sequence (INCR): the waiting score
--   KEYS[3]  w      ZSET   waiting: member user id, score seq
--   KEYS[4]  a      ZSET   active: member user id, score expiry (ms)
--   KEYS[5]  as     HASH   active user id -> "seq|admitted at ms|admission number" of the admitted attempt
--   KEYS[6]  f      HASH   finished seq -> E (expired) | D (done) | L (left)
--   KEYS[7]  n      HASH   counters: joined, admitted, left, expired, done, rate, next_tick
--   KEYS[8]  st     HASH   seats taken: seat id -> user id|seq|order id
--   KEYS[9]  s      STREAM records: joined, admitted, expired, left, done
--   KEYS[10] lease  STRING admission lease holder (SET NX PX)
-- and the same leading ARGV:
--   ARGV[1] now in ms (the server's clock), ARGV[2] stream MAXLEN (approximate)
-- Script-specific ARGV start at ARGV[3].
--
-- The waiting ZSET is the per-user index: a user id is a member at most once,
-- so a second join finds the first instead of queueing twice.
local K_CFG, K_SEQ, K_W, K_A, K_AS, K_F, K_N, K_ST, K_S, K_LEASE =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local NOW = tonumber(ARGV[1])
local MAXLEN = ARGV[2]

-- emit appends one record to the event stream and returns its id.
local function emit(kind, seq, user, ...)
  return redis.call('XADD', K_S, 'MAXLEN', '~', MAXLEN, '*',
    'k', kind, 'q', seq, 'u', user, 't', NOW, ...)
end

-- active_attempt returns the seq, admission time (ms) and admission number of
-- user's active attempt, or nil.
local function active_attempt(user)
  local v = redis.call('HGET', K_AS, user)
  if not v then return nil, 0, 0 end
  local a = string.find(v, '|', 1, true)
  local b = string.find(v, '|', a + 1, true)
  return tonumber(string.sub(v, 1, a - 1)), tonumber(string.sub(v, a + 1, b - 1)), tonumber(string.sub(v, b + 1))
end

-- retire ends the active attempt of user with a finished letter and record kind.
local function retire(user, letter, kind, ...)
  local seq = active_attempt(user)
  redis.call('ZREM', K_A, user)
  redis.call('HDEL', K_AS, user)
  if seq then
    redis.call('HSET', K_F, seq, letter)
    redis.call('HINCRBY', K_N, kind, 1)
    emit(kind, seq, user, ...)
  end
  return seq
end

-- state returns the status of attempt (user, seq), a detail, and for an
-- active attempt its admission time and number: WAITING -> 0-based rank,
-- ACTIVE/EXPIRED -> expiry ms; nil when unknown.
local function state(user, seq)
  local ws = redis.call('ZSCORE', K_W, user)
  if ws and tonumber(ws) == seq then
    return 'WAITING', redis.call('ZRANK', K_W, user), 0, 0
  end
  local as, at, no = active_attempt(user)
  if as == seq then
    local exp = tonumber(redis.call('ZSCORE', K_A, user)) or 0
    if exp > NOW then
      return 'ACTIVE', exp, at, no
    end
    return 'EXPIRED', exp, at, no
  end
  local f = redis.call('HGET', K_F, tostring(seq))
  if f == 'E' then return 'EXPIRED', 0, 0, 0 end
  if f == 'D' then return 'DONE', 0, 0, 0 end
  if f == 'L' then return 'LEFT', 0, 0, 0 end
  return nil, 0, 0, 0
end

-- owned returns the state of the attempt (ARGV[3] user, ARGV[4] seq) when
-- ARGV[5] says the caller owns it; otherwise nil and the error reply. An
-- unknown attempt outranks a stranger's (API.md's order: 404 before 403).
local function owned()
  local st = state(ARGV[3], tonumber(ARGV[4]))
  if not st then
    return nil, {'TOKEN_NOT_FOUND'}
  end
  if ARGV[5] ~= '1' then
    return nil, {'TOKEN_OWNER_MISMATCH'}
  end
  return st
end

-- hold_lease claims or renews the admission lease for replica; false if another holds it.
local function hold_lease(replica, ms)
  local holder = redis.call('GET', K_LEASE)
  if not holder then
    redis.call('SET', K_LEASE, replica, 'PX', ms)
    return true
  end
  if holder ~= replica then
    return false
  end
  redis.call('PEXPIRE', K_LEASE, ms)
  return true
end

-- progress returns what callers need to estimate a wait:
-- admitted so far, promotion rate (milli per second), admit batch, interval ms.
local function progress()
  local n = redis.call('HMGET', K_N, 'admitted', 'rate')
  local c = redis.call('HMGET', K_CFG, 'batch', 'interval')
  return tonumber(n[1]) or 0, tonumber(n[2]) or 0, tonumber(c[1]) or 0, tonumber(c[2]) or 0
end

-- admit makes user active for ttl seconds, numbers the admission (the
-- event's admitted count) and announces it; returns the expiry and the number.
local function admit(user, seq, ttl)
  local exp = NOW + ttl * 1000
  local no = redis.call('HINCRBY', K_N, 'admitted', 1)
  redis.call('ZADD', K_A, exp, user)
  redis.call('HSET', K_AS, user, seq .. '|' .. NOW .. '|' .. no)
  emit('admitted', seq, user, 'x', exp, 'n', no)
  return exp, no
end

