--! keys: lock token line line_state
--! argv: lease_ms:int owner wait:int line_lease_ms:int turn_ms:int line_channel publish
--! uses: line
-- RFencedLock acquire (protocol section 12): every acquisition, reentrant
-- ones included, takes the next fencing token.
-- KEYS[1] = lock hash N, KEYS[2] = token counter redisson_lock_token:{N},
-- KEYS[3] and KEYS[4] = the line; ARGV as lock_acquire.lua.
-- Returns {-1, token} when the hold was taken, {pttl, -1, listen, turn}
-- otherwise (a pttl of -1 then means a lock without expiry, not an
-- acquisition; listen and turn as lock_acquire.lua).
local function take()
    local token = redis.call('incr', KEYS[2])
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {-1, token}
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    return take()
end
local L = line_open(KEYS[3], KEYS[4], ARGV[6], ARGV[7], ARGV[4], ARGV[5],
                    'lock', KEYS[1])
local taken, listen, turn = line_attempt(L, ARGV[2], 1, false, ARGV[3])
if taken then
    return take()
end
return {redis.call('pttl', KEYS[1]), -1, listen, turn}
