--! keys: permits issued channel
--! argv: now_ms:int publish which
-- RPermitExpirableSemaphore availablePermits, acquiredPermits and
-- getPermits (protocol section 8.2).
-- KEYS[1] = permits N, KEYS[2] = issued permits {N}:timeout, KEYS[3] =
-- channel redisson_sc:{N}
-- ARGV[1] = now in epoch ms, ARGV[2] = publish command, ARGV[3] = which
-- count: 'available', 'acquired' or 'total'
-- Reclaims every expired permit first (publishing the new count when
-- positive). Returns the available count (N, 0 when absent), the number of
-- issued permits, or their sum (0 when N is absent).
local expired = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1])
if #expired > 0 then
    redis.call('zrem', KEYS[2], unpack(expired))
    local total = redis.call('incrby', KEYS[1], #expired)
    if total > 0 then
        redis.call(ARGV[2], KEYS[3], total)
    end
end
local value = redis.call('get', KEYS[1])
local issued = redis.call('zcount', KEYS[2], 0, '+inf')
if ARGV[3] == 'acquired' then
    return issued
end
if value == false then
    return 0
end
if ARGV[3] == 'available' then
    return tonumber(value)
end
return tonumber(value) + issued
