--! keys: lock conds queue leases channel registry
--! argv: owner count:int publish name
-- A condition on a lock: signal (count 1) or signal all (count: every
-- waiter). The signaller must hold the lock.
-- KEYS[1..4] as condition_await.lua, KEYS[5] = the channel
-- credisson_condition__channel:{N}:C, KEYS[6] = the registry
-- credisson_conditions:{N}
-- ARGV[1] = the signaller's field in N, ARGV[2] = how many waiters to
-- signal at most, ARGV[3] = publish command, ARGV[4] = the condition's
-- name C (it leaves the registry with its hash)
-- Returns -1 when ARGV[1] does not hold the lock (nothing written); else
-- the number of waiters signalled, first come first signalled. A waiter
-- whose lease has lapsed (its process died while waiting) is dropped and
-- not counted. Signalled waiters keep their lease: one that dies before
-- it takes its signal passes it on when the lease lapses (see
-- condition_wait.lua). "1" is published when any was signalled.
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
    return -1
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = 0
while n < tonumber(ARGV[2]) do
    local first = redis.call('zrange', KEYS[3], 0, 0)[1]
    if not first then
        break
    end
    redis.call('zrem', KEYS[3], first)
    local deadline = tonumber(redis.call('zscore', KEYS[4], first))
    if deadline and deadline > now then
        redis.call('hset', KEYS[2], first, 's')
        n = n + 1
    else
        redis.call('hdel', KEYS[2], first)
        redis.call('zrem', KEYS[4], first)
    end
end
if n > 0 then
    redis.call(ARGV[3], KEYS[5], 1)
elseif redis.call('zcard', KEYS[4]) == 0 then
    redis.call('srem', KEYS[6], ARGV[4])
    redis.call('del', KEYS[2])
end
return n
