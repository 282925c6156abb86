-- tick.lua: one admission tick: promote the head of the line into the active set.
-- KEYS: cfg, w, a, as, n, s, lease, p (lib.lua describes each)
-- ARGV[1..2]: see lib.lua.
-- ARGV[3] replica id, ARGV[4] lease ms, ARGV[5] ms after which a reported load figure is stale
-- Returns {'OK', promoted, ms until the next tick, waiting left, room, load}, {'WAIT', ms},
-- {'PAUSED', ms}, {'FOLLOWER', lease ms left} or {'GONE'}.
-- Room per policy: capacity = min(batch, capacity - live actives); batch = batch;
-- adaptive = batch scaled linearly from admit_batch at zero load to 1 at max_tps,
-- capped by capacity. The load is the figure an order service reported (none
-- once it is stale: the downstream is down) or, when none was ever reported,
-- the orders per second our own order script completed since the last tick.
-- The room is split between the priority and the normal lane (see below).
-- No admission number goes past what SQL has reserved (adm_cap, see put_event.lua).
local cfg = redis.call('HMGET', K_CFG, 'capacity', 'batch', 'interval', 'policy', 'paused', 'ttl', 'max_tps', 'pshare',
  'adm_cap')
if not cfg[1] then
  return {'GONE'}
end
if not hold_lease(ARGV[3], ARGV[4]) then
  return {'FOLLOWER', redis.call('PTTL', K_LEASE)}
end
local interval = tonumber(cfg[3])
local last = tonumber(redis.call('HGET', K_N, 'next_tick')) or 0
if NOW < last then
  return {'WAIT', last - NOW}
end
local nt = last + interval
if nt <= NOW then nt = NOW + interval end
redis.call('HSET', K_N, 'next_tick', nt)
if cfg[5] == '1' then
  return {'PAUSED', nt - NOW}
end

local batch, policy = tonumber(cfg[2]), cfg[4]
local room, load = batch, -1
if policy == 'capacity' then
  local live = redis.call('ZCOUNT', K_A, '(' .. NOW, '+inf')
  room = math.min(batch, tonumber(cfg[1]) - live)
elseif policy == 'adaptive' then
  local n = redis.call('HMGET', K_N, 'load', 'load_at', 'done', 'done_prev')
  local done = tonumber(n[3]) or 0
  redis.call('HSET', K_N, 'done_prev', done)
  if n[2] then
    if NOW - tonumber(n[2]) <= tonumber(ARGV[5]) then
      load = tonumber(n[1])
    end
  else
    load = (done - (tonumber(n[4]) or 0)) * 1000 / interval
  end
  if load < 0 then
    room = 0
  else
    local frac = math.min(load / tonumber(cfg[7]), 1)
    room = math.floor(batch - (batch - 1) * frac + 0.5)
    local live = redis.call('ZCOUNT', K_A, '(' .. NOW, '+inf')
    room = math.min(room, tonumber(cfg[1]) - live)
  end
end
if cfg[9] then
  room = math.min(room, tonumber(cfg[9]) - (tonumber(redis.call('HGET', K_N, 'admitted')) or 0))
end

-- Split the room between the lanes: the priority lane gets ceil(room x share),
-- the normal lane the rest, and room one lane cannot use goes to the other.
-- Priority is admitted first, FIFO within each lane; one admission sequence.
local promoted = 0
local qp, qw = redis.call('ZCARD', K_P), redis.call('ZCARD', K_W)
local queued = qp + qw
if room > 0 and queued > 0 then
  local ttl = tonumber(cfg[6])
  local pp = share_split(room, tonumber(cfg[8]) or 0)
  local fromP = math.min(qp, pp)
  local fromW = math.min(qw, room - fromP)
  fromP = math.min(qp, room - fromW)
  for _, lane in ipairs({'p', ''}) do
    local key, n = K_P, fromP
    if lane == '' then
      key, n = K_W, fromW
    end
    if n > 0 then
      local head = redis.call('ZPOPMIN', key, n)
      for i = 1, #head, 2 do
        admit(head[i], head[i + 1], ttl, lane)
      end
    end
  end
  promoted = fromP + fromW
end
-- rate: promotions per second while people wait, smoothed, in milli-units.
-- Ticks with an empty line say nothing about how fast the line moves.
if queued > 0 then
  local inst = promoted * 1000000 / interval
  local rate = tonumber(redis.call('HGET', K_N, 'rate')) or inst
  redis.call('HSET', K_N, 'rate', math.floor(rate * 0.7 + inst * 0.3))
end
return {'OK', promoted, nt - NOW, queued - promoted, math.max(room, 0), tostring(load)}
