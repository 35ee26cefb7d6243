--! keys: config value client_value permits client_permits
--! argv: count:int id:bin
-- RRateLimiter tryAcquire, one attempt (ratelimiter protocol section 4.2),
-- with the fixes the protocol allows (Q1, Q2): a resent attempt is found by
-- its record and never takes permits twice, and a budget whose records are
-- all gone is whole again.
-- KEYS[1] = the configuration hash N, KEYS[2] = permits left {N}:value,
-- KEYS[3] = this client's permits left {N}:value:<client id>, KEYS[4] =
-- grant records {N}:permits (zset: member = 0x10, 16 id bytes, the permits
-- as a little-endian uint32; score = the grant time in epoch ms),
-- KEYS[5] = this client's {N}:permits:<client id>
-- ARGV[1] = permits asked for (1 .. 2^32 - 1), ARGV[2] = this attempt's 16
-- random id bytes (the same when the attempt is resent)
-- Grant times are the server's clock (TIME), where Redisson stamps its
-- client's: C clients need no synchronized clocks among themselves.
-- Returns {0, 0} when granted; {1, ms} when not: the time until the oldest
-- live record expires, + 3 ms (at least 1); {2, 0} when the limiter has no
-- rate (not initialized); {3, rate} when more permits are asked for than
-- the rate. The time to live rules of section 2 apply whatever the result,
-- except for the last two, which write nothing.
local rate = redis.call('hget', KEYS[1], 'rate')
local interval = redis.call('hget', KEYS[1], 'interval')
local kind = redis.call('hget', KEYS[1], 'type')
if rate == false or interval == false or kind == false then
    return {2, 0}
end
rate = tonumber(rate)
interval = tonumber(interval)
local count = tonumber(ARGV[1])
if rate < count then
    return {3, rate}
end
local value_key, records = KEYS[2], KEYS[4]
if kind == '1' then
    value_key, records = KEYS[3], KEYS[5]
end
-- The permits of one record; a record of another layout counts none.
local function permits_of(member)
    local ok, _, n = pcall(struct.unpack, 'Bc0I', member)
    if ok and n ~= nil then
        return n
    end
    return 0
end
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local member = struct.pack('Bc0I', string.len(ARGV[2]), ARGV[2], count)
local result
if redis.call('zscore', records, member) then
    result = {0, 0} -- this attempt ran before and its reply was lost
else
    local value = redis.call('get', value_key)
    if value == false then
        redis.call('set', value_key, rate - count)
        redis.call('zadd', records, now, member)
        result = {0, 0}
    else
        value = tonumber(value)
        local released = 0
        for _, m in ipairs(redis.call('zrangebyscore', records, 0,
                                      now - interval)) do
            released = released + permits_of(m)
        end
        local written = false
        if released > 0 then
            redis.call('zremrangebyscore', records, 0, now - interval)
            if value + released > rate then
                local held = 0
                for _, m in ipairs(redis.call('zrange', records, 0, -1)) do
                    held = held + permits_of(m)
                end
                value = rate - held
            else
                value = value + released
            end
            written = true
        end
        if value < rate and redis.call('zcard', records) == 0 then
            value = rate -- nothing granted within the interval
            written = true
        end
        if written then
            redis.call('set', value_key, value)
        end
        if value < count then
            local first = redis.call('zrange', records, 0, 0, 'withscores')
            local wait = interval + 3
            if first[2] ~= nil then
                wait = interval - (now - tonumber(first[2])) + 3
            end
            if wait < 1 then
                wait = 1
            end
            result = {1, wait}
        else
            redis.call('zadd', records, now, member)
            redis.call('decrby', value_key, count)
            result = {0, 0}
        end
    end
end
local keep = tonumber(redis.call('hget', KEYS[1], 'keepAliveTime') or '0')
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
