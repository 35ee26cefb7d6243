-- credisson's waiting line (doc/waiting-line.md), the shared part of the
-- scripts of every object that has one: the lock kinds on a lock's
-- channel, the read/write lock, RSemaphore and RPermitExpirableSemaphore.
-- Only credisson reads or writes it; Java clients never see it.
--
-- The line of object N is two keys under N's hash tag:
--   credisson_line:{N}, a sorted set: entry -> ticket (arrival order); an
--     entry is a waiter's name "<client id>:<thread or handle id>";
--   credisson_line_state:{N}, a hash: 'seq' -> the last ticket given,
--     'e:' .. entry -> "<deadline> <turn> <n> <writer> <since>": the end
--     of the entry's lease in the server's epoch ms (a waiting lease,
--     renewed by each attempt of its waiter; or, turn 1, its turn's), the
--     permits it wants, whether it wants to write (1) and when it came;
--     and 'outside' -> when (epoch ms) a client outside the line last took
--     what a turn had given. The hash outlives the line while that is
--     recent (line_outside_left).
-- Each waiter listens on credisson_line__channel:{N}:<entry> for
--   't<heard>': its turn: the object can serve it now (heard: how many
--     clients heard the release on the object's own channel: Java waiters
--     that may take it first);
--   'w<ms>': it is the first entry without a turn, and the earliest turn
--     ends in ms (0: none runs): it attempts then, unless its turn came.
-- Every script that touches the line walks it from the front: lapsed
-- entries go, each entry the object can serve now gets a turn (and its
-- message), in order, until the first it cannot serve.

-- The line's handle for one script run: its keys, the channel prefix
-- (ending in ':'), the publish command, the waiting lease and the turn's in
-- ms, and the object (its kind, as line_fits reads it, and its key).
-- A script calls one of line_attempt, line_release and line_leave, after
-- it changed the object, so what the handle reads stays true for the run:
-- the object's state as line_fits reads it (obj: whether a lock is free, a
-- read/write lock's mode, a semaphore's permits; a script that has just
-- written it may set it), the entries read or written (entries: id ->
-- entry, or false when it is not in line), how many entries the line holds
-- (count, when known; at least min otherwise) and whether a deadline was
-- pushed later (grew: the keys' time to live may have to follow).
local function line_open(key, state, prefix, publish, lease_ms, turn_ms,
                         kind, object)
    return {key = key, state = state, prefix = prefix, publish = publish,
            lease = tonumber(lease_ms), turn = tonumber(turn_ms),
            kind = kind, object = object, now = nil,
            heard = 0, self = nil, front_moved = false,
            obj = nil, entries = {}, count = nil, min = 0, grew = false,
            outside = nil}
end

-- Reads the server's time (epoch ms) into L.now, once per script run and
-- only when the line is used (an empty line costs no TIME).
local function line_clock(L)
    if not L.now then
        local t = redis.call('time')
        L.now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    end
end

-- The entry of owner name `owner`: the thread's reader name (a writer's
-- ':write' goes), so that a thread has one place whichever side it waits
-- for.
local function line_entry_of(owner)
    return (string.gsub(owner, ':write$', ''))
end

-- Entry `id` as a table, or nil when it is not in line (read once a run).
-- `stored` is the deadline the server holds for it.
local function line_entry(L, id)
    local e = L.entries[id]
    if e ~= nil then
        return e or nil
    end
    local v = redis.call('hget', L.state, 'e:' .. id)
    local d, t, n, w, since
    if v then
        d, t, n, w, since = string.match(v, '^(%d+) (%d) (%d+) (%d) (%d+)$')
    end
    if d then
        e = {id = id, deadline = tonumber(d), turn = t == '1',
             n = tonumber(n), w = w == '1', since = tonumber(since)}
        e.stored = e.deadline
    end
    L.entries[id] = e or false
    return e
end

local function line_put(L, e)
    redis.call('hset', L.state, 'e:' .. e.id,
               string.format('%d %d %d %d %d', e.deadline, e.turn and 1 or 0,
                             e.n, e.w and 1 or 0, e.since))
    if not e.stored or e.deadline > e.stored then
        L.grew = true
    end
    e.stored = e.deadline
    L.entries[e.id] = e
end

local function line_drop(L, id)
    redis.call('zrem', L.key, id)
    redis.call('hdel', L.state, 'e:' .. id)
    L.entries[id] = false
    if L.count then
        L.count = L.count - 1
    end
    if L.min > 0 then
        L.min = L.min - 1
    end
end

