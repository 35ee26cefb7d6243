--! keys: count channel marker
--! argv: publish grace_ms:int opened_ms:int
-- RCountDownLatch countDown (protocol section 9).
-- KEYS[1] = count N, KEYS[2] = channel redisson_countdownlatch__channel__{N},
-- KEYS[3] = marker {N}:credisson_latch_expiry ("opened", or an expiring
-- N's time to live; see latch_await.lua)
-- ARGV[1] = publish command, ARGV[2] = grace in ms: how much longer than N
-- an expiry marker lives, ARGV[3] = how long the "opened" marker lives
-- Returns the new count, 0 for one below (N is deleted when it is <= 0,
-- the marker then becomes "opened" for ARGV[3] ms, so that a waiter that
-- comes later can tell "opened" from "never set"; and 0, "reached zero", is
-- published when it is 0); -1 when N is absent and its expiry marker within
-- the grace (N went at its deadline: the latch expired); -2 when N is
-- absent otherwise (never set, or opened, as latch_await.lua tells them).
-- An absent N stays absent, as with Redisson's script (which creates -1
-- and deletes it).
if redis.call('exists', KEYS[1]) == 0 then
    local mark = redis.call('get', KEYS[3])
    if mark ~= false and mark ~= 'opened' then
        local left = redis.call('pttl', KEYS[3])
        if left >= 0 and left <= tonumber(ARGV[2]) then
            return -1
        end
    end
    return -2
end
-- N without a time to live is not the latch a marker was written for (a
-- Java client set the name again): that marker is stale.
if redis.call('pttl', KEYS[1]) == -1 then
    redis.call('del', KEYS[3])
end
local count = redis.call('decr', KEYS[1])
if count <= 0 then
    redis.call('del', KEYS[1])
    redis.call('set', KEYS[3], 'opened', 'px', ARGV[3])
end
if count == 0 then
    redis.call(ARGV[1], KEYS[2], 0)
end
if count < 0 then
    return 0 -- a latch set to 0 (Java's trySetCount(0)) was already open
end
return count
