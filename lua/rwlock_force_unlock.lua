--! keys: lock channel
--! argv: message:int publish mode
-- RReadWriteLock forceUnlock of one side (protocol section 6.6); delete() on
-- the read or write lock is the same. It acts only when the lock is in that
-- side's mode. Timeout keys of readers are left to expire.
-- KEYS[1] = lock hash N, KEYS[2] = channel redisson_rwlock:{N}
-- ARGV[1] = message to publish (0 for the read side, 1 for the write side),
-- ARGV[2] = publish command, ARGV[3] = the side's mode, "read" or "write"
-- Returns 1 when the lock was in that mode (deleted, message published),
-- else 0.
if redis.call('hget', KEYS[1], 'mode') == ARGV[3] then
    redis.call('del', KEYS[1])
    redis.call(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
return 0
