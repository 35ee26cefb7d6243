--! keys: lock channel latch line line_state
--! argv: message:int lease_ms:int owner publish latch_ms:int line_lease_ms:int turn_ms:int line_channel
--! uses: line
-- RLock unlock (protocol sections 3.3 and 1.5); the lock's waiting line
-- (lua/lib/line.lua) gives its next turn.
-- KEYS[1] = lock hash N, KEYS[2] = channel redisson_lock__channel:{N},
-- KEYS[3] = unlock latch redisson_unlock_latch:{N}:<request id>, KEYS[4]
-- and KEYS[5] = the line credisson_line:{N} and credisson_line_state:{N}
-- ARGV[1] = message to publish (0), ARGV[2] = lease in ms for a partial
-- unlock, ARGV[3] = owner name, ARGV[4] = publish command (publish or
-- spublish), ARGV[5] = latch lifetime in ms, ARGV[6] and ARGV[7] = the
-- line's waiting lease and turn in ms, ARGV[8] = the line's channel
-- prefix credisson_line__channel:{N}:
-- Returns nil when the owner holds nothing, 0 when holds remain, 1 when the
-- lock was released and nobody heard the message, -n when it was released
-- and n subscribers heard it (credisson's own reply: the client then gives
-- waiters a moment to take the lock); a retry with the same latch replays
-- 0 or 1.
local replay = redis.call('get', KEYS[3])
if replay then
    return tonumber(replay)
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[3], 0, 'px', ARGV[5])
    return 0
end
redis.call('del', KEYS[1])
local heard = redis.call(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
local L = line_open(KEYS[4], KEYS[5], ARGV[8], ARGV[4], ARGV[6], ARGV[7],
                    'lock', KEYS[1])
L.heard = heard
L.obj = true -- free: deleted above
line_release(L)
if heard > 0 then
    return -heard
end
return 1
