/* SPDX-License-Identifier: ISC */
/*
 * client_mode.c - plain Modbus/TCP clients in, one mbsc session out.
 *
 * Beside a SCADA host whose Modbus client cannot be changed: it connects
 * to a local port (loopback only, unless --allow-remote-plaintext), and
 * every request goes over one mbsc session to a server gateway or any
 * mbsc slave.  The multiplexer (mux.c) gives each client its own
 * transaction ids back and serves clients that pipeline fairly.  When the
 * session fails it is made again with a new handshake (upstream.c);
 * meanwhile clients get exception 0B, which SCADA packages show as "no
 * answer from the device", the truth as far as they can know it.
 *
 * Closing a client frees its record, and reply() runs while take_requests()
 * or the multiplexer's delivery have their hands on it: so a client is
 * never freed where it is found gone.  It is marked (mark_closed: its
 * watch removed, its requests forgotten at once, its socket still open)
 * and freed by a task deferred to the end of the loop's turn, when nothing
 * walks the list.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "clock.h"
#include "control.h"
#include "log.h"
#include "loop.h"
#include "modes.h"
#include "routing.h"
#include "secrets.h"
#include "signals.h"
#include "status_fmt.h"

#define DEFAULT_MAX_CLIENTS 64u
#define CLIENT_OUT          (32u * MBSC_ADU_MAX)

struct gw_client;

struct local {
    struct gw_client *g;
    uint64_t id;
    int fd;
    struct gw_watch *watch;
    char peer[MBSC_ADDRSTRLEN];
    uint8_t in[2 * MBSC_ADU_MAX];
    size_t in_len;
    uint8_t out[CLIENT_OUT];
    size_t out_len;
    time_t since;
    uint64_t requests;
    int closing;      /* marked: freed at the end of the turn */
    int send_planned; /* out goes just before the loop sleeps (send_answers) */
    char why[128];    /* why it is closed (the first reason) */
};

struct gw_client {
    struct gw_options *o; /* in force; a reload replaces its contents */
    int argc;
    char **argv;
    struct gw_loop *loop;
    struct gw_secrets cur;
    mbsc_listener *listener;
    struct gw_watch *listen_watch, *sig_watch;
    struct gw_routing *routing;
    struct local **clients;
    size_t n_clients, max_clients;
    uint64_t next_id;
    int sweep_planned;
    int draining;
    struct gw_timer *drain_timer;
    struct gw_control *control; /* --control, or NULL */
    char addr[MBSC_ADDRSTRLEN];
    uint64_t requests; /* from every local client, since the start */
    time_t started;
};

static struct local *find_local(struct gw_client *g, uint64_t id)
{
    size_t i;

    for (i = 0; i < g->n_clients; i++)
        if (g->clients[i]->id == id)
            return g->clients[i];
    return NULL;
}

/* Free client i now: only where nothing walks the clients (the sweep, the end). */
static void close_local(struct gw_client *g, size_t i)
{
    struct local *c = g->clients[i];

    gw_log(GW_INFO, "client %s disconnected: %s", c->peer, c->why[0] != '\0' ? c->why : "closed");
    gw_routing_forget(g->routing, c->id);
    gw_watch_remove(c->watch);
    if (c->send_planned)
        gw_loop_forget_before_sleep(g->loop, c);
    close(c->fd);
    sodium_memzero(c, sizeof *c); /* process data, not kept */
    free(c);
    g->clients[i] = g->clients[--g->n_clients];
}

/* The end of the turn: free the clients marked closed. */
static void sweep(void *data)
{
    struct gw_client *g = data;
    size_t i = 0;

    g->sweep_planned = 0;
    while (i < g->n_clients) {
        if (g->clients[i]->closing)
            close_local(g, i); /* the last one takes place i */
        else
            i++;
    }
}

/*
 * The client is done for: nothing more is read from it or written to it,
 * and the routes forget its requests (allowed from reply(), mux.h).  The
 * record stays until the sweep.
 */
static void mark_closed(struct gw_client *g, struct local *c, const char *why)
{
    if (c->closing)
        return;
    c->closing = 1;
    snprintf(c->why, sizeof c->why, "%s", why);
    gw_watch_remove(c->watch);
    c->watch = NULL;
    gw_routing_forget(g->routing, c->id);
    if (!g->sweep_planned && gw_loop_defer(g->loop, sweep, g) == 0)
        g->sweep_planned = 1;
    /* Out of memory for the task: the next mark (or the end) sweeps. */
}

