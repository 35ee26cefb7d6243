--! keys: barrier arrivals channel
--! argv: owner generation:int lease_ms:int publish keep:int
-- Cyclic barrier await, a look while waiting: renews the waiter's lease and
-- breaks the round when another party's lease lapsed (on the server's
-- clock). KEYS and ARGV as barrier_arrive.lua, with ARGV[2] the generation
-- the waiter arrived in.
-- Returns {0, ms until the earliest lease lapses} while waiting, {1} when
-- the round was completed, {2} when it was broken (now, or before), {4}
-- when the barrier was deleted, or reset after more generations than are
-- kept.
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local g = tonumber(ARGV[2])
local keep = tonumber(ARGV[5])
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
if #redis.call('zrangebyscore', KEYS[2], '-inf', now, 'limit', 0, 1) > 0 then
    for _, m in ipairs(redis.call('zrange', KEYS[2], 0, -1)) do
        redis.call('hdel', KEYS[1], m)
    end
    redis.call('del', KEYS[2])
    redis.call('hset', KEYS[1], 'o:' .. g, 0, 'arrived', 0, 'broken', 1)
    redis.call('hdel', KEYS[1], 'o:' .. (g - keep))
    redis.call(ARGV[4], KEYS[3], 1)
    return {2}
end
redis.call('zadd', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
local left = tonumber(first[2]) - now
if left < 1 then
    left = 1
end
return {0, left}
