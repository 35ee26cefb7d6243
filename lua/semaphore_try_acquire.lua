--! keys: permits latch
--! argv: count_value:int latch_ms:int
-- RSemaphore tryAcquire (protocol section 7.2), made safe to retry.
-- KEYS[1] = permits N (decimal string), KEYS[2] = acquire latch
-- credisson_semaphore_acquire:{N}:<request id> (credisson's own key)
-- ARGV[1] = permits wanted (> 0), ARGV[2] = latch lifetime in ms
-- Returns 1 when the permits were taken (now or by an earlier attempt of
-- the same call whose reply was lost, which the latch remembers), else 0.
-- No publish, as in Redisson.
if redis.call('exists', KEYS[2]) == 1 then
    return 1
end
local value = redis.call('get', KEYS[1])
if value ~= false and tonumber(value) >= tonumber(ARGV[1]) then
    redis.call('decrby', KEYS[1], ARGV[1])
    redis.call('set', KEYS[2], 1, 'px', ARGV[2])
    return 1
end
return 0
