-- join.lua: put users in line, or return the attempts they already hold. One
-- call takes a whole batch of joins on one event (queue.batcher concatenates
-- them) and answers each exactly as if it had run alone, in order.
-- KEYS: cfg, seq, w, a, as, f, n, s, p, pg, dv, pq, hd, hu (lib.lua describes each)
-- ARGV[1..2]: see lib.lua.
-- ARGV[3] the joins, in order, as msgpack values one after the other
-- (queue.joinArgv): a join that brings nothing but its user id (the usual
-- one, a plain join) is that id alone; one that also passed the event's
-- proof-of-work challenge or needs none is false then its user id; any
-- other is true then five: user id, priority code to redeem or "", "1" to
-- put the user in the priority lane without a grant (the simulator's
-- VIRTUAL bots), device id or "" when device binding is off, "1" when the
-- join passed the challenge or needs none.
-- ARGV[4] how many joins; ARGV[5], exactly when every join is a plain one,
-- their user ids one a line (the run entry's u, below).
-- Returns the answers in order, then three values for them all: rate,
-- batch, interval. Most joins are answered in runs (queue.splitJoin expands
-- them): a run of k new joins put in the normal lane one after the other
-- while the priority lane is empty is four values, {k, seq of the first,
-- place of the first, admitted}, the i-th taking seq and place (which is
-- also the line's length then) one past the one before. Any other answer is
-- nine values:
--   result, status, seq, detail, waiting, admitted at, admission no, lane,
--   admitted
--   result NEW | EXISTS, PREQUEUED (status "1" when new, seq the pre-queue's
--   length; fair_lib.lua), or an error code followed by eight zeros; an error
--   changes nothing but ending the user's run-out active window, which any
--   join may do (UNAVAILABLE when the seqs SQL has reserved are used up, see
--   put_event.lua); detail is the 1-based place while WAITING, the expiry in
--   ms when ACTIVE; lane is "p" for the priority lane, "" for the normal one.
-- A live attempt is returned as it is, whatever code the join carries.
--
-- What makes a batch cheap: the joins come as one argument that cmsgpack
-- unpacks in one call (an argument each costs Redis a string object, a Lua
-- string and a table slot each, and this script a loop to read them), and
-- the server joins the user ids of a batch of plain joins into the run
-- entry's list; the config (one field, see pack_cfg), the
-- counters and both lane sizes are read once; the users' active attempts in
-- one variadic read (none for an empty active hash); a batch of plain new
-- joins takes its seqs and places with one INCRBY and one ZADD NX, no user
-- looked up (the shortest way, below); any other batch reads the seq and
-- every user's lane scores in two more variadic reads (none for an empty
-- lane), a plain new join takes a short way through the loop and is
-- answered in a run; one INCRBY for the batch's seqs, one ZADD per lane,
-- one HINCRBY per counter, one stream entry for the joined records (a run
-- entry, below) and one for the direct admissions (a batch entry, see
-- lib.lua). The joined records' seqs run on, one each, so their entry needs
-- no seq and no string built per record: fields k (joined), t, q (the first
-- seq), b (how many records), u (the user ids, one a line: no user id holds
-- a line break, see queue.ValidUserID), l (a letter per record, p or -, when
-- any is in the priority lane), c ("i code ..." for the i-th records that
-- redeemed a priority code); queue.parseRecords expands it. The batch's own
-- changes are kept in locals until the end, so a user seen twice in a batch,
-- or a device held by someone the batch has seen, is looked up again after
-- writing them out.
local argv = ARGV
-- users[i] is the i-th join's user id; ext[i], for a join given in full, the
-- index of its user id in vals; proven[i] true for one given with its
-- proof alone. When there are as many values as joins, every join is a
-- plain one: the values are the user ids.
local vals, n = unpack_values(argv[3]), tonumber(argv[4])
local users, ext, proven = vals, {}, {}
if #vals ~= n then
  users = {}
  local k = 1
  for i = 1, n do
    local a = vals[k]
    if a == true then
      users[i], ext[i] = vals[k + 1], k + 1
      k = k + 6
    elseif a == false then
      users[i], proven[i] = vals[k + 1], true
      k = k + 2
    else
      users[i] = a
      k = k + 1
    end
  end
end
local out, o = {}, 0
-- run is the index in out of the open run's count, nil when none is open:
-- any answer but a run's closes it.
local run
-- refuse answers the next join with an error code.
local function refuse(code)
  out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = code, 0, 0, 0, 0
  out[o + 6], out[o + 7], out[o + 8], out[o + 9] = 0, 0, 0, 0
  o, run = o + 9, nil
end
-- Queue mode (issue 17): c closed, r random_start, p passthrough, else fifo;
-- pow asks new joins for proof of work.
local capacity, direct, opens, closes, ttl, batch, ppm, interval, seq_cap, adm_cap, preopens, mode, pow = join_cfg()
if not capacity then
  for _ = 1, n do refuse('EVENT_NOT_FOUND') end
  out[o + 1], out[o + 2], out[o + 3] = 0, 0, 0
  return out
end
local pass = mode == 'p'

local nw = redis.call('ZCARD', K_W)
-- The priority lane, the grants and the active hash are usually all empty,
-- and Redis keeps no empty hash or sorted set: one EXISTS then stands for
-- the three reads that find them empty. The active hash, when empty, holds
-- none of the users.
local np, grants, asv = 0, false, {}
local held = redis.call('EXISTS', K_P, K_PG, K_AS)
if held > 0 then
  if redis.call('HLEN', K_AS) > 0 then
    held = held - 1
    asv = redis.call('HMGET', K_AS, unpack(users))
  end
  if held > 0 then
    np, grants = redis.call('ZCARD', K_P), redis.call('EXISTS', K_PG) == 1
  end
end
local prog = redis.call('HMGET', K_N, 'admitted', 'rate')
local admitted, rate = tonumber(prog[1]) or 0, tonumber(prog[2]) or 0

-- plain: a join that holds nothing and brings no code, priority request or
-- device, with its proof when one is asked for, goes in the normal lane at
-- the back whatever else: the event is open, in fifo mode, grants no
-- priority by user, and admits nobody on join (not passthrough; capacity
-- admits only into an empty line). Such a join takes the short way through
-- the loop below; any other the long one, which answers it alike.
local plain = not grants and not pass and mode ~= 'c' and mode ~= 'r' and not (opens > 0 and NOW < opens)
  and not (closes > 0 and NOW >= closes)

-- The shortest way, for a batch of plain joins of users who hold no
-- admitted attempt, into a line whose priority lane is empty (the usual
-- batch): the batch takes its seqs and goes in the lane with ZADD NX, which
-- adds every user exactly when none was waiting already and none comes
-- twice, so no user is looked up first. Then one run answers them all, and
-- the helpers and closures the loop below needs are never made
-- (queue.prelude defines lib.lua's helpers at the line "--@lib", which this
-- way never reaches). It answers and writes exactly what the loop would.
-- When the lane kept a user out, or the seqs would pass the reserved cap,
-- the seqs and the adds are taken back (nothing else has run meanwhile: a
-- script is atomic) and the batch goes the long way. Such a batch costs
-- more than the long way alone (its adds twice over, two more writes): a
-- join again by someone waiting (a retry; pages keep their token) or a
-- batch at the reserved cap (until reserve.lua raises it) is the exception
-- the usual batch pays for.
if n > 0 and plain and np == 0 and (nw > 0 or not direct) then
  local fast = true
  -- With every join a plain one, no challenge asked for and nobody
  -- admitted, nobody can be kept off the shortest way: no loop.
  if users ~= vals or pow or #asv > 0 then
    for i = 1, n do
      if ext[i] or (pow and not proven[i]) or asv[i] then
        fast = false
        break
      end
    end
  end
  if fast then
    -- Numbers go to redis.call as strings (see scored): a Lua number
    -- costs Redis a floating-point printf.
    local ns = string.format('%d', n)
    local top = redis.call('INCRBY', K_SEQ, ns)
    if not (seq_cap and top > seq_cap) then
      local add = scored({'NX'}, top - n + 1, users, n)
      if redis.call('ZADD', K_W, unpack(add)) == n then
        redis.call('HINCRBY', K_N, 'joined', ns)
        xadd('k', 'joined', 't', argv[1], 'q', add[2], 'b', ns, 'u', argv[5] or table.concat(users, '\n'))
        return {n, top - n + 1, nw + 1, admitted, rate, batch, interval}
      end
      -- The seqs are past every score of the lane, so the adds are exactly
      -- the lane's members scored from the first to the last of them.
      redis.call('ZREMRANGEBYSCORE', K_W, add[2], add[2 * n])
    end
    redis.call('DECRBY', K_SEQ, ns)
  end
end

-- The long way: the users' lane scores, read at once (none for an empty lane).
local wsc, psc = {}, {}
if nw > 0 then wsc = redis.call('ZMSCORE', K_W, unpack(users)) end
if np > 0 then psc = redis.call('ZMSCORE', K_P, unpack(users)) end
local seq0 = tonumber(redis.call('GET', K_SEQ) or '0')
local seq = seq0
--@lib

local live -- active windows running, counted when first needed

-- The batch's writes held back: waiting adds per lane (score, member, ...),
-- and the users it has handled.
local addw, addp, nadd, seen = {}, {}, 0, {}
local function flush()
  if nadd == 0 then return end
  if #addw > 0 then redis.call('ZADD', K_W, unpack(addw)) end
  if #addp > 0 then redis.call('ZADD', K_P, unpack(addp)) end
  addw, addp, nadd = {}, {}, 0
end
-- The run entry's records: user ids, lane letters (made at the first
-- priority one), codes.
local ju, jl, jc, jn = {}, nil, nil, 0
local admissions -- the batch entry of direct admissions, made at the first

