--! keys: lock queue timeouts
--! argv: lease_ms:int owner wait_ms:int now_ms:int non_reentrant:int
-- RFairLock acquire, waiting variant (protocol sections 5.1 and 5.2): used by
-- every acquisition that may wait; a caller that cannot have the lock now is
-- put at the tail of the queue.
-- KEYS[1] = lock hash N, KEYS[2] = wait queue redisson_lock_queue:{N},
-- KEYS[3] = waiter deadlines redisson_lock_timeout:{N}
-- ARGV[1] = lease in ms, ARGV[2] = owner name "<uuid>:<tid>",
-- ARGV[5] = "1" for the non-reentrant fair lock (Redisson 4.4), else "0",
-- ARGV[3] = the caller's whole wait in ms (its wait, else fairLockWaitTimeout),
-- ARGV[4] = the caller's wall clock in epoch ms
-- Returns nil when the hold was taken (first or reentrant). Otherwise the
-- caller is queued and the reply is a hint in ms: PTTL N when it was queued
-- already (-2: the lock is free but someone else is first in line, -1: it
-- has no expiry; Redisson answers max(0, PTTL N) there), else (just
-- enqueued) the time left to the previous tail's deadline, or PTTL N when
-- there is no such tail, as Redisson; that one may be negative.
-- The non-reentrant fair lock refuses its own owner: an error, as Redisson.
if ARGV[5] == '1' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    return redis.error_reply('NON_REENTRANT_REACQUIRE')
end
local now = tonumber(ARGV[4])
local wait = tonumber(ARGV[3])

-- Stale waiter cleanup: drop heads whose deadline has passed; stop at the
-- first head with a later deadline or with none.
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

-- Free, and nobody queued or the caller first in line: take it, and move
-- every other waiter's deadline earlier by the caller's wait.
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

-- Reentry.
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end

-- Queued already: the deadline stays as it was.
if redis.call('zscore', KEYS[3], ARGV[2]) then
    return redis.call('pttl', KEYS[1])
end

-- Enqueue behind the tail, with a deadline after the tail's.
local ttl
local tail = redis.call('lindex', KEYS[2], -1)
local tail_deadline = false
if tail and tail ~= ARGV[2] then
    tail_deadline = redis.call('zscore', KEYS[3], tail)
end
if tail_deadline then
    ttl = tonumber(tail_deadline) - now
else
    ttl = redis.call('pttl', KEYS[1])
end
if redis.call('zadd', KEYS[3], ttl + wait + now, ARGV[2]) == 1 then
    redis.call('rpush', KEYS[2], ARGV[2])
end
return ttl
