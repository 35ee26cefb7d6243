--! keys: locks...
--! argv: lease_ms:int owners...
-- Watchdog renewal of plain lock hashes, in batches (protocol section 4.1).
-- KEYS[1..n] = lock hashes
-- ARGV[1] = lease in ms, ARGV[1 + i] = the owner name held in KEYS[i]
-- Returns an array of n integers: 1 when KEYS[i] still had that owner and its
-- lease was renewed, 0 when the hold is gone.
local renewed = {}
for i = 1, #KEYS do
    if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
        redis.call('pexpire', KEYS[i], ARGV[1])
        renewed[i] = 1
    else
        renewed[i] = 0
    end
end
return renewed
