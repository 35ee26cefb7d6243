--! keys: permits channel issued
--! argv: count_value:int publish
-- RPermitExpirableSemaphore setPermits (protocol section 8.2): make
-- available + issued equal to ARGV[1].
-- KEYS[1] = permits N, KEYS[2] = channel redisson_sc:{N}, KEYS[3] = issued
-- permits {N}:timeout
-- ARGV[1] = permits (>= 0), ARGV[2] = publish command
-- Returns 1 when something changed, 0 when the total was already right.
-- ARGV[1] is published on a change when it is positive.
local value = redis.call('get', KEYS[1])
if value == false then
    redis.call('set', KEYS[1], ARGV[1])
else
    local total = tonumber(value) + redis.call('zcount', KEYS[3], 0, '+inf')
    if total == tonumber(ARGV[1]) then
        return 0
    end
    redis.call('incrby', KEYS[1], tonumber(ARGV[1]) - total)
end
if tonumber(ARGV[1]) > 0 then
    redis.call(ARGV[2], KEYS[2], ARGV[1])
end
return 1
