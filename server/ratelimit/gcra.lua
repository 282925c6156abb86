-- gcra.lua: one rate-limit check by GCRA (the algorithm of go-redis/redis_rate),
-- on Redis's own clock, so every replica sharing the Redis shares the limit.
-- Needs Redis >= 5 (scripts replicate their effects, so TIME is allowed).
--
-- KEYS[1]  STRING  theoretical arrival time, µs since the epoch, of one client on one route
-- ARGV[1]  emission interval in µs: period / rate
-- ARGV[2]  burst offset in µs: emission interval * burst
-- Returns {allowed 1|0, µs until the next call is allowed (0 when allowed), calls left}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local offset = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now) or now
if tat < now then
  tat = now
end
local new_tat = tat + interval
local diff = now - (new_tat - offset)
if diff < 0 then
  return {0, math.ceil(-diff), 0}
end
redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PX', math.ceil((new_tat - now) / 1000))
return {1, 0, math.floor(diff / interval)}
