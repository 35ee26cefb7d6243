/* SPDX-License-Identifier: MIT */
/*
 * The waiting line's rules (lua/lib/line.lua) as the real scripts carry
 * them out on a real redis-server: each call is built by the library's
 * generated builder (scripts.h) and sent by EVAL of its body, with waiter
 * names, leases and turns the test chooses, and a listener records what
 * each waiter's own channel is told. Turn order, the watch of the first
 * waiter without a turn, lapsed turns and waiting leases, leaving the
 * line, tries that do not wait, writers first on the read/write lock and
 * the semaphore's strict order.
 */
#include <unistd.h>

#include "lock_common.h"
#include "scripts.h"

/* A lease long enough that it never runs out in a test. */
#define LONG_MS 60000

/* An object's names on the wire. */
typedef struct obj {
    char name[32];
    char channel[96]; /* its own channel */
    char line[64], state[64];
    char prefix[96];  /* its waiters' channel prefix */
} obj;

/* Fills o for object `name` whose own channel is `channel_fmt` with the
 * name in it. */
static void
obj_init(obj *o, const char *name, const char *channel_fmt)
{
    snprintf(o->name, sizeof(o->name), "%s", name);
    snprintf(o->channel, sizeof(o->channel), channel_fmt, name);
    snprintf(o->line, sizeof(o->line), "credisson_line:{%s}", name);
    snprintf(o->state, sizeof(o->state), "credisson_line_state:{%s}", name);
    snprintf(o->prefix, sizeof(o->prefix), "credisson_line__channel:{%s}:",
             name);
}

/* Runs a call built by a generated builder, by EVAL of its body; the
 * reply (free it), which must be no error. */
static redisReply *
run(cr__script_call *call)
{
    redisContext *c = cr_test_redis_connect(&test_redis);
    redisReply *r;
    char nk[24];

    assert_non_null(c);
    cr__script_call_argv(call, true, nk);
    r = redisCommandArgv(c, (int)call->argc, call->argv, call->lens);
    cr__script_call_free(call);
    redisFree(c);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_ERROR)
        fail_msg("script error: %s", r->str);
    return r;
}

/* What a refused attempt replied: {hint, listen, turn}. */
typedef struct refusal {
    long long hint;
    int listen;     /* 0: behind others; 1: the first the object cannot
                     * serve; 2: that, and its turn was taken from it */
    long long turn; /* ms until the earliest turn before it ends, -1 */
} refusal;

/* Reads a reply: true when the object was taken (nil, 1 or OK), else
 * false with the refusal in *out. */
static bool
taken(redisReply *r, refusal *out)
{
    bool took = r->type == REDIS_REPLY_NIL ||
                (r->type == REDIS_REPLY_INTEGER && r->integer == 1) ||
                r->type == REDIS_REPLY_STATUS;

    if (!took) {
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        assert_int_equal(r->elements, 3);
        *out = (refusal){r->element[0]->integer,
                         (int)r->element[1]->integer, r->element[2]->integer};
    }
    freeReplyObject(r);
    return took;
}

/* ----------------------------------------------------- the scripts */

/* Waiter `who` attempts lock o (wait: 0 a try, 1 it waits), with a
 * waiting lease of lease_ms; true when it took the lock. */
static bool
lock_attempt(const obj *o, const char *who, int wait, int64_t lease_ms,
             refusal *out)
{
    cr__script_call call = {0};

    assert_int_equal(cr__build_lock_acquire(&(cr__lock_acquire_args){
        .lock = o->name, .line = o->line, .line_state = o->state,
        .lease_ms = LONG_MS, .owner = who, .wait = wait,
        .line_lease_ms = lease_ms, .turn_ms = 250,
        .line_channel = o->prefix, .publish = "publish"}, &call), CR_OK);
    return taken(run(&call), out);
}

/* `who` releases lock o; the turns it gives last turn_ms. */
static void
lock_release(const obj *o, const char *who, int64_t turn_ms)
{
    cr__script_call call = {0};
    char latch[96];
    static int n;
    redisReply *r;

    snprintf(latch, sizeof(latch), "redisson_unlock_latch:{%s}:%d", o->name,
             ++n);
    assert_int_equal(cr__build_lock_unlock(&(cr__lock_unlock_args){
        .lock = o->name, .channel = o->channel, .latch = latch,
        .line = o->line, .line_state = o->state, .message = 0,
        .lease_ms = LONG_MS, .owner = who, .publish = "publish",
        .latch_ms = 1000, .line_lease_ms = LONG_MS, .turn_ms = turn_ms,
        .line_channel = o->prefix}, &call), CR_OK);
    r = run(&call);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_true(r->integer == 1 || r->integer < 0);
    freeReplyObject(r);
}

