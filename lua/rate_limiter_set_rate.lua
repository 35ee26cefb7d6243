--! keys: config value client_value permits client_permits
--! argv: rate:int interval_ms:int type:int keep_alive_ms:int
-- RRateLimiter setRate (ratelimiter protocol section 3.3, keepState false,
-- which also covers section 3.2): the new rate replaces the old one and the
-- state of the new type starts afresh.
-- KEYS[1] = the configuration hash N, KEYS[2] = permits left {N}:value,
-- KEYS[3] = this client's permits left {N}:value:<client id>, KEYS[4] =
-- grant records {N}:permits, KEYS[5] = this client's {N}:permits:<client id>
-- ARGV[1] = permits per interval, ARGV[2] = the interval in ms, ARGV[3] =
-- the rate type (0 OVERALL, 1 PER_CLIENT), ARGV[4] = keep-alive time in ms
-- (0: none; an earlier time to live of N then stays, as in Redisson)
-- Returns 1. A change of type deletes all four state keys; otherwise the
-- two of the new type go. Other clients' PER_CLIENT keys are not touched
-- (Redisson's quirk Q5).
local value, permits = KEYS[2], KEYS[4]
if ARGV[3] == '1' then
    value, permits = KEYS[3], KEYS[5]
end
local old = redis.call('hget', KEYS[1], 'type')
redis.call('hset', KEYS[1], 'rate', ARGV[1], 'interval', ARGV[2],
           'type', ARGV[3], 'keepAliveTime', ARGV[4])
if tonumber(ARGV[4]) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[4])
end
if old ~= false and old ~= ARGV[3] then
    redis.call('del', KEYS[2], KEYS[3], KEYS[4], KEYS[5])
else
    redis.call('del', value, permits)
end
return 1
