-- draw.lua: one step of the draw that puts a random_start event's pre-queue
-- in line at its opening (fair_lib.lua describes it). Engine.Draw computes
-- the order (HMAC-SHA256(seed, user id) ascending, which Lua cannot) and
-- sends it in chunks, so no call holds Redis long however large the pre-queue.
-- KEYS: cfg, seq, w, n, s, pq (lib.lua describes each)
-- ARGV[1..2]: see lib.lua.
-- ARGV[3] step:
--   begin  begins the draw if due and not begun.
--          Returns {state, base, n, seed}: state run | done, or EARLY before
--          opens_at, GONE without the event.
--   place  ARGV[4] the 0-based rank of the first user, ARGV[5..] users in drawn
--          order: each waits at seq draw_base + rank + 1, recorded in one batch
--          entry of joined records. Every drawer computes the same order and
--          places it from the head, so the counter draw_next (the ranks placed)
--          skips those placed already, whatever became of their attempts since:
--          placing again, or from two replicas at once, is harmless.
--          Returns {'OK', placed}.
--   finish marks the draw done and drops the pre-queue. Returns {'OK'}.
local step = ARGV[3]
local cfg = redis.call('HMGET', K_CFG, 'opens', 'seed')
if not cfg[1] then
  return {'GONE'}
end
if step == 'begin' then
  local d = redis.call('HMGET', K_N, 'draw', 'draw_base', 'draw_n')
  if not d[1] then
    if NOW < (tonumber(cfg[1]) or 0) then
      return {'EARLY'}
    end
    local st, base, n = draw_begin()
    return {st, base, n, cfg[2] or ''}
  end
  return {d[1], tonumber(d[2]), tonumber(d[3]), cfg[2] or ''}
elseif step == 'place' then
  local d = redis.call('HMGET', K_N, 'draw_base', 'draw_next')
  local base, placed = tonumber(d[1]), tonumber(d[2]) or 0
  local e = new_batch('joined')
  local first = tonumber(ARGV[4])
  for i = 5 + math.max(placed - first, 0), #ARGV do
    local seq = base + first + i - 4
    redis.call('ZADD', K_W, seq, ARGV[i])
    batch_add(e, seq, '', ARGV[i])
  end
  batch_emit(e)
  if e.n > 0 then
    redis.call('HINCRBY', K_N, 'joined', e.n)
    redis.call('HSET', K_N, 'draw_next', first + #ARGV - 4)
  end
  return {'OK', e.n}
elseif step == 'finish' then
  redis.call('HSET', K_N, 'draw', 'done')
  redis.call('UNLINK', K_PQ)
  return {'OK'}
end
return {'GONE'}