/* `who` leaves the line of o (of kind "lock", "rw" or "sem"); whether it
 * was in line. */
static bool
leave(const obj *o, const char *kind, const char *who)
{
    cr__script_call call = {0};
    redisReply *r;
    bool was;

    assert_int_equal(cr__build_line_leave(&(cr__line_leave_args){
        .line = o->line, .line_state = o->state, .object = o->name,
        .entry = who, .kind = kind, .line_lease_ms = LONG_MS,
        .turn_ms = 250, .line_channel = o->prefix,
        .publish = "publish"}, &call), CR_OK);
    r = run(&call);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    was = r->integer == 1;
    freeReplyObject(r);
    return was;
}

/* Waiter `who` (a reader name) attempts a read hold of rw lock o. */
static bool
read_attempt(const obj *o, const char *who, int wait, refusal *out)
{
    cr__script_call call = {0};
    char timeouts[96], writer[64];

    snprintf(timeouts, sizeof(timeouts), "{%s}:%s:rwlock_timeout", o->name,
             who);
    snprintf(writer, sizeof(writer), "%s:write", who);
    assert_int_equal(cr__build_rwlock_read_acquire(
        &(cr__rwlock_read_acquire_args){
            .lock = o->name, .reader_timeouts = timeouts, .line = o->line,
            .line_state = o->state, .lease_ms = LONG_MS, .reader = who,
            .writer = writer, .wait = wait, .line_lease_ms = LONG_MS,
            .turn_ms = 250, .line_channel = o->prefix,
            .publish = "publish"}, &call), CR_OK);
    return taken(run(&call), out);
}

/* Waiter `who` (a reader name; its writer name is "<who>:write") attempts
 * the write hold of rw lock o. */
static bool
write_attempt(const obj *o, const char *who, int wait, refusal *out)
{
    cr__script_call call = {0};
    char writer[64];

    snprintf(writer, sizeof(writer), "%s:write", who);
    assert_int_equal(cr__build_rwlock_write_acquire(
        &(cr__rwlock_write_acquire_args){
            .lock = o->name, .line = o->line, .line_state = o->state,
            .lease_ms = LONG_MS, .writer = writer, .wait = wait,
            .line_lease_ms = LONG_MS, .turn_ms = 250,
            .line_channel = o->prefix, .publish = "publish"}, &call),
        CR_OK);
    return taken(run(&call), out);
}

/* `who` gives back one read hold of rw lock o. */
static void
read_release(const obj *o, const char *who)
{
    cr__script_call call = {0};
    char timeouts[96], prefix[40], latch[96];
    static int n;
    redisReply *r;

    snprintf(timeouts, sizeof(timeouts), "{%s}:%s:rwlock_timeout", o->name,
             who);
    snprintf(prefix, sizeof(prefix), "{%s}", o->name);
    snprintf(latch, sizeof(latch), "redisson_unlock_latch:{%s}:r%d", o->name,
             ++n);
    assert_int_equal(cr__build_rwlock_read_unlock(
        &(cr__rwlock_read_unlock_args){
            .lock = o->name, .channel = o->channel,
            .reader_timeouts = timeouts, .key_prefix = prefix,
            .latch = latch, .line = o->line, .line_state = o->state,
            .message = 0, .reader = who, .publish = "publish",
            .latch_ms = 1000, .line_lease_ms = LONG_MS, .turn_ms = 250,
            .line_channel = o->prefix}, &call), CR_OK);
    r = run(&call);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    freeReplyObject(r);
}

/* `who` gives back its write hold of rw lock o. */
static void
write_release(const obj *o, const char *who)
{
    cr__script_call call = {0};
    char writer[64], latch[96];
    static int n;
    redisReply *r;

    snprintf(writer, sizeof(writer), "%s:write", who);
    snprintf(latch, sizeof(latch), "redisson_unlock_latch:{%s}:w%d", o->name,
             ++n);
    assert_int_equal(cr__build_rwlock_write_unlock(
        &(cr__rwlock_write_unlock_args){
            .lock = o->name, .channel = o->channel, .latch = latch,
            .line = o->line, .line_state = o->state, .message = 1,
            .lease_ms = LONG_MS, .writer = writer, .publish = "publish",
            .latch_ms = 1000, .line_lease_ms = LONG_MS, .turn_ms = 250,
            .line_channel = o->prefix}, &call), CR_OK);
    r = run(&call);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
}

