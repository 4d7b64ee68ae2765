/* SPDX-License-Identifier: ISC */
/*
 * check_modbus_client.c - the master's two paths: the libmodbus layout
 * checks, the synchronous transport and the pump, and which one a context
 * uses.
 *
 * The whole check_modbus suite runs on both paths too (tests/
 * modbus_pump.test runs it again with MBSC_MODBUS_PUMP=1); this file holds
 * what is specific to the choice and to the synchronous transport.  Every
 * end-to-end case here runs on the path mbsc_modbus_connect() picks; set
 * MBSC_MODBUS_PUMP=1 to run them on the pump, and MBSC_TEST_EXPECT_PATH to
 * "sync" or "pump" to make the path a requirement (CI does, per
 * platform).  Slaves are scripted on the connection API (mbsc_accept), in
 * a thread; nothing sleeps to synchronise.
 */
#include <check.h>
#include <errno.h>
#include <modbus.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "mbsc.h"
#include "mbsc/modbus.h"
#include "modbus/libmodbus_layout.h"
#include "modbus/modbus_internal.h"
#include "testutil.h"

Suite *modbus_client_suite(void);

#define LONG_MS 20000 /* bound for what must succeed */

static struct tu_peers peers;

static void setup(void)
{
    tu_peers_setup(&peers, "master-1", NULL, NULL);
}

static void teardown(void)
{
    tu_peers_teardown(&peers);
}

/* --- Layouts -------------------------------------------------------------- */

static int version_is_known(void)
{
    return libmodbus_version_major == 3 && libmodbus_version_minor == 1 &&
           libmodbus_version_micro >= 6 && libmodbus_version_micro <= 11;
}

START_TEST(test_layout_table)
{
    static const struct {
        unsigned major, minor, micro;
        int family; /* 0: none */
    } cases[] = {
        {3, 1, 5, 0},
        {3, 1, 6, MB_FAMILY_316},
        {3, 1, 7, MB_FAMILY_316},
        {3, 1, 8, MB_FAMILY_316},
        {3, 1, 9, MB_FAMILY_319},
        {3, 1, 10, MB_FAMILY_319},
        {3, 1, 11, MB_FAMILY_319},
        {3, 1, 12, 0},
        {3, 1, 99, 0},
        {3, 2, 6, 0},
        {4, 1, 6, 0},
        {3, 0, 6, 0},
    };
    size_t i;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct mb_layout *l =
            mb_layout_for_version(cases[i].major, cases[i].minor, cases[i].micro);

        if (cases[i].family == 0) {
            ck_assert_msg(l == NULL, "%u.%u.%u has a layout", cases[i].major, cases[i].minor,
                          cases[i].micro);
        } else {
            ck_assert_msg(l != NULL, "%u.%u.%u has no layout", cases[i].major, cases[i].minor,
                          cases[i].micro);
            ck_assert_int_eq((int)l->family, cases[i].family);
        }
    }
}
END_TEST

struct ctx_state {
    int s;
    uint32_t sec[3], usec[3];
};

static void ctx_state(modbus_t *ctx, struct ctx_state *st)
{
    st->s = modbus_get_socket(ctx);
    ck_assert_int_eq(modbus_get_response_timeout(ctx, &st->sec[0], &st->usec[0]), 0);
    ck_assert_int_eq(modbus_get_byte_timeout(ctx, &st->sec[1], &st->usec[1]), 0);
    ck_assert_int_eq(modbus_get_indication_timeout(ctx, &st->sec[2], &st->usec[2]), 0);
}

static void ck_state_eq(const struct ctx_state *a, const struct ctx_state *b)
{
    int i;

    ck_assert_int_eq(a->s, b->s);
    for (i = 0; i < 3; i++) {
        ck_assert_uint_eq(a->sec[i], b->sec[i]);
        ck_assert_uint_eq(a->usec[i], b->usec[i]);
    }
}

