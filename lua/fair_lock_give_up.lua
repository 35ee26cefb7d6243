--! keys: queue timeouts
--! argv: owner wait_ms:int
-- RFairLock "acquire failed" (protocol section 5.5): a waiter that stops
-- waiting without the lock leaves the queue, and every waiter behind it has
-- its deadline moved earlier by the wait the leaver had enqueued with.
-- KEYS[1] = wait queue redisson_lock_queue:{N},
-- KEYS[2] = waiter deadlines redisson_lock_timeout:{N}
-- ARGV[1] = owner name of the leaving waiter, ARGV[2] = its wait in ms
-- Returns nil. Running it again changes nothing more.
local queue = redis.call('lrange', KEYS[1], 0, -1)
local behind = false
for i = 1, #queue do
    if behind then
        redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[i])
    elseif queue[i] == ARGV[1] then
        behind = true
    end
end
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])
return nil
