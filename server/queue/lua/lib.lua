-- lib.lua: helpers prepended to every rushline script (not a script itself).
--
-- Each script's header lists the keys it uses, by the names below; the script
-- gets them as KEYS in that order, bound to the locals K_CFG, K_SEQ, ... before
-- this file (queue.prelude), and the keys it does not list are nil. All of an
-- event's keys share the hash tag {ev:<id>}, so one Redis Cluster slot holds them:
--   cfg    HASH   event config mirrored from SQL (capacity, batch, pshare, ...)
--   seq    STRING arrival sequence (INCR): the waiting score of both lanes; every
--                 score in w and p is at most seq (join.lua's shortest way takes
--                 a run's adds back by their scores, past seq)
--   w      ZSET   waiting, normal lane: member user id, score seq
--   a      ZSET   active: member user id, score expiry (ms)
--   as     HASH   active user id -> "seq|admitted at ms|admission number[|p]" of the
--                 admitted attempt; the optional "|p" marks a priority-lane attempt
--   f      HASH   finished seq -> E (expired) | D (done) | L (left)
--   n      HASH   counters: joined, admitted, left, expired, done, rate, next_tick
--   st     HASH   seats taken: seat id -> user id|seq|order id
--   s      STREAM records: joined, admitted, expired, left, done; a priority-lane
--                 attempt's records carry l=p
--   lease  STRING admission lease holder (SET NX PX)
--   p      ZSET   waiting, priority lane (FAST TRACK): member user id, score seq
--   pg     HASH   priority grants: "u:<user id>" -> "1"; "c:<code>" -> "" while
--                 unredeemed, the redeeming user id after
--   dv     HASH   device binding: "d:<device>" -> user id, "u:<user id>" -> device,
--                 while that user holds a live attempt
--   hd     HASH   seat holds of the order steps (server/steps): seat id ->
--                 "user id|seq"; a hold binds only while that attempt is active
--   hu     HASH   the holds by holder: user id -> "seq|seat id", so an attempt
--                 that ends (expired, left, done) frees its hold at once
-- Every script gets the same leading ARGV:
--   ARGV[1] now in ms (the server's clock), ARGV[2] stream MAXLEN (approximate;
--   0, the default, trims nothing: see xadd)
-- Script-specific ARGV start at ARGV[3].
--
-- The waiting ZSETs are the per-user index: a user id is a member of at most
-- one of them, once, so a second join finds the first instead of queueing twice.
local NOW = tonumber(ARGV[1])
local MAXLEN = ARGV[2]
-- JOIN_CFG is the struct format of cfg field b (pack_cfg, join_cfg). It
-- carries no version: a b of another layout would make struct.unpack fail
-- every join while servers of both layouts run, so a new layout takes a
-- new field name.
local JOIN_CFG = '<dBdddddddddsBs'

-- xadd appends one entry of the field-value pairs given to the event
-- stream and returns its id. The stream is the audit trail's buffer: only
-- the audit writer trims it, never past what it has written to SQL
-- (queue.Engine.Trim). An engine without an audit writer may cap it with
-- a MAXLEN (queue.WithStreamMaxLen), at the cost of records nobody read.
local function xadd(...)
  if MAXLEN == '0' then
    return redis.call('XADD', K_S, '*', ...)
  end
  return redis.call('XADD', K_S, 'MAXLEN', '~', MAXLEN, '*', ...)
end

-- emit appends one record to the event stream and returns its id.
local function emit(kind, seq, user, ...)
  return xadd('k', kind, 'q', seq, 'u', user, 't', NOW, ...)
end

-- emit_lane is emit for an attempt in lane ('p' or ''): a priority-lane
-- attempt's records carry l=p; normal ones stay as they were.
local function emit_lane(kind, seq, user, lane, ...)
  if lane == 'p' then
    return emit(kind, seq, user, 'l', 'p', ...)
  end
  return emit(kind, seq, user, ...)
end

-- parse_attempt reads an active attempt's "seq|admitted at|admission
-- number[|p]" (the as hash) into seq, admission time (ms), admission number
-- and lane ('p' or '').
local function parse_attempt(v)
  local a = string.find(v, '|', 1, true)
  local b = string.find(v, '|', a + 1, true)
  local c = string.find(v, '|', b + 1, true)
  local lane = ''
  if c then
    lane = string.sub(v, c + 1)
  else
    c = #v + 1
  end
  return tonumber(string.sub(v, 1, a - 1)), tonumber(string.sub(v, a + 1, b - 1)),
    tonumber(string.sub(v, b + 1, c - 1)), lane
end

-- active_attempt returns the seq, admission time (ms), admission number and
-- lane ('p' or '') of user's active attempt, or nil.
local function active_attempt(user)
  local v = redis.call('HGET', K_AS, user)
  if not v then return nil, 0, 0, '' end
  return parse_attempt(v)
end

-- A batch entry is one stream entry holding one record per attempt, for a
-- fraction of the cost of an entry each: fields k (kind), t (NOW), the
-- fields all its records share (x: the expiry of admitted ones; n: the
-- admission number of the first, the others following in order), b (how
-- many records), and field i = "seq lane user" for the i-th attempt (lane p
-- or -). queue.parseRecords expands it into one Record each, in order.

-- new_batch starts a batch entry of kind with the shared field pairs given.
local function new_batch(kind, ...)
  return {n = 0, f = {'k', kind, 't', NOW, ...}}
end

-- batch_add adds one attempt's record to batch entry e.
local function batch_add(e, seq, lane, user)
  local n, f = e.n + 1, e.f
  e.n = n
  if lane ~= 'p' then lane = '-' end
  f[#f + 1] = n
  f[#f + 1] = seq .. ' ' .. lane .. ' ' .. user
end

-- batch_emit appends batch entry e to the stream unless it holds no record.
local function batch_emit(e)
  if e.n == 0 then return end
  local f = e.f
  f[#f + 1] = 'b'
  f[#f + 1] = e.n
  xadd(unpack(f))
end

-- cfg_fields reads the cfg fields join.lua and verify.lua need at every
-- call: capacity, policy, paused, opens, closes, ttl, batch, pshare,
-- interval, seq_cap, adm_cap, mode, preopens, pow (false when missing).
local function cfg_fields()
  return redis.call('HMGET', K_CFG, 'capacity', 'policy', 'paused', 'opens', 'closes', 'ttl', 'batch', 'pshare',
    'interval', 'seq_cap', 'adm_cap', 'mode', 'preopens', 'pow')
end

-- pack_cfg keeps cfg_fields in cfg field j as one string, joined by "|" (no
-- value holds one), a missing field empty, and batch, pshare and interval
-- alike in field v: reading one field and cutting it costs Redis a third
-- of what reading the fields does. Where Redis has cmsgpack (miniredis, the
-- embedded store of make run, has none) it also keeps them in field m as
-- one msgpack array, the numeric ones as numbers: unpacking it in C spares
-- join.lua cutting j with a pattern and parsing each number (strtod) at
-- every call; where it has struct, field b holds them as join_cfg returns
-- them. Field m stays for servers from before b. Every script that writes
-- those fields calls it after.
local function pack_cfg()
  local c = cfg_fields()
  for i = 1, 14 do c[i] = c[i] or '' end
  local j = table.concat(c, '|')
  redis.call('HSET', K_CFG, 'j', j, 'v', c[7] .. '|' .. c[8] .. '|' .. c[9])
  local mp = rawget(_G, 'cmsgpack')
  if mp then
    -- capacity, opens, closes, ttl, batch, pshare, interval, seq_cap,
    -- adm_cap and preopens are numbers; policy, paused, mode and pow stay
    -- strings; a missing one stays "". The 15th value is j itself.
    for _, i in ipairs({1, 4, 5, 6, 7, 8, 9, 10, 11, 13}) do c[i] = tonumber(c[i]) or '' end
    c[15] = j
    redis.call('HSET', K_CFG, 'm', mp.pack(c))
  end
  local st = rawget(_G, 'struct')
  if st and c[1] ~= '' then
    -- Field b: what join.lua reads at every call, as join_cfg returns it,
    -- in one struct.pack (JOIN_CFG): the numbers as doubles, a missing cap
    -- -1, any other missing number 0; then j, so a server that rewrites j
    -- without b (one from before b) leaves b unread.
    local num = function(i, missing) return tonumber(c[i]) or missing end
    redis.call('HSET', K_CFG, 'b', st.pack(JOIN_CFG, num(1, 0),
      (c[3] ~= '1' and c[2] == 'capacity') and 1 or 0, num(4, 0), num(5, 0), num(6, 0), num(7, 0), num(8, 0),
      num(9, 0), num(10, -1), num(11, -1), num(13, 0), c[12], c[14] == '1' and 1 or 0, j))
  end
end

-- read_cfg returns cfg_fields from field m, or cut from field j ("" for a
-- missing one), or, for an event whose config predates both, as
-- cfg_fields reads them; its first value is false when the event has no
-- config. The numeric fields may come as numbers or strings: read them
-- with tonumber. Field m counts only while it carries the j beside it: a
-- server from before field m (a replica not yet upgraded) rewrites j alone.
local function read_cfg()
  local j
  local mp = rawget(_G, 'cmsgpack')
  if mp then
    local f = redis.call('HMGET', K_CFG, 'm', 'j')
    if f[1] then
      local c = mp.unpack(f[1])
      if c[15] == f[2] then return c end
    end
    j = f[2]
  else
    j = redis.call('HGET', K_CFG, 'j')
  end
  if not j then return cfg_fields() end
  return {string.match(j, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)$')}
end

-- join_cfg returns what join.lua needs of the event's config at every
-- call, or nil when the event has none: capacity, direct (true when the
-- capacity policy admits on join: not paused), opens, closes, ttl, batch,
-- pshare (ppm), interval, seq_cap, adm_cap (nil when uncapped: caps are
-- never negative, and b writes a missing one as -1), preopens, mode, pow
-- (true when new joins must bring proof of work); a missing opens, closes,
-- batch, pshare, interval or preopens is 0 (capacity and ttl are always
-- written). Field b holds them packed (pack_cfg): one field read and one
-- struct.unpack in C cost Redis about a third of read_cfg's msgpack and
-- the table and tonumber calls after it. Without a b that matches j (a
-- store without struct, a config written by a server from before b) they
-- come from read_cfg.
local function join_cfg()
  local st = rawget(_G, 'struct')
  if st then
    local f = redis.call('HMGET', K_CFG, 'b', 'j')
    if f[1] then
      local capacity, direct, opens, closes, ttl, batch, ppm, interval, seq_cap, adm_cap, preopens, mode, pow, j =
        st.unpack(JOIN_CFG, f[1])
      if j == f[2] then
        if seq_cap < 0 then seq_cap = nil end
        if adm_cap < 0 then adm_cap = nil end
        return capacity, direct == 1, opens, closes, ttl, batch, ppm, interval, seq_cap, adm_cap, preopens, mode,
          pow == 1
      end
    end
  end
  local c = read_cfg()
  if not c[1] then return nil end
  return tonumber(c[1]), c[3] ~= '1' and c[2] == 'capacity', tonumber(c[4]) or 0, tonumber(c[5]) or 0,
    tonumber(c[6]), tonumber(c[7]) or 0, tonumber(c[8]) or 0, tonumber(c[9]) or 0, tonumber(c[10]),
    tonumber(c[11]), tonumber(c[13]) or 0, c[12], c[14] == '1'
end

-- read_split_cfg returns the event's admit batch, priority share (ppm) and
-- admit interval (ms) as numbers, or nil when the event has no config.
local function read_split_cfg()
  local v = redis.call('HGET', K_CFG, 'v')
  if not v then
    local c = redis.call('HMGET', K_CFG, 'batch', 'pshare', 'interval')
    if not c[1] then return nil end
    return tonumber(c[1]) or 0, tonumber(c[2]) or 0, tonumber(c[3]) or 0
  end
  local b, p, i = string.match(v, '^(%d*)|(%d*)|(%d*)$')
  return tonumber(b) or 0, tonumber(p) or 0, tonumber(i) or 0
end

-- unpack_values returns the msgpack values of s, one after the other, as
-- one table: the joins of join.lua (queue.joinArgv) and the lookups of
-- verify.lua (queue.lookupArg). cmsgpack reads them where Redis has it;
-- miniredis (the embedded store of make run) has none, so the few forms
-- those write are read here: str, positive fixint, uint 32 and 64, false
-- and true.
local function unpack_values(s)
  local mp = rawget(_G, 'cmsgpack')
  if mp then return {mp.unpack(s)} end
  local a, i, n, byte = {}, 1, #s, string.byte
  while i <= n do
    local b, v, len = byte(s, i), nil, -1
    if b >= 0xa0 and b <= 0xbf then
      len, i = b - 0xa0, i + 1
    elseif b == 0xd9 then
      len, i = byte(s, i + 1), i + 2
    elseif b == 0xda then
      len, i = byte(s, i + 1) * 256 + byte(s, i + 2), i + 3
    elseif b == 0xdb then
      len = 0
      for k = 1, 4 do len = len * 256 + byte(s, i + k) end
      i = i + 5
    elseif b == 0xc2 or b == 0xc3 then
      v, i = b == 0xc3, i + 1
    else
      local w = 0
      if b == 0xce then w = 4 elseif b == 0xcf then w = 8 end
      v = b
      if w > 0 then
        v = 0
        for k = 1, w do v = v * 256 + byte(s, i + k) end
      end
      i = i + 1 + w
    end
    if len >= 0 then
      v = string.sub(s, i, i + len - 1)
      i = i + len
    end
    a[#a + 1] = v
  end
  return a
end

-- unbind frees the device user held, if any.
local function unbind(user)
  local dev = redis.call('HGET', K_DV, 'u:' .. user)
  if dev then
    redis.call('HDEL', K_DV, 'u:' .. user)
    if redis.call('HGET', K_DV, 'd:' .. dev) == user then
      redis.call('HDEL', K_DV, 'd:' .. dev)
    end
  end
end

-- release_hold frees the seat user's attempt holds in the order steps, if
-- any: called when user's active attempt ends, so the hold binds nobody.
local function release_hold(user)
  local v = redis.call('HGET', K_HU, user)
  if not v then return end
  redis.call('HDEL', K_HU, user)
  local seq, seat = string.match(v, '^(%d+)|(.*)$')
  if seat and redis.call('HGET', K_HD, seat) == user .. '|' .. seq then
    redis.call('HDEL', K_HD, seat)
  end
end

-- retire ends the active attempt of user with a finished letter and record kind.
local function retire(user, letter, kind, ...)
  local seq, _, _, lane = active_attempt(user)
  redis.call('ZREM', K_A, user)
  redis.call('HDEL', K_AS, user)
  unbind(user)
  release_hold(user)
  if seq then
    redis.call('HSET', K_F, seq, letter)
    redis.call('HINCRBY', K_N, kind, 1)
    emit_lane(kind, seq, user, lane, ...)
  end
  return seq
end

-- share_split returns how many of batch the priority lane and the normal
-- lane get per tick: ceil(batch x share), share in parts per million, and
-- the rest. Integer arithmetic, so queue.Split in Go computes the same.
local function share_split(batch, ppm)
  local pp = math.floor((batch * ppm + 999999) / 1000000)
  return pp, batch - pp
end

-- place turns a 1-based rank within a lane into the 1-based place in the
-- event: the attempts admitted before it when nobody else joins, plus one.
-- nw and np are how many wait in the normal and the priority lane. Each tick
-- admits pp priority and nn normal, priority first, and room one lane cannot
-- use goes to the other; a lane of n drains in tick ceil(n/per tick). A normal
-- attempt is served in tick k = ceil(r/nn) behind the priority attempts of
-- ticks 1..k (the last tick gives batch - (nw - (k-1)*nn) when the normal lane
-- drains in it; all np if nn = 0). A priority attempt has the normal ones of
-- earlier ticks ahead: the normal lane drains in tick t = ceil(nw/nn); before
-- it, r is served in tick ceil(r/pp) behind (k-1)*nn; in tick t the priority
-- lane has batch - (nw - (t-1)*nn) slots, behind (t-1)*nn; after it, all nw.
-- queue.Place is the Go twin.
local function place(r, lane, nw, np, batch, ppm)
  local pp, nn = share_split(batch, ppm)
  if lane ~= 'p' then
    if nn <= 0 then return np + r end
    local k = math.floor((r + nn - 1) / nn)
    local last = pp
    if k == math.floor((nw + nn - 1) / nn) then
      last = batch - (nw - (k - 1) * nn)
    end
    return r + math.min(np, (k - 1) * pp + last)
  end
  if nn <= 0 or nw <= 0 then return r end
  local t = math.floor((nw + nn - 1) / nn)
  local before = (t - 1) * pp
  if r <= before then
    return r + (math.floor((r + pp - 1) / pp) - 1) * nn
  end
  if r <= before + batch - (nw - (t - 1) * nn) then
    return r + (t - 1) * nn
  end
  return r + nw
end

-- waiting_place returns the lane ('p' or '') and 1-based place of a waiting
-- user, or nil when user waits in neither lane with seq (any seq when seq is nil).
local function waiting_place(user, seq)
  local lane, key = '', K_W
  local ws = redis.call('ZSCORE', K_W, user)
  if not ws then
    ws = redis.call('ZSCORE', K_P, user)
    lane, key = 'p', K_P
  end
  if not ws or (seq and tonumber(ws) ~= seq) then
    return nil
  end
  local batch, ppm = read_split_cfg()
  local r = redis.call('ZRANK', key, user) + 1
  return lane, place(r, lane, redis.call('ZCARD', K_W), redis.call('ZCARD', K_P), batch or 0, ppm or 0), tonumber(ws)
end

-- settled returns what state does for an attempt that is not waiting.
local function settled(user, seq)
  local as, at, no, lane = active_attempt(user)
  if as == seq then
    local exp = tonumber(redis.call('ZSCORE', K_A, user)) or 0
    if exp > NOW then
      return 'ACTIVE', exp, at, no, lane
    end
    return 'EXPIRED', exp, at, no, lane
  end
  local f = redis.call('HGET', K_F, tostring(seq))
  if f == 'E' then return 'EXPIRED', 0, 0, 0, '' end
  if f == 'D' then return 'DONE', 0, 0, 0, '' end
  if f == 'L' then return 'LEFT', 0, 0, 0, '' end
  return nil, 0, 0, 0, ''
end

-- state returns the status of attempt (user, seq), a detail, for an active
-- attempt its admission time and number, and the attempt's lane ('p' or ''):
-- WAITING -> 1-based place, ACTIVE/EXPIRED -> expiry ms; nil when unknown.
local function state(user, seq)
  local wl, pos = waiting_place(user, seq)
  if wl then
    return 'WAITING', pos, 0, 0, wl
  end
  return settled(user, seq)
end

-- owned returns the state of the attempt of user and seq, nil and its lane
-- ('p' or '') when mine ("1") says the caller owns it; otherwise nil and the
-- error reply. An unknown attempt outranks a stranger's (API.md's order: 404
-- before 403). Scripts pass their own ARGV: helpers here never read it past
-- ARGV[2], so that a many-call run (see queue.manyScript) can hand each call
-- its own.
local function owned(user, seq, mine)
  local st, _, _, _, lane = state(user, seq)
  if not st then
    return nil, {'TOKEN_NOT_FOUND'}
  end
  if mine ~= '1' then
    return nil, {'TOKEN_OWNER_MISMATCH'}
  end
  return st, nil, lane
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



-- decimals appends to t the decimal strings of the n integers from first
-- on (first >= 0), each after prefix, and returns t. Lua formats a number
-- joined to a string, and redis.call a number passed as an argument, with
-- a floating-point printf of thousands of instructions; numbers in a row
-- share all digits but the last within each ten, so this formats one
-- integer per ten, with the cheaper integer printf.
local function decimals(t, prefix, first, n)
  local digits = {'0', '1', '2', '3', '4', '5', '6', '7', '8', '9'}
  local at, v, last = #t, first, #t + n
  while at < last do
    local tens, d = math.floor(v / 10), v % 10
    local head = prefix
    if tens > 0 then
      head = prefix .. string.format('%d', tens)
    end
    while d < 10 and at < last do
      at, d = at + 1, d + 1
      t[at] = head .. digits[d]
    end
    v = (tens + 1) * 10
  end
  return t
end

-- batch_add_named is batch_add with the record's field name given: the
-- decimal string of its place in e (e.n + 1), e.g. from decimals, so that
-- no number goes to redis.call.
local function batch_add_named(e, name, seq, lane, user)
  local f = e.f
  e.n = e.n + 1
  if lane ~= 'p' then lane = '-' end
  f[#f + 1] = name
  f[#f + 1] = seq .. ' ' .. lane .. ' ' .. user
end

-- retire_attempt is retire for user's active attempt already read: seq
-- (its string) and lane ('p' or ''); t is now, a string. It reads nothing
-- retire has been told and formats no number.
local function retire_attempt(user, seq, lane, t, letter, kind, ...)
  redis.call('ZREM', K_A, user)
  redis.call('HDEL', K_AS, user)
  unbind(user)
  release_hold(user)
  redis.call('HSET', K_F, seq, letter)
  redis.call('HINCRBY', K_N, kind, '1')
  if lane == 'p' then
    return xadd('k', kind, 'q', seq, 'u', user, 't', t, 'l', 'p', ...)
  end
  return xadd('k', kind, 'q', seq, 'u', user, 't', t, ...)
end

-- scored appends to t, for i = 1 .. n, the decimal string of first + i - 1
-- (first >= 0) then members[i], and returns t: a ZADD's scores and members
-- in one pass, formatting one integer per ten as decimals does.
local function scored(t, first, members, n)
  local digits = {'0', '1', '2', '3', '4', '5', '6', '7', '8', '9'}
  local tens, d = math.floor(first / 10), first % 10 + 1
  local head = ''
  if tens > 0 then head = string.format('%d', tens) end
  local at = #t
  for i = 1, n do
    t[at + 1], t[at + 2] = head .. digits[d], members[i]
    at = at + 2
    if d == 10 then
      tens, d = tens + 1, 1
      head = string.format('%d', tens)
    else
      d = d + 1
    end
  end
  return t
end

-- decimal_pairs appends to t, for i = 0 .. n - 1, the decimal strings of
-- a + i after pa and of b + i after pb (a, b >= 0), and returns t:
-- decimals for two runs side by side (a ZADD's scores and members), in one
-- pass that builds no table per run.
local function decimal_pairs(t, pa, a, pb, b, n)
  local digits = {'0', '1', '2', '3', '4', '5', '6', '7', '8', '9'}
  local ta, da, tb, db = math.floor(a / 10), a % 10 + 1, math.floor(b / 10), b % 10 + 1
  local ha, hb = pa, pb
  if ta > 0 then ha = pa .. string.format('%d', ta) end
  if tb > 0 then hb = pb .. string.format('%d', tb) end
  local at = #t
  for _ = 1, n do
    t[at + 1], t[at + 2] = ha .. digits[da], hb .. digits[db]
    at = at + 2
    if da == 10 then
      ta, da = ta + 1, 1
      ha = pa .. string.format('%d', ta)
    else
      da = da + 1
    end
    if db == 10 then
      tb, db = tb + 1, 1
      hb = pb .. string.format('%d', tb)
    else
      db = db + 1
    end
  end
  return t
end
