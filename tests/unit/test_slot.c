/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the cluster slot function: the CRC16 check value, slots
 * that Redis itself reports (CLUSTER KEYSLOT), and the hash-tag rules,
 * including the names whose derived keys fall apart (protocol 1.1).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "slot.h"

static unsigned
slot(const char *key)
{
    return cr__key_slot(key, strlen(key));
}

static void
test_crc16_matches_the_xmodem_check_value(void **state)
{
    (void)state;
    /* The catalogued check value of CRC-16/XMODEM over "123456789". */
    assert_int_equal(cr__crc16("123456789", 9), 0x31c3);
    assert_int_equal(cr__crc16("", 0), 0);
}

static void
test_key_slot_matches_redis(void **state)
{
    (void)state;
    /* Values from redis-cli CLUSTER KEYSLOT on Redis 7. */
    assert_int_equal(slot("foo"), 12182);
    assert_int_equal(slot("bar"), 5061);
    assert_int_equal(slot("myLock"), 12769);
    assert_int_equal(slot(""), 0);
}

static void
test_hash_tag_selects_the_hashed_part(void **state)
{
    (void)state;
    assert_int_equal(slot("{user1000}.following"), slot("user1000"));
    assert_int_equal(slot("redisson_lock__channel:{myLock}"), slot("myLock"));
    assert_int_equal(slot("{myLock}:timeout"), slot("myLock"));
    /* The first '{' and the first '}' after it. */
    assert_int_equal(slot("foo{{bar}}zap"), slot("{bar"));
    assert_int_equal(slot("foo{bar}{zap}"), slot("bar"));
}

static void
test_empty_or_unclosed_tag_hashes_the_whole_key(void **state)
{
    (void)state;
    assert_int_equal(slot("{}x"), cr__crc16("{}x", 3) & 16383);
    assert_int_equal(slot("a{"), cr__crc16("a{", 2) & 16383);
    assert_int_equal(slot("a}b"), cr__crc16("a}b", 3) & 16383);
}

static void
test_quirky_names_split_their_keys(void **state)
{
    (void)state;
    /* "a}b" has no '{': its channel gets the tag "a" (protocol 1.1). */
    assert_int_not_equal(slot("a}b"), slot("redisson_lock__channel:{a}b}"));
    assert_int_equal(slot("redisson_lock__channel:{a}b}"), slot("a"));
}

static void
test_slot_is_in_range_for_binary_keys(void **state)
{
    char key[64];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(key); i++)
        key[i] = (char)(i * 37);
    for (i = 0; i <= sizeof(key); i++)
        assert_true(cr__key_slot(key, i) < CR__SLOTS);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc16_matches_the_xmodem_check_value),
        cmocka_unit_test(test_key_slot_matches_redis),
        cmocka_unit_test(test_hash_tag_selects_the_hashed_part),
        cmocka_unit_test(test_empty_or_unclosed_tag_hashes_the_whole_key),
        cmocka_unit_test(test_quirky_names_split_their_keys),
        cmocka_unit_test(test_slot_is_in_range_for_binary_keys),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