/* This machine's libmodbus is verified, and the probes leave no trace. */
START_TEST(test_layout_verified_here)
{
    char why[MBSC_WHY_SIZE];
    const struct mb_layout *l = mb_layout_current(why, sizeof why);
    struct ctx_state before, after;
    modbus_t *ctx;

    printf("check_modbus_client: libmodbus %u.%u.%u, layout %s\n", libmodbus_version_major,
           libmodbus_version_minor, libmodbus_version_micro, l != NULL ? l->name : why);
    if (!version_is_known()) {
        ck_assert_ptr_null(l);
        ck_assert_ptr_nonnull(strstr(why, "not one mbsc knows"));
        return;
    }
    ck_assert_ptr_nonnull(l);
    ctx = mb_context_new(42);
    ck_assert_ptr_nonnull(ctx);
    ck_assert_int_eq(modbus_set_response_timeout(ctx, 3, 250000), 0);
    ck_assert_int_eq(modbus_set_indication_timeout(ctx, 0, 0), 0);
    ctx_state(ctx, &before);
    why[0] = '\0';
    if (mb_layout_verify(l, ctx, why, sizeof why) != MBSC_OK) {
        /* A build whose struct timeval differs from libmodbus's: the pump is right. */
        printf("check_modbus_client: layout %s refused here: %s\n", l->name, why);
        ck_assert_msg(getenv("MBSC_TEST_EXPECT_PATH") == NULL ||
                          strcmp(getenv("MBSC_TEST_EXPECT_PATH"), "sync") != 0,
                      "expected the synchronous path: %s", why);
    }
    ctx_state(ctx, &after);
    ck_state_eq(&before, &after);
    modbus_free(ctx);
}
END_TEST

/* The other family's layout (as if libmodbus reported another release) is refused. */
START_TEST(test_layout_mismatch_refused)
{
    char why[MBSC_WHY_SIZE];
    const struct mb_layout *here = mb_layout_current(NULL, 0), *other;
    struct ctx_state before, after;
    modbus_t *ctx;

    if (here == NULL)
        return; /* nothing to mismatch with; test_layout_verified_here covers it */
    other = here->family == MB_FAMILY_316 ? mb_layout_for_version(3, 1, 11)
                                          : mb_layout_for_version(3, 1, 6);
    ck_assert_ptr_nonnull(other);
    ctx = mb_context_new(7);
    ck_assert_ptr_nonnull(ctx);
    ctx_state(ctx, &before);
    ck_assert_int_eq(mb_layout_verify(other, ctx, why, sizeof why), MBSC_ERR_MODBUS);
    printf("check_modbus_client: layout %s on libmodbus %u.%u.%u: %s\n", other->name,
           libmodbus_version_major, libmodbus_version_minor, libmodbus_version_micro, why);
    ck_assert_ptr_nonnull(strstr(why, other->name));
    ctx_state(ctx, &after);
    ck_state_eq(&before, &after);
    /* The context was not touched: it is still a plain one. */
    ck_assert_ptr_null(mb_layout_transport_of(ctx));
    ck_assert_int_eq(mbsc_modbus_error(ctx), MBSC_ERR_INVALID_ARG);
    modbus_free(ctx);
}
END_TEST

/* Contexts on other backends are refused, and never taken for ours. */
START_TEST(test_layout_other_backends)
{
    char why[MBSC_WHY_SIZE];
    const struct mb_layout *l = mb_layout_current(NULL, 0);
    modbus_t *rtu = modbus_new_rtu("/dev/null", 9600, 'N', 8, 1);
    modbus_t *pi = modbus_new_tcp_pi("::1", "1502");

    ck_assert_ptr_nonnull(rtu);
    ck_assert_ptr_nonnull(pi);
    if (l != NULL) {
        /* Where the layout holds, it is the backend check that refuses them. */
        int layout_holds = mb_sync_available(NULL, 0);

        ck_assert_int_eq(mb_layout_verify(l, rtu, why, sizeof why), MBSC_ERR_MODBUS);
        ck_assert_ptr_nonnull(layout_holds ? strstr(why, "TCP backend") : why);
        ck_assert_int_eq(mb_layout_verify(l, pi, why, sizeof why), MBSC_ERR_MODBUS);
        ck_assert_ptr_nonnull(layout_holds ? strstr(why, "TCP backend") : why);
    }
    ck_assert_ptr_null(mb_layout_transport_of(rtu));
    ck_assert_ptr_null(mb_layout_transport_of(pi));
    ck_assert_int_eq(mbsc_modbus_path(rtu), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_modbus_path(pi), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_modbus_path(NULL), MBSC_ERR_INVALID_ARG);
    ck_assert_str_eq(mbsc_modbus_path_name(MBSC_MODBUS_PATH_SYNC), "sync");
    ck_assert_str_eq(mbsc_modbus_path_name(MBSC_MODBUS_PATH_PUMP), "pump");
    ck_assert_str_eq(mbsc_modbus_path_name(0), "none");
    modbus_free(rtu);
    modbus_free(pi);
}
END_TEST

