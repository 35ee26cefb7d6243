/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the cluster routing table without a cluster: loading a
 * CLUSTER SLOTS reply (decoded from RESP bytes), MOVED corrections, the
 * parsing of redirections and which argument routes a command.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cluster.h"

/* Three masters as Redis 7 reports them; the third names no host. */
static const char slots_resp[] =
    "*3\r\n"
    "*4\r\n:0\r\n:5460\r\n"
    "*3\r\n$9\r\n127.0.0.1\r\n:7001\r\n$2\r\nid\r\n"
    "*3\r\n$9\r\n127.0.0.1\r\n:7004\r\n$2\r\nid\r\n"
    "*3\r\n:5461\r\n:10922\r\n"
    "*3\r\n$9\r\n127.0.0.1\r\n:7002\r\n$2\r\nid\r\n"
    "*3\r\n:10923\r\n:16383\r\n"
    "*3\r\n$0\r\n\r\n:7003\r\n$2\r\nid\r\n";

static cr__slot_map *
loaded_map(void)
{
    cr__slot_map *m = NULL;
    cr__reply *r = NULL;
    int seed;

    assert_int_equal(cr__slot_map_new(&m), CR_OK);
    seed = cr__slot_map_intern(m, "10.1.1.1", 7003);
    assert_int_equal(seed, 0);
    assert_int_equal(cr__reply_from_buffer(slots_resp, sizeof(slots_resp) - 1,
                                           &r), CR_OK);
    assert_int_equal(cr__slot_map_load(m, r, seed), CR_OK);
    cr__reply_free(r);
    return m;
}

static void
test_slot_map_routes_each_range_to_its_master(void **state)
{
    cr__slot_map *m = loaded_map();
    char host[64];
    int port;

    (void)state;
    assert_true(cr__slot_map_addr(m, cr__slot_map_node(m, 0), host,
                                  sizeof(host), &port));
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 7001);
    assert_true(cr__slot_map_addr(m, cr__slot_map_node(m, 10922), host,
                                  sizeof(host), &port));
    assert_int_equal(port, 7002);
    /* The replica (7004) is not a master and routes nothing. */
    assert_int_equal(cr__slot_map_count(m), 3); /* the seed and two */
    assert_int_equal(cr__slot_map_intern(m, "127.0.0.1", 7004), 3);
    assert_false(cr__slot_map_is_master(m, 3));
    assert_true(cr__slot_map_is_master(m, cr__slot_map_node(m, 5461)));
    cr__slot_map_free(m);
}

static void
test_slot_map_empty_host_means_the_node_asked(void **state)
{
    cr__slot_map *m = loaded_map();
    char host[64];
    int port;

    (void)state;
    assert_true(cr__slot_map_addr(m, cr__slot_map_node(m, 16383), host,
                                  sizeof(host), &port));
    assert_string_equal(host, "10.1.1.1");
    assert_int_equal(port, 7003);
    assert_int_equal(cr__slot_map_node(m, 16383), 0);
    cr__slot_map_free(m);
}

static void
test_slot_map_moved_corrects_one_slot(void **state)
{
    cr__slot_map *m = loaded_map();
    int n = cr__slot_map_intern(m, "127.0.0.1", 7002);

    (void)state;
    cr__slot_map_set(m, 100, n);
    assert_int_equal(cr__slot_map_node(m, 100), n);
    assert_int_not_equal(cr__slot_map_node(m, 101), n);
    cr__slot_map_free(m);
}

static void
test_slot_map_refuses_a_malformed_reply_and_keeps_the_old(void **state)
{
    static const char bad[] = "*1\r\n*3\r\n:10\r\n:5\r\n*2\r\n$1\r\nh\r\n:1\r\n";
    cr__slot_map *m = loaded_map();
    cr__reply *r = NULL;
    int before = cr__slot_map_node(m, 7);

    (void)state;
    assert_int_equal(cr__reply_from_buffer(bad, sizeof(bad) - 1, &r), CR_OK);
    assert_int_equal(cr__slot_map_load(m, r, 0), CR_ESERVER);
    assert_int_equal(cr__slot_map_node(m, 7), before);
    cr__reply_free(r);
    assert_int_equal(cr__slot_map_load(m, NULL, 0), CR_ESERVER);
    cr__slot_map_free(m);
}

