--! keys: line line_state object
--! argv: entry kind line_lease_ms:int turn_ms:int line_channel publish
--! uses: line
-- A waiter leaves an object's waiting line (lua/lib/line.lua) without the
-- object: its wait ran out, was cancelled, or its client is being freed.
-- Those behind it get the turns the object can serve now, and the first
-- of them left waiting is told that it may be first.
-- KEYS[1] and KEYS[2] = the line credisson_line:{N} and
-- credisson_line_state:{N}, KEYS[3] = the object N
-- ARGV[1] = the waiter's entry (or its owner name: a writer's ':write'
-- goes, line_entry_of), ARGV[2] = the object's kind as the line
-- reads it ('lock', 'rw' or 'sem'), ARGV[3] and ARGV[4] = the line's
-- waiting lease and turn in ms, ARGV[5] = its channel prefix
-- credisson_line__channel:{N}:, ARGV[6] = publish command
-- Returns 1 when the entry was in line, else 0.
local L = line_open(KEYS[1], KEYS[2], ARGV[5], ARGV[6], ARGV[3], ARGV[4],
                    ARGV[2], KEYS[3])
return line_leave(L, line_entry_of(ARGV[1])) and 1 or 0