/* --- A scripted slave ---------------------------------------------------------- */

enum script {
    SCRIPT_ANSWER,      /* answer every request */
    SCRIPT_SKIP_FIRST,  /* ignore the first request, answer the others */
    SCRIPT_CLOSE_FIRST, /* close on the first request */
    SCRIPT_LATE_NEXT,   /* answer the first request only once the second has come */
    SCRIPT_LATE_GAP,    /* answer the first request only once slave_release() says so */
};

struct slave {
    pthread_t thread;
    mbsc_listener *l;
    char addr[MBSC_ADDRSTRLEN];
    enum script script;
    int serve;       /* connections to serve before the thread ends */
    int connections; /* served (accepted) */
    int rc;          /* of the last connection */
    unsigned requests;
    int release[2]; /* SCRIPT_LATE_GAP: the test writes a byte when the answer may go */
};

/*
 * The reply to "read holding registers": register a holds 0xAB00 + a, so
 * that an answer shows which request it was made for.
 */
static size_t read_reply(const uint8_t *req, size_t len, uint8_t *rsp)
{
    unsigned n = len >= 12 ? (unsigned)(req[10] << 8 | req[11]) : 0, i;
    unsigned start = len >= 12 ? (unsigned)(req[8] << 8 | req[9]) : 0;

    if (len != 12 || req[7] != 0x03 || n == 0 || n > 125)
        n = 1;
    memcpy(rsp, req, 4);
    rsp[4] = (uint8_t)((3 + 2 * n) >> 8);
    rsp[5] = (uint8_t)(3 + 2 * n);
    rsp[6] = req[6];
    rsp[7] = 0x03;
    rsp[8] = (uint8_t)(2 * n);
    for (i = 0; i < n; i++) {
        rsp[9 + 2 * i] = 0xAB;
        rsp[10 + 2 * i] = (uint8_t)(start + i);
    }
    return 9 + 2 * n;
}

/* SCRIPT_LATE_GAP: wait until the test releases the held answer. */
static int wait_release(struct slave *sl)
{
    struct pollfd pfd = {sl->release[0], POLLIN, 0};
    char b;

    return poll(&pfd, 1, LONG_MS) == 1 && read(sl->release[0], &b, 1) == 1 ? MBSC_OK
                                                                           : MBSC_ERR_TIMEOUT;
}

static void slave_release(struct slave *sl)
{
    ck_assert_int_eq((int)write(sl->release[1], "r", 1), 1);
}

static int serve_one(struct slave *sl)
{
    uint8_t req[300], rsp[300], held[300];
    mbsc_conn *c = NULL;
    size_t len, held_len = 0;
    int r = mbsc_accept(sl->l, peers.scfg, LONG_MS, &c, NULL, 0);

    if (r != MBSC_OK)
        return r;
    sl->connections++;
    while ((r = mbsc_conn_recv(c, req, sizeof req, &len, LONG_MS)) == MBSC_OK) {
        if (len == 0)
            continue; /* keep-alive */
        sl->requests++;
        if (sl->script == SCRIPT_CLOSE_FIRST && sl->requests == 1)
            break;
        if (sl->script == SCRIPT_SKIP_FIRST && sl->requests == 1)
            continue;
        if (sl->script == SCRIPT_LATE_NEXT && sl->requests == 1) {
            memcpy(held, req, len); /* answered after the next request */
            held_len = len;
            continue;
        }
        if (sl->script == SCRIPT_LATE_GAP && sl->requests == 1) {
            r = wait_release(sl);
            if (r != MBSC_OK)
                break;
        }
        if (held_len != 0) {
            r = mbsc_conn_send(c, rsp, read_reply(held, held_len, rsp), LONG_MS);
            held_len = 0;
            if (r != MBSC_OK)
                break;
        }
        r = mbsc_conn_send(c, rsp, read_reply(req, len, rsp), LONG_MS);
        if (r != MBSC_OK)
            break;
    }
    mbsc_conn_close(c);
    return r;
}

static void *slave_main(void *arg)
{
    struct slave *sl = arg;
    int i;

    for (i = 0; i < sl->serve; i++) {
        sl->rc = serve_one(sl);
        if (sl->rc != MBSC_ERR_PEER_CLOSED && sl->rc != MBSC_OK)
            break;
    }
    return NULL;
}

