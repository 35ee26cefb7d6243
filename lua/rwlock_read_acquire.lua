--! keys: lock reader_timeouts line line_state
--! argv: lease_ms:int reader writer wait:int line_lease_ms:int turn_ms:int line_channel publish
--! uses: line
-- RReadWriteLock read acquire (protocol sections 6.1 and 6.2), behind
-- credisson's waiting line (lua/lib/line.lua): a reader that holds no read
-- hold yet does not come in while a writer waits in line before it (writer
-- preference among credisson clients); a reader that holds one already,
-- and the write holder, always do (a downgrade, or nesting), so that they
-- never wait for a writer that waits for them.
-- KEYS[1] = lock hash N, KEYS[2] = the reader's timeout prefix
-- {N}:<uuid>:<tid>:rwlock_timeout (N:<uuid>:<tid>:rwlock_timeout when N
-- contains '{'); hold i has the timeout key KEYS[2] .. ':' .. i; KEYS[3]
-- and KEYS[4] = the line credisson_line:{N} and credisson_line_state:{N}
-- ARGV[1] = lease in ms, ARGV[2] = reader name "<uuid>:<tid>" (also its
-- entry in the line), ARGV[3] = the same thread's writer name
-- "<uuid>:<tid>:write", ARGV[4] .. ARGV[8] as lock_acquire.lua's ARGV[3]
-- .. ARGV[7]
-- Returns nil when the read hold was taken, otherwise {PTTL N, listen,
-- turn} as lock_acquire.lua.
local mode = redis.call('hget', KEYS[1], 'mode')
local function take()
    if not mode then
        redis.call('hset', KEYS[1], 'mode', 'read')
        redis.call('hset', KEYS[1], ARGV[2], 1)
        redis.call('set', KEYS[2] .. ':1', 1, 'px', ARGV[1])
        redis.call('pexpire', KEYS[1], ARGV[1])
        return nil
    end
    local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('set', KEYS[2] .. ':' .. n, 1, 'px', ARGV[1])
    local ttl = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], math.max(ttl, tonumber(ARGV[1])))
    return nil
end
if (mode == 'read' and redis.call('hexists', KEYS[1], ARGV[2]) == 1)
        or (mode == 'write'
            and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
    return take()
end
local L = line_open(KEYS[3], KEYS[4], ARGV[7], ARGV[8], ARGV[5], ARGV[6],
                    'rw', KEYS[1])
local taken, listen, turn = line_attempt(L, ARGV[2], 1, false, ARGV[4])
if taken then
    return take()
end
return {redis.call('pttl', KEYS[1]), listen, turn}
