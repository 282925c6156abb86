-- put_event.lua: mirror an event definition from SQL into Redis.
-- KEYS: cfg, seq (lib.lua describes each)
-- ARGV[1..2]: see lib.lua.
-- ARGV[3] mode: "create" fails on an existing event, "replace" overwrites it,
--   "sync" is create for an event whose Redis state may be gone: ARGV[4] is the
--   highest seq the audit trail holds; when above 0 the seq counter is raised
--   to it (never lowered) and the cfg field "recover" (set to that seq) marks
--   the event as awaiting `rushline-server recover` (see restore.lua).
-- ARGV[4..] (ARGV[5..] for sync) field, value pairs for the cfg hash (json, capacity, batch, ...)
-- Returns {'OK'} or {'EVENT_EXISTS'} with nothing changed.
local exists = redis.call('EXISTS', K_CFG) == 1
local mode = ARGV[3]
if mode ~= 'replace' and exists then
  return {'EVENT_EXISTS'}
end
local first = 4
if mode == 'sync' then
  first = 5
  local floor = tonumber(ARGV[4])
  if floor > 0 then
    if tonumber(redis.call('GET', K_SEQ) or '0') < floor then
      redis.call('SET', K_SEQ, floor)
    end
    redis.call('HSET', K_CFG, 'recover', ARGV[4])
  end
end
redis.call('HSET', K_CFG, unpack(ARGV, first))
return {'OK'}
