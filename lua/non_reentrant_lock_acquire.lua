--! keys: lock
--! argv: lease_ms:int owner
-- Non-reentrant lock acquire (protocol section 13): RLock's acquire, except
-- that the owner taking it again is refused with a script error.
-- KEYS[1] = lock hash N
-- ARGV[1] = lease in ms, ARGV[2] = owner name
-- Returns nil when taken, the PTTL when held by another owner, and the error
-- NON_REENTRANT_REACQUIRE when held by this owner.
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    return redis.error_reply('NON_REENTRANT_REACQUIRE')
end
if redis.call('exists', KEYS[1]) == 0 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
return redis.call('pttl', KEYS[1])
