--! keys: permits issued channel line line_state
--! argv: k:int expiry_ms:int now_ms:int never:int publish entry wait:int line_lease_ms:int turn_ms:int line_channel ids...
--! uses: line
-- RPermitExpirableSemaphore tryAcquire (protocol section 8.2), behind
-- credisson's waiting line (lua/lib/line.lua) as semaphore_try_acquire.lua.
-- KEYS[1] = permits N, KEYS[2] = issued permits {N}:timeout (zset: member =
-- 16 raw id bytes, score = expiry in epoch ms), KEYS[3] = channel
-- redisson_sc:{N}, KEYS[4] and KEYS[5] = the line
-- ARGV[1] = k, the number of permits (and of ids, since Redisson 3.23.4;
-- before, one id stands for the k), ARGV[2] = expiry of the new permits in
-- epoch ms (or the never-expires marker), ARGV[3] = now in epoch ms,
-- ARGV[4] = the never-expires marker 922337203685477, ARGV[5] = publish
-- command, ARGV[6] .. ARGV[10] = the caller's entry in the line, whether it
-- waits, the line's waiting lease and turn in ms and its channel prefix (as
-- semaphore_try_acquire.lua's ARGV[3] .. ARGV[7]), ARGV[11 ..] = the new
-- permit ids (16 raw bytes each; 32 hex characters for Redisson before
-- 3.17)
-- First reclaims up to k expired ids (publishing the new count when
-- positive). Returns the bulk string 'OK' when the k permits were granted;
-- otherwise {the earliest expiry among issued permits, or -1 when there is
-- none or it is the never-expires marker, listen, turn} (listen and turn as
-- semaphore_try_acquire.lua).
local expired = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3],
                           'limit', 0, ARGV[1])
if #expired > 0 then
    -- In slices: Lua unpacks at most about 8000 values at once.
    for i = 1, #expired, 1000 do
        redis.call('zrem', KEYS[2],
                   unpack(expired, i, math.min(i + 999, #expired)))
    end
    local total = redis.call('incrby', KEYS[1], #expired)
    if total > 0 then
        redis.call(ARGV[5], KEYS[3], total)
    end
end
local L = line_open(KEYS[4], KEYS[5], ARGV[10], ARGV[5], ARGV[8], ARGV[9],
                    'sem', KEYS[1])
local take, listen, turn = line_attempt(L, ARGV[6], tonumber(ARGV[1]), false,
                                        ARGV[7])
if take then
    redis.call('decrby', KEYS[1], ARGV[1])
    for i = 11, #ARGV do
        redis.call('zadd', KEYS[2], ARGV[2], ARGV[i])
    end
    local ttl = redis.call('pttl', KEYS[1])
    if ttl > 0 then
        redis.call('pexpire', KEYS[2], ttl)
    end
    return 'OK'
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
local expiry = -1
if first[1] ~= nil and first[2] ~= ARGV[4] then
    expiry = tonumber(first[2])
end
return {expiry, listen, turn}
