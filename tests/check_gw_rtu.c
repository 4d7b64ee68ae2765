/* SPDX-License-Identifier: ISC */
/*
 * check_gw_rtu.c - mbsc-gateway's serial lines (tools/gateway/up_rtu.c)
 * without hardware: a secure master, a server gateway with an rtu: route,
 * a pseudo-terminal pair made by socat, and libmodbus's RTU server as the
 * device on the far end (an implementation of the serial framing that is
 * not ours), with faults on demand: an answer late, with a bad CRC, none,
 * and the line unplugged and plugged back (socat ended and started
 * again, its links removed and made anew, as udev does with an adapter's
 * /dev/serial/by-id name).
 *
 * Linux only (ptys, socat); without socat the program exits 77, which
 * automake reports as SKIP.
 */
#define _GNU_SOURCE /* flock, nftw, prctl */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <modbus.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mbsc.h"
#include "mbsc/modbus.h"
#include "gw_harness.h"
#include "rtu_frame.h"
#include "testutil.h"

Suite *gw_rtu_suite(void);

/* The devices' answer timeout on the line: short, so that the tests of timeouts are quick. */
#define LINE_TIMEOUT_MS "300"
/* After a timeout the line rests this long: a late answer lands in it. */
#define LINE_TURNAROUND_MS "1000"
/* How late the device answers in the late-answer test: past the timeout, inside the rest. */
#define LATE_BY_MS 650

static char run_dir[64];
static char dir[96];
static mbsc_keypair gw_kp, master_kp;

static const char *path_of(const char *name)
{
    static char paths[8][160];
    static int next;
    char *p = paths[next++ % 8];

    snprintf(p, 160, "%s/%s", dir, name);
    return p;
}

/* ---- the line: socat's pty pair ----------------------------------------------- */

static pid_t socat_pid = -1;

/* socat with two ptys, linked as DIR/gw.tty and DIR/dev.tty; 1 once both are there. */
static int line_plug(void)
{
    char a[200], b[200];
    long long end = tu_now_ms() + WAIT_MS;
    struct stat st;

    snprintf(a, sizeof a, "pty,raw,echo=0,link=%s", path_of("gw.tty"));
    snprintf(b, sizeof b, "pty,raw,echo=0,link=%s", path_of("dev.tty"));
    socat_pid = fork();
    ck_assert_int_ge(socat_pid, 0);
    if (socat_pid == 0) {
        /* Gone with the test, whatever way it ends. */
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
        execlp("socat", "socat", a, b, (char *)NULL);
        _exit(127);
    }
    while (stat(path_of("gw.tty"), &st) != 0 || stat(path_of("dev.tty"), &st) != 0) {
        if (tu_now_ms() >= end)
            return 0;
        poll(NULL, 0, 10);
    }
    return 1;
}

/* The adapter unplugged: socat ends, the ptys and their links go. */
static void line_unplug(void)
{
    int st;

    if (socat_pid <= 0)
        return;
    kill(socat_pid, SIGTERM);
    waitpid(socat_pid, &st, 0);
    socat_pid = -1;
    unlink(path_of("gw.tty"));
    unlink(path_of("dev.tty"));
}

/* ---- the device: libmodbus's RTU server on the far end -------------------------- */

/* What the device does with the next requests (fault_left of them), then DEV_OK again. */
enum dev_fault { DEV_OK = 0, DEV_SILENT, DEV_LATE, DEV_BAD_CRC, DEV_USER_FUNCTION };

static struct dev {
    modbus_t *ctx;
    modbus_mapping_t *map;
    pthread_t th;
    int stop[2];
    pthread_mutex_t mu;
    enum dev_fault fault; /* under mu */
    unsigned fault_left;  /* under mu */
    unsigned received;    /* requests for unit 1 and broadcasts (under mu) */
    int running;
} dev;

/*
 * An answer to a function of the user-defined range (0x41), four bytes of
 * data: nothing in the frame says where it ends, only the silence after it.
 */
static void answer_user_function(const uint8_t *q)
{
    uint8_t a[8] = {q[0], q[1], 0xDE, 0xAD, 0xBE, 0xEF, 0, 0};
    uint16_t crc = gw_rtu_crc16(a, 6);

    a[6] = (uint8_t)crc;
    a[7] = (uint8_t)(crc >> 8);
    ck_assert_int_eq(write(modbus_get_socket(dev.ctx), a, sizeof a), (ssize_t)sizeof a);
}

