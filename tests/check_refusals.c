/* SPDX-License-Identifier: ISC */
/*
 * check_refusals.c - the likely cause of a refused connection, as the
 * refusals line of mbsc_server names it (src/server/refusal_cause.c): a
 * master whose peer key is another slave's, a master key not in the
 * allow-list, a PSK that differs, no cipher in common, a plain Modbus/TCP
 * client (its request answered by a handshake error, a wait for more bytes
 * or a close), another protocol, a silent client and a port check.  Each
 * case runs one server on 127.0.0.1:0, driven by the test's thread; the
 * masters run in threads on the blocking connection API.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fixture.h"
#include "mbsc.h"
#include "testutil.h"

Suite *refusals_suite(void);

#define LONG_MS 20000

static struct tu_peers peers;

static void setup(void)
{
    tu_peers_setup(&peers, "plc-9", "operator", NULL);
}

static void teardown(void)
{
    tu_peers_teardown(&peers);
}

/* --- The server and its refusals line ---------------------------------------- */

struct fixture {
    mbsc_server *srv;
    char addr[MBSC_ADDRSTRLEN];
    char logs[4096];
};

static void on_event(void *user, const struct mbsc_server_event *ev)
{
    struct fixture *f = user;
    size_t at = strlen(f->logs);

    if (ev->type == MBSC_SERVER_EVENT_LOG)
        snprintf(f->logs + at, sizeof f->logs - at, "%s\n", ev->detail);
}

static void fixture_start(struct fixture *f, const mbsc_config *cfg)
{
    char why[MBSC_WHY_SIZE];

    memset(f, 0, sizeof *f);
    ck_assert_msg(mbsc_server_new(&f->srv, "127.0.0.1:0", cfg, why, sizeof why) == MBSC_OK, "%s",
                  why);
    mbsc_server_set_event_fn(f->srv, on_event, f);
    /* A short deadline for the silent clients; a line for every refusal. */
    ck_assert_int_eq(mbsc_server_set_limit(f->srv, MBSC_SERVER_HANDSHAKE_TIMEOUT_MS, 300), MBSC_OK);
    ck_assert_int_eq(mbsc_server_set_limit(f->srv, MBSC_SERVER_LOG_INTERVAL_MS, 1), MBSC_OK);
    ck_assert_int_eq(mbsc_server_address(f->srv, f->addr, sizeof f->addr), MBSC_OK);
}

/* Step until the refusals line names what, or 20 s pass (then fail). */
static void expect_refusal(struct fixture *f, const char *what)
{
    long long until = tu_now_ms() + LONG_MS;

    while (strstr(f->logs, what) == NULL && tu_now_ms() < until)
        ck_assert_int_eq(mbsc_server_step(f->srv, 20), MBSC_OK);
    ck_assert_msg(strstr(f->logs, what) != NULL, "no refusal '%s' in: %s", what, f->logs);
    ck_assert_msg(strstr(f->logs, "refused 1 connection before confirmation: 1 ") != NULL,
                  "not one refusal: %s", f->logs);
}

static struct mbsc_server_stats stats_of(struct fixture *f)
{
    struct mbsc_server_stats st;

    mbsc_server_get_stats(f->srv, &st);
    return st;
}

/* --- A master in a thread -------------------------------------------------------- */

struct master {
    pthread_t thread;
    const char *addr;
    const mbsc_config *cfg;
    int rc;
};

static void *master_main(void *arg)
{
    struct master *m = arg;
    mbsc_conn *c = NULL;

    m->rc = mbsc_connect(m->addr, m->cfg, LONG_MS, &c, NULL, 0);
    mbsc_conn_close(c);
    return NULL;
}

static void master_run(struct master *m, const char *addr, const mbsc_config *cfg)
{
    memset(m, 0, sizeof *m);
    m->addr = addr;
    m->cfg = cfg;
    ck_assert_int_eq(pthread_create(&m->thread, NULL, master_main, m), 0);
}

static int master_join(struct master *m)
{
    ck_assert_int_eq(pthread_join(m->thread, NULL), 0);
    return m->rc;
}

