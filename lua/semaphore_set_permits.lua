--! keys: permits channel
--! argv: count_value:int publish
-- RSemaphore setPermits, credisson's own (Redisson's RSemaphore has none):
-- make the available count exactly ARGV[1], keeping N's TTL if it has one.
-- KEYS[1] = permits N, KEYS[2] = channel redisson_sc:{N}
-- ARGV[1] = permits (>= 0), ARGV[2] = publish command
-- Returns the count before (0 when N was absent). The new count is
-- published when positive.
local before = redis.call('get', KEYS[1])
local ttl = redis.call('pttl', KEYS[1])
if ttl > 0 then
    redis.call('set', KEYS[1], ARGV[1], 'px', ttl)
else
    redis.call('set', KEYS[1], ARGV[1])
end
if tonumber(ARGV[1]) > 0 then
    redis.call(ARGV[2], KEYS[2], ARGV[1])
end
return before == false and 0 or tonumber(before)