/* The map changes under mu: the test reads it from its own thread. */
static void dev_reply(const uint8_t *q, int len)
{
    pthread_mutex_lock(&dev.mu);
    modbus_reply(dev.ctx, q, len, dev.map);
    pthread_mutex_unlock(&dev.mu);
}

static uint16_t dev_register(int addr)
{
    uint16_t v;

    pthread_mutex_lock(&dev.mu);
    v = dev.map->tab_registers[addr];
    pthread_mutex_unlock(&dev.mu);
    return v;
}

/* An answer to read holding registers q with the CRC's bytes wrong. */
static void answer_bad_crc(const uint8_t *q)
{
    uint8_t a[GW_RTU_MAX];
    unsigned addr = (unsigned)q[2] << 8 | q[3], n = (unsigned)q[4] << 8 | q[5], i;
    uint16_t crc;
    size_t len = 3;

    ck_assert_int_eq(q[1], 0x03);
    a[0] = q[0];
    a[1] = 0x03;
    a[2] = (uint8_t)(2 * n);
    for (i = 0; i < n; i++) {
        uint16_t v = dev_register((int)(addr + i));

        a[len++] = (uint8_t)(v >> 8);
        a[len++] = (uint8_t)v;
    }
    crc = (uint16_t)(gw_rtu_crc16(a, len) ^ 0x5A5Au);
    a[len++] = (uint8_t)crc;
    a[len++] = (uint8_t)(crc >> 8);
    ck_assert_int_eq(write(modbus_get_socket(dev.ctx), a, len), (ssize_t)len);
}

static void *dev_main(void *arg)
{
    (void)arg;
    for (;;) {
        uint8_t q[MODBUS_RTU_MAX_ADU_LENGTH];
        struct pollfd pfd[2] = {{modbus_get_socket(dev.ctx), POLLIN, 0}, {dev.stop[0], POLLIN, 0}};
        enum dev_fault fault;
        int rc;

        if (poll(pfd, 2, -1) < 0 && errno != EINTR)
            break;
        if (pfd[1].revents != 0)
            break;
        if (pfd[0].revents & (POLLHUP | POLLERR | POLLNVAL))
            break; /* unplugged */
        if (!(pfd[0].revents & POLLIN))
            continue;
        rc = modbus_receive(dev.ctx, q);
        if (rc <= 0)
            continue; /* for another unit (0), or a frame libmodbus refused (-1) */
        pthread_mutex_lock(&dev.mu);
        dev.received++;
        fault = dev.fault;
        if (dev.fault_left > 0 && --dev.fault_left == 0)
            dev.fault = DEV_OK;
        pthread_mutex_unlock(&dev.mu);
        switch (fault) {
        case DEV_SILENT: break;
        case DEV_LATE:
            poll(NULL, 0, LATE_BY_MS);
            dev_reply(q, rc);
            break;
        case DEV_BAD_CRC: answer_bad_crc(q); break;
        case DEV_USER_FUNCTION: answer_user_function(q); break;
        case DEV_OK: dev_reply(q, rc); break;
        }
    }
    return NULL;
}

/* Unit 1 on DIR/dev.tty, 19200 baud 8N1 (a pty has no parity), 100 items of each table. */
static void dev_start(void)
{
    if (dev.map == NULL) {
        int i;

        dev.map = modbus_mapping_new(100, 100, 100, 100);
        ck_assert_ptr_nonnull(dev.map);
        for (i = 0; i < 100; i++)
            dev.map->tab_registers[i] = (uint16_t)(0x1000 + i);
        pthread_mutex_init(&dev.mu, NULL);
    }
    dev.ctx = modbus_new_rtu(path_of("dev.tty"), 19200, 'N', 8, 1);
    ck_assert_ptr_nonnull(dev.ctx);
    ck_assert_int_eq(modbus_set_slave(dev.ctx, 1), 0);
    ck_assert_msg(modbus_connect(dev.ctx) == 0, "device: %s", modbus_strerror(errno));
    ck_assert_int_eq(pipe(dev.stop), 0);
    ck_assert_int_eq(pthread_create(&dev.th, NULL, dev_main, NULL), 0);
    dev.running = 1;
}

