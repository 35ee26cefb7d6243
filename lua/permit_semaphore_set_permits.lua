--! keys: permits channel issued line line_state
--! argv: count_value:int publish line_lease_ms:int turn_ms:int line_channel
--! uses: line
-- RPermitExpirableSemaphore setPermits (protocol section 8.2): make
-- available + issued equal to ARGV[1].
-- KEYS[1] = permits N, KEYS[2] = channel redisson_sc:{N}, KEYS[3] = issued
-- permits {N}:timeout, KEYS[4] and KEYS[5] = the waiting line
-- (lua/lib/line.lua), which gives its turns
-- ARGV[1] = permits (>= 0), ARGV[2] = publish command, ARGV[3] and ARGV[4]
-- = the line's waiting lease and turn in ms, ARGV[5] = its channel prefix
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
    local L = line_open(KEYS[4], KEYS[5], ARGV[5], ARGV[2], ARGV[3], ARGV[4],
                        'sem', KEYS[1])
    L.heard = redis.call(ARGV[2], KEYS[2], ARGV[1])
    line_release(L)
end
return 1
