--! keys: config value client_value permits client_permits
--! argv:
-- RRateLimiter availablePermits (ratelimiter protocol section 4.4), with
-- the fix Q4 allows: the value is reconciled as an acquisition does it (never
-- above the rate), and a value this call writes gets N's time to live
-- instead of none. Nothing is refreshed (no keep-alive).
-- KEYS as rate_limiter_acquire.lua.
-- Returns {0, permits available now}, or {2, 0} when the limiter has no
-- rate (not initialized).
local rate = redis.call('hget', KEYS[1], 'rate')
local interval = redis.call('hget', KEYS[1], 'interval')
local kind = redis.call('hget', KEYS[1], 'type')
if rate == false or interval == false or kind == false then
    return {2, 0}
end
rate = tonumber(rate)
interval = tonumber(interval)
local value_key, records = KEYS[2], KEYS[4]
if kind == '1' then
    value_key, records = KEYS[3], KEYS[5]
end
local function permits_of(member)
    local ok, _, n = pcall(struct.unpack, 'Bc0I', member)
    if ok and n ~= nil then
        return n
    end
    return 0
end
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local value = redis.call('get', value_key)
local written = false
if value == false then
    value = rate
    written = true
else
    value = tonumber(value)
    local released = 0
    for _, m in ipairs(redis.call('zrangebyscore', records, 0,
                                  now - interval)) do
        released = released + permits_of(m)
    end
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
        value = rate
        written = true
    end
end
if written then
    redis.call('set', value_key, value)
    local ttl = redis.call('pttl', KEYS[1])
    if ttl > 0 then
        redis.call('pexpire', value_key, ttl)
        redis.call('pexpire', records, ttl)
    end
end
return {0, value}
