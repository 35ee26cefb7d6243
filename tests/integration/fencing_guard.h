/* SPDX-License-Identifier: MIT */
/*
 * The resource side of fencing, as the tests use it: a Lua script that
 * stores a write only when its token is newer than every token seen
 * (KEYS[1] = the resource's hash, ARGV[1] = the writer's token); it returns 1
 * when stored and 0 when refused (a stale holder). doc/porting.md shows the
 * same pattern for a real resource.
 */
#ifndef CR_TEST_FENCING_GUARD_H
#define CR_TEST_FENCING_GUARD_H

#define GUARDED_WRITE                                                        \
    "local seen = tonumber(redis.call('hget', KEYS[1], 'token') or '0') "    \
    "if tonumber(ARGV[1]) <= seen then return 0 end "                        \
    "redis.call('hset', KEYS[1], 'token', ARGV[1]) return 1"

#endif
