-- fair_lib.lua: the opening order of random_start events (issue 17), prepended
-- to every script after lib.lua (not a script itself).
--   pq  ZSET  pre-queue: member user id, score the join's number in it
--             (counters field "prequeued" numbers them); frozen once the draw
--             begins, dropped when it ends
-- Counters (n) of the draw: draw = run | done (absent before), draw_base (the
-- seq counter when it began), draw_n (how many it puts in line), draw_next
-- (how many of them it has placed, from the head). The draw
-- reserves seqs draw_base+1 .. draw_base+draw_n at once for the pre-queued,
-- so every later join gets a higher seq and queues behind all of them; the
-- drawn user of rank r (1-based, by HMAC-SHA256(seed, user id)) gets
-- draw_base + r (draw.lua places them, in chunks).

-- draw_begin freezes the pre-queue and reserves its seqs; a draw of nobody
-- is done at once.
local function draw_begin()
  local n = redis.call('ZCARD', K_PQ)
  local base = tonumber(redis.call('GET', K_SEQ) or '0')
  redis.call('SET', K_SEQ, base + n)
  local st = 'run'
  if n == 0 then st = 'done' end
  redis.call('HSET', K_N, 'draw', st, 'draw_base', base, 'draw_n', n)
  return st, base, n
end

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

-- draw_due reports whether a random_start event past its opening has a draw
-- to run or finish before anyone may be admitted.
local function draw_due()
  local c = redis.call('HMGET', K_CFG, 'mode', 'opens')
  if c[1] ~= 'r' or NOW < (tonumber(c[2]) or 0) then
    return false
  end
  return redis.call('HGET', K_N, 'draw') ~= 'done'
end
