/* SPDX-License-Identifier: ISC */
/*
 * check_modbus.c - the libmodbus adapter, end to end over loopback TCP.
 *
 * The slave is an mbsc_modbus_server on 127.0.0.1:0, run by a thread (or
 * stepped by the test itself); masters are unchanged libmodbus calls on
 * contexts from mbsc_modbus_connect().  Nothing sleeps to synchronise: the
 * tests wait for server events (a condition variable), for libmodbus calls
 * to return, or for a relay thread's answers.  Hostile masters use the
 * session API or raw sockets; hostile slaves are a relay that corrupts or
 * kills the stream, or a scripted slave on the connection API.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <modbus.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "mbsc.h"
#include "mbsc/modbus.h"
#include "modbus/modbus_internal.h"
#include "testutil.h"

Suite *modbus_suite(void);

/* Connection ids never wrap: 2^32 connections, refused ones included, are
 * within reach of a long-running slave under attack. */
_Static_assert(sizeof(((struct mbsc_modbus_event *)0)->connection_id) == 8,
               "event connection ids are 64-bit");
_Static_assert(sizeof(((struct mbsc_modbus_request *)0)->connection_id) == 8,
               "request connection ids are 64-bit");
_Static_assert(sizeof(((struct mbsc_server_conn_info *)0)->seq) == 8,
               "server connection sequence numbers are 64-bit");

#define LONG_MS 20000 /* bound for what must succeed */
#define NREGS   2000  /* registers, coils, inputs in the test mapping */

static const char *const cipher_names[MBSC_CIPHER_COUNT] = {"chacha20", "trivium", "rabbit",
                                                            "enocoro128v2"};

/* --- Keys, configs and the mapping, fresh for every test ------------------ */

static struct tu_peers peers;
static modbus_mapping_t *map;

static void setup(void)
{
    int i;

    tu_peers_setup(&peers, "master-1", NULL, NULL);
    map = modbus_mapping_new(NREGS, NREGS, NREGS, NREGS);
    ck_assert_ptr_nonnull(map);
    for (i = 0; i < NREGS; i++) {
        map->tab_input_registers[i] = (uint16_t)(0x4000 + i);
        map->tab_input_bits[i] = (uint8_t)(i % 3 == 0);
    }
}

static void teardown(void)
{
    modbus_mapping_free(map);
    tu_peers_teardown(&peers);
}

/* --- Small helpers ---------------------------------------------------------- */

/*
 * Threads listed in /proc/self/task, once every joined thread is gone.  A
 * joined thread can stay listed for a moment under qemu-user, whose host
 * thread outlives the emulated one; wait for that (up to 5 s), not for
 * anything of ours.
 */
static long settled_task_count(long want)
{
    struct timespec ms = {0, 1000000};
    long n = tu_count_dir("/proc/self/task");
    int i;

    for (i = 0; i < 5000 && n != want; i++) {
        nanosleep(&ms, NULL);
        n = tu_count_dir("/proc/self/task");
    }
    return n;
}

/*
 * libmodbus waits 0.5 s for a response by default: too short under
 * valgrind or qemu with dozens of threads.  Tests that time a failure set
 * their own.
 */
static void slow_host_timeout(modbus_t *ctx)
{
    ck_assert_int_eq(modbus_set_response_timeout(ctx, LONG_MS / 1000, 0), 0);
}

static modbus_t *connect_ok(const char *addr, const mbsc_config *cfg)
{
    char why[MBSC_WHY_SIZE];
    int err = 1;
    modbus_t *ctx = mbsc_modbus_connect(addr, cfg, LONG_MS, &err, why, sizeof why);

    ck_assert_msg(ctx != NULL, "mbsc_modbus_connect %s: %s (%s)", addr, mbsc_strerror(err), why);
    ck_assert_int_eq(err, MBSC_OK);
    ck_assert_int_eq(mbsc_modbus_error(ctx), MBSC_OK);
    slow_host_timeout(ctx);
    return ctx;
}

/* --- The server in a thread, and what it reports ---------------------------- */

#define MAX_ERR 64 /* -error of every mbsc code fits */

struct server_thread {
    mbsc_modbus_server *srv;
    pthread_t thread;
    int run_rc;
    char addr[MBSC_ADDRSTRLEN];
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned connected, closed, requests;
    unsigned closed_by[MAX_ERR]; /* CLOSED events per -error */
    char last_detail[256];       /* of the last CLOSED event with an error */
    char last_name[64];          /* peer_name of the last CONNECTED event */
    const mbsc_cipher *last_cipher;
    int bad_event;                  /* an event that broke the header's promises */
    unsigned logs;                  /* LOG events */
    char all_logs[4096];            /* their lines, one after the other */
    struct mbsc_server_stats stats; /* the server's, as of the last event */
};

static void on_event(void *user, const struct mbsc_modbus_event *ev)
{
    struct server_thread *st = user;

    pthread_mutex_lock(&st->lock);
    /* Called in the server's thread: its statistics can be read here. */
    mbsc_server_get_stats(mbsc_modbus_server_core(st->srv), &st->stats);
    if (ev->type == MBSC_MODBUS_EVENT_LOG) {
        size_t at = strlen(st->all_logs);

        st->logs++;
        if (ev->detail == NULL || ev->peer_address != NULL)
            st->bad_event = 1;
        else if (at < sizeof st->all_logs - 1)
            snprintf(st->all_logs + at, sizeof st->all_logs - at, "%s\n", ev->detail);
        pthread_cond_broadcast(&st->cond);
        pthread_mutex_unlock(&st->lock);
        return;
    }
    if (ev->connection_id == 0 || ev->peer_address == NULL)
        st->bad_event = 1;
    switch (ev->type) {
    case MBSC_MODBUS_EVENT_CONNECTED:
        st->connected++;
        if (ev->peer_name == NULL || ev->cipher == NULL)
            st->bad_event = 1;
        else
            snprintf(st->last_name, sizeof st->last_name, "%s", ev->peer_name);
        st->last_cipher = ev->cipher;
        break;
    case MBSC_MODBUS_EVENT_REQUEST:
        st->requests++;
        if (ev->adu == NULL || mbsc_modbus_check_adu(ev->adu, ev->adu_len) != MBSC_OK)
            st->bad_event = 1;
        break;
    case MBSC_MODBUS_EVENT_CLOSED:
        st->closed++;
        if (ev->error > 0 || -ev->error >= MAX_ERR || ev->detail == NULL)
            st->bad_event = 1;
        else
            st->closed_by[-ev->error]++;
        if (ev->error != MBSC_OK && ev->detail != NULL)
            snprintf(st->last_detail, sizeof st->last_detail, "%s", ev->detail);
        break;
    default: st->bad_event = 1;
    }
    pthread_cond_broadcast(&st->cond);
    pthread_mutex_unlock(&st->lock);
}

static void server_new(struct server_thread *st, const mbsc_config *cfg)
{
    char why[MBSC_WHY_SIZE];

    memset(st, 0, sizeof *st);
    pthread_mutex_init(&st->lock, NULL);
    pthread_cond_init(&st->cond, NULL);
    ck_assert_msg(mbsc_modbus_server_new(&st->srv, "127.0.0.1:0", cfg, map, why, sizeof why) ==
                      MBSC_OK,
                  "server: %s", why);
    mbsc_modbus_server_set_event_fn(st->srv, on_event, st);
    ck_assert_int_eq(mbsc_modbus_server_address(st->srv, st->addr, sizeof st->addr), MBSC_OK);
    /*
     * Every test client comes from 127.0.0.1, and every test master has the
     * same key: lift the per-address and per-key budgets (tests of them set
     * them back, check_server tests the per-key one), and report refusals
     * at once, so that the statistics the LOG events carry are current.
     */
    ck_assert_int_eq(mbsc_server_set_limit(mbsc_modbus_server_core(st->srv),
                                           MBSC_SERVER_MAX_UNCONFIRMED_PER_ADDRESS, 1000),
                     MBSC_OK);
    ck_assert_int_eq(mbsc_server_set_limit(mbsc_modbus_server_core(st->srv),
                                           MBSC_SERVER_MAX_SESSIONS_PER_KEY, 1000),
                     MBSC_OK);
    ck_assert_int_eq(
        mbsc_server_set_limit(mbsc_modbus_server_core(st->srv), MBSC_SERVER_LOG_INTERVAL_MS, 1),
        MBSC_OK);
}

/* Wait (up to 20 s) until the server's statistics satisfy cond. */
#define WAIT_STATS(sp, pred)                                                                       \
    do {                                                                                           \
        struct timespec deadline_;                                                                 \
        int ok_ = 1;                                                                               \
        clock_gettime(CLOCK_REALTIME, &deadline_);                                                 \
        deadline_.tv_sec += 20;                                                                    \
        pthread_mutex_lock(&(sp)->lock);                                                           \
        while (!(pred) && ok_)                                                                     \
            ok_ = pthread_cond_timedwait(&(sp)->cond, &(sp)->lock, &deadline_) == 0;               \
        pthread_mutex_unlock(&(sp)->lock);                                                         \
        ck_assert_msg(pred,                                                                        \
                      "timed out waiting for %s (refused %llu, closed early %llu, bad %llu, "      \
                      "timeouts %llu, other %llu)",                                                \
                      #pred, (unsigned long long)(sp)->stats.refused,                              \
                      (unsigned long long)(sp)->stats.closed_early,                                \
                      (unsigned long long)(sp)->stats.bad_handshakes,                              \
                      (unsigned long long)(sp)->stats.timed_out,                                   \
                      (unsigned long long)((sp)->stats.refused - (sp)->stats.closed_early -        \
                                           (sp)->stats.bad_handshakes - (sp)->stats.timed_out -    \
                                           (sp)->stats.evicted - (sp)->stats.per_address -         \
                                           (sp)->stats.full - (sp)->stats.unknown_keys -           \
                                           (sp)->stats.fd_exhausted));                             \
    } while (0)

static void *server_main(void *arg)
{
    struct server_thread *st = arg;

    st->run_rc = mbsc_modbus_server_run(st->srv);
    return NULL;
}

