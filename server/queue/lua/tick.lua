-- tick.lua: one step of an admission tick: promote the next chunk of the head
-- of the line into the active set.
-- KEYS: cfg, w, a, as, n, s, lease, p (lib.lua describes each)
-- ARGV[1..2]: see lib.lua.
-- ARGV[3] replica id, ARGV[4] lease ms, ARGV[5] ms after which a reported load figure is stale,
-- ARGV[6] most to promote in this call
-- Returns {'OK', promoted, ms until the next tick, waiting left, room, load, left to promote},
-- {'WAIT', ms}, {'PAUSED', ms}, {'FOLLOWER', lease ms left}, {'DRAW'} (run
-- Engine.Draw first) or {'GONE'}.
-- A tick decides its room once, when it is due, and splits it between the
-- lanes; the counters hash keeps what is left to promote of each lane
-- (tick_p, tick_w) until calls of at most ARGV[6] promotions have served it,
-- so no call holds Redis long whatever the batch. A call with a tick left
-- over serves it before anything else: a replica that takes the lease over
-- finishes the tick another began. Each call pops the head of each lane, so
-- the chunks admit in the order one call would.
-- Room per policy: capacity = min(batch, capacity - live actives); batch = batch;
-- adaptive = batch scaled linearly from admit_batch at zero load to 1 at max_tps,
-- capped by capacity. The load is the figure an order service reported (none
-- once it is stale: the downstream is down) or, when none was ever reported,
-- the orders per second our own order script completed since the last tick.
-- On a leftover tick, room is what was left of it and load is -1.
-- No admission number goes past what SQL has reserved (adm_cap, see
-- put_event.lua): the tick's room and each call's share are clamped to it.
local cfg = redis.call('HMGET', K_CFG, 'capacity', 'batch', 'interval', 'policy', 'paused', 'ttl', 'max_tps', 'pshare',
  'adm_cap')
if not cfg[1] then
  return {'GONE'}
end
if not hold_lease(ARGV[3], ARGV[4]) then
  return {'FOLLOWER', redis.call('PTTL', K_LEASE)}
end
-- Queue mode (issue 17, fair_lib.lua): nobody is admitted from a random_start
-- event past its opening until the draw has put the pre-queue in line.
if draw_due() then
  return {'DRAW'}
end
local interval, policy, capacity = tonumber(cfg[3]), cfg[4], tonumber(cfg[1])
local n = redis.call('HMGET', K_N, 'next_tick', 'tick_p', 'tick_w')
local nt = tonumber(n[1]) or 0
local leftP, leftW = tonumber(n[2]) or 0, tonumber(n[3]) or 0
local room, load = leftP + leftW, -1
if room > 0 and cfg[5] == '1' then
  -- Paused in the middle of a tick: what is left of it is dropped.
  redis.call('HDEL', K_N, 'tick_p', 'tick_w')
  return {'PAUSED', math.max(nt - NOW, 0)}
end

