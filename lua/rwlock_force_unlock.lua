--! keys: lock channel line line_state
--! argv: message:int publish mode line_lease_ms:int turn_ms:int line_channel
--! uses: line
-- RReadWriteLock forceUnlock of one side (protocol section 6.6); delete() on
-- the read or write lock is the same. It acts only when the lock is in that
-- side's mode. Timeout keys of readers are left to expire.
-- KEYS[1] = lock hash N, KEYS[2] = channel redisson_rwlock:{N}, KEYS[3] and
-- KEYS[4] = the waiting line (lua/lib/line.lua), which gives its next turns
-- ARGV[1] = message to publish (0 for the read side, 1 for the write side),
-- ARGV[2] = publish command, ARGV[3] = the side's mode, "read" or "write",
-- ARGV[4] and ARGV[5] = the line's waiting lease and turn in ms, ARGV[6] =
-- the line's channel prefix
-- Returns 1 when the lock was in that mode (deleted, message published),
-- else 0.
if redis.call('hget', KEYS[1], 'mode') == ARGV[3] then
    redis.call('del', KEYS[1])
    local L = line_open(KEYS[3], KEYS[4], ARGV[6], ARGV[2], ARGV[4], ARGV[5],
                        'rw', KEYS[1])
    L.heard = redis.call(ARGV[2], KEYS[2], ARGV[1])
    line_release(L)
    return 1
end
return 0