static void slave_start_n(struct slave *sl, enum script script, int serve)
{
    memset(sl, 0, sizeof *sl);
    sl->script = script;
    sl->serve = serve;
    ck_assert_int_eq(pipe(sl->release), 0);
    ck_assert_int_eq(mbsc_listen("127.0.0.1:0", &sl->l, NULL, 0), MBSC_OK);
    ck_assert_int_eq(mbsc_listener_address(sl->l, sl->addr, sizeof sl->addr), MBSC_OK);
    ck_assert_int_eq(pthread_create(&sl->thread, NULL, slave_main, sl), 0);
}

static void slave_start(struct slave *sl, enum script script)
{
    slave_start_n(sl, script, 1);
}

static void slave_finish(struct slave *sl)
{
    ck_assert_int_eq(pthread_join(sl->thread, NULL), 0);
    mbsc_listener_close(sl->l);
    close(sl->release[0]);
    close(sl->release[1]);
}

static modbus_t *connect_ok(const char *addr)
{
    char why[MBSC_WHY_SIZE];
    int err = 1;
    modbus_t *ctx = mbsc_modbus_connect(addr, peers.mcfg, LONG_MS, &err, why, sizeof why);

    ck_assert_msg(ctx != NULL, "mbsc_modbus_connect %s: %s (%s)", addr, mbsc_strerror(err), why);
    ck_assert_int_eq(err, MBSC_OK);
    ck_assert_int_eq(modbus_set_response_timeout(ctx, LONG_MS / 1000, 0), 0);
    return ctx;
}

/* Read nb registers from addr: the answer must be the one to this request. */
static void read_at_ok(modbus_t *ctx, int addr, int nb)
{
    uint16_t regs[125];
    int i;

    ck_assert_msg(modbus_read_registers(ctx, addr, nb, regs) == nb, "read %d:%d: %s (%s)", addr, nb,
                  modbus_strerror(errno), mbsc_strerror(mbsc_modbus_error(ctx)));
    for (i = 0; i < nb; i++)
        ck_assert_uint_eq(regs[i], 0xAB00u + (unsigned)(addr + i));
}

static void read_ok(modbus_t *ctx, int nb)
{
    read_at_ok(ctx, 0, nb);
}

/* Wait until what the slave sent has reached the context's descriptor. */
static void wait_readable(modbus_t *ctx)
{
    struct pollfd pfd = {modbus_get_socket(ctx), POLLIN, 0};

    ck_assert_int_eq(poll(&pfd, 1, LONG_MS), 1);
}

/* --- Which path ------------------------------------------------------------------ */

/* The path a context uses is the one probed, and the one CI expects. */
START_TEST(test_path_reported)
{
    char why[MBSC_WHY_SIZE];
    const char *expect = getenv("MBSC_TEST_EXPECT_PATH");
    int probed = mbsc_modbus_probe_path(why, sizeof why);
    struct slave sl;
    modbus_t *ctx;

    printf("check_modbus_client: path %s (%s)\n", mbsc_modbus_path_name(probed), why);
    if (expect != NULL)
        ck_assert_str_eq(mbsc_modbus_path_name(probed), expect);
    slave_start(&sl, SCRIPT_ANSWER);
    ctx = connect_ok(sl.addr);
    ck_assert_int_eq(mbsc_modbus_path(ctx), probed);
    read_ok(ctx, 10);
    ck_assert_int_eq(mbsc_modbus_error(ctx), MBSC_OK);
    ck_assert_ptr_nonnull(mbsc_modbus_cipher(ctx));
    ck_assert_str_eq(mbsc_cipher_name(mbsc_modbus_cipher(ctx)), "chacha20");
    mbsc_modbus_close(ctx);
    slave_finish(&sl);
    ck_assert_int_eq(sl.rc, MBSC_ERR_PEER_CLOSED);
}
END_TEST

