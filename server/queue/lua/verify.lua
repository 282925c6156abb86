-- verify.lua: look up attempts; read-only. Serves status, verify and seats.
-- One call takes a batch of lookups on one event (queue.batcher concatenates
-- them): the config, the counters and both lane sizes are read once, every
-- attempt's lane scores in one variadic read per lane (none for an empty
-- one), and a normal lane without gaps ranks without a ZRANK.
-- KEYS: cfg, w, a, as, f, n, p (lib.lua describes each)
-- ARGV[1..2]: see lib.lua.
-- ARGV[3..] two per lookup: user id, seq (both from the signed token)
-- Returns five values per lookup, in order, then five for them all:
--   {status, detail, admitted at ms, admission no, lane}..., waiting,
--   admitted_total, rate_milli, batch, interval_ms
-- status is EVENT_NOT_FOUND / TOKEN_NOT_FOUND followed by four zeros for an
-- attempt not found. detail is the
-- 1-based place while WAITING (priority users ahead counted, see place in
-- lib.lua).
local n = (#ARGV - 2) / 2
local out = {}
local cfg = redis.call('HMGET', K_CFG, 'capacity', 'batch', 'pshare', 'interval')
local o = 0
local function refuse(code)
  out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = code, 0, 0, 0, 0
  o = o + 5
end
if not cfg[1] then
  for _ = 1, n do refuse('EVENT_NOT_FOUND') end
  out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = 0, 0, 0, 0, 0
  return out
end
local batch, ppm, interval = tonumber(cfg[2]) or 0, tonumber(cfg[3]) or 0, tonumber(cfg[4]) or 0
local argv = ARGV
local users = {}
for i = 1, n do users[i] = argv[2 * i + 1] end
local nw, np = redis.call('ZCARD', K_W), redis.call('ZCARD', K_P)
local wsc, psc = {}, {}
if nw > 0 then wsc = redis.call('ZMSCORE', K_W, unpack(users)) end
if np > 0 then psc = redis.call('ZMSCORE', K_P, unpack(users)) end
local prog = redis.call('HMGET', K_N, 'admitted', 'rate')
local admitted, rate = tonumber(prog[1]) or 0, tonumber(prog[2]) or 0
-- While the normal lane's seqs run on without a gap from its first to its
-- last (nobody left from the middle, no priority or direct seq among them),
-- a waiting seq's rank is seq - first: two reads for the batch instead of a
-- ZRANK per lookup. Seqs are whole and unique, so the test is exact.
local first
if n > 2 and nw > 0 then
  local lo = tonumber(redis.call('ZRANGE', K_W, 0, 0, 'WITHSCORES')[2])
  local hi = tonumber(redis.call('ZRANGE', K_W, -1, -1, 'WITHSCORES')[2])
  if hi - lo + 1 == nw then first = lo end
end
for i = 1, n do
  local user, seq = users[i], tonumber(argv[2 * i + 2])
  local st, detail, at, no, lane
  if wsc[i] and tonumber(wsc[i]) == seq then
    -- With nobody in the priority lane a normal place is the rank.
    local r = first and seq - first + 1 or redis.call('ZRANK', K_W, user) + 1
    st, detail, at, no, lane = 'WAITING', np > 0 and place(r, '', nw, np, batch, ppm) or r, 0, 0, ''
  elseif not wsc[i] and psc[i] and tonumber(psc[i]) == seq then
    st, detail, at, no, lane = 'WAITING', place(redis.call('ZRANK', K_P, user) + 1, 'p', nw, np, batch, ppm), 0, 0, 'p'
  else
    st, detail, at, no, lane = settled(user, seq)
  end
  if st then
    out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = st, detail, at, no, lane
    o = o + 5
  else
    refuse('TOKEN_NOT_FOUND')
  end
end
out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = nw + np, admitted, rate, batch, interval
return out
