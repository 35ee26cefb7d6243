--! keys: lock reader_timeouts
--! argv: lease_ms:int reader writer
-- RReadWriteLock read acquire (protocol sections 6.1 and 6.2). Readers are
-- let in whenever the mode is read, even while writers wait; the writer may
-- also take read holds (a downgrade, or nesting).
-- KEYS[1] = lock hash N, KEYS[2] = the reader's timeout prefix
-- {N}:<uuid>:<tid>:rwlock_timeout (N:<uuid>:<tid>:rwlock_timeout when N
-- contains '{'); hold i has the timeout key KEYS[2] .. ':' .. i
-- ARGV[1] = lease in ms, ARGV[2] = reader name "<uuid>:<tid>",
-- ARGV[3] = the same thread's writer name "<uuid>:<tid>:write"
-- Returns nil when the read hold was taken, otherwise PTTL N as a hint.
local mode = redis.call('hget', KEYS[1], 'mode')
if not mode then
    redis.call('hset', KEYS[1], 'mode', 'read')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('set', KEYS[2] .. ':1', 1, 'px', ARGV[1])
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if mode == 'read' or (mode == 'write'
        and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
    local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('set', KEYS[2] .. ':' .. n, 1, 'px', ARGV[1])
    local ttl = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], math.max(ttl, tonumber(ARGV[1])))
    return nil
end
return redis.call('pttl', KEYS[1])