/* MBSC_MODBUS_PUMP=1 forces the pump, and only "1" does. */
START_TEST(test_pump_forced)
{
    const char *saved = getenv(MBSC_MODBUS_PUMP_ENV);
    char *copy = saved != NULL ? strdup(saved) : NULL;
    char why[MBSC_WHY_SIZE];
    struct slave sl;
    modbus_t *ctx;

    ck_assert_int_eq(setenv(MBSC_MODBUS_PUMP_ENV, "1", 1), 0);
    ck_assert_int_eq(mbsc_modbus_probe_path(why, sizeof why), MBSC_MODBUS_PATH_PUMP);
    ck_assert_ptr_nonnull(strstr(why, MBSC_MODBUS_PUMP_ENV));
    slave_start(&sl, SCRIPT_ANSWER);
    ctx = connect_ok(sl.addr);
    ck_assert_int_eq(mbsc_modbus_path(ctx), MBSC_MODBUS_PATH_PUMP);
    read_ok(ctx, 3);
    mbsc_modbus_close(ctx);
    slave_finish(&sl);

    ck_assert_int_eq(setenv(MBSC_MODBUS_PUMP_ENV, "0", 1), 0);
    ck_assert_int_eq(mbsc_modbus_probe_path(NULL, 0),
                     mb_sync_available(NULL, 0) ? MBSC_MODBUS_PATH_SYNC : MBSC_MODBUS_PATH_PUMP);
    if (copy != NULL)
        ck_assert_int_eq(setenv(MBSC_MODBUS_PUMP_ENV, copy, 1), 0);
    else
        ck_assert_int_eq(unsetenv(MBSC_MODBUS_PUMP_ENV), 0);
    free(copy);
}
END_TEST

/* The synchronous path adds no thread and one descriptor (the TCP socket). */
START_TEST(test_sync_no_thread)
{
    long fds_start = tu_count_dir("/proc/self/fd"), tasks0, fds0;
    struct slave sl;
    modbus_t *ctx;

    slave_start(&sl, SCRIPT_ANSWER);
    tasks0 = tu_count_dir("/proc/self/task");
    fds0 = tu_count_dir("/proc/self/fd");
    ctx = connect_ok(sl.addr);
    if (mbsc_modbus_path(ctx) != MBSC_MODBUS_PATH_SYNC) {
        mbsc_modbus_close(ctx); /* the pump has a thread by design */
        slave_finish(&sl);
        return;
    }
    read_ok(ctx, 2);
    ck_assert_int_eq(tu_count_dir("/proc/self/task"), tasks0);
    /* The master's TCP socket, and the in-process slave's end of it. */
    ck_assert_int_eq(tu_count_dir("/proc/self/fd"), fds0 + 2);
    ck_assert_int_eq(modbus_get_socket(ctx) >= 0, 1);
    modbus_close(ctx);
    modbus_free(ctx);
    slave_finish(&sl);
    ck_assert_int_eq(tu_count_dir("/proc/self/fd"), fds_start);
}
END_TEST

/* --- The transport ---------------------------------------------------------------- */

/* libmodbus's response timeout keeps its meaning, and a timeout ends nothing. */
START_TEST(test_response_timeout)
{
    struct slave sl;
    uint16_t reg;
    long long t0, took;
    modbus_t *ctx;

    slave_start(&sl, SCRIPT_SKIP_FIRST);
    ctx = connect_ok(sl.addr);
    ck_assert_int_eq(modbus_set_response_timeout(ctx, 0, 300000), 0);
    t0 = tu_now_ms();
    ck_assert_int_eq(modbus_read_registers(ctx, 0, 1, &reg), -1);
    took = tu_now_ms() - t0;
    ck_assert_int_eq(errno, ETIMEDOUT);
    ck_assert_msg(took >= 290 && took < 5000, "timed out after %lld ms (timeout 300 ms)", took);
    ck_assert_int_eq(mbsc_modbus_error(ctx), MBSC_OK);
    ck_assert_int_eq(modbus_set_response_timeout(ctx, LONG_MS / 1000, 0), 0);
    read_ok(ctx, 4); /* the connection goes on */
    read_ok(ctx, 125);
    mbsc_modbus_close(ctx);
    slave_finish(&sl);
    ck_assert_uint_eq(sl.requests, 3);
}
END_TEST

/*
 * After modbus_close() the context stays ours until modbus_free(): the
 * queries still answer, calls fail at once, and nothing is left open.
 */
START_TEST(test_close_then_free)
{
    long fds0 = tu_count_dir("/proc/self/fd");
    struct slave sl;
    uint16_t reg;
    modbus_t *ctx;
    int path;

    slave_start(&sl, SCRIPT_ANSWER);
    ctx = connect_ok(sl.addr);
    path = mbsc_modbus_path(ctx);
    read_ok(ctx, 1);
    modbus_close(ctx);
    ck_assert_int_eq(modbus_get_socket(ctx), -1);
    ck_assert_int_eq(modbus_read_registers(ctx, 0, 1, &reg), -1);
    ck_assert_int_eq(modbus_connect(ctx), -1); /* nothing to reconnect with: refused */
    if (path == MBSC_MODBUS_PATH_SYNC) {
        ck_assert_int_eq(mbsc_modbus_path(ctx), MBSC_MODBUS_PATH_SYNC);
        ck_assert_int_eq(mbsc_modbus_error(ctx), MBSC_OK);
        ck_assert_ptr_nonnull(mbsc_modbus_cipher(ctx));
    }
    modbus_free(ctx);
    slave_finish(&sl);
    ck_assert_int_eq(tu_count_dir("/proc/self/fd"), fds0);
}
END_TEST

