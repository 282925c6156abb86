-- join_one.lua: the join script as it was before joins went in batches
-- (one join per call), kept as the oracle TestJoinBatchMatchesOneByOne holds
-- lua/join.lua to: a batch must answer and change exactly what these one-join
-- calls would, in order. It needs lib.lua's and fair_lib.lua's helpers, plus
-- these four that only it uses.
-- prequeue is a random_start event's join of user who holds no place in
-- line: before opens (and from preopens) it pre-queues, from opens it begins
-- the draw if no call has yet. It returns the reply when the join is
-- pre-queued (or already was), else nil (a new join without proof, when the
-- event asks for it, is not pre-queued) and whether the draw is unfinished
-- (then nobody is admitted on joining: the drawn go first).
local function prequeue(user, opens, preopens, seq_cap, proof)
  local d = redis.call('HGET', K_N, 'draw')
  if d ~= 'done' and redis.call('ZSCORE', K_PQ, user) then
    return {'PREQUEUED', '0', redis.call('ZCARD', K_PQ)}, true
  end
  if NOW >= opens then
    if not d then
      d = draw_begin()
    end
    return nil, d ~= 'done'
  end
  if NOW < preopens or d or not proof then
    return nil, false
  end
  local n = redis.call('ZCARD', K_PQ)
  if seq_cap and tonumber(redis.call('GET', K_SEQ) or '0') + n >= tonumber(seq_cap) then
    return {'UNAVAILABLE'}, true
  end
  local k = redis.call('HINCRBY', K_N, 'prequeued', 1)
  redis.call('ZADD', K_PQ, k, user)
  emit('prequeued', -k, user)
  return {'PREQUEUED', '1', n + 1}, true
end

-- waiting_total counts everyone waiting in the event, both lanes.
local function waiting_total()
  return redis.call('ZCARD', K_W) + redis.call('ZCARD', K_P)
end

-- progress returns what callers need to estimate a wait:
-- admitted so far, promotion rate (milli per second), admit batch, interval ms.
-- A caller that has read the config's batch and interval fields already
-- passes them (as HMGET returned them) to save reading them again.
local function progress(batch, interval)
  local n = redis.call('HMGET', K_N, 'admitted', 'rate')
  if batch == nil then
    local c = redis.call('HMGET', K_CFG, 'batch', 'interval')
    batch, interval = c[1], c[2]
  end
  return tonumber(n[1]) or 0, tonumber(n[2]) or 0, tonumber(batch) or 0, tonumber(interval) or 0
end

