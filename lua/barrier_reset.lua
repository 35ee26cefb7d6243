--! keys: barrier arrivals even odd
--! argv: publish keep:int
-- Cyclic barrier reset (Java's CyclicBarrier.reset): the parties waiting
-- in the current generation get "broken" (1 is published), and the next
-- generation begins, not broken.
-- KEYS as barrier_arrive.lua; ARGV[1] = publish command, ARGV[2] =
-- outcomes kept.
-- Returns 1, or 0 when the barrier does not exist.
if redis.call('exists', KEYS[1]) == 0 then
    return 0
end
local g = tonumber(redis.call('hget', KEYS[1], 'generation'))
if redis.call('hget', KEYS[1], 'broken') ~= '1' and
        tonumber(redis.call('hget', KEYS[1], 'arrived')) > 0 then
    for _, m in ipairs(redis.call('zrange', KEYS[2], 0, -1)) do
        redis.call('hdel', KEYS[1], m, 'a:' .. m)
    end
    redis.call('del', KEYS[2])
    redis.call('hset', KEYS[1], 'o:' .. g, 0)
    redis.call('hdel', KEYS[1], 'o:' .. (g - tonumber(ARGV[2])))
    redis.call(ARGV[1], KEYS[3 + g % 2], 1)
end
redis.call('hset', KEYS[1], 'generation', g + 1, 'arrived', 0, 'broken', 0)
return 1
