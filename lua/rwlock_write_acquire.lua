--! keys: lock
--! argv: lease_ms:int writer
-- RReadWriteLock write acquire (protocol section 6.4). There is no read to
-- write upgrade: a thread holding only read holds is refused like anyone.
-- KEYS[1] = lock hash N
-- ARGV[1] = lease in ms, ARGV[2] = writer name "<uuid>:<tid>:write"
-- Returns nil when the write hold was taken, otherwise PTTL N as a hint. A
-- reentrant write acquire adds the lease to the remaining TTL (Redisson's
-- rule; the watchdog later sets it back).
local mode = redis.call('hget', KEYS[1], 'mode')
if not mode then
    redis.call('hset', KEYS[1], 'mode', 'write')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    local ttl = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], ttl + tonumber(ARGV[1]))
    return nil
end
return redis.call('pttl', KEYS[1])
