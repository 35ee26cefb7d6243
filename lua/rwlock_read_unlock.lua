--! keys: lock channel reader_timeouts key_prefix latch
--! argv: message:int reader publish latch_ms:int
-- RReadWriteLock read unlock (protocol sections 6.3 and 1.5). The newest
-- read hold's timeout key goes; while other holds remain, the hash lives as
-- long as the longest-lived remaining reader timeout key, so readers that
-- died (whose keys nobody renews) are dropped with the hash.
-- KEYS[1] = lock hash N, KEYS[2] = channel redisson_rwlock:{N},
-- KEYS[3] = the reader's timeout prefix {N}:<uuid>:<tid>:rwlock_timeout,
-- KEYS[4] = key prefix {N} (N when it contains '{'): any reader f's hold i
-- has the timeout key KEYS[4] .. ':' .. f .. ':rwlock_timeout:' .. i,
-- KEYS[5] = unlock latch
-- ARGV[1] = message to publish (0), ARGV[2] = reader name "<uuid>:<tid>",
-- ARGV[3] = publish command, ARGV[4] = latch lifetime in ms
-- Returns nil when the reader holds nothing (when N is missing, 0 is still
-- published and the latch written with 1, as Redisson does), 0 when holds
-- remain, 1 when the lock was released (0 published). A retry with the
-- same latch replays the first result.
local replay = redis.call('get', KEYS[5])
if replay then
    return tonumber(replay)
end
local mode = redis.call('hget', KEYS[1], 'mode')
if not mode then
    redis.call(ARGV[3], KEYS[2], ARGV[1])
    redis.call('set', KEYS[5], 1, 'px', ARGV[4])
    return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    return nil
end
local left = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if left == 0 then
    redis.call('hdel', KEYS[1], ARGV[2])
end
redis.call('del', KEYS[3] .. ':' .. (left + 1))

if redis.call('hlen', KEYS[1]) > 1 then
    local longest = -3
    local fields = redis.call('hgetall', KEYS[1])
    for i = 1, #fields, 2 do
        local holds = tonumber(fields[i + 1])
        if holds then
            for n = holds, 1, -1 do
                local ttl = redis.call('pttl', KEYS[4] .. ':' .. fields[i]
                                       .. ':rwlock_timeout:' .. n)
                longest = math.max(longest, ttl)
            end
        end
    end
    if longest > 0 then
        redis.call('pexpire', KEYS[1], longest)
        redis.call('set', KEYS[5], 0, 'px', ARGV[4])
        return 0
    end
    if mode == 'write' then
        redis.call('set', KEYS[5], 0, 'px', ARGV[4])
        return 0
    end
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], ARGV[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[4])
return 1
