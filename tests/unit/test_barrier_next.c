/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of a barrier party's next step (cr__barrier_next, barrier.h):
 * arrive, released by the completion its wait's subscription heard, quick
 * look before the look is due, look. The party and its wait are made up;
 * the subscription is a stub (subs_stub.h) that keeps the last kept
 * message as the client's does, read through the barrier's own decoding,
 * so the messages a test "reads" are the ones Redis would publish.
 * Nothing talks to Redis and nothing sleeps.
 */
#include <stdio.h>
#include <string.h>

#include "barrier.h"
#include "subs_stub.h"

#define NOW 500000          /* monotonic ms */
#define SINCE 1700000000123 /* the barrier's creation stamp */
#define GENERATION 5

/* What a test works on: the client (whose settings no step reads), the
 * party, its wait and the wait's subscription (a stub). */
struct fx {
    cr_client client;
    struct subs_stub stub;
    cr__barrier_party p;
    cr__wait w;
};

/* A party of generation GENERATION of the barrier created at SINCE, that
 * arrived and whose next look is due at NOW + 1000, waiting on the stub's
 * subscription. */
static int
fx_up(void **state)
{
    struct fx *f = test_calloc(1, sizeof(*f));
    cr__wait_spec spec = {.channel = "the barrier's channel",
                          .decode = cr__barrier_decode, .wait_ms = 0};

    f->p.arrived = true;
    f->p.generation = GENERATION;
    f->p.since = SINCE;
    f->p.parity = GENERATION % 2;
    f->p.look_due = NOW + 1000;
    cr__wait_begin_on(&f->w, &f->client, &spec, &stub_subs, &f->stub, NOW);
    f->w.sub = STUB_SUB;
    *state = f;
    return 0;
}

static int
fx_down(void **state)
{
    test_free(*state);
    return 0;
}

/* The subscription of f's wait reads `payload`, as the client's does. */
static void
read_message(struct fx *f, const char *payload)
{
    size_t len = strlen(payload);

    cr__kept_note(&f->stub.kept, cr__barrier_decode(payload, len), payload,
                  len);
}

/* The subscription of f's wait reads the completion of generation `g` of
 * the barrier created at `since`. */
static void
read_completion(struct fx *f, int64_t g, int64_t since)
{
    char msg[CR__KEPT_MAX];

    snprintf(msg, sizeof(msg), "0:%lld:%lld", (long long)g, (long long)since);
    read_message(f, msg);
}

static void
test_party_that_has_not_arrived_arrives_first(void **state)
{
    struct fx *f = *state;

    f->p.arrived = false;
    read_completion(f, GENERATION, SINCE);
    assert_int_equal(cr__barrier_next(&f->p, &f->w, NOW), CR__BARRIER_ARRIVE);
    assert_int_equal(cr__barrier_next(&f->p, &f->w, NOW + 5000),
                     CR__BARRIER_ARRIVE);
}

static void
test_arrived_party_quick_looks_until_its_look_is_due_then_looks(
    void **state)
{
    struct fx *f = *state;

    assert_int_equal(cr__barrier_next(&f->p, &f->w, NOW), CR__BARRIER_QUICK);
    assert_int_equal(cr__barrier_next(&f->p, &f->w, NOW + 999),
                     CR__BARRIER_QUICK);
    assert_int_equal(cr__barrier_next(&f->p, &f->w, NOW + 1000),
                     CR__BARRIER_LOOK);
    assert_int_equal(cr__barrier_next(&f->p, &f->w, NOW + 7000),
                     CR__BARRIER_LOOK);
}

static void
test_party_whose_wait_has_no_subscription_looks_for_itself(void **state)
{
    struct fx *f = *state;

    read_completion(f, GENERATION, SINCE);
    f->w.sub = NULL;
    assert_int_equal(cr__barrier_next(&f->p, &f->w, NOW), CR__BARRIER_QUICK);
    assert_int_equal(cr__barrier_next(&f->p, &f->w, NOW + 1000),
                     CR__BARRIER_LOOK);
}

