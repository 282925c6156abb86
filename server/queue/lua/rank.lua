-- rank.lua: one push tick for one event; read-only. Returns the progress
-- figures every local subscriber derives its place from, exact places for a
-- few attempts (connects and periodic corrections), and the stream position
-- all of it is exact at.
-- KEYS and ARGV[1..2]: see lib.lua.
-- ARGV[3..] user id, seq pairs to rank
-- Returns {last stream id, waiting, admitted, rate, batch, interval, rank...}
-- where each rank is the 1-based position, or -1 when that attempt is not waiting.
local last = redis.call('XREVRANGE', K_S, '+', '-', 'COUNT', 1)
local id = '0-0'
if #last > 0 then
  id = last[1][1]
end
local out = {id, redis.call('ZCARD', K_W), progress()}
for i = 3, #ARGV, 2 do
  local s = redis.call('ZSCORE', K_W, ARGV[i])
  if s and tonumber(s) == tonumber(ARGV[i + 1]) then
    out[#out + 1] = redis.call('ZRANK', K_W, ARGV[i]) + 1
  else
    out[#out + 1] = -1
  end
end
return out
