--! keys: lock latch
--! argv: lease_ms:int owner latch_ms:int
-- RSpinLock unlock (protocol sections 11 and 1.5): RLock's unlock without a
-- publish, since spin-lock waiters poll.
-- KEYS[1] = lock hash N, KEYS[2] = unlock latch
-- ARGV[1] = lease in ms for a partial unlock, ARGV[2] = owner name,
-- ARGV[3] = latch lifetime in ms
-- Returns nil (not held by the owner), 0 (holds remain) or 1 (released);
-- a retry with the same latch replays the first result.
local replay = redis.call('get', KEYS[2])
if replay then
    return tonumber(replay)
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    return nil
end
if redis.call('hincrby', KEYS[1], ARGV[2], -1) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('set', KEYS[2], 0, 'px', ARGV[3])
    return 0
end
redis.call('del', KEYS[1])
redis.call('set', KEYS[2], 1, 'px', ARGV[3])
return 1
