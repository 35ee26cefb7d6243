--! keys: permits channel
--! argv: delta:int publish what
-- RSemaphore and RPermitExpirableSemaphore addPermits (protocol sections
-- 7.2 and 8.2). As in Redisson, N is written with SET, which drops its TTL.
-- KEYS[1] = permits N, KEYS[2] = channel redisson_sc:{N}
-- ARGV[1] = change (may be negative), ARGV[2] = publish command,
-- ARGV[3] = what to publish: 'total' (RSemaphore: the new count, when
-- positive) or 'delta' (RPermitExpirableSemaphore: the change, when
-- positive)
-- Returns the new count.
local value = redis.call('get', KEYS[1])
local total = (value == false and 0 or tonumber(value)) + tonumber(ARGV[1])
redis.call('set', KEYS[1], total)
local message = ARGV[3] == 'delta' and tonumber(ARGV[1]) or total
if message > 0 then
    redis.call(ARGV[2], KEYS[2], message)
end
return total