/* Wait for what c can take now: requests while its queue has room, POLLOUT while answers wait. */
static void rewatch(struct gw_client *g, struct local *c)
{
    int room = gw_routing_pending(g->routing, c->id) < g->o->max_queue && c->in_len < sizeof c->in;

    if (!c->closing)
        (void)gw_watch_set(c->watch, (room ? GW_IO_IN : 0u) | (c->out_len > 0 ? GW_IO_OUT : 0u));
}

/* Send what waits; -1 if the client is gone. */
static int flush_local(struct local *c)
{
    while (c->out_len > 0) {
        ssize_t n = send(c->fd, c->out, c->out_len, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n <= 0)
            return -1;
        memmove(c->out, c->out + n, c->out_len - (size_t)n);
        c->out_len -= (size_t)n;
    }
    return 0;
}

static void send_answers(void *data)
{
    struct local *c = data;

    c->send_planned = 0;
    if (c->closing)
        return;
    if (flush_local(c) != 0)
        mark_closed(c->g, c, "send failed");
    else
        rewatch(c->g, c);
}

/*
 * Answers go out as the last thing before the loop sleeps: the client they
 * wake then finds this process asleep rather than waiting for its CPU,
 * and the answers of one turn leave together.
 */
static void reply(void *user, uint64_t origin, const uint8_t *adu, size_t len)
{
    struct gw_client *g = user;
    struct local *c = find_local(g, origin);

    if (c == NULL || c->closing)
        return;
    if (len > sizeof c->out - c->out_len) {
        mark_closed(g, c, "it does not read its answers");
        return;
    }
    memcpy(c->out + c->out_len, adu, len);
    c->out_len += len;
    if (c->send_planned)
        return;
    if (gw_loop_before_sleep(g->loop, send_answers, c) == 0) {
        c->send_planned = 1;
        return;
    }
    send_answers(c); /* out of memory for the plan: at once */
}

/* Cut whole requests off a client's input and hand them on; NULL, or why c must go. */
static const char *take_requests(struct gw_client *g, struct local *c)
{
    size_t at = 0;

    while (!c->closing && c->in_len - at >= MBSC_MBAP_LENGTH_END) {
        const uint8_t *adu = c->in + at;
        size_t n = mbsc_adu_length(adu);

        if (n == 0)
            return "not Modbus/TCP (bad MBAP header)";
        if (c->in_len - at < n)
            break;
        c->requests++;
        g->requests++;
        if (g->draining) {
            uint8_t ex[MBSC_EXCEPTION_ADU_BYTES];

            reply(g, c->id, ex, mbsc_adu_exception(adu, MBSC_EXC_GATEWAY_PATH_UNAVAILABLE, ex));
        } else if (gw_routing_submit(g->routing, c->id, c->id, adu, n) != MBSC_OK) {
            return "out of memory";
        }
        /* reply() may have marked c closed; it stays allocated until the sweep. */
        at += n;
    }
    memmove(c->in, c->in + at, c->in_len - at);
    c->in_len -= at;
    return NULL;
}

static void on_local(void *data, unsigned happened)
{
    struct local *c = data;
    struct gw_client *g = c->g;
    const char *why;
    ssize_t n;

    if (c->closing)
        return;
    if ((happened & (GW_IO_OUT | GW_IO_ERR)) && flush_local(c) != 0) {
        mark_closed(g, c, "send failed");
        return;
    }
    if ((happened & (GW_IO_IN | GW_IO_ERR)) && c->in_len < sizeof c->in) {
        do
            n = recv(c->fd, c->in + c->in_len, sizeof c->in - c->in_len, 0);
        while (n < 0 && errno == EINTR);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            rewatch(g, c);
            return;
        }
        if (n <= 0) {
            mark_closed(g, c, n < 0 ? strerror(errno) : "closed");
            return;
        }
        c->in_len += (size_t)n;
        why = take_requests(g, c);
        if (why != NULL) {
            mark_closed(g, c, why);
            return;
        }
    }
    rewatch(g, c);
}

