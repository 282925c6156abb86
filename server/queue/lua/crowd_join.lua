-- crowd_join.lua: put the next n virtual users of a practice drop's crowd in
-- line, in index order, behind everyone waiting; atomically with the crowd's
-- cursor (how many have joined), so no index ever joins twice, whoever plays
-- the crowd and however often a player is resumed.
-- KEYS: cfg, seq, w, n (lib.lua describes each), then two more, read from
-- the end so that the event's list may grow:
--   KEYS[#KEYS-1] crowd  HASH   cursor: how many of the crowd have joined
--   KEYS[#KEYS]   lease  STRING the replica playing the crowd (crowd_lease.lua)
-- ARGV[1..2]: see lib.lua.
-- ARGV[3] replica id (must hold the crowd lease), ARGV[4] the cursor the
-- caller expects, ARGV[5] n (at most queue.MaxCrowdChunk: one call stays
-- under 2 ms), ARGV[6] user id prefix: user k is prefix .. k
-- Returns {'OK', cursor after, seq of the first joined}; nothing changed with
-- {'MOVED', cursor} (the cursor is not ARGV[4]), {'FOLLOWER'} (another replica
-- holds the lease), {'EVENT_NOT_FOUND'}, {'EVENT_NOT_OPEN'} or {'UNAVAILABLE'}
-- (the seqs SQL has reserved would run out, see put_event.lua).
-- Unlike join.lua it writes no record per user: the crowd's joins are the
-- cursor; their admissions and orders are recorded as everyone's.
local K_CROWD, K_CLEASE = KEYS[#KEYS - 1], KEYS[#KEYS]
local cfg = redis.call('HMGET', K_CFG, 'opens', 'seq_cap')
local opens, cap = cfg[1], cfg[2]
if not opens then
  return {'EVENT_NOT_FOUND'}
end
if redis.call('GET', K_CLEASE) ~= ARGV[3] then
  return {'FOLLOWER'}
end
opens = tonumber(opens) or 0
if opens > 0 and NOW < opens then
  return {'EVENT_NOT_OPEN'}
end
local cursor = tonumber(redis.call('HGET', K_CROWD, 'cursor') or '0')
if cursor ~= tonumber(ARGV[4]) then
  return {'MOVED', cursor}
end
local n, prefix = tonumber(ARGV[5]), ARGV[6]
if cap and tonumber(redis.call('GET', K_SEQ) or '0') + n > tonumber(cap) then
  return {'UNAVAILABLE'}
end
local first = redis.call('INCRBY', K_SEQ, ARGV[5]) - n + 1
-- Scores and members as strings (decimal_pairs), n as given: redis.call
-- formats no number per user.
-- NX: a user already in line (a simulator bot that took a crowd id) keeps its place.
redis.call('ZADD', K_W, unpack(decimal_pairs({'NX'}, '', first, prefix, cursor, n)))
redis.call('HINCRBY', K_N, 'joined', ARGV[5])
redis.call('HSET', K_CROWD, 'cursor', cursor + n)
return {'OK', cursor + n, first}
