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
#include "fixture.h"
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
    /* $GATEWAY_UNDER_TEST: another build's gateway (an absolute path), to compare. */
    gw_program =
        getenv("GATEWAY_UNDER_TEST") != NULL ? getenv("GATEWAY_UNDER_TEST") : "tools/mbsc-gateway";
    gw_journal_stream = 0;
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

/*
 * For failure messages: whether the gateway at g still runs, or how it
 * ended.  A process that dies closes its sockets before its parent can
 * see its status, so a peer's "connection reset" may come first: this
 * looks for a second.
 */
static const char *gw_state(const struct gwp *g)
{
    static char buf[64];
    long long end = tu_now_ms() + 1000;
    int st = 0;

    while (waitpid(g->pid, &st, WNOHANG) != g->pid) {
        struct timespec ms = {0, 10000000};

        if (tu_now_ms() >= end)
            return "the gateway runs";
        nanosleep(&ms, NULL);
    }
    if (WIFSIGNALED(st))
        snprintf(buf, sizeof buf, "the gateway was killed by signal %d", WTERMSIG(st));
    else
        snprintf(buf, sizeof buf, "the gateway exited with status %d", WEXITSTATUS(st));
    return buf;
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
    ck_assert_msg(ctx != NULL, "connect %s: %s (%s); log: %s", g->addr, why, gw_state(g), g->log);
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

/* The end of g's log, short enough for a failure message. */
static const char *log_tail(const struct gwp *g)
{
    return g->log + (g->log_len > 600 ? g->log_len - 600 : 0);
}

/* How often needle occurs in s. */
static unsigned count_of(const char *s, const char *needle)
{
    unsigned n = 0;

    while ((s = strstr(s, needle)) != NULL) {
        n++;
        s += strlen(needle);
    }
    return n;
}

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
    ck_assert_msg(wait_log(&g, "stopping: 1 request to finish"), "log: %s", g.log);
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

/* A server gateway for the masters operator and viewer, under the policy, with a control socket. */
static void start_policy_gateway(struct gwp *g)
{
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
    ck_assert_msg(gw_spawn(g, argv), "the gateway did not start: %s", g->log);
}

START_TEST(t_status_command)
{
    struct gwp g;
    struct stat st;
    char args[256], out[4096];
    modbus_t *alice, *bob;
    uint16_t v;

    start_policy_gateway(&g);
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
    ck_assert_int_eq(gw_run_status(args, out, sizeof out), 0);
    ck_assert_msg(strstr(out, ", 2 masters,") != NULL, "status: %s", out);
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
    ck_assert_int_eq(gw_run_status("", out, sizeof out), 2);
    ck_assert_msg(strstr(out, "--control PATH") != NULL, "status: %s", out);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
    /* The socket goes with the gateway. */
    ck_assert_int_ne(lstat(path_of("ctl"), &st), 0);
    ck_assert_int_eq(gw_run_status(args, out, sizeof out), 1);
    ck_assert_msg(strstr(out, "cannot reach the gateway") != NULL, "status: %s", out);
}
END_TEST

struct trickler {
    const char *path;
    int started, done; /* atomics: the first byte went out; the trickle is over */
    int closed_by_gw;  /* the gateway closed the connection before the trickle ended */
};

/* Connect to the control socket and send one byte every 300 ms for 3 s, never a newline. */
static void *trickle_main(void *arg)
{
    struct trickler *t = arg;
    struct sockaddr_un sa;
    int fd = socket(AF_UNIX, SOCK_STREAM, 0), i;

    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", t->path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        __atomic_store_n(&t->done, 1, __ATOMIC_SEQ_CST);
        return NULL;
    }
    for (i = 0; i < 10; i++) {
        struct timespec gap = {0, 300000000};
        char sink[128];

        if (send(fd, "s", 1, MSG_NOSIGNAL) != 1 || recv(fd, sink, sizeof sink, MSG_DONTWAIT) >= 0) {
            t->closed_by_gw = 1; /* refused, or answered and closed */
            break;
        }
        __atomic_store_n(&t->started, 1, __ATOMIC_SEQ_CST);
        nanosleep(&gap, NULL);
    }
    close(fd);
    __atomic_store_n(&t->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/*
 * Issue 19, item 6: a control client that trickles its request, a byte
 * every 300 ms, must neither hold the loop nor keep its connection for
 * longer than the control socket's deadline; masters are served all along.
 */
START_TEST(t_control_client_trickles)
{
    struct gwp g;
    struct trickler t;
    pthread_t th;
    modbus_t *m;
    uint16_t v;
    char args_status[256], out[4096];
    int during = 0, status_rc = -1;
    const char *args[] = {"server",          "--listen",     "127.0.0.1:0",
                          "--upstream",      plc_hostport(), "--key",
                          path_of("gw.key"), "--authorized", path_of("allow.txt"),
                          "--control",       path_of("ctl"), NULL};

    two_masters_allowed(NULL, NULL);
    ck_assert_msg(gw_spawn(&g, args), "the gateway did not start: %s", g.log);
    m = master(&g, 0);
    memset(&t, 0, sizeof t);
    t.path = path_of("ctl");
    ck_assert_int_eq(pthread_create(&th, NULL, trickle_main, &t), 0);
    while (!__atomic_load_n(&t.started, __ATOMIC_SEQ_CST) &&
           !__atomic_load_n(&t.done, __ATOMIC_SEQ_CST)) {
        struct timespec ms = {0, 1000000};

        nanosleep(&ms, NULL);
    }
    /* Reads answered while the trickle lasts, and another control client served. */
    snprintf(args_status, sizeof args_status, "--control %s", path_of("ctl"));
    while (!__atomic_load_n(&t.done, __ATOMIC_SEQ_CST)) {
        ck_assert_msg(modbus_read_registers(m, 0, 1, &v) == 1, "read: %s; log: %s",
                      modbus_strerror(errno), g.log);
        if (!__atomic_load_n(&t.done, __ATOMIC_SEQ_CST))
            during++;
        if (during == 5 && status_rc < 0)
            status_rc = gw_run_status(args_status, out, sizeof out);
    }
    pthread_join(th, NULL);
    ck_assert_msg(during >= 5, "%d reads answered while a control client trickled; log: %s", during,
                  g.log);
    ck_assert_msg(t.closed_by_gw, "the trickling control client kept its connection for 3 s");
    ck_assert_msg(status_rc == 0 && strstr(out, ", 1 master,") != NULL, "status (%d): %s",
                  status_rc, out);
    mbsc_modbus_close(m);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
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
    unsigned keep_after; /* 0: close every connection; N: keep those after the Nth, silent */
    int kept;            /* the last connection kept, or 0 */
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
            unsigned n = __atomic_add_fetch(&s->accepts, 1, __ATOMIC_SEQ_CST);

            if (s->keep_after != 0 && n > s->keep_after) {
                if (s->kept > 0)
                    close(s->kept);
                s->kept = fd;
            } else {
                close(fd);
            }
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
    /* Each connection ends before its first answer: a failed attempt, logged once. */
    ck_assert_msg(count_of(g.log, "unreachable") == 1 && count_of(g.log, " lost") == 0 &&
                      count_of(g.log, " connected") <= 1,
                  "log ends: %s", log_tail(&g));
    ck_assert_msg(strstr(g.log, "(the connection ended before its first answer)") != NULL,
                  "log ends: %s", log_tail(&g));
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
 * A TCP listener on 127.0.0.1 that never completes a connection: its
 * accept queue (backlog 0) is held full by one connection of our own, and
 * Linux drops the SYNs of further ones, so a connect to it stays pending,
 * as to a PLC that is switched on but not answering yet.
 */
struct hanging {
    int lfd, filler;
    char addr[32];
};

static void hanging_open(struct hanging *h)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;

    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    h->lfd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(h->lfd, 0);
    ck_assert_int_eq(bind(h->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(h->lfd, 0), 0);
    ck_assert_int_eq(getsockname(h->lfd, (struct sockaddr *)&sa, &len), 0);
    snprintf(h->addr, sizeof h->addr, "127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
    h->filler = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(h->filler, 0);
    ck_assert_int_eq(connect(h->filler, (struct sockaddr *)&sa, sizeof sa), 0);
}

static void hanging_close(struct hanging *h)
{
    close(h->filler);
    close(h->lfd);
}

/* A server gateway in front of upstream, with a short request timeout and a long connect timeout.
 */
static void start_server_to(struct gwp *g, const char *upstream)
{
    const char *args[] = {"server",
                          "--listen",
                          "127.0.0.1:0",
                          "--upstream",
                          upstream,
                          "--key",
                          path_of("gw.key"),
                          "--authorized",
                          path_of("allow.txt"),
                          "--request-timeout",
                          "300",
                          "--connect-timeout",
                          "20000",
                          NULL};

    ck_assert_msg(gw_spawn(g, args), "the gateway did not start: %s", g->log);
}

/*
 * Issue 19, item 1: a master sends one read while the PLC's connect is
 * still pending, and goes away.  Its request times out in the queue; the
 * 0B answer finds the session at its end, the close is reported at once,
 * and the multiplexer must not be walking the queue it frees.
 */
START_TEST(t_master_gone_before_its_timeout)
{
    struct hanging h;
    struct gwp g;
    modbus_t *m;
    uint16_t v = 0;
    int i;

    two_masters_allowed(NULL, "viewer");
    hanging_open(&h);
    start_server_to(&g, h.addr);
    for (i = 0; i < 3; i++) {
        m = master(&g, 1);
        /* The master gives up long before the gateway's timeout, and closes. */
        modbus_set_response_timeout(m, 0, 50000);
        ck_assert_int_eq(modbus_read_registers(m, 0, 1, &v), -1);
        mbsc_modbus_close(m);
        ck_assert_msg(wait_log(&g, "master bob from 127.0.0.1:"), "the gateway died? log: %s",
                      g.log);
    }
    /* Still serving: another master's read gets the 0B of a PLC not reached yet. */
    m = master(&g, 0);
    errno = 0;
    ck_assert_int_eq(modbus_read_registers(m, 0, 1, &v), -1);
    ck_assert_int_eq(errno, EMBXGTAR);
    mbsc_modbus_close(m);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
    hanging_close(&h);
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

/* A rule that grants more than it seems is warned about at start and at every reload. */
START_TEST(t_policy_warnings_at_start_and_reload)
{
    struct gwp g;
    char want[256];

    two_masters_allowed("operator", "viewer");
    write_file("policy.txt", "operator function 0x08\n"
                             "viewer   function 0x2b:0x0e 0x08:0x00\n");
    start_server(&g, 1, "127.0.0.1:0");
    snprintf(want, sizeof want, "warning: %s:1: role operator: 'function 0x08' (diagnostics)",
             path_of("policy.txt"));
    ck_assert_msg(wait_log(&g, want), "log: %s", g.log);
    write_file("policy.txt", "# whole codes\n"
                             "operator read holding-registers 0-9\n"
                             "viewer   function 0x2B\n");
    kill(g.pid, SIGHUP);
    snprintf(want, sizeof want, "warning: %s:3: role viewer: 'function 0x2b'",
             path_of("policy.txt"));
    ck_assert_msg(wait_log(&g, want), "log: %s", g.log);
    ck_assert_msg(wait_log(&g, "reloaded:"), "log: %s", g.log);
    /* The narrow rules of the first file left no warning. */
    snprintf(want, sizeof want, "%s:2:", path_of("policy.txt"));
    ck_assert_msg(strstr(g.log, want) == NULL, "log: %s", g.log);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
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

/* ---- masters held in their handshake across a reload ---------------------------- */

/*
 * A master of key i on a raw socket to g, driven by hand and held just
 * before its confirming frame: message 1 is out and message 2 has opened.
 */
static void hand_held(const struct gwp *g, int i, struct tu_hand *h)
{
    mbsc_config *cfg = mbsc_config_new(MBSC_ROLE_MASTER);
    long long until = tu_now_ms() + WAIT_MS;

    ck_assert_ptr_nonnull(cfg);
    ck_assert_int_eq(mbsc_config_set_keypair(cfg, &master_kp[i]), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_peer_public_key(cfg, gw_kp.public_key), MBSC_OK);
    tu_hand_start(h, cfg, tu_raw_connect(g->addr));
    mbsc_config_free(cfg); /* the session keeps what it needs */
    while (!mbsc_session_established(h->s) && tu_now_ms() < until)
        ck_assert_int_ge(tu_hand_read(h, 100), 0);
    ck_assert_msg(mbsc_session_established(h->s), "no message 2 from %s", g->addr);
}

/*
 * Send the confirming frame and one request (sent even if the program has
 * closed the socket meanwhile); the answer's function code (with the
 * exception code in *exc for an exception), or -1 if the program closed
 * the connection instead.
 */
static int hand_request(struct tu_hand *h, const uint8_t *req, size_t len, uint8_t *exc,
                        uint16_t *value)
{
    long long until = tu_now_ms() + WAIT_MS;
    const uint8_t *out;
    uint8_t rsp[MBSC_MODBUS_MAX_ADU];
    size_t n;
    long got;

    ck_assert_int_eq(mbsc_session_send(h->s, req, len), MBSC_OK);
    out = mbsc_session_output(h->s, &n);
    (void)send(h->fd, out, n, MSG_NOSIGNAL);
    mbsc_session_output_consumed(h->s, n);
    while (tu_now_ms() < until) {
        int r = tu_hand_read(h, 100);

        if (r < 0)
            return -1;
        got = r > 0 ? tu_hand_payload(h, rsp, sizeof rsp) : -1;
        if (got < 9)
            continue;
        if (rsp[7] & 0x80)
            *exc = rsp[8];
        else if (rsp[7] == 0x03 && got >= 11)
            *value = (uint16_t)(rsp[9] << 8 | rsp[10]);
        return rsp[7];
    }
    ck_abort_msg("neither an answer nor a close");
    return -1;
}

static int hand_write(struct tu_hand *h, int addr, uint16_t v, uint8_t *exc)
{
    const uint8_t req[12] = {0x12,
                             0x34,
                             0,
                             0,
                             0,
                             6,
                             1,
                             0x06,
                             (uint8_t)(addr >> 8),
                             (uint8_t)addr,
                             (uint8_t)(v >> 8),
                             (uint8_t)v};
    uint16_t unused;

    return hand_request(h, req, sizeof req, exc, &unused);
}

static int hand_read(struct tu_hand *h, int addr, uint16_t *v)
{
    const uint8_t req[12] = {0x12,          0x35, 0, 0, 0, 6, 1, 0x03, (uint8_t)(addr >> 8),
                             (uint8_t)addr, 0,    1};
    uint8_t exc = 0;

    return hand_request(h, req, sizeof req, &exc, v);
}

/*
 * alice (operator) and bob (operator) are held in their handshakes; a
 * reload removes alice and makes bob a viewer.  The program (gateway or
 * secure_slave, started by the caller on allow.txt and policy.txt with a
 * long handshake timeout) must end alice's handshake and refuse bob's
 * write: register 5 stays 0.  Returns with both held masters closed.
 */
static void revoke_during_handshake(struct gwp *g)
{
    struct tu_hand alice, bob;
    char b[256];
    uint8_t exc = 0;
    uint16_t v = 0xFFFF;
    size_t before;

    hand_held(g, 0, &alice);
    hand_held(g, 1, &bob);
    allow_line(b, sizeof b, 1, "bob", "viewer");
    write_file("allow.txt", b);
    g->mark = before = g->log_len;
    kill(g->pid, SIGHUP);
    ck_assert_msg(wait_log(g, "reloaded:"), "log: %s", g->log);
    /* alice confirms after the reload, under her old rights if any survived. */
    ck_assert_msg(hand_write(&alice, 5, 57005, &exc) == -1,
                  "the removed master's write was answered; log: %s", g->log);
    g->mark = before; /* the refusal is counted at the reload or at confirmation */
    ck_assert_msg(wait_log(g, "1 unknown master key"), "log: %s", g->log);
    ck_assert_int_eq(hand_write(&bob, 5, 57005, &exc), 0x86);
    ck_assert_uint_eq(exc, MBSC_POLICY_REFUSAL_EXCEPTION);
    ck_assert_int_eq(hand_read(&bob, 5, &v), 0x03);
    ck_assert_uint_eq(v, 0);
    tu_hand_close(&alice);
    tu_hand_close(&bob);
}

START_TEST(t_reload_revokes_masters_in_handshake)
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
                          "--handshake-timeout",
                          "30000",
                          NULL};

    two_masters_allowed("operator", "operator");
    write_file("policy.txt", policy_text);
    plc_set_register(&plc, 5, 0);
    ck_assert_msg(gw_spawn(&g, args), "the gateway did not start: %s", g.log);
    revoke_during_handshake(&g);
    ck_assert_uint_eq(plc_register(&plc, 5), 0);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

/* ---- what one master may hold ------------------------------------------------- */

/*
 * The program at g runs with at most 2 sessions per master and an idle
 * timeout of 3 s: alice's third session is refused (and counted in the
 * log), bob still gets in, and once the idle sessions are closed alice
 * gets in again.
 */
static void sessions_per_master_and_idle(struct gwp *g)
{
    modbus_t *a[3], *bob;
    uint16_t v = 0;
    int i;

    for (i = 0; i < 2; i++) {
        a[i] = master(g, 0);
        ck_assert_int_eq(modbus_read_registers(a[i], 1, 1, &v), 1);
    }
    /* The handshake completes; the confirming frame is refused with the request behind it. */
    a[2] = master(g, 0);
    ck_assert_int_eq(modbus_read_registers(a[2], 1, 1, &v), -1);
    ck_assert_msg(wait_log(g, "1 over the sessions allowed per master key"), "log: %s", g->log);
    bob = master(g, 1);
    ck_assert_int_eq(modbus_read_registers(bob, 1, 1, &v), 1);
    /* Silent sessions go after the idle timeout, and make room again. */
    for (i = 0; i < 3; i++)
        ck_assert_msg(wait_log(g, "idle timeout"), "log: %s", g->log);
    mbsc_modbus_close(a[2]);
    a[2] = master(g, 0);
    ck_assert_int_eq(modbus_read_registers(a[2], 1, 1, &v), 1);
    for (i = 0; i < 3; i++)
        mbsc_modbus_close(a[i]);
    mbsc_modbus_close(bob);
}

START_TEST(t_sessions_per_master_and_idle_timeout)
{
    struct gwp g;
    char conf[2048];
    const char *args[] = {"--config", path_of("gw.conf"), NULL};

    two_masters_allowed(NULL, NULL);
    snprintf(conf, sizeof conf,
             "mode = server\n"
             "listen = 127.0.0.1:0\n"
             "upstream = %s\n"
             "key = %s\n"
             "authorized = %s\n"
             "max-sessions-per-master = 2\n"
             "idle-timeout = 3000\n",
             plc_hostport(), path_of("gw.key"), path_of("allow.txt"));
    write_file("gw.conf", conf);
    ck_assert_msg(gw_spawn(&g, args), "the gateway did not start: %s", g.log);
    sessions_per_master_and_idle(&g);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
    /* 0 is no number of sessions. */
    write_file("gw.conf", "mode = server\nmax-sessions-per-master = 0\n");
    ck_assert(!gw_spawn(&g, args));
    ck_assert_int_eq(gw_finish(&g, 0), 2);
    ck_assert_msg(strstr(g.log, "gw.conf:2: max-sessions-per-master must be a number from 1") !=
                      NULL,
                  "log: %s", g.log);
}
END_TEST

/* ---- routes by unit id --------------------------------------------------------- */

/* Register 0 as seen through master m for unit: its value, or -1 with the exception in *exc. */
static int read_unit(modbus_t *m, int unit, uint8_t *exc)
{
    uint16_t v = 0;

    ck_assert_int_eq(modbus_set_slave(m, unit), 0);
    errno = 0;
    if (modbus_read_registers(m, 0, 1, &v) == 1)
        return v;
    *exc = errno > MODBUS_ENOBASE ? (uint8_t)(errno - MODBUS_ENOBASE) : 0;
    return -1;
}

/*
 * Two PLCs behind one gateway: units 5-6 and 9 to the second, everything
 * else (unit 0 too) to --upstream; a reload moves the routes all at once,
 * a bad route file keeps them as they are.
 */
START_TEST(t_routes_by_unit)
{
    struct plc plc2;
    struct gwp g;
    char conf[1024], plc2_addr[64];
    const char *args[] = {"--config", path_of("gw.conf"), NULL};
    modbus_t *m;
    uint8_t exc = 0;

    memset(&plc2, 0, sizeof plc2);
    ck_assert_int_eq(plc_start(&plc2, 0), 0);
    snprintf(plc2_addr, sizeof plc2_addr, "127.0.0.1:%d", plc2.port);
    plc_set_register(&plc, 0, 100);
    plc_set_register(&plc2, 0, 200);
    two_masters_allowed("operator", "viewer");
    snprintf(conf, sizeof conf,
             "mode = server\nlisten = 127.0.0.1:0\nupstream = %s\nkey = %s\nauthorized = %s\n"
             "route = 5-6,9 %s   # the second PLC\n",
             plc_hostport(), path_of("gw.key"), path_of("allow.txt"), plc2_addr);
    write_file("gw.conf", conf);
    ck_assert_msg(gw_spawn(&g, args), "the gateway did not start: %s", g.log);
    m = master(&g, 0);
    ck_assert_int_eq(read_unit(m, 5, &exc), 200);
    ck_assert_int_eq(read_unit(m, 6, &exc), 200);
    ck_assert_int_eq(read_unit(m, 9, &exc), 200);
    ck_assert_int_eq(read_unit(m, 7, &exc), 100);
    ck_assert_int_eq(read_unit(m, 255, &exc), 100);
    ck_assert_int_eq(read_unit(m, 0, &exc), 100); /* the broadcast: the default route */

    /* A reload moves unit 9 to the default and adds 7; a bad file changes nothing. */
    snprintf(conf, sizeof conf,
             "mode = server\nlisten = 127.0.0.1:0\nupstream = %s\nkey = %s\nauthorized = %s\n"
             "route = 5-7 %s\n",
             plc_hostport(), path_of("gw.key"), path_of("allow.txt"), plc2_addr);
    write_file("gw.conf", conf);
    kill(g.pid, SIGHUP);
    ck_assert_msg(wait_log(&g, "reloaded:"), "log: %s", g.log);
    ck_assert_int_eq(read_unit(m, 7, &exc), 200);
    ck_assert_int_eq(read_unit(m, 9, &exc), 100);
    snprintf(conf, sizeof conf,
             "mode = server\nlisten = 127.0.0.1:0\nupstream = %s\nkey = %s\nauthorized = %s\n"
             "route = 1-9 %s\nroute = 9-12 %s\n",
             plc_hostport(), path_of("gw.key"), path_of("allow.txt"), plc2_addr, plc_hostport());
    write_file("gw.conf", conf);
    kill(g.pid, SIGHUP);
    ck_assert_msg(wait_log(&g, "gw.conf:7: unit 9 is already routed to"), "log: %s", g.log);
    ck_assert_msg(wait_log(&g, "reload failed, the old configuration stays in force"), "log: %s",
                  g.log);
    ck_assert_int_eq(read_unit(m, 7, &exc), 200);
    ck_assert_int_eq(read_unit(m, 9, &exc), 100);
    ck_assert_int_eq(read_unit(m, 1, &exc), 100);
    mbsc_modbus_close(m);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
    plc_free(&plc2);
}
END_TEST

/* No default route: a unit no route names gets 0A (gateway path unavailable). */
START_TEST(t_unit_without_route)
{
    struct gwp g;
    char route[96];
    const char *args[] = {
        "server",          "--listen",     "127.0.0.1:0",        "--route", route, "--key",
        path_of("gw.key"), "--authorized", path_of("allow.txt"), NULL};
    modbus_t *m;
    uint8_t exc = 0;

    snprintf(route, sizeof route, "1-10=%s", plc_hostport());
    plc_set_register(&plc, 0, 100);
    two_masters_allowed("operator", "viewer");
    ck_assert_msg(gw_spawn(&g, args), "the gateway did not start: %s", g.log);
    m = master(&g, 0);
    ck_assert_int_eq(read_unit(m, 10, &exc), 100);
    ck_assert_int_eq(read_unit(m, 11, &exc), -1);
    ck_assert_uint_eq(exc, MBSC_EXC_GATEWAY_PATH_UNAVAILABLE);
    ck_assert_int_eq(read_unit(m, 0, &exc), -1);
    ck_assert_uint_eq(exc, MBSC_EXC_GATEWAY_PATH_UNAVAILABLE);
    mbsc_modbus_close(m);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

/* Bad routes stop the start with the place, what is wrong and the fix; exit status 2. */
static const struct {
    const char *route, *message;
} bad_routes[] = {
    {"256=127.0.0.1:502", "--route: bad units '256'"},
    {"0=127.0.0.1:502", "unit 0 is the broadcast address"},
    {"5=plc.invalid", "'plc.invalid' is not HOST:PORT"},
    {"5", "--route: '5' is not UNITS=HOST:PORT"},
    {"1-10=127.0.0.1:502 --route 10=127.0.0.1:503",
     "unit 10 is already routed to 127.0.0.1:502 by --route"},
};

START_TEST(t_bad_routes)
{
    struct gwp g;
    char r1[96], r2[96];
    const char *second;
    const char *args[] = {"server",
                          "--listen",
                          "127.0.0.1:0",
                          "--key",
                          path_of("gw.key"),
                          "--authorized",
                          path_of("allow.txt"),
                          "--route",
                          r1,
                          NULL,
                          NULL,
                          NULL};

    two_masters_allowed("operator", "viewer");
    snprintf(r1, sizeof r1, "%s", bad_routes[_i].route);
    second = strstr(r1, " --route ");
    if (second != NULL) {
        snprintf(r2, sizeof r2, "%s", second + 9);
        r1[second - r1] = '\0';
        args[9] = "--route";
        args[10] = r2;
    }
    ck_assert(!gw_spawn(&g, args));
    ck_assert_int_eq(gw_finish(&g, 0), 2);
    ck_assert_msg(strstr(g.log, bad_routes[_i].message) != NULL, "'%s': log: %s",
                  bad_routes[_i].route, g.log);
}
END_TEST

/* In the file: the file and the line. */
START_TEST(t_bad_route_in_file)
{
    struct gwp g;
    char conf[512];
    const char *args[] = {"--config", path_of("gw.conf"), NULL};

    two_masters_allowed("operator", "viewer");
    snprintf(conf, sizeof conf,
             "mode = server\nlisten = 127.0.0.1:0\nkey = %s\nauthorized = %s\n"
             "route = 1-4 127.0.0.1:502\nroute = 3-7 127.0.0.1:503\n",
             path_of("gw.key"), path_of("allow.txt"));
    write_file("gw.conf", conf);
    ck_assert(!gw_spawn(&g, args));
    ck_assert_int_eq(gw_finish(&g, 0), 2);
    ck_assert_msg(strstr(g.log, "gw.conf:6: unit 3 is already routed to 127.0.0.1:502 by ") !=
                          NULL &&
                      strstr(g.log, "gw.conf:5") != NULL,
                  "log: %s", g.log);
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
    ck_assert_msg(modbus_connect(ctx) == 0, "connect %s: %s (%s); log: %s", g->addr,
                  modbus_strerror(errno), gw_state(g), g->log);
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

/* A plain TCP connection to the gateway at g (IPv4). */
static int tcp_to(const struct gwp *g)
{
    char host[64], port[8];
    struct sockaddr_in sa;
    int fd;

    ck_assert_int_eq(mbsc_parse_hostport(g->addr, host, sizeof host, port, sizeof port), MBSC_OK);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)atoi(port));
    ck_assert_int_eq(inet_pton(AF_INET, host, &sa.sin_addr), 1);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

/*
 * Issue 19, item 2: a local client pipelines a full queue of reads (the
 * default --max-queue, 16) in one write and closes while the session
 * upstream cannot be made.  The reads time out together; answering them
 * finds the socket closed, and the multiplexer must not be walking the
 * queue that closing the client frees.
 */
START_TEST(t_client_pipelines_and_leaves)
{
    struct hanging h;
    struct gwp g;
    uint8_t reads[16 * 12];
    modbus_t *m;
    uint16_t v = 0;
    int i, fd;

    hanging_open(&h);
    {
        const char *args[] = {"client",
                              "--listen",
                              "127.0.0.1:0",
                              "--upstream",
                              h.addr,
                              "--key",
                              path_of("client.key"),
                              "--peer",
                              path_of("gw.pub"),
                              "--request-timeout",
                              "300",
                              "--connect-timeout",
                              "20000",
                              NULL};

        ck_assert_msg(gw_spawn(&g, args), "the client gateway did not start: %s", g.log);
    }
    for (i = 0; i < 16; i++) {
        /* Read holding register i, transaction id i + 1, unit 1. */
        const uint8_t adu[12] = {0, (uint8_t)(i + 1), 0, 0, 0, 6, 1, 3, 0, (uint8_t)i, 0, 1};

        memcpy(reads + 12 * i, adu, sizeof adu);
    }
    fd = tcp_to(&g);
    ck_assert_int_eq(send(fd, reads, sizeof reads, 0), (ssize_t)sizeof reads);
    close(fd);
    ck_assert_msg(wait_log(&g, "disconnected"), "%s; log: %s", gw_state(&g), g.log);
    /* Still serving: a read gets the 0B of a session not made yet. */
    m = plain_client(&g);
    errno = 0;
    ck_assert_msg(modbus_read_registers(m, 0, 1, &v) == -1 && errno == EMBXGTAR,
                  "read: %s (%s); log: %s", modbus_strerror(errno), gw_state(&g), g.log);
    modbus_close(m);
    modbus_free(m);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
    hanging_close(&h);
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
    /* stderr is the journal's stream, whose socket cannot be reached: "<N>" lines. */
    gw_journal_stream = 1;
    setenv("MBSC_GATEWAY_JOURNAL_SOCKET", path_of("no-journal"), 1);
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
    {
        char text[512];

        /* A whole 0x2b is warned about at start and at every reload. */
        snprintf(text, sizeof text, "%sviewer function 0x2b\n", policy_text);
        write_file("policy.txt", text);
    }
    ck_assert_msg(gw_spawn(&g, args), "secure_slave did not start: %s", g.log);
    ck_assert_msg(wait_log(&g, "policy.txt:4: role viewer: 'function 0x2b'"), "log: %s", g.log);
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
    ck_assert_msg(wait_log(&g, "policy.txt:4: role viewer: 'function 0x2b'"), "log: %s", g.log);
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

/*
 * The same requests, malformed or not, allowed or not, to secure_slave
 * --policy and to a server gateway --policy in front of a libmodbus PLC
 * with the same tables (1000 items each): every answer must be of the
 * same kind, the same exception or a normal answer of the same size
 * (docs/policy.md, "The order of checks": shape, 03 or 02; then role, 01;
 * then the device).  The table of what each
 * answered is printed for the record.
 */
struct same_case {
    const char *what;
    uint8_t pdu[24];
    size_t len;
    uint8_t exception; /* what both must answer (0: a normal answer) */
};

static const struct same_case same_cases[] = {
    {"read 10 registers at 0", {0x03, 0, 0, 0, 10}, 5, 0},
    {"read registers 5-14 (viewer: 0-9 only)", {0x03, 0, 5, 0, 10}, 5, 0},
    {"read 0 registers", {0x03, 0, 0, 0, 0}, 5, 3},
    {"read 126 registers", {0x03, 0, 0, 0, 126}, 5, 3},
    {"read past 65535", {0x03, 0xFF, 0xFF, 0, 2}, 5, 2},
    {"write register 3", {0x06, 0, 3, 0, 7}, 5, 0},
    {"write register 3, one byte too many", {0x06, 0, 3, 0, 7, 0}, 6, 3},
    {"write registers, count 3 for 2", {0x10, 0, 0, 0, 2, 3, 0, 1, 0}, 9, 3},
    {"write coil 1 with 0x1234", {0x05, 0, 1, 0x12, 0x34}, 5, 3},
    {"read coils 0-15", {0x01, 0, 0, 0, 16}, 5, 0},
    {"read input registers 0", {0x04, 0, 0, 0, 1}, 5, 0},
    {"read registers 990-999", {0x03, 0x03, 0xDE, 0, 10}, 5, 0},
    {"read registers 995-1004 (past the tables)", {0x03, 0x03, 0xE3, 0, 10}, 5, 0},
    {"read/write: read 0-1, write 2-3", {0x17, 0, 0, 0, 2, 0, 2, 0, 2, 4, 0, 1, 0, 2}, 14, 0},
    {"read/write: byte count 3", {0x17, 0, 0, 0, 2, 0, 2, 0, 2, 3, 0, 1, 0}, 13, 3},
    {"mask write register 4", {0x16, 0, 4, 0, 0xF2, 0, 0x25}, 7, 0},
    {"diagnostics echo", {0x08, 0, 0, 0xA5, 0x37}, 5, 0},
    {"diagnostics restart", {0x08, 0, 1, 0, 0}, 5, 0},
    {"diagnostics, no data", {0x08, 0, 0}, 3, 3},
    {"read device identification", {0x2B, 0x0E, 1, 0}, 4, 0},
    {"read device identification, code 5", {0x2B, 0x0E, 5, 0}, 4, 3},
    /* Nobody may: libmodbus's own server never answers 0x07, secure_slave says 01. */
    {"read exception status", {0x07}, 1, 0},
    {"read FIFO queue at 0", {0x18, 0, 0}, 3, 0},
    {"read file record", {0x14, 0x07, 6, 0, 4, 0, 1, 0, 2}, 9, 0},
    {"user-defined code 0x41", {0x41, 1, 2}, 3, 0},
};

/* The answer of the program at addr to pdu from master i: its PDU into ans. */
static size_t exchange_raw(const char *addr, int i, uint16_t tid, const uint8_t *pdu, size_t len,
                           uint8_t *ans, size_t cap)
{
    mbsc_config *cfg = mbsc_config_new(MBSC_ROLE_MASTER);
    uint8_t adu[7 + 24], got[MBSC_ADU_MAX];
    size_t n = 0;
    mbsc_conn *c = NULL;
    char why[256];

    ck_assert_ptr_nonnull(cfg);
    ck_assert_int_eq(mbsc_config_set_keypair(cfg, &master_kp[i]), MBSC_OK);
    ck_assert_int_eq(mbsc_config_set_peer_public_key(cfg, gw_kp.public_key), MBSC_OK);
    ck_assert_msg(mbsc_connect(addr, cfg, WAIT_MS, &c, why, sizeof why) == MBSC_OK,
                  "connect %s: %s", addr, why);
    mbsc_config_free(cfg);
    adu[0] = (uint8_t)(tid >> 8);
    adu[1] = (uint8_t)tid;
    adu[2] = adu[3] = 0;
    adu[4] = 0;
    adu[5] = (uint8_t)(len + 1);
    adu[6] = 0xFF;
    memcpy(adu + 7, pdu, len);
    ck_assert_int_eq(mbsc_conn_send(c, adu, 7 + len, WAIT_MS), MBSC_OK);
    ck_assert_int_eq(mbsc_conn_recv(c, got, sizeof got, &n, WAIT_MS), MBSC_OK);
    mbsc_conn_close(c);
    ck_assert_uint_ge(n, 9);
    ck_assert_uint_eq((unsigned)got[0] << 8 | got[1], tid);
    ck_assert_uint_le(n - 7, cap);
    memcpy(ans, got + 7, n - 7);
    return n - 7;
}

START_TEST(t_slave_and_gateway_answer_alike)
{
    static const char policy[] = "operator read-write holding-registers 0-99\n"
                                 "operator read holding-registers 995-1100\n"
                                 "operator read coils 0-15\n"
                                 "operator read input-registers 0\n"
                                 "operator function 0x08:0x00 0x2b:0x0e 0x14 0x41\n"
                                 "viewer   read holding-registers 0-9\n";
    const char *slave_args[] = {"--listen",        "127.0.0.1:0",         "--key",
                                path_of("gw.key"), "--authorized",        path_of("allow.txt"),
                                "--policy",        path_of("policy.txt"), NULL};
    struct gwp slave, gw;
    size_t k;
    int i;

    /* The PLC gets the slave's table sizes, so that addresses mean the same. */
    plc_stop(&plc);
    modbus_mapping_free(plc.map);
    plc.map = modbus_mapping_new(1000, 1000, 1000, 1000);
    ck_assert_ptr_nonnull(plc.map);
    ck_assert_int_eq(plc_start(&plc, 0), 0);
    two_masters_allowed("operator", "viewer");
    write_file("policy.txt", policy);
    start_server(&gw, 1, "127.0.0.1:0");
    gw_program = "examples/secure_slave";
    ck_assert_msg(gw_spawn(&slave, slave_args), "secure_slave did not start: %s", slave.log);
    fprintf(stderr, "%-40s %-8s %-14s %-14s\n", "request", "role", "secure_slave", "gateway");
    for (k = 0; k < sizeof same_cases / sizeof same_cases[0]; k++) {
        for (i = 0; i < 2; i++) {
            const struct same_case *c = &same_cases[k];
            uint8_t a[MBSC_PDU_MAX], b[MBSC_PDU_MAX];
            size_t na = exchange_raw(slave.addr, i, (uint16_t)(k + 1), c->pdu, c->len, a, sizeof a);
            size_t nb = exchange_raw(gw.addr, i, (uint16_t)(k + 1), c->pdu, c->len, b, sizeof b);
            char sa[32], sb[32];

            snprintf(sa, sizeof sa, a[0] & 0x80 ? "exception %02x" : "answer", a[na - 1]);
            snprintf(sb, sizeof sb, b[0] & 0x80 ? "exception %02x" : "answer", b[nb - 1]);
            fprintf(stderr, "%-40s %-8s %-14s %-14s\n", c->what, i == 0 ? "operator" : "viewer", sa,
                    sb);
            /* Data may differ (secure_slave counts its requests in input register
             * 0); the kind of answer, its function code and its size may not. */
            ck_assert_msg(na == nb && a[0] == b[0] && (!(a[0] & 0x80) || a[1] == b[1]),
                          "%s as %s: secure_slave answered %s (%zu bytes), the gateway %s (%zu "
                          "bytes)",
                          c->what, i == 0 ? "operator" : "viewer", sa, na, sb, nb);
            /* The shape's exceptions do not depend on the role. */
            if (c->exception != 0)
                ck_assert_msg((a[0] & 0x80) && a[1] == c->exception, "%s: %s, not exception %02x",
                              c->what, sa, c->exception);
        }
    }
    ck_assert_int_eq(gw_finish(&slave, SIGTERM), 0);
    ck_assert_int_eq(gw_finish(&gw, SIGTERM), 0);
}
END_TEST

/* secure_slave: a reload judges the masters still in their handshake too. */
START_TEST(t_secure_slave_reload_revokes_masters_in_handshake)
{
    struct gwp g;
    const char *args[] = {"--listen",
                          "127.0.0.1:0",
                          "--key",
                          path_of("gw.key"),
                          "--authorized",
                          path_of("allow.txt"),
                          "--policy",
                          path_of("policy.txt"),
                          "--handshake-timeout",
                          "30000",
                          NULL};

    gw_program = "examples/secure_slave";
    two_masters_allowed("operator", "operator");
    write_file("policy.txt", policy_text);
    ck_assert_msg(gw_spawn(&g, args), "secure_slave did not start: %s", g.log);
    revoke_during_handshake(&g);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

START_TEST(t_secure_slave_sessions_per_master_and_idle_timeout)
{
    struct gwp g;
    const char *args[] = {"--listen",
                          "127.0.0.1:0",
                          "--key",
                          path_of("gw.key"),
                          "--authorized",
                          path_of("allow.txt"),
                          "--max-sessions-per-master",
                          "2",
                          "--idle-timeout",
                          "3000",
                          NULL};

    gw_program = "examples/secure_slave";
    two_masters_allowed(NULL, NULL);
    ck_assert_msg(gw_spawn(&g, args), "secure_slave did not start: %s", g.log);
    sessions_per_master_and_idle(&g);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

/* ---- daemon habits (issue 22) ------------------------------------------------- */

/*
 * Run the gateway with args (a shell word list) to its end, in directory
 * cwd (NULL: the test's), stdout and stderr together in out; its exit
 * status.
 */
static int run_gw(const char *cwd, const char *args, char *out, size_t len)
{
    char cmd[8192], prog[4096];
    const char *runner = getenv("TEST_RUNNER");
    size_t n = 0;
    FILE *p;
    int st;

    ck_assert_ptr_nonnull(realpath(gateway_path(), prog));
    snprintf(cmd, sizeof cmd, "cd %s && %s %s %s 2>&1", cwd != NULL ? cwd : ".",
             runner != NULL ? runner : "", prog, args);
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

/* A server gateway's gw.conf with the key files named relative to its directory. */
static void write_relative_conf(const char *extra)
{
    char conf[2048];

    snprintf(conf, sizeof conf,
             "mode = server\n"
             "listen = 127.0.0.1:0\n"
             "upstream = %s\n"
             "key = gw.key\n"
             "authorized = allow.txt\n"
             "policy = policy.txt\n"
             "%s",
             plc_hostport(), extra);
    write_file("gw.conf", conf);
}

START_TEST(t_check_good_and_bad)
{
    char args[512], out[8192], extra[256];
    struct stat st;

    two_masters_allowed("operator", "viewer");
    write_file("policy.txt", policy_text);
    snprintf(extra, sizeof extra, "control = ctl\n");
    write_relative_conf(extra);
    /* Run from / : the files are found beside the configuration, and nothing listens. */
    snprintf(args, sizeof args, "--check --config %s", path_of("gw.conf"));
    ck_assert_int_eq(run_gw("/", args, out, sizeof out), 0);
    ck_assert_msg(strstr(out, "gw.conf: configuration OK: server mode on 127.0.0.1:0") != NULL,
                  "out: %s", out);
    ck_assert_msg(strstr(out, "2 masters allowed, policy ") != NULL, "out: %s", out);
    ck_assert_int_ne(lstat(path_of("ctl"), &st), 0);

    /* The control socket's directory: not there yet is a warning, a file in the way an error. */
    write_relative_conf("control = run/ctl\n");
    ck_assert_int_eq(run_gw("/", args, out, sizeof out), 0);
    ck_assert_msg(strstr(out, "run does not exist (yet)") != NULL &&
                      strstr(out, "configuration OK (with 1 warning above)") != NULL,
                  "out: %s", out);
    write_relative_conf("control = gw.key/ctl\n");
    ck_assert_int_eq(run_gw("/", args, out, sizeof out), 2);
    ck_assert_msg(strstr(out, "gw.key is not a directory") != NULL, "out: %s", out);
    write_relative_conf("control = policy.txt\n");
    ck_assert_int_eq(run_gw("/", args, out, sizeof out), 2);
    ck_assert_msg(strstr(out, "policy.txt: exists and is not a socket") != NULL, "out: %s", out);

    /* Every problem at once: a public key as --key, an allow-list and a policy line. */
    write_file("allow.txt", "# masters\nnot a key line\n");
    write_file("policy.txt", "operator fly holding-registers 0-99\n");
    write_file("gw.conf", "mode = server\nlisten = 127.0.0.1:0\nupstream = 127.0.0.1:502\n"
                          "key = gw.pub\nauthorized = allow.txt\npolicy = policy.txt\n");
    ck_assert_int_eq(run_gw("/", args, out, sizeof out), 2);
    ck_assert_msg(strstr(out, "gw.pub") != NULL && strstr(out, "public key") != NULL, "out: %s",
                  out);
    ck_assert_msg(strstr(out, "allow.txt:2:") != NULL, "out: %s", out);
    ck_assert_msg(strstr(out, "policy.txt:1:") != NULL, "out: %s", out);
    ck_assert_msg(strstr(out, "3 problems; a gateway would not start with it") != NULL, "out: %s",
                  out);
    ck_assert_msg(strstr(out, "configuration OK") == NULL, "out: %s", out);

    /* Options alone, and a bad line of the file: the usual message, status 2. */
    snprintf(args, sizeof args,
             "server --check --listen 127.0.0.1:0 --upstream %s --key %s "
             "--authorized %s --max-queue 0",
             plc_hostport(), path_of("gw.key"), path_of("allow.txt"));
    ck_assert_int_eq(run_gw(NULL, args, out, sizeof out), 2);
    ck_assert_msg(strstr(out, "max-queue must be a number from 1") != NULL, "out: %s", out);
}
END_TEST

START_TEST(t_conf_mode_and_bad_lines)
{
    char args[512], out[8192];

    write_file("gw.conf", "mode = client\nlisten = 127.0.0.1:0\n");
    snprintf(args, sizeof args, "server --config %s", path_of("gw.conf"));
    ck_assert_int_eq(run_gw(NULL, args, out, sizeof out), 2);
    ck_assert_msg(strstr(out, "gw.conf:1: mode = client, but the command line says server") != NULL,
                  "out: %s", out);

    /* A duplicate, a quoted value and a setting of the other mode, each with its line. */
    write_file("gw.conf", "mode = server\n"
                          "listen = 127.0.0.1:0\n"
                          "upstream = 127.0.0.1:502\n"
                          "key = gw.key\n"
                          "key = client.key\n"
                          "authorized = \"allow.txt\"\n"
                          "peer = gw.pub\n");
    snprintf(args, sizeof args, "--config %s", path_of("gw.conf"));
    ck_assert_int_eq(run_gw(NULL, args, out, sizeof out), 2);
    ck_assert_msg(strstr(out, "gw.conf:5: key is set twice in ") != NULL &&
                      strstr(out, "(first at ") != NULL,
                  "out: %s", out);
    ck_assert_msg(strstr(out, "gw.conf:6: the value of authorized is in quotes") != NULL, "out: %s",
                  out);
    ck_assert_msg(strstr(out, "gw.conf:7: peer is a setting of client mode") != NULL, "out: %s",
                  out);
}
END_TEST

START_TEST(t_relative_paths_log_level_and_reload)
{
    struct gwp g;
    const char *args[] = {"--config", path_of("gw.conf"), NULL};
    modbus_t *m;
    uint16_t v = 0;

    two_masters_allowed("operator", "viewer");
    write_file("policy.txt", policy_text);
    write_relative_conf("log-level = warning\n");
    ck_assert_msg(gw_spawn(&g, args), "the gateway did not start: %s", g.log);
    m = master(&g, 0);
    ck_assert_int_eq(modbus_read_registers(m, 0, 1, &v), 1);
    mbsc_modbus_close(m);
    (void)read_log(&g, 200);
    ck_assert_msg(strstr(g.log, "server mode on") == NULL, "log: %s", g.log);
    ck_assert_msg(strstr(g.log, "master alice") == NULL, "log: %s", g.log);
    /* SIGHUP reads the file itself again: the new level applies to the reload's own line. */
    write_relative_conf("log-level = info\n");
    kill(g.pid, SIGHUP);
    ck_assert_msg(wait_log(&g, "reloaded: 2 masters in "), "log: %s", g.log);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

/* Whether line starts with a local time stamp: "2026-12-01T23:51:36.123+01:00 ". */
static int stamped(const char *line)
{
    static const char shape[] = "dddd-dd-ddTdd:dd:dd.ddd+dd:dd ";
    size_t i;

    for (i = 0; shape[i] != '\0'; i++) {
        char c = line[i];

        if (shape[i] == 'd'   ? !(c >= '0' && c <= '9')
            : shape[i] == '+' ? !(c == '+' || c == '-')
                              : c != shape[i])
            return 0;
    }
    return 1;
}

START_TEST(t_time_stamps_off_the_journal)
{
    struct gwp g;

    two_masters_allowed(NULL, NULL);
    start_server(&g, 0, "127.0.0.1:0");
    ck_assert_msg(wait_log(&g, "server mode on"), "log: %s", g.log);
    ck_assert_msg(stamped(g.log), "no time stamp: %s", g.log);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

START_TEST(t_two_gateways_one_control_socket)
{
    struct gwp a, b, c;
    char args[256], out[4096];
    struct stat st;
    const char *argv[] = {"server",          "--listen",     "127.0.0.1:0",
                          "--upstream",      plc_hostport(), "--key",
                          path_of("gw.key"), "--authorized", path_of("allow.txt"),
                          "--control",       path_of("ctl"), NULL};

    two_masters_allowed(NULL, NULL);
    ck_assert_msg(gw_spawn(&a, argv), "the gateway did not start: %s", a.log);
    /* A second one with the same socket refuses to start; the first keeps it. */
    ck_assert(!gw_spawn(&b, argv));
    ck_assert_int_eq(gw_finish(&b, 0), 1);
    ck_assert_msg(strstr(b.log, "another gateway is running with it") != NULL, "log: %s", b.log);
    snprintf(args, sizeof args, "--control %s", path_of("ctl"));
    ck_assert_int_eq(gw_run_status(args, out, sizeof out), 0);
    ck_assert_msg(strstr(out, a.addr) != NULL, "status: %s (a: %s)", out, a.addr);
    /* A gateway killed leaves its socket; the next one replaces it. */
    ck_assert_int_eq(gw_finish(&a, SIGKILL), 128 + SIGKILL);
    ck_assert_int_eq(lstat(path_of("ctl"), &st), 0);
    ck_assert_msg(gw_spawn(&c, argv), "the gateway did not start: %s", c.log);
    ck_assert_int_eq(gw_run_status(args, out, sizeof out), 0);
    ck_assert_msg(strstr(out, c.addr) != NULL, "status: %s (c: %s)", out, c.addr);
    ck_assert_int_eq(gw_finish(&c, SIGTERM), 0);
    ck_assert_int_ne(lstat(path_of("ctl"), &st), 0);
}
END_TEST

START_TEST(t_status_json_and_prometheus)
{
    struct gwp g;
    char args[256], out[16384];
    modbus_t *bob;
    uint16_t v;

    start_policy_gateway(&g);
    bob = master(&g, 1);
    ck_assert_int_eq(modbus_read_registers(bob, 1, 1, &v), 1);
    errno = 0;
    ck_assert_int_eq(modbus_write_register(bob, 1, 12), -1);
    ck_assert_int_eq(errno, EMBXILFUN);

    snprintf(args, sizeof args, "--control %s", path_of("ctl"));
    ck_assert_int_eq(gw_run_status(args, out, sizeof out), 0);
    ck_assert_msg(strstr(out, ", 1 master, 0 requests queued or in flight, refused 0 "
                              "connections and 1 request\n") != NULL,
                  "status: %s", out);
    ck_assert_msg(strstr(out, " (1 connection);") != NULL, "status: %s", out);

    snprintf(args, sizeof args, "--control %s --json", path_of("ctl"));
    ck_assert_int_eq(gw_run_status(args, out, sizeof out), 0);
    ck_assert_msg(out[0] == '{' && strstr(out, "}\n") == out + strlen(out) - 2, "json: %s", out);
    ck_assert_msg(strstr(out, "\"mode\":\"server\"") != NULL, "json: %s", out);
    ck_assert_msg(strstr(out, "\"masters_connected\":1,") != NULL, "json: %s", out);
    ck_assert_msg(strstr(out, "\"refusals\":{\"total\":1,\"connections\":0,\"policy\":1,") != NULL,
                  "json: %s", out);
    ck_assert_msg(strstr(out, "\"name\":\"bob\",\"role\":\"viewer\",\"cipher\":\"chacha20\"") !=
                      NULL,
                  "json: %s", out);
    ck_assert_msg(strstr(out, "\"route\":\"default\",\"default\":true,\"units\":null") != NULL,
                  "json: %s", out);
    ck_assert_msg(strstr(out, "\"forwarded\":1,\"answered\":1,") != NULL, "json: %s", out);

    snprintf(args, sizeof args, "--control %s --prometheus", path_of("ctl"));
    ck_assert_int_eq(gw_run_status(args, out, sizeof out), 0);
    ck_assert_msg(strstr(out, "# TYPE mbsc_gateway_refusals_total counter\n"
                              "mbsc_gateway_refusals_total 1\n") != NULL,
                  "prometheus: %s", out);
    ck_assert_msg(strstr(out, "\nmbsc_gateway_master_requests_total{master=\"bob\"} 2\n") != NULL,
                  "prometheus: %s", out);
    ck_assert_msg(strstr(out, "\nmbsc_gateway_master_refusals_total{master=\"bob\"} 1\n") != NULL,
                  "prometheus: %s", out);
    snprintf(args, sizeof args,
             "\nmbsc_gateway_route_forwarded_total{route=\"default\",target=\"%s\"} 1\n",
             plc_hostport());
    ck_assert_msg(strstr(out, args) != NULL, "prometheus: %s", out);
    mbsc_modbus_close(bob);
    /* A master that left keeps its counts; it has no session now. */
    snprintf(args, sizeof args, "--control %s --prometheus", path_of("ctl"));
    ck_assert_int_eq(gw_run_status(args, out, sizeof out), 0);
    ck_assert_msg(strstr(out, "\nmbsc_gateway_master_requests_total{master=\"bob\"} 2\n") != NULL,
                  "prometheus: %s", out);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

START_TEST(t_role_the_policy_does_not_name)
{
    struct gwp g;

    two_masters_allowed("operator", "opertor");
    write_file("policy.txt", policy_text);
    start_server(&g, 1, "127.0.0.1:0");
    ck_assert_msg(wait_log(&g, "allow.txt:3: master bob has role opertor, which the policy "),
                  "log: %s", g.log);
    ck_assert_msg(strstr(g.log, "master alice has role") == NULL, "log: %s", g.log);
    kill(g.pid, SIGHUP);
    ck_assert_msg(wait_log(&g, "allow.txt:3: master bob has role opertor"), "log: %s", g.log);
    ck_assert_msg(wait_log(&g, "reloaded:"), "log: %s", g.log);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
}
END_TEST

START_TEST(t_client_names_the_refused_handshake)
{
    struct gwp srv, cli;
    long long t0;

    /* The server gateway does not list the client gateway's key. */
    two_masters_allowed(NULL, NULL);
    start_server(&srv, 0, "127.0.0.1:0");
    start_client(&cli, srv.addr);
    ck_assert_msg(wait_log(&cli, "our key is not in its allow-list, or --peer is not its public "
                                 "key"),
                  "log ends: %s", log_tail(&cli));
    /* Attempts every 200 ms at most, and the log says it once in 2 s. */
    t0 = tu_now_ms();
    while (tu_now_ms() - t0 < 2000)
        (void)read_log(&cli, 100);
    ck_assert_msg(count_of(cli.log, "unreachable") == 1, "log ends: %s", log_tail(&cli));
    ck_assert_int_eq(gw_finish(&cli, SIGTERM), 0);
    ck_assert_int_eq(gw_finish(&srv, SIGTERM), 0);

    /* Pointed at the PLC itself: a plain Modbus/TCP port. */
    start_client(&cli, plc_hostport());
    ck_assert_msg(wait_log(&cli, "not an mbsc port"), "log ends: %s", log_tail(&cli));
    ck_assert_int_eq(gw_finish(&cli, SIGTERM), 0);
}
END_TEST

START_TEST(t_client_names_psk_mismatch)
{
    struct gwp srv, cli;
    char line[256], why[MBSC_WHY_SIZE];
    uint8_t psk[MBSC_KEY_BYTES];

    /* The client gateway is listed; only the pre-shared keys differ. */
    master_kp[3] = other_gw_kp;
    allow_line(line, sizeof line, 3, "scada", NULL);
    write_file("allow.txt", line);
    memset(psk, 0xa5, sizeof psk);
    ck_assert_int_eq(mbsc_psk_save(path_of("a.psk"), psk, 0, why, sizeof why), MBSC_OK);
    memset(psk, 0x5a, sizeof psk);
    ck_assert_int_eq(mbsc_psk_save(path_of("b.psk"), psk, 0, why, sizeof why), MBSC_OK);
    {
        /* path_of() keeps its last eight paths: these arrays are made after the files. */
        const char *srv_args[] = {"server",          "--listen",       "127.0.0.1:0",
                                  "--upstream",      plc_hostport(),   "--key",
                                  path_of("gw.key"), "--authorized",   path_of("allow.txt"),
                                  "--psk",           path_of("a.psk"), NULL};

        ck_assert_msg(gw_spawn(&srv, srv_args), "the gateway did not start: %s", srv.log);
    }
    {
        const char *cli_args[] = {"client",
                                  "--listen",
                                  "127.0.0.1:0",
                                  "--upstream",
                                  srv.addr,
                                  "--key",
                                  path_of("client.key"),
                                  "--peer",
                                  path_of("gw.pub"),
                                  "--psk",
                                  path_of("b.psk"),
                                  "--reconnect-max",
                                  "200",
                                  NULL};

        ck_assert_msg(gw_spawn(&cli, cli_args), "the client gateway did not start: %s",
                      log_tail(&cli));
    }
    ck_assert_msg(wait_log(&cli, "the pre-shared keys differ"), "log ends: %s", log_tail(&cli));
    ck_assert_int_eq(gw_finish(&cli, SIGTERM), 0);
    ck_assert_int_eq(gw_finish(&srv, SIGTERM), 0);
}
END_TEST

/*
 * A PLC that closes the first two connections at once and keeps the third,
 * silent: connected, but the outage goes on until an answer, and the
 * status says so instead of "connected for 2 s".
 */
START_TEST(t_status_connected_without_answer)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    struct slammer s;
    struct gwp g;
    char up[64], args[256], out[4096];
    long long t0;

    memset(&s, 0, sizeof s);
    s.keep_after = 2;
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
    {
        const char *argv[] = {"server",
                              "--listen",
                              "127.0.0.1:0",
                              "--upstream",
                              up,
                              "--key",
                              path_of("gw.key"),
                              "--authorized",
                              path_of("allow.txt"),
                              "--control",
                              path_of("ctl"),
                              "--reconnect-max",
                              "200",
                              NULL};

        ck_assert_msg(gw_spawn(&g, argv), "the gateway did not start: %s", g.log);
    }
    t0 = tu_now_ms();
    while (__atomic_load_n(&s.accepts, __ATOMIC_SEQ_CST) < 3 && tu_now_ms() - t0 < WAIT_MS)
        (void)read_log(&g, 50);
    ck_assert_uint_eq(__atomic_load_n(&s.accepts, __ATOMIC_SEQ_CST), 3);
    snprintf(args, sizeof args, "--control %s", path_of("ctl"));
    ck_assert_int_eq(gw_run_status(args, out, sizeof out), 0);
    ck_assert_msg(strstr(out, " connected, no answer yet, after 2 failed attempts over ") != NULL,
                  "status: %s", out);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
    s.stop = 1;
    pthread_join(s.th, NULL);
    if (s.kept > 0)
        close(s.kept);
    close(s.lfd);
}
END_TEST

START_TEST(t_journal_fields)
{
    struct gwp g;
    struct sockaddr_un sa;
    char entry[8192];
    modbus_t *bob;
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0), found = 0;
    long long end;

    /* A journal of our own: stderr is its stream, its socket ours. */
    ck_assert_int_ge(fd, 0);
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path_of("journal"));
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    setenv("MBSC_GATEWAY_JOURNAL_SOCKET", sa.sun_path, 1);
    gw_journal_stream = 1;
    two_masters_allowed("operator", "viewer");
    write_file("policy.txt", policy_text);
    start_server(&g, 1, "127.0.0.1:0");
    bob = master(&g, 1);
    errno = 0;
    ck_assert_int_eq(modbus_write_register(bob, 7, 1), -1);
    ck_assert_int_eq(errno, EMBXILFUN);
    end = tu_now_ms() + WAIT_MS;
    while (!found && tu_now_ms() < end) {
        struct pollfd pfd = {fd, POLLIN, 0};
        ssize_t n;

        if (poll(&pfd, 1, 500) != 1)
            continue;
        n = recv(fd, entry, sizeof entry - 1, 0);
        ck_assert_int_gt(n, 0);
        entry[n] = '\0';
        found = strstr(entry, "MESSAGE=refused master bob") != NULL;
    }
    ck_assert_msg(found, "no entry for the refusal; stderr: %s", g.log);
    ck_assert_msg(strstr(entry, "PRIORITY=4\n") != NULL, "entry: %s", entry);
    ck_assert_msg(strstr(entry, "SYSLOG_IDENTIFIER=mbsc-gateway\n") != NULL, "entry: %s", entry);
    ck_assert_msg(strstr(entry, "\nMBSC_MASTER=bob\n") != NULL, "entry: %s", entry);
    ck_assert_msg(strstr(entry, "\nMBSC_ROLE=viewer\n") != NULL, "entry: %s", entry);
    ck_assert_msg(strstr(entry, "\nMBSC_FUNCTION=0x06\n") != NULL, "entry: %s", entry);
    ck_assert_msg(strstr(entry, "\nMBSC_ADDRESS=7\n") != NULL, "entry: %s", entry);
    ck_assert_msg(strstr(entry, "\nMBSC_REASON=") != NULL, "entry: %s", entry);
    /* Nothing of it on stderr. */
    ck_assert_msg(strstr(g.log, "refused master bob") == NULL, "stderr: %s", g.log);
    mbsc_modbus_close(bob);
    ck_assert_int_eq(gw_finish(&g, SIGTERM), 0);
    close(fd);
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
    tcase_add_test(tc, t_control_client_trickles);
    tcase_add_test(tc, t_unit_ids_0_and_255);
    tcase_add_test(tc, t_roles_read_only_master);
    tcase_add_test(tc, t_two_masters_share_one_upstream);
    tcase_add_test(tc, t_plc_goes_away_and_comes_back);
    tcase_add_test(tc, t_upstream_that_closes_at_once_backs_off);
    tcase_add_test(tc, t_silent_and_malformed_plc);
    tcase_add_test(tc, t_master_gone_before_its_timeout);
    tcase_add_test(tc, t_late_answer_dropped);
    tcase_add_test(tc, t_late_answer_dropped_client_mode);
    tcase_add_test(tc, t_bad_policy_refused_with_line);
    tcase_add_test(tc, t_policy_warnings_at_start_and_reload);
    tcase_add_test(tc, t_reload_adds_removes_and_changes_roles);
    tcase_add_test(tc, t_reload_revokes_masters_in_handshake);
    tcase_add_test(tc, t_sessions_per_master_and_idle_timeout);
    tcase_add_test(tc, t_routes_by_unit);
    tcase_add_test(tc, t_unit_without_route);
    tcase_add_loop_test(tc, t_bad_routes, 0, (int)(sizeof bad_routes / sizeof bad_routes[0]));
    tcase_add_test(tc, t_bad_route_in_file);
    tcase_add_test(tc, t_client_gateway_to_server_gateway);
    tcase_add_test(tc, t_client_refuses_remote_plaintext);
    tcase_add_test(tc, t_client_pipelines_and_leaves);
    tcase_add_test(tc, t_config_file);
    tcase_add_test(tc, t_systemd_readiness_and_levels);
    tcase_add_test(tc, t_secure_slave_policy_and_reload);
    tcase_add_test(tc, t_slave_and_gateway_answer_alike);
    tcase_add_test(tc, t_secure_slave_reload_revokes_masters_in_handshake);
    tcase_add_test(tc, t_secure_slave_sessions_per_master_and_idle_timeout);
    suite_add_tcase(s, tc);

    /* The daemon's habits (issue 22): CK_RUN_CASE=daemon runs them alone. */
    tc = tcase_create("daemon");
    tcase_add_unchecked_fixture(tc, run_dir_create, run_dir_remove);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, t_check_good_and_bad);
    tcase_add_test(tc, t_conf_mode_and_bad_lines);
    tcase_add_test(tc, t_relative_paths_log_level_and_reload);
    tcase_add_test(tc, t_time_stamps_off_the_journal);
    tcase_add_test(tc, t_two_gateways_one_control_socket);
    tcase_add_test(tc, t_status_json_and_prometheus);
    tcase_add_test(tc, t_role_the_policy_does_not_name);
    tcase_add_test(tc, t_client_names_the_refused_handshake);
    tcase_add_test(tc, t_client_names_psk_mismatch);
    tcase_add_test(tc, t_status_connected_without_answer);
    tcase_add_test(tc, t_journal_fields);
    suite_add_tcase(s, tc);
    return s;
}
