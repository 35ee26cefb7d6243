--! keys: lock token
--! argv: lease_ms:int owner
-- RFencedLock acquire (protocol section 12): every acquisition, reentrant
-- ones included, takes the next fencing token.
-- KEYS[1] = lock hash N, KEYS[2] = token counter redisson_lock_token:{N}
-- ARGV[1] = lease in ms, ARGV[2] = owner name
-- Returns {-1, token} when the hold was taken, {pttl, -1} otherwise (a pttl
-- of -1 then means a lock without expiry, not an acquisition).
if redis.call('exists', KEYS[1]) == 0
        or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    local token = redis.call('incr', KEYS[2])
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {-1, token}
end
return {redis.call('pttl', KEYS[1]), -1}