static void server_start(struct server_thread *st, const mbsc_config *cfg)
{
    server_new(st, cfg);
    ck_assert_int_eq(pthread_create(&st->thread, NULL, server_main, st), 0);
}

/* Stop the thread; the server (and its connections) stays until server_free. */
static void server_stop(struct server_thread *st)
{
    mbsc_modbus_server_stop(st->srv);
    ck_assert_int_eq(pthread_join(st->thread, NULL), 0);
    ck_assert_int_eq(st->run_rc, MBSC_OK);
}

static void server_free(struct server_thread *st)
{
    mbsc_modbus_server_free(st->srv);
    st->srv = NULL;
    ck_assert_int_eq(st->bad_event, 0);
    pthread_cond_destroy(&st->cond);
    pthread_mutex_destroy(&st->lock);
}

static void server_finish(struct server_thread *st)
{
    server_stop(st);
    server_free(st);
}

/* Wait until *counter (a field of st) reaches n; fails the test after LONG_MS. */
static void wait_count(struct server_thread *st, const unsigned *counter, unsigned n)
{
    struct timespec until;
    int rc = 0;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += LONG_MS / 1000;
    pthread_mutex_lock(&st->lock);
    while (*counter < n && rc == 0)
        rc = pthread_cond_timedwait(&st->cond, &st->lock, &until);
    pthread_mutex_unlock(&st->lock);
    ck_assert_msg(*counter >= n, "waited for %u events, saw %u", n, *counter);
}

static unsigned closed_by(struct server_thread *st, int err)
{
    unsigned n;

    pthread_mutex_lock(&st->lock);
    n = st->closed_by[-err];
    pthread_mutex_unlock(&st->lock);
    return n;
}

/* --- Modbus helpers ----------------------------------------------------------- */

/* Read holding registers and check them against the expected values. */
static void expect_registers(modbus_t *ctx, int addr, int nb, const uint16_t *want)
{
    uint16_t got[MODBUS_MAX_READ_REGISTERS];

    ck_assert_int_eq(modbus_read_registers(ctx, addr, nb, got), nb);
    ck_assert_mem_eq(got, want, (size_t)nb * sizeof *got);
}

/* A short exchange that must work: write a register, read it back. */
static void exchange_ok(modbus_t *ctx, int addr, uint16_t value)
{
    ck_assert_int_eq(modbus_write_register(ctx, addr, value), 1);
    expect_registers(ctx, addr, 1, &value);
}

/* --- ADU checks ----------------------------------------------------------------- */

struct adu_case {
    size_t len;
    uint16_t protocol, length; /* MBAP fields */
    int want;
};

static const struct adu_case adu_cases[] = {
    {8, 0, 2, MBSC_OK},                /* smallest: unit id + function code */
    {12, 0, 6, MBSC_OK},               /* read holding registers */
    {260, 0, 254, MBSC_OK},            /* largest */
    {7, 0, 1, MBSC_ERR_BAD_ADU},       /* no function code */
    {6, 0, 0, MBSC_ERR_BAD_ADU},       /* MBAP without unit id */
    {0, 0, 0, MBSC_ERR_BAD_ADU},       /* empty */
    {261, 0, 255, MBSC_ERR_BAD_ADU},   /* one byte too long */
    {12, 1, 6, MBSC_ERR_BAD_ADU},      /* protocol id not 0 */
    {12, 0x100, 6, MBSC_ERR_BAD_ADU},  /* protocol id high byte */
    {12, 0, 5, MBSC_ERR_BAD_ADU},      /* length one short */
    {12, 0, 7, MBSC_ERR_BAD_ADU},      /* length one long */
    {12, 0, 0xFFFF, MBSC_ERR_BAD_ADU}, /* huge length */
    {8, 0, 0x0102, MBSC_ERR_BAD_ADU},  /* length bytes swapped */
};

START_TEST(test_check_adu)
{
    const struct adu_case *c = &adu_cases[_i];
    uint8_t adu[300];

    memset(adu, 0xA5, sizeof adu);
    adu[0] = 0x12;
    adu[1] = 0x34;
    adu[2] = (uint8_t)(c->protocol >> 8);
    adu[3] = (uint8_t)c->protocol;
    adu[4] = (uint8_t)(c->length >> 8);
    adu[5] = (uint8_t)c->length;
    ck_assert_int_eq(mbsc_modbus_check_adu(adu, c->len), c->want);
}
END_TEST

START_TEST(test_check_adu_null)
{
    ck_assert_int_eq(mbsc_modbus_check_adu(NULL, 0), MBSC_ERR_BAD_ADU);
    ck_assert_int_eq(mbsc_modbus_check_adu(NULL, 12), MBSC_ERR_BAD_ADU);
}
END_TEST

/* --- Every cipher, every kind of call --------------------------------------------- */

static void run_all_calls(modbus_t *ctx)
{
    uint16_t regs[16], wr[5] = {11, 22, 33, 44, 55}, rd[3];
    uint8_t bits[16], wbits[10] = {1, 0, 1, 1, 0, 0, 1, 0, 1, 1};
    uint8_t raw[] = {0xFF, MODBUS_FC_READ_HOLDING_REGISTERS, 0x00, 0x0D, 0x00, 0x02};
    uint8_t rsp[MODBUS_TCP_MAX_ADU_LENGTH];
    int i;

    exchange_ok(ctx, 1, 0x1234);
    ck_assert_int_eq(modbus_write_registers(ctx, 10, 5, wr), 5);
    expect_registers(ctx, 10, 5, wr);
    ck_assert_int_eq(modbus_write_bit(ctx, 3, 1), 1);
    ck_assert_int_eq(modbus_write_bits(ctx, 20, 10, wbits), 10);
    ck_assert_int_eq(modbus_read_bits(ctx, 20, 10, bits), 10);
    ck_assert_mem_eq(bits, wbits, 10);
    ck_assert_int_eq(modbus_read_bits(ctx, 3, 1, bits), 1);
    ck_assert_int_eq(bits[0], 1);
    ck_assert_int_eq(modbus_read_input_registers(ctx, 100, 16, regs), 16);
    for (i = 0; i < 16; i++)
        ck_assert_uint_eq(regs[i], 0x4000u + 100u + (unsigned)i);
    ck_assert_int_eq(modbus_read_input_bits(ctx, 30, 9, bits), 9);
    for (i = 0; i < 9; i++)
        ck_assert_uint_eq(bits[i], (unsigned)((30 + i) % 3 == 0));
    /* Write 3 registers at 40 and read 3 from 41 in one request. */
    ck_assert_int_eq(modbus_write_and_read_registers(ctx, 40, 3, wr, 41, 3, rd), 3);
    ck_assert_uint_eq(rd[0], 22);
    ck_assert_uint_eq(rd[1], 33);
    ck_assert_uint_eq(rd[2], 0);
    /* A raw request (registers 13 and 14, written above): libmodbus adds the MBAP header. */
    ck_assert_int_eq(modbus_send_raw_request(ctx, raw, (int)sizeof raw), 12);
    ck_assert_int_eq(modbus_receive_confirmation(ctx, rsp), 13);
    ck_assert_uint_eq(rsp[7], MODBUS_FC_READ_HOLDING_REGISTERS);
    ck_assert_uint_eq(rsp[8], 4);
    ck_assert_uint_eq(rsp[9], 0);
    ck_assert_uint_eq(rsp[10], 44);
    ck_assert_uint_eq(rsp[11], 0);
    ck_assert_uint_eq(rsp[12], 55);
    /* An exception response: illegal data address. */
    errno = 0;
    ck_assert_int_eq(modbus_read_registers(ctx, NREGS, 1, regs), -1);
    ck_assert_int_eq(errno, EMBXILADD);
    /* Any unit id is answered, as libmodbus does. */
    ck_assert_int_eq(modbus_set_slave(ctx, 17), 0);
    exchange_ok(ctx, 2, 0x5678);
    /* The connection survived the exception. */
    ck_assert_int_eq(mbsc_modbus_error(ctx), MBSC_OK);
}

START_TEST(test_every_cipher)
{
    struct server_thread st;
    const mbsc_cipher *cipher;
    modbus_t *ctx;

    ck_assert_int_eq(mbsc_config_set_ciphers(peers.mcfg, cipher_names[_i]), MBSC_OK);
    server_start(&st, peers.scfg);
    ctx = connect_ok(st.addr, peers.mcfg);
    cipher = mbsc_modbus_cipher(ctx);
    ck_assert_ptr_nonnull(cipher);
    ck_assert_str_eq(mbsc_cipher_name(cipher), cipher_names[_i]);
    run_all_calls(ctx);
    mbsc_modbus_close(ctx);
    wait_count(&st, &st.closed, 1);
    server_finish(&st);
    ck_assert_uint_eq(st.connected, 1);
    ck_assert_str_eq(st.last_name, "master-1");
    ck_assert_ptr_eq(st.last_cipher, cipher);
    ck_assert_uint_eq(st.closed_by[0], 1); /* a clean close: MBSC_OK */
    ck_assert_uint_eq(st.requests, 15);
    /* The writes reached the application's mapping. */
    ck_assert_uint_eq(map->tab_registers[1], 0x1234);
    ck_assert_uint_eq(map->tab_registers[2], 0x5678);
    ck_assert_uint_eq(map->tab_bits[3], 1);
}
END_TEST

START_TEST(test_not_ours)
{
    modbus_t *plain = modbus_new_tcp("127.0.0.1", 1502);
    char why[MBSC_WHY_SIZE];
    int err = 0;

    ck_assert_ptr_nonnull(plain);
    ck_assert_int_eq(mbsc_modbus_error(plain), MBSC_ERR_INVALID_ARG);
    ck_assert_ptr_null(mbsc_modbus_cipher(plain));
    ck_assert_int_eq(mbsc_modbus_error(NULL), MBSC_ERR_INVALID_ARG);
    mbsc_modbus_close(plain); /* a plain context is just closed and freed */
    mbsc_modbus_close(NULL);
    ck_assert_ptr_null(mbsc_modbus_connect("127.0.0.1:1", peers.scfg, 100, &err, why, sizeof why));
    ck_assert_int_eq(err, MBSC_ERR_INVALID_ARG);
    ck_assert_ptr_null(mbsc_modbus_connect(NULL, peers.mcfg, 100, &err, why, sizeof why));
    ck_assert_int_eq(err, MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_modbus_server_new(NULL, "127.0.0.1:0", peers.scfg, map, why, sizeof why),
                     MBSC_ERR_INVALID_ARG);
}
END_TEST

