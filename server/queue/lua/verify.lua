-- verify.lua: look up one attempt; read-only. Serves status, verify and seats.
-- KEYS and ARGV[1..2]: see lib.lua.
-- ARGV[3] user id, ARGV[4] seq (both from the signed token)
-- Returns {status, detail, waiting, admitted at ms, admission no, admitted_total, rate_milli, batch, interval_ms}
-- or {'EVENT_NOT_FOUND'} / {'TOKEN_NOT_FOUND'}.
if redis.call('EXISTS', K_CFG) == 0 then
  return {'EVENT_NOT_FOUND'}
end
local st, detail, at, no = state(ARGV[3], tonumber(ARGV[4]))
if not st then
  return {'TOKEN_NOT_FOUND'}
end
if st == 'WAITING' then
  detail = detail + 1
end
return {st, detail, redis.call('ZCARD', K_W), at, no, progress()}