/* Waiter `who` attempts to take n permits of semaphore o. */
static bool
sem_attempt(const obj *o, const char *who, int n, int wait, refusal *out)
{
    cr__script_call call = {0};
    char latch[96];
    static int k;

    snprintf(latch, sizeof(latch), "credisson_semaphore_acquire:{%s}:%d",
             o->name, ++k);
    assert_int_equal(cr__build_semaphore_try_acquire(
        &(cr__semaphore_try_acquire_args){
            .permits = o->name, .latch = latch, .line = o->line,
            .line_state = o->state, .count_value = n, .latch_ms = 1000,
            .entry = who, .wait = wait, .line_lease_ms = LONG_MS,
            .turn_ms = 250, .line_channel = o->prefix,
            .publish = "publish"}, &call), CR_OK);
    return taken(run(&call), out);
}

/* n permits of semaphore o are given back. */
static void
sem_release(const obj *o, int n)
{
    cr__script_call call = {0};

    assert_int_equal(cr__build_semaphore_release(
        &(cr__semaphore_release_args){
            .permits = o->name, .channel = o->channel, .line = o->line,
            .line_state = o->state, .count_value = n, .publish = "publish",
            .if_exists = 0, .line_lease_ms = LONG_MS, .turn_ms = 250,
            .line_channel = o->prefix}, &call), CR_OK);
    freeReplyObject(run(&call));
}

/* ------------------------------------------------ the line's state */

/* The entries of o's line in order, joined by ' ' into out. */
static void
line_order(const obj *o, char *out, size_t size)
{
    redisReply *r = cr_test_redis_cmd(&test_redis, "ZRANGE %s 0 -1",
                                      o->line);
    size_t i, at = 0;

    assert_non_null(r);
    out[0] = '\0';
    for (i = 0; i < r->elements && at < size; i++)
        at += (size_t)snprintf(out + at, size - at, "%s%s", i ? " " : "",
                               r->element[i]->str);
    freeReplyObject(r);
}

/* Whether entry `who` of o's line has a turn now; fails when it has no
 * state. */
static bool
has_turn(const obj *o, const char *who)
{
    char field[64];
    redisReply *r;
    long long deadline;
    int turn = -1;

    snprintf(field, sizeof(field), "e:%s", who);
    r = cr_test_redis_cmd(&test_redis, "HGET %s %s", o->state, field);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_int_equal(sscanf(r->str, "%lld %d", &deadline, &turn), 2);
    freeReplyObject(r);
    return turn == 1;
}

/* Whether entry `who` has a state in o's line. */
static bool
has_state(const obj *o, const char *who)
{
    char field[64];

    snprintf(field, sizeof(field), "e:%s", who);
    return redis_int("HEXISTS %s %s", o->state, field) == 1;
}

/* ---------------------------------------------------- the listener */

/* What the waiters A, B, C and D of an object are told on their own
 * channels, recorded by a listener. */
#define WAITERS "ABCD"

typedef struct ears {
    cr_test_listener *li;
    const obj *o;
    size_t seen;     /* messages read so far */
    char got[4][64]; /* the new messages to each, joined by ',' */
} ears;

/* Starts listening to the channels of o's waiters A..D, to o's own
 * channel when `object_too` (a Java waiter: it counts as a client that
 * heard a release) and to a marker channel. */
static void
ears_start(ears *e, const obj *o, bool object_too)
{
    static char channels[5][128];
    const char *list[6];
    size_t n = 0;
    int i;

    memset(e, 0, sizeof(*e));
    e->o = o;
    for (i = 0; i < 4; i++) {
        snprintf(channels[i], sizeof(channels[i]), "%s%c", o->prefix,
                 WAITERS[i]);
        list[n++] = channels[i];
    }
    list[n++] = "mark";
    if (object_too) {
        snprintf(channels[4], sizeof(channels[4]), "%s", o->channel);
        list[n++] = channels[4];
    }
    e->li = listen_on(list, n);
}

/* Reads what came since the last look, into e->got. */
static void
hear(ears *e)
{
    char marker[24];
    size_t mark, i;
    int w;

    /* A marker of its own: settle finds the first message that is it. */
    snprintf(marker, sizeof(marker), "mark%zu", e->seen);
    mark = settle(e->li, "mark", marker);
    for (w = 0; w < 4; w++)
        e->got[w][0] = '\0';
    for (i = e->seen; i < mark; i++) {
        const cr_test_message *m = cr_test_listener_get(e->li, i);
        size_t plen = strlen(e->o->prefix);

        if (strncmp(m->channel, e->o->prefix, plen) != 0)
            continue;
        w = (int)(strchr(WAITERS, m->channel[plen]) - WAITERS);
        if (e->got[w][0] != '\0')
            strcat(e->got[w], ",");
        strcat(e->got[w], m->payload);
    }
    e->seen = mark + 1;
}

/* What waiter `who` (A..D) was told since the last look. */
static const char *
told(ears *e, char who)
{
    return e->got[strchr(WAITERS, who) - WAITERS];
}

