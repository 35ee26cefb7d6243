--! keys: permits channel line line_state
--! argv: count_value:int publish if_exists:int line_lease_ms:int turn_ms:int line_channel
--! uses: line
-- RSemaphore release and releaseIfExists (protocol section 7.2); the
-- waiting line (lua/lib/line.lua) gives the turns the permits can serve.
-- KEYS[1] = permits N, KEYS[2] = channel redisson_sc:{N}, KEYS[3] and
-- KEYS[4] = the line
-- ARGV[1] = permits to give back (> 0), ARGV[2] = publish command,
-- ARGV[3] = 1 to do nothing when N does not exist (releaseIfExists), else
-- 0, ARGV[4] and ARGV[5] = the line's waiting lease and turn in ms, ARGV[6]
-- = the line's channel prefix
-- Returns 0 when N did not exist and ARGV[3] is 1, else 1 plus the number
-- of subscribers the publish reached (the releaser lets them go first).
-- The new total is published when it is positive (Redisson publishes it
-- always; a count <= 0 would make Java's listener throw, protocol section
-- 1.4).
if ARGV[3] == '1' and redis.call('exists', KEYS[1]) == 0 then
    return 0
end
local total = redis.call('incrby', KEYS[1], ARGV[1])
local heard = 0
if total > 0 then
    heard = redis.call(ARGV[2], KEYS[2], total)
    local L = line_open(KEYS[3], KEYS[4], ARGV[6], ARGV[2], ARGV[4], ARGV[5],
                        'sem', KEYS[1])
    L.heard = heard
    L.obj = total -- the permits now
    line_release(L)
end
return 1 + heard