static void dev_stop(void)
{
    if (!dev.running)
        return;
    (void)!write(dev.stop[1], "s", 1);
    pthread_join(dev.th, NULL);
    close(dev.stop[0]);
    close(dev.stop[1]);
    modbus_close(dev.ctx);
    modbus_free(dev.ctx);
    dev.running = 0;
}

static void dev_set_fault(enum dev_fault f, unsigned n)
{
    pthread_mutex_lock(&dev.mu);
    dev.fault = f;
    dev.fault_left = n;
    pthread_mutex_unlock(&dev.mu);
}

static unsigned dev_received(void)
{
    unsigned n;

    pthread_mutex_lock(&dev.mu);
    n = dev.received;
    pthread_mutex_unlock(&dev.mu);
    return n;
}

/* ---- the gateway and the master ----------------------------------------------- */

static void write_allow(void)
{
    char b64[MBSC_KEY_BASE64_SIZE], line[256];
    FILE *f = fopen(path_of("allow.txt"), "w");

    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(mbsc_key_to_base64(b64, master_kp.public_key), MBSC_OK);
    snprintf(line, sizeof line, "%s alice\n", b64);
    fputs(line, f);
    ck_assert_int_eq(fclose(f), 0);
}

static char target[400];

/* The serial target of the test line, with extra settings after the defaults. */
static const char *line_target(const char *extra)
{
    snprintf(target, sizeof target, "rtu:%s,19200,8N1,timeout=%s,turnaround=%s%s",
             path_of("gw.tty"), LINE_TIMEOUT_MS, LINE_TURNAROUND_MS, extra);
    return target;
}

static void start_gateway(struct gwp *g, const char *upstream)
{
    const char *args[] = {
        "server", "--listen",        "127.0.0.1:0",  "--upstream",         upstream,
        "--key",  path_of("gw.key"), "--authorized", path_of("allow.txt"), "--request-timeout",
        "3000",   "--reconnect-max", "200",          "--control",          path_of("ctl"),
        NULL};

    ck_assert_msg(gw_spawn(g, args), "the gateway did not start: %s", g->log);
}

static modbus_t *master(const struct gwp *g, int unit)
{
    mbsc_config *cfg = mbsc_config_new(MBSC_ROLE_MASTER);
    char why[256];
    int err = 0;
    modbus_t *ctx;

    ck_assert_ptr_nonnull(cfg);
    ck_assert_int_eq(mbsc_config_set_keypair(cfg, &master_kp), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_peer_public_key(cfg, gw_kp.public_key), MBSC_OK);
    ctx = mbsc_modbus_connect(g->addr, cfg, WAIT_MS, &err, why, sizeof why);
    mbsc_config_free(cfg);
    ck_assert_msg(ctx != NULL, "connect %s: %s; log: %s", g->addr, why, g->log);
    modbus_set_response_timeout(ctx, 8, 0);
    ck_assert_int_eq(modbus_set_slave(ctx, unit), 0);
    return ctx;
}

/* "mbsc-gateway status" of g, into out. */
static void status(char *out, size_t len)
{
    char args[600];

    snprintf(args, sizeof args, "--control %s", path_of("ctl"));
    ck_assert_int_eq(gw_run_status(args, out, len), 0);
}

/* How many times needle is in the log so far. */
static int log_count(const struct gwp *g, const char *needle)
{
    const char *p = g->log;
    int n = 0;

    while ((p = strstr(p, needle)) != NULL) {
        n++;
        p += strlen(needle);
    }
    return n;
}

/* ---- fixture ------------------------------------------------------------------ */

static void setup(void)
{
    char why[MBSC_WHY_SIZE];

    gw_program = "tools/mbsc-gateway";
    snprintf(dir, sizeof dir, "%s/t-XXXXXX", run_dir);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(mbsc_keypair_generate(&gw_kp), MBSC_OK);
    ck_assert_int_eq(mbsc_keypair_generate(&master_kp), MBSC_OK);
    ck_assert_int_eq(
        mbsc_private_key_save(path_of("gw.key"), gw_kp.private_key, 0, why, sizeof why), MBSC_OK);
    write_allow();
    ck_assert_msg(line_plug(), "socat made no pty pair");
    dev_start();
}

