--! keys: count marker
--! argv: grace_ms:int must_exist:int
-- One look of RCountDownLatch await (protocol section 9), telling an open
-- latch from an expired one (credisson's latch expiry) and, on demand, from
-- one never set.
-- KEYS[1] = count N, KEYS[2] = marker {N}:credisson_latch_expiry: "opened"
-- once a credisson count down opened N (it lives CR_LATCH_OPENED_MARK_MS),
-- else N's time to live in ms while an expiring N is set (it lives the
-- grace longer than N)
-- ARGV[1] = grace in ms: how much longer than N an expiry marker lives,
-- ARGV[2] = 1 when a latch that was never set counts as closed, else 0
-- Returns {count, ttl}: count > 0 while closed, with ttl N's PTTL (-1: no
-- expiry); {0, -1} when open (N absent, or <= 0 as a Java trySetCount(0)
-- leaves it); {-1, -1} when expired: N is absent and its expiry marker is
-- within the grace, i.e. N went at or after its own deadline. An expiry
-- marker with more than the grace left means N was removed before its
-- deadline (counted down or deleted by a client that does not know the
-- marker): open. With ARGV[2] = 1, {-2, -1} when N is absent with no
-- marker: never set, or opened by a client that writes no marker (Java),
-- or deleted, or opened longer ago than the opened marker lives.
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
local mark = redis.call('get', KEYS[2])
if mark == false then
    if tonumber(ARGV[2]) == 1 then
        return {-2, -1}
    end
    return {0, -1}
end
if mark ~= 'opened' then
    local left = redis.call('pttl', KEYS[2])
    if left >= 0 and left <= tonumber(ARGV[1]) then
        return {-1, -1}
    end
end
return {0, -1}
