--! keys: lock queue timeouts channel
--! argv: message:int now_ms:int publish
-- RFairLock forceUnlock (protocol section 5.6).
-- KEYS[1] = lock hash N, KEYS[2] = wait queue redisson_lock_queue:{N},
-- KEYS[3] = waiter deadlines redisson_lock_timeout:{N},
-- KEYS[4] = channel prefix redisson_lock__channel:{N}
-- ARGV[1] = message to publish (0), ARGV[2] = the caller's wall clock in
-- epoch ms, ARGV[3] = publish command
-- Returns 1 when the lock existed (and the head waiter, if any, was told on
-- its own channel), else 0.
local now = tonumber(ARGV[2])

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

if redis.call('del', KEYS[1]) == 1 then
    local head = redis.call('lindex', KEYS[2], 0)
    if head then
        redis.call(ARGV[3], KEYS[4] .. ':' .. head, ARGV[1])
    end
    return 1
end
return 0