/* A watch message "w<ms>": its ms (-1 when it is none). */
static long long
watch_ms(const char *msg)
{
    return msg[0] == 'w' ? atoll(msg + 1) : -1;
}

/* ------------------------------------------------------------ tests */

static void
test_line_script_gives_the_first_a_turn_and_the_next_a_watch(void **state)
{
    obj o;
    ears e;
    refusal r;
    char order[64];

    (void)state;
    obj_init(&o, "turns", "redisson_lock__channel:{%s}");
    ears_start(&e, &o, true);
    assert_true(lock_attempt(&o, "X", 1, LONG_MS, &r)); /* free, no line */
    assert_int_equal(redis_int("EXISTS %s", o.line), 0);
    assert_false(lock_attempt(&o, "A", 1, LONG_MS, &r));
    assert_int_equal(r.listen, 1); /* the first the lock cannot serve */
    assert_int_equal(r.turn, -1);
    assert_true(r.hint > 0);
    assert_false(lock_attempt(&o, "B", 1, LONG_MS, &r));
    assert_int_equal(r.listen, 0);
    assert_false(lock_attempt(&o, "C", 1, LONG_MS, &r));
    assert_int_equal(r.listen, 0);
    line_order(&o, order, sizeof(order));
    assert_string_equal(order, "A B C");
    hear(&e);
    assert_string_equal(told(&e, 'A'), "");
    /* X lets go: A gets a turn (one client heard the release on the
     * lock's channel: this listener), B a watch until it ends, C
     * nothing. */
    lock_release(&o, "X", 1000);
    hear(&e);
    assert_string_equal(told(&e, 'A'), "t1");
    assert_true(watch_ms(told(&e, 'B')) > 900 &&
                watch_ms(told(&e, 'B')) <= 1000);
    assert_string_equal(told(&e, 'C'), "");
    assert_true(has_turn(&o, "A"));
    assert_false(has_turn(&o, "B"));
    /* B and C attempt during A's turn: refused; B, the first it cannot
     * serve, is told when the turn ends; C, behind it, nothing (it sleeps
     * until its channel speaks: a line that each waiter polled at every
     * turn's end would be a herd of its own). */
    assert_false(lock_attempt(&o, "B", 1, LONG_MS, &r));
    assert_int_equal(r.listen, 1);
    assert_true(r.turn > 900 && r.turn <= 1000);
    assert_false(lock_attempt(&o, "C", 1, LONG_MS, &r));
    assert_int_equal(r.listen, 0);
    assert_int_equal(r.turn, -1);
    /* A takes it; B is told nothing more (its watch stands). */
    assert_true(lock_attempt(&o, "A", 1, LONG_MS, &r));
    line_order(&o, order, sizeof(order));
    assert_string_equal(order, "B C");
    hear(&e);
    assert_string_equal(told(&e, 'B'), "");
    /* A lets go: B's turn, C's watch. */
    lock_release(&o, "A", 1000);
    hear(&e);
    assert_string_equal(told(&e, 'B'), "t1");
    assert_true(watch_ms(told(&e, 'C')) > 900);
    cr_test_listener_stop(e.li);
}

static void
test_line_script_try_without_a_wait_is_refused_behind_a_turn_and_leaves_nothing(
    void **state)
{
    obj o;
    refusal r;
    char order[64];

    (void)state;
    obj_init(&o, "try", "redisson_lock__channel:{%s}");
    assert_true(lock_attempt(&o, "X", 1, LONG_MS, &r));
    assert_false(lock_attempt(&o, "A", 1, LONG_MS, &r));
    lock_release(&o, "X", 5000);
    /* The lock is free, A has its turn: D's try is refused. */
    assert_int_equal(redis_int("EXISTS %s", o.name), 0);
    assert_false(lock_attempt(&o, "D", 0, LONG_MS, &r));
    assert_int_equal(r.listen, 0);
    line_order(&o, order, sizeof(order));
    assert_string_equal(order, "A");
    assert_false(has_state(&o, "D"));
    /* Once A took it and nobody waits, a try takes a free lock. */
    assert_true(lock_attempt(&o, "A", 1, LONG_MS, &r));
    assert_int_equal(redis_int("EXISTS %s", o.line), 0);
    lock_release(&o, "A", 5000);
    assert_true(lock_attempt(&o, "D", 0, LONG_MS, &r));
}

