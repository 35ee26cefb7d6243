--! keys: barrier arrivals even odd
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
local state = redis.call('hmget', KEYS[1], 'o:' .. g, 'generation')
if state[1] == '1' then
    return {1}
elseif state[1] then
    return {2}
end
if tonumber(state[2]) ~= g or not redis.call('zscore', KEYS[2], ARGV[1]) then
    return {4}
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if tonumber(first[2]) <= now then
    for _, m in ipairs(redis.call('zrange', KEYS[2], 0, -1)) do
        redis.call('hdel', KEYS[1], m, 'a:' .. m)
    end
    redis.call('del', KEYS[2])
    redis.call('hdel', KEYS[1], 'o:' .. (g - keep))
    redis.call('hset', KEYS[1], 'o:' .. g, 0, 'arrived', 0, 'broken', 1)
    redis.call(ARGV[4], KEYS[3 + g % 2], 1)
    return {2}
end
local deadline = now + tonumber(ARGV[3])
redis.call('zadd', KEYS[2], deadline, ARGV[1])
-- The earliest lease after this renewal: the first's, unless it was this
-- party's own (then the next one's, if any, or the new deadline).
local left = deadline - now
local earliest = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if tonumber(earliest[2]) - now < left then
    left = tonumber(earliest[2]) - now
end
if left < 1 then
    left = 1
end
return {0, left}
