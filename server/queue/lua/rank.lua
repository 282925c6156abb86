-- rank.lua: one push tick for one event; read-only. Returns the progress
-- figures every local subscriber derives its place from, exact lane ranks for
-- a few attempts (connects and periodic corrections), and the stream position
-- all of it is exact at.
-- KEYS: cfg, w, n, s, p (lib.lua describes each)
-- ARGV[1..2]: see lib.lua.
-- ARGV[3..] user id, seq pairs to rank
-- Returns {last stream id, waiting, admitted, rate, batch, interval, normal waiting,
--          priority waiting, priority share ppm, (rank, lane)...}
-- where each rank is the 1-based rank within the attempt's lane ("p" priority,
-- "" normal), or -1 when that attempt is not waiting.
local last = redis.call('XREVRANGE', K_S, '+', '-', 'COUNT', 1)
local id = '0-0'
if #last > 0 then
  id = last[1][1]
end
local nw, np = redis.call('ZCARD', K_W), redis.call('ZCARD', K_P)
-- progress() plus the share, in two reads: this runs every push tick.
local n = redis.call('HMGET', K_N, 'admitted', 'rate')
local c = redis.call('HMGET', K_CFG, 'batch', 'interval', 'pshare')
local out = {id, nw + np, tonumber(n[1]) or 0, tonumber(n[2]) or 0, tonumber(c[1]) or 0, tonumber(c[2]) or 0,
  nw, np, tonumber(c[3]) or 0}
for i = 3, #ARGV, 2 do
  local seq = tonumber(ARGV[i + 1])
  local s = redis.call('ZSCORE', K_W, ARGV[i])
  if s and tonumber(s) == seq then
    out[#out + 1] = redis.call('ZRANK', K_W, ARGV[i]) + 1
    out[#out + 1] = ''
  else
    s = redis.call('ZSCORE', K_P, ARGV[i])
    if s and tonumber(s) == seq then
      out[#out + 1] = redis.call('ZRANK', K_P, ARGV[i]) + 1
      out[#out + 1] = 'p'
    else
      out[#out + 1] = -1
      out[#out + 1] = ''
    end
  end
end
return out