static void
test_party_that_heard_its_rounds_completion_is_released(void **state)
{
    struct fx *f = *state;

    read_completion(f, GENERATION, SINCE);
    assert_int_equal(cr__barrier_next(&f->p, &f->w, NOW), CR__BARRIER_HEARD);
    assert_int_equal(cr__barrier_next(&f->p, &f->w, NOW + 1000),
                     CR__BARRIER_HEARD);
}

static void
test_completion_of_another_generation_does_not_release_the_party(
    void **state)
{
    struct fx *f = *state;

    read_completion(f, GENERATION - 1, SINCE);
    assert_int_equal(cr__barrier_next(&f->p, &f->w, NOW), CR__BARRIER_QUICK);
    read_completion(f, GENERATION + 1, SINCE);
    assert_int_equal(cr__barrier_next(&f->p, &f->w, NOW), CR__BARRIER_QUICK);
    read_completion(f, GENERATION + 2, SINCE);
    assert_int_equal(cr__barrier_next(&f->p, &f->w, NOW + 1000),
                     CR__BARRIER_LOOK);
}

static void
test_party_of_another_generation_is_released_by_that_generations_completion(
    void **state)
{
    struct fx *f = *state;

    f->p.generation = GENERATION + 1;
    read_completion(f, GENERATION, SINCE);
    assert_int_equal(cr__barrier_next(&f->p, &f->w, NOW), CR__BARRIER_QUICK);
    read_completion(f, GENERATION + 1, SINCE);
    assert_int_equal(cr__barrier_next(&f->p, &f->w, NOW), CR__BARRIER_HEARD);
}

static void
test_completion_of_a_barrier_created_at_another_time_does_not_release_the_party(
    void **state)
{
    struct fx *f = *state;

    /* The barrier deleted and made again under the same name. */
    read_completion(f, GENERATION, SINCE - 1);
    assert_int_equal(cr__barrier_next(&f->p, &f->w, NOW), CR__BARRIER_QUICK);
    read_completion(f, GENERATION, SINCE + 1);
    assert_int_equal(cr__barrier_next(&f->p, &f->w, NOW), CR__BARRIER_QUICK);
}

static void
test_completion_that_only_begins_like_the_partys_does_not_release_it(
    void **state)
{
    struct fx *f = *state;
    char msg[CR__KEPT_MAX];

    /* The party's message is a prefix of the one read. */
    snprintf(msg, sizeof(msg), "0:%d:%lld0", GENERATION, (long long)SINCE);
    read_message(f, msg);
    assert_int_equal(cr__barrier_next(&f->p, &f->w, NOW), CR__BARRIER_QUICK);
    /* And the other way round. */
    f->p.since = SINCE * 10;
    read_completion(f, GENERATION, SINCE);
    assert_int_equal(cr__barrier_next(&f->p, &f->w, NOW), CR__BARRIER_QUICK);
}

static void
test_broken_message_after_the_completion_leaves_the_party_released(
    void **state)
{
    struct fx *f = *state;

    /* A generation completes once: a later "broken" (or reset, or
     * deleted) is about a round after it. */
    read_completion(f, GENERATION, SINCE);
    read_message(f, "1");
    assert_int_equal(cr__barrier_next(&f->p, &f->w, NOW), CR__BARRIER_HEARD);
}

static void
test_broken_message_alone_does_not_release_the_party(void **state)
{
    struct fx *f = *state;

    read_message(f, "1");
    read_message(f, "0"); /* an older credisson's bare completion */
    assert_int_equal(cr__barrier_next(&f->p, &f->w, NOW), CR__BARRIER_QUICK);
}

#define T(name) cmocka_unit_test_setup_teardown(name, fx_up, fx_down)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_party_that_has_not_arrived_arrives_first),
        T(test_arrived_party_quick_looks_until_its_look_is_due_then_looks),
        T(test_party_whose_wait_has_no_subscription_looks_for_itself),
        T(test_party_that_heard_its_rounds_completion_is_released),
        T(test_completion_of_another_generation_does_not_release_the_party),
        T(test_party_of_another_generation_is_released_by_that_generations_completion),
        T(test_completion_of_a_barrier_created_at_another_time_does_not_release_the_party),
        T(test_completion_that_only_begins_like_the_partys_does_not_release_it),
        T(test_broken_message_after_the_completion_leaves_the_party_released),
        T(test_broken_message_alone_does_not_release_the_party),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