static void
test_line_script_waiter_robbed_of_its_turn_stays_first_and_listens_at_once(
    void **state)
{
    obj o;
    refusal r;
    char order[64];

    (void)state;
    obj_init(&o, "robbed", "redisson_lock__channel:{%s}");
    assert_true(lock_attempt(&o, "X", 1, LONG_MS, &r));
    assert_false(lock_attempt(&o, "A", 1, LONG_MS, &r));
    assert_false(lock_attempt(&o, "B", 1, LONG_MS, &r));
    lock_release(&o, "X", 5000);
    /* A client outside the line (a Java one) takes the lock during A's
     * turn, as Redisson's acquire script does. */
    assert_true(redis_ok("HSET %s J 1", o.name));
    assert_false(lock_attempt(&o, "A", 1, LONG_MS, &r));
    assert_int_equal(r.listen, 2);
    assert_false(has_turn(&o, "A"));
    line_order(&o, order, sizeof(order));
    assert_string_equal(order, "A B");
    assert_false(lock_attempt(&o, "B", 1, LONG_MS, &r));
    assert_int_equal(r.listen, 0);
    /* J lets go (Java publishes on the lock's channel only): A, listening
     * there, takes it at its next attempt, first in line still. */
    assert_true(redis_ok("DEL %s", o.name));
    assert_false(lock_attempt(&o, "B", 1, LONG_MS, &r));
    assert_true(lock_attempt(&o, "A", 1, LONG_MS, &r));
}

/* cr_test_wait_until condition: waiter C's attempt at lock `arg` is
 * refused with listen 1 (it listens on the lock's channel only after a
 * while again). */
static bool
c_listens_later(void *arg)
{
    refusal r;

    return !lock_attempt(arg, "C", 1, LONG_MS, &r) && r.listen == 1;
}

/* Once a client outside the line took what a turn had given, every
 * waiter that becomes first listens on the object's channel at once for
 * four turns (listen 2), even across an empty line, whose state keeps the
 * mark that long; then again only after a while (listen 1). */
static void
test_line_script_after_an_outside_taker_every_first_waiter_listens_at_once(
    void **state)
{
    obj o;
    refusal r;
    long long ttl;

    (void)state;
    obj_init(&o, "outside", "redisson_lock__channel:{%s}");
    assert_true(lock_attempt(&o, "X", 1, LONG_MS, &r));
    assert_false(lock_attempt(&o, "A", 1, LONG_MS, &r));
    assert_false(lock_attempt(&o, "B", 1, LONG_MS, &r));
    assert_int_equal(r.listen, 0);
    lock_release(&o, "X", 250);
    assert_true(redis_ok("HSET %s J 1", o.name)); /* A's turn, J's lock */
    assert_false(lock_attempt(&o, "A", 1, LONG_MS, &r));
    assert_int_equal(r.listen, 2);
    assert_true(redis_ok("DEL %s", o.name));
    assert_true(lock_attempt(&o, "A", 1, LONG_MS, &r));
    /* B is first now, and nothing was taken from it: it listens at once
     * all the same. */
    assert_false(lock_attempt(&o, "B", 1, LONG_MS, &r));
    assert_int_equal(r.listen, 2);
    lock_release(&o, "A", 250);
    assert_true(lock_attempt(&o, "B", 1, LONG_MS, &r));
    /* The line is empty; its state stays for what is left of four turns
     * of 250 ms, with the mark. */
    assert_int_equal(redis_int("EXISTS %s", o.line), 0);
    ttl = redis_int("PTTL %s", o.state);
    assert_true(ttl > 0 && ttl <= 1000);
    lock_release(&o, "B", 250);
    assert_true(redis_ok("HSET %s J 1", o.name));
    assert_false(lock_attempt(&o, "C", 1, LONG_MS, &r));
    assert_int_equal(r.listen, 2);
    /* Four turns after the mark, a first waiter waits a while again. */
    assert_true(cr_test_wait_until(c_listens_later, &o, slow(5000)));
}

static void
test_line_script_passes_a_turn_that_ran_out_to_the_next(void **state)
{
    obj o;
    ears e;
    refusal r;
    char order[64];

    (void)state;
    obj_init(&o, "lapse", "redisson_lock__channel:{%s}");
    ears_start(&e, &o, false);
    assert_true(lock_attempt(&o, "X", 1, LONG_MS, &r));
    assert_false(lock_attempt(&o, "A", 1, LONG_MS, &r));
    assert_false(lock_attempt(&o, "B", 1, LONG_MS, &r));
    lock_release(&o, "X", 30);
    hear(&e);
    assert_string_equal(told(&e, 'A'), "t0");
    assert_true(watch_ms(told(&e, 'B')) >= 0 &&
                watch_ms(told(&e, 'B')) <= 30);
    /* Refused during A's turn, B takes it once the turn ran out. */
    usleep(50000);
    assert_true(lock_attempt(&o, "B", 1, LONG_MS, &r));
    assert_false(has_state(&o, "A"));
    line_order(&o, order, sizeof(order));
    assert_string_equal(order, "");
    cr_test_listener_stop(e.li);
}

