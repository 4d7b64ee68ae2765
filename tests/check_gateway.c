/* SPDX-License-Identifier: ISC */
/*
 * check_gateway.c - mbsc-gateway end to end: the program as installed, a
 * plain libmodbus server as the PLC (a thread on port 0), libmodbus masters
 * through mbsc (mbsc_modbus_connect) and plain libmodbus clients through a
 * client gateway.
 *
 * Synchronisation is by events, never by sleeping: the gateway's first
 * stdout line gives its port, and its log lines on stderr (read through a
 * pipe) say when a reload is done or the upstream is connected again.
 * Exception codes expected are those of the Modbus Application Protocol
 * v1.1b3, section 7 (01 illegal function, 0A gateway path unavailable, 0B
 * gateway target device failed to respond), as docs/gateway.md promises.
 */
#define _XOPEN_SOURCE 700 /* nftw(); _POSIX_C_SOURCE alone does not declare it */
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
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "mbsc.h"
#include "mbsc/modbus.h"
#include "gw_harness.h"
#include "testutil.h"

Suite *gateway_suite(void);

/* ---- keys and files ------------------------------------------------------------ */

/*
 * The gateway's request timeout: long enough that a loaded machine never
 * hits it where a test does not mean it to; the test of timeouts shortens it.
 */
static const char *request_timeout = "3000";

/*
 * Files live in a directory per test inside one directory per run: the
 * checked teardown (in the test's process) does not run after a failed
 * assertion, the unchecked one (in the runner, after every test of the
 * case, failed or not) removes the whole run directory.
 */
static char run_dir[64];
static char dir[96];
static mbsc_keypair gw_kp, other_gw_kp;
static struct plc plc;

#define N_MASTERS 4
static mbsc_keypair master_kp[N_MASTERS];

static const char *path_of(const char *name)
{
    static char paths[8][128];
    static int next;
    char *p = paths[next++ % 8];

    snprintf(p, 128, "%s/%s", dir, name);
    return p;
}

