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
 * Closing a client frees its record, and reply() runs while the loop,
 * take_requests() or the multiplexer's delivery have their hands on
 * clients: so a client is never freed where it is found gone.  It is
 * marked (mark_closed: its requests are forgotten at once, its socket
 * stays open) and the marked clients are freed by sweep() at the end of
 * the loop turn, when nothing walks the list.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "sock/sock.h"
#include "gw.h"

#define DEFAULT_MAX_CLIENTS 64u
#define CLIENT_OUT          (32u * GW_MAX_ADU)

struct local {
    uint64_t id;
    int fd;
    char peer[MBSC_ADDRSTRLEN];
    uint8_t in[2 * GW_MAX_ADU];
    size_t in_len;
    uint8_t out[CLIENT_OUT];
    size_t out_len;
    time_t since;
    uint64_t requests;
    int closing;   /* marked: sweep() frees it at the end of the turn */
    char why[128]; /* why it is closed (the first reason) */
};

struct gw_client {
    const struct gw_options *o;
    struct gw_secrets cur;
    mbsc_listener *listener;
    struct gw_upstream *up;
    struct gw_mux *mux;
    struct local **clients;
    size_t n_clients, max_clients;
    uint64_t next_id;
    int draining;
    struct gw_control *control; /* --control, or NULL */
};

static struct local *find_local(struct gw_client *g, uint64_t id)
{
    size_t i;

    for (i = 0; i < g->n_clients; i++)
        if (g->clients[i]->id == id)
            return g->clients[i];
    return NULL;
}

/* Free client i now: only where nothing walks the clients (sweep, the end). */
static void close_local(struct gw_client *g, size_t i, const char *why)
{
    struct local *c = g->clients[i];

    gw_log(GW_INFO, "client %s disconnected: %s", c->peer, why);
    gw_mux_forget(g->mux, c->id);
    mbsc_sock_close(c->fd);
    sodium_memzero(c, sizeof *c); /* process data, not kept */
    free(c);
    g->clients[i] = g->clients[--g->n_clients];
}

/*
 * The client is done for: nothing more is read from it or written to it,
 * and the multiplexer forgets its requests (allowed from reply(), mux.c).
 * The record stays until sweep().
 */
static void mark_closed(struct gw_client *g, struct local *c, const char *why)
{
    if (c->closing)
        return;
    c->closing = 1;
    snprintf(c->why, sizeof c->why, "%s", why);
    gw_mux_forget(g->mux, c->id);
}

/* The end of the loop turn: free the clients marked closed. */
static void sweep(struct gw_client *g)
{
    size_t i = 0;

    while (i < g->n_clients) {
        if (g->clients[i]->closing)
            close_local(g, i, g->clients[i]->why); /* the last one takes place i */
        else
            i++;
    }
}

/* Send what waits; -1 if the client is gone. */
static int flush_local(struct local *c)
{
    while (c->out_len > 0) {
        size_t sent = 0;
        int os_err = 0, r = mbsc_sock_send(c->fd, c->out, c->out_len, &sent, &os_err);

        if (r == MBSC_ERR_WOULD_BLOCK)
            return 0;
        if (r != MBSC_OK)
            return -1;
        memmove(c->out, c->out + sent, c->out_len - sent);
        c->out_len -= sent;
    }
    return 0;
}

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
    if (flush_local(c) != 0)
        mark_closed(g, c, "send failed");
}

/* Cut whole requests off a client's input and hand them on; NULL, or why c must go. */
static const char *take_requests(struct gw_client *g, struct local *c)
{
    while (!c->closing && c->in_len >= 6) {
        size_t n = gw_adu_length(c->in);

        if (n == 0 || n < GW_MBAP + 1)
            return "not Modbus/TCP (bad MBAP header)";
        if (c->in_len < n)
            return NULL;
        c->requests++;
        if (g->draining) {
            uint8_t ex[9];

            reply(g, c->id, ex, gw_exception(c->in, GW_EXC_PATH_UNAVAILABLE, ex));
        } else if (gw_mux_submit(g->mux, c->id, c->id, c->in, n, gw_now_ns()) != MBSC_OK) {
            return "out of memory";
        }
        /* reply() may have marked c closed; it stays allocated until the sweep. */
        memmove(c->in, c->in + n, c->in_len - n);
        c->in_len -= n;
    }
    return NULL;
}

static void local_io(struct gw_client *g, uint64_t id, short revents)
{
    struct local *c = find_local(g, id);

    if (c == NULL || c->closing)
        return;
    if ((revents & POLLOUT) && flush_local(c) != 0) {
        mark_closed(g, c, "send failed");
        return;
    }
    if (revents & (POLLIN | POLLERR | POLLHUP)) {
        const char *why;
        size_t got = 0;
        int os_err = 0, r;

        r = mbsc_sock_recv(c->fd, c->in + c->in_len, sizeof c->in - c->in_len, &got, &os_err);
        if (r == MBSC_ERR_WOULD_BLOCK)
            return;
        if (r != MBSC_OK) {
            mark_closed(g, c, os_err != 0 ? strerror(os_err) : "closed");
            return;
        }
        c->in_len += got;
        why = take_requests(g, c);
        if (why != NULL)
            mark_closed(g, c, why);
    }
}

