--! keys: conds queue leases channel registry
--! argv: waiter lease_ms:int leave:int publish name
-- A condition on a lock: a waiter looks (leave 0) or gives up (leave 1:
-- its wait ran out, keeping a signal that came; leave 2: it cannot use a
-- signal, which goes to the next waiter).
-- KEYS as condition_signal.lua without the lock; ARGV[1] = the waiter,
-- ARGV[2] = its lease ms, ARGV[3] = leave, ARGV[4] = publish command,
-- ARGV[5] = the condition's name C (it leaves the registry with its hash)
-- First every lapsed lease is settled: a waiting waiter's entry goes; a
-- signalled one's goes and its signal passes to the first waiting waiter
-- whose lease stands ("1" is published).
-- Returns {1, 0} when the waiter had been signalled (the signal is taken:
-- its entry goes); {2, 0} when it has no entry (dropped after its lease
-- lapsed, or the keys deleted): a spurious wake-up; {0, ms} while it waits
-- (its lease renewed; ms until the earliest lease of any waiter lapses, at
-- least 1: a signal may then pass on), {0, -1} after it left.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local published = false
-- Gives one signal to the first waiting waiter whose lease stands.
local function pass_on()
    while true do
        local first = redis.call('zrange', KEYS[2], 0, 0)[1]
        if not first then
            return
        end
        redis.call('zrem', KEYS[2], first)
        local deadline = tonumber(redis.call('zscore', KEYS[3], first))
        if deadline and deadline > now then
            redis.call('hset', KEYS[1], first, 's')
            published = true
            return
        end
        redis.call('hdel', KEYS[1], first)
        redis.call('zrem', KEYS[3], first)
    end
end
for _, w in ipairs(redis.call('zrangebyscore', KEYS[3], '-inf', now)) do
    local state = redis.call('hget', KEYS[1], w)
    redis.call('hdel', KEYS[1], w)
    redis.call('zrem', KEYS[2], w)
    redis.call('zrem', KEYS[3], w)
    if state == 's' then
        pass_on()
    end
end
local state = redis.call('hget', KEYS[1], ARGV[1])
local answer = {0, -1}
if state and (ARGV[3] ~= '0' or state == 's') then
    redis.call('hdel', KEYS[1], ARGV[1])
    redis.call('zrem', KEYS[2], ARGV[1])
    redis.call('zrem', KEYS[3], ARGV[1])
    if state == 's' and ARGV[3] == '2' then
        pass_on()
    elseif state == 's' then
        answer = {1, 0}
    end
elseif not state and ARGV[3] == '0' then
    answer = {2, 0}
elseif state then
    redis.call('zadd', KEYS[3], now + tonumber(ARGV[2]), ARGV[1])
    local earliest = redis.call('zrange', KEYS[3], 0, 0, 'withscores')[2]
    answer = {0, math.max(1, tonumber(earliest) - now)}
end
if published then
    redis.call(ARGV[4], KEYS[4], 1)
end
if redis.call('zcard', KEYS[3]) == 0 then
    redis.call('srem', KEYS[5], ARGV[5])
    redis.call('del', KEYS[1])
end
return answer
