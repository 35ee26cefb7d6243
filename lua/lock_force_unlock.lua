--! keys: lock channel line line_state
--! argv: message:int publish line_lease_ms:int turn_ms:int line_channel
--! uses: line
-- RLock forceUnlock and delete (protocol section 3.4); the lock's waiting
-- line (lua/lib/line.lua) gives its next turn.
-- KEYS[1] = lock hash N, KEYS[2] = channel redisson_lock__channel:{N},
-- KEYS[3] and KEYS[4] = the line
-- ARGV[1] = message to publish (0), ARGV[2] = publish command, ARGV[3] and
-- ARGV[4] = the line's waiting lease and turn in ms, ARGV[5] = the line's
-- channel prefix
-- Returns 1 when the lock existed (and waiters were told), else 0.
if redis.call('del', KEYS[1]) == 1 then
    local L = line_open(KEYS[3], KEYS[4], ARGV[5], ARGV[2], ARGV[3], ARGV[4],
                        'lock', KEYS[1])
    L.heard = redis.call(ARGV[2], KEYS[2], ARGV[1])
    line_release(L)
    return 1
end
return 0
