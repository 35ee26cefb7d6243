--! keys: permits channel line line_state
--! argv: count_value:int publish ttl_ms:int line_lease_ms:int turn_ms:int line_channel
--! uses: line
-- RSemaphore and RPermitExpirableSemaphore trySetPermits (protocol
-- sections 7.2 and 8.2).
-- KEYS[1] = permits N, KEYS[2] = channel redisson_sc:{N}, KEYS[3] and
-- KEYS[4] = the waiting line (lua/lib/line.lua), which gives its turns
-- ARGV[1] = permits (>= 0), ARGV[2] = publish command, ARGV[3] = time to
-- live in ms (0: none), ARGV[4] and ARGV[5] = the line's waiting lease and
-- turn in ms, ARGV[6] = its channel prefix
-- Returns 1 when N was absent and is now set (the count is published when
-- positive), 0 when N already existed (nothing changes).
if redis.call('exists', KEYS[1]) == 1 then
    return 0
end
if tonumber(ARGV[3]) > 0 then
    redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[3])
else
    redis.call('set', KEYS[1], ARGV[1])
end
if tonumber(ARGV[1]) > 0 then
    local L = line_open(KEYS[3], KEYS[4], ARGV[6], ARGV[2], ARGV[4], ARGV[5],
                        'sem', KEYS[1])
    L.heard = redis.call(ARGV[2], KEYS[2], ARGV[1])
    line_release(L)
end
return 1
