--! keys: count channel marker
--! argv: count_value:int publish ttl_ms:int marker_ms:int
-- RCountDownLatch trySetCount (protocol section 9), with credisson's
-- optional expiry.
-- KEYS[1] = count N, KEYS[2] = channel redisson_countdownlatch__channel__{N},
-- KEYS[3] = expiry marker {N}:credisson_latch_expiry (credisson's own key)
-- ARGV[1] = count (> 0), ARGV[2] = publish command, ARGV[3] = time to live
-- in ms (0: none), ARGV[4] = lifetime of the marker in ms (time to live +
-- grace)
-- Returns 1 when N was absent and is now set (1, "new count", is published),
-- 0 when it existed (nothing changes). Any marker of an earlier latch of the
-- same name goes; with a time to live, a new marker outlives N by the grace,
-- so that waiters can tell an expired latch from one counted down to zero.
if redis.call('exists', KEYS[1]) == 1 then
    return 0
end
redis.call('del', KEYS[3])
if tonumber(ARGV[3]) > 0 then
    redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[3])
    redis.call('set', KEYS[3], ARGV[3], 'px', ARGV[4])
else
    redis.call('set', KEYS[1], ARGV[1])
end
redis.call(ARGV[2], KEYS[2], 1)
return 1