-- Waiter `id` goes in line (at the end) or, in line already, renews its
-- waiting lease (a turn keeps its own end) and what it wants. One whose
-- lease lapsed (a turn it let pass) lost its place: it goes to the end.
local function line_join(L, id, n, w)
    line_clock(L)
    local e = line_entry(L, id)
    if e and e.deadline <= L.now then
        line_drop(L, id)
        e = nil
    end
    if not e then
        local seq = redis.call('hincrby', L.state, 'seq', 1)
        redis.call('zadd', L.key, seq, id)
        e = {id = id, turn = false, since = L.now}
    elseif e.turn and e.n == n and e.w == w then
        return e -- a turn keeps its end: nothing to write
    end
    if not e.turn then
        e.deadline = L.now + L.lease
    end
    e.n, e.w = n, w
    line_put(L, e)
    return e
end

-- What the object can serve now, as a function fits(e, first) asked for
-- each entry in order (first: none before it was served), which keeps its
-- own count, by kind: 'lock' (free), 'rw' (writers alone on a free lock,
-- readers while nobody writes and no writer is served before them: a
-- writer in line keeps the readers behind it out), 'sem' (the permits
-- available: an expirable semaphore's lapsed permits count once its next
-- acquisition took them back).
local function line_fits(L)
    local kind, key = L.kind, L.object
    if kind == 'lock' then
        if L.obj == nil then
            L.obj = redis.call('exists', key) == 0
        end
        local free = L.obj
        return function(e, first)
            return first and free
        end
    elseif kind == 'rw' then
        if L.obj == nil then
            L.obj = redis.call('hget', key, 'mode')
        end
        local mode = L.obj
        local writer = false
        return function(e, first)
            if e.w then
                writer = true
                return first and not mode
            end
            return mode ~= 'write' and not writer
        end
    end
    if L.obj == nil then
        L.obj = redis.call('get', key)
    end
    local value = L.obj
    local budget = tonumber(value or '0')
    if not budget then
        -- Not a count: no semaphore (a script error, as Redisson's).
        error('the semaphore ' .. key .. ' holds no number')
    end
    return function(e, first)
        if e.n > budget then
            return false
        end
        budget = budget - e.n
        return true
    end
end

-- Walks the line from the front: lapsed entries go; returns the entries
-- the object can serve now (line_fits) and the first it cannot (or nil).
-- It learns how many entries the line holds (L.count, L.min).
local function line_walk(L)
    line_clock(L)
    local fits = line_fits(L)
    local served, at = {}, 0
    L.count, L.min = nil, 0
    while true do
        local ids = redis.call('zrange', L.key, at, at + 15)
        for _, id in ipairs(ids) do
            local e = line_entry(L, id)
            if not e or e.deadline <= L.now then
                line_drop(L, id)
                if #served == 0 then
                    L.front_moved = true
                end
            elseif fits(e, #served == 0) then
                served[#served + 1] = e
                at = at + 1
            else
                L.min = at + 1
                return served, e
            end
        end
        if #ids < 16 then
            L.count = at -- read to its end: all served
            return served, nil
        end
    end
end

-- Gives each served entry without a turn one and its message; tells the
-- entry after them when the earliest turn ends, when turns began or the
-- front moved (it may be first now). The waiter running the script
-- (L.self) is told nothing: it reads the reply.
local function line_offer(L, served, after)
    local began, earliest = false, nil
    for _, e in ipairs(served) do
        if not e.turn then
            e.turn, e.deadline = true, L.now + L.turn
            line_put(L, e)
            if e.id ~= L.self then
                redis.call(L.publish, L.prefix .. e.id, 't' .. L.heard)
            end
            began = true
        end
        if not earliest or e.deadline < earliest then
            earliest = e.deadline
        end
    end
    if after and (began or L.front_moved) and after.id ~= L.self then
        redis.call(L.publish, L.prefix .. after.id,
                   'w' .. (earliest and earliest - L.now or 0))
    end
end

-- Clients outside the line (Java's) took what a turn had given within the
-- last LINE_OUTSIDE_TURNS turns: the ms that this stays so (0: not so).
-- Meanwhile the first waiter the object cannot serve listens on the
-- object's own channel at once, where their releases are published.
local LINE_OUTSIDE_TURNS = 4
local function line_outside_left(L)
    if L.outside == nil then
        L.outside = tonumber(redis.call('hget', L.state, 'outside') or '')
            or false
    end
    if not L.outside then
        return 0
    end
    return math.max(0, L.outside + LINE_OUTSIDE_TURNS * L.turn - L.now)
end

-- Keeps the keys while entries remain (a lease past every entry's), and
-- drops them with the last. Clients' leases differ: a time to live is
-- only ever lengthened here, never cut to a shorter lease than the one
-- that set it. So it outlasts every entry's deadline, and only a run that
-- pushed a deadline later (L.grew) has to look at it.
local function line_close(L)
    local empty
    if L.count then
        empty = L.count == 0
    elseif L.min > 0 then
        empty = false
    else
        empty = redis.call('zcard', L.key) == 0
    end
    if empty then
        local left = line_outside_left(L)
        if left > 0 then
            redis.call('del', L.key)
            redis.call('pexpire', L.state, left)
        else
            redis.call('del', L.key, L.state)
        end
    elseif L.grew then
        local ttl = L.lease + L.turn
        if redis.call('pttl', L.key) < ttl then
            redis.call('pexpire', L.key, ttl)
            redis.call('pexpire', L.state, ttl)
        end
    end
end

-- After the object was given back (a release, more permits, a forced
-- unlock): the turns it can serve now.
local function line_release(L)
    if redis.call('exists', L.key) == 0 then
        return
    end
    local served, after = line_walk(L)
    line_offer(L, served, after)
    line_close(L)
end

-- One attempt of waiter `id`, wanting n permits (1 for a lock) and to
-- write (w), where `wait` is 0 for a try that will not wait (it leaves
-- nothing behind), 1 for one that waits (it goes in line), 2 for one that
-- ignores the line (the spin lock, which cannot be woken). Returns true
-- when the waiter may take the object now (the caller takes it), else
-- false, `listen` and, for the first it cannot serve, the ms until the
-- earliest turn before it ends (-1: none, or not the first). `listen`: 0
-- when it is not the first the object cannot serve; 1 when it is (after a
-- while it listens on the object's own channel too, for releases of Java
-- clients); 2 when it is, and a client outside the line took what a turn
-- had given, its own or another's, lately (it listens at once).
local function line_attempt(L, id, n, w, wait)
    L.self = id
    local me = {id = id, n = n, w = w}
    if wait == '2' then
        return line_fits(L)(me, true), 0, -1
    end
    if redis.call('exists', L.key) == 0 then
        if line_fits(L)(me, true) then
            return true
        end
        if wait == '0' then
            return false, 1, -1
        end
    end
    if wait ~= '0' then
        line_join(L, id, n, w)
    end
    local served, after = line_walk(L)
    local mine = line_entry(L, id) -- in line still (the walk drops lapsed)
    local take = false
    for i, e in ipairs(served) do
        if e.id == id then
            take = true
            table.remove(served, i)
            break
        end
    end
    if not take and not mine and #served == 0 and not after then
        take = line_fits(L)(me, true) -- the line was all lapsed entries
    end
    if take then
        if mine then
            line_drop(L, id)
            if not mine.turn and after and after.id ~= id then
                -- Taken without a turn (a hint ran out): the next learns
                -- that it may be first, as from a turn's start.
                L.front_moved = true
            end
        end
        line_offer(L, served, after)
        line_close(L)
        return true
    end
    local robbed = mine and mine.turn
    if robbed then
        -- Its turn, and no longer served: someone outside the line took
        -- what it was given. It waits again, first in line.
        mine.turn, mine.deadline = false, L.now + L.lease
        line_put(L, mine)
        L.outside = L.now
        redis.call('hset', L.state, 'outside', L.now)
    end
    line_offer(L, served, after)
    line_close(L)
    if after == nil or after.id ~= id then
        return false, 0, -1 -- its turn, or a watch, will tell it
    end
    -- The first the object cannot serve watches the turns before it: if
    -- their waiters let them lapse, its own attempt then passes them on.
    local earliest = -1
    for _, e in ipairs(served) do
        if e.turn and (earliest < 0 or e.deadline - L.now < earliest) then
            earliest = e.deadline - L.now
        end
    end
    return false, line_outside_left(L) > 0 and 2 or 1, earliest
end

-- Waiter `id` leaves the line (its wait ended without the object): those
-- behind it may be served, or first, now.
local function line_leave(L, id)
    L.self = id
    local mine = line_entry(L, id)
    if not mine then
        return false
    end
    -- Those behind it move up only when it was first or had a turn.
    L.front_moved = mine.turn or redis.call('zrank', L.key, id) == 0
    line_drop(L, id)
    local served, after = line_walk(L)
    line_offer(L, served, after)
    line_close(L)
    return true
end
