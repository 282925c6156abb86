-- reserve.lua: raise the numbers an event may hand out to what SQL has
-- reserved for it (see put_event.lua); caps only ever rise.
-- KEYS: cfg (lib.lua describes each)
-- ARGV[1..2]: see lib.lua.
-- ARGV[3] seq cap, ARGV[4] admission cap.
-- Returns {'OK'}, or {'EVENT_NOT_FOUND'} when the event has no Redis state:
-- a lost event gets its caps from its rebuild, never a bare cfg hash here.
if redis.call('EXISTS', K_CFG) == 0 then
  return {'EVENT_NOT_FOUND'}
end
for i, field in ipairs({'seq_cap', 'adm_cap'}) do
  local cap = tonumber(ARGV[2 + i])
  if cap > (tonumber(redis.call('HGET', K_CFG, field)) or 0) then
    redis.call('HSET', K_CFG, field, cap)
  end
end
pack_cfg()
return {'OK'}
