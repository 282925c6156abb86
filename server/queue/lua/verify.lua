-- verify.lua: look up attempts; read-only. Serves status, verify and seats.
-- The batcher answers a status read from a snapshot instead when it can
-- (queue/snapshot.go): an attempt waiting in the normal lane while the
-- priority lane is empty, answered as below (seq - lo + 1, or its rank + 1);
-- a change to those answers must change it too.
-- One call takes a batch of lookups on one event (queue.batcher concatenates
-- them): the config (one field, see pack_cfg), the counters and both lane
-- sizes are read once, and a normal lane without gaps ranks its attempts
-- with no read per lookup; the others' lane scores come in one variadic read
-- per lane (none for an empty one).
-- KEYS: cfg, w, a, as, f, n, p (lib.lua describes each)
-- ARGV[1..2]: see lib.lua.
-- ARGV[3] the lookups, each a msgpack str (the user id) then uint (the seq),
-- both from the signed token, one lookup after the other (queue.lookupArg):
-- a batch's are one argument, and its seqs arrive as numbers (unpacking
-- costs Redis a third of what an argument each and tonumber do).
-- Returns the answers in order, then five values for them all: waiting,
-- admitted_total, rate_milli, batch, interval_ms. An attempt waiting in the
-- normal lane is answered by one value, its 1-based place (an integer; the
-- usual answer); any other by five (queue.splitVerify expands both):
--   status, detail, admitted at ms, admission no, lane
-- status is EVENT_NOT_FOUND / TOKEN_NOT_FOUND followed by four zeros for an
-- attempt not found. detail is the 1-based place while WAITING (priority
-- users ahead counted, see place in lib.lua), the expiry in ms while ACTIVE.
local a = unpack_values(ARGV[3])
local n = #a / 2
local out, o = {}, 0
local function answer(st, detail, at, no, lane)
  out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = st, detail, at, no, lane
  o = o + 5
end
local batch, ppm, interval = read_split_cfg()
if not batch then
  for _ = 1, n do answer('EVENT_NOT_FOUND', 0, 0, 0, 0) end
  out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = 0, 0, 0, 0, 0
  return out
end
local nw, np = redis.call('ZCARD', K_W), redis.call('ZCARD', K_P)
local prog = redis.call('HMGET', K_N, 'admitted', 'rate')
local admitted, rate = tonumber(prog[1]) or 0, tonumber(prog[2]) or 0
-- While the normal lane's seqs run on without a gap from its first (lo) to
-- its last (hi) (nobody left from the middle, no priority or direct seq among
-- them), the lane holds every seq from lo to hi: a token's seq among them is
-- its attempt, waiting at rank seq - lo + 1, with no read at all (seqs are
-- whole and unique, and a token names the user its seq was given to, so the
-- test is exact). Lookups outside that range are read.
local lo, hi = 1, 0
if nw > 0 then
  local l = tonumber(redis.call('ZRANGE', K_W, '0', '0', 'WITHSCORES')[2])
  local h = tonumber(redis.call('ZRANGE', K_W, '-1', '-1', 'WITHSCORES')[2])
  if h - l + 1 == nw then lo, hi = l, h end
end
-- The shortest way, for a batch whose lookups all wait in that range while
-- the priority lane is empty (the usual batch): places alone, and the
-- helpers the rest needs are never made (see queue.libMarker).
if np == 0 then
  local i = 1
  while i <= n and a[2 * i] >= lo and a[2 * i] <= hi do
    out[i] = a[2 * i] - lo + 1
    i = i + 1
  end
  if i > n then
    out[n + 1], out[n + 2], out[n + 3], out[n + 4], out[n + 5] = nw, admitted, rate, batch, interval
    return out
  end
  out = {}
end
--@lib

local seqs, rest, nr = {}, {}, 0
for i = 1, n do
  local seq = a[2 * i]
  seqs[i] = seq
  if seq < lo or seq > hi then
    nr = nr + 1
    rest[nr] = a[2 * i - 1]
  end
end
local wsc, psc = {}, {}
if nr > 0 and nw > 0 then wsc = redis.call('ZMSCORE', K_W, unpack(rest)) end
if nr > 0 and np > 0 then psc = redis.call('ZMSCORE', K_P, unpack(rest)) end
local r = 0
for i = 1, n do
  local seq = seqs[i]
  if seq >= lo and seq <= hi then
    -- With nobody in the priority lane a normal place is the rank.
    local rank = seq - lo + 1
    out[o + 1] = np > 0 and place(rank, '', nw, np, batch, ppm) or rank
    o = o + 1
  else
    r = r + 1
    local user = rest[r]
    if wsc[r] and tonumber(wsc[r]) == seq then
      local rank = redis.call('ZRANK', K_W, user) + 1
      out[o + 1] = np > 0 and place(rank, '', nw, np, batch, ppm) or rank
      o = o + 1
    elseif not wsc[r] and psc[r] and tonumber(psc[r]) == seq then
      answer('WAITING', place(redis.call('ZRANK', K_P, user) + 1, 'p', nw, np, batch, ppm), 0, 0, 'p')
    else
      local st, detail, at, no, lane = settled(user, seq)
      if st then
        answer(st, detail, at, no, lane)
      else
        answer('TOKEN_NOT_FOUND', 0, 0, 0, 0)
      end
    end
  end
end
out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = nw + np, admitted, rate, batch, interval
return out
