/* SPDX-License-Identifier: MIT */
/*
 * What the unit tests of the pure cores read and write in place of Redis
 * (test_sem_acquisition.c, test_latch_opening.c, test_replica_sync.c):
 * replies made from the RESP text a server would send, through the
 * library's own reader (resp.h), and the keys and arguments of a script
 * call a core built (script.h), compared byte for byte. Each program
 * uses some of them: they are inline so that the others cost no warning.
 */
#ifndef CR_TEST_WIRE_STUB_H
#define CR_TEST_WIRE_STUB_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "resp.h"
#include "script.h"

/* Returns the reply that the RESP text `resp` is (one whole reply); the
 * caller, or the core it is given to, frees it (cr__reply_free). */
static inline cr__reply *
reply_of(const char *resp)
{
    cr__reply *r = NULL;

    assert_int_equal(cr__reply_from_buffer(resp, strlen(resp), &r), CR_OK);
    assert_non_null(r);
    return r;
}

/* Checks that `call` runs the script `name`, with `nkeys` keys and `nargs`
 * arguments after them. */
static inline void
assert_call_shape(const cr__script_call *call, const char *name,
                  size_t nkeys, size_t nargs)
{
    assert_non_null(call->script);
    assert_string_equal(call->script->name, name);
    assert_int_equal(call->nkeys, nkeys);
    assert_int_equal(call->argc, CR__SCRIPT_ARGV0 + nkeys + nargs);
}

/* Checks that slot `i` of `call`'s argv holds the `len` bytes at `want`. */
static inline void
assert_call_slot(const cr__script_call *call, size_t i, const char *want,
                 size_t len)
{
    assert_true(i < call->argc);
    assert_int_equal(call->lens[i], len);
    assert_memory_equal(call->argv[i], want, len);
}

/* Checks that key `i` (from 0) of `call` is the string `want`. */
static inline void
assert_call_key(const cr__script_call *call, size_t i, const char *want)
{
    assert_true(i < call->nkeys);
    assert_call_slot(call, CR__SCRIPT_ARGV0 + i, want, strlen(want));
}

/* Checks that argument `i` (from 0, after the keys) of `call` is the
 * string `want`. */
static inline void
assert_call_arg(const cr__script_call *call, size_t i, const char *want)
{
    assert_call_slot(call, CR__SCRIPT_ARGV0 + call->nkeys + i, want,
                     strlen(want));
}

/* Returns argument `i` (from 0, after the keys) of `call` as a number;
 * fails the test when it is none. */
static inline int64_t
call_arg_int(const cr__script_call *call, size_t i)
{
    size_t at = CR__SCRIPT_ARGV0 + call->nkeys + i;
    char text[32];
    char *end = NULL;
    long long v;

    assert_true(at < call->argc);
    assert_true(call->lens[at] > 0 && call->lens[at] < sizeof(text));
    memcpy(text, call->argv[at], call->lens[at]);
    text[call->lens[at]] = '\0';
    v = strtoll(text, &end, 10);
    assert_true(*end == '\0');
    return (int64_t)v;
}

#endif
