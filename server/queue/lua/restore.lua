-- restore.lua: rebuild an event's queue state (after Redis lost it) in steps.
-- KEYS: cfg, seq, w, a, as, f, n, st, s, lease, p, pq (lib.lua describes each)
-- ARGV[1..2]: see lib.lua.
-- ARGV[3] step:
--   begin   ARGV[4] "1" to overwrite a live event, ARGV[5] the seq counter: at
--           least every seq the entries step puts in a lane (see seq in lib.lua).
--           Drops every key of the event (the config last of all comes back
--           in the final step, put_event.lua's "restore", so the event stays
--           missing, and answers 503 while its rebuild runs, until the state
--           is whole) and sets the seq counter; it refuses without "1" when
--           the event is live: it has a config, a seq counter, anyone waiting
--           or active, or a finished attempt.
--           Priority grants (put back by the caller) and device bindings are kept.
--   entries ARGV[4..] groups of 7: letter, seq, user, expiry ms, admitted at ms, admission no,
--           lane ('p' for the priority lane, '' for the normal one).
--           letter W waits in its lane (score seq), A is active until expiry, E/D/L finished,
--           Q is pre-queued (seq is minus its number in the pre-queue, fair_lib.lua);
--           LW and LA (a waiting or active attempt the same user's later one
--           supersedes, see queue.supersede) end LEFT here, with a left
--           record, so that SQL, which holds them live, learns it too.
--   seats   ARGV[4..] pairs: seat id, "user|seq|order id".
--   counters ARGV[4..] field, value pairs for the counters hash.
-- Returns {'OK'}, or {'EVENT_EXISTS'} from begin with nothing changed.
local step = ARGV[3]

if step == 'begin' then
  if ARGV[4] ~= '1' and redis.call('EXISTS', K_CFG, K_SEQ, K_W, K_P, K_A, K_AS, K_F, K_ST) > 0 then
    return {'EVENT_EXISTS'}
  end
  redis.call('DEL', K_CFG, K_SEQ, K_W, K_P, K_A, K_AS, K_F, K_N, K_ST, K_S, K_LEASE, K_PQ)
  redis.call('SET', K_SEQ, ARGV[5])
elseif step == 'entries' then
  for i = 4, #ARGV, 7 do
    local letter, seq, user, lane = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 6]
    if letter == 'Q' then
      redis.call('ZADD', K_PQ, -tonumber(seq), user)
    elseif letter == 'W' then
      if lane == 'p' then
        redis.call('ZADD', K_P, seq, user)
      else
        redis.call('ZADD', K_W, seq, user)
      end
    elseif letter == 'A' then
      local v = seq .. '|' .. ARGV[i + 4] .. '|' .. ARGV[i + 5]
      if lane == 'p' then
        v = v .. '|p'
      end
      redis.call('ZADD', K_A, ARGV[i + 3], user)
      redis.call('HSET', K_AS, user, v)
    elseif letter == 'LW' or letter == 'LA' then
      redis.call('HSET', K_F, seq, 'L')
      if letter == 'LW' then
        emit_lane('left', seq, user, lane, 'w', 1)
      else
        emit_lane('left', seq, user, lane)
      end
    else
      redis.call('HSET', K_F, seq, letter)
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
