--! keys: pairs...
--! argv: lease_ms:int readers...
-- Watchdog renewal of read holds, in batches (protocol section 4.1, the
-- Redisson 4.4+ rule): only the listed readers' timeout keys are renewed,
-- never those of readers of other clients, so a dead reader's keys expire.
-- KEYS = pairs: KEYS[2j-1] = lock hash N_j, KEYS[2j] = its key prefix {N_j}
-- (N_j when it contains '{')
-- ARGV[1] = lease in ms, then for each pair j: the number m_j of readers
-- listed, then their m_j names "<uuid>:<tid>"
-- For each reader still in its hash, every one of its timeout keys
-- <prefix>:<reader>:rwlock_timeout:<i> (i = 1..its hold count) and the hash
-- get the lease again. Returns one integer per listed reader, in ARGV order:
-- 1 when it still holds (and was renewed), 0 when its hold is gone.
local renewed = {}
local arg = 2
for k = 1, #KEYS, 2 do
    local readers = tonumber(ARGV[arg])
    local alive = false
    arg = arg + 1
    for j = 1, readers do
        local reader = ARGV[arg]
        local holds = tonumber(redis.call('hget', KEYS[k], reader) or '')
        arg = arg + 1
        if holds then
            alive = true
            for i = holds, 1, -1 do
                redis.call('pexpire', KEYS[k + 1] .. ':' .. reader
                           .. ':rwlock_timeout:' .. i, ARGV[1])
            end
            renewed[#renewed + 1] = 1
        else
            renewed[#renewed + 1] = 0
        end
    end
    if alive then
        redis.call('pexpire', KEYS[k], ARGV[1])
    end
end
return renewed
