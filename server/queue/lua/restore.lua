-- restore.lua: rebuild an event's queue state (after Redis lost it) in steps.
-- KEYS: cfg, seq, w, a, as, f, n, st, s, lease, p (lib.lua describes each)
-- ARGV[1..2]: see lib.lua.
-- ARGV[3] step:
--   begin   ARGV[4] "1" to overwrite a live event, ARGV[5] the seq counter.
--           An event marked as awaiting recovery (cfg field "recover" = the
--           highest audited seq when a starting server re-mirrored it from SQL,
--           see put_event.lua) is merged into: its live state (joins since the
--           re-mirror, whose seqs are all above the mark) is kept, the seq
--           counter is raised to ARGV[5] if lower, and the caller goes on with
--           the merge* steps for the attempts up to the mark only.
--           Otherwise it drops every key of the event (the config last of all
--           comes back in the final step, so joins find no event until the
--           state is whole) and sets the seq counter; it refuses without "1"
--           when the event is live: it has a seq counter, anyone waiting or
--           active, or a finished attempt.
--           Priority grants (put back by the caller) and device bindings are kept.
--   entries ARGV[4..] groups of 7: letter, seq, user, expiry ms, admitted at ms, admission no,
--           lane ('p' for the priority lane, '' for the normal one).
--           letter W waits in its lane (score seq), A is active until expiry, E/D/L finished.
--   seats   ARGV[4..] pairs: seat id, "user|seq|order id".
--   counters ARGV[4..] field, value pairs for the counters hash.
--   mentries, mseats, mcounters: the same into a live event. A user who holds
--           a live attempt keeps it; their audited W or A attempt is finished
--           as L (left) instead. Seats already taken stay; counters are added
--           to; mcounters clears the "recover" mark.
-- Returns {'OK'}, {'MERGE', mark} from begin on a marked event, or {'EVENT_EXISTS'}
-- from begin with nothing changed.
local step = ARGV[3]

-- put_attempt puts the W (waiting, in its lane) or A (active) attempt of the
-- entries group at ARGV[i] back.
local function put_attempt(i)
  local seq, user, lane = ARGV[i + 1], ARGV[i + 2], ARGV[i + 6]
  if ARGV[i] == 'W' then
    if lane == 'p' then
      redis.call('ZADD', K_P, seq, user)
    else
      redis.call('ZADD', K_W, seq, user)
    end
    return
  end
  local v = seq .. '|' .. ARGV[i + 4] .. '|' .. ARGV[i + 5]
  if lane == 'p' then
    v = v .. '|p'
  end
  redis.call('ZADD', K_A, ARGV[i + 3], user)
  redis.call('HSET', K_AS, user, v)
end

if step == 'begin' then
  local mark = redis.call('HGET', K_CFG, 'recover')
  if ARGV[4] ~= '1' and mark then
    if tonumber(redis.call('GET', K_SEQ) or '0') < tonumber(ARGV[5]) then
      redis.call('SET', K_SEQ, ARGV[5])
    end
    return {'MERGE', mark}
  end
  if ARGV[4] ~= '1' and redis.call('EXISTS', K_SEQ, K_W, K_P, K_A, K_AS, K_F, K_ST) > 0 then
    return {'EVENT_EXISTS'}
  end
  redis.call('DEL', K_CFG, K_SEQ, K_W, K_P, K_A, K_AS, K_F, K_N, K_ST, K_S, K_LEASE)
  redis.call('SET', K_SEQ, ARGV[5])
elseif step == 'mentries' then
  for i = 4, #ARGV, 7 do
    local letter, seq, user = ARGV[i], ARGV[i + 1], ARGV[i + 2]
    if letter == 'W' or letter == 'A' then
      if redis.call('ZSCORE', K_W, user) or redis.call('ZSCORE', K_P, user) or
          redis.call('HEXISTS', K_AS, user) == 1 then
        redis.call('HSET', K_F, seq, 'L')
        redis.call('HINCRBY', K_N, 'left', 1)
      else
        put_attempt(i)
      end
    else
      redis.call('HSETNX', K_F, seq, letter)
    end
  end
elseif step == 'mseats' then
  for i = 4, #ARGV, 2 do
    redis.call('HSETNX', K_ST, ARGV[i], ARGV[i + 1])
  end
elseif step == 'mcounters' then
  for i = 4, #ARGV, 2 do
    redis.call('HINCRBY', K_N, ARGV[i], ARGV[i + 1])
  end
  redis.call('HDEL', K_CFG, 'recover')
elseif step == 'entries' then
  for i = 4, #ARGV, 7 do
    local letter = ARGV[i]
    if letter == 'W' or letter == 'A' then
      put_attempt(i)
    else
      redis.call('HSET', K_F, ARGV[i + 1], letter)
    end
  end
elseif step == 'seats' then
  for i = 4, #ARGV, 2 do
    redis.call('HSET', K_ST, ARGV[i], ARGV[i + 1])
  end
elseif step == 'counters' then
  if #ARGV >= 4 then
    redis.call('HSET', K_N, unpack(ARGV, 4))
  end
end
return {'OK'}