static void write_file(const char *name, const char *text)
{
    const char *p = path_of(name);
    char tmp[160];
    FILE *f;

    /* Written aside and renamed, as an operator's editor would. */
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    f = fopen(tmp, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(chmod(tmp, 0644), 0);
    ck_assert_int_eq(rename(tmp, p), 0);
}

/* An allow-list line for master i. */
static void allow_line(char *buf, size_t len, int i, const char *name, const char *role)
{
    char b64[MBSC_KEY_BASE64_SIZE];

    ck_assert_int_eq(mbsc_key_to_base64(b64, master_kp[i].public_key), MBSC_OK);
    snprintf(buf, len, "%s %s%s%s\n", b64, name, role ? " " : "", role ? role : "");
}

static void setup(void)
{
    char why[MBSC_WHY_SIZE];
    int i;

    request_timeout = "3000";
    gw_program = "tools/mbsc-gateway";
    snprintf(dir, sizeof dir, "%s/t-XXXXXX", run_dir);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(mbsc_keypair_generate(&gw_kp), MBSC_OK);
    ck_assert_int_eq(mbsc_keypair_generate(&other_gw_kp), MBSC_OK);
    ck_assert_int_eq(
        mbsc_private_key_save(path_of("gw.key"), gw_kp.private_key, 0, why, sizeof why), MBSC_OK);
    ck_assert_int_eq(
        mbsc_private_key_save(path_of("client.key"), other_gw_kp.private_key, 0, why, sizeof why),
        MBSC_OK);
    ck_assert_int_eq(mbsc_public_key_save(path_of("gw.pub"), gw_kp.public_key, 0, why, sizeof why),
                     MBSC_OK);
    for (i = 0; i < N_MASTERS; i++)
        ck_assert_int_eq(mbsc_keypair_generate(&master_kp[i]), MBSC_OK);
    memset(&plc, 0, sizeof plc);
    ck_assert_int_eq(plc_start(&plc, 0), 0);
}

static void teardown(void)
{
    static const char *names[] = {"gw.key",    "gw.pub",     "client.key",
                                  "allow.txt", "policy.txt", "gw.conf"};
    size_t i;

    plc_free(&plc);
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        unlink(path_of(names[i]));
    rmdir(dir);
}

static void run_dir_create(void)
{
    snprintf(run_dir, sizeof run_dir, "/tmp/mbsc-gw-XXXXXX");
    if (mkdtemp(run_dir) == NULL) {
        fprintf(stderr, "check_gateway: cannot create %s: %s\n", run_dir, strerror(errno));
        exit(1);
    }
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if ((type == FTW_DP ? rmdir(path) : unlink(path)) != 0)
        fprintf(stderr, "check_gateway: cannot remove %s: %s\n", path, strerror(errno));
    return 0;
}

static void run_dir_remove(void)
{
    /* Depth first, not following links; whatever a failed test left. */
    if (run_dir[0] != '\0')
        (void)nftw(run_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static char plc_addr[64];

static const char *plc_hostport(void)
{
    snprintf(plc_addr, sizeof plc_addr, "127.0.0.1:%d", plc.port);
    return plc_addr;
}

/* A server gateway in front of the PLC with allow.txt (and policy.txt if policy). */
static void start_server(struct gwp *g, int policy, const char *listen)
{
    const char *args[] = {"server",
                          "--listen",
                          listen,
                          "--upstream",
                          plc_hostport(),
                          "--key",
                          path_of("gw.key"),
                          "--authorized",
                          path_of("allow.txt"),
                          "--request-timeout",
                          request_timeout,
                          "--reconnect-max",
                          "200",
                          policy ? "--policy" : NULL,
                          path_of("policy.txt"),
                          NULL};

    ck_assert_msg(gw_spawn(g, args), "the gateway did not start: %s", g->log);
}

/* A libmodbus master with key i through the gateway at g. */
static modbus_t *master(const struct gwp *g, int i)
{
    mbsc_config *cfg = mbsc_config_new(MBSC_ROLE_MASTER);
    char why[256];
    int err = 0;
    modbus_t *ctx;

    ck_assert_ptr_nonnull(cfg);
    ck_assert_int_eq(mbsc_config_set_keypair(cfg, &master_kp[i]), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_peer_public_key(cfg, gw_kp.public_key), MBSC_OK);
    ctx = mbsc_modbus_connect(g->addr, cfg, WAIT_MS, &err, why, sizeof why);
    mbsc_config_free(cfg); /* the connection keeps what it needs */
    ck_assert_msg(ctx != NULL, "connect %s: %s", g->addr, why);
    modbus_set_response_timeout(ctx, 8, 0);
    return ctx;
}

static void two_masters_allowed(const char *role0, const char *role1)
{
    char a[256], b[256], all[600];

    allow_line(a, sizeof a, 0, "alice", role0);
    allow_line(b, sizeof b, 1, "bob", role1);
    snprintf(all, sizeof all, "# test masters\n%s%s", a, b);
    write_file("allow.txt", all);
}

static const char policy_text[] = "operator read-write holding-registers 0-99\n"
                                  "operator read       input-registers   *\n"
                                  "viewer   read       holding-registers 0-99\n";

/* ---- server mode --------------------------------------------------------------- */

START_TEST(t_forwards_reads_and_writes)
{
    struct gwp g;
    modbus_t *m;
    uint16_t v[3] = {0, 0, 0};

    two_masters_allowed(NULL, NULL);
    start_server(&g, 0, "127.0.0.1:0");
    m = master(&g, 0);
    plc_set_register(&plc, 11, 777);
    ck_assert_int_eq(modbus_write_register(m, 10, 1234), 1);
    ck_assert_int_eq(plc_register(&plc, 10), 1234);
    ck_assert_int_eq(modbus_read_registers(m, 10, 2, v), 2);
    ck_assert_uint_eq(v[0], 1234);
    ck_assert_uint_eq(v[1], 777);
    /* Unit ids pass unchanged: libmodbus's server answers any in TCP. */
    modbus_set_slave(m, 17);
    ck_assert_int_eq(modbus_read_registers(m, 11, 1, v), 1);
    ck_assert_uint_eq(v[0], 777);
    /* An address the PLC does not have: its own exception 02 comes back. */
    errno = 0;
    ck_assert_int_eq(modbus_read_registers(m, 99, 3, v), -1);
    ck_assert_int_eq(errno, EMBXILADD);
    mbsc_modbus_close(m);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
    ck_assert_int_eq(plc_accepts(&plc), 1);
}
END_TEST

struct held_read {
    modbus_t *ctx;
    int addr;
    int rc, err;
    uint16_t v;
};

static void *held_read_main(void *arg)
{
    struct held_read *h = arg;

    errno = 0;
    h->rc = modbus_read_registers(h->ctx, h->addr, 1, &h->v);
    h->err = errno;
    return NULL;
}

/* A plain TCP connect to HOST:PORT (IPv4): 0 if it connects, else errno. */
static int tcp_connect_errno(const char *hostport)
{
    char host[64];
    const char *colon = strrchr(hostport, ':');
    struct sockaddr_in sa;
    int fd, err = 0;

    ck_assert_ptr_nonnull(colon);
    snprintf(host, sizeof host, "%.*s", (int)(colon - hostport), hostport);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)atoi(colon + 1));
    ck_assert_int_eq(inet_pton(AF_INET, host, &sa.sin_addr), 1);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
        err = errno;
    close(fd);
    return err;
}

START_TEST(t_drain_refuses_new_answers_in_flight)
{
    struct gwp g;
    struct held_read h;
    pthread_t th;
    const char *args[] = {"server",
                          "--listen",
                          "127.0.0.1:0",
                          "--upstream",
                          plc_hostport(),
                          "--key",
                          path_of("gw.key"),
                          "--authorized",
                          path_of("allow.txt"),
                          "--request-timeout",
                          "30000",
                          "--drain-timeout",
                          "30000",
                          NULL};

    two_masters_allowed(NULL, NULL);
    plc_set_register(&plc, 42, 4242);
    ck_assert_msg(gw_spawn(&g, args), "the gateway did not start: %s", g.log);
    /* The listener accepts before the stop. */
    ck_assert_int_eq(tcp_connect_errno(g.addr), 0);
    memset(&h, 0, sizeof h);
    h.ctx = master(&g, 0);
    h.addr = 42;
    plc_set_fault(&plc, PLC_HOLD);
    ck_assert_int_eq(pthread_create(&th, NULL, held_read_main, &h), 0);
    /* The request is at the PLC, unanswered: it is in flight when the stop comes. */
    ck_assert_msg(plc_wait_held(&plc, WAIT_MS), "the request did not reach the PLC: %s", g.log);
    kill(g.pid, SIGTERM);
    ck_assert_msg(wait_log(&g, "stopping: 1 requests to finish"), "log: %s", g.log);
    /* Draining: a new connection is refused by the kernel at once... */
    ck_assert_int_eq(tcp_connect_errno(g.addr), ECONNREFUSED);
    /* ...while the request in flight still gets the PLC's answer. */
    plc_release(&plc);
    pthread_join(th, NULL);
    ck_assert_msg(h.rc == 1, "read during the drain: %d (%s); log: %s", h.rc,
                  modbus_strerror(h.err), g.log);
    ck_assert_uint_eq(h.v, 4242);
    ck_assert_int_eq(gw_finish(&g, 0), 0);
    mbsc_modbus_close(h.ctx);
}
END_TEST

/* Run "mbsc-gateway status ARGS" (under $TEST_RUNNER); its stdout in out, its exit status. */
static int run_status(const char *args, char *out, size_t len)
{
    char cmd[1024];
    const char *runner = getenv("TEST_RUNNER");
    size_t n = 0;
    FILE *p;
    int st;

    snprintf(cmd, sizeof cmd, "%s %s status %s 2>&1", runner != NULL ? runner : "", gateway_path(),
             args);
    p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    while (n < len - 1) {
        size_t k = fread(out + n, 1, len - 1 - n, p);

        if (k == 0)
            break;
        n += k;
    }
    out[n] = '\0';
    st = pclose(p);
    ck_assert(WIFEXITED(st));
    return WEXITSTATUS(st);
}

START_TEST(t_status_command)
{
    struct gwp g;
    struct stat st;
    char args[256], out[4096];
    modbus_t *alice, *bob;
    uint16_t v;
    const char *argv[] = {"server",
                          "--listen",
                          "127.0.0.1:0",
                          "--upstream",
                          plc_hostport(),
                          "--key",
                          path_of("gw.key"),
                          "--authorized",
                          path_of("allow.txt"),
                          "--policy",
                          path_of("policy.txt"),
                          "--control",
                          path_of("ctl"),
                          NULL};

    two_masters_allowed("operator", "viewer");
    write_file("policy.txt", policy_text);
    ck_assert_msg(gw_spawn(&g, argv), "the gateway did not start: %s", g.log);
    /* Only the service's user may ask. */
    ck_assert_int_eq(lstat(path_of("ctl"), &st), 0);
    ck_assert(S_ISSOCK(st.st_mode));
    ck_assert_uint_eq(st.st_mode & 0777u, 0600u);
    alice = master(&g, 0);
    bob = master(&g, 1);
    ck_assert_int_eq(modbus_read_registers(alice, 1, 1, &v), 1);
    ck_assert_int_eq(modbus_write_register(alice, 1, 11), 1);
    ck_assert_int_eq(modbus_read_registers(bob, 1, 1, &v), 1);
    errno = 0;
    ck_assert_int_eq(modbus_write_register(bob, 1, 12), -1);
    ck_assert_int_eq(errno, EMBXILFUN);
    ck_assert_int_eq(modbus_read_registers(bob, 2, 1, &v), 1);

    snprintf(args, sizeof args, "--control %s", path_of("ctl"));
    ck_assert_int_eq(run_status(args, out, sizeof out), 0);
    ck_assert_msg(strstr(out, "2 masters") != NULL, "status: %s", out);
    ck_assert_msg(strstr(out, "master alice role operator cipher chacha20 from 127.0.0.1:") != NULL,
                  "status: %s", out);
    ck_assert_msg(strstr(out, "master bob role viewer cipher chacha20 from 127.0.0.1:") != NULL,
                  "status: %s", out);
    ck_assert_msg(strstr(out, " requests 2 refusals 0\n") != NULL, "status: %s", out);
    ck_assert_msg(strstr(out, " requests 3 refusals 1\n") != NULL, "status: %s", out);
    ck_assert_msg(strstr(out, "connected-since 20") != NULL, "status: %s", out);
    /* SIGUSR1 logs the same lines. */
    kill(g.pid, SIGUSR1);
    ck_assert_msg(wait_log(&g, "status: master bob role viewer"), "log: %s", g.log);
    mbsc_modbus_close(alice);
    mbsc_modbus_close(bob);

    /* Usage errors and an unreachable gateway are told apart by the exit status. */
    ck_assert_int_eq(run_status("", out, sizeof out), 2);
    ck_assert_msg(strstr(out, "--control PATH") != NULL, "status: %s", out);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
    /* The socket goes with the gateway. */
    ck_assert_int_ne(lstat(path_of("ctl"), &st), 0);
    ck_assert_int_eq(run_status(args, out, sizeof out), 1);
    ck_assert_msg(strstr(out, "cannot reach the gateway") != NULL, "status: %s", out);
}
END_TEST

START_TEST(t_unit_ids_0_and_255)
{
    struct gwp g;
    modbus_t *m;
    uint16_t v = 0;

    /*
     * 0 (broadcast on a serial line) and 255 (the Modbus/TCP "no sub-unit")
     * are forwarded like any other unit id, and the answer must carry the
     * same one; libmodbus's TCP server answers both.
     */
    two_masters_allowed(NULL, NULL);
    plc_set_register(&plc, 5, 505);
    start_server(&g, 0, "127.0.0.1:0");
    m = master(&g, 0);
    ck_assert_int_eq(modbus_set_slave(m, 0), 0);
    ck_assert_int_eq(modbus_read_registers(m, 5, 1, &v), 1);
    ck_assert_uint_eq(v, 505);
    ck_assert_int_eq(modbus_write_register(m, 5, 506), 1);
    ck_assert_uint_eq(plc_register(&plc, 5), 506);
    ck_assert_int_eq(modbus_set_slave(m, 255), 0);
    ck_assert_int_eq(modbus_read_registers(m, 5, 1, &v), 1);
    ck_assert_uint_eq(v, 506);
    mbsc_modbus_close(m);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

START_TEST(t_roles_read_only_master)
{
    struct gwp g;
    modbus_t *op, *view;
    uint16_t v = 0;

    two_masters_allowed("operator", "viewer");
    write_file("policy.txt", policy_text);
    start_server(&g, 1, "127.0.0.1:0");
    op = master(&g, 0);
    view = master(&g, 1);
    plc_set_register(&plc, 7, 42);
    /* The viewer's write: exception 01, logged, and the PLC unchanged. */
    errno = 0;
    ck_assert_int_eq(modbus_write_register(view, 7, 9999), -1);
    ck_assert_int_eq(errno, EMBXILFUN);
    ck_assert_uint_eq(plc_register(&plc, 7), 42);
    ck_assert_msg(wait_log(&g, "refused master bob: function 0x06 address 7"), "log: %s", g.log);
    /* Its reads are served; the operator may write. */
    ck_assert_int_eq(modbus_read_registers(view, 7, 1, &v), 1);
    ck_assert_uint_eq(v, 42);
    ck_assert_int_eq(modbus_write_register(op, 7, 43), 1);
    ck_assert_uint_eq(plc_register(&plc, 7), 43);
    /* Coils: no rule names them for the operator. */
    errno = 0;
    ck_assert_int_eq(modbus_write_bit(op, 1, 1), -1);
    ck_assert_int_eq(errno, EMBXILFUN);
    mbsc_modbus_close(op);
    mbsc_modbus_close(view);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

struct poller_arg {
    const struct gwp *g;
    int who;  /* master key index */
    int base; /* its registers: base..base+9 */
    int rounds;
    int failures;
    modbus_t *ctx;
};

/* Read one's own registers over and over; each answer must be one's own. */
static void *poll_own_registers(void *arg)
{
    struct poller_arg *a = arg;
    int i;

    for (i = 0; i < a->rounds; i++) {
        uint16_t v[10];
        int k;

        if (modbus_read_registers(a->ctx, a->base, 10, v) != 10) {
            fprintf(stderr, "master %d round %d: %s\n", a->who, i, modbus_strerror(errno));
            a->failures++;
            continue;
        }
        for (k = 0; k < 10; k++)
            if (v[k] != (uint16_t)(a->base * 100 + k))
                a->failures++;
    }
    return NULL;
}

START_TEST(t_two_masters_share_one_upstream)
{
    struct gwp g;
    struct poller_arg a[2];
    pthread_t th[2];
    int i, k;

    two_masters_allowed(NULL, NULL);
    for (i = 0; i < 2; i++)
        for (k = 0; k < 10; k++)
            plc_set_register(&plc, 10 * (i + 1) + k, (uint16_t)(10 * (i + 1) * 100 + k));
    start_server(&g, 0, "127.0.0.1:0");
    for (i = 0; i < 2; i++) {
        a[i].g = &g;
        a[i].who = i;
        a[i].base = 10 * (i + 1);
        a[i].rounds = 300;
        a[i].failures = 0;
        a[i].ctx = master(&g, i);
    }
    /* Both libmodbus masters number their requests from the same start. */
    for (i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, poll_own_registers, &a[i]), 0);
    for (i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    for (i = 0; i < 2; i++) {
        ck_assert_msg(a[i].failures == 0, "master %d: %d failures; log: %s", i, a[i].failures,
                      g.log);
        mbsc_modbus_close(a[i].ctx);
    }
    ck_assert_int_eq(plc_accepts(&plc), 1);
    ck_assert_int_eq(gw_finish(&g, SIGINT), 0);
}
END_TEST

/*
 * An upstream that accepts and closes at once (a PLC whose connections are
 * all taken does that; so does a server gateway that refuses a session
 * when it confirms): each connection is "ready" for an instant and never
 * answers.  The gateway must back off between attempts, not reconnect in
 * a loop: 100 + 200 + 400 + 800 ms fit in 1.5 s, so at most five attempts
 * then (a reconnect at once after each close would be hundreds).
 */
struct slammer {
    pthread_t th;
    int lfd, port, stop;
    unsigned accepts;
};

static void *slammer_main(void *arg)
{
    struct slammer *s = arg;

    while (!s->stop) {
        struct pollfd pfd = {s->lfd, POLLIN, 0};
        int fd;

        if (poll(&pfd, 1, 50) != 1)
            continue;
        fd = accept(s->lfd, NULL, NULL);
        if (fd >= 0) {
            __atomic_add_fetch(&s->accepts, 1, __ATOMIC_SEQ_CST);
            close(fd);
        }
    }
    return NULL;
}

START_TEST(t_upstream_that_closes_at_once_backs_off)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    struct slammer s;
    struct gwp g;
    char up[64];
    unsigned n;
    long long t0;
    const char *args[] = {
        "server",          "--listen",     "127.0.0.1:0",        "--upstream",      up,     "--key",
        path_of("gw.key"), "--authorized", path_of("allow.txt"), "--reconnect-max", "5000", NULL};

    memset(&s, 0, sizeof s);
    s.lfd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(s.lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(s.lfd, 64), 0);
    ck_assert_int_eq(getsockname(s.lfd, (struct sockaddr *)&sa, &len), 0);
    snprintf(up, sizeof up, "127.0.0.1:%d", ntohs(sa.sin_port));
    ck_assert_int_eq(pthread_create(&s.th, NULL, slammer_main, &s), 0);
    two_masters_allowed(NULL, NULL);
    ck_assert_msg(gw_spawn(&g, args), "the gateway did not start: %s", g.log);
    t0 = tu_now_ms();
    while (tu_now_ms() - t0 < 1500)
        (void)read_log(&g, 100);
    n = __atomic_load_n(&s.accepts, __ATOMIC_SEQ_CST);
    ck_assert_msg(n >= 2 && n <= 5, "%u connections in 1.5 s; log ends: %s", n,
                  g.log + (g.log_len > 300 ? g.log_len - 300 : 0));
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
    s.stop = 1;
    pthread_join(s.th, NULL);
    close(s.lfd);
}
END_TEST

START_TEST(t_plc_goes_away_and_comes_back)
{
    struct gwp g;
    modbus_t *m;
    uint16_t v = 0;
    int port, r;

    two_masters_allowed(NULL, NULL);
    start_server(&g, 0, "127.0.0.1:0");
    m = master(&g, 0);
    plc_set_register(&plc, 3, 33);
    ck_assert_int_eq(modbus_read_registers(m, 3, 1, &v), 1);
    port = plc.port;
    plc_stop(&plc);
    ck_assert_msg(wait_log(&g, "unreachable"), "log: %s", g.log);
    /* Down: the gateway answers 0A at once (0B if the request met the breaking link). */
    errno = 0;
    r = modbus_read_registers(m, 3, 1, &v);
    ck_assert_int_eq(r, -1);
    ck_assert_msg(errno == EMBXGPATH || errno == EMBXGTAR, "errno %d", errno);
    g.mark = g.log_len;
    ck_assert_int_eq(plc_start(&plc, port), 0);
    ck_assert_msg(wait_log(&g, "connected"), "log: %s", g.log);
    ck_assert_int_eq(modbus_read_registers(m, 3, 1, &v), 1);
    ck_assert_uint_eq(v, 33);
    mbsc_modbus_close(m);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

START_TEST(t_silent_and_malformed_plc)
{
    struct gwp g;
    modbus_t *m;
    uint16_t v[2];

    two_masters_allowed(NULL, NULL);
    request_timeout = "300";
    start_server(&g, 0, "127.0.0.1:0");
    m = master(&g, 0);
    plc_set_fault(&plc, PLC_SILENT);
    errno = 0;
    ck_assert_int_eq(modbus_read_registers(m, 0, 2, v), -1);
    ck_assert_int_eq(errno, EMBXGTAR);
    plc_set_fault(&plc, PLC_MANGLE);
    errno = 0;
    ck_assert_int_eq(modbus_read_registers(m, 0, 2, v), -1);
    ck_assert_int_eq(errno, EMBXGTAR);
    ck_assert_msg(wait_log(&g, "dropped a malformed answer"), "log: %s", g.log);
    plc_set_fault(&plc, PLC_OK);
    ck_assert_int_eq(modbus_read_registers(m, 0, 2, v), 2);
    mbsc_modbus_close(m);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

/*
 * A PLC that answers after the gateway's request timeout: the master gets
 * 0B for that request, and the late answer, which arrives while the
 * master's next request waits upstream, is dropped; the next request
 * gets its own answer.  The master is an mbsc one (server mode) or a
 * plain libmodbus client through a client gateway whose request timeout
 * is the shorter one (client mode: the server gateway's answer is the
 * late one).
 */
static void late_answer_dropped(const struct gwp *front, const struct gwp *dropper, modbus_t *m)
{
    struct held_read h;
    pthread_t th;
    uint16_t v = 0;

    plc_set_register(&plc, 1, 111);
    plc_set_register(&plc, 2, 222);
    ck_assert_int_eq(modbus_read_registers(m, 1, 1, &v), 1); /* the upstream is up */
    plc_set_fault(&plc, PLC_HOLD);
    errno = 0;
    ck_assert_int_eq(modbus_read_registers(m, 1, 1, &v), -1);
    ck_assert_int_eq(errno, EMBXGTAR);
    ck_assert_msg(plc_wait_held(&plc, WAIT_MS), "the PLC got no request: %s", front->log);
    memset(&h, 0, sizeof h);
    h.ctx = m;
    h.addr = 2;
    ck_assert_int_eq(pthread_create(&th, NULL, held_read_main, &h), 0);
    /* The next request is at the PLC, behind the held one: the late answer comes first. */
    ck_assert_msg(plc_wait_queued(&plc, WAIT_MS), "the next request did not reach the PLC: %s",
                  dropper->log);
    plc_release(&plc);
    pthread_join(th, NULL);
    ck_assert_msg(h.rc == 1, "the next read: %d (%s); log: %s", h.rc, modbus_strerror(h.err),
                  dropper->log);
    ck_assert_uint_eq(h.v, 222);
    ck_assert_int_eq(modbus_read_registers(m, 1, 1, &v), 1);
    ck_assert_uint_eq(v, 111);
}

START_TEST(t_late_answer_dropped)
{
    struct gwp g;
    modbus_t *m;

    two_masters_allowed(NULL, NULL);
    request_timeout = "300";
    start_server(&g, 0, "127.0.0.1:0");
    m = master(&g, 0);
    late_answer_dropped(&g, &g, m);
    mbsc_modbus_close(m);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

START_TEST(t_bad_policy_refused_with_line)
{
    struct gwp g;
    const char *args[] = {"server",
                          "--listen",
                          "127.0.0.1:0",
                          "--upstream",
                          plc_hostport(),
                          "--key",
                          path_of("gw.key"),
                          "--authorized",
                          path_of("allow.txt"),
                          "--policy",
                          path_of("policy.txt"),
                          NULL};
    char want[160];

    two_masters_allowed(NULL, NULL);
    write_file("policy.txt", "viewer read holding-registers 0-9\n"
                             "viewer fly holding-registers 0-9\n");
    ck_assert(!gw_spawn(&g, args));
    ck_assert_int_eq(gw_finish(&g, 0), 1);
    snprintf(want, sizeof want, "%s:2:", path_of("policy.txt"));
    ck_assert_msg(strstr(g.log, want) != NULL, "log: %s", g.log);
}
END_TEST

struct keep_polling {
    modbus_t *ctx;
    volatile int stop;
    int reads, failures;
};

static void *keep_polling_main(void *arg)
{
    struct keep_polling *k = arg;

    while (!k->stop) {
        uint16_t v;

        if (modbus_read_registers(k->ctx, 1, 1, &v) == 1)
            __atomic_add_fetch(&k->reads, 1, __ATOMIC_SEQ_CST);
        else
            __atomic_add_fetch(&k->failures, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

/*
 * Until the poller has read more than n times (bounded: 20 s).  A thread
 * may start late on a loaded machine: the test waits for what it needs to
 * have happened instead of assuming it has.
 */
static int polled_more_than(struct keep_polling *k, int n)
{
    for (int i = 0; i < 20000; i++) {
        struct timespec ms = {0, 1000000};
        if (__atomic_load_n(&k->reads, __ATOMIC_SEQ_CST) > n)
            return 1;
        nanosleep(&ms, NULL);
    }
    return 0;
}

START_TEST(t_reload_adds_removes_and_changes_roles)
{
    struct gwp g;
    struct keep_polling kp = {NULL, 0, 0, 0};
    modbus_t *alice, *bob, *carol;
    pthread_t th;
    char a[256], c[256], all[900];

    /* alice (operator) keeps polling; bob (operator) will be removed; carol added. */
    two_masters_allowed("operator", "operator");
    write_file("policy.txt", policy_text);
    start_server(&g, 1, "127.0.0.1:0");
    alice = master(&g, 0);
    bob = master(&g, 1);
    ck_assert_int_eq(modbus_write_register(alice, 2, 5), 1);
    kp.ctx = master(&g, 0);
    ck_assert_int_eq(pthread_create(&th, NULL, keep_polling_main, &kp), 0);
    ck_assert_msg(polled_more_than(&kp, 0), "the polling master never got an answer");

    allow_line(a, sizeof a, 0, "alice", "viewer");
    allow_line(c, sizeof c, 2, "carol", "operator");
    snprintf(all, sizeof all, "%s%s", a, c);
    write_file("allow.txt", all);
    g.mark = g.log_len;
    kill(g.pid, SIGHUP);
    ck_assert_msg(wait_log(&g, "reloaded:"), "log: %s", g.log);
    ck_assert_msg(strstr(g.log, "removed from the allow-list") != NULL, "log: %s", g.log);

    /* alice is a viewer from her next request on; bob is gone; carol gets in. */
    errno = 0;
    ck_assert_int_eq(modbus_write_register(alice, 2, 6), -1);
    ck_assert_int_eq(errno, EMBXILFUN);
    ck_assert_uint_eq(plc_register(&plc, 2), 5);
    ck_assert_int_eq(modbus_write_register(bob, 2, 7), -1);
    carol = master(&g, 2);
    ck_assert_int_eq(modbus_write_register(carol, 2, 8), 1);
    ck_assert_uint_eq(plc_register(&plc, 2), 8);

    /* A bad allow-list keeps the old configuration: carol still gets in again. */
    snprintf(all, sizeof all, "%s%sthis is not a key\n", a, c);
    write_file("allow.txt", all);
    g.mark = g.log_len;
    kill(g.pid, SIGHUP);
    ck_assert_msg(wait_log(&g, "reload failed"), "log: %s", g.log);
    ck_assert_msg(wait_log(&g, "allow.txt:3:"), "log: %s", g.log);
    mbsc_modbus_close(carol);
    carol = master(&g, 2);
    ck_assert_int_eq(modbus_write_register(carol, 2, 9), 1);

    /* The status view names every master with its counters. */
    g.mark = g.log_len;
    kill(g.pid, SIGUSR1);
    ck_assert_msg(wait_log(&g, "status: master carol role operator cipher chacha20"), "log: %s",
                  g.log);

    /* alice's second connection polled all along, through both reloads,
     * and still does. */
    ck_assert_msg(polled_more_than(&kp, __atomic_load_n(&kp.reads, __ATOMIC_SEQ_CST)),
                  "the polling master stopped getting answers after the reloads");
    kp.stop = 1;
    pthread_join(th, NULL);
    ck_assert_int_eq(kp.failures, 0);
    mbsc_modbus_close(kp.ctx);
    mbsc_modbus_close(alice);
    mbsc_modbus_close(bob);
    mbsc_modbus_close(carol);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

/* ---- client mode ------------------------------------------------------------- */

static void start_client(struct gwp *g, const char *upstream)
{
    const char *args[] = {"client",
                          "--listen",
                          "127.0.0.1:0",
                          "--upstream",
                          upstream,
                          "--key",
                          path_of("client.key"),
                          "--peer",
                          path_of("gw.pub"),
                          "--request-timeout",
                          "3000",
                          "--reconnect-max",
                          "200",
                          NULL};

    ck_assert_msg(gw_spawn(g, args), "the client gateway did not start: %s", g->log);
}

static modbus_t *plain_client(const struct gwp *g)
{
    char host[64], port[8];
    modbus_t *ctx;

    ck_assert_int_eq(mbsc_parse_hostport(g->addr, host, sizeof host, port, sizeof port), MBSC_OK);
    ctx = modbus_new_tcp(host, atoi(port));
    ck_assert_ptr_nonnull(ctx);
    ck_assert_int_eq(modbus_connect(ctx), 0);
    modbus_set_response_timeout(ctx, 8, 0);
    return ctx;
}

/*
 * An mbsc slave in a thread, upstream of a client gateway, that answers
 * its second request late: only once the third has come, which proves the
 * third is waiting at the gateway when the late answer arrives.  Register
 * a reads 0xAB00 + a.
 */
struct late_slave {
    pthread_t th;
    mbsc_listener *l;
    mbsc_config *cfg;
    mbsc_allowlist *allow;
    char addr[MBSC_ADDRSTRLEN];
    int rc;
};

static size_t read_answer(const uint8_t *req, size_t len, uint8_t *rsp)
{
    unsigned start = (unsigned)(req[8] << 8 | req[9]), n = (unsigned)(req[10] << 8 | req[11]), i;

    if (len != 12 || req[7] != 0x03 || n == 0 || n > 125) {
        /* Anything else: exception 01 (illegal function). */
        memcpy(rsp, req, 4);
        rsp[4] = 0;
        rsp[5] = 3;
        rsp[6] = req[6];
        rsp[7] = (uint8_t)(req[7] | 0x80);
        rsp[8] = 0x01;
        return 9;
    }
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

static void *late_slave_main(void *arg)
{
    struct late_slave *sl = arg;
    uint8_t req[300], held[300], rsp[300];
    size_t len, held_len = 0;
    unsigned requests = 0;
    mbsc_conn *c = NULL;
    int r = mbsc_accept(sl->l, sl->cfg, WAIT_MS, &c, NULL, 0);

    while (r == MBSC_OK && (r = mbsc_conn_recv(c, req, sizeof req, &len, WAIT_MS)) == MBSC_OK) {
        if (len == 0)
            continue; /* keep-alive */
        if (++requests == 2) {
            memcpy(held, req, len);
            held_len = len;
            continue;
        }
        if (held_len != 0) {
            r = mbsc_conn_send(c, rsp, read_answer(held, held_len, rsp), WAIT_MS);
            held_len = 0;
        }
        if (r == MBSC_OK)
            r = mbsc_conn_send(c, rsp, read_answer(req, len, rsp), WAIT_MS);
    }
    sl->rc = r;
    mbsc_conn_close(c);
    return NULL;
}

START_TEST(t_late_answer_dropped_client_mode)
{
    struct late_slave sl;
    mbsc_keypair slave_kp = gw_kp;
    struct gwp cli;
    uint16_t v[2];
    modbus_t *m;
    const char *args[] = {"client",
                          "--listen",
                          "127.0.0.1:0",
                          "--upstream",
                          NULL,
                          "--key",
                          path_of("client.key"),
                          "--peer",
                          path_of("gw.pub"),
                          "--request-timeout",
                          "300",
                          NULL};

    memset(&sl, 0, sizeof sl);
    sl.allow = mbsc_allowlist_new();
    sl.cfg = mbsc_config_new(MBSC_ROLE_SLAVE);
    ck_assert_ptr_nonnull(sl.allow);
    ck_assert_ptr_nonnull(sl.cfg);
    ck_assert_int_eq(mbsc_allowlist_add(sl.allow, other_gw_kp.public_key, "scada", NULL), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_keypair(sl.cfg, &slave_kp), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_allowlist(sl.cfg, sl.allow), MBSC_OK);
    ck_assert_int_eq(mbsc_listen("127.0.0.1:0", &sl.l, NULL, 0), MBSC_OK);
    ck_assert_int_eq(mbsc_listener_address(sl.l, sl.addr, sizeof sl.addr), MBSC_OK);
    ck_assert_int_eq(pthread_create(&sl.th, NULL, late_slave_main, &sl), 0);
    args[4] = sl.addr;
    ck_assert_msg(gw_spawn(&cli, args), "the client gateway did not start: %s", cli.log);
    m = plain_client(&cli);
    ck_assert_int_eq(modbus_read_registers(m, 4, 1, v), 1);
    ck_assert_uint_eq(v[0], 0xAB04);
    errno = 0;
    ck_assert_int_eq(modbus_read_registers(m, 1, 1, v), -1); /* held: 0B from the gateway */
    ck_assert_int_eq(errno, EMBXGTAR);
    /* Its answer comes once this request is at the slave; this one gets its own. */
    ck_assert_msg(modbus_read_registers(m, 2, 2, v) == 2, "read: %s; log: %s",
                  modbus_strerror(errno), cli.log);
    ck_assert_uint_eq(v[0], 0xAB02);
    ck_assert_uint_eq(v[1], 0xAB03);
    ck_assert_int_eq(modbus_read_registers(m, 9, 1, v), 1);
    ck_assert_uint_eq(v[0], 0xAB09);
    modbus_close(m);
    modbus_free(m);
    ck_assert_int_eq(gw_finish(&cli, SIGTERM), 0);
    pthread_join(sl.th, NULL);
    mbsc_listener_close(sl.l);
    mbsc_config_free(sl.cfg);
    mbsc_allowlist_free(sl.allow);
}
END_TEST

START_TEST(t_client_gateway_to_server_gateway)
{
    struct gwp srv, cli, srv2;
    char line[256], listen[80];
    modbus_t *m;
    uint16_t v = 0;

    /* The client gateway's key is the only master of the server gateway. */
    master_kp[3] = other_gw_kp;
    allow_line(line, sizeof line, 3, "scada", "operator");
    write_file("allow.txt", line);
    write_file("policy.txt", policy_text);
    start_server(&srv, 1, "127.0.0.1:0");
    start_client(&cli, srv.addr);
    m = plain_client(&cli);
    ck_assert_int_eq(modbus_write_register(m, 4, 4444), 1);
    ck_assert_uint_eq(plc_register(&plc, 4), 4444);
    ck_assert_int_eq(modbus_read_registers(m, 4, 1, &v), 1);
    ck_assert_uint_eq(v, 4444);
    /* The server gateway's policy applies to the SCADA host's role. */
    errno = 0;
    ck_assert_int_eq(modbus_write_bit(m, 0, 1), -1);
    ck_assert_int_eq(errno, EMBXILFUN);

    /* The server gateway goes away: 0B meanwhile; back on the same port, a new session. */
    snprintf(listen, sizeof listen, "%s", srv.addr);
    ck_assert_int_eq(gw_finish(&srv, SIGTERM), 0);
    ck_assert_msg(wait_log(&cli, "lost"), "log: %s", cli.log);
    errno = 0;
    ck_assert_int_eq(modbus_read_registers(m, 4, 1, &v), -1);
    ck_assert_int_eq(errno, EMBXGTAR);
    cli.mark = cli.log_len;
    start_server(&srv2, 1, listen);
    ck_assert_msg(wait_log(&cli, "connected"), "log: %s", cli.log);
    ck_assert_int_eq(modbus_read_registers(m, 4, 1, &v), 1);
    ck_assert_uint_eq(v, 4444);
    modbus_close(m);
    modbus_free(m);
    ck_assert_int_eq(gw_finish(&cli, SIGTERM), 0);
    ck_assert_int_eq(gw_finish(&srv2, SIGTERM), 0);
}
END_TEST

START_TEST(t_client_refuses_remote_plaintext)
{
    struct gwp g;
    const char *args[] = {"client",          "--listen", "0.0.0.0:0",           "--upstream",
                          "127.0.0.1:1",     "--key",    path_of("client.key"), "--peer",
                          path_of("gw.pub"), NULL};

    ck_assert(!gw_spawn(&g, args));
    ck_assert_int_eq(gw_finish(&g, 0), 2);
    ck_assert_msg(strstr(g.log, "--allow-remote-plaintext") != NULL, "log: %s", g.log);
}
END_TEST

START_TEST(t_config_file)
{
    struct gwp g;
    char conf[2048];
    const char *args[] = {"--config", path_of("gw.conf"), NULL};
    modbus_t *m;
    uint16_t v = 0;

    two_masters_allowed(NULL, NULL);
    snprintf(conf, sizeof conf,
             "# a server gateway\n"
             "mode = server\n"
             "listen = 127.0.0.1:0\n"
             "upstream = %s   # the PLC\n"
             "key = %s\n"
             "authorized = %s\n"
             "max-in-flight = 2\n",
             plc_hostport(), path_of("gw.key"), path_of("allow.txt"));
    write_file("gw.conf", conf);
    ck_assert_msg(gw_spawn(&g, args), "log: %s", g.log);
    m = master(&g, 0);
    ck_assert_int_eq(modbus_read_registers(m, 0, 1, &v), 1);
    mbsc_modbus_close(m);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);

    /* An unknown setting is named with its file and line. */
    write_file("gw.conf", "mode = server\nlisten = 127.0.0.1:0\nspeed = 11\n");
    ck_assert(!gw_spawn(&g, args));
    ck_assert_int_eq(gw_finish(&g, 0), 2);
    ck_assert_msg(strstr(g.log, "gw.conf:3: unknown setting 'speed'") != NULL, "log: %s", g.log);
}
END_TEST

START_TEST(t_systemd_readiness_and_levels)
{
    struct gwp g;
    struct sockaddr_un sa;
    char buf[64];
    ssize_t n;
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

    /* What systemd does for Type=notify: a datagram socket named in NOTIFY_SOCKET. */
    ck_assert_int_ge(fd, 0);
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s/notify", dir);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    setenv("NOTIFY_SOCKET", sa.sun_path, 1);
    setenv("JOURNAL_STREAM", "8:12345", 1);
    two_masters_allowed(NULL, NULL);
    start_server(&g, 0, "127.0.0.1:0");
    {
        struct pollfd pfd = {fd, POLLIN, 0};

        ck_assert_int_eq(poll(&pfd, 1, WAIT_MS), 1);
    }
    n = recv(fd, buf, sizeof buf - 1, 0);
    ck_assert_int_gt(n, 0);
    buf[n] = '\0';
    ck_assert_str_eq(buf, "READY=1");
    /* Information lines carry journald's priority 6, errors 3. */
    ck_assert_msg(wait_log(&g, "<6>server mode on "), "log: %s", g.log);
    kill(g.pid, SIGTERM);
    ck_assert_int_eq(gw_finish(&g, 0), 0);
    n = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
    ck_assert_int_gt(n, 0);
    buf[n] = '\0';
    ck_assert_str_eq(buf, "STOPPING=1");
    close(fd);
    unlink(sa.sun_path);
    write_file("allow.txt", "not a key line\n");
    ck_assert(!gw_spawn(&g, (const char *const[]){"server", "--listen", "127.0.0.1:0", "--upstream",
                                                  plc_hostport(), "--key", path_of("gw.key"),
                                                  "--authorized", path_of("allow.txt"), NULL}));
    ck_assert_int_eq(gw_finish(&g, 0), 1);
    ck_assert_msg(strstr(g.log, "<3>") == g.log, "log: %s", g.log);
}
END_TEST

/* ---- secure_slave --policy, with the same policy code ---------------------- */

START_TEST(t_secure_slave_policy_and_reload)
{
    struct gwp g;
    const char *args[] = {"--listen",        "127.0.0.1:0",         "--key",
                          path_of("gw.key"), "--authorized",        path_of("allow.txt"),
                          "--policy",        path_of("policy.txt"), NULL};
    modbus_t *alice, *bob;
    uint16_t v = 0;

    gw_program = "examples/secure_slave";
    two_masters_allowed("operator", "viewer");
    write_file("policy.txt", policy_text);
    ck_assert_msg(gw_spawn(&g, args), "secure_slave did not start: %s", g.log);
    alice = master(&g, 0);
    bob = master(&g, 1);
    ck_assert_int_eq(modbus_write_register(alice, 3, 30), 1);
    errno = 0;
    ck_assert_int_eq(modbus_write_register(bob, 3, 31), -1);
    ck_assert_int_eq(errno, EMBXILFUN);
    ck_assert_msg(wait_log(&g, "(bob) refused: function 0x06 address 3"), "log: %s", g.log);
    ck_assert_int_eq(modbus_read_registers(bob, 3, 1, &v), 1);
    ck_assert_uint_eq(v, 30);

    /* Reload: alice removed, bob promoted; the next requests show it. */
    {
        char b[256];

        allow_line(b, sizeof b, 1, "bob", "operator");
        write_file("allow.txt", b);
    }
    kill(g.pid, SIGHUP);
    ck_assert_msg(wait_log(&g, "reloaded:"), "log: %s", g.log);
    ck_assert_int_eq(modbus_write_register(bob, 3, 32), 1);
    ck_assert_int_eq(modbus_read_registers(bob, 3, 1, &v), 1);
    ck_assert_uint_eq(v, 32);
    ck_assert_int_eq(modbus_read_registers(alice, 3, 1, &v), -1);

    /* A bad policy keeps the old configuration, and says where. */
    write_file("policy.txt", "viewer read coils 5-2\n");
    kill(g.pid, SIGHUP);
    ck_assert_msg(wait_log(&g, "policy.txt:1:"), "log: %s", g.log);
    ck_assert_msg(wait_log(&g, "reload failed"), "log: %s", g.log);
    ck_assert_int_eq(modbus_write_register(bob, 3, 33), 1);
    mbsc_modbus_close(alice);
    mbsc_modbus_close(bob);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

Suite *gateway_suite(void)
{
    Suite *s = suite_create("gateway");
    TCase *tc = tcase_create("gateway");

    tcase_add_unchecked_fixture(tc, run_dir_create, run_dir_remove);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, t_forwards_reads_and_writes);
    tcase_add_test(tc, t_drain_refuses_new_answers_in_flight);
    tcase_add_test(tc, t_status_command);
    tcase_add_test(tc, t_unit_ids_0_and_255);
    tcase_add_test(tc, t_roles_read_only_master);
    tcase_add_test(tc, t_two_masters_share_one_upstream);
    tcase_add_test(tc, t_plc_goes_away_and_comes_back);
    tcase_add_test(tc, t_upstream_that_closes_at_once_backs_off);
    tcase_add_test(tc, t_silent_and_malformed_plc);
    tcase_add_test(tc, t_late_answer_dropped);
    tcase_add_test(tc, t_late_answer_dropped_client_mode);
    tcase_add_test(tc, t_bad_policy_refused_with_line);
    tcase_add_test(tc, t_reload_adds_removes_and_changes_roles);
    tcase_add_test(tc, t_client_gateway_to_server_gateway);
    tcase_add_test(tc, t_client_refuses_remote_plaintext);
    tcase_add_test(tc, t_config_file);
    tcase_add_test(tc, t_systemd_readiness_and_levels);
    tcase_add_test(tc, t_secure_slave_policy_and_reload);
    suite_add_tcase(s, tc);
    return s;
}
