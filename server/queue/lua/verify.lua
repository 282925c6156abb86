-- verify.lua: look up one attempt; read-only. Serves status, verify and seats.
-- KEYS: cfg, w, a, as, f, n, p (lib.lua describes each)
-- ARGV[1..2]: see lib.lua.
-- ARGV[3] user id, ARGV[4] seq (both from the signed token)
-- Returns {status, detail, waiting, admitted at ms, admission no, lane, admitted_total, rate_milli, batch, interval_ms}
-- or {'EVENT_NOT_FOUND'} / {'TOKEN_NOT_FOUND'}. detail is the 1-based place
-- while WAITING (priority users ahead counted, see place in lib.lua).
if redis.call('EXISTS', K_CFG) == 0 then
  return {'EVENT_NOT_FOUND'}
end
local st, detail, at, no, lane = state(ARGV[3], tonumber(ARGV[4]))
if not st then
  return {'TOKEN_NOT_FOUND'}
end
return {st, detail, waiting_total(), at, no, lane, progress()}
