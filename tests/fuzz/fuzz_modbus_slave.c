/* SPDX-License-Identifier: ISC */
/*
 * fuzz_modbus_slave.c - the libmodbus slave path (src/modbus/server.c,
 * src/modbus/adu.c) with an authenticated session: each input is the
 * plaintext payload of one request that a confirmed master seals and sends.
 *
 * The slave is a real mbsc_modbus_server on 127.0.0.1 (port 0), driven in
 * this thread with mbsc_modbus_server_step(srv, 0): no timing.  The master
 * is an mbsc_session (random ephemeral key, so that the slave's replay
 * filter never sees the same message 1 twice) on a plain TCP socket; it is
 * reconnected only when the slave has closed the session.  Loopback TCP
 * delivers a send() before it returns, so a bounded number of steps is
 * enough to see an answer or a close.
 *
 * The mapping has small, odd-sized tables away from address 0, so that
 * out-of-range addresses are easy to reach, and each table lies between
 * guard bytes that are checked after every input (ASan's redzones catch
 * anything beyond those).  CVE-2022-0367 (libmodbus < 3.1.7 writing
 * outside the registers on a 0x17 request with a bad write range) is one
 * mutation away from the seed corpus/modbus_slave/fc17-write-out-of-range.
 *
 * Inputs are cut to the configured payload limit (260 bytes by default,
 * mbsc_config_max_payload), which the master cannot exceed.
 *
 * Properties, for every input (empty inputs are keep-alives, skipped):
 *   - a payload that mbsc_modbus_check_adu refuses ends the session with
 *     MBSC_ERR_BAD_ADU and no answer;
 *   - any other payload gets exactly one answer, or the session is closed
 *     with MBSC_ERR_MODBUS; never silence;
 *   - an answer is one well-formed Modbus/TCP ADU with the request's
 *     transaction id, protocol id (0) and unit id; its function code is the
 *     request's, or the request's | 0x80 with an exception code 1..4 and
 *     nothing after it;
 *   - the mapping's memory outside its tables is never written, and the
 *     mapping itself (sizes, start addresses, table pointers) is unchanged.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "mbsc/modbus.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Table sizes and start addresses: small and odd. */
#define NB_BITS          13
#define START_BITS       5
#define NB_INPUT_BITS    7
#define START_INPUT_BITS 0
#define NB_REGS          11
#define START_REGS       3
#define NB_INPUT_REGS    9
#define START_INPUT_REGS 100

#define GUARD_BYTES 64
#define GUARD_VALUE 0xa5
/* Steps without news before the harness calls the slave silent. */
#define QUIET_STEPS 64

/* A table between two guards. */
struct guarded {
    uint8_t *block; /* GUARD_BYTES, the table, GUARD_BYTES */
    size_t table_bytes;
};

static struct {
    mbsc_config *slave_cfg, *master_cfg;
    mbsc_modbus_server *srv;
    struct sockaddr_in addr;
    modbus_mapping_t map, map_copy;
    struct guarded bits, input_bits, regs, input_regs;
    /* the current master connection: -1 when none */
    int fd;
    mbsc_session *master;
    /* events of the slave, reset per step of the harness */
    int connected, closed, close_error;
} g = {.fd = -1};

static void *guarded_new(struct guarded *t, size_t table_bytes)
{
    t->table_bytes = table_bytes;
    t->block = malloc(2 * GUARD_BYTES + table_bytes);
    FUZZ_CHECK(t->block != NULL);
    memset(t->block, GUARD_VALUE, 2 * GUARD_BYTES + table_bytes);
    memset(t->block + GUARD_BYTES, 0, table_bytes);
    return t->block + GUARD_BYTES;
}

static void guarded_check(const struct guarded *t, const char *name)
{
    size_t i;

    for (i = 0; i < GUARD_BYTES; i++) {
        FUZZ_ASSERT(t->block[i] == GUARD_VALUE, "%s: guard byte %zu before the table written", name,
                    GUARD_BYTES - i);
        FUZZ_ASSERT(t->block[GUARD_BYTES + t->table_bytes + i] == GUARD_VALUE,
                    "%s: guard byte %zu after the table written", name, i);
    }
}

static void on_event(void *user, const struct mbsc_modbus_event *ev)
{
    (void)user;
    if (ev->type == MBSC_MODBUS_EVENT_CONNECTED)
        g.connected = 1;
    else if (ev->type == MBSC_MODBUS_EVENT_CLOSED) {
        g.closed = 1;
        g.close_error = ev->error;
    }
}

/*
 * Called once the slave has ended the session (it closed first).  A
 * zero linger makes close() reset the connection, which frees the slave's
 * side at once: hundreds of reconnects a second would otherwise leave
 * that many TIME_WAIT sockets on the machine for a minute each.
 */
