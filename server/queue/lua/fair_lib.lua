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

-- draw_due reports whether a random_start event past its opening has a draw
-- to run or finish before anyone may be admitted.
local function draw_due()
  local c = redis.call('HMGET', K_CFG, 'mode', 'opens')
  if c[1] ~= 'r' or NOW < (tonumber(c[2]) or 0) then
    return false
  end
  return redis.call('HGET', K_N, 'draw') ~= 'done'
end
