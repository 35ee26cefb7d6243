--! keys: object queue timeouts token permits conditions arrivals line line_state
--! argv: most_listed:int most_holds:int key_prefix most_fields:int cond_prefix queue_prefix leases_prefix
--! uses: line
-- What an object holds, read in one step so the answer is a snapshot;
-- writes nothing (credisson's own; Java has no counterpart). Reads every
-- layout a name may have: a lock hash (RLock, fenced, spin, non-reentrant,
-- read/write), a fair lock's queue and deadlines, a fenced lock's token,
-- a semaphore's or latch's count, an expirable semaphore's issued permits,
-- the waiters of a lock's conditions, credisson's waiting line.
-- KEYS[1] = N
-- KEYS[2] = fair lock queue prefixName(redisson_lock_queue, N)
-- KEYS[3] = fair lock deadlines prefixName(redisson_lock_timeout, N)
-- KEYS[4] = fencing token prefixName(redisson_lock_token, N)
-- KEYS[5] = issued permits suffixName(N, timeout)
-- KEYS[6] = the lock's conditions credisson_conditions:{N} (set of names C)
-- KEYS[7] = a barrier's waiting parties credisson_barrier_arrivals:{N}
-- (zset: owner -> lease deadline)
-- KEYS[8], KEYS[9] = the waiting line credisson_line:{N} and its state
-- credisson_line_state:{N} (lua/lib/line.lua, read with its line_entry)
-- ARGV[1] = the most queue entries and permits listed
-- ARGV[2] = the most hold keys looked at per reader
-- ARGV[3] = the readers' hold key prefix ({N}, or N when it has a '{')
-- ARGV[4] = the most hash fields read (a bigger hash is not a lock)
-- ARGV[5], ARGV[6], ARGV[7] = credisson_condition:{N},
-- credisson_condition_queue:{N}, credisson_condition_leases:{N}: a
-- condition C's keys are these followed by ":C" (the same slot as N: the
-- set names them, so they cannot be passed as KEYS)
-- Returns { type, pttl, server time ms, hash, readers, queue length,
-- queue, token, value, issued count, permits, conditions, parties, line
-- length, line }: hash is the flat HGETALL
-- (or "big", or 0 when N is no hash); readers is { owner, longest PTTL of
-- its hold keys (-2: none left) }...; queue is { owner, deadline score or
-- "" }...; token and value are the strings or 0; permits is ZRANGE
-- WITHSCORES; conditions is { { C, waiting count, { waiter, "s" or "w",
-- lease deadline }... }... }, the signalled first, then the waiting in
-- line; parties is { owner, lease deadline, arrival index or "", arrival
-- time ms or "" }... for a barrier's waiting parties (its hash holds the
-- index under the owner and the time under "a:" .. owner); line is
-- { entry, lease deadline, turn 0|1, permits, writer 0|1, since }... in
-- line order, the five after the entry "" when its state is missing. A
-- key of another type than expected reads as absent.
local function try(...)
    local ok, v = pcall(redis.call, ...)
    if ok then
        return v
    end
    return false
end
local limit = tonumber(ARGV[1])
local t = redis.call('type', KEYS[1])['ok']
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local hash = 0
local readers = {}
if t == 'hash' then
    if redis.call('hlen', KEYS[1]) > tonumber(ARGV[4]) then
        hash = 'big'
    else
        hash = redis.call('hgetall', KEYS[1])
        if redis.call('hget', KEYS[1], 'mode') then
            for i = 1, #hash, 2 do
                local owner, count = hash[i], tonumber(hash[i + 1])
                if owner ~= 'mode' and count ~= nil
                        and string.sub(owner, -6) ~= ':write' then
                    local best = -2
                    for k = 1, math.min(count, tonumber(ARGV[2])) do
                        local ttl = redis.call('pttl', ARGV[3] .. ':' .. owner
                                               .. ':rwlock_timeout:' .. k)
                        if ttl > best then
                            best = ttl
                        end
                    end
                    table.insert(readers, owner)
                    table.insert(readers, best)
                end
            end
        end
    end
end
local qlen = try('llen', KEYS[2]) or 0
local queue = {}
if qlen > 0 or redis.call('exists', KEYS[3]) == 1 then
    if qlen == 0 then
        qlen = -1 -- deadlines without a queue: a fair lock all the same
    end
    for _, owner in ipairs(try('lrange', KEYS[2], 0, limit - 1) or {}) do
        table.insert(queue, owner)
        table.insert(queue, try('zscore', KEYS[3], owner) or '')
    end
end
local token = try('get', KEYS[4]) or 0
local value = 0
if t == 'string' then
    value = redis.call('get', KEYS[1])
end
local plen = try('zcard', KEYS[5]) or 0
local permits = {}
if plen > 0 then
    permits = redis.call('zrange', KEYS[5], 0, limit - 1, 'withscores')
end
local conditions = {}
local names = try('smembers', KEYS[6]) or {}
table.sort(names)
for _, c in ipairs(names) do
    local h, q, l = ARGV[5] .. ':' .. c, ARGV[6] .. ':' .. c,
                    ARGV[7] .. ':' .. c
    -- A name whose hash is gone (a foreign DEL left it behind) is skipped.
    if #conditions < limit and redis.call('exists', h) == 1 then
        local waiters = {}
        for _, w in ipairs(try('hkeys', h) or {}) do
            if #waiters < 3 * limit and try('hget', h, w) == 's' then
                table.insert(waiters, w)
                table.insert(waiters, 's')
                table.insert(waiters, try('zscore', l, w) or '')
            end
        end
        for _, w in ipairs(try('zrange', q, 0, limit - 1) or {}) do
            if #waiters < 3 * limit then
                table.insert(waiters, w)
                table.insert(waiters, 'w')
                table.insert(waiters, try('zscore', l, w) or '')
            end
        end
        table.insert(conditions, {c, try('zcard', q) or 0, waiters})
    end
end
local parties = {}
if t == 'hash' then
    local arrivals = try('zrange', KEYS[7], 0, limit - 1, 'withscores') or {}
    for i = 1, #arrivals, 2 do
        local owner = arrivals[i]
        local got = redis.call('hmget', KEYS[1], owner, 'a:' .. owner)
        table.insert(parties, owner)
        table.insert(parties, arrivals[i + 1])
        table.insert(parties, got[1] or '')
        table.insert(parties, got[2] or '')
    end
end
local llen, line = 0, {}
if redis.call('type', KEYS[8])['ok'] == 'zset' then
    local L = {state = KEYS[9], entries = {}}
    local stated = redis.call('type', KEYS[9])['ok'] == 'hash'
    llen = redis.call('zcard', KEYS[8])
    for _, id in ipairs(redis.call('zrange', KEYS[8], 0, limit - 1)) do
        local e = stated and line_entry(L, id)
        table.insert(line, id)
        if e then
            table.insert(line, e.deadline)
            table.insert(line, e.turn and 1 or 0)
            table.insert(line, e.n)
            table.insert(line, e.w and 1 or 0)
            table.insert(line, e.since)
        else
            for _ = 1, 5 do
                table.insert(line, '')
            end
        end
    end
end
return {t, redis.call('pttl', KEYS[1]), now, hash, readers, qlen, queue,
        token, value, plen, permits, conditions, parties, llen, line}