static void master_close(void)
{
    struct linger reset = {1, 0};

    if (g.fd >= 0) {
        (void)setsockopt(g.fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
        close(g.fd);
    }
    g.fd = -1;
    mbsc_session_free(g.master);
    g.master = NULL;
}

/* Send all of the master's output (a few frames: a blocking send is fine). */
static void master_flush(void)
{
    size_t len = 0;
    const uint8_t *out = mbsc_session_output(g.master, &len);

    while (len > 0) {
        ssize_t n = send(g.fd, out, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        FUZZ_CHECK(n > 0);
        mbsc_session_output_consumed(g.master, (size_t)n);
        out = mbsc_session_output(g.master, &len);
    }
}

/*
 * Read what the slave sent and open it.  Returns 1 at the end of the
 * stream or on a session error; payloads go to got (*ngot counts them).
 */
static int master_read(struct fuzz_payload *got, size_t cap, size_t *ngot)
{
    uint8_t buf[4096];

    for (;;) {
        ssize_t n = recv(g.fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0)
            return 1;
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : 1;
        if (fuzz_feed(g.master, buf, (size_t)n, got, cap, ngot) != MBSC_OK)
            return 1;
    }
}

/*
 * connect() just failed on g.fd: 1 if it was only interrupted and the
 * connection then completed.  libFuzzer's -timeout alarm (SIGALRM) can land
 * in a blocking connect(); the kernel goes on connecting in the background,
 * so calling connect() again would give EALREADY: wait for it instead.
 */
static int connect_interrupted(void)
{
    struct pollfd p = {.fd = g.fd, .events = POLLOUT};
    int soerr = 0, n;
    socklen_t len = sizeof soerr;

    if (errno != EINTR)
        return 0;
    do
        n = poll(&p, 1, 10000);
    while (n < 0 && errno == EINTR);
    if (n != 1 || getsockopt(g.fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
        return 0;
    errno = soerr;
    return soerr == 0;
}

/* A new TCP connection and a handshake up to the slave's CONNECTED event. */
static void master_connect(void)
{
    static uint32_t nconn;
    struct sockaddr_in src;
    int err = MBSC_OK, step, one = 1;
    size_t n = 0;

    g.fd = socket(AF_INET, SOCK_STREAM, 0);
    FUZZ_CHECK(g.fd >= 0);
    /* Without it, Nagle holds a request until the slave's delayed ACK. */
    FUZZ_CHECK(setsockopt(g.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0);
    /* A source address of its own per connection (127.1.x.y): thousands of
     * reconnects a second must not run out of ephemeral ports on one. */
    memset(&src, 0, sizeof src);
    src.sin_family = AF_INET;
    src.sin_addr.s_addr = htonl(0x7f010000u | (nconn++ & 0xffffu));
    FUZZ_CHECK(bind(g.fd, (const struct sockaddr *)&src, sizeof src) == 0);
    if (connect(g.fd, (const struct sockaddr *)&g.addr, sizeof g.addr) != 0 &&
        !connect_interrupted()) {
        perror("fuzz_modbus_slave: connect");
        abort();
    }
    g.master = mbsc_session_new(g.master_cfg, &err);
    FUZZ_CHECK(g.master != NULL && err == MBSC_OK);
    g.connected = 0;
    for (step = 0; step < 1000 && !(g.connected && mbsc_session_established(g.master)); step++) {
        master_flush();
        FUZZ_CHECK(mbsc_modbus_server_step(g.srv, 0) == MBSC_OK);
        FUZZ_CHECK(master_read(NULL, 0, &n) == 0);
    }
    FUZZ_CHECK(g.connected && mbsc_session_established(g.master));
    master_flush(); /* anything the confirmation left */
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char hostport[64], why[256] = "";
    char *colon;

    (void)argc, (void)argv;
    fuzz_init();
    g.map.nb_bits = NB_BITS;
    g.map.start_bits = START_BITS;
    g.map.tab_bits = guarded_new(&g.bits, NB_BITS);
    g.map.nb_input_bits = NB_INPUT_BITS;
    g.map.start_input_bits = START_INPUT_BITS;
    g.map.tab_input_bits = guarded_new(&g.input_bits, NB_INPUT_BITS);
    g.map.nb_registers = NB_REGS;
    g.map.start_registers = START_REGS;
    g.map.tab_registers = guarded_new(&g.regs, NB_REGS * sizeof(uint16_t));
    g.map.nb_input_registers = NB_INPUT_REGS;
    g.map.start_input_registers = START_INPUT_REGS;
    g.map.tab_input_registers = guarded_new(&g.input_regs, NB_INPUT_REGS * sizeof(uint16_t));
    g.map_copy = g.map;

    g.slave_cfg = fuzz_slave_config(NULL, 0);
    g.master_cfg = fuzz_master_config(NULL, 0);
    if (mbsc_modbus_server_new(&g.srv, "127.0.0.1:0", g.slave_cfg, &g.map, why, sizeof why) !=
        MBSC_OK) {
        fprintf(stderr, "fuzz_modbus_slave: server: %s\n", why);
        abort();
    }
    mbsc_modbus_server_set_event_fn(g.srv, on_event, NULL);
    FUZZ_CHECK(mbsc_modbus_server_address(g.srv, hostport, sizeof hostport) == MBSC_OK);
    colon = strrchr(hostport, ':');
    FUZZ_CHECK(colon != NULL);
    memset(&g.addr, 0, sizeof g.addr);
    g.addr.sin_family = AF_INET;
    g.addr.sin_port = htons((uint16_t)strtoul(colon + 1, NULL, 10));
    g.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return 0;
}

static void check_answer(const uint8_t *req, const uint8_t *rsp, size_t len)
{
    FUZZ_ASSERT(mbsc_modbus_check_adu(rsp, len) == MBSC_OK, "answer of %zu bytes is not an ADU",
                len);
    FUZZ_ASSERT(memcmp(rsp, req, 4) == 0,
                "answer's transaction or protocol id is not the request's");
    FUZZ_ASSERT(rsp[6] == req[6], "answer's unit id %u, request's %u", rsp[6], req[6]);
    if (rsp[7] == req[7])
        return;
    FUZZ_ASSERT(rsp[7] == (req[7] | 0x80), "answer's function code 0x%02x to a request 0x%02x",
                rsp[7], req[7]);
    FUZZ_ASSERT(len == 9 && rsp[8] >= 1 && rsp[8] <= 4,
                "exception answer of %zu bytes, code %u (expected 9 bytes, code 1..4)", len,
                len > 8 ? rsp[8] : 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_payload *got = NULL;
    size_t ngot = 0, len = size;
    int well_formed, eof = 0, quiet = 0, step;

    /* Both sides keep the default payload limit (a Modbus/TCP ADU): the
     * master cannot seal more, and the slave's session would refuse it. */
    if (len > mbsc_config_max_payload(g.master_cfg))
        len = mbsc_config_max_payload(g.master_cfg);
    if (len == 0)
        return 0; /* an empty frame is a keep-alive, not a request */
    if (g.fd < 0)
        master_connect();
    well_formed = mbsc_modbus_check_adu(data, len) == MBSC_OK;
    got = malloc(2 * sizeof *got);
    FUZZ_CHECK(got != NULL);
    g.closed = 0;
    FUZZ_CHECK(mbsc_session_send(g.master, data, len) == MBSC_OK);
    master_flush();
    for (step = 0; step < 10000 && quiet < QUIET_STEPS; step++) {
        size_t before = ngot;
        FUZZ_CHECK(mbsc_modbus_server_step(g.srv, 0) == MBSC_OK);
        eof = master_read(got, 2, &ngot);
        if (eof || g.closed)
            break;
        quiet = ngot != before ? 0 : quiet + 1;
        if (ngot > 0 && quiet >= QUIET_STEPS / 4)
            break; /* answered, and nothing more came for a while */
    }
    if (g.closed && !eof) {
        /* read what the slave sent before it closed, up to the end */
        for (step = 0; step < 1000 && !eof; step++) {
            FUZZ_CHECK(mbsc_modbus_server_step(g.srv, 0) == MBSC_OK);
            eof = master_read(got, 2, &ngot);
        }
    }
    if (!well_formed) {
        FUZZ_ASSERT(g.closed && g.close_error == MBSC_ERR_BAD_ADU,
                    "malformed ADU of %zu bytes did not end the session with BAD_ADU "
                    "(closed %d, error %d)",
                    len, g.closed, g.close_error);
        FUZZ_ASSERT(ngot == 0, "malformed ADU answered (%zu payloads)", ngot);
    } else if (g.closed) {
        FUZZ_ASSERT(g.close_error == MBSC_ERR_MODBUS && ngot == 0,
                    "well-formed ADU: session closed with error %d after %zu answers",
                    g.close_error, ngot);
    } else {
        FUZZ_ASSERT(ngot == 1, "well-formed ADU got %zu answers, expected exactly 1", ngot);
        check_answer(data, got[0].data, got[0].len);
    }
    if (g.closed || eof)
        master_close();
    guarded_check(&g.bits, "coils");
    guarded_check(&g.input_bits, "discrete inputs");
    guarded_check(&g.regs, "holding registers");
    guarded_check(&g.input_regs, "input registers");
    FUZZ_ASSERT(memcmp(&g.map, &g.map_copy, sizeof g.map) == 0, "the mapping itself was changed");
    free(got);
    return 0;
}