static void on_listener(void *data, unsigned happened)
{
    struct gw_client *g = data;

    (void)happened;
    for (;;) {
        char peer[MBSC_ADDRSTRLEN], why[256];
        struct local *c, **n;
        int fd = -1;
        int r = mbsc_listener_accept_fd(g->listener, 0, &fd, peer, why, sizeof why);

        if (r == MBSC_ERR_TIMEOUT)
            return;
        if (r != MBSC_OK) {
            gw_log(GW_WARN, "accept: %s", why);
            return;
        }
        if (g->n_clients >= g->max_clients) {
            gw_log(GW_WARN, "client %s refused: %zu client%s already (max-connections)", peer,
                   g->n_clients, g->n_clients == 1 ? "" : "s");
            close(fd);
            continue;
        }
        c = calloc(1, sizeof *c);
        n = realloc(g->clients, (g->n_clients + 1) * sizeof *n);
        if (n != NULL)
            g->clients = n;
        if (c == NULL || n == NULL ||
            (c->watch = gw_watch_add(g->loop, fd, GW_IO_IN, on_local, c)) == NULL) {
            free(c);
            close(fd);
            gw_log(GW_WARN, "client %s refused: out of memory", peer);
            continue;
        }
        c->g = g;
        c->id = ++g->next_id;
        c->fd = fd;
        c->since = time(NULL);
        snprintf(c->peer, sizeof c->peer, "%s", peer);
        g->clients[g->n_clients++] = c;
        gw_log(GW_INFO, "client %s connected", peer);
    }
}

/* ---- reload (SIGHUP) ---- */

/*
 * Re-read the configuration file (with the command line over it) and the
 * key, PSK and the peer's key: all of it, or nothing.  The new keys apply
 * to the next session; where the gateway listens waits for a restart.
 */
static void reload(struct gw_client *g)
{
    struct gw_options no;
    struct gw_secrets ns;
    char why[GW_WHY_SIZE];

    gw_notify("RELOADING=1");
    gw_options_init(&no);
    if (gw_options_parse(&no, g->argc, g->argv) >= 0 || no.mode != GW_MODE_CLIENT) {
        gw_log(GW_ERR, "reload failed, the old configuration stays in force: %s",
               no.mode != GW_MODE_CLIENT && no.mode != GW_MODE_NONE
                   ? "the configuration now says server mode; restart to change the mode"
                   : "see the error above");
    } else if (gw_secrets_load(&ns, &no, why, sizeof why) != 0) {
        gw_log(GW_ERR, "reload failed, the old configuration stays in force: %s", why);
    } else {
        if (strcmp(no.upstream, g->o->upstream) != 0 || strcmp(no.listen, g->o->listen) != 0)
            gw_log(GW_WARN, "listen or upstream changed: it takes effect at the next start");
        /* A session copies what it needs from its config: the old one can go. */
        gw_routing_set_config(g->routing, ns.cfg);
        gw_secrets_free(&g->cur);
        g->cur = ns;
        gw_options_free(g->o);
        *g->o = no;
        gw_log_set_level(g->o->log_level != 0 ? (enum gw_level)g->o->log_level : GW_INFO);
        gw_log(GW_INFO, "reloaded: the next session to %s uses the new keys", g->o->upstream);
        gw_notify("READY=1");
        return;
    }
    gw_options_free(&no);
    gw_notify("READY=1");
}

/* ---- status (SIGUSR1, --control) ---- */

static void status_text(const struct gw_client *g, FILE *out)
{
    unsigned q = gw_routing_total(g->routing);
    size_t i;

    fprintf(out, "client mode on %s, %zu client%s, %u request%s queued or in flight\n", g->addr,
            g->n_clients, g->n_clients == 1 ? "" : "s", q, q == 1 ? "" : "s");
    gw_routing_status(g->routing, GW_STATUS_TEXT, out);
    for (i = 0; i < g->n_clients; i++) {
        char since[32];

        gw_time_utc(g->clients[i]->since, since, sizeof since);
        fprintf(out, "client %s connected-since %s requests %llu\n", g->clients[i]->peer, since,
                (unsigned long long)g->clients[i]->requests);
    }
}

