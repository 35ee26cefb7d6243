--! keys: permits latch line line_state
--! argv: count_value:int latch_ms:int entry wait:int line_lease_ms:int turn_ms:int line_channel publish
--! uses: line
-- RSemaphore tryAcquire (protocol section 7.2), made safe to retry, behind
-- credisson's waiting line (lua/lib/line.lua): the line's first are served
-- in order, a large request before smaller ones behind it.
-- KEYS[1] = permits N (decimal string), KEYS[2] = acquire latch
-- credisson_semaphore_acquire:{N}:<request id> (credisson's own key),
-- KEYS[3] and KEYS[4] = the line credisson_line:{N} and
-- credisson_line_state:{N}
-- ARGV[1] = permits wanted (> 0), ARGV[2] = latch lifetime in ms, ARGV[3] =
-- the caller's entry in the line, ARGV[4] = 1 when it waits (it goes in
-- line), 0 for a try that does not, ARGV[5] and ARGV[6] = the line's
-- waiting lease and turn in ms, ARGV[7] = the line's channel prefix
-- credisson_line__channel:{N}:, ARGV[8] = publish command
-- Returns 1 when the permits were taken (now or by an earlier attempt of
-- the same call whose reply was lost, which the latch remembers), else {0,
-- listen, ms until the earliest turn before it ends (-1: none)}, listen as
-- line_attempt returns it (0, 1 or 2). No publish on the semaphore's
-- channel, as in Redisson.
if redis.call('exists', KEYS[2]) == 1 then
    return 1
end
local L = line_open(KEYS[3], KEYS[4], ARGV[7], ARGV[8], ARGV[5], ARGV[6],
                    'sem', KEYS[1])
local take, listen, turn = line_attempt(L, ARGV[3], tonumber(ARGV[1]),
                                        false, ARGV[4])
if take then
    redis.call('decrby', KEYS[1], ARGV[1])
    redis.call('set', KEYS[2], 1, 'px', ARGV[2])
    return 1
end
return {0, listen, turn}
