--! keys: barrier arrivals even odd
--! argv: publish
-- Cyclic barrier delete: the hash and the waiting parties go; waiters are
-- told with 1 (on both channels) and find the barrier gone (broken) at
-- their next look.
-- KEYS as barrier_arrive.lua; ARGV[1] = publish command.
-- Returns 1 when the barrier existed, 0 otherwise.
if redis.call('del', KEYS[1], KEYS[2]) > 0 then
    redis.call(ARGV[1], KEYS[3], 1)
    redis.call(ARGV[1], KEYS[4], 1)
    return 1
end
return 0