static void accept_some(struct gw_client *g)
{
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
            gw_log(GW_WARN, "client %s refused: %zu clients already", peer, g->n_clients);
            mbsc_sock_close(fd);
            continue;
        }
        c = calloc(1, sizeof *c);
        n = realloc(g->clients, (g->n_clients + 1) * sizeof *n);
        if (c == NULL || n == NULL) {
            free(c);
            if (n != NULL)
                g->clients = n;
            mbsc_sock_close(fd);
            gw_log(GW_WARN, "client %s refused: out of memory", peer);
            continue;
        }
        g->clients = n;
        c->id = ++g->next_id;
        c->fd = fd;
        c->since = time(NULL);
        snprintf(c->peer, sizeof c->peer, "%s", peer);
        g->clients[g->n_clients++] = c;
        gw_log(GW_INFO, "client %s connected", peer);
    }
}

static void reload(struct gw_client *g)
{
    struct gw_secrets ns;
    char why[GW_WHY_SIZE];

    gw_notify("RELOADING=1");
    if (gw_secrets_load(&ns, g->o, why, sizeof why) != 0) {
        gw_log(GW_ERR, "reload failed, the old configuration stays in force: %s", why);
    } else {
        /* A session copies what it needs from its config: the old one can go. */
        gw_upstream_set_config(g->up, ns.cfg);
        gw_secrets_free(&g->cur);
        g->cur = ns;
        gw_log(GW_INFO, "reloaded: the next session to %s uses the new keys",
               gw_upstream_name(g->up));
    }
    gw_notify("READY=1");
}

/* The status lines (control.c prints them, or logs them on SIGUSR1). */
static void status_write(void *user, FILE *out)
{
    struct gw_client *g = user;
    struct gw_mux_stats ms;
    const mbsc_cipher *c = gw_upstream_cipher(g->up);
    size_t i;

    gw_mux_get_stats(g->mux, &ms);
    fprintf(out,
            "upstream %s %s%s%s (%llu sessions), %zu clients; forwarded %llu, answered "
            "%llu, timed out %llu, unreachable %llu, busy %llu, dropped answers %llu "
            "(late %llu)\n",
            gw_upstream_name(g->up),
            gw_upstream_state(g->up) == GW_UP_READY ? "connected" : "not connected",
            c != NULL ? " with " : "", c != NULL ? mbsc_cipher_name(c) : "",
            (unsigned long long)gw_upstream_connects(g->up), g->n_clients,
            (unsigned long long)ms.forwarded, (unsigned long long)ms.answered,
            (unsigned long long)ms.timed_out, (unsigned long long)ms.unreachable,
            (unsigned long long)ms.busy, (unsigned long long)ms.dropped,
            (unsigned long long)ms.late);
    for (i = 0; i < g->n_clients; i++) {
        char since[32];
        struct tm tm;

        gmtime_r(&g->clients[i]->since, &tm);
        strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", &tm);
        fprintf(out, "client %s connected-since %s requests %llu\n", g->clients[i]->peer, since,
                (unsigned long long)g->clients[i]->requests);
    }
}

