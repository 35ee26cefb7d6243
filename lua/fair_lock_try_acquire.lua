--! keys: lock queue timeouts
--! argv: lease_ms:int owner now_ms:int wait_ms:int non_reentrant:int
-- RFairLock acquire, no-wait variant (protocol section 5.3): one attempt that
-- never joins the queue. Note that ARGV[3] and ARGV[4] are in the opposite
-- order to fair_lock_acquire.lua, as in Redisson.
-- KEYS[1] = lock hash N, KEYS[2] = wait queue redisson_lock_queue:{N},
-- KEYS[3] = waiter deadlines redisson_lock_timeout:{N}
-- ARGV[1] = lease in ms, ARGV[2] = owner name "<uuid>:<tid>",
-- ARGV[5] = "1" for the non-reentrant fair lock (Redisson 4.4), else "0",
-- ARGV[3] = the caller's wall clock in epoch ms,
-- ARGV[4] = wait in ms by which the other waiters' deadlines move earlier
-- when the lock is taken (fairLockWaitTimeout)
-- Returns nil when the hold was taken (first or reentrant), else 1.
-- The non-reentrant fair lock refuses its own owner: an error, as Redisson.
if ARGV[5] == '1' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    return redis.error_reply('NON_REENTRANT_REACQUIRE')
end
local now = tonumber(ARGV[3])
local wait = tonumber(ARGV[4])

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
    if not head or head == ARGV[2] then
        redis.call('lpop', KEYS[2])
        redis.call('zrem', KEYS[3], ARGV[2])
        local waiters = redis.call('zrange', KEYS[3], 0, -1)
        for i = 1, #waiters do
            redis.call('zincrby', KEYS[3], -wait, waiters[i])
        end
        redis.call('hset', KEYS[1], ARGV[2], 1)
        redis.call('pexpire', KEYS[1], ARGV[1])
        return nil
    end
end

if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
return 1
