/* SPDX-License-Identifier: ISC */
/*
 * server.c - a libmodbus slave on mbsc_server (mbsc/server.h): one thread,
 * one event loop, modbus_reply() called directly on each opened request.
 *
 * For each request of a confirmed session, in order (docs/policy.md, "The
 * order of checks", which mbsc-gateway follows too):
 *   1. the MBAP header is checked (mbsc_modbus_check_adu): a payload that
 *      is not one Modbus/TCP ADU ends the session (docs/protocol.md);
 *   2. the PDU's shape, by the function table (mbsc_pdu_check_request):
 *      lengths, byte counts, quantities, exception 03 (or 02);
 *   3. the application's hook, if any, sees the well-formed request with
 *      the master's name and role, and lets it through, refuses it with an
 *      exception of its choice (secure_slave: the role policy, 01), or
 *      answers it itself;
 *   4. what modbus_reply() needs (adu.c, mb_check_reply): a function it
 *      implements (else 01), 0x17's ranges inside the mapping (else 02);
 *   5. modbus_reply() answers from the mapping.  libmodbus sends the reply
 *      on its context's socket, one end of a socketpair; we read it from
 *      the other end, check it and seal it.
 * No modbus_receive(), no select(): two system calls per request on top of
 * the TCP read and write (libmodbus's send, our read), and no FD_SETSIZE
 * limit.  The pair is made once, before any connection, so both of its
 * descriptors are low.
 *
 * One libmodbus context serves every connection: modbus_reply() keeps no
 * state between calls (the transaction id comes from the request).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "mbsc/server.h"
#include "modbus/modbus_internal.h"

#define DETAIL_BYTES 160u

struct mbsc_modbus_server {
    mbsc_server *core;
    modbus_mapping_t *map; /* borrowed */
    modbus_t *mb;          /* its socket is pair[1] */
    int pair[2];           /* pair[0] is ours */
    mbsc_modbus_event_fn fn;
    void *user;
    mbsc_modbus_hook_fn hook;
    void *hook_user;
};

/* --- Events ---------------------------------------------------------------- */

static void event_from(struct mbsc_modbus_event *ev, enum mbsc_modbus_event_type type,
                       const struct mbsc_server_conn_info *ci)
{
    memset(ev, 0, sizeof *ev);
    ev->type = type;
    if (ci != NULL) {
        ev->connection_id = ci->seq;
        ev->peer_address = ci->peer_address;
        ev->peer_name = ci->peer_name;
        ev->peer_role = ci->peer_role;
        ev->cipher = ci->cipher;
    }
}

static void on_core_event(void *user, const struct mbsc_server_event *cev)
{
    mbsc_modbus_server *srv = user;
    struct mbsc_modbus_event ev;

    if (srv->fn == NULL)
        return;
    switch (cev->type) {
    case MBSC_SERVER_EVENT_CONNECTED:
        event_from(&ev, MBSC_MODBUS_EVENT_CONNECTED, cev->conn);
        break;
    case MBSC_SERVER_EVENT_CLOSED: event_from(&ev, MBSC_MODBUS_EVENT_CLOSED, cev->conn); break;
    case MBSC_SERVER_EVENT_LOG: event_from(&ev, MBSC_MODBUS_EVENT_LOG, NULL); break;
    default: return;
    }
    ev.error = cev->error;
    ev.detail = cev->detail;
    srv->fn(srv->user, &ev);
}

/* --- libmodbus -------------------------------------------------------------- */

/* Drop whatever waits on our end of the pair. */
static void drain(int fd)
{
    uint8_t sink[MODBUS_TCP_MAX_ADU_LENGTH];
    size_t got;
    int os_err;

    while (mbsc_sock_recv(fd, sink, sizeof sink, &got, &os_err) == MBSC_OK)
        continue;
    mbsc_wipe(sink, sizeof sink); /* register values: plaintext of the session */
}

/*
 * modbus_reply() on a checked request; the reply it sent is read back into
 * rsp (*rsp_len 0 if it chose not to answer).  MBSC_ERR_MODBUS with detail.
 */
