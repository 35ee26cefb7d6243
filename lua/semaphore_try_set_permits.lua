--! keys: permits channel
--! argv: count_value:int publish ttl_ms:int
-- RSemaphore and RPermitExpirableSemaphore trySetPermits (protocol
-- sections 7.2 and 8.2).
-- KEYS[1] = permits N, KEYS[2] = channel redisson_sc:{N}
-- ARGV[1] = permits (>= 0), ARGV[2] = publish command, ARGV[3] = time to
-- live in ms (0: none)
-- Returns 1 when N was absent and is now set (the count is published when
-- positive), 0 when N already existed (nothing changes).
if redis.call('exists', KEYS[1]) == 1 then
    return 0
end
if tonumber(ARGV[3]) > 0 then
    redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[3])
else
    redis.call('set', KEYS[1], ARGV[1])
end
if tonumber(ARGV[1]) > 0 then
    redis.call(ARGV[2], KEYS[2], ARGV[1])
end
return 1
