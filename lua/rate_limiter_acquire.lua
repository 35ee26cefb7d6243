--! keys: config value client_value permits client_permits held client_held
--! argv: count:int id:bin
-- RRateLimiter tryAcquire, one attempt (ratelimiter protocol section 4.2),
-- with the fixes the protocol allows (Q1, Q2): a resent attempt is found by
-- its record and never takes permits twice, and a budget whose records are
-- all gone is whole again; and a grant only where the records leave room
-- for it: the permits granted within the interval, as the live records
-- say, plus those asked for stay within the rate whatever the stored value
-- says (a Java release() or availablePermits() can leave it above that).
-- With a count of 0 it is availablePermits (section 4.4, with the fix Q4
-- allows): the same reconciliation, nothing granted and nothing refreshed
-- (no keep-alive), a value it writes given N's time to live.
-- KEYS[1] = the configuration hash N, KEYS[2] = permits left {N}:value,
-- KEYS[3] = this client's permits left {N}:value:<client id>, KEYS[4] =
-- grant records {N}:permits (zset: member = 0x10, 16 id bytes, the permits
-- as a little-endian uint32; score = the grant time in epoch ms),
-- KEYS[5] = this client's {N}:permits:<client id>, KEYS[6] = credisson's
-- summary of the records {N}:credisson_rate_held, KEYS[7] = this client's
-- {N}:credisson_rate_held:<client id>
-- ARGV[1] = permits asked for (1 .. 2^32 - 1; 0: availablePermits),
-- ARGV[2] = this attempt's 16 random id bytes (the same when the attempt is
-- resent; unused with a count of 0)
-- Grant times are the server's clock (TIME), where Redisson stamps its
-- client's: C clients need no synchronized clocks among themselves.
-- Returns {0, 0} when granted; {1, ms} when not: the time until enough
-- live records expire, + 3 ms (at least 1); {2, 0} when the limiter has no
-- rate (not initialized); {3, rate} when more permits are asked for than
-- the rate; with a count of 0, {0, permits an acquisition could take now}
-- (never above the rate less the permits the live records hold). The time
-- to live rules of section 2 apply to the attempts, except those answered
-- {2, 0} or {3, rate}, which write nothing.
local rate = redis.call('hget', KEYS[1], 'rate')
local interval = redis.call('hget', KEYS[1], 'interval')
local kind = redis.call('hget', KEYS[1], 'type')
if rate == false or interval == false or kind == false then
    return {2, 0}
end
rate = tonumber(rate)
interval = tonumber(interval)
local count = tonumber(ARGV[1])
local look = count == 0
if rate < count then
    return {3, rate}
end
local value_key, records, held_key = KEYS[2], KEYS[4], KEYS[6]
if kind == '1' then
    value_key, records, held_key = KEYS[3], KEYS[5], KEYS[7]
end
-- The permits of one record; a record of another layout counts none.
local function permits_of(member)
    local ok, _, n = pcall(struct.unpack, 'Bc0I', member)
    if ok and n ~= nil then
        return n
    end
    return 0
end
-- The permits the live records hold, their number, whether that was
-- counted (not read from the summary), and the lowest record's member and
-- score. The sum is read from the summary this script left
-- (held:number:lowest member) while it still describes the records:
-- records are only added, or removed from the lowest score up, so a set
-- with the same number and the same lowest member is the same set.
-- Otherwise it is counted again.
local function held_now()
    local n = redis.call('zcard', records)
    if n == 0 then
        return 0, 0, false, nil, nil
    end
    local first = redis.call('zrange', records, 0, 0, 'withscores')
    local low, low_score = first[1], tonumber(first[2])
    local kept = redis.call('get', held_key)
    if kept then
        local h, kn, klow = string.match(kept, '^(%d+):(%d+):(.*)$')
        if h ~= nil and tonumber(kn) == n and klow == low then
            return tonumber(h), n, false, low, low_score
        end
    end
    local h = 0
    for _, m in ipairs(redis.call('zrange', records, 0, -1)) do
        h = h + permits_of(m)
    end
    return h, n, true, low, low_score
end
-- Keeps the summary of the records (`low` their lowest member, nil when
-- not known) for the next attempt, for an interval at most: after that
-- the records it describes have all expired.
local function keep_held(h, n, low)
    if n > 0 then
        if low == nil then
            low = redis.call('zrange', records, 0, 0)[1]
        end
        redis.call('set', held_key,
                   string.format('%d:%d:', h, n) .. low, 'px', interval)
    end
end
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local member = struct.pack('Bc0I', string.len(ARGV[2]), ARGV[2], count)
local result
if not look and redis.call('zscore', records, member) then
    result = {0, 0} -- this attempt ran before and its reply was lost
else
    local stored = redis.call('get', value_key)
    local value, written = rate, true
    if stored ~= false then
        value, written = tonumber(stored), false
    end
    local held, n, changed, low, low_score = held_now()
    local released = 0
    local expired = redis.call('zrangebyscore', records, 0, now - interval)
    for _, m in ipairs(expired) do
        released = released + permits_of(m)
    end
    if #expired > 0 then
        redis.call('zremrangebyscore', records, 0, now - interval)
        value = value + released
        held, n, changed, low = held - released, n - #expired, true, nil
        written = true
    end
    if value > rate then
        value = rate - held -- as Redisson's acquire reconciles it
        written = true
    end
    if value < rate and n == 0 then
        value = rate -- nothing granted within the interval
        written = true
    end
    if written then
        redis.call('set', value_key, value)
        local ttl = redis.call('pttl', KEYS[1])
        if look and ttl > 0 then
            redis.call('pexpire', value_key, ttl)
            redis.call('pexpire', records, ttl)
        end
    end
    if look then
        local room = rate - held
        if value < room then
            room = value
        end
        result = {0, math.max(room, 0)}
    elseif value < count then
        -- Told by the stored value: the oldest record gives some back.
        local first = redis.call('zrange', records, 0, 0, 'withscores')
        local wait = interval + 3
        if first[2] ~= nil then
            wait = interval - (now - tonumber(first[2])) + 3
        end
        result = {1, wait}
    elseif rate - held < count then
        -- Told by the records: wait for as many of them to expire as
        -- make room.
        local wait, room = interval + 3, rate - held
        local live = redis.call('zrange', records, 0, -1, 'withscores')
        for i = 1, #live, 2 do
            room = room + permits_of(live[i])
            if room >= count then
                wait = interval - (now - tonumber(live[i + 1])) + 3
                break
            end
        end
        result = {1, wait}
    else
        redis.call('zadd', records, now, member)
        redis.call('decrby', value_key, count)
        if low == nil or now <= low_score then
            low = nil -- the new record may be the lowest
        end
        held, n, changed = held + count, n + 1, true
        result = {0, 0}
    end
    if result[1] == 1 and result[2] < 1 then
        result[2] = 1
    end
    if changed then
        keep_held(held, n, low)
    end
end
local keep = tonumber(redis.call('hget', KEYS[1], 'keepAliveTime') or '0')
if look then
    return result
end
if keep ~= nil and keep > 0 then
    redis.call('pexpire', KEYS[1], keep)
    redis.call('pexpire', value_key, keep)
    redis.call('pexpire', records, keep)
else
    local ttl = redis.call('pttl', KEYS[1])
    if ttl > 0 then
        redis.call('pexpire', value_key, ttl)
        redis.call('pexpire', records, ttl)
    end
end
return result