static int call_modbus_reply(mbsc_modbus_server *srv, const uint8_t *adu, size_t len,
                             uint8_t rsp[MBSC_MODBUS_MAX_ADU], size_t *rsp_len, char *detail,
                             size_t detail_len)
{
    uint8_t buf[MBSC_MODBUS_MAX_ADU + 1];
    size_t got = 0;
    int os_err, e;

    *rsp_len = 0;
    if (modbus_reply(srv->mb, adu, (int)len, srv->map) < 0) {
        e = errno;
        drain(srv->pair[0]);
        mbsc_why(detail, detail_len, "modbus_reply: %s", mb_errno_text(e));
        return MBSC_ERR_MODBUS;
    }
    /* libmodbus writes a reply with one send(): one read takes it whole. */
    if (mbsc_sock_recv(srv->pair[0], buf, sizeof buf, &got, &os_err) != MBSC_OK)
        return MBSC_OK; /* nothing sent: no answer */
    e = mbsc_modbus_check_adu(buf, got);
    if (e == MBSC_OK) {
        memcpy(rsp, buf, got);
        *rsp_len = got;
    } else {
        drain(srv->pair[0]);
        mbsc_why(detail, detail_len, "modbus_reply produced %zu bytes that are not one ADU", got);
        e = MBSC_ERR_MODBUS;
    }
    mbsc_wipe(buf, got); /* the reply is plaintext of the session */
    return e;
}

/* The hook's say: 0 to go on to modbus_reply, 1 when rsp holds the answer. */
static int ask_hook(mbsc_modbus_server *srv, const struct mbsc_server_conn_info *ci,
                    const uint8_t *adu, size_t len, uint8_t rsp[MBSC_MODBUS_MAX_ADU],
                    size_t *rsp_len, char *detail, size_t detail_len)
{
    struct mbsc_modbus_request req;
    uint8_t code = MBSC_EXC_ILLEGAL_FUNCTION;
    size_t answer_len = 0;
    enum mbsc_modbus_verdict v;

    memset(&req, 0, sizeof req);
    req.connection_id = ci->seq;
    req.peer_address = ci->peer_address;
    req.peer_name = ci->peer_name;
    req.peer_role = ci->peer_role;
    req.cipher = ci->cipher;
    req.adu = adu;
    req.adu_len = len;
    req.unit_id = adu[6];
    req.function = adu[7];
    v = srv->hook(srv->hook_user, &req, &code, rsp, &answer_len);
    switch (v) {
    case MBSC_MODBUS_ALLOW: return 0;
    case MBSC_MODBUS_REFUSE:
        if (code == 0 || code >= 0x80) {
            mbsc_why(detail, detail_len, "request hook: exception code %u is not 1..127",
                     (unsigned)code);
            return -1;
        }
        *rsp_len = mbsc_adu_exception(adu, code, rsp);
        return 1;
    case MBSC_MODBUS_ANSWER:
        if (answer_len > MBSC_MODBUS_MAX_ADU || mbsc_modbus_check_adu(rsp, answer_len) != MBSC_OK ||
            memcmp(rsp, adu, 2) != 0) {
            mbsc_why(detail, detail_len,
                     "request hook: its answer (%zu bytes) is not one ADU with the request's "
                     "transaction id",
                     answer_len);
            return -1;
        }
        *rsp_len = answer_len;
        return 1;
    }
    mbsc_why(detail, detail_len, "request hook: unknown verdict %d", (int)v);
    return -1;
}

