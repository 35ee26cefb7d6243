--! keys: lock line line_state
--! argv: lease_ms:int owner wait:int line_lease_ms:int turn_ms:int line_channel publish
--! uses: line
-- Non-reentrant lock acquire (protocol section 13): RLock's acquire, except
-- that the owner taking it again is refused with a script error.
-- KEYS and ARGV as lock_acquire.lua.
-- Returns nil when taken, the error NON_REENTRANT_REACQUIRE when held by
-- this owner, else as lock_acquire.lua.
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    return redis.error_reply('NON_REENTRANT_REACQUIRE')
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
