--! keys: lock channel
--! argv: message:int publish
-- RLock forceUnlock and delete (protocol section 3.4).
-- KEYS[1] = lock hash N, KEYS[2] = channel redisson_lock__channel:{N}
-- ARGV[1] = message to publish (0), ARGV[2] = publish command
-- Returns 1 when the lock existed (and waiters were told), else 0.
if redis.call('del', KEYS[1]) == 1 then
    redis.call(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
return 0
