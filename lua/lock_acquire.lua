--! keys: lock
--! argv: lease_ms:int owner
-- RLock acquire (protocol section 3.2).
-- KEYS[1] = lock hash N (field = owner name, value = hold count)
-- ARGV[1] = lease in ms, ARGV[2] = owner name "<uuid>:<tid>"
-- Returns nil when the hold was taken (first or reentrant), otherwise the
-- lock's PTTL in ms (-1 when it has no expiry) as a hint for waiting.
if redis.call('exists', KEYS[1]) == 0
        or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
return redis.call('pttl', KEYS[1])
