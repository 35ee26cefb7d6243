--! keys: permits issued channel
--! argv: id:bin never:int now_ms:int publish
-- RPermitExpirableSemaphore getLeaseTime (protocol section 8.2).
-- KEYS[1] = permits N, KEYS[2] = issued permits {N}:timeout, KEYS[3] =
-- channel redisson_sc:{N}
-- ARGV[1] = permit id (16 raw bytes), ARGV[2] = the never-expires marker
-- 922337203685477, ARGV[3] = now in epoch ms, ARGV[4] = publish command
-- Reclaims every expired permit first (publishing the new count when
-- positive). Returns -1 when the id never expires, the ms left of its lease
-- when it is issued, 0 when it is not issued.
local expired = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3])
if #expired > 0 then
    redis.call('zrem', KEYS[2], unpack(expired))
    local total = redis.call('incrby', KEYS[1], #expired)
    if total > 0 then
        redis.call(ARGV[4], KEYS[3], total)
    end
end
local expiry = redis.call('zscore', KEYS[2], ARGV[1])
if expiry == false then
    return 0
end
if tonumber(expiry) == tonumber(ARGV[2]) then
    return -1
end
return tonumber(expiry) - tonumber(ARGV[3])