/* One opened request of a confirmed session (mbsc_server_request_fn). */
static void on_request(void *user, mbsc_server *core, const struct mbsc_server_conn_info *ci,
                       const uint8_t *adu, size_t len)
{
    mbsc_modbus_server *srv = user;
    struct mbsc_modbus_event ev;
    uint8_t rsp[MBSC_MODBUS_MAX_ADU];
    char detail[DETAIL_BYTES];
    size_t rsp_len = 0;
    uint8_t exc;
    int r;

    if (mbsc_modbus_check_adu(adu, len) != MBSC_OK) {
        (void)mbsc_server_close(core, ci->id, MBSC_ERR_BAD_ADU,
                                len > MBSC_MODBUS_MAX_ADU
                                    ? "payload longer than a Modbus/TCP ADU"
                                    : "malformed Modbus/TCP ADU (MBAP header)");
        return;
    }
    if (srv->fn != NULL) {
        event_from(&ev, MBSC_MODBUS_EVENT_REQUEST, ci);
        ev.adu = adu;
        ev.adu_len = len;
        srv->fn(srv->user, &ev);
    }
    exc = mbsc_pdu_check_request(adu + MBSC_MBAP_BYTES, len - MBSC_MBAP_BYTES);
    r = 0;
    if (exc != 0)
        rsp_len = mbsc_adu_exception(adu, exc, rsp);
    else if (srv->hook != NULL)
        r = ask_hook(srv, ci, adu, len, rsp, &rsp_len, detail, sizeof detail);
    if (r < 0) {
        (void)mbsc_server_close(core, ci->id, MBSC_ERR_MODBUS, detail);
        goto out; /* the hook may have written part of an answer */
    }
    if (r == 0 && rsp_len == 0) {
        exc = mb_check_reply(adu, len, srv->map);
        if (exc != 0) {
            rsp_len = mbsc_adu_exception(adu, exc, rsp);
        } else if (call_modbus_reply(srv, adu, len, rsp, &rsp_len, detail, sizeof detail) !=
                   MBSC_OK) {
            (void)mbsc_server_close(core, ci->id, MBSC_ERR_MODBUS, detail);
            goto out;
        }
    }
    if (rsp_len == 0)
        r = mbsc_server_skip(core, ci->id);
    else
        r = mbsc_server_reply(core, ci->id, rsp, rsp_len);
    (void)r; /* a failure has closed the connection and been reported */
out:
    /* Sealed (or dropped): the plaintext answer goes.  The request itself
     * is the session's payload buffer, wiped when the server acks it. */
    mbsc_wipe(rsp, sizeof rsp);
}

/* --- Loop and queries ---------------------------------------------------------- */

MBSC_API int mbsc_modbus_server_step(mbsc_modbus_server *srv, int timeout_ms)
{
    return srv != NULL ? mbsc_server_step(srv->core, timeout_ms) : MBSC_ERR_INVALID_ARG;
}

MBSC_API size_t mbsc_modbus_server_fds(const mbsc_modbus_server *srv, struct pollfd *fds,
                                       size_t cap)
{
    int fd = srv != NULL ? mbsc_server_fd(srv->core) : -1;

    if (fd < 0)
        return 0;
    if (fds != NULL && cap > 0) {
        fds[0].fd = fd;
        fds[0].events = POLLIN;
        fds[0].revents = 0;
    }
    return 1;
}

MBSC_API int mbsc_modbus_server_next_timeout(const mbsc_modbus_server *srv)
{
    return srv != NULL ? mbsc_server_next_timeout(srv->core) : -1;
}

MBSC_API int mbsc_modbus_server_run(mbsc_modbus_server *srv)
{
    return srv != NULL ? mbsc_server_run(srv->core) : MBSC_ERR_INVALID_ARG;
}

MBSC_API void mbsc_modbus_server_stop(mbsc_modbus_server *srv)
{
    if (srv != NULL)
        mbsc_server_stop(srv->core);
}

MBSC_API void mbsc_modbus_server_set_event_fn(mbsc_modbus_server *srv, mbsc_modbus_event_fn fn,
                                              void *user)
{
    if (srv == NULL)
        return;
    srv->fn = fn;
    srv->user = user;
}

MBSC_API void mbsc_modbus_server_set_request_hook(mbsc_modbus_server *srv, mbsc_modbus_hook_fn fn,
                                                  void *user)
{
    if (srv == NULL)
        return;
    srv->hook = fn;
    srv->hook_user = user;
}

