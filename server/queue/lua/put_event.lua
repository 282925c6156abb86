-- put_event.lua: mirror an event definition from SQL into Redis.
-- KEYS: cfg (lib.lua describes each)
-- ARGV[1..2]: see lib.lua.
-- ARGV[3] mode: "create" fails on an existing event; "replace" changes an
--   existing one and fails on a missing one, so a definition change never
--   brings back, empty, an event whose Redis state was lost; "restore" writes
--   whatever is there (the last step of a rebuild, see restore.lua).
-- ARGV[4..] field, value pairs for the cfg hash (json, capacity, batch, ...).
--   A create or a restore from the catalog also sets the event's marker
--   fields: "mark" names this incarnation of its Redis state (SQL holds the
--   same), "seq_cap" and "adm_cap" the highest seq and admission number SQL
--   has reserved for it (join.lua and tick.lua hand out none above them).
-- Returns {'OK'}, or {'EVENT_EXISTS'} / {'EVENT_NOT_FOUND'} with nothing changed.
local exists = redis.call('EXISTS', K_CFG) == 1
local mode = ARGV[3]
if mode == 'create' and exists then
  return {'EVENT_EXISTS'}
end
if mode == 'replace' and not exists then
  return {'EVENT_NOT_FOUND'}
end
redis.call('HSET', K_CFG, unpack(ARGV, 4))
pack_cfg()
return {'OK'}