local function answer(result, status, s, detail, waiting, at, no, lane)
  out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = result, status, s, detail, waiting
  out[o + 6], out[o + 7], out[o + 8], out[o + 9] = at, no, lane, admitted
  o, run = o + 9, nil
end

-- lookup returns what user holds: 'W', lane, place, seq while waiting; 'A',
-- seq, at, no, lane while an attempt is admitted; nil otherwise. The i-th
-- user's first turn reads the batch's prefetched values.
local function lookup(i, user)
  local ws, ps, av
  if seen[user] then
    flush()
    ws = redis.call('ZSCORE', K_W, user)
    if not ws then ws, ps = nil, redis.call('ZSCORE', K_P, user) end
    av = redis.call('HGET', K_AS, user)
  else
    ws, ps, av = wsc[i], psc[i], asv[i]
  end
  if ws then
    return 'W', '', place(redis.call('ZRANK', K_W, user) + 1, '', nw, np, batch, ppm), tonumber(ws)
  end
  if ps then
    return 'W', 'p', place(redis.call('ZRANK', K_P, user) + 1, 'p', nw, np, batch, ppm), tonumber(ps)
  end
  if av then
    return 'A', parse_attempt(av)
  end
  return nil
end

-- A random_start event's draw state (fair_lib.lua), read at the first join
-- that needs it: false before the draw begins.
local draw
-- prequeued answers user's join the random_start way and reports true, or
-- reports false to let the join go on as any other: before the opening (from
-- preopens, with proof when the event asks for it) the user is pre-queued;
-- one already pre-queued keeps that answer until the draw is done; the first
-- join from the opening begins the draw, which reserves the pre-queue's
-- seqs. No join of the batch has taken a seq before it (the joins before it
-- were answered without one), so the batch's seqs resume past the reserved.
local function prequeued(user, proof)
  if draw == nil then draw = redis.call('HGET', K_N, 'draw') or false end
  if draw ~= 'done' and redis.call('ZSCORE', K_PQ, user) then
    answer('PREQUEUED', '0', redis.call('ZCARD', K_PQ), 0, 0, 0, 0, '')
    return true
  end
  if NOW >= opens then
    if not draw then
      draw = draw_begin()
      seq0 = tonumber(redis.call('GET', K_SEQ))
      seq = seq0
    end
    return false
  end
  if NOW < preopens or draw or not proof then
    return false
  end
  local q = redis.call('ZCARD', K_PQ)
  if seq_cap and seq + q >= seq_cap then
    refuse('UNAVAILABLE')
    return true
  end
  local k = redis.call('HINCRBY', K_N, 'prequeued', 1)
  redis.call('ZADD', K_PQ, k, user)
  emit('prequeued', -k, user)
  answer('PREQUEUED', '1', q + 1, 0, 0, 0, 0, '')
  return true
