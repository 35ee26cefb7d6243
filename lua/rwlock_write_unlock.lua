--! keys: lock channel latch line line_state
--! argv: message:int lease_ms:int writer publish latch_ms:int line_lease_ms:int turn_ms:int line_channel
--! uses: line
-- RReadWriteLock write unlock (protocol sections 6.5 and 1.5). When the
-- writer still has read holds, the lock becomes a read lock (a downgrade).
-- A release or a downgrade gives the waiting line's next turns
-- (lua/lib/line.lua).
-- KEYS[1] = lock hash N, KEYS[2] = channel redisson_rwlock:{N},
-- KEYS[3] = unlock latch, KEYS[4] and KEYS[5] = the line
-- ARGV[1] = message to publish (1), ARGV[2] = lease in ms for a partial
-- unlock, ARGV[3] = writer name "<uuid>:<tid>:write", ARGV[4] = publish
-- command, ARGV[5] = latch lifetime in ms, ARGV[6] and ARGV[7] = the
-- line's waiting lease and turn in ms, ARGV[8] = the line's channel prefix
-- Returns nil when the writer holds nothing (when N is missing, 1 is still
-- published and the latch written with 1, as Redisson does), 0 when write
-- holds remain, 1 when the write lock was released. 1 is published on a
-- release, and also on a downgrade, where Redisson publishes nothing, so
-- that readers waiting elsewhere come in at once. A retry with the same
-- latch replays the first result.
-- The message, and the line's turns after a release or a downgrade.
local function released()
    local L = line_open(KEYS[4], KEYS[5], ARGV[8], ARGV[4], ARGV[6], ARGV[7],
                        'rw', KEYS[1])
    L.heard = redis.call(ARGV[4], KEYS[2], ARGV[1])
    line_release(L)
end
local replay = redis.call('get', KEYS[3])
if replay then
    return tonumber(replay)
end
local mode = redis.call('hget', KEYS[1], 'mode')
if not mode then
    released()
    redis.call('set', KEYS[3], 1, 'px', ARGV[5])
    return nil
end
if mode ~= 'write' or redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[3], 0, 'px', ARGV[5])
    return 0
end
redis.call('hdel', KEYS[1], ARGV[3])
if redis.call('hlen', KEYS[1]) == 1 then
    redis.call('del', KEYS[1])
else
    redis.call('hset', KEYS[1], 'mode', 'read')
end
released()
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1
