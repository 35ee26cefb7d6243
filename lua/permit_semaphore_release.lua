--! keys: permits channel issued line line_state
--! argv: id:bin count:int now_ms:int publish line_lease_ms:int turn_ms:int line_channel
--! uses: line
-- RPermitExpirableSemaphore release / tryRelease of one id (protocol
-- section 8.2).
-- KEYS[1] = permits N, KEYS[2] = channel redisson_sc:{N}, KEYS[3] = issued
-- permits {N}:timeout, KEYS[4] and KEYS[5] = the waiting line
-- (lua/lib/line.lua), which gives the turns the permit can serve
-- ARGV[1] = permit id (16 raw bytes; 32 hex characters for Redisson
-- before 3.17), ARGV[2] = the permits it stands for (1; before 3.23.4 an
-- id can stand for several), ARGV[3] = now in epoch ms, ARGV[4] = publish
-- command, ARGV[5] and ARGV[6] = the line's waiting lease and turn in ms,
-- ARGV[7] = its channel prefix
-- Returns 0 when the id is not issued (nothing changes); 1 when it was
-- released; 2 when it had expired but was not reclaimed yet: the permit
-- comes back all the same (Redisson replies 0 there, protocol section 14
-- row 14). The new count is published when positive; 1 and 2 come with 3
-- times the number of subscribers that publish reached added (the
-- releaser lets them go first).
local expiry = redis.call('zscore', KEYS[3], ARGV[1])
if redis.call('zrem', KEYS[3], ARGV[1]) ~= 1 then
    return 0
end
local total = redis.call('incrby', KEYS[1], ARGV[2])
local heard = 0
if total > 0 then
    heard = redis.call(ARGV[4], KEYS[2], total)
    local L = line_open(KEYS[4], KEYS[5], ARGV[7], ARGV[4], ARGV[5], ARGV[6],
                        'sem', KEYS[1])
    L.heard = heard
    line_release(L)
end
if tonumber(expiry) <= tonumber(ARGV[3]) then
    return 2 + 3 * heard
end
return 1 + 3 * heard