/* A master config of peers' master key, with another slave public key or a PSK. */
static mbsc_config *master_config(const uint8_t *slave_pub, const uint8_t *psk)
{
    mbsc_config *cfg = mbsc_config_new(MBSC_ROLE_MASTER);

    ck_assert_ptr_nonnull(cfg);
    ck_assert_int_eq(mbsc_config_set_keypair(cfg, &peers.master_kp), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_peer_public_key(cfg, slave_pub), MBSC_OK);
    if (psk != NULL)
        ck_assert_int_eq(mbsc_config_set_psk(cfg, psk), MBSC_OK);
    return cfg;
}

/* --- mbsc masters that get something wrong ------------------------------------------ */

/* The master's --peer names another slave: message 1 does not decrypt here. */
START_TEST(wrong_peer_key)
{
    struct fixture f;
    struct master m;
    mbsc_keypair other;
    mbsc_config *cfg;

    ck_assert_int_eq(mbsc_keypair_generate(&other), MBSC_OK);
    cfg = master_config(other.public_key, NULL);
    fixture_start(&f, peers.scfg);
    master_run(&m, f.addr, cfg);
    expect_refusal(&f, "1 handshake made for another slave key (the master's peer key is not "
                       "this slave's public key)");
    ck_assert_int_eq(master_join(&m), MBSC_ERR_PEER_CLOSED);
    ck_assert_uint_eq(stats_of(&f).bad_handshakes, 1);
    mbsc_server_free(f.srv);
    mbsc_config_free(cfg);
    mbsc_keypair_wipe(&other);
}
END_TEST

/* A master key that the allow-list does not hold: named, with the key to paste. */
START_TEST(unknown_master_key)
{
    struct fixture f;
    struct master m;
    mbsc_keypair stranger;
    mbsc_config *cfg = mbsc_config_new(MBSC_ROLE_MASTER);

    ck_assert_int_eq(mbsc_keypair_generate(&stranger), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_keypair(cfg, &stranger), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_peer_public_key(cfg, peers.slave_kp.public_key), MBSC_OK);
    fixture_start(&f, peers.scfg);
    master_run(&m, f.addr, cfg);
    expect_refusal(&f, "1 unknown master key");
    ck_assert_ptr_nonnull(strstr(f.logs, "add this line to the allow-list"));
    ck_assert_int_eq(master_join(&m), MBSC_ERR_PEER_CLOSED);
    mbsc_server_free(f.srv);
    mbsc_config_free(cfg);
    mbsc_keypair_wipe(&stranger);
}
END_TEST

/* A PSK on the master only: it cannot open message 2 and hangs up. */
START_TEST(psk_differs)
{
    struct fixture f;
    struct master m;
    uint8_t psk[MBSC_KEY_BYTES];
    mbsc_config *cfg;

    memset(psk, 0x5a, sizeof psk);
    cfg = master_config(peers.slave_kp.public_key, psk);
    fixture_start(&f, peers.scfg);
    master_run(&m, f.addr, cfg);
    expect_refusal(&f, "1 master hung up after our reply (its pre-shared key most likely differs)");
    ck_assert_int_eq(master_join(&m), MBSC_ERR_PSK_MISMATCH);
    ck_assert_uint_eq(stats_of(&f).closed_early, 1);
    mbsc_server_free(f.srv);
    mbsc_config_free(cfg);
}
END_TEST

/* The master offers chacha20 only, the slave allows trivium only. */
START_TEST(no_common_cipher)
{
    struct fixture f;
    struct master m;
    struct tu_peers p;

    tu_peers_setup(&p, "plc-9", NULL, "chacha20");
    ck_assert_int_eq(mbsc_config_set_ciphers(p.scfg, "trivium"), MBSC_OK);
    fixture_start(&f, p.scfg);
    master_run(&m, f.addr, p.mcfg);
    expect_refusal(&f, "1 no cipher in common (this side allows none the master offers)");
    ck_assert_int_eq(master_join(&m), MBSC_ERR_PEER_CLOSED);
    ck_assert_uint_eq(stats_of(&f).bad_handshakes, 1);
    mbsc_server_free(f.srv);
    tu_peers_teardown(&p);
}
END_TEST

/* --- clients that are not mbsc masters ------------------------------------------------ */

