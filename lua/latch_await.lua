--! keys: count marker
--! argv: grace_ms:int
-- One look of RCountDownLatch await (protocol section 9), telling an open
-- latch from an expired one (credisson's latch expiry).
-- KEYS[1] = count N, KEYS[2] = expiry marker {N}:credisson_latch_expiry
-- ARGV[1] = grace in ms: how much longer than N the marker lives
-- Returns {count, ttl}: count > 0 while closed, with ttl N's PTTL (-1: no
-- expiry); {0, -1} when open (N absent, or <= 0 as a Java trySetCount(0)
-- leaves it); {-1, -1} when expired: N is absent and its marker is within
-- the grace, i.e. N went at or after its own deadline. A marker with more
-- than the grace left means N was removed before its deadline (counted
-- down or deleted by a client that does not know the marker): open.
local value = redis.call('get', KEYS[1])
if value ~= false then
    if tonumber(value) > 0 then
        local ttl = redis.call('pttl', KEYS[1])
        if ttl == -1 then
            -- Set again by a client that knows no marker (Java): any marker
            -- is an earlier latch's, and must not make this one expired.
            redis.call('del', KEYS[2])
        end
        return {tonumber(value), ttl}
    end
    return {0, -1}
end
local left = redis.call('pttl', KEYS[2])
if left >= 0 and left <= tonumber(ARGV[1]) then
    return {-1, -1}
end
return {0, -1}
