-- join_floor.lua: the least a batch of new joins can cost Redis in a line
-- held in a sorted set, the floor join.lua is measured against
-- (queue.Engine.RunLineBatch; the bench's sorted-set floor, and
-- BenchmarkJoinFloor).
-- It takes join.lua's arguments for a batch of plain joins and does what
-- no such design can leave out: one INCRBY for the batch's seqs and one
-- ZADD NX of its users, scored as join.lua's shortest way scores them. No
-- config, counters, audit record or answers.
-- KEYS: seq, w
-- ARGV[1..2] as lib.lua's; ARGV[3] the users as msgpack values, ARGV[4]
-- how many.
local users, n = unpack_values(ARGV[3]), tonumber(ARGV[4])
local top = redis.call('INCRBY', K_SEQ, ARGV[4])
return redis.call('ZADD', K_W, unpack(scored({'NX'}, top - n + 1, users, n)))
