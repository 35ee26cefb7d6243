--! keys: count channel marker
--! argv: publish grace_ms:int
-- RCountDownLatch delete (protocol section 9).
-- KEYS[1] = count N, KEYS[2] = channel redisson_countdownlatch__channel__{N},
-- KEYS[3] = expiry marker {N}:credisson_latch_expiry
-- ARGV[1] = publish command (ARGV[2], the expiry grace, is not used here)
-- Returns 1 when N existed: it is deleted and 1 is published (as Redisson
-- does; Java waiters keep waiting); 0 otherwise. The marker goes either way.
redis.call('del', KEYS[3])
if redis.call('del', KEYS[1]) == 1 then
    redis.call(ARGV[1], KEYS[2], 1)
    return 1
end
return 0