local qp, qw = redis.call('ZCARD', K_P), redis.call('ZCARD', K_W)
local queued = qp + qw
if room == 0 then
  if NOW < nt then
    return {'WAIT', nt - NOW}
  end
  local last = nt
  nt = last + interval
  if nt <= NOW then nt = NOW + interval end
  redis.call('HSET', K_N, 'next_tick', nt)
  if cfg[5] == '1' then
    return {'PAUSED', nt - NOW}
  end

  local batch = tonumber(cfg[2])
  room = batch
  if policy == 'capacity' then
    local live = redis.call('ZCOUNT', K_A, '(' .. NOW, '+inf')
    room = math.min(batch, capacity - live)
  elseif policy == 'adaptive' then
    local c = redis.call('HMGET', K_N, 'load', 'load_at', 'done', 'done_prev')
    local done = tonumber(c[3]) or 0
    redis.call('HSET', K_N, 'done_prev', done)
    if c[2] then
      if NOW - tonumber(c[2]) <= tonumber(ARGV[5]) then
        load = tonumber(c[1])
      end
    else
      load = (done - (tonumber(c[4]) or 0)) * 1000 / interval
    end
    if load < 0 then
      room = 0
    else
      local frac = math.min(load / tonumber(cfg[7]), 1)
      room = math.floor(batch - (batch - 1) * frac + 0.5)
      local live = redis.call('ZCOUNT', K_A, '(' .. NOW, '+inf')
      room = math.min(room, capacity - live)
    end
  end
  if cfg[9] then
    room = math.min(room, tonumber(cfg[9]) - (tonumber(redis.call('HGET', K_N, 'admitted')) or 0))
  end
  -- Split the room between the lanes: the priority lane gets ceil(room x share),
  -- the normal lane the rest, and room one lane cannot use goes to the other.
  -- Priority is admitted first, FIFO within each lane; one admission sequence.
  if room > 0 and queued > 0 then
    local pp = share_split(room, tonumber(cfg[8]) or 0)
    leftP = math.min(qp, pp)
    leftW = math.min(qw, room - leftP)
    leftP = math.min(qp, room - leftW)
  end
  -- rate: promotions per second while people wait, smoothed, in milli-units.
  -- Ticks with an empty line say nothing about how fast the line moves.
  if queued > 0 then
    local inst = (leftP + leftW) * 1000000 / interval
    local rate = tonumber(redis.call('HGET', K_N, 'rate')) or inst
    redis.call('HSET', K_N, 'rate', math.floor(rate * 0.7 + inst * 0.3))
  end
end

-- admit_head pops up to k of the head of the lane held in key and admits
-- them in order, numbered after the event's admitted count: one write per
-- key and one stream entry for them all. Returns how many it admitted.
local function admit_head(key, k, lane)
  if k <= 0 then return 0 end
  local head = redis.call('ZPOPMIN', key, k)
  local got = #head / 2
  if got == 0 then return 0 end
  local exp = NOW + tonumber(cfg[6]) * 1000
  local first = redis.call('HINCRBY', K_N, 'admitted', got) - got + 1
  local mid, sfx = '|' .. NOW .. '|', ''
  if lane == 'p' then sfx = '|p' end
  -- Every value as a string, so that no number is formatted per attempt
  -- (see decimals): the expiry once, admission numbers and field names by ten.
  local za, ha, xs = {}, {}, string.format('%d', exp)
  local nos, names = decimals({}, '', first, got), decimals({}, '', 1, got)
  local e = new_batch('admitted', 'x', exp, 'n', first)
  for i = 1, got do
    local user, seq = head[2 * i - 1], head[2 * i]
    za[2 * i - 1], za[2 * i] = xs, user
    ha[2 * i - 1], ha[2 * i] = user, seq .. mid .. nos[i] .. sfx
    batch_add_named(e, names[i], seq, lane, user)
  end
  redis.call('ZADD', K_A, unpack(za))
  redis.call('HSET', K_AS, unpack(ha))
  batch_emit(e)
  return got
end

-- This call's share: at most ARGV[6], never past capacity (anything that
-- freed or took a slot since the tick began counts) and never past adm_cap.
local limit = tonumber(ARGV[6])
if policy ~= 'batch' then
  limit = math.min(limit, capacity - redis.call('ZCOUNT', K_A, '(' .. NOW, '+inf'))
end
if cfg[9] then
  limit = math.min(limit, tonumber(cfg[9]) - (tonumber(redis.call('HGET', K_N, 'admitted')) or 0))
end
local takeP = math.max(math.min(leftP, limit), 0)
local takeW = math.max(math.min(leftW, limit - takeP), 0)
local gotP, gotW = admit_head(K_P, takeP, 'p'), admit_head(K_W, takeW, '')
-- A lane that ran dry (people left meanwhile) ends its share of the tick.
leftP, leftW = leftP - takeP, leftW - takeW
if gotP < takeP then leftP = 0 end
if gotW < takeW then leftW = 0 end
if limit <= 0 then leftP, leftW = 0, 0 end
if leftP + leftW > 0 then
  redis.call('HSET', K_N, 'tick_p', leftP, 'tick_w', leftW)
else
  redis.call('HDEL', K_N, 'tick_p', 'tick_w')
end
local promoted = gotP + gotW
return {'OK', promoted, math.max(nt - NOW, 0), queued - promoted, math.max(room, 0), tostring(load), leftP + leftW}
