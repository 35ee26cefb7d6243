--! keys: permits channel line line_state
--! argv: delta:int publish what line_lease_ms:int turn_ms:int line_channel
--! uses: line
-- RSemaphore and RPermitExpirableSemaphore addPermits (protocol sections
-- 7.2 and 8.2). As in Redisson, N is written with SET, which drops its TTL.
-- More permits give the waiting line's turns (lua/lib/line.lua).
-- KEYS[1] = permits N, KEYS[2] = channel redisson_sc:{N}, KEYS[3] and
-- KEYS[4] = the line
-- ARGV[1] = change (may be negative), ARGV[2] = publish command,
-- ARGV[3] = what to publish: 'total' (RSemaphore: the new count, when
-- positive) or 'delta' (RPermitExpirableSemaphore: the change, when
-- positive), ARGV[4] and ARGV[5] = the line's waiting lease and turn in
-- ms, ARGV[6] = the line's channel prefix
-- Returns the new count.
local value = redis.call('get', KEYS[1])
local total = (value == false and 0 or tonumber(value)) + tonumber(ARGV[1])
redis.call('set', KEYS[1], total)
local message = ARGV[3] == 'delta' and tonumber(ARGV[1]) or total
if message > 0 then
    local L = line_open(KEYS[3], KEYS[4], ARGV[6], ARGV[2], ARGV[4], ARGV[5],
                        'sem', KEYS[1])
    L.heard = redis.call(ARGV[2], KEYS[2], message)
    line_release(L)
end
return total