static void status_json(const struct gw_client *g, FILE *out)
{
    char since[32];
    size_t i;

    gw_time_utc(g->started, since, sizeof since);
    fputc('{', out);
    gw_json_kv_str(out, 1, "mode", "client");
    gw_json_kv_str(out, 0, "listen", g->addr);
    gw_json_kv_str(out, 0, "version", mbsc_version());
    gw_json_kv_str(out, 0, "started", since);
    gw_json_kv_u64(out, 0, "clients_connected", g->n_clients);
    gw_json_kv_u64(out, 0, "requests_pending", gw_routing_total(g->routing));
    gw_json_kv_u64(out, 0, "requests", g->requests);
    fputs(",\"routes\":", out);
    gw_routing_status(g->routing, GW_STATUS_JSON, out);
    fputs(",\"clients\":[", out);
    for (i = 0; i < g->n_clients; i++) {
        gw_time_utc(g->clients[i]->since, since, sizeof since);
        fputs(i > 0 ? ",{" : "{", out);
        gw_json_kv_str(out, 1, "address", g->clients[i]->peer);
        gw_json_kv_str(out, 0, "connected_since", since);
        gw_json_kv_u64(out, 0, "requests", g->clients[i]->requests);
        fputc('}', out);
    }
    fputs("]}\n", out);
}

static void status_prometheus(const struct gw_client *g, FILE *out)
{
    gw_prom_family(out, "mbsc_gateway_info", "gauge", "The gateway's mode, address and version.");
    fputs("mbsc_gateway_info{mode=\"client\",listen=\"", out);
    gw_prom_label_value(out, g->addr);
    fprintf(out, "\",version=\"%s\"} 1\n", mbsc_version());
    gw_prom_family(out, "mbsc_gateway_start_time_seconds", "gauge",
                   "When the gateway started, in seconds since the epoch.");
    fprintf(out, "mbsc_gateway_start_time_seconds %lld\n", (long long)g->started);
    gw_prom_family(out, "mbsc_gateway_clients", "gauge", "Local clients connected now.");
    fprintf(out, "mbsc_gateway_clients %zu\n", g->n_clients);
    gw_prom_family(out, "mbsc_gateway_requests_pending", "gauge", "Requests queued or in flight.");
    fprintf(out, "mbsc_gateway_requests_pending %u\n", gw_routing_total(g->routing));
    gw_prom_family(out, "mbsc_gateway_requests_total", "counter",
                   "Requests received from local clients.");
    fprintf(out, "mbsc_gateway_requests_total %" PRIu64 "\n", g->requests);
    gw_routing_status(g->routing, GW_STATUS_PROMETHEUS, out);
}

static void status_write(void *user, enum gw_status_format fmt, FILE *out)
{
    struct gw_client *g = user;

    switch (fmt) {
    case GW_STATUS_TEXT: status_text(g, out); break;
    case GW_STATUS_JSON: status_json(g, out); break;
    case GW_STATUS_PROMETHEUS: status_prometheus(g, out); break;
    }
}

/* ---- stopping ---- */

static void stop_now(struct gw_client *g, const char *how)
{
    size_t i;

    for (i = 0; i < g->n_clients; i++)
        (void)flush_local(g->clients[i]);
    gw_log(GW_INFO, "%s", how);
    gw_loop_stop(g->loop, GW_EX_OK);
}

static void before_wait(void *data)
{
    struct gw_client *g = data;

    if (g->draining && gw_routing_total(g->routing) == 0)
        stop_now(g, "stopped");
}

static void on_drain_timeout(void *data)
{
    stop_now(data, "stopped with requests unanswered (drain timeout)");
}

static void on_signal(void *data, unsigned happened)
{
    struct gw_client *g = data;
    unsigned sig = gw_signals_take();

    (void)happened;
    if (sig & GW_SIG_RELOAD)
        reload(g);
    if (sig & GW_SIG_STATUS)
        gw_status_log(status_write, g);
    if ((sig & GW_SIG_STOP) && !g->draining) {
        g->draining = 1;
        gw_notify("STOPPING=1");
        gw_watch_remove(g->listen_watch);
        g->listen_watch = NULL;
        mbsc_listener_close(g->listener); /* stop accepting */
        g->listener = NULL;
        gw_log(GW_INFO, "stopping: %u request%s to finish", gw_routing_total(g->routing),
               gw_routing_total(g->routing) == 1 ? "" : "s");
        gw_timer_in(g->drain_timer, (int)g->o->drain_ms);
    }
}