MBSC_API mbsc_server *mbsc_modbus_server_core(mbsc_modbus_server *srv)
{
    return srv != NULL ? srv->core : NULL;
}

MBSC_API int mbsc_modbus_server_address(const mbsc_modbus_server *srv, char *buf, size_t len)
{
    return srv != NULL ? mbsc_server_address(srv->core, buf, len) : MBSC_ERR_INVALID_ARG;
}

MBSC_API int mbsc_modbus_server_set_max_connections(mbsc_modbus_server *srv, unsigned n)
{
    if (srv == NULL || n == 0)
        return MBSC_ERR_INVALID_ARG;
    return mbsc_server_set_limit(srv->core, MBSC_SERVER_MAX_CONNECTIONS, n);
}

MBSC_API unsigned mbsc_modbus_server_connections(const mbsc_modbus_server *srv)
{
    struct mbsc_server_stats st;

    if (srv == NULL)
        return 0;
    mbsc_server_get_stats(srv->core, &st);
    return st.connections;
}

/* --- Setup ------------------------------------------------------------------------ */

/*
 * The libmodbus context.  modbus_reply() never reads from it (the checks in
 * adu.c answer every case where it would flush), but its timeouts are at
 * their minimum anyway, so that no path of it can wait.
 */
static int server_context(mbsc_modbus_server *srv, char *why, size_t why_len)
{
    srv->mb = mb_context_new(srv->pair[1]);
    if (srv->mb == NULL) {
        mbsc_why(why, why_len, "modbus_new_tcp: out of memory");
        return MBSC_ERR_NOMEM;
    }
    if (modbus_set_indication_timeout(srv->mb, 0, 1) != 0 ||
        modbus_set_byte_timeout(srv->mb, 0, 1) != 0 ||
        modbus_set_response_timeout(srv->mb, 0, 1) != 0) {
        mbsc_why(why, why_len, "libmodbus timeouts: %s", mb_errno_text(errno));
        return MBSC_ERR_MODBUS;
    }
    return MBSC_OK;
}

MBSC_API int mbsc_modbus_server_new(mbsc_modbus_server **out, const char *hostport,
                                    const mbsc_config *cfg, modbus_mapping_t *map, char *why,
                                    size_t why_len)
{
    mbsc_modbus_server *srv;
    int r;

    mbsc_why(why, why_len, "%s", "");
    if (out == NULL || hostport == NULL || cfg == NULL || map == NULL ||
        mbsc_config_role(cfg) != MBSC_ROLE_SLAVE) {
        mbsc_why(why, why_len,
                 "mbsc_modbus_server_new: needs an address, a slave's config and "
                 "a mapping");
        return MBSC_ERR_INVALID_ARG;
    }
    *out = NULL;
    srv = calloc(1, sizeof *srv);
    if (srv == NULL) {
        mbsc_why(why, why_len, "out of memory");
        return MBSC_ERR_NOMEM;
    }
    srv->map = map;
    srv->pair[0] = srv->pair[1] = -1;
    r = mb_socketpair(srv->pair, why, why_len);
    if (r == MBSC_OK)
        r = server_context(srv, why, why_len);
    if (r == MBSC_OK)
        r = mbsc_server_new(&srv->core, hostport, cfg, why, why_len);
    if (r != MBSC_OK) {
        mbsc_modbus_server_free(srv);
        return r;
    }
    mbsc_server_set_request_fn(srv->core, on_request, srv);
    mbsc_server_set_event_fn(srv->core, on_core_event, srv);
    *out = srv;
    return MBSC_OK;
}

MBSC_API void mbsc_modbus_server_free(mbsc_modbus_server *srv)
{
    if (srv == NULL)
        return;
    mbsc_server_free(srv->core); /* CLOSED events for the open sessions */
    if (srv->mb != NULL) {
        modbus_close(srv->mb); /* closes pair[1] */
        modbus_free(srv->mb);
    } else {
        mbsc_sock_close(srv->pair[1]);
    }
    mbsc_sock_close(srv->pair[0]);
    free(srv);
}
