--! keys: lock queue timeouts channel latch
--! argv: message:int lease_ms:int owner now_ms:int publish latch_ms:int
-- RFairLock unlock (protocol sections 5.4 and 1.5): only the waiter at the
-- head of the queue is told, on its own channel.
-- KEYS[1] = lock hash N, KEYS[2] = wait queue redisson_lock_queue:{N},
-- KEYS[3] = waiter deadlines redisson_lock_timeout:{N},
-- KEYS[4] = channel prefix redisson_lock__channel:{N} (a waiter's channel is
-- this + ":" + its owner name), KEYS[5] = unlock latch
-- ARGV[1] = message to publish (0), ARGV[2] = lease in ms for a partial
-- unlock, ARGV[3] = owner name, ARGV[4] = the caller's wall clock in epoch
-- ms, ARGV[5] = publish command, ARGV[6] = latch lifetime in ms
-- Returns nil when the owner holds nothing, 0 when holds remain, 1 when the
-- lock was released, 2 when the lock was not held at all: Redisson's script
-- answers 1 there and so does the latch written (a retry replays 1); in both
-- cases the head waiter is woken. A retry with the same latch replays the
-- first result.
local replay = redis.call('get', KEYS[5])
if replay then
    return tonumber(replay)
end
local now = tonumber(ARGV[4])

-- Stale waiter cleanup, as in fair_lock_acquire.lua.
while true do
    local head = redis.call('lindex', KEYS[2], 0)
    if not head then
        break
    end
    local deadline = redis.call('zscore', KEYS[3], head)
    if not deadline or tonumber(deadline) > now then
        break
    end
    redis.call('zrem', KEYS[3], head)
    redis.call('lpop', KEYS[2])
end

if redis.call('exists', KEYS[1]) == 0 then
    local head = redis.call('lindex', KEYS[2], 0)
    if head then
        redis.call(ARGV[5], KEYS[4] .. ':' .. head, ARGV[1])
    end
    redis.call('set', KEYS[5], 1, 'px', ARGV[6])
    return 2
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[5], 0, 'px', ARGV[6])
    return 0
end
redis.call('del', KEYS[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[6])
local head = redis.call('lindex', KEYS[2], 0)
if head then
    redis.call(ARGV[5], KEYS[4] .. ':' .. head, ARGV[1])
end
return 1