/* ---- start ---- */

static int start(struct gw_client *g)
{
    struct gw_path_settings ps;
    char why[GW_WHY_SIZE];
    const struct gw_options *o = g->o;

    g->loop = gw_loop_new(why, sizeof why);
    if (g->loop == NULL) {
        gw_log(GW_ERR, "%s", why);
        return -1;
    }
    /* First: a gateway that already runs with this control socket is not disturbed at all. */
    if (o->control != NULL && (g->control = gw_control_open(g->loop, o->control, status_write, g,
                                                            why, sizeof why)) == NULL) {
        gw_log(GW_ERR, "%s", why);
        return -1;
    }
    ps.max_in_flight = (unsigned)o->max_in_flight;
    ps.max_queue = (unsigned)o->max_queue;
    ps.request_timeout_ms = (unsigned)o->request_timeout_ms;
    ps.unreachable_code = MBSC_EXC_GATEWAY_TARGET_FAILED;
    ps.up.connect_timeout_ms = (unsigned)o->connect_timeout_ms;
    ps.up.backoff_max_ms = (unsigned)o->reconnect_max_ms;
    ps.up.request_timeout_ms = (unsigned)o->request_timeout_ms;
    g->routing = gw_routing_new(g->loop, &o->routes, g->cur.cfg, &ps, reply, g, why, sizeof why);
    if (g->routing == NULL) {
        gw_log(GW_ERR, "%s", why);
        return -1;
    }
    if (mbsc_listen(o->listen, &g->listener, why, sizeof why) != MBSC_OK) {
        gw_log(GW_ERR, "%s", why);
        return -1;
    }
    if (mbsc_listener_address(g->listener, g->addr, sizeof g->addr) != MBSC_OK)
        return -1;
    g->listen_watch =
        gw_watch_add(g->loop, mbsc_listener_fd(g->listener), GW_IO_IN, on_listener, g);
    g->sig_watch = gw_watch_add(g->loop, gw_signals_fd(), GW_IO_IN, on_signal, g);
    g->drain_timer = gw_timer_new(g->loop, on_drain_timeout, g);
    if (g->listen_watch == NULL || g->sig_watch == NULL || g->drain_timer == NULL ||
        gw_loop_before_wait(g->loop, before_wait, g) != 0) {
        gw_log(GW_ERR, "out of memory");
        return -1;
    }
    return 0;
}

int gw_client_mode(struct gw_options *o, int argc, char **argv)
{
    struct gw_client g;
    char why[GW_WHY_SIZE];
    int rc = GW_EX_FAILURE;

    memset(&g, 0, sizeof g);
    g.o = o;
    g.argc = argc;
    g.argv = argv;
    g.started = time(NULL);
    g.max_clients = o->max_connections != 0 ? o->max_connections : DEFAULT_MAX_CLIENTS;
    if (gw_secrets_load(&g.cur, o, why, sizeof why) != 0) {
        gw_log(GW_ERR, "%s", why);
        return GW_EX_FAILURE;
    }
    if (start(&g) == 0) {
        if (printf("listening on %s\n", g.addr) < 0 || fflush(stdout) == EOF) {
            gw_log(GW_ERR, "cannot write to stdout");
        } else {
            gw_log(GW_INFO, "client mode on %s (plaintext), mbsc upstream %s", g.addr, o->upstream);
            gw_notify("READY=1");
            rc = gw_loop_run(g.loop);
            if (rc < 0) {
                gw_log(GW_ERR, "%s: stopping", gw_loop_error(g.loop));
                rc = GW_EX_FAILURE;
            }
        }
    }
    while (g.n_clients > 0) {
        if (!g.clients[0]->closing)
            snprintf(g.clients[0]->why, sizeof g.clients[0]->why, "gateway stopped");
        close_local(&g, 0);
    }
    free(g.clients);
    gw_control_close(g.control);
    gw_routing_free(g.routing);
    gw_watch_remove(g.listen_watch);
    gw_watch_remove(g.sig_watch);
    gw_timer_free(g.drain_timer);
    mbsc_listener_close(g.listener);
    gw_loop_free(g.loop);
    gw_secrets_free(&g.cur);
    return rc;
}
