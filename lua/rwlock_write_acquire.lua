--! keys: lock line line_state
--! argv: lease_ms:int writer wait:int line_lease_ms:int turn_ms:int line_channel publish
--! uses: line
-- RReadWriteLock write acquire (protocol section 6.4), behind credisson's
-- waiting line (lua/lib/line.lua). There is no read to write upgrade: a
-- thread holding only read holds is refused like anyone.
-- KEYS[1] = lock hash N, KEYS[2] and KEYS[3] = the line
-- ARGV[1] = lease in ms, ARGV[2] = writer name "<uuid>:<tid>:write"
-- (its entry in the line is the thread's reader name), ARGV[3] .. ARGV[7]
-- as lock_acquire.lua's
-- Returns nil when the write hold was taken, otherwise {PTTL N, listen,
-- turn} as lock_acquire.lua. A reentrant write acquire adds the lease to
-- the remaining TTL (Redisson's rule; the watchdog later sets it back).
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    local ttl = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], ttl + tonumber(ARGV[1]))
    return nil
end
local L = line_open(KEYS[2], KEYS[3], ARGV[6], ARGV[7], ARGV[4], ARGV[5],
                    'rw', KEYS[1])
local taken, listen, turn = line_attempt(L, line_entry_of(ARGV[2]), 1, true,
                                         ARGV[3])
if taken then
    redis.call('hset', KEYS[1], 'mode', 'write')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
return {redis.call('pttl', KEYS[1]), listen, turn}