/*
 * A plain Modbus/TCP request, FC3 read of one holding register (Modbus
 * Messaging on TCP/IP, 3.1.3: transaction id, protocol id 0, length 6,
 * unit 0xFF, then the PDU).  Its transaction id is the frame length the
 * server reads: 1 fails the handshake at once, 0x1234 is too long a
 * frame, 0x0100 makes the server wait for more bytes until the deadline.
 */
static const uint8_t transaction_ids[][2] = {{0x00, 0x01}, {0x12, 0x34}, {0x01, 0x00}};

START_TEST(plain_modbus_request)
{
    uint8_t adu[12] = {0, 0, 0x00, 0x00, 0x00, 0x06, 0xFF, 0x03, 0x00, 0x00, 0x00, 0x01};
    struct fixture f;
    int fd;

    memcpy(adu, transaction_ids[_i], 2);
    fixture_start(&f, peers.scfg);
    fd = tu_raw_connect(f.addr);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(send(fd, adu, sizeof adu, 0), (ssize_t)sizeof adu);
    expect_refusal(&f, "1 plain Modbus/TCP request (a Modbus client without mbsc on this port)");
    close(fd);
    mbsc_server_free(f.srv);
}
END_TEST

/* An HTTP request: 'G' 'E' is a frame length past 4096. */
START_TEST(another_protocol)
{
    static const char get[] = "GET / HTTP/1.1\r\nHost: plc\r\n\r\n";
    struct fixture f;
    int fd;

    fixture_start(&f, peers.scfg);
    fd = tu_raw_connect(f.addr);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(send(fd, get, sizeof get - 1, 0), (ssize_t)(sizeof get - 1));
    expect_refusal(&f, "1 not an mbsc handshake (another protocol on this port?)");
    ck_assert_uint_eq(stats_of(&f).bad_handshakes, 1);
    close(fd);
    mbsc_server_free(f.srv);
}
END_TEST

/* Connected, and not a byte until the handshake deadline. */
START_TEST(silent_client)
{
    struct fixture f;
    int fd;

    fixture_start(&f, peers.scfg);
    fd = tu_raw_connect(f.addr);
    ck_assert_int_ge(fd, 0);
    expect_refusal(&f, "1 handshake timeout, nothing received (not an mbsc master?)");
    ck_assert_uint_eq(stats_of(&f).timed_out, 1);
    close(fd);
    mbsc_server_free(f.srv);
}
END_TEST

/* Connected and closed at once, as a port check does. */
START_TEST(port_check)
{
    struct fixture f;
    int fd;

    fixture_start(&f, peers.scfg);
    fd = tu_raw_connect(f.addr);
    ck_assert_int_ge(fd, 0);
    close(fd);
    expect_refusal(&f, "1 closed without sending anything (a port check?)");
    ck_assert_uint_eq(stats_of(&f).closed_early, 1);
    mbsc_server_free(f.srv);
}
END_TEST

/* Half of message 1, then the deadline: a stalled master, not a silent one. */
START_TEST(half_a_handshake)
{
    uint8_t msg1[256];
    size_t n = tu_message1(peers.mcfg, msg1, sizeof msg1);
    struct fixture f;
    int fd;

    fixture_start(&f, peers.scfg);
    fd = tu_raw_connect(f.addr);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(send(fd, msg1, n / 2, 0), (ssize_t)(n / 2));
    expect_refusal(&f, "1 handshake timeout");
    ck_assert_msg(strstr(f.logs, "nothing received") == NULL, "%s", f.logs);
    close(fd);
    mbsc_server_free(f.srv);
}
END_TEST

Suite *refusals_suite(void)
{
    Suite *s = suite_create("refusals");
    TCase *tc = tcase_create("causes");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, wrong_peer_key);
    tcase_add_test(tc, unknown_master_key);
    tcase_add_test(tc, psk_differs);
    tcase_add_test(tc, no_common_cipher);
    tcase_add_loop_test(tc, plain_modbus_request, 0,
                        (int)(sizeof transaction_ids / sizeof transaction_ids[0]));
    tcase_add_test(tc, another_protocol);
    tcase_add_test(tc, silent_client);
    tcase_add_test(tc, port_check);
    tcase_add_test(tc, half_a_handshake);
    suite_add_tcase(s, tc);
    return s;
}
