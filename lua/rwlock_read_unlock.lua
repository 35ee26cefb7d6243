--! keys: lock channel reader_timeouts key_prefix latch line line_state
--! argv: message:int reader publish latch_ms:int line_lease_ms:int turn_ms:int line_channel
--! uses: line
-- RReadWriteLock read unlock (protocol sections 6.3 and 1.5); a release
-- gives the waiting line's next turn (lua/lib/line.lua). The newest
-- read hold's timeout key goes; while other holds remain, the hash lives as
-- long as the longest-lived remaining reader timeout key, so readers that
-- died (whose keys nobody renews) are dropped with the hash.
-- KEYS[1] = lock hash N, KEYS[2] = channel redisson_rwlock:{N},
-- KEYS[3] = the reader's timeout prefix {N}:<uuid>:<tid>:rwlock_timeout,
-- KEYS[4] = key prefix {N} (N when it contains '{'): any reader f's hold i
-- has the timeout key KEYS[4] .. ':' .. f .. ':rwlock_timeout:' .. i,
-- KEYS[5] = unlock latch, KEYS[6] and KEYS[7] = the line
-- ARGV[1] = message to publish (0), ARGV[2] = reader name "<uuid>:<tid>",
-- ARGV[3] = publish command, ARGV[4] = latch lifetime in ms, ARGV[5] and
-- ARGV[6] = the line's waiting lease and turn in ms, ARGV[7] = the line's
-- channel prefix
-- Returns nil when the reader holds nothing (when N is missing, 0 is still
-- published and the latch written with 1, as Redisson does), 0 when holds
-- remain, 1 when the lock was released (0 published). A retry with the
-- same latch replays the first result.
-- The message, and the line's turns after a release.
local function released()
    local L = line_open(KEYS[6], KEYS[7], ARGV[7], ARGV[3], ARGV[5], ARGV[6],
                        'rw', KEYS[1])
    L.heard = redis.call(ARGV[3], KEYS[2], ARGV[1])
    line_release(L)
end
local replay = redis.call('get', KEYS[5])
if replay then
    return tonumber(replay)
end
local mode = redis.call('hget', KEYS[1], 'mode')
if not mode then
    released()
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
released()
redis.call('set', KEYS[5], 1, 'px', ARGV[4])
return 1