static void
test_unknown_slots_have_no_node(void **state)
{
    cr__slot_map *m = NULL;

    (void)state;
    assert_int_equal(cr__slot_map_new(&m), CR_OK);
    assert_int_equal(cr__slot_map_node(m, 42), -1);
    assert_false(cr__slot_map_addr(m, 3, (char[8]){0}, 8, &(int){0}));
    cr__slot_map_free(m);
}

static void
test_redirections_are_parsed(void **state)
{
    char host[64];
    unsigned slot;
    int port;
    bool ask;

    (void)state;
    assert_true(cr__parse_redirect("MOVED 3999 127.0.0.1:6381", &ask, &slot,
                                   host, sizeof(host), &port));
    assert_false(ask);
    assert_int_equal(slot, 3999);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 6381);
    assert_true(cr__parse_redirect("ASK 1 ::1:7000", &ask, &slot, host,
                                   sizeof(host), &port));
    assert_true(ask);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 7000);
    assert_false(cr__parse_redirect("MOVED 16384 h:1", &ask, &slot, host,
                                    sizeof(host), &port));
    assert_false(cr__parse_redirect("MOVED 1 h", &ask, &slot, host,
                                    sizeof(host), &port));
    assert_false(cr__parse_redirect("MOVED 1 h:0", &ask, &slot, host,
                                    sizeof(host), &port));
    assert_false(cr__parse_redirect("ERR MOVED 1 h:1", &ask, &slot, host,
                                    sizeof(host), &port));
    assert_false(cr__parse_redirect("TRYAGAIN", &ask, &slot, host,
                                    sizeof(host), &port));
}

/* TRYAGAIN and CLUSTERDOWN are waited out (CLUSTERDOWN also says the map
 * may be changing); other errors, redirections among them, are not. */
static void
test_tryagain_and_clusterdown_are_transient(void **state)
{
    bool down = true;

    (void)state;
    assert_true(cr__cluster_transient("TRYAGAIN Multiple keys request during "
                                      "rehashing of slot", &down));
    assert_false(down);
    assert_true(cr__cluster_transient("CLUSTERDOWN The cluster is down",
                                      &down));
    assert_true(down);
    assert_true(cr__cluster_transient("CLUSTERDOWN Hash slot not served",
                                      &down));
    assert_false(cr__cluster_transient("MOVED 1 h:1", &down));
    assert_false(down);
    assert_false(cr__cluster_transient("ASK 1 h:1", &down));
    assert_false(cr__cluster_transient("ERR TRYAGAIN", &down));
    assert_false(cr__cluster_transient("LOADING", &down));
}

static void
test_routing_key_is_the_first_key(void **state)
{
    const char *eval[] = {"EVALSHA", "abc", "2", "myLock", "ch", "1"};
    const char *nokeys[] = {"EVAL", "return 1", "0"};
    const char *get[] = {"GET", "k"};
    const char *spub[] = {"SPUBLISH", "ch", "0"};
    const char *pub[] = {"PUBLISH", "ch", "0"};
    const char *ping[] = {"PING"};

    (void)state;
    assert_int_equal(cr__routing_key(6, eval, NULL), 3);
    assert_int_equal(cr__routing_key(3, nokeys, NULL), -1);
    assert_int_equal(cr__routing_key(2, get, NULL), 1);
    assert_int_equal(cr__routing_key(3, spub, NULL), 1);
    assert_int_equal(cr__routing_key(3, pub, NULL), -1);
    assert_int_equal(cr__routing_key(1, ping, NULL), -1);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slot_map_routes_each_range_to_its_master),
        cmocka_unit_test(test_slot_map_empty_host_means_the_node_asked),
        cmocka_unit_test(test_slot_map_moved_corrects_one_slot),
        cmocka_unit_test(test_slot_map_refuses_a_malformed_reply_and_keeps_the_old),
        cmocka_unit_test(test_unknown_slots_have_no_node),
        cmocka_unit_test(test_redirections_are_parsed),
        cmocka_unit_test(test_tryagain_and_clusterdown_are_transient),
        cmocka_unit_test(test_routing_key_is_the_first_key),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