static void
test_line_script_waiter_whose_turn_ran_out_goes_back_in_line_at_the_end(
    void **state)
{
    obj o;
    refusal r;
    char order[64];

    (void)state;
    obj_init(&o, "late", "redisson_lock__channel:{%s}");
    assert_true(lock_attempt(&o, "X", 1, LONG_MS, &r));
    assert_false(lock_attempt(&o, "A", 1, LONG_MS, &r));
    assert_false(lock_attempt(&o, "B", 1, LONG_MS, &r));
    assert_false(lock_attempt(&o, "C", 1, LONG_MS, &r));
    lock_release(&o, "X", 30);
    usleep(50000);
    /* A comes late for its turn, before anyone else looked: it lost its
     * place (B has the turn now) and waits again, at the end. */
    assert_false(lock_attempt(&o, "A", 1, LONG_MS, &r));
    assert_true(has_turn(&o, "B"));
    line_order(&o, order, sizeof(order));
    assert_string_equal(order, "B C A");
    /* And it is served in that order. */
    assert_true(lock_attempt(&o, "B", 1, LONG_MS, &r));
    lock_release(&o, "B", 5000);
    assert_false(lock_attempt(&o, "A", 1, LONG_MS, &r));
    assert_true(lock_attempt(&o, "C", 1, LONG_MS, &r));
    lock_release(&o, "C", 5000);
    assert_true(lock_attempt(&o, "A", 1, LONG_MS, &r));
}

static void
test_line_script_drops_entries_whose_waiting_lease_ran_out(void **state)
{
    obj o;
    ears e;
    refusal r;
    char order[64];

    (void)state;
    obj_init(&o, "lease", "redisson_lock__channel:{%s}");
    ears_start(&e, &o, false);
    assert_true(lock_attempt(&o, "X", 1, LONG_MS, &r));
    assert_false(lock_attempt(&o, "A", 1, 30, &r));
    assert_false(lock_attempt(&o, "B", 1, LONG_MS, &r));
    usleep(50000);
    /* A stopped renewing its place (dead): the release passes it by. */
    lock_release(&o, "X", 1000);
    hear(&e);
    assert_string_equal(told(&e, 'A'), "");
    assert_string_equal(told(&e, 'B'), "t0");
    line_order(&o, order, sizeof(order));
    assert_string_equal(order, "B");
    assert_false(has_state(&o, "A"));
    /* An attempt renews the lease: C's place stays while it attempts
     * (twice in a lease's length here), past the lease it first had. */
    assert_true(lock_attempt(&o, "B", 1, LONG_MS, &r));
    assert_false(lock_attempt(&o, "C", 1, 400, &r));
    usleep(250000);
    assert_false(lock_attempt(&o, "C", 1, 400, &r));
    usleep(250000);
    assert_false(lock_attempt(&o, "D", 1, LONG_MS, &r));
    line_order(&o, order, sizeof(order));
    assert_string_equal(order, "C D");
    cr_test_listener_stop(e.li);
}

static void
test_line_script_leaving_gives_the_next_its_turn_only_from_the_front(
    void **state)
{
    obj o;
    ears e;
    refusal r;
    char order[64];

    (void)state;
    obj_init(&o, "leave", "redisson_lock__channel:{%s}");
    ears_start(&e, &o, false);
    assert_true(lock_attempt(&o, "X", 1, LONG_MS, &r));
    assert_false(lock_attempt(&o, "A", 1, LONG_MS, &r));
    assert_false(lock_attempt(&o, "B", 1, LONG_MS, &r));
    assert_false(lock_attempt(&o, "C", 1, LONG_MS, &r));
    assert_false(lock_attempt(&o, "D", 1, LONG_MS, &r));
    hear(&e);
    /* B (not first) leaves while the lock is held: nobody is told. */
    assert_true(leave(&o, "lock", "B"));
    assert_false(leave(&o, "lock", "B"));
    hear(&e);
    assert_string_equal(told(&e, 'A'), "");
    assert_string_equal(told(&e, 'C'), "");
    /* A has its turn and leaves: C gets the turn, D the watch. */
    lock_release(&o, "X", 5000);
    hear(&e);
    assert_string_equal(told(&e, 'A'), "t0");
    assert_true(watch_ms(told(&e, 'C')) > 4000);
    assert_true(leave(&o, "lock", "A"));
    hear(&e);
    assert_string_equal(told(&e, 'C'), "t0");
    /* C's turn is the leaving call's length (250 ms). */
    assert_true(watch_ms(told(&e, 'D')) > 200 &&
                watch_ms(told(&e, 'D')) <= 250);
    line_order(&o, order, sizeof(order));
    assert_string_equal(order, "C D");
    /* The last ones leave: the line's keys go. */
    assert_true(leave(&o, "lock", "C"));
    assert_true(leave(&o, "lock", "D"));
    assert_int_equal(redis_int("EXISTS %s", o.line), 0);
    assert_int_equal(redis_int("EXISTS %s", o.state), 0);
    cr_test_listener_stop(e.li);
}