/* The slave hangs up on a request: the call fails at once, the cause is named. */
START_TEST(test_slave_hangs_up)
{
    struct slave sl;
    uint16_t reg;
    long long t0;
    modbus_t *ctx;

    slave_start(&sl, SCRIPT_CLOSE_FIRST);
    ctx = connect_ok(sl.addr);
    t0 = tu_now_ms();
    ck_assert_int_eq(modbus_read_registers(ctx, 0, 1, &reg), -1);
    ck_assert_int_eq(errno, ECONNRESET);
    ck_assert_int_lt(tu_now_ms() - t0, LONG_MS / 2);
    ck_assert_int_eq(mbsc_modbus_error(ctx), MBSC_ERR_PEER_CLOSED);
    t0 = tu_now_ms();
    ck_assert_int_eq(modbus_write_register(ctx, 0, 1), -1); /* later calls too */
    ck_assert_int_lt(tu_now_ms() - t0, LONG_MS / 2);
    ck_assert_int_eq(mbsc_modbus_error(ctx), MBSC_ERR_PEER_CLOSED);
    mbsc_modbus_close(ctx);
    slave_finish(&sl);
}
END_TEST

/* Raw requests and modbus_receive_confirmation() go through the transport as they are. */
START_TEST(test_raw_request)
{
    uint8_t raw[6], rsp[MODBUS_TCP_MAX_ADU_LENGTH];
    struct slave sl;
    modbus_t *ctx;

    slave_start(&sl, SCRIPT_ANSWER);
    ctx = connect_ok(sl.addr);
    raw[0] = 0xFF;
    raw[1] = 0x03;
    raw[2] = 0;
    raw[3] = 0;
    raw[4] = 0;
    raw[5] = 2;
    ck_assert_int_eq(modbus_send_raw_request(ctx, raw, 6), 12);
    ck_assert_int_eq(modbus_receive_confirmation(ctx, rsp), 13);
    ck_assert_uint_eq(rsp[9], 0xAB);
    ck_assert_uint_eq(rsp[12], 1);
    read_ok(ctx, 5);
    mbsc_modbus_close(ctx);
    slave_finish(&sl);
}
END_TEST

/*
 * A slave answers the first request only after the master's response
 * timeout, once the second request has come: that late answer carries the
 * first request's transaction id and must not be taken for the second's.
 * The second read gets its own answer, the late one is counted.
 */
START_TEST(test_late_answer_during_next)
{
    struct slave sl;
    uint16_t reg;
    modbus_t *ctx;

    slave_start(&sl, SCRIPT_LATE_NEXT);
    ctx = connect_ok(sl.addr);
    ck_assert_int_eq(mbsc_modbus_dropped_answers(ctx), 0);
    ck_assert_int_eq(modbus_set_response_timeout(ctx, 0, 300000), 0);
    ck_assert_int_eq(modbus_read_registers(ctx, 1, 1, &reg), -1);
    ck_assert_int_eq(errno, ETIMEDOUT);
    ck_assert_int_eq(modbus_set_response_timeout(ctx, LONG_MS / 1000, 0), 0);
    read_at_ok(ctx, 2, 3);
    read_at_ok(ctx, 7, 1);
    ck_assert_int_eq(mbsc_modbus_dropped_answers(ctx), 1);
    ck_assert_int_eq(mbsc_modbus_error(ctx), MBSC_OK);
    mbsc_modbus_close(ctx);
    slave_finish(&sl);
    ck_assert_uint_eq(sl.requests, 3);
}
END_TEST

/*
 * Back-to-back reads, nothing late: every call gets its answer and none is
 * dropped.  On the pump (modbus_pump.test), whether libmodbus has read the
 * last answer when its next request comes was judged from the order of
 * two epoll events, and about one request in 7000 was taken for one that
 * reads an old answer: its own answer dropped, the call timed out.  10000
 * reads failed about three runs in four then, and stay short under qemu.
 */
