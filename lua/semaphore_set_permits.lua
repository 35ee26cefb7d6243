--! keys: permits channel line line_state
--! argv: count_value:int publish line_lease_ms:int turn_ms:int line_channel
--! uses: line
-- RSemaphore setPermits, credisson's own (Redisson's RSemaphore has none):
-- make the available count exactly ARGV[1], keeping N's TTL if it has one.
-- KEYS[1] = permits N, KEYS[2] = channel redisson_sc:{N}, KEYS[3] and
-- KEYS[4] = the waiting line (lua/lib/line.lua), which gives its turns
-- ARGV[1] = permits (>= 0), ARGV[2] = publish command, ARGV[3] and ARGV[4]
-- = the line's waiting lease and turn in ms, ARGV[5] = its channel prefix
-- Returns the count before (0 when N was absent). The new count is
-- published when positive.
local before = redis.call('get', KEYS[1])
local ttl = redis.call('pttl', KEYS[1])
if ttl > 0 then
    redis.call('set', KEYS[1], ARGV[1], 'px', ttl)
else
    redis.call('set', KEYS[1], ARGV[1])
end
if tonumber(ARGV[1]) > 0 then
    local L = line_open(KEYS[3], KEYS[4], ARGV[5], ARGV[2], ARGV[3], ARGV[4],
                        'sem', KEYS[1])
    L.heard = redis.call(ARGV[2], KEYS[2], ARGV[1])
    line_release(L)
end
return before == false and 0 or tonumber(before)