static void
test_line_script_keeps_new_readers_behind_a_waiting_writer(void **state)
{
    obj o;
    ears e;
    refusal r;
    char order[64];

    (void)state;
    obj_init(&o, "rw", "redisson_rwlock:{%s}");
    ears_start(&e, &o, false);
    assert_true(read_attempt(&o, "X", 1, &r));
    /* Readers share a read lock while nobody waits. */
    assert_true(read_attempt(&o, "Y", 1, &r));
    read_release(&o, "Y");
    assert_false(write_attempt(&o, "A", 1, &r));
    assert_int_equal(r.listen, 1);
    /* B would share X's read lock, but a writer waits before it. */
    assert_false(read_attempt(&o, "B", 1, &r));
    assert_int_equal(r.listen, 0);
    assert_false(read_attempt(&o, "C", 0, &r));
    assert_false(has_state(&o, "C"));
    /* X's reentrant read is let in (A waits for X). */
    assert_true(read_attempt(&o, "X", 1, &r));
    line_order(&o, order, sizeof(order));
    assert_string_equal(order, "A B");
    hear(&e);
    read_release(&o, "X");
    hear(&e);
    assert_string_equal(told(&e, 'A'), ""); /* X still reads */
    read_release(&o, "X");
    hear(&e);
    assert_string_equal(told(&e, 'A'), "t0");
    assert_true(watch_ms(told(&e, 'B')) > 0);
    assert_false(read_attempt(&o, "B", 1, &r));
    assert_true(write_attempt(&o, "A", 1, &r));
    /* The writer's read is let in; its write unlock leaves a read lock
     * (a downgrade), which B then shares. */
    assert_true(read_attempt(&o, "A", 1, &r));
    write_release(&o, "A");
    hear(&e);
    assert_string_equal(told(&e, 'B'), "t0");
    assert_true(read_attempt(&o, "B", 1, &r));
    assert_int_equal(redis_int("EXISTS %s", o.line), 0);
    cr_test_listener_stop(e.li);
}

static void
test_line_script_gives_readers_behind_each_other_turns_together(
    void **state)
{
    obj o;
    ears e;
    refusal r;

    (void)state;
    obj_init(&o, "readers", "redisson_rwlock:{%s}");
    ears_start(&e, &o, false);
    assert_true(write_attempt(&o, "X", 1, &r));
    assert_false(read_attempt(&o, "A", 1, &r));
    assert_false(read_attempt(&o, "B", 1, &r));
    assert_false(write_attempt(&o, "C", 1, &r));
    assert_false(read_attempt(&o, "D", 1, &r));
    hear(&e);
    /* X lets go: both readers before the writer get turns; the writer a
     * watch; the reader behind the writer nothing. */
    write_release(&o, "X");
    hear(&e);
    assert_string_equal(told(&e, 'A'), "t0");
    assert_string_equal(told(&e, 'B'), "t0");
    assert_true(watch_ms(told(&e, 'C')) > 0);
    assert_string_equal(told(&e, 'D'), "");
    assert_true(read_attempt(&o, "B", 1, &r));
    assert_true(read_attempt(&o, "A", 1, &r));
    assert_false(read_attempt(&o, "D", 1, &r));
    cr_test_listener_stop(e.li);
}

static void
test_line_script_semaphore_serves_a_large_request_before_smaller_ones_behind_it(
    void **state)
{
    obj o;
    ears e;
    refusal r;

    (void)state;
    obj_init(&o, "sem", "redisson_sc:{%s}");
    ears_start(&e, &o, false);
    assert_true(redis_ok("SET sem 0"));
    assert_false(sem_attempt(&o, "A", 3, 1, &r));
    assert_int_equal(r.listen, 1);
    assert_false(sem_attempt(&o, "B", 1, 1, &r));
    assert_int_equal(r.listen, 0);
    hear(&e);
    /* One permit: enough for B, not for A, which is first: nobody. */
    sem_release(&o, 1);
    hear(&e);
    assert_string_equal(told(&e, 'A'), "");
    assert_string_equal(told(&e, 'B'), "");
    assert_false(sem_attempt(&o, "B", 1, 1, &r));
    assert_false(sem_attempt(&o, "C", 1, 0, &r));
    assert_int_equal(redis_int("GET sem"), 1);
    /* Three: A's turn, B still waits behind it. */
    sem_release(&o, 2);
    hear(&e);
    assert_string_equal(told(&e, 'A'), "t0");
    assert_true(watch_ms(told(&e, 'B')) > 0);
    assert_false(sem_attempt(&o, "B", 1, 1, &r));
    assert_true(sem_attempt(&o, "A", 3, 1, &r));
    assert_int_equal(redis_int("GET sem"), 0);
    /* Two permits back: B and D, in line behind it, both get turns. */
    assert_false(sem_attempt(&o, "D", 1, 1, &r));
    sem_release(&o, 2);
    hear(&e);
    assert_string_equal(told(&e, 'B'), "t0");
    assert_string_equal(told(&e, 'D'), "t0");
    assert_true(sem_attempt(&o, "D", 1, 1, &r));
    assert_true(sem_attempt(&o, "B", 1, 1, &r));
    assert_int_equal(redis_int("GET sem"), 0);
    assert_int_equal(redis_int("EXISTS %s", o.line), 0);
    cr_test_listener_stop(e.li);
}