/* --- Many masters at once --------------------------------------------------------- */

#define NMASTERS  50
#define NREQUESTS 100

struct master_job {
    pthread_t thread;
    const char *addr;
    int index;
    int failures;
    char why[MBSC_WHY_SIZE];
};

static void *master_main(void *arg)
{
    struct master_job *j = arg;
    int err = 0, i, base = 100 + 10 * j->index;
    modbus_t *ctx = mbsc_modbus_connect(j->addr, peers.mcfg, LONG_MS, &err, j->why, sizeof j->why);

    if (ctx == NULL) {
        j->failures = NREQUESTS;
        return NULL;
    }
    (void)modbus_set_response_timeout(ctx, LONG_MS / 1000, 0); /* see slow_host_timeout */
    for (i = 0; i < NREQUESTS; i++) {
        uint16_t v[2] = {(uint16_t)(j->index * 1000 + i), (uint16_t)~i}, got[2] = {0, 0};

        /* Every other request writes, the others read back what was written. */
        if (i % 2 == 0) {
            if (modbus_write_registers(ctx, base, 2, v) != 2)
                j->failures++;
        } else {
            v[0] = (uint16_t)(j->index * 1000 + i - 1);
            v[1] = (uint16_t) ~(i - 1);
            if (modbus_read_registers(ctx, base, 2, got) != 2 || got[0] != v[0] || got[1] != v[1])
                j->failures++;
        }
    }
    mbsc_modbus_close(ctx);
    return NULL;
}

START_TEST(test_many_masters)
{
    static struct master_job jobs[NMASTERS];
    struct server_thread st;
    long long t0;
    int i;

    server_start(&st, peers.scfg);
    t0 = tu_now_ms();
    for (i = 0; i < NMASTERS; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].addr = st.addr;
        jobs[i].index = i;
        ck_assert_int_eq(pthread_create(&jobs[i].thread, NULL, master_main, &jobs[i]), 0);
    }
    for (i = 0; i < NMASTERS; i++) {
        ck_assert_int_eq(pthread_join(jobs[i].thread, NULL), 0);
        ck_assert_msg(jobs[i].failures == 0, "master %d: %d failures (%s)", i, jobs[i].failures,
                      jobs[i].why);
    }
    printf("check_modbus: %d masters x %d requests: %lld ms\n", NMASTERS, NREQUESTS,
           tu_now_ms() - t0);
    wait_count(&st, &st.closed, NMASTERS);
    server_finish(&st);
    ck_assert_uint_eq(st.connected, NMASTERS);
    ck_assert_uint_eq(st.requests, NMASTERS * NREQUESTS);
    ck_assert_uint_eq(st.closed_by[0], NMASTERS);
}
END_TEST

/* --- Refused masters ---------------------------------------------------------------- */

START_TEST(test_unknown_master_refused)
{
    struct server_thread st;
    mbsc_keypair stranger;
    mbsc_config *bad = mbsc_config_new(MBSC_ROLE_MASTER);
    char why[MBSC_WHY_SIZE];
    modbus_t *good, *ctx;
    int err = 0;

    ck_assert_ptr_nonnull(bad);
    ck_assert_int_eq(mbsc_keypair_generate(&stranger), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_keypair(bad, &stranger), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_peer_public_key(bad, peers.slave_kp.public_key), MBSC_OK);
    server_start(&st, peers.scfg);
    good = connect_ok(st.addr, peers.mcfg);
    exchange_ok(good, 5, 1);

    {
        char b64[MBSC_KEY_BASE64_SIZE];
        const char *first;
        int k;

        ck_assert_int_eq(mbsc_key_to_base64(b64, stranger.public_key), MBSC_OK);
        /* Three tries: the key is printed once, ready for the allow-list. */
        for (k = 0; k < 3; k++) {
            ctx = mbsc_modbus_connect(st.addr, bad, LONG_MS, &err, why, sizeof why);
            ck_assert_ptr_null(ctx);
            ck_assert_int_eq(err, MBSC_ERR_PEER_CLOSED);
        }
        WAIT_STATS(&st, st.stats.unknown_keys == 3);
        pthread_mutex_lock(&st.lock);
        first = strstr(st.all_logs, b64);
        ck_assert_msg(first != NULL, "logs: %s", st.all_logs);
        ck_assert_ptr_null(strstr(first + 1, b64));
        ck_assert_ptr_nonnull(strstr(st.all_logs, "allow-list"));
        pthread_mutex_unlock(&st.lock);
    }
    /* No per-connection event for a handshake that never confirmed. */
    ck_assert_uint_eq(st.closed, 0);

    exchange_ok(good, 5, 2); /* the others are still served */
    mbsc_modbus_close(good);
    wait_count(&st, &st.closed, 1);
    server_finish(&st);
    ck_assert_uint_eq(st.connected, 1);
    mbsc_config_free(bad);
    mbsc_keypair_wipe(&stranger);
}
END_TEST

START_TEST(test_max_connections)
{
    struct server_thread st;
    char why[MBSC_WHY_SIZE];
    modbus_t *a, *b, *c;
    int err = 0;

    server_new(&st, peers.scfg);
    ck_assert_int_eq(mbsc_modbus_server_set_max_connections(st.srv, 0), MBSC_ERR_INVALID_ARG);
    ck_assert_int_eq(mbsc_modbus_server_set_max_connections(st.srv, 2), MBSC_OK);
    ck_assert_int_eq(pthread_create(&st.thread, NULL, server_main, &st), 0);
    a = connect_ok(st.addr, peers.mcfg);
    b = connect_ok(st.addr, peers.mcfg);
    /* Served, so confirmed: a confirmed session is never evicted for a newcomer. */
    exchange_ok(a, 1, 1);
    exchange_ok(b, 2, 2);
    c = mbsc_modbus_connect(st.addr, peers.mcfg, LONG_MS, &err, why, sizeof why);
    ck_assert_ptr_null(c);
    ck_assert_int_eq(err, MBSC_ERR_PEER_CLOSED);
    WAIT_STATS(&st, st.stats.full == 1 && strstr(st.all_logs, "budget full") != NULL);
    ck_assert_uint_eq(st.closed, 0);
    exchange_ok(a, 1, 1);
    exchange_ok(b, 2, 2);
    mbsc_modbus_close(a);
    wait_count(&st, &st.closed, 1);
    a = connect_ok(st.addr, peers.mcfg); /* a slot is free again */
    exchange_ok(a, 3, 3);
    mbsc_modbus_close(a);
    mbsc_modbus_close(b);
    wait_count(&st, &st.closed, 3);
    server_finish(&st);
}
END_TEST

/* --- A slave that goes away ------------------------------------------------------ */

START_TEST(test_slave_gone)
{
    struct server_thread st;
    uint16_t regs[4];
    long long t0, took;
    modbus_t *ctx;

    server_start(&st, peers.scfg);
    ctx = connect_ok(st.addr, peers.mcfg);
    ck_assert_int_eq(modbus_set_response_timeout(ctx, 5, 0), 0);
    exchange_ok(ctx, 7, 77);
    server_finish(&st); /* closes every connection */

    t0 = tu_now_ms();
    ck_assert_int_eq(modbus_read_registers(ctx, 7, 1, regs), -1);
    took = tu_now_ms() - t0;
    ck_assert_msg(took < 1000, "the call took %lld ms (response timeout 5 s)", took);
    ck_assert_int_eq(mbsc_modbus_error(ctx), MBSC_ERR_PEER_CLOSED);
    /* Later calls fail at once too. */
    t0 = tu_now_ms();
    ck_assert_int_eq(modbus_write_register(ctx, 7, 1), -1);
    ck_assert_int_lt(tu_now_ms() - t0, 1000);
    ck_assert_int_eq(mbsc_modbus_error(ctx), MBSC_ERR_PEER_CLOSED);
    mbsc_modbus_close(ctx);
}
END_TEST

/* --- A relay between master and slave ---------------------------------------------- */

/*
 * A plain TCP forwarder.  It takes one master, connects it to the slave
 * and forwards both ways; it can corrupt one frame from the slave, or be
 * told to kill the connection.  After that it keeps accepting (and
 * counting) connections, so a test can see whether anything reconnects.
 */
struct relay {
    pthread_t thread;
    int lfd;
    char addr[MBSC_ADDRSTRLEN];
    char target[MBSC_ADDRSTRLEN];
    int ctl[2];     /* the test writes commands to ctl[0]; the relay answers */
    int flip_frame; /* slave->master frame whose first body byte is flipped; -1: none */
    atomic_int accepted;
    /* Frame parser of the slave->master direction. */
    uint8_t hdr[2];
    size_t hdr_have, body_left, body_seen;
    int frame_index;
};