static int run(struct gw_client *g)
{
    int64_t drain_until = 0;
    struct pollfd *pfd = NULL;
    uint64_t *ids = NULL;
    size_t cap = 0;
    int rc = GW_EX_OK;

    for (;;) {
        int64_t now = gw_now_ns();
        int t = gw_min_timeout(gw_mux_timeout(g->mux, now), gw_upstream_timeout(g->up, now));
        int up_fd = gw_upstream_fd(g->up);
        size_t n = 0, i, first_control, n_ctl, first_client;
        unsigned sig;

        if (cap < g->n_clients + 3 + GW_CONTROL_FDS) {
            cap = g->n_clients + 16 + GW_CONTROL_FDS;
            free(pfd);
            free(ids);
            pfd = calloc(cap, sizeof *pfd);
            ids = calloc(cap, sizeof *ids);
            if (pfd == NULL || ids == NULL) {
                gw_log(GW_ERR, "out of memory");
                rc = GW_EX_FAILURE;
                break;
            }
        }
        if (g->draining)
            t = gw_min_timeout(t, gw_ms_until(drain_until, now));
        t = gw_min_timeout(t, gw_control_timeout(g->control, now));
        pfd[n].fd = gw_signals_fd();
        pfd[n++].events = POLLIN;
        pfd[n].fd = g->listener != NULL ? mbsc_listener_fd(g->listener) : -1;
        pfd[n++].events = POLLIN;
        pfd[n].fd = up_fd;
        pfd[n++].events = gw_upstream_events(g->up);
        first_control = n;
        n_ctl = gw_control_pollfds(g->control, pfd + n);
        n += n_ctl;
        first_client = n;
        for (i = 0; i < g->n_clients; i++, n++) {
            struct local *c = g->clients[i];
            /* Back-pressure: a client with a full queue is not read. */
            int room = gw_mux_pending(g->mux, c->id) < g->o->max_queue && c->in_len < sizeof c->in;

            ids[n] = c->id;
            pfd[n].fd = c->fd;
            pfd[n].events = (short)((room ? POLLIN : 0) | (c->out_len > 0 ? POLLOUT : 0));
        }
        for (i = 0; i < n; i++)
            pfd[i].revents = 0;
        if (poll(pfd, (nfds_t)n, t) < 0 && errno != EINTR) {
            gw_log(GW_ERR, "poll: %s", strerror(errno));
            rc = GW_EX_FAILURE;
            break;
        }
        sig = gw_signals_take();
        if (sig & GW_SIG_RELOAD)
            reload(g);
        if (sig & GW_SIG_STATUS)
            gw_status_log(status_write, g);
        gw_control_io(g->control, pfd + first_control, n_ctl, status_write, g, gw_now_ns());
        if ((sig & GW_SIG_STOP) && !g->draining) {
            g->draining = 1;
            drain_until = gw_now_ns() + (int64_t)g->o->drain_ms * 1000000;
            gw_notify("STOPPING=1");
            mbsc_listener_close(g->listener); /* stop accepting */
            g->listener = NULL;
            gw_log(GW_INFO, "stopping: %u requests to finish", gw_mux_total(g->mux));
        }
        if (up_fd >= 0 && up_fd == gw_upstream_fd(g->up))
            gw_upstream_io(g->up, pfd[2].revents);
        for (i = first_client; i < n; i++)
            if (pfd[i].revents != 0)
                local_io(g, ids[i], pfd[i].revents);
        if (g->listener != NULL && (pfd[1].revents & POLLIN))
            accept_some(g);
        now = gw_now_ns();
        gw_upstream_tick(g->up, now);
        gw_mux_tick(g->mux, now);
        sweep(g);
        if (g->draining && (gw_mux_total(g->mux) == 0 || now >= drain_until)) {
            for (i = 0; i < g->n_clients; i++)
                (void)flush_local(g->clients[i]);
            gw_log(GW_INFO, "stopped");
            break;
        }
    }
    free(pfd);
    free(ids);
    return rc;
}

int gw_client_mode(const struct gw_options *o)
{
    struct gw_client g;
    struct gw_mux_config mc;
    struct gw_upstream_hooks hooks;
    char why[GW_WHY_SIZE], addr[MBSC_ADDRSTRLEN];
    int rc = GW_EX_FAILURE;

    memset(&g, 0, sizeof g);
    g.o = o;
    g.max_clients = o->max_connections != 0 ? o->max_connections : DEFAULT_MAX_CLIENTS;
    if (gw_secrets_load(&g.cur, o, why, sizeof why) != 0) {
        gw_log(GW_ERR, "%s", why);
        return GW_EX_FAILURE;
    }
    mc.max_in_flight = (unsigned)o->max_in_flight;
    mc.max_queue = (unsigned)o->max_queue;
    mc.timeout_ms = (unsigned)o->request_timeout_ms;
    mc.unreachable_code = GW_EXC_TARGET_FAILED;
    g.mux = gw_mux_new(&mc, reply, &g);
    if (g.mux == NULL)
        goto out;
    hooks = gw_mux_hooks(g.mux);
    g.up = gw_upstream_new(o->upstream, g.cur.cfg, (unsigned)o->connect_timeout_ms,
                           (unsigned)o->reconnect_max_ms, &hooks);
    if (g.up == NULL)
        goto out;
    gw_mux_attach(g.mux, g.up);
    if (mbsc_listen(o->listen, &g.listener, why, sizeof why) != MBSC_OK) {
        gw_log(GW_ERR, "%s", why);
        goto out;
    }
    if (mbsc_listener_address(g.listener, addr, sizeof addr) != MBSC_OK)
        goto out;
    if (o->control != NULL && (g.control = gw_control_open(o->control, why, sizeof why)) == NULL) {
        gw_log(GW_ERR, "%s", why);
        goto out;
    }
    if (printf("listening on %s\n", addr) < 0 || fflush(stdout) == EOF) {
        gw_log(GW_ERR, "cannot write to stdout");
        goto out;
    }
    gw_log(GW_INFO, "client mode on %s (plaintext), mbsc upstream %s", addr, o->upstream);
    gw_notify("READY=1");
    rc = run(&g);
out:
    while (g.n_clients > 0)
        close_local(&g, 0, "gateway stopped");
    free(g.clients);
    mbsc_listener_close(g.listener);
    gw_control_close(g.control);
    gw_mux_free(g.mux);
    gw_upstream_free(g.up);
    gw_secrets_free(&g.cur);
    return rc;
}