/* The line's two keys outlast every entry's deadline: a waiter that joins
 * sets their time to live past its lease, a shorter lease never cuts it,
 * a renewal and a turn longer than the waiting lease push it later; the
 * keys go with the last entry. */
static void
test_line_script_keys_outlast_every_entry_and_go_with_the_last(void **state)
{
    obj o;
    refusal r;

    (void)state;
    obj_init(&o, "ttl", "redisson_lock__channel:{%s}");
    assert_true(lock_attempt(&o, "X", 1, LONG_MS, &r));
    assert_false(lock_attempt(&o, "A", 1, LONG_MS, &r));
    assert_true(redis_int("PTTL %s", o.line) > LONG_MS - 10000);
    assert_true(redis_int("PTTL %s", o.state) > LONG_MS - 10000);
    assert_false(lock_attempt(&o, "B", 1, 1000, &r));
    assert_true(redis_int("PTTL %s", o.line) > LONG_MS - 10000);
    assert_true(redis_int("PTTL %s", o.state) > LONG_MS - 10000);
    /* As if most of it had passed: A's next attempt renews its lease, and
     * the keys follow it. */
    redis_int("PEXPIRE %s 500", o.line);
    redis_int("PEXPIRE %s 500", o.state);
    assert_false(lock_attempt(&o, "A", 1, LONG_MS, &r));
    assert_true(redis_int("PTTL %s", o.line) > LONG_MS - 10000);
    assert_true(redis_int("PTTL %s", o.state) > LONG_MS - 10000);
    /* A turn past the waiting lease it replaces. */
    assert_true(leave(&o, "lock", "A"));
    assert_true(leave(&o, "lock", "B"));
    assert_false(lock_attempt(&o, "C", 1, 300, &r));
    redis_int("PEXPIRE %s 300", o.line);
    redis_int("PEXPIRE %s 300", o.state);
    lock_release(&o, "X", 20000);
    assert_true(has_turn(&o, "C"));
    assert_true(redis_int("PTTL %s", o.line) > 10000);
    assert_true(redis_int("PTTL %s", o.state) > 10000);
    /* C takes it: the line is empty, and its keys are gone. */
    assert_true(lock_attempt(&o, "C", 1, 300, &r));
    assert_int_equal(redis_int("EXISTS %s %s", o.line, o.state), 0);
    lock_release(&o, "C", 1000);
}

#define T(name) cmocka_unit_test_setup_teardown(name, client_up, client_down)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_line_script_gives_the_first_a_turn_and_the_next_a_watch),
        T(test_line_script_try_without_a_wait_is_refused_behind_a_turn_and_leaves_nothing),
        T(test_line_script_waiter_robbed_of_its_turn_stays_first_and_listens_at_once),
        T(test_line_script_after_an_outside_taker_every_first_waiter_listens_at_once),
        T(test_line_script_passes_a_turn_that_ran_out_to_the_next),
        T(test_line_script_waiter_whose_turn_ran_out_goes_back_in_line_at_the_end),
        T(test_line_script_drops_entries_whose_waiting_lease_ran_out),
        T(test_line_script_leaving_gives_the_next_its_turn_only_from_the_front),
        T(test_line_script_keeps_new_readers_behind_a_waiting_writer),
        T(test_line_script_gives_readers_behind_each_other_turns_together),
        T(test_line_script_semaphore_serves_a_large_request_before_smaller_ones_behind_it),
        T(test_line_script_keys_outlast_every_entry_and_go_with_the_last),
    };

    /* CR_TEST_FILTER=pattern runs only the matching tests. */
    if (getenv("CR_TEST_FILTER") != NULL)
        cmocka_set_test_filter(getenv("CR_TEST_FILTER"));
    return cmocka_run_group_tests(tests, redis_up, redis_down);
}
