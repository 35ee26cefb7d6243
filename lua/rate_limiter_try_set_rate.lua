--! keys: config
--! argv: rate:int interval_ms:int type:int keep_alive_ms:int
-- RRateLimiter trySetRate (ratelimiter protocol section 3.1).
-- KEYS[1] = the configuration hash N
-- ARGV[1] = permits per interval, ARGV[2] = the interval in ms, ARGV[3] =
-- the rate type (0 OVERALL, 1 PER_CLIENT), ARGV[4] = keep-alive time in ms
-- (0: none)
-- Each field is set only where it is missing, each on its own, as Redisson
-- does; returns 1 when this call set `type` (the rate is now this call's),
-- 0 when the limiter had one already. The keep-alive time, when there is
-- one, expires N after that long unless an acquisition comes first.
redis.call('hsetnx', KEYS[1], 'rate', ARGV[1])
redis.call('hsetnx', KEYS[1], 'interval', ARGV[2])
redis.call('hsetnx', KEYS[1], 'keepAliveTime', ARGV[4])
local set = redis.call('hsetnx', KEYS[1], 'type', ARGV[3])
if set == 1 and tonumber(ARGV[4]) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[4])
end
return set