static void relay_open(struct relay *r, const char *target, int flip_frame)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;

    memset(r, 0, sizeof *r);
    snprintf(r->target, sizeof r->target, "%s", target);
    r->flip_frame = flip_frame;
    r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(r->lfd, 0);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(0x7F000001);
    ck_assert_int_eq(bind(r->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(r->lfd, 16), 0);
    ck_assert_int_eq(getsockname(r->lfd, (struct sockaddr *)&sa, &len), 0);
    snprintf(r->addr, sizeof r->addr, "127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, r->ctl), 0);
}

/* Walk slave->master bytes; flip the first body byte of frame flip_frame. */
static void relay_inspect(struct relay *r, uint8_t *buf, size_t n)
{
    size_t i = 0;

    while (i < n) {
        size_t take;

        if (r->body_left == 0) {
            r->hdr[r->hdr_have++] = buf[i++];
            if (r->hdr_have == 2) {
                r->hdr_have = 0;
                r->body_left = ((size_t)r->hdr[0] << 8) | r->hdr[1];
                r->body_seen = 0;
                if (r->body_left == 0)
                    r->frame_index++;
            }
            continue;
        }
        take = r->body_left < n - i ? r->body_left : n - i;
        if (r->frame_index == r->flip_frame && r->body_seen == 0)
            buf[i] ^= 0x01;
        i += take;
        r->body_seen += take;
        r->body_left -= take;
        if (r->body_left == 0)
            r->frame_index++;
    }
}

/* Copy what is waiting on from to to; 0 at the end of either side. */
static int relay_copy(struct relay *r, int from, int to, int inspect)
{
    uint8_t buf[8192];
    ssize_t n = recv(from, buf, sizeof buf, 0);

    if (n <= 0)
        return 0;
    if (inspect)
        relay_inspect(r, buf, (size_t)n);
    return send(to, buf, (size_t)n, MSG_NOSIGNAL) == n;
}

/* Forward until a side closes or 'k' comes; returns the command if one came. */
static char relay_forward(struct relay *r, int m, int s)
{
    struct pollfd pf[3] = {{m, POLLIN, 0}, {s, POLLIN, 0}, {r->ctl[1], POLLIN, 0}};
    char cmd = 0;

    for (;;) {
        if (poll(pf, 3, -1) < 0)
            continue;
        if (pf[2].revents) {
            if (recv(r->ctl[1], &cmd, 1, 0) != 1)
                cmd = 'q';
            return cmd;
        }
        if (pf[0].revents && !relay_copy(r, m, s, 0))
            return 0;
        if (pf[1].revents && !relay_copy(r, s, m, 1))
            return 0;
    }
}

static void *relay_main(void *arg)
{
    struct relay *r = arg;
    struct pollfd pf[2] = {{r->lfd, POLLIN, 0}, {r->ctl[1], POLLIN, 0}};
    char cmd = 0;
    int m, s;

    /* The first connection is relayed. */
    if (poll(pf, 2, -1) != 1 || pf[1].revents)
        return NULL;
    m = accept(r->lfd, NULL, NULL);
    atomic_fetch_add(&r->accepted, 1);
    s = tu_raw_connect(r->target);
    if (m >= 0 && s >= 0)
        cmd = relay_forward(r, m, s);
    close(m);
    close(s);
    if (cmd == 'k')
        (void)send(r->ctl[1], "k", 1, MSG_NOSIGNAL); /* acknowledge: both are closed */
    /* Later ones are counted and dropped, until 'q'. */
    for (;;) {
        pf[0].revents = pf[1].revents = 0;
        if (poll(pf, 2, -1) < 0)
            continue;
        if (pf[1].revents)
            break;
        m = accept(r->lfd, NULL, NULL);
        atomic_fetch_add(&r->accepted, 1);
        close(m);
    }
    return NULL;
}

static void relay_start(struct relay *r, const char *target, int flip_frame)
{
    relay_open(r, target, flip_frame);
    ck_assert_int_eq(pthread_create(&r->thread, NULL, relay_main, r), 0);
}

/* Kill the relayed connection and wait until both sides are closed. */
static void relay_kill(struct relay *r)
{
    char ack = 0;

    ck_assert_int_eq(send(r->ctl[0], "k", 1, MSG_NOSIGNAL), 1);
    ck_assert_int_eq(recv(r->ctl[0], &ack, 1, 0), 1);
    ck_assert_int_eq(ack, 'k');
}

/* Stop the relay; returns how many connections it accepted in all. */
static int relay_finish(struct relay *r)
{
    int fl;

    ck_assert_int_eq(send(r->ctl[0], "q", 1, MSG_NOSIGNAL), 1);
    ck_assert_int_eq(pthread_join(r->thread, NULL), 0);
    /* Nothing may be waiting in the backlog either. */
    fl = fcntl(r->lfd, F_GETFL);
    ck_assert_int_eq(fcntl(r->lfd, F_SETFL, fl | O_NONBLOCK), 0);
    ck_assert_int_eq(accept(r->lfd, NULL, NULL), -1);
    ck_assert(errno == EAGAIN || errno == EWOULDBLOCK);
    close(r->lfd);
    close(r->ctl[0]);
    close(r->ctl[1]);
    return atomic_load(&r->accepted);
}

START_TEST(test_tampered_response)
{
    struct server_thread st;
    struct relay r;
    uint16_t regs[2];
    long long t0;
    modbus_t *ctx;

    server_start(&st, peers.scfg);
    /* Frame 0 from the slave is handshake message 2; frame 1 the first reply. */
    relay_start(&r, st.addr, 1);
    ctx = connect_ok(r.addr, peers.mcfg);
    ck_assert_int_eq(modbus_set_response_timeout(ctx, 5, 0), 0);
    t0 = tu_now_ms();
    ck_assert_int_eq(modbus_read_registers(ctx, 0, 2, regs), -1);
    ck_assert_int_lt(tu_now_ms() - t0, 1000);
    ck_assert_int_eq(mbsc_modbus_error(ctx), MBSC_ERR_BAD_TAG);
    mbsc_modbus_close(ctx);
    /* The relay sees the master close and closes the slave's side. */
    wait_count(&st, &st.closed, 1);
    ck_assert_int_eq(relay_finish(&r), 1);

    ctx = connect_ok(st.addr, peers.mcfg); /* the slave serves a new master */
    exchange_ok(ctx, 9, 99);
    mbsc_modbus_close(ctx);
    wait_count(&st, &st.closed, 2);
    server_finish(&st);
    ck_assert_uint_eq(st.connected, 2);
}
END_TEST

/*
 * MODBUS_ERROR_RECOVERY_LINK makes libmodbus close and reconnect by itself
 * after a link error.  The call must still fail, and no plaintext
 * connection may be made: not to the address the master used (the relay,
 * which counts connections), nor anywhere (modbus_connect fails).
 */
START_TEST(test_recovery_link_guard)
{
    struct server_thread st;
    struct relay r;
    uint16_t regs[2];
    long long t0, took;
    modbus_t *ctx;

    server_start(&st, peers.scfg);
    relay_start(&r, st.addr, -1);
    ctx = connect_ok(r.addr, peers.mcfg);
    ck_assert_int_eq(modbus_set_response_timeout(ctx, 2, 0), 0);
    exchange_ok(ctx, 3, 33);
    ck_assert_int_eq(modbus_set_error_recovery(ctx, MODBUS_ERROR_RECOVERY_LINK), 0);
    relay_kill(&r);

    t0 = tu_now_ms();
    ck_assert_int_eq(modbus_read_registers(ctx, 3, 1, regs), -1);
    took = tu_now_ms() - t0;
    ck_assert_msg(took < 1000, "the call took %lld ms", took);
    ck_assert_int_eq(mbsc_modbus_error(ctx), MBSC_ERR_PEER_CLOSED);
    /* libmodbus closed its socket and tried to reconnect, in vain. */
    ck_assert_int_eq(modbus_get_socket(ctx), -1);
    ck_assert_int_eq(modbus_connect(ctx), -1);
    ck_assert_int_eq(modbus_get_socket(ctx), -1);
    ck_assert_int_eq(relay_finish(&r), 1);
    mbsc_modbus_close(ctx);
    wait_count(&st, &st.closed, 1);
    server_finish(&st);
}
END_TEST

/* --- Hostile masters ------------------------------------------------------------------ */

/* A master on the session API, for payloads libmodbus would never send. */
static mbsc_conn *secure_master(const char *addr)
{
    char why[MBSC_WHY_SIZE];
    mbsc_conn *c = NULL;

    ck_assert_msg(mbsc_connect(addr, peers.mcfg, LONG_MS, &c, why, sizeof why) == MBSC_OK, "%s",
                  why);
    return c;
}

/*
 * Send one payload and expect the slave to hang up, reporting err.
 * Returns the milliseconds from the send to the hang-up.
 */
static long long expect_rejected(struct server_thread *st, const uint8_t *payload, size_t len,
                                 int err, const char *detail)
{
    uint8_t buf[300];
    size_t got;
    unsigned before = closed_by(st, err);
    mbsc_conn *c = secure_master(st->addr);
    long long t0 = tu_now_ms(), took;

    ck_assert_int_eq(mbsc_conn_send(c, payload, len, LONG_MS), MBSC_OK);
    ck_assert_int_eq(mbsc_conn_recv(c, buf, sizeof buf, &got, LONG_MS), MBSC_ERR_PEER_CLOSED);
    took = tu_now_ms() - t0;
    mbsc_conn_close(c);
    wait_count(st, &st->closed_by[-err], before + 1);
    pthread_mutex_lock(&st->lock);
    ck_assert_msg(strstr(st->last_detail, detail) != NULL, "detail '%s'", st->last_detail);
    pthread_mutex_unlock(&st->lock);
    return took;
}

/* Send one request and expect an exception reply with code; the session stays up. */
static long long expect_exception(struct server_thread *st, const uint8_t *req, size_t len,
                                  uint8_t code)
{
    static const uint8_t read_one[] = {0, 9, 0, 0, 0, 6, 0xFF, 0x03, 0x00, 0x00, 0x00, 0x01};
    uint8_t buf[300];
    size_t got;
    unsigned before = st->closed;
    mbsc_conn *c = secure_master(st->addr);
    long long t0 = tu_now_ms(), took;

    ck_assert_int_eq(mbsc_conn_send(c, req, len, LONG_MS), MBSC_OK);
    ck_assert_int_eq(mbsc_conn_recv(c, buf, sizeof buf, &got, LONG_MS), MBSC_OK);
    took = tu_now_ms() - t0;
    ck_assert_uint_eq(got, 9);
    ck_assert(memcmp(buf, req, 4) == 0); /* transaction and protocol ids */
    ck_assert_uint_eq(buf[5], 3);
    ck_assert_uint_eq(buf[7], req[7] | 0x80);
    ck_assert_uint_eq(buf[8], code);
    /* Still served afterwards. */
    ck_assert_int_eq(mbsc_conn_send(c, read_one, sizeof read_one, LONG_MS), MBSC_OK);
    ck_assert_int_eq(mbsc_conn_recv(c, buf, sizeof buf, &got, LONG_MS), MBSC_OK);
    ck_assert_uint_eq(got, 11);
    mbsc_conn_close(c);
    wait_count(st, &st->closed, before + 1);
    return took;
}

START_TEST(test_malformed_adu)
{
    /* MBAP length 5 for 6 bytes after it. */
    static const uint8_t bad_length[] = {0, 1, 0, 0, 0, 5, 0xFF, 3, 0, 0, 0, 1};
    static const uint8_t bad_protocol[] = {0, 1, 0, 7, 0, 6, 0xFF, 3, 0, 0, 0, 1};
    /*
     * Write multiple registers announcing 10 data bytes in a 13-byte ADU
     * (libmodbus waits for them), or 200 (more than any ADU).
     */
    static const uint8_t short_pdu[] = {0, 1, 0, 0, 0, 7, 0xFF, 0x10, 0, 0, 0, 5, 10};
    static const uint8_t huge_pdu[] = {0, 1, 0, 0, 0, 7, 0xFF, 0x10, 0, 0, 0, 100, 200};
    uint8_t too_long[300];
    struct server_thread st;
    modbus_t *ctx;
    long long took;

    memset(too_long, 0, sizeof too_long);
    too_long[5] = (uint8_t)(sizeof too_long - 6); /* consistent MBAP, but > 260 bytes */
    too_long[4] = (uint8_t)((sizeof too_long - 6) >> 8);
    /* Sessions that carry 4080-byte payloads, so that the ADU check itself
     * sees the long one (the default limit, 260, would fail its frame first,
     * see check_session's frame_above_configured_maximum). */
    ck_assert_int_eq(mbsc_config_set_max_payload(peers.scfg, MBSC_MAX_PAYLOAD), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_max_payload(peers.mcfg, MBSC_MAX_PAYLOAD), MBSC_OK);
    server_start(&st, peers.scfg);
    ctx = connect_ok(st.addr, peers.mcfg); /* a well-behaved master alongside */

    expect_rejected(&st, bad_length, sizeof bad_length, MBSC_ERR_BAD_ADU, "MBAP");
    expect_rejected(&st, bad_protocol, sizeof bad_protocol, MBSC_ERR_BAD_ADU, "MBAP");
    expect_rejected(&st, too_long, sizeof too_long, MBSC_ERR_BAD_ADU, "longer");
    /*
     * A well-framed ADU whose PDU breaks its function's rules is answered
     * with exception 03 (Illegal Data Value) before libmodbus sees it, and
     * the session goes on.
     */
    took = expect_exception(&st, short_pdu, sizeof short_pdu, MODBUS_EXCEPTION_ILLEGAL_DATA_VALUE);
    ck_assert_int_lt(took, 400);
    expect_exception(&st, huge_pdu, sizeof huge_pdu, MODBUS_EXCEPTION_ILLEGAL_DATA_VALUE);

    exchange_ok(ctx, 4, 44); /* the server goes on */
    mbsc_modbus_close(ctx);
    wait_count(&st, &st.closed, 6);
    server_finish(&st);
}
END_TEST

/*
 * Payloads libmodbus answers without reading all of them (an unknown
 * function code with data, bytes after a complete PDU), keep-alives, and
 * pipelined requests: the replies come in order and nothing is left behind
 * for the next request.
 */
START_TEST(test_session_master_extras)
{
    /* 0x41 is a user-defined code (MAP 5.1): no rule of the table, libmodbus answers 01. */
    static const uint8_t unknown_fc[] = {0, 1, 0, 0, 0, 6, 0xFF, 0x41, 0x0E, 0x01, 0x00, 0x00};
    static const uint8_t read_two[] = {0, 2, 0, 0, 0, 6, 0xFF, 0x03, 0x00, 0x08, 0x00, 0x02};
    static const uint8_t read_one[] = {0, 3, 0, 0, 0, 6, 0x01, 0x03, 0x00, 0x09, 0x00, 0x01};
    /* Two bytes after a complete PDU: libmodbus reads the PDU only. */
    static const uint8_t trailing[] = {0,    4,    0,    0,    0,    8,    0xFF,
                                       0x03, 0x00, 0x08, 0x00, 0x01, 0xEE, 0xEE};
    struct server_thread st;
    uint8_t buf[300];
    long long t0;
    size_t got;
    mbsc_conn *c;
    int i;

    map->tab_registers[8] = 0x0102;
    map->tab_registers[9] = 0x0304;
    server_start(&st, peers.scfg);
    c = secure_master(st.addr);
    ck_assert_int_eq(mbsc_conn_send(c, NULL, 0, LONG_MS), MBSC_OK); /* keep-alive */
    ck_assert_int_eq(mbsc_conn_send(c, unknown_fc, sizeof unknown_fc, LONG_MS), MBSC_OK);
    ck_assert_int_eq(mbsc_conn_send(c, read_two, sizeof read_two, LONG_MS), MBSC_OK);
    ck_assert_int_eq(mbsc_conn_send(c, NULL, 0, LONG_MS), MBSC_OK);
    ck_assert_int_eq(mbsc_conn_send(c, trailing, sizeof trailing, LONG_MS), MBSC_OK);
    ck_assert_int_eq(mbsc_conn_send(c, read_one, sizeof read_one, LONG_MS), MBSC_OK);

    /* Illegal function exception, transaction id 1. */
    ck_assert_int_eq(mbsc_conn_recv(c, buf, sizeof buf, &got, LONG_MS), MBSC_OK);
    ck_assert_uint_eq(got, 9);
    ck_assert_uint_eq(buf[1], 1);
    ck_assert_uint_eq(buf[7], 0x41 | 0x80);
    ck_assert_uint_eq(buf[8], MODBUS_EXCEPTION_ILLEGAL_FUNCTION);
    ck_assert_int_eq(mbsc_conn_recv(c, buf, sizeof buf, &got, LONG_MS), MBSC_OK);
    ck_assert_uint_eq(got, 13);
    ck_assert_uint_eq(buf[1], 2);
    ck_assert_uint_eq(buf[9], 0x01);
    ck_assert_uint_eq(buf[12], 0x04);
    /* Bytes after a complete PDU break its rules: exception 03, nothing carried over. */
    ck_assert_int_eq(mbsc_conn_recv(c, buf, sizeof buf, &got, LONG_MS), MBSC_OK);
    ck_assert_uint_eq(got, 9);
    ck_assert_uint_eq(buf[1], 4);
    ck_assert_uint_eq(buf[7], 0x83);
    ck_assert_uint_eq(buf[8], MODBUS_EXCEPTION_ILLEGAL_DATA_VALUE);
    ck_assert_int_eq(mbsc_conn_recv(c, buf, sizeof buf, &got, LONG_MS), MBSC_OK);
    ck_assert_uint_eq(got, 11);
    ck_assert_uint_eq(buf[1], 3);
    ck_assert_uint_eq(buf[6], 0x01); /* unit id echoed */
    ck_assert_uint_eq(buf[9], 0x03);
    ck_assert_uint_eq(buf[10], 0x04);

    /*
     * libmodbus answers an unknown function code after "flushing", which
     * first sleeps for the context's response timeout (0.5 s by default):
     * the checks before modbus_reply() answer it themselves, at once.
     */
    t0 = tu_now_ms();
    for (i = 0; i < 10; i++) {
        ck_assert_int_eq(mbsc_conn_send(c, unknown_fc, sizeof unknown_fc, LONG_MS), MBSC_OK);
        ck_assert_int_eq(mbsc_conn_recv(c, buf, sizeof buf, &got, LONG_MS), MBSC_OK);
        ck_assert_uint_eq(got, 9);
    }
    ck_assert_int_lt(tu_now_ms() - t0, 2500);
    mbsc_conn_close(c);
    wait_count(&st, &st.closed, 1);
    server_finish(&st);
    ck_assert_uint_eq(st.requests, 14);
    ck_assert_uint_eq(st.closed_by[0], 1);
}
END_TEST

/*
 * A master that sends requests and never reads the replies: once its
 * socket is full, the server stops reading it (TCP pushes back on the
 * flooder) and keeps serving the others.
 */
START_TEST(test_request_flood)
{
    static const uint8_t req[] = {0, 1, 0, 0, 0, 6, 0xFF, 0x03, 0x00, 0x00, 0x00, 0x01};
    struct server_thread st;
    int small = 4096, n = 0, i, r;
    mbsc_conn *flood;
    modbus_t *ctx;

    server_start(&st, peers.scfg);
    flood = secure_master(st.addr);
    /* Small buffers on the flooder's side keep the flood short. */
    ck_assert_int_eq(setsockopt(mbsc_conn_fd(flood), SOL_SOCKET, SO_RCVBUF, &small, sizeof small),
                     0);
    ck_assert_int_eq(setsockopt(mbsc_conn_fd(flood), SOL_SOCKET, SO_SNDBUF, &small, sizeof small),
                     0);
    ctx = connect_ok(st.addr, peers.mcfg);
    /* TIMEOUT: queued, not all sent yet; WOULD_BLOCK: nothing more fits anywhere. */
    while ((r = mbsc_conn_send(flood, req, sizeof req, 0)) == MBSC_OK || r == MBSC_ERR_TIMEOUT)
        n++;
    ck_assert_int_eq(r, MBSC_ERR_WOULD_BLOCK);
    printf("check_modbus: the flooder stalled after %d requests\n", n);
    for (i = 0; i < 20; i++)
        exchange_ok(ctx, 60, (uint16_t)i);
    mbsc_conn_close(flood);
    mbsc_modbus_close(ctx);
    wait_count(&st, &st.closed, 2);
    server_finish(&st);
}
END_TEST

/*
 * Garbage, an oversized length, half a handshake and silent clients, all
 * at once, while a real master is served: each is closed with its reason
 * and none delays the others.
 */
START_TEST(test_hostile_clients)
{
    static const uint8_t huge[] = {0xFF, 0xFF, 1, 2, 3};
    uint8_t garbage[200], msg1[512];
    struct server_thread st;
    int fds[4], i;
    size_t n1;
    modbus_t *ctx;
    long long t0;

    ck_assert_int_eq(mbsc_config_set_handshake_timeout(peers.scfg, 300), MBSC_OK);
    tu_fill_pattern(garbage, sizeof garbage, 7);
    garbage[0] = 0x00; /* a plausible length: the body fails as a handshake */
    garbage[1] = 0x60;
    n1 = tu_message1(peers.mcfg, msg1, sizeof msg1);
    server_start(&st, peers.scfg);
    for (i = 0; i < 4; i++) {
        fds[i] = tu_raw_connect(st.addr);
        ck_assert_int_ge(fds[i], 0);
    }
    t0 = tu_now_ms();
    ck_assert_int_eq(send(fds[0], garbage, sizeof garbage, MSG_NOSIGNAL), (ssize_t)sizeof garbage);
    ck_assert_int_eq(send(fds[1], huge, sizeof huge, MSG_NOSIGNAL), (ssize_t)sizeof huge);
    ck_assert_int_eq(send(fds[2], msg1, n1 / 2, MSG_NOSIGNAL), (ssize_t)(n1 / 2));
    /* fds[3] says nothing at all. */
    ctx = connect_ok(st.addr, peers.mcfg);
    for (i = 0; i < 20; i++)
        exchange_ok(ctx, 10 + i, (uint16_t)i);
    ck_assert_int_lt(tu_now_ms() - t0, 300 + 1000);
    /* The two silent ones run out of time; garbage and the huge length fail at once. */
    WAIT_STATS(&st, st.stats.timed_out == 2 && st.stats.bad_handshakes == 2);
    ck_assert_uint_eq(st.closed, 0); /* counted, not reported one by one */
    ck_assert_ptr_nonnull(strstr(st.all_logs, "handshake timeout"));
    exchange_ok(ctx, 1, 1); /* unaffected */
    server_stop(&st);       /* the server is not thread-safe: query it from its own thread */
    ck_assert_uint_eq(mbsc_modbus_server_connections(st.srv), 1);
    for (i = 0; i < 4; i++)
        close(fds[i]);
    mbsc_modbus_close(ctx);
    server_free(&st);
}
END_TEST

/* A master that hangs up at every byte of its handshake message. */
START_TEST(test_disconnect_mid_handshake)
{
    uint8_t msg1[512];
    struct server_thread st;
    size_t n1, cut;
    modbus_t *ctx;

    n1 = tu_message1(peers.mcfg, msg1, sizeof msg1);
    server_start(&st, peers.scfg);
    for (cut = 0; cut < n1; cut++) {
        int fd = tu_raw_connect(st.addr);

        ck_assert_int_ge(fd, 0);
        if (cut > 0)
            ck_assert_int_eq(send(fd, msg1, cut, MSG_NOSIGNAL), (ssize_t)cut);
        close(fd);
    }
    /* Closed early, or evicted first when they came faster than they were read. */
    WAIT_STATS(&st, st.stats.refused == n1 && st.stats.closed_early + st.stats.evicted == n1);
    ck_assert_uint_eq(st.connected, 0);
    ck_assert_uint_eq(st.closed, 0);
    ctx = connect_ok(st.addr, peers.mcfg);
    exchange_ok(ctx, 1, 2);
    mbsc_modbus_close(ctx);
    wait_count(&st, &st.closed, 1);
    server_finish(&st);
}
END_TEST

/* --- A scripted slave on the connection API ----------------------------------------- */

enum slave_script { SCRIPT_KEEPALIVE, SCRIPT_BAD_MBAP, SCRIPT_TOO_LONG };

struct scripted_slave {
    pthread_t thread;
    mbsc_listener *l;
    char addr[MBSC_ADDRSTRLEN];
    enum slave_script script;
    int rc;
};

/* The reply to a "read 1 holding register" request. */
static size_t read_reply(const uint8_t *req, uint8_t *rsp)
{
    memcpy(rsp, req, 4); /* transaction and protocol ids */
    rsp[4] = 0;
    rsp[5] = 5;
    rsp[6] = req[6];
    rsp[7] = 0x03;
    rsp[8] = 2;
    rsp[9] = 0xAB;
    rsp[10] = 0xCD;
    return 11;
}

static void *scripted_slave_main(void *arg)
{
    struct scripted_slave *ss = arg;
    uint8_t req[300], rsp[300];
    size_t len, n;
    mbsc_conn *c = NULL;

    ss->rc = mbsc_accept(ss->l, peers.scfg, LONG_MS, &c, NULL, 0);
    if (ss->rc != MBSC_OK)
        return NULL;
    ss->rc = mbsc_conn_recv(c, req, sizeof req, &len, LONG_MS);
    if (ss->rc == MBSC_OK) {
        n = read_reply(req, rsp);
        if (ss->script == SCRIPT_KEEPALIVE) {
            ss->rc = mbsc_conn_send(c, NULL, 0, LONG_MS);
        } else if (ss->script == SCRIPT_BAD_MBAP) {
            rsp[5] = 9;
        } else {
            memset(rsp + n, 0, sizeof rsp - n);
            n = sizeof rsp;
        }
        if (ss->rc == MBSC_OK)
            ss->rc = mbsc_conn_send(c, rsp, n, LONG_MS);
    }
    /* Wait for the master to hang up. */
    if (ss->rc == MBSC_OK)
        ss->rc = mbsc_conn_recv(c, req, sizeof req, &len, LONG_MS);
    mbsc_conn_close(c);
    return NULL;
}

static void scripted_slave_run(enum slave_script script, int want_rc, int want_err)
{
    struct scripted_slave ss;
    uint16_t reg = 0;
    modbus_t *ctx;

    memset(&ss, 0, sizeof ss);
    ss.script = script;
    ck_assert_int_eq(mbsc_listen("127.0.0.1:0", &ss.l, NULL, 0), MBSC_OK);
    ck_assert_int_eq(mbsc_listener_address(ss.l, ss.addr, sizeof ss.addr), MBSC_OK);
    ck_assert_int_eq(pthread_create(&ss.thread, NULL, scripted_slave_main, &ss), 0);
    ctx = connect_ok(ss.addr, peers.mcfg);
    ck_assert_int_eq(modbus_set_response_timeout(ctx, 5, 0), 0);
    ck_assert_int_eq(modbus_read_registers(ctx, 0, 1, &reg), want_rc);
    if (want_rc == 1)
        ck_assert_uint_eq(reg, 0xABCD);
    ck_assert_int_eq(mbsc_modbus_error(ctx), want_err);
    mbsc_modbus_close(ctx);
    ck_assert_int_eq(pthread_join(ss.thread, NULL), 0);
    ck_assert_int_eq(ss.rc, MBSC_ERR_PEER_CLOSED);
    mbsc_listener_close(ss.l);
}

START_TEST(test_slave_keepalive_ignored)
{
    scripted_slave_run(SCRIPT_KEEPALIVE, 1, MBSC_OK);
}
END_TEST

START_TEST(test_slave_bad_mbap)
{
    scripted_slave_run(SCRIPT_BAD_MBAP, -1, MBSC_ERR_BAD_ADU);
}
END_TEST

/*
 * A 300-byte reply: a master with the default limit (260) fails it by its
 * frame length, before reading it; one configured for 4080-byte payloads
 * opens it and the ADU check refuses it.
 */
START_TEST(test_slave_too_long)
{
    ck_assert_int_eq(mbsc_config_set_max_payload(peers.scfg, MBSC_MAX_PAYLOAD), MBSC_OK);
    if (_i == 1)
        ck_assert_int_eq(mbsc_config_set_max_payload(peers.mcfg, MBSC_MAX_PAYLOAD), MBSC_OK);
    scripted_slave_run(SCRIPT_TOO_LONG, -1, _i == 0 ? MBSC_ERR_FRAME_LENGTH : MBSC_ERR_BAD_ADU);
}
END_TEST

/* --- Resources -------------------------------------------------------------------------- */

START_TEST(test_no_leaks_over_cycles)
{
    struct server_thread st;
    long fds0, tasks0;
    long long t0, took;
    modbus_t *ctx;
    int i;

    server_start(&st, peers.scfg);
    fds0 = tu_count_dir("/proc/self/fd");
    tasks0 = tu_count_dir("/proc/self/task");
    t0 = tu_now_ms();
    for (i = 0; i < 1000; i++) {
        ctx = connect_ok(st.addr, peers.mcfg);
        if (i % 100 == 0)
            exchange_ok(ctx, 1, (uint16_t)i);
        if (i % 10 == 0) {
            modbus_close(ctx); /* plain libmodbus: the pump cleans up alone */
            modbus_free(ctx);
        } else {
            mbsc_modbus_close(ctx);
        }
    }
    took = tu_now_ms() - t0;
    printf("check_modbus: 1000 connect/close cycles: %lld ms\n", took);
    /*
     * Once the slave has seen every close, every pump is finished or about
     * to be, and the next connect joins them.
     */
    wait_count(&st, &st.closed, 1000);
    ctx = connect_ok(st.addr, peers.mcfg);
    mbsc_modbus_close(ctx);
    wait_count(&st, &st.closed, 1001);
    ck_assert_int_eq(tu_count_dir("/proc/self/fd"), fds0);
    ck_assert_int_eq(settled_task_count(tasks0), tasks0);
    server_finish(&st);
    ck_assert_uint_eq(st.closed_by[0], 1001);
}
END_TEST

/*
 * libmodbus select()s on its socket: a pair descriptor >= FD_SETSIZE is
 * refused, before any network traffic.
 */
START_TEST(test_fd_setsize_guard)
{
    char why[MBSC_WHY_SIZE];
    mbsc_modbus_server *srv = NULL;
    int *fillers, nfill = 0, fd, err = 0;
    long fds0;

    if (!tu_fds_past_setsize("check_modbus"))
        return;
    fds0 = tu_count_dir("/proc/self/fd");

    /*
     * Use every descriptor below FD_SETSIZE: the pump's pair and the
     * synchronous path's TCP socket would both be above it.
     */
    fillers = calloc(FD_SETSIZE, sizeof *fillers);
    ck_assert_ptr_nonnull(fillers);
    while ((fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0 && fd < FD_SETSIZE)
        fillers[nfill++] = fd;
    ck_assert_int_eq(fd, FD_SETSIZE);
    close(fd);

    ck_assert_ptr_null(
        mbsc_modbus_connect("127.0.0.1:1", peers.mcfg, LONG_MS, &err, why, sizeof why));
    ck_assert_int_eq(err, MBSC_ERR_FD_LIMIT);
    ck_assert_ptr_nonnull(strstr(why, "FD_SETSIZE"));
    ck_assert_int_eq(mbsc_modbus_server_new(&srv, "127.0.0.1:0", peers.scfg, map, why, sizeof why),
                     MBSC_ERR_FD_LIMIT);
    ck_assert_ptr_null(srv);
    ck_assert_ptr_nonnull(strstr(why, "FD_SETSIZE"));

    while (nfill > 0)
        close(fillers[--nfill]);
    free(fillers);
    ck_assert_int_eq(tu_count_dir("/proc/self/fd"), fds0);
}
END_TEST

/* --- Driving the server from the caller's own loop, and stop() ------------------------ */

struct client_job {
    pthread_t thread;
    const char *addr;
    int failures;
};

static void *client_job_main(void *arg)
{
    struct client_job *j = arg;
    modbus_t *ctx = mbsc_modbus_connect(j->addr, peers.mcfg, LONG_MS, NULL, NULL, 0);
    uint16_t v;
    int i;

    if (ctx == NULL) {
        j->failures = 1;
        return NULL;
    }
    (void)modbus_set_response_timeout(ctx, LONG_MS / 1000, 0);
    for (i = 0; i < 20; i++) {
        if (modbus_write_register(ctx, 50, (uint16_t)i) != 1 ||
            modbus_read_registers(ctx, 50, 1, &v) != 1 || v != i)
            j->failures++;
    }
    mbsc_modbus_close(ctx);
    return NULL;
}

START_TEST(test_external_loop)
{
    struct server_thread st;
    struct client_job job;
    struct pollfd pfds[16];
    size_t n;

    server_new(&st, peers.scfg);
    memset(&job, 0, sizeof job);
    job.addr = st.addr;
    ck_assert_int_eq(mbsc_modbus_server_next_timeout(st.srv), -1);
    ck_assert_int_eq(pthread_create(&job.thread, NULL, client_job_main, &job), 0);
    while (st.closed == 0) { /* only this thread changes it */
        n = mbsc_modbus_server_fds(st.srv, pfds, 16);
        ck_assert_uint_le(n, 16);
        ck_assert_int_ge(poll(pfds, n, mbsc_modbus_server_next_timeout(st.srv)), 0);
        ck_assert_int_eq(mbsc_modbus_server_step(st.srv, 0), MBSC_OK);
    }
    ck_assert_int_eq(pthread_join(job.thread, NULL), 0);
    ck_assert_int_eq(job.failures, 0);
    ck_assert_uint_eq(st.requests, 40);
    ck_assert_uint_eq(mbsc_modbus_server_connections(st.srv), 0);
    server_free(&st);
}
END_TEST

static mbsc_modbus_server *signal_target;

static void on_sigusr1(int sig)
{
    (void)sig;
    mbsc_modbus_server_stop(signal_target);
}

/* stop() from a signal handler, in the thread blocked in run(). */
START_TEST(test_stop_from_signal)
{
    struct server_thread st;
    struct sigaction sa;
    modbus_t *ctx;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigusr1;
    sigemptyset(&sa.sa_mask);
    ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
    server_start(&st, peers.scfg);
    signal_target = st.srv;
    ctx = connect_ok(st.addr, peers.mcfg); /* the loop is running */
    exchange_ok(ctx, 1, 1);
    ck_assert_int_eq(pthread_kill(st.thread, SIGUSR1), 0);
    ck_assert_int_eq(pthread_join(st.thread, NULL), 0);
    ck_assert_int_eq(st.run_rc, MBSC_OK);
    /* run() can be called again after a stop. */
    ck_assert_int_eq(pthread_create(&st.thread, NULL, server_main, &st), 0);
    exchange_ok(ctx, 1, 2);
    mbsc_modbus_close(ctx);
    wait_count(&st, &st.closed, 1);
    server_finish(&st);
}
END_TEST

/* --- Suite ------------------------------------------------------------------------------ */

static TCase *tcase(Suite *s, const char *name)
{
    TCase *tc = tcase_create(name);

    tcase_add_checked_fixture(tc, setup, teardown);
    suite_add_tcase(s, tc);
    return tc;
}

/* --- Checks before modbus_reply() ------------------------------------------------- */

struct pdu_case {
    const char *what;
    uint8_t pdu[24];
    size_t len;
    uint8_t exception; /* 0: passed on to modbus_reply() */
};

/* Modbus Application Protocol v1.1b3, section 6: one row per rule. */
static const struct pdu_case pdu_cases[] = {
    {"read coils: 1 bit", {0x01, 0, 0, 0, 1}, 5, 0},
    {"read coils: 2000 bits", {0x01, 0, 0, 0x07, 0xD0}, 5, 0},
    {"read coils: 0 bits", {0x01, 0, 0, 0, 0}, 5, 3},
    {"read coils: 2001 bits", {0x01, 0, 0, 0x07, 0xD1}, 5, 3},
    {"read coils: one byte short", {0x01, 0, 0, 0}, 4, 3},
    {"read inputs: trailing byte", {0x02, 0, 0, 0, 1, 0}, 6, 3},
    {"read registers: 125", {0x03, 0, 0, 0, 125}, 5, 0},
    {"read registers: 126", {0x03, 0, 0, 0, 126}, 5, 3},
    {"read input registers: 0", {0x04, 0, 0, 0, 0}, 5, 3},
    {"write coil: on", {0x05, 0, 1, 0xFF, 0}, 5, 0},
    {"write coil: off", {0x05, 0, 1, 0, 0}, 5, 0},
    {"write coil: 0x1234", {0x05, 0, 1, 0x12, 0x34}, 5, 3},
    {"write register", {0x06, 0, 1, 0xAB, 0xCD}, 5, 0},
    {"write register: short", {0x06, 0, 1, 0xAB}, 4, 3},
    {"write coils: 9 bits in 2 bytes", {0x0F, 0, 0, 0, 9, 2, 0xFF, 0x01}, 8, 0},
    {"write coils: 9 bits in 1 byte", {0x0F, 0, 0, 0, 9, 1, 0xFF}, 7, 3},
    {"write coils: byte count past the end", {0x0F, 0, 0, 0, 9, 2, 0xFF}, 7, 3},
    {"write coils: 0 bits", {0x0F, 0, 0, 0, 0, 0}, 6, 3},
    {"write coils: header only", {0x0F, 0, 0, 0, 9}, 5, 3},
    {"write registers: 2", {0x10, 0, 0, 0, 2, 4, 0, 1, 0, 2}, 10, 0},
    {"write registers: count 3 for 2", {0x10, 0, 0, 0, 2, 3, 0, 1, 0}, 9, 3},
    {"write registers: 10 bytes announced, 2 sent", {0x10, 0, 0, 0, 5, 10, 0, 1}, 8, 3},
    {"write registers: 124", {0x10, 0, 0, 0, 124, 248}, 6, 3},
    {"report slave id", {0x11}, 1, 0},
    {"report slave id: with data", {0x11, 0}, 2, 3},
    {"mask write", {0x16, 0, 1, 0xFF, 0x00, 0x00, 0x12}, 7, 0},
    {"mask write: short", {0x16, 0, 1, 0xFF, 0x00, 0x00}, 6, 3},
    {"read/write: 1 and 1", {0x17, 0, 0, 0, 1, 0, 1, 0, 1, 2, 0, 7}, 12, 0},
    {"read/write: write count 2 for 1", {0x17, 0, 0, 0, 1, 0, 1, 0, 1, 1, 7}, 11, 3},
    {"read/write: 122 written", {0x17, 0, 0, 0, 1, 0, 1, 0, 122, 244}, 10, 3},
    {"read/write: 126 read", {0x17, 0, 0, 0, 126, 0, 1, 0, 1, 2, 0, 7}, 12, 3},
    {"read/write: read past the end", {0x17, 0x07, 0xCF, 0, 2, 0, 1, 0, 1, 2, 0, 7}, 12, 2},
    {"read/write: write past the end", {0x17, 0, 0, 0, 1, 0x07, 0xD0, 0, 1, 2, 0, 7}, 12, 2},
    {"read exception status (not implemented)", {0x07}, 1, 1},
    {"diagnostics", {0x08, 0, 0, 0x12, 0x34}, 5, 1},
    {"device identification", {0x2B, 0x0E, 1, 0}, 4, 1},
    {"user function 0x41", {0x41}, 1, 1},
};

START_TEST(test_request_rules)
{
    const struct pdu_case *c = &pdu_cases[_i];
    uint8_t adu[8 + 24];
    size_t len = 7 + c->len;

    adu[0] = 0x12;
    adu[1] = 0x34;
    adu[2] = adu[3] = 0;
    adu[4] = (uint8_t)((c->len + 1) >> 8);
    adu[5] = (uint8_t)(c->len + 1);
    adu[6] = 1;
    memcpy(adu + 7, c->pdu, c->len);
    ck_assert_int_eq(mbsc_modbus_check_adu(adu, len), MBSC_OK);
    ck_assert_msg(mb_check_request(adu, len, map) == c->exception, "%s: got exception %u", c->what,
                  (unsigned)mb_check_request(adu, len, map));
}
END_TEST

/*
 * CVE-2022-0367: libmodbus 3.1.6 checks the write range of a 0x17 request
 * with the read range's start, so a write address below the mapping's
 * start writes below its table.  The check before modbus_reply() refuses
 * both ranges on their own, with start addresses and at every edge.
 */
START_TEST(test_0x17_ranges_against_mapping)
{
    /* Holding registers 100..109 only. */
    modbus_mapping_t *m = modbus_mapping_new_start_address(0, 0, 0, 0, 100, 10, 0, 0);
    uint8_t adu[7 + 12] = {0, 1, 0, 0, 0, 13, 1, 0x17};
    static const struct {
        unsigned read_at, read_n, write_at, write_n;
        uint8_t exception;
    } cases[] = {
        {100, 10, 100, 10, 0}, {100, 1, 109, 1, 0}, {109, 1, 100, 1, 0},
        {100, 1, 0, 1, 2}, /* the CVE: write below the start, read inside */
        {100, 1, 99, 1, 2},    {100, 1, 109, 2, 2}, {99, 1, 100, 1, 2},
        {100, 11, 100, 1, 2},  {110, 1, 100, 1, 2}, {100, 1, 65535, 1, 2},
    };
    size_t i;

    ck_assert_ptr_nonnull(m);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t *p = adu + 7;
        size_t len;

        p[1] = (uint8_t)(cases[i].read_at >> 8);
        p[2] = (uint8_t)cases[i].read_at;
        p[3] = 0;
        p[4] = (uint8_t)cases[i].read_n;
        p[5] = (uint8_t)(cases[i].write_at >> 8);
        p[6] = (uint8_t)cases[i].write_at;
        p[7] = 0;
        p[8] = (uint8_t)cases[i].write_n;
        p[9] = (uint8_t)(2 * cases[i].write_n);
        len = 7 + 10 + p[9];
        memset(p + 10, 0x5A, 2 * cases[i].write_n <= 2 ? 2 * cases[i].write_n : 2);
        if (len > sizeof adu) {
            /* 10 written registers need 20 bytes: a bigger buffer. */
            uint8_t big[7 + 10 + 20];

            memcpy(big, adu, 7 + 10);
            memset(big + 17, 0x5A, 20);
            mbsc_store16_be(big + 4, (uint16_t)(len - 6));
            ck_assert_uint_eq(mb_check_request(big, len, m), cases[i].exception);
            continue;
        }
        mbsc_store16_be(adu + 4, (uint16_t)(len - 6));
        ck_assert_msg(mb_check_request(adu, len, m) == cases[i].exception, "case %zu: got %u", i,
                      (unsigned)mb_check_request(adu, len, m));
    }
    modbus_mapping_free(m);
}
END_TEST

/* End to end: the slave answers broken requests itself and keeps the session. */
START_TEST(test_request_rules_end_to_end)
{
    static const uint8_t bad_count[] = {0, 7, 0, 0, 0, 6, 1, 0x03, 0, 0, 0, 126};
    static const uint8_t no_such_fc[] = {0, 8, 0, 0, 0, 2, 1, 0x07};
    static const uint8_t rw_outside[] = {0, 9, 0,    0,    0, 13, 1, 0x17, 0, 0,
                                         0, 1, 0x07, 0xD0, 0, 1,  2, 0,    7};
    struct server_thread st;

    server_start(&st, peers.scfg);
    expect_exception(&st, bad_count, sizeof bad_count, MODBUS_EXCEPTION_ILLEGAL_DATA_VALUE);
    expect_exception(&st, no_such_fc, sizeof no_such_fc, MODBUS_EXCEPTION_ILLEGAL_FUNCTION);
    expect_exception(&st, rw_outside, sizeof rw_outside, MODBUS_EXCEPTION_ILLEGAL_DATA_ADDRESS);
    server_finish(&st);
}
END_TEST

/* --- The request hook ------------------------------------------------------------- */

struct hook_log {
    unsigned calls;
    char name[64], role[64];
};

/* Role "reader" may read, not write; function 0x41 is answered by the hook. */
static enum mbsc_modbus_verdict reader_hook(void *user, const struct mbsc_modbus_request *req,
                                            uint8_t *exception_code,
                                            uint8_t answer[MBSC_MODBUS_MAX_ADU], size_t *answer_len)
{
    struct hook_log *log = user;

    log->calls++;
    snprintf(log->name, sizeof log->name, "%s", req->peer_name ? req->peer_name : "(null)");
    snprintf(log->role, sizeof log->role, "%s", req->peer_role ? req->peer_role : "(null)");
    if (req->function == 0x41) {
        memcpy(answer, req->adu, 4); /* transaction and protocol ids */
        answer[4] = 0;
        answer[5] = 3;
        answer[6] = req->unit_id;
        answer[7] = 0x41;
        answer[8] = 0x99;
        *answer_len = 9;
        return MBSC_MODBUS_ANSWER;
    }
    if (req->function == 0x42) {
        *answer_len = 5; /* not an ADU: the connection ends */
        return MBSC_MODBUS_ANSWER;
    }
    if (req->peer_role != NULL && strcmp(req->peer_role, "reader") == 0 &&
        (req->function == 0x06 || req->function == 0x10)) {
        ck_assert_uint_eq(*exception_code, 1); /* the default offered */
        return MBSC_MODBUS_REFUSE;
    }
    if (req->function == 0x05) {
        *exception_code = 4; /* the hook's own choice */
        return MBSC_MODBUS_REFUSE;
    }
    return MBSC_MODBUS_ALLOW;
}

START_TEST(test_request_hook)
{
    static const uint8_t user_fc[] = {0, 5, 0, 0, 0, 2, 1, 0x41};
    static const uint8_t bad_answer[] = {0, 6, 0, 0, 0, 2, 1, 0x42};
    static const uint8_t coil[] = {0, 7, 0, 0, 0, 6, 1, 0x05, 0, 3, 0xFF, 0};
    struct tu_peers reader;
    struct server_thread st;
    struct hook_log log;
    uint16_t reg = 0;
    uint8_t buf[300];
    size_t got;
    modbus_t *ctx;
    mbsc_conn *c = NULL;
    char why[MBSC_WHY_SIZE];

    memset(&log, 0, sizeof log);
    tu_peers_setup(&reader, "hmi-7", "reader", NULL);
    map->tab_registers[3] = 0x0303;
    server_new(&st, reader.scfg);
    mbsc_modbus_server_set_request_hook(st.srv, reader_hook, &log);
    ck_assert_int_eq(pthread_create(&st.thread, NULL, server_main, &st), 0);
    ctx = connect_ok(st.addr, reader.mcfg);
    /* Reads pass, writes are refused with 01 and change nothing. */
    ck_assert_int_eq(modbus_read_registers(ctx, 3, 1, &reg), 1);
    ck_assert_uint_eq(reg, 0x0303);
    errno = 0;
    ck_assert_int_eq(modbus_write_register(ctx, 3, 0x1111), -1);
    ck_assert_int_eq(errno, EMBXILFUN);
    ck_assert_int_eq(modbus_read_registers(ctx, 3, 1, &reg), 1);
    ck_assert_uint_eq(reg, 0x0303);
    mbsc_modbus_close(ctx);

    ck_assert_int_eq(mbsc_connect(st.addr, reader.mcfg, LONG_MS, &c, why, sizeof why), MBSC_OK);
    /* An exception of the hook's choosing. */
    ck_assert_int_eq(mbsc_conn_send(c, coil, sizeof coil, LONG_MS), MBSC_OK);
    ck_assert_int_eq(mbsc_conn_recv(c, buf, sizeof buf, &got, LONG_MS), MBSC_OK);
    ck_assert_uint_eq(got, 9);
    ck_assert_uint_eq(buf[7], 0x85);
    ck_assert_uint_eq(buf[8], 4);
    /* A raw answer of its own, for a function libmodbus does not know. */
    ck_assert_int_eq(mbsc_conn_send(c, user_fc, sizeof user_fc, LONG_MS), MBSC_OK);
    ck_assert_int_eq(mbsc_conn_recv(c, buf, sizeof buf, &got, LONG_MS), MBSC_OK);
    ck_assert_uint_eq(got, 9);
    ck_assert(memcmp(buf, user_fc, 2) == 0);
    ck_assert_uint_eq(buf[7], 0x41);
    ck_assert_uint_eq(buf[8], 0x99);
    /* An answer that is not an ADU ends the connection. */
    ck_assert_int_eq(mbsc_conn_send(c, bad_answer, sizeof bad_answer, LONG_MS), MBSC_OK);
    ck_assert_int_eq(mbsc_conn_recv(c, buf, sizeof buf, &got, LONG_MS), MBSC_ERR_PEER_CLOSED);
    mbsc_conn_close(c);
    wait_count(&st, &st.closed, 2);
    ck_assert_uint_eq(closed_by(&st, MBSC_ERR_MODBUS), 1);
    ck_assert_ptr_nonnull(strstr(st.last_detail, "request hook"));
    server_finish(&st);
    ck_assert_uint_eq(log.calls, 6);
    ck_assert_str_eq(log.name, "hmi-7");
    ck_assert_str_eq(log.role, "reader");
    tu_peers_teardown(&reader);
}
END_TEST

Suite *modbus_suite(void)
{
    Suite *s = suite_create("modbus");
    TCase *tc;

    tc = tcase(s, "adu");
    tcase_add_loop_test(tc, test_check_adu, 0, (int)(sizeof adu_cases / sizeof adu_cases[0]));
    tcase_add_test(tc, test_check_adu_null);

    tc = tcase(s, "calls");
    tcase_add_loop_test(tc, test_every_cipher, 0, MBSC_CIPHER_COUNT);
    tcase_add_test(tc, test_not_ours);
    tcase_add_test(tc, test_many_masters);
    tcase_add_test(tc, test_external_loop);
    tcase_add_test(tc, test_stop_from_signal);

    tc = tcase(s, "refusals");
    tcase_add_test(tc, test_unknown_master_refused);
    tcase_add_test(tc, test_max_connections);
    tcase_add_test(tc, test_malformed_adu);
    tcase_add_test(tc, test_session_master_extras);
    tcase_add_test(tc, test_hostile_clients);
    tcase_add_test(tc, test_request_flood);
    tcase_add_test(tc, test_disconnect_mid_handshake);

    tc = tcase(s, "request_checks");
    tcase_add_loop_test(tc, test_request_rules, 0, (int)(sizeof pdu_cases / sizeof pdu_cases[0]));
    tcase_add_test(tc, test_0x17_ranges_against_mapping);
    tcase_add_test(tc, test_request_rules_end_to_end);
    tcase_add_test(tc, test_request_hook);

    tc = tcase(s, "failures");
    tcase_add_test(tc, test_slave_gone);
    tcase_add_test(tc, test_tampered_response);
    tcase_add_test(tc, test_recovery_link_guard);
    tcase_add_test(tc, test_slave_keepalive_ignored);
    tcase_add_test(tc, test_slave_bad_mbap);
    tcase_add_loop_test(tc, test_slave_too_long, 0, 2);

    tc = tcase(s, "resources");
    tcase_add_test(tc, test_no_leaks_over_cycles);
    tcase_add_test(tc, test_fd_setsize_guard);
    return s;
}