START_TEST(test_many_reads_none_dropped)
{
    struct slave sl;
    modbus_t *ctx;
    int i;

    slave_start(&sl, SCRIPT_ANSWER);
    ctx = connect_ok(sl.addr);
    /* A dropped answer fails its call in 2 s, not the suite's long wait. */
    ck_assert_int_eq(modbus_set_response_timeout(ctx, 2, 0), 0);
    for (i = 0; i < 10000; i++)
        read_at_ok(ctx, i % 50, 1);
    ck_assert_int_eq(mbsc_modbus_dropped_answers(ctx), 0);
    mbsc_modbus_close(ctx);
    slave_finish(&sl);
    ck_assert_uint_eq(sl.requests, 10000);
}
END_TEST

/*
 * The late answer arrives after the timeout and before the next request.
 * Synchronous path: it waits in the TCP connection and is dropped when the
 * next request's wait meets it.  Pump: the pump has already handed it to
 * libmodbus's socket (nothing tells the pump that libmodbus gave up), so
 * the next call reads it and fails (libmodbus checks the transaction id);
 * the pump sees that call read the stale answer and drops that call's own
 * answer, so that the call after it, and every later one, gets its own.
 */
START_TEST(test_late_answer_before_next)
{
    struct slave sl;
    uint16_t regs[3];
    modbus_t *ctx;

    slave_start(&sl, SCRIPT_LATE_GAP);
    ctx = connect_ok(sl.addr);
    ck_assert_int_eq(modbus_set_response_timeout(ctx, 0, 300000), 0);
    ck_assert_int_eq(modbus_read_registers(ctx, 1, 1, regs), -1);
    ck_assert_int_eq(errno, ETIMEDOUT);
    slave_release(&sl);
    wait_readable(ctx);
    ck_assert_int_eq(modbus_set_response_timeout(ctx, LONG_MS / 1000, 0), 0);
    if (mbsc_modbus_path(ctx) == MBSC_MODBUS_PATH_SYNC) {
        read_at_ok(ctx, 2, 3);
    } else {
        ck_assert_int_eq(modbus_read_registers(ctx, 2, 3, regs), -1);
        ck_assert_int_eq(errno, EMBBADDATA);
    }
    read_at_ok(ctx, 5, 2);
    read_at_ok(ctx, 9, 1);
    ck_assert_int_eq(mbsc_modbus_dropped_answers(ctx), 1);
    ck_assert_int_eq(mbsc_modbus_error(ctx), MBSC_OK);
    mbsc_modbus_close(ctx);
    slave_finish(&sl);
    ck_assert_uint_eq(sl.requests, 4);
}
END_TEST

/* --- Reconnecting ------------------------------------------------------------------ */

START_TEST(test_reconnect_args)
{
    modbus_t *plain = modbus_new_tcp("127.0.0.1", 1502);

    ck_assert_int_eq(mbsc_modbus_set_reconnect(NULL, peers.mcfg), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_modbus_set_reconnect(plain, peers.mcfg), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_modbus_set_reconnect(plain, NULL), MBSC_ERR_INVALID_ARG);
    modbus_free(plain);
}
END_TEST

/*
 * MODBUS_ERROR_RECOVERY_LINK with a config lent: the slave hangs up, the
 * call fails, libmodbus reconnects through a new handshake (the slave is an
 * mbsc_accept: a plaintext connection could not pass), and the next call
 * works.  On the pump, reconnecting is refused (MBSC_ERR_STATE).
 */
START_TEST(test_reconnect_link)
{
    int sync = mbsc_modbus_probe_path(NULL, 0) == MBSC_MODBUS_PATH_SYNC;
    struct slave sl;
    uint16_t reg;
    modbus_t *ctx;

    slave_start_n(&sl, SCRIPT_CLOSE_FIRST, sync ? 2 : 1);
    ctx = connect_ok(sl.addr);
    if (!sync) {
        ck_assert_int_eq(mbsc_modbus_set_reconnect(ctx, peers.mcfg), MBSC_ERR_STATE);
        mbsc_modbus_close(ctx);
        slave_finish(&sl);
        return;
    }
    ck_assert_int_eq(mbsc_modbus_set_reconnect(ctx, peers.scfg), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_modbus_set_reconnect(ctx, peers.mcfg), MBSC_OK);
    ck_assert_int_eq(modbus_set_error_recovery(ctx, MODBUS_ERROR_RECOVERY_LINK), 0);
    ck_assert_int_eq(modbus_read_registers(ctx, 0, 1, &reg), -1);
    /* libmodbus has reconnected within the failed call. */
    ck_assert_int_eq(mbsc_modbus_error(ctx), MBSC_OK);
    ck_assert_int_ge(modbus_get_socket(ctx), 0);
    read_ok(ctx, 3);
    read_ok(ctx, 1);
    mbsc_modbus_close(ctx);
    slave_finish(&sl);
    ck_assert_int_eq(sl.connections, 2);
    ck_assert_uint_eq(sl.requests, 3);
}
END_TEST

