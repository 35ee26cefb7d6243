--! keys: lock
--! argv: mode
-- RReadWriteLock isLocked of one side (protocol section 6.6).
-- KEYS[1] = lock hash N
-- ARGV[1] = the side, "read" or "write"
-- Returns 1 or 0. The write side is locked in mode write; the read side in
-- mode read, or in mode write when the writer also holds read holds (the
-- hash then has more than the mode and writer fields).
local mode = redis.call('hget', KEYS[1], 'mode')
if ARGV[1] == 'write' then
    if mode == 'write' then
        return 1
    end
    return 0
end
if mode == 'read' or (mode == 'write' and redis.call('hlen', KEYS[1]) > 2) then
    return 1
end
return 0
