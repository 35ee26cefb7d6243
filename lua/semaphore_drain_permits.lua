--! keys: permits
--! argv:
-- RSemaphore drainPermits (protocol section 7.2). As in Redisson, the SET
-- drops N's TTL. No publish.
-- KEYS[1] = permits N
-- Returns the count before (0 when N was absent, and then N stays absent).
local value = redis.call('get', KEYS[1])
if value == false then
    return 0
end
redis.call('set', KEYS[1], 0)
return tonumber(value)
