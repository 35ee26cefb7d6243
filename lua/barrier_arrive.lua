--! keys: barrier arrivals even odd
--! argv: parties:int owner lease_ms:int publish keep:int
-- Cyclic barrier await, the arrival (credisson's own object; its protocol
-- is in doc/coordination.md).
-- KEYS[1] = the barrier hash N (parties, generation, arrived, broken,
-- since: its creation stamp, one field per waiting party: owner -> its
-- arrival index, and a:<owner> -> its arrival time (server epoch ms), and
-- o:<g> -> the outcome of generation g, 1 completed or 0 broken, for the
-- last ARGV[5] generations), KEYS[2] = the waiting
-- parties credisson_barrier_arrivals:{N} (zset: owner -> lease deadline in
-- the server's epoch ms), KEYS[3] and KEYS[4] = the channels of the even
-- and the odd generations, credisson_barrier__channel:{N}:0 and :1 (a
-- round's end is published on the one of its generation)
-- ARGV[1] = parties, ARGV[2] = owner "<client id>:<thread id>", ARGV[3] =
-- lease in ms, ARGV[4] = publish command, ARGV[5] = outcomes kept
-- Returns {0, generation, index, ms until the earliest lease lapses,
-- since} when waiting; {1, generation, index} when this arrival completed
-- the round (the others are told with 0:<generation>:<since>); {2,
-- generation} when the round is broken (now, because a lease lapsed: the
-- others are told with 1, or before); {3, parties} when the barrier has
-- another number of parties. An owner already waiting (a resend) keeps
-- its arrival, with a new lease.
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local keep = tonumber(ARGV[5])
local state = redis.call('hmget', KEYS[1], 'parties', 'generation', 'broken',
                         'arrived', 'since', ARGV[2])
if not state[1] then
    state = {ARGV[1], '0', '0', '0', false, false}
    redis.call('hset', KEYS[1], 'parties', ARGV[1], 'generation', 0,
               'arrived', 0, 'broken', 0)
end
local parties = tonumber(state[1])
if parties ~= tonumber(ARGV[1]) then
    return {3, parties or 0}
end
local g = tonumber(state[2])
-- The creation stamp (server microseconds), which a completion message
-- carries so that a barrier deleted and created again under the same name
-- cannot pass its messages for the new one's; a barrier made without one
-- gets it now.
local since = state[5]
if not since then
    since = clock[1] .. string.format('%06d', tonumber(clock[2]))
    redis.call('hset', KEYS[1], 'since', since)
end
-- Ends generation g: 1 completed (the next begins), 0 broken.
local function settle(outcome)
    for _, m in ipairs(redis.call('zrange', KEYS[2], 0, -1)) do
        redis.call('hdel', KEYS[1], m, 'a:' .. m)
    end
    redis.call('del', KEYS[2])
    redis.call('hdel', KEYS[1], 'o:' .. (g - keep))
    if outcome == 1 then
        redis.call('hset', KEYS[1], 'o:' .. g, 1, 'arrived', 0,
                   'generation', g + 1)
        redis.call(ARGV[4], KEYS[3 + g % 2],
                   string.format('0:%d:%s', g, since))
    else
        redis.call('hset', KEYS[1], 'o:' .. g, 0, 'arrived', 0, 'broken', 1)
        redis.call(ARGV[4], KEYS[3 + g % 2], 1)
    end
end
if state[3] == '1' then
    return {2, g}
end
-- The earliest lease: lapsed (at or before now) breaks the round.
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if first[2] and tonumber(first[2]) <= now then
    settle(0)
    return {2, g}
end
local deadline = now + tonumber(ARGV[3])
local index
if state[6] then
    index = tonumber(state[6])
else
    local arrived = tonumber(state[4]) + 1
    index = parties - arrived
    if arrived == 1 then
        -- The first of a round: arrival times an older credisson's
        -- settling left behind go now.
        for _, f in ipairs(redis.call('hkeys', KEYS[1])) do
            if string.sub(f, 1, 2) == 'a:' then
                redis.call('hdel', KEYS[1], f)
            end
        end
    end
    if index <= 0 then
        settle(1)
        return {1, g, 0}
    end
    redis.call('hset', KEYS[1], 'arrived', arrived, ARGV[2], index,
               'a:' .. ARGV[2], now)
end
redis.call('zadd', KEYS[2], deadline, ARGV[2])
-- The earliest lease now (a resend that was the earliest is a little
-- early: the next look finds the true one).
local left = deadline - now
if first[2] and tonumber(first[2]) - now < left then
    left = tonumber(first[2]) - now
end
return {0, g, index, left, tonumber(since)}