/* modbus_close() then modbus_connect() with a config lent: a new secure connection. */
START_TEST(test_reconnect_explicit)
{
    struct slave sl;
    modbus_t *ctx;

    if (mbsc_modbus_probe_path(NULL, 0) != MBSC_MODBUS_PATH_SYNC)
        return; /* the pump refuses reconnecting: test_reconnect_link */
    slave_start_n(&sl, SCRIPT_ANSWER, 2);
    ctx = connect_ok(sl.addr);
    read_ok(ctx, 2);
    ck_assert_int_eq(mbsc_modbus_set_reconnect(ctx, peers.mcfg), MBSC_OK);
    modbus_close(ctx);
    ck_assert_int_eq(modbus_connect(ctx), 0);
    read_ok(ctx, 2);
    /* Lent no more: a reconnect is refused again, without traffic. */
    ck_assert_int_eq(mbsc_modbus_set_reconnect(ctx, NULL), MBSC_OK);
    modbus_close(ctx);
    ck_assert_int_eq(modbus_connect(ctx), -1);
    modbus_free(ctx);
    slave_finish(&sl);
    ck_assert_int_eq(sl.connections, 2);
}
END_TEST

/*
 * The slave is gone for good: the reconnect fails and the cause is named.
 * (Not with LINK: libmodbus would retry the next send for ever.)
 */
START_TEST(test_reconnect_fails)
{
    struct slave sl;
    uint16_t reg;
    long long t0;
    modbus_t *ctx;

    if (mbsc_modbus_probe_path(NULL, 0) != MBSC_MODBUS_PATH_SYNC)
        return;
    slave_start(&sl, SCRIPT_ANSWER);
    ctx = connect_ok(sl.addr);
    read_ok(ctx, 1);
    ck_assert_int_eq(mbsc_modbus_set_reconnect(ctx, peers.mcfg), MBSC_OK);
    modbus_close(ctx);
    slave_finish(&sl); /* nobody listens any more */
    ck_assert_int_eq(modbus_connect(ctx), -1);
    ck_assert_int_eq(mbsc_modbus_error(ctx), MBSC_ERR_CONNECT);
    ck_assert_int_eq(modbus_get_socket(ctx), -1);
    t0 = tu_now_ms();
    ck_assert_int_eq(modbus_read_registers(ctx, 0, 1, &reg), -1);
    ck_assert_int_eq(errno, EBADF);
    ck_assert_int_lt(tu_now_ms() - t0, 1000);
    mbsc_modbus_close(ctx);
}
END_TEST

Suite *modbus_client_suite(void)
{
    Suite *s = suite_create("modbus_client");
    TCase *tc;

    tc = tcase_create("layout");
    tcase_add_test(tc, test_layout_table);
    tcase_add_test(tc, test_layout_verified_here);
    tcase_add_test(tc, test_layout_mismatch_refused);
    tcase_add_test(tc, test_layout_other_backends);
    suite_add_tcase(s, tc);

    tc = tcase_create("path");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_path_reported);
    tcase_add_test(tc, test_pump_forced);
    tcase_add_test(tc, test_sync_no_thread);
    suite_add_tcase(s, tc);

    tc = tcase_create("transport");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_response_timeout);
    tcase_add_test(tc, test_close_then_free);
    tcase_add_test(tc, test_slave_hangs_up);
    tcase_add_test(tc, test_raw_request);
    tcase_add_test(tc, test_late_answer_during_next);
    tcase_add_test(tc, test_late_answer_before_next);
    tcase_add_test(tc, test_many_reads_none_dropped);
    suite_add_tcase(s, tc);

    tc = tcase_create("reconnect");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_reconnect_args);
    tcase_add_test(tc, test_reconnect_link);
    tcase_add_test(tc, test_reconnect_explicit);
    tcase_add_test(tc, test_reconnect_fails);
    suite_add_tcase(s, tc);
    return s;
}
