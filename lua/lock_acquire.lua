--! keys: lock line line_state
--! argv: lease_ms:int owner wait:int line_lease_ms:int turn_ms:int line_channel publish non_reentrant:int
--! uses: line
-- RLock acquire (protocol section 3.2), behind credisson's waiting line
-- (lua/lib/line.lua, doc/waiting-line.md). The spin lock uses it too, and
-- the non-reentrant lock (protocol section 13), which refuses its owner
-- taking it again with a script error.
-- KEYS[1] = lock hash N (field = owner name, value = hold count), KEYS[2]
-- and KEYS[3] = the line credisson_line:{N} and credisson_line_state:{N}
-- ARGV[1] = lease in ms, ARGV[2] = owner name "<uuid>:<tid>" (its entry
-- in the line too), ARGV[3] = 1 when the caller waits (it goes in line), 0
-- for a try that does not (the line is still respected), 2 for the spin
-- lock (no line: Redisson's rule),
-- ARGV[4] = the line's waiting lease in ms, ARGV[5] = a turn's in ms,
-- ARGV[6] = the line's channel prefix credisson_line__channel:{N}:,
-- ARGV[7] = publish command, ARGV[8] = 1 for the non-reentrant lock
-- Returns nil when the hold was taken (first or reentrant), the error
-- NON_REENTRANT_REACQUIRE when the non-reentrant lock's owner asks again,
-- otherwise
-- {PTTL N (-1: no expiry), listen, ms until the earliest turn before it
-- ends (-1: none)}, listen as line_attempt returns it (0, 1 or 2).
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    if ARGV[8] == '1' then
        return redis.error_reply('NON_REENTRANT_REACQUIRE')
    end
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
local L = line_open(KEYS[2], KEYS[3], ARGV[6], ARGV[7], ARGV[4], ARGV[5],
                    'lock', KEYS[1])
local take, listen, turn = line_attempt(L, ARGV[2], 1, false, ARGV[3])
if take then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
return {redis.call('pttl', KEYS[1]), listen, turn}
