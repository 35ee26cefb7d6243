--! keys: barrier arrivals even odd
--! argv: owner generation:int publish keep:int
-- Cyclic barrier: a waiter gives up (its wait ran out, or its client is
-- being freed) and breaks the round, unless the round ended first.
-- KEYS as barrier_arrive.lua; ARGV[1] = owner, ARGV[2] = the generation it
-- arrived in, ARGV[3] = publish command, ARGV[4] = outcomes kept.
-- Returns {1} when the round was completed before, {2} when it was broken
-- before, {3} when this call broke it (1 is published), {4} when the
-- waiter is not there (the barrier was deleted).
local g = tonumber(ARGV[2])
local keep = tonumber(ARGV[4])
local outcome = redis.call('hget', KEYS[1], 'o:' .. g)
if outcome == '1' then
    return {1}
elseif outcome then
    return {2}
end
if tonumber(redis.call('hget', KEYS[1], 'generation')) ~= g or
        not redis.call('zscore', KEYS[2], ARGV[1]) then
    return {4}
end
for _, m in ipairs(redis.call('zrange', KEYS[2], 0, -1)) do
    redis.call('hdel', KEYS[1], m, 'a:' .. m)
end
redis.call('del', KEYS[2])
redis.call('hset', KEYS[1], 'o:' .. g, 0, 'arrived', 0, 'broken', 1)
redis.call('hdel', KEYS[1], 'o:' .. (g - keep))
redis.call(ARGV[3], KEYS[3 + g % 2], 1)
return {3}
