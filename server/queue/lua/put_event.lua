-- put_event.lua: mirror an event definition from SQL into Redis.
-- KEYS and ARGV[1..2]: see lib.lua.
-- ARGV[3] mode: "create" fails on an existing event, "replace" overwrites it
-- ARGV[4..] field, value pairs for the cfg hash (json, capacity, batch, ...)
-- Returns {'OK'} or {'EVENT_EXISTS'} with nothing changed.
local exists = redis.call('EXISTS', K_CFG) == 1
if ARGV[3] == 'create' and exists then
  return {'EVENT_EXISTS'}
end
redis.call('HSET', K_CFG, unpack(ARGV, 4))
return {'OK'}
