--! keys: lock conds queue leases registry
--! argv: owner waiter lease_ms:int name
-- A condition on a lock: a waiter gets in line, before it releases the
-- lock (credisson's own; protocol in doc/coordination.md).
-- KEYS[1] = the lock's hash N, KEYS[2] = credisson_condition:{N}:C (hash:
-- seq, the line's counter; each waiter -> "w" waiting or "s" signalled),
-- KEYS[3] = credisson_condition_queue:{N}:C (zset: the waiting waiters by
-- arrival), KEYS[4] = credisson_condition_leases:{N}:C (zset: every
-- waiter -> its lease deadline, server epoch ms), KEYS[5] =
-- credisson_conditions:{N} (set: the names of N's conditions with waiters)
-- ARGV[1] = the holder's field in N (<uuid>:<tid>, plus ":write" for a
-- write lock), ARGV[2] = the waiter (<uuid>:<tid>), ARGV[3] = lease ms,
-- ARGV[4] = the condition's name C
-- Returns 0 when ARGV[1] does not hold the lock (nothing written), 1 when
-- the waiter is in line with its lease (again, for a resend: its place
-- and state are kept).
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
    return 0
end
-- The registry first: a key of the wrong type fails before any write.
redis.call('sadd', KEYS[5], ARGV[4])
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('hexists', KEYS[2], ARGV[2]) == 0 then
    local seq = redis.call('hincrby', KEYS[2], 'seq', 1)
    redis.call('hset', KEYS[2], ARGV[2], 'w')
    redis.call('zadd', KEYS[3], seq, ARGV[2])
end
redis.call('zadd', KEYS[4], now + tonumber(ARGV[3]), ARGV[2])
return 1