end

-- device_busy binds dev to user unless another user's live attempt holds it.
local function device_busy(user, dev)
  local holder = redis.call('HGET', K_DV, 'd:' .. dev)
  if holder and holder ~= user then
    if seen[holder] then flush() end
    local hs = redis.call('ZSCORE', K_W, holder) or redis.call('ZSCORE', K_P, holder)
    if not hs and redis.call('HEXISTS', K_AS, holder) == 1 then
      hs = (tonumber(redis.call('ZSCORE', K_A, holder)) or 0) > NOW
    end
    if hs then
      return true
    end
  end
  unbind(user)
  redis.call('HSET', K_DV, 'd:' .. dev, user, 'u:' .. user, dev)
  return false
end

for i = 1, n do
  local user, x = users[i], ext[i]
  local code, force, dev, proof = '', '', '', not pow or proven[i]
  if x then
    code, force, dev = vals[x + 1], vals[x + 2], vals[x + 3]
    proof = proof or vals[x + 4] == '1'
  end
  if plain and code == '' and dev == '' and force ~= '1' and proof and not wsc[i] and not psc[i] and not asv[i]
    and not seen[user] and (nw + np > 0 or not direct) and not (seq_cap and seq >= seq_cap) then
    seen[user] = true
    seq, jn, nadd, nw = seq + 1, jn + 1, nadd + 1, nw + 1
    ju[jn] = user
    if jl then jl[jn] = '-' end
    local m = #addw
    addw[m + 1], addw[m + 2] = seq, user
    if np > 0 then
      answer('NEW', 'WAITING', seq, place(nw, '', nw, np, batch, ppm), nw + np, 0, 0, '')
    elseif run then
      -- With nobody in the priority lane a normal place is the rank.
      out[run] = out[run] + 1
    else
      run = o + 1
      out[o + 1], out[o + 2], out[o + 3], out[o + 4] = 1, seq, nw, admitted
      o = o + 4
    end
  else
    local done = false
    local held, a, b, c, d = lookup(i, user)
    seen[user] = true
    if held == 'W' then
      answer('EXISTS', 'WAITING', c, b, nw + np, 0, 0, a)
      done = true
    elseif held == 'A' then
      local exp = tonumber(redis.call('ZSCORE', K_A, user)) or 0
      if exp > NOW then
        answer('EXISTS', 'ACTIVE', a, exp, nw + np, b, c, d)
        done = true
      else
        retire(user, 'E', 'expired')
      end
    end
    -- 403 outranks 409 (API.md): a bad code is refused before the window is
    -- checked. Unknown and redeemed codes answer alike, so answers cannot find
    -- out which exist.
    if done then
    elseif code ~= '' and redis.call('HGET', K_PG, 'c:' .. code) ~= '' then
      refuse('FORBIDDEN')
    elseif mode == 'c' then
      refuse('EVENT_CLOSED')
    elseif mode == 'r' and prequeued(user, proof) then
    -- A new join (not one already pre-queued) must have passed the challenge.
    elseif not proof then
      refuse('CHALLENGE_FAILED')
    elseif opens > 0 and NOW < opens then
      refuse('EVENT_NOT_OPEN')
    elseif closes > 0 and NOW >= closes then
      refuse('EVENT_CLOSED')
    -- One live attempt per device: the holder's binding counts only while its
    -- attempt lives (an attempt that ended without clean-up frees it here).
    elseif dev ~= '' and device_busy(user, dev) then
      refuse('DEVICE_BUSY')
    -- No seq past what SQL has reserved: after a Redis loss the counter resumes
    -- at the reservation, so no number handed out here is ever handed out again.
    elseif seq_cap and seq >= seq_cap then
      refuse('UNAVAILABLE')
    else
      local lane = ''
      if force == '1' or code ~= '' or (grants and redis.call('HEXISTS', K_PG, 'u:' .. user) == 1) then
        lane = 'p'
      end
      seq, jn = seq + 1, jn + 1
      ju[jn] = user
      if lane == 'p' and not jl then
        jl = {}
        for k = 1, jn - 1 do jl[k] = '-' end
      end
      if jl then jl[jn] = lane == 'p' and 'p' or '-' end
      if code ~= '' then
        redis.call('HSET', K_PG, 'c:' .. code, user)
        jc = jc or {}
        jc[#jc + 1], jc[#jc + 2] = jn, code
      end
      -- Only the capacity policy admits on join: batch promotes on ticks
      -- alone, and adaptive must not let anyone in past a downstream it may
      -- have found down. Passthrough admits everyone at once, capacity
      -- aside; an unfinished draw admits nobody (the drawn go first).
      local admit = false
      if pass or (direct and nw + np == 0 and not (mode == 'r' and draw ~= 'done')) then
        live = live or redis.call('ZCOUNT', K_A, '(' .. NOW, '+inf')
        admit = (pass or live < capacity) and (not adm_cap or admitted < adm_cap)
      end
      if admit then
        local exp = NOW + ttl * 1000
        admitted, live = admitted + 1, live + 1
        local v = seq .. '|' .. NOW .. '|' .. admitted
        if lane == 'p' then v = v .. '|p' end
        redis.call('ZADD', K_A, exp, user)
        redis.call('HSET', K_AS, user, v)
        admissions = admissions or new_batch('admitted', 'x', exp, 'n', admitted)
        batch_add(admissions, seq, lane, user)
        answer('NEW', 'ACTIVE', seq, exp, 0, NOW, admitted, lane)
      else
        local p
        nadd = nadd + 1
        if lane == 'p' then
          np = np + 1
          p = place(np, lane, nw, np, batch, ppm)
          addp[#addp + 1], addp[#addp + 2] = seq, user
        else
          nw = nw + 1
          -- With nobody in the priority lane a normal place is the rank.
          p = np > 0 and place(nw, lane, nw, np, batch, ppm) or nw
          addw[#addw + 1], addw[#addw + 2] = seq, user
        end
        answer('NEW', 'WAITING', seq, p, nw + np, 0, 0, lane)
      end
    end
  end
end

flush()
if seq > seq0 then
  redis.call('INCRBY', K_SEQ, seq - seq0)
  redis.call('HINCRBY', K_N, 'joined', seq - seq0)
end
if jn > 0 then
  local f = {'k', 'joined', 't', argv[1], 'q', seq0 + 1, 'b', jn, 'u', table.concat(ju, '\n')}
  if jl then f[#f + 1], f[#f + 2] = 'l', table.concat(jl) end
  if jc then f[#f + 1], f[#f + 2] = 'c', table.concat(jc, ' ') end
  xadd(unpack(f))
end
if admissions then
  redis.call('HINCRBY', K_N, 'admitted', admissions.n)
  batch_emit(admissions)
end
out[o + 1], out[o + 2], out[o + 3] = rate, batch, interval
return out