-- admit makes user active for ttl seconds, numbers the admission (the
-- event's admitted count) and announces it; returns the expiry and the number.
-- lane is 'p' for a priority-lane attempt, '' or nil otherwise.
local function admit(user, seq, ttl, lane)
  local exp = NOW + ttl * 1000
  local no = redis.call('HINCRBY', K_N, 'admitted', 1)
  local v = seq .. '|' .. NOW .. '|' .. no
  if lane == 'p' then
    v = v .. '|p'
  end
  redis.call('ZADD', K_A, exp, user)
  redis.call('HSET', K_AS, user, v)
  emit_lane('admitted', seq, user, lane, 'x', exp, 'n', no)
  return exp, no
end

-- KEYS: cfg, seq, w, a, as, f, n, s, p, pg, dv, pq, hd, hu (lib.lua describes each)
-- ARGV[1..2]: see lib.lua.
-- ARGV[3] user id, ARGV[4] priority code to redeem or "", ARGV[5] "1" to put
-- the user in the priority lane without a grant (the simulator's VIRTUAL bots),
-- ARGV[6] device id or "" when device binding is off, ARGV[7] "1" when the join
-- passed the event's proof-of-work challenge or needs none
-- Returns {result, status, seq, detail, waiting, admitted at, admission no, lane,
--          admitted, rate, batch, interval}:
--   result NEW | EXISTS, or an error code alone; an error changes nothing but
--   ending the user's run-out active window, which any call may do
--   (UNAVAILABLE when the seqs SQL has reserved are used up, see put_event.lua);
--   detail is the 1-based place while WAITING, the expiry in ms when ACTIVE;
--   lane is "p" for the priority lane, "" for the normal one.
-- A live attempt is returned as it is, whatever code the call carries.
local user, code, force, dev, proven = ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local cfg = redis.call('HMGET', K_CFG, 'capacity', 'policy', 'paused', 'opens', 'closes', 'ttl', 'batch', 'pshare',
  'interval', 'seq_cap', 'adm_cap', 'mode', 'preopens', 'pow')
if not cfg[1] then
  return {'EVENT_NOT_FOUND'}
end

local wl, pos, ws = waiting_place(user, nil)
if wl then
  local out = {'EXISTS', 'WAITING', ws, pos, waiting_total(), 0, 0, wl}
  for _, v in ipairs({progress(cfg[7], cfg[9])}) do out[#out + 1] = v end
  return out
end
local as, at, no, al = active_attempt(user)
if as then
  local exp = tonumber(redis.call('ZSCORE', K_A, user)) or 0
  if exp > NOW then
    local out = {'EXISTS', 'ACTIVE', as, exp, waiting_total(), at, no, al}
    for _, v in ipairs({progress(cfg[7], cfg[9])}) do out[#out + 1] = v end
    return out
  end
  retire(user, 'E', 'expired')
end

-- 403 outranks 409 (API.md): a bad code is refused before the window is checked.
-- Unknown and redeemed codes answer alike, so answers cannot find out which exist.
if code ~= '' and redis.call('HGET', K_PG, 'c:' .. code) ~= '' then
  return {'FORBIDDEN'}
end

local opens, closes = tonumber(cfg[4]) or 0, tonumber(cfg[5]) or 0
local mode, hold = cfg[12], false
local proof = cfg[14] ~= '1' or proven == '1'
if mode == 'c' then
  return {'EVENT_CLOSED'}
end
if mode == 'r' then
  local pre
  pre, hold = prequeue(user, opens, tonumber(cfg[13]) or 0, cfg[10], proof)
  if pre then
    return pre
  end
end
if not proof then
  return {'CHALLENGE_FAILED'}
end
if opens > 0 and NOW < opens then
  return {'EVENT_NOT_OPEN'}
end
if closes > 0 and NOW >= closes then
  return {'EVENT_CLOSED'}
end

-- One live attempt per device: the holder's binding counts only while its
-- attempt lives (an attempt that ended without clean-up frees it here).
if dev ~= '' then
  local holder = redis.call('HGET', K_DV, 'd:' .. dev)
  if holder and holder ~= user then
    local hs = redis.call('ZSCORE', K_W, holder) or redis.call('ZSCORE', K_P, holder)
    if not hs and redis.call('HEXISTS', K_AS, holder) == 1 then
      hs = (tonumber(redis.call('ZSCORE', K_A, holder)) or 0) > NOW
    end
    if hs then
      return {'DEVICE_BUSY'}
    end
  end
  unbind(user)
  redis.call('HSET', K_DV, 'd:' .. dev, user, 'u:' .. user, dev)
end

-- No seq past what SQL has reserved: after a Redis loss the counter resumes
-- at the reservation, so no number handed out here is ever handed out again.
if cfg[10] and tonumber(redis.call('GET', K_SEQ) or '0') >= tonumber(cfg[10]) then
  return {'UNAVAILABLE'}
end

local lane = ''
if force == '1' or redis.call('HEXISTS', K_PG, 'u:' .. user) == 1 then
  lane = 'p'
end
local seq = redis.call('INCR', K_SEQ)
redis.call('HINCRBY', K_N, 'joined', 1)
if code ~= '' then
  lane = 'p'
  redis.call('HSET', K_PG, 'c:' .. code, user)
  emit_lane('joined', seq, user, lane, 'c', code)
else
  emit_lane('joined', seq, user, lane)
end
local nw, np = redis.call('ZCARD', K_W), redis.call('ZCARD', K_P)
local waiting = nw + np
local out
-- Only the capacity policy admits on join: batch promotes on ticks alone, and
-- adaptive must not let anyone in past a downstream it may have found down.
local pass = mode == 'p'
if pass or (not hold and waiting == 0 and cfg[3] ~= '1' and cfg[2] == 'capacity') then
  local live = redis.call('ZCOUNT', K_A, '(' .. NOW, '+inf')
  if (pass or live < tonumber(cfg[1])) and
      (not cfg[11] or (tonumber(redis.call('HGET', K_N, 'admitted')) or 0) < tonumber(cfg[11])) then
    local exp, no = admit(user, seq, tonumber(cfg[6]), lane)
    out = {'NEW', 'ACTIVE', seq, exp, 0, NOW, no, lane}
  end
end
if not out then
  local r
  if lane == 'p' then
    redis.call('ZADD', K_P, seq, user)
    np = np + 1
    r = np
  else
    redis.call('ZADD', K_W, seq, user)
    nw = nw + 1
    r = nw
  end
  local p = place(r, lane, nw, np, tonumber(cfg[7]) or 0, tonumber(cfg[8]) or 0)
  out = {'NEW', 'WAITING', seq, p, waiting + 1, 0, 0, lane}
end
for _, v in ipairs({progress(cfg[7], cfg[9])}) do out[#out + 1] = v end
return out