static void teardown(void)
{
    dev_stop();
    line_unplug();
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    (void)(type == FTW_DP ? rmdir(path) : unlink(path));
    return 0;
}

static void run_dir_create(void)
{
    snprintf(run_dir, sizeof run_dir, "/tmp/mbsc-rtu-XXXXXX");
    if (mkdtemp(run_dir) == NULL) {
        fprintf(stderr, "check_gw_rtu: cannot create %s: %s\n", run_dir, strerror(errno));
        exit(1);
    }
}

static void run_dir_remove(void)
{
    if (run_dir[0] != '\0')
        (void)nftw(run_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- tests -------------------------------------------------------------------- */

START_TEST(t_reads_and_writes)
{
    struct gwp g;
    modbus_t *m;
    uint16_t v[10];
    const uint16_t w[3] = {7, 8, 9};
    uint8_t bits[4];
    char st[4096];
    int i;

    start_gateway(&g, line_target(""));
    ck_assert(wait_log(&g, "open at 19200 baud 8N1"));
    m = master(&g, 1);
    ck_assert_int_eq(modbus_read_registers(m, 0, 10, v), 10);
    for (i = 0; i < 10; i++)
        ck_assert_uint_eq(v[i], 0x1000u + (unsigned)i);
    ck_assert_int_eq(modbus_write_register(m, 5, 555), 1);
    ck_assert_uint_eq(dev_register(5), 555);
    ck_assert_int_eq(modbus_write_registers(m, 20, 3, w), 3);
    ck_assert_uint_eq(dev_register(21), 8);
    ck_assert_int_eq(modbus_write_bit(m, 3, 1), 1);
    ck_assert_int_eq(modbus_read_bits(m, 0, 4, bits), 4);
    ck_assert(bits[3] == 1 && bits[0] == 0);
    ck_assert_uint_eq(dev_received(), 5);
    status(st, sizeof st);
    ck_assert_msg(strstr(st, "Modbus RTU 19200 8N1, answer timeout 300 ms; requests 5, answers 5, "
                             "timeouts 0, CRC errors 0") != NULL,
                  "status: %s", st);
    ck_assert_msg(strstr(st, "last error: none) open (1 opening); forwarded 5, answered 5,") !=
                      NULL,
                  "status: %s", st);
    modbus_close(m);
    modbus_free(m);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

/*
 * A unit with nothing behind it is not tested with libmodbus's server: it
 * takes the frame after a request to another unit for that unit's answer,
 * and skips it (a multi-drop line's rule), so the device itself keeps
 * silent here.
 */
START_TEST(t_silent_unit_reported_once)
{
    struct gwp g;
    modbus_t *m;
    uint16_t v;
    char st[4096];
    int i;

    start_gateway(&g, line_target(""));
    m = master(&g, 1);
    dev_set_fault(DEV_SILENT, 3);
    for (i = 0; i < 3; i++) {
        errno = 0;
        ck_assert_int_eq(modbus_read_registers(m, 0, 1, &v), -1);
        ck_assert_msg(errno == EMBXGTAR, "read %d: %s", i, modbus_strerror(errno));
    }
    ck_assert(wait_log(&g, "unit 1 did not answer within 300 ms"));
    status(st, sizeof st);
    ck_assert_msg(strstr(st, "answers 0, timeouts 3,") != NULL, "status: %s", st);
    ck_assert_msg(strstr(st, "last error: unit 1 did not answer within 300 ms") != NULL,
                  "status: %s", st);
    /* It answers again: said once; the timeouts before were said once too. */
    ck_assert_int_eq(modbus_read_registers(m, 1, 1, &v), 1);
    ck_assert_uint_eq(v, 0x1001);
    ck_assert(wait_log(&g, "unit 1 answers again"));
    ck_assert_msg(log_count(&g, "did not answer") == 1, "log: %s", g.log);
    modbus_close(m);
    modbus_free(m);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

START_TEST(t_bad_crc_answered_0b)
{
    struct gwp g;
    modbus_t *m;
    uint16_t v[2];
    char st[4096];

    start_gateway(&g, line_target(""));
    m = master(&g, 1);
    dev_set_fault(DEV_BAD_CRC, 1);
    errno = 0;
    ck_assert_int_eq(modbus_read_registers(m, 0, 2, v), -1);
    ck_assert_msg(errno == EMBXGTAR, "%s", modbus_strerror(errno));
    ck_assert(wait_log(&g, "a CRC error in an answer from unit 1 to function 0x03"));
    ck_assert_msg(modbus_read_registers(m, 2, 2, v) == 2, "%s; log: %s", modbus_strerror(errno),
                  g.log);
    ck_assert_uint_eq(v[0], 0x1002);
    status(st, sizeof st);
    ck_assert_msg(strstr(st, "answers 1, timeouts 0, CRC errors 1,") != NULL, "status: %s", st);
    modbus_close(m);
    modbus_free(m);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

START_TEST(t_late_answer_discarded)
{
    struct gwp g;
    modbus_t *m;
    uint16_t v = 0;
    char st[4096];

    start_gateway(&g, line_target(""));
    m = master(&g, 1);
    /* Register 0 answered late; the next request, for register 1, must get register 1. */
    dev_set_fault(DEV_LATE, 1);
    errno = 0;
    ck_assert_int_eq(modbus_read_registers(m, 0, 1, &v), -1);
    ck_assert_msg(errno == EMBXGTAR, "%s", modbus_strerror(errno));
    ck_assert_int_eq(modbus_read_registers(m, 1, 1, &v), 1);
    ck_assert_msg(v == 0x1001, "the late answer (0x%04x) went to the next request", v);
    status(st, sizeof st);
    ck_assert_msg(strstr(st, "late answers 1,") != NULL, "status: %s", st);
    modbus_close(m);
    modbus_free(m);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

START_TEST(t_unplugged_and_back)
{
    struct gwp g;
    modbus_t *m;
    uint16_t v;
    long long end;
    int rc;

    start_gateway(&g, line_target(""));
    ck_assert(wait_log(&g, "open at 19200 baud"));
    m = master(&g, 1);
    ck_assert_int_eq(modbus_read_registers(m, 0, 1, &v), 1);
    dev_stop();
    line_unplug();
    ck_assert(wait_log(&g, "(adapter unplugged?)"));
    ck_assert(wait_log(&g, "is the adapter plugged in?"));
    /* Meanwhile: gateway path unavailable. */
    errno = 0;
    ck_assert_int_eq(modbus_read_registers(m, 0, 1, &v), -1);
    ck_assert_msg(errno == EMBXGPATH, "%s", modbus_strerror(errno));
    ck_assert(line_plug());
    dev_start();
    ck_assert(wait_log(&g, "open at 19200 baud"));
    /* The reopen may be a backoff away: 0A until then. */
    end = tu_now_ms() + WAIT_MS;
    while ((rc = modbus_read_registers(m, 3, 1, &v)) != 1 && errno == EMBXGPATH &&
           tu_now_ms() < end)
        poll(NULL, 0, 50);
    ck_assert_msg(rc == 1, "%s", modbus_strerror(errno));
    ck_assert_uint_eq(v, 0x1003);
    modbus_close(m);
    modbus_free(m);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

START_TEST(t_port_in_use_names_holder)
{
    struct gwp g;
    modbus_t *m;
    uint16_t v;
    char needle[128];
    long long end;
    int fd = open(path_of("gw.tty"), O_RDWR | O_NOCTTY | O_CLOEXEC), rc;

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(flock(fd, LOCK_EX | LOCK_NB), 0);
    start_gateway(&g, line_target(""));
    snprintf(needle, sizeof needle, "is in use by process %ld (", (long)getpid());
    ck_assert_msg(wait_log(&g, needle), "log: %s", g.log);
    m = master(&g, 1);
    close(fd);
    end = tu_now_ms() + WAIT_MS;
    while ((rc = modbus_read_registers(m, 4, 1, &v)) != 1 && errno == EMBXGPATH &&
           tu_now_ms() < end)
        poll(NULL, 0, 50);
    ck_assert_msg(rc == 1, "%s; log: %s", modbus_strerror(errno), g.log);
    ck_assert_uint_eq(v, 0x1004);
    modbus_close(m);
    modbus_free(m);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

/*
 * A device that is not a serial port is refused where the route is read
 * (check_gw_route); one that appears only later, as something else, is
 * refused when the gateway opens it.
 */
START_TEST(t_not_a_serial_port)
{
    struct gwp g;
    char upstream[300];

    snprintf(upstream, sizeof upstream, "rtu:%s,19200,8N1", path_of("later"));
    start_gateway(&g, upstream);
    ck_assert_msg(wait_log(&g, "is the adapter plugged in?"), "log: %s", g.log);
    ck_assert_int_eq(mkfifo(path_of("later"), 0600), 0);
    ck_assert_msg(wait_log(&g, "later is not a serial port; fix: name the serial device"),
                  "log: %s", g.log);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

/*
 * A port the gateway's user may not open is named with the fix: a udev
 * rule when only its owner may use it, the port's group when that group
 * may.  Root opens any port, so as root the gateway runs as nobody
 * (setpriv, in front of $TEST_RUNNER); otherwise the pty is made
 * unreadable, and only the first case is seen.
 */
START_TEST(t_no_permission)
{
    struct gwp g;
    char upstream[300], runner[512], needle[128];
    const char *old = getenv("TEST_RUNNER");
    const char *args[] = {
        "server", "--listen",        "127.0.0.1:0",  "--upstream",         upstream,
        "--key",  path_of("gw.key"), "--authorized", path_of("allow.txt"), NULL};
    int root = geteuid() == 0;

    snprintf(upstream, sizeof upstream, "rtu:%s,19200,8N1", path_of("gw.tty"));
    if (root) {
        ck_assert_int_eq(chown(path_of("gw.key"), 65534, 65534), 0);
        ck_assert_int_eq(chmod(dir, 0711), 0);
        ck_assert_int_eq(chmod(run_dir, 0711), 0);
        ck_assert_int_eq(chmod(path_of("gw.tty"), 0600), 0);
        snprintf(runner, sizeof runner, "setpriv --reuid=65534 --regid=65534 --clear-groups %s",
                 old != NULL ? old : "");
        ck_assert_int_eq(setenv("TEST_RUNNER", runner, 1), 0);
    } else {
        ck_assert_int_eq(chmod(path_of("gw.tty"), 0), 0);
    }
    ck_assert_msg(gw_spawn(&g, args), "the gateway did not start: %s", g.log);
    snprintf(needle, sizeof needle, "Permission denied: the port is mode %s, so only its owner",
             root ? "600" : "000");
    ck_assert_msg(wait_log(&g, needle), "log: %s", g.log);
    ck_assert(wait_log(&g, "fix: a udev rule that gives it to the group dialout with mode 0660"));
    if (root) {
        /* Its group may use it now (gid 20: dialout on Debian), and nobody is not in it. */
        ck_assert_int_eq(chown(path_of("gw.tty"), 0, 20), 0);
        ck_assert_int_eq(chmod(path_of("gw.tty"), 0660), 0);
        ck_assert_msg(wait_log(&g, "Permission denied: the gateway's user may not use it; fix: "
                                   "add the user to the port's group "),
                      "log: %s", g.log);
        ck_assert(wait_log(&g, "then restart the gateway), or SupplementaryGroups="));
    }
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

/* A format the port does not take (parity on a pty) is named with the fix; nothing is sent. */
START_TEST(t_format_refused)
{
    struct gwp g;
    char upstream[300];

    snprintf(upstream, sizeof upstream, "rtu:%s,19200,8E1", path_of("gw.tty"));
    start_gateway(&g, upstream);
    /* Refused by tcsetattr or seen on reading the settings back, as the kernel has it. */
    ck_assert_msg(wait_log(&g, "baud 8E1 ("), "log: %s", g.log);
    ck_assert_msg(wait_log(&g, "); fix: this is a pseudo-terminal, which has no parity: write the "
                               "format with N"),
                  "log: %s", g.log);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
    ck_assert_uint_eq(dev_received(), 0);
}
END_TEST

/* An answer whose frame does not tell its length is taken after the silence that ends it. */
START_TEST(t_answer_ended_by_silence)
{
    struct gwp g;
    mbsc_config *cfg = mbsc_config_new(MBSC_ROLE_MASTER);
    const uint8_t req[8] = {0x12, 0x34, 0, 0, 0, 2, 1, 0x41};
    uint8_t got[MBSC_ADU_MAX];
    const uint8_t want[5] = {0x41, 0xDE, 0xAD, 0xBE, 0xEF};
    size_t n = 0;
    mbsc_conn *c = NULL;
    char why[256];

    start_gateway(&g, line_target(""));
    dev_set_fault(DEV_USER_FUNCTION, 1);
    ck_assert_ptr_nonnull(cfg);
    ck_assert_int_eq(mbsc_config_set_keypair(cfg, &master_kp), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_peer_public_key(cfg, gw_kp.public_key), MBSC_OK);
    ck_assert_msg(mbsc_connect(g.addr, cfg, WAIT_MS, &c, why, sizeof why) == MBSC_OK,
                  "connect %s: %s", g.addr, why);
    mbsc_config_free(cfg);
    ck_assert_int_eq(mbsc_conn_send(c, req, sizeof req, WAIT_MS), MBSC_OK);
    ck_assert_int_eq(mbsc_conn_recv(c, got, sizeof got, &n, WAIT_MS), MBSC_OK);
    mbsc_conn_close(c);
    ck_assert_uint_eq(n, 7 + sizeof want);
    ck_assert_uint_eq((unsigned)got[0] << 8 | got[1], 0x1234);
    ck_assert_uint_eq(got[6], 1);
    ck_assert_msg(memcmp(got + 7, want, sizeof want) == 0, "answer %02x %02x %02x", got[7], got[8],
                  got[9]);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

/*
 * RS-485 mode on a port without it (a pty): rs485=yes goes on without it,
 * said once; rs485=required refuses the port, with the fix.
 */
START_TEST(t_rs485_mode_missing)
{
    struct gwp g;
    modbus_t *m;
    uint16_t v;

    start_gateway(&g, line_target(",rs485=yes"));
    ck_assert_msg(wait_log(&g, "has no RS-485 mode (TIOCSRS485: "), "log: %s", g.log);
    ck_assert(wait_log(&g, "going on without it, as rs485=yes allows"));
    m = master(&g, 1);
    ck_assert_int_eq(modbus_read_registers(m, 8, 1, &v), 1);
    ck_assert_uint_eq(v, 0x1008);
    modbus_close(m);
    modbus_free(m);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);

    start_gateway(&g, line_target(",rs485=required"));
    ck_assert_msg(wait_log(&g, "has no RS-485 mode (TIOCSRS485: "), "log: %s", g.log);
    ck_assert(wait_log(&g, ") and rs485=required; fix: rs485=yes to go on without it"));
    m = master(&g, 1);
    errno = 0;
    ck_assert_int_eq(modbus_read_registers(m, 8, 1, &v), -1);
    ck_assert_msg(errno == EMBXGPATH, "%s", modbus_strerror(errno));
    modbus_close(m);
    modbus_free(m);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

static void write_config(const char *route_line)
{
    FILE *f = fopen(path_of("gw.conf.tmp"), "w");

    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "listen = 127.0.0.1:0\nkey = %s\nauthorized = %s\ncontrol = %s\n"
            "request-timeout = 3000\nreconnect-max = 200\n%s\n",
            path_of("gw.key"), path_of("allow.txt"), path_of("ctl"), route_line);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(rename(path_of("gw.conf.tmp"), path_of("gw.conf")), 0);
}

/*
 * A reload that gives the line other settings closes the port and opens it
 * again with them; one that removes the line's route closes it, and its
 * units get 0A.
 */
START_TEST(t_reload_changes_and_removes_the_line)
{
    struct gwp g;
    modbus_t *m;
    uint16_t v;
    char line[400], st[4096];
    const char *args[] = {"server", "--config", path_of("gw.conf"), NULL};
    long long end;
    int rc;

    snprintf(line, sizeof line, "route = 1 rtu:%s,19200,8N1,timeout=300", path_of("gw.tty"));
    write_config(line);
    ck_assert_msg(gw_spawn(&g, args), "the gateway did not start: %s", g.log);
    m = master(&g, 1);
    ck_assert_int_eq(modbus_read_registers(m, 9, 1, &v), 1);
    snprintf(line, sizeof line, "route = 1 rtu:%s,19200,8N1,timeout=400", path_of("gw.tty"));
    write_config(line);
    kill(g.pid, SIGHUP);
    ck_assert_msg(wait_log(&g, "reloaded:"), "log: %s", g.log);
    ck_assert(wait_log(&g, "answer timeout 400 ms"));
    end = tu_now_ms() + WAIT_MS;
    while ((rc = modbus_read_registers(m, 9, 1, &v)) != 1 && errno == EMBXGPATH &&
           tu_now_ms() < end)
        poll(NULL, 0, 50);
    ck_assert_msg(rc == 1, "%s; log: %s", modbus_strerror(errno), g.log);
    ck_assert_uint_eq(v, 0x1009);
    status(st, sizeof st);
    ck_assert_msg(strstr(st, "answer timeout 400 ms; requests 1, answers 1,") != NULL, "status: %s",
                  st);
    write_config("route = 2 10.0.0.1:502");
    kill(g.pid, SIGHUP);
    ck_assert_msg(wait_log(&g, "reloaded:"), "log: %s", g.log);
    errno = 0;
    ck_assert_int_eq(modbus_read_registers(m, 9, 1, &v), -1);
    ck_assert_msg(errno == EMBXGPATH, "%s", modbus_strerror(errno));
    /* The port is free again: another program may take it. */
    {
        int fd = open(path_of("gw.tty"), O_RDWR | O_NOCTTY | O_CLOEXEC);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(flock(fd, LOCK_EX | LOCK_NB), 0);
        close(fd);
    }
    modbus_close(m);
    modbus_free(m);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

START_TEST(t_broadcast)
{
    struct gwp g;
    modbus_t *m;
    uint16_t v;
    const uint16_t w[2] = {21, 22};
    long long end;
    unsigned before;

    start_gateway(&g, line_target(""));
    m = master(&g, 0);
    before = dev_received();
    /* The answer says the frame went out; the device acts without answering. */
    ck_assert_int_eq(modbus_write_register(m, 7, 77), 1);
    ck_assert_int_eq(modbus_write_registers(m, 30, 2, w), 2);
    end = tu_now_ms() + WAIT_MS;
    while (dev_register(31) != 22 && tu_now_ms() < end)
        poll(NULL, 0, 10);
    ck_assert_uint_eq(dev_register(7), 77);
    ck_assert_uint_eq(dev_register(31), 22);
    ck_assert_uint_eq(dev_received(), before + 2);
    /* A read cannot be a broadcast: refused, not sent. */
    errno = 0;
    ck_assert_int_eq(modbus_read_registers(m, 0, 1, &v), -1);
    ck_assert_msg(errno == EMBXILFUN, "%s", modbus_strerror(errno));
    ck_assert_uint_eq(dev_received(), before + 2);
    modbus_close(m);
    modbus_free(m);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

Suite *gw_rtu_suite(void)
{
    Suite *s = suite_create("gw_rtu");
    TCase *tc = tcase_create("serial line");

    if (system("socat -V >/dev/null 2>&1") != 0) {
        fprintf(stderr, "check_gw_rtu: socat is not installed (apt-get install socat): the serial "
                        "line tests cannot run\n");
        exit(77);
    }
    signal(SIGPIPE, SIG_IGN);
    /* In the runner, around the whole case: removes what a failed test left. */
    tcase_add_unchecked_fixture(tc, run_dir_create, run_dir_remove);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, t_reads_and_writes);
    tcase_add_test(tc, t_silent_unit_reported_once);
    tcase_add_test(tc, t_bad_crc_answered_0b);
    tcase_add_test(tc, t_late_answer_discarded);
    tcase_add_test(tc, t_answer_ended_by_silence);
    tcase_add_test(tc, t_unplugged_and_back);
    tcase_add_test(tc, t_port_in_use_names_holder);
    tcase_add_test(tc, t_not_a_serial_port);
    tcase_add_test(tc, t_format_refused);
    tcase_add_test(tc, t_no_permission);
    tcase_add_test(tc, t_rs485_mode_missing);
    tcase_add_test(tc, t_reload_changes_and_removes_the_line);
    tcase_add_test(tc, t_broadcast);
    suite_add_tcase(s, tc);
    return s;
}
