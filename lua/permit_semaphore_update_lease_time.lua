--! keys: permits issued channel
--! argv: id:bin expiry_ms:int now_ms:int publish
-- RPermitExpirableSemaphore updateLeaseTime (protocol section 8.2).
-- KEYS[1] = permits N, KEYS[2] = issued permits {N}:timeout, KEYS[3] =
-- channel redisson_sc:{N}
-- ARGV[1] = permit id (16 raw bytes), ARGV[2] = new expiry in epoch ms (or
-- the never-expires marker), ARGV[3] = now in epoch ms, ARGV[4] = publish
-- command
-- Reclaims every expired permit first (publishing the new count when
-- positive). Returns 1 when the id is still issued and now has the new
-- expiry, else 0.
local expired = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3])
if #expired > 0 then
    redis.call('zrem', KEYS[2], unpack(expired))
    local total = redis.call('incrby', KEYS[1], #expired)
    if total > 0 then
        redis.call(ARGV[4], KEYS[3], total)
    end
end
if redis.call('zscore', KEYS[2], ARGV[1]) ~= false then
    redis.call('zadd', KEYS[2], ARGV[2], ARGV[1])
    return 1
end
return 0
