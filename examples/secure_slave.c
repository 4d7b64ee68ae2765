/* SPDX-License-Identifier: ISC */
/*
 * secure_slave - a Modbus/TCP slave (server) reachable only through mbsc.
 *
 *   secure_slave --listen HOST:PORT --key FILE --authorized FILE
 *                [--psk FILE] [--ciphers LIST] [--handshake-timeout MS]
 *                [--max-unconfirmed N] [--max-connections N]
 *                [--max-per-address N] [--max-sessions-per-master N]
 *                [--idle-timeout MS] [--log-interval MS] [--policy FILE]
 *
 * It serves one libmodbus mapping (SLAVE_ITEMS coils, discrete inputs,
 * holding registers and input registers, all zero at start) to any number
 * of masters at once, from one event loop (mbsc_modbus_server_run).  Only
 * masters whose public key is in the --authorized allow-list get through
 * the handshake; only authenticated requests reach libmodbus.  The limits
 * that keep it serving under attack (mbsc/server.h) each have an option;
 * idle masters are closed after five minutes unless --idle-timeout says
 * otherwise.
 *
 * With --policy, every request is checked against the master's role
 * (mbsc/policy.h, docs/policy.md) before libmodbus sees it: a refused one
 * is answered with exception 01 and logged.  SIGHUP re-reads the key, the
 * PSK, the allow-list and the policy: new masters get in at once, a
 * removed one is disconnected, a changed role applies to the next
 * request, and a file with a bad line keeps the old configuration.
 *
 * Input register 0 counts the requests served (it wraps at 65536), so a
 * master can see the slave at work without any other application logic.
 *
 * Output, for scripts and logs:
 *   stdout  exactly one line, "listening on HOST:PORT" with the real port
 *           (useful with port 0), flushed as soon as the socket listens;
 *   stderr  one line per confirmed connection and its end, errors, and at
 *           most one summary of refused connections per log interval (an
 *           unknown master key is printed once), "secure_slave: ...".
 *
 * Exit status: 0 after SIGINT or SIGTERM, 1 on a runtime failure (keys,
 * allow-list, address), 2 on a bad command line.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbsc.h>
#include <mbsc/modbus.h>

#include "common.h"

#define PROG "secure_slave"

/* Addresses 0..SLAVE_ITEMS-1 exist in each of the four tables. */
#define SLAVE_ITEMS 1000

/* Longest accepted handshake timeout: one hour is already absurd. */
#define MAX_HANDSHAKE_TIMEOUT_MS 3600000ul

/*
 * A master gone without closing its connection (or holding a session it
 * does not use) gives its slot back after this long; the library's own
 * default is never.
 */
#define DEFAULT_IDLE_TIMEOUT_MS 300000ul

struct options {
    const char *listen;
    const char *key;
    const char *authorized;
    const char *psk;
    const char *ciphers;
    const char *policy;
    unsigned long handshake_timeout_ms; /* 0: the library's default */
    /* Server limits; 0 means the library's default (idle: a default of ours). */
    unsigned long max_unconfirmed, max_connections, max_per_address, log_interval_ms;
    unsigned long max_per_master;
    unsigned long idle_timeout_ms;
    int idle_given;
};

/* The numeric options: name, slot, range, and the server limit they set. */
struct numeric_option {
    const char *name;
    size_t offset; /* in struct options */
    unsigned long min, max;
    int limit; /* enum mbsc_server_limit, 0 for none */
};

static const struct numeric_option numeric_options[] = {
    {"--handshake-timeout", offsetof(struct options, handshake_timeout_ms), 1,
     MAX_HANDSHAKE_TIMEOUT_MS, MBSC_SERVER_HANDSHAKE_TIMEOUT_MS},
    /* The total first: the unconfirmed budget is clamped to it. */
    {"--max-connections", offsetof(struct options, max_connections), 1, 1000000,
     MBSC_SERVER_MAX_CONNECTIONS},
    {"--max-unconfirmed", offsetof(struct options, max_unconfirmed), 1, 1000000,
     MBSC_SERVER_MAX_UNCONFIRMED},
    {"--max-per-address", offsetof(struct options, max_per_address), 1, 1000000,
     MBSC_SERVER_MAX_UNCONFIRMED_PER_ADDRESS},
    {"--max-sessions-per-master", offsetof(struct options, max_per_master), 1, 1000000,
     MBSC_SERVER_MAX_SESSIONS_PER_KEY},
    {"--idle-timeout", offsetof(struct options, idle_timeout_ms), 0, MAX_HANDSHAKE_TIMEOUT_MS * 24,
     MBSC_SERVER_IDLE_TIMEOUT_MS},
    {"--log-interval", offsetof(struct options, log_interval_ms), 1, MAX_HANDSHAKE_TIMEOUT_MS,
     MBSC_SERVER_LOG_INTERVAL_MS},
};
#define N_NUMERIC (sizeof numeric_options / sizeof numeric_options[0])

/*
 * The server, for the signal handler.  mbsc_modbus_server_stop() is
 * async-signal-safe; the pointer is set before the handlers are installed
 * and cleared only after they are removed.
 */
static mbsc_modbus_server *volatile running_server;

/* Set by SIGHUP: the loop stops, reloads and goes on. */
static volatile sig_atomic_t reload_requested;

static void usage(FILE *out)
{
    fputs("usage: " PROG " --listen HOST:PORT --key FILE --authorized FILE\n"
          "                    [--psk FILE] [--ciphers LIST] [--handshake-timeout MS]\n"
          "                    [--max-unconfirmed N] [--max-connections N]\n"
          "                    [--max-per-address N] [--max-sessions-per-master N]\n"
          "                    [--idle-timeout MS] [--log-interval MS] [--policy FILE]\n"
          "       " PROG " --help | --version\n"
          "\n"
          "Serves Modbus/TCP through the mbsc secure channel: 1000 coils, discrete\n"
          "inputs, holding and input registers, all zero at start; input register 0\n"
          "counts the requests served.\n"
          "\n"
          "  --listen HOST:PORT     address to listen on ([V6ADDR]:PORT for IPv6);\n"
          "                         port 0 picks a free port\n"
          "  --key FILE             this slave's private key (mbsc-keygen; mode 0600)\n"
          "  --authorized FILE      allow-list: one '<public key> <name> [role]' per line\n"
          "  --psk FILE             pre-shared key, if the masters use one\n"
          "  --ciphers LIST         ciphers allowed, comma-separated (default: all)\n"
          "  --handshake-timeout MS time a master has to finish the handshake,\n"
          "                         confirmation included (default 2000)\n"
          "  --max-unconfirmed N    connections not yet confirmed at once (default 64);\n"
          "                         when full, the oldest of them makes room\n"
          "  --max-connections N    connections at once (default 1024, and below the\n"
          "                         descriptor limit, ulimit -n, minus 16)\n"
          "  --max-per-address N    unconfirmed connections per source address\n"
          "                         (default 4)\n"
          "  --max-sessions-per-master N  sessions one master key may hold at once\n"
          "                         (default 4); more are refused when they confirm\n"
          "  --idle-timeout MS      close a master's session after MS without a\n"
          "                         request (default 300000, five minutes; 0: never)\n"
          "  --log-interval MS      at most one summary of refused connections per\n"
          "                         interval (default 10000)\n"
          "  --policy FILE          roles to rights (man mbsc-policy): requests the\n"
          "                         master's role may not make get exception 01\n"
          "\n"
          "The first line on stdout is 'listening on HOST:PORT' with the real port.\n"
          "Connection events are logged on stderr.  SIGINT or SIGTERM stops the\n"
          "slave (exit status 0).  SIGHUP re-reads the key, PSK, allow-list and\n"
          "policy; a bad file keeps the old ones.\n"
          "Manuals: man secure_slave (and its DIAGNOSTICS for refused handshakes),\n"
          "mbsc-allowlist(5), mbsc-policy(5), mbsc-keys(5).\n",
          out);
}

/* Returns -1 to go on, or the exit status. */
static int parse_args(int argc, char **argv, struct options *o)
{
    int i;

    memset(o, 0, sizeof *o);
    o->idle_timeout_ms = DEFAULT_IDLE_TIMEOUT_MS;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *val;
        const char **slot = NULL;
        const struct numeric_option *num = NULL;
        const char *eq;
        size_t name_len, k;

        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return fflush(stdout) == EOF ? EX_FAILURE : EX_OK;
        }
        if (strcmp(a, "--version") == 0)
            return ex_print_version();
        if (strncmp(a, "--", 2) != 0)
            return ex_usage_error("unexpected argument '%.200s'", a);
        /* --name VALUE or --name=VALUE */
        eq = strchr(a, '=');
        name_len = eq != NULL ? (size_t)(eq - a) : strlen(a);
#define IS(opt) (name_len == sizeof(opt) - 1 && strncmp(a, opt, name_len) == 0)
        if (IS("--listen"))
            slot = &o->listen;
        else if (IS("--key"))
            slot = &o->key;
        else if (IS("--authorized"))
            slot = &o->authorized;
        else if (IS("--psk"))
            slot = &o->psk;
        else if (IS("--ciphers"))
            slot = &o->ciphers;
        else if (IS("--policy"))
            slot = &o->policy;
        for (k = 0; slot == NULL && k < N_NUMERIC; k++)
            if (name_len == strlen(numeric_options[k].name) &&
                strncmp(a, numeric_options[k].name, name_len) == 0)
                num = &numeric_options[k];
        if (slot == NULL && num == NULL)
            return ex_usage_error("unknown option '%.200s' (see --help)", a);
#undef IS
        val = ex_option_value(argc, argv, &i, eq, a);
        if (val == NULL)
            return EX_USAGE;
        if (num != NULL) {
            unsigned long *dst = (unsigned long *)(void *)((char *)o + num->offset);
            int idle = num->limit == MBSC_SERVER_IDLE_TIMEOUT_MS;

            if (idle ? o->idle_given : *dst != 0)
                return ex_usage_error("%s given twice", num->name);
            if (ex_parse_ulong(val, num->min, num->max, dst) != 0)
                return ex_usage_error("%s '%.200s': expected %lu..%lu", num->name, val, num->min,
                                      num->max);
            if (idle)
                o->idle_given = 1;
            continue;
        }
        if (*slot != NULL)
            return ex_usage_error("option '%.200s' given twice", a);
        *slot = val;
    }
    if (o->listen == NULL)
        return ex_usage_error("missing --listen HOST:PORT");
    if (ex_check_hostport(o->listen, 1) != 0)
        return ex_usage_error("--listen '%.200s': expected HOST:PORT or [V6ADDR]:PORT, port "
                              "0..65535",
                              o->listen);
    if (o->key == NULL)
        return ex_usage_error("missing --key FILE");
    if (o->authorized == NULL)
        return ex_usage_error("missing --authorized FILE");
    if (o->ciphers != NULL) {
        char why[256];

        if (ex_check_cipher_list(o->ciphers, why, sizeof why) != 0)
            return ex_usage_error("--ciphers: %s", why);
    }
    return -1;
}

/* ---- Connection events ---------------------------------------------------- */

static const char *close_reason(const struct mbsc_modbus_event *ev)
{
    if (ev->detail != NULL && ev->detail[0] != '\0')
        return ev->detail;
    if (ev->error == MBSC_OK)
        return "peer closed";
    return mbsc_strerror(ev->error);
}

/* Called from inside mbsc_modbus_server_run(), in this thread. */
static void on_event(void *user, const struct mbsc_modbus_event *ev)
{
    modbus_mapping_t *map = user;
    const char *addr = ev->peer_address != NULL ? ev->peer_address : "?";

    switch (ev->type) {
    case MBSC_MODBUS_EVENT_CONNECTED:
        ex_msg("%s connected as %s (%s)", addr, ev->peer_name != NULL ? ev->peer_name : "?",
               ev->cipher != NULL ? mbsc_cipher_name(ev->cipher) : "?");
        break;
    case MBSC_MODBUS_EVENT_REQUEST:
        /* Before modbus_reply(): a read of input register 0 sees itself. */
        map->tab_input_registers[0] = (uint16_t)(map->tab_input_registers[0] + 1u);
        break;
    case MBSC_MODBUS_EVENT_CLOSED:
        ex_msg("%s (%s) closed: %s", addr, ev->peer_name != NULL ? ev->peer_name : "?",
               close_reason(ev));
        break;
    case MBSC_MODBUS_EVENT_LOG:
        /* Refusals summed up per interval, an unknown key once: never a flood. */
        ex_msg("%s", ev->detail != NULL ? ev->detail : "");
        break;
    default: break; /* events added later are not ours to log */
    }
}

/* ---- Signals -------------------------------------------------------------- */

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
    mbsc_modbus_server *srv = running_server;
    int saved = errno;

    if (sig == SIGHUP)
        reload_requested = 1;
    else
        stop_requested = 1;
    if (srv != NULL)
        mbsc_modbus_server_stop(srv);
    errno = saved;
}

static int set_stop_handlers(void (*fn)(int))
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sigemptyset(&sa.sa_mask);
    /* No SA_RESTART: poll() in the loop returns EINTR at once. */
    sa.sa_flags = 0;
    if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0 ||
        sigaction(SIGHUP, &sa, NULL) != 0)
        return -1;
    return 0;
}

/* ---- Main ----------------------------------------------------------------- */

static int load_allowlist(const struct options *o, mbsc_allowlist **al)
{
    char why[EX_WHY_SIZE];

    if (mbsc_allowlist_load(al, o->authorized, why, sizeof why) != MBSC_OK) {
        ex_msg("%s", why);
        return -1;
    }
    if (mbsc_allowlist_count(*al) == 0)
        ex_msg("warning: %s lists no master: every connection will be refused", o->authorized);
    return 0;
}

static mbsc_config *make_config(const struct options *o, const mbsc_allowlist *al)
{
    mbsc_config *cfg = ex_config_new(MBSC_ROLE_SLAVE, o->key, o->psk);

    if (cfg == NULL)
        return NULL;
    if (mbsc_config_set_allowlist(cfg, al) != MBSC_OK) {
        ex_msg("cannot use the allow-list %s", o->authorized);
        goto fail;
    }
    if (o->ciphers != NULL && mbsc_config_set_ciphers(cfg, o->ciphers) != MBSC_OK) {
        ex_msg("--ciphers '%s': %s", o->ciphers, "rejected by the library");
        goto fail;
    }
    if (o->handshake_timeout_ms != 0 &&
        mbsc_config_set_handshake_timeout(cfg, (unsigned)o->handshake_timeout_ms) != MBSC_OK) {
        ex_msg("--handshake-timeout %lu: rejected by the library", o->handshake_timeout_ms);
        goto fail;
    }
    return cfg;
fail:
    mbsc_config_free(cfg);
    return NULL;
}

/* ---- Roles and reload ------------------------------------------------------ */

/* What a reload (SIGHUP) replaces: all of it, or nothing if a file is bad. */
struct slave_state {
    const struct options *o;
    mbsc_allowlist *al;
    mbsc_config *cfg;
    mbsc_policy *policy; /* NULL without --policy */
    /* A master that sends refused request after refused request must not
     * fill the log: a few lines per window, then a count. */
    long long refusal_window_ms;
    unsigned refusals_logged, refusals_unlogged;
};

#define REFUSALS_LOGGED_PER_WINDOW 5u
#define REFUSAL_WINDOW_MS          10000

/* The request hook: the master's role against the policy, before libmodbus. */
static enum mbsc_modbus_verdict policy_hook(void *user, const struct mbsc_modbus_request *req,
                                            uint8_t *exception_code,
                                            uint8_t answer[MBSC_MODBUS_MAX_ADU], size_t *answer_len)
{
    struct slave_state *st = user;
    char why[256];
    long long now;

    (void)answer;
    (void)answer_len;
    if (st->policy == NULL || mbsc_policy_check(st->policy, req->peer_role, req->adu + 7,
                                                req->adu_len - 7, why, sizeof why) == MBSC_OK)
        return MBSC_MODBUS_ALLOW;
    now = ex_now_ms();
    if (now - st->refusal_window_ms >= REFUSAL_WINDOW_MS) {
        if (st->refusals_unlogged > 0)
            ex_msg("%u more requests refused by the policy", st->refusals_unlogged);
        st->refusal_window_ms = now;
        st->refusals_logged = st->refusals_unlogged = 0;
    }
    if (st->refusals_logged < REFUSALS_LOGGED_PER_WINDOW) {
        st->refusals_logged++;
        ex_msg("%s (%s) refused: function 0x%02x address %u: %s", req->peer_address, req->peer_name,
               req->function, req->adu_len >= 10 ? (unsigned)req->adu[8] << 8 | req->adu[9] : 0u,
               why);
    } else {
        st->refusals_unlogged++;
    }
    *exception_code = MBSC_POLICY_REFUSAL_EXCEPTION;
    return MBSC_MODBUS_REFUSE;
}

/* Roles of the allow-list that the policy does not name can do nothing: say so. */
static void warn_powerless_masters(const mbsc_policy *policy, const mbsc_allowlist *al,
                                   const char *path)
{
    size_t i;

    for (i = 0; policy != NULL && i < mbsc_allowlist_count(al); i++) {
        const char *name = NULL, *role = NULL;

        if (mbsc_allowlist_get(al, i, NULL, &name, &role) != MBSC_OK)
            continue;
        if (role == NULL)
            ex_msg("warning: master %s has no role: the policy %s lets it do nothing", name, path);
        else if (!mbsc_policy_has_role(policy, role))
            ex_msg("warning: master %s has role %s, which the policy %s does not name: it may "
                   "do nothing",
                   name, role, path);
    }
}

static int load_policy(const struct options *o, mbsc_policy **policy)
{
    char why[EX_WHY_SIZE];

    *policy = NULL;
    if (o->policy == NULL)
        return 0;
    if (mbsc_policy_load(policy, o->policy, why, sizeof why) != MBSC_OK) {
        ex_msg("%s", why);
        return -1;
    }
    /* Rules that grant more than they seem: said at start and at every reload. */
    for (size_t i = 0; mbsc_policy_warning(*policy, i) != NULL; i++)
        ex_msg("warning: %s", mbsc_policy_warning(*policy, i));
    return 0;
}

/*
 * SIGHUP: every file again; the server takes the new config if all loaded.
 * From then on it judges every session by the new allow-list, those still
 * in their handshake included (mbsc_server_set_config), and reads the old
 * config and list no more: they go at once.
 */
static void reload(struct slave_state *st, mbsc_modbus_server *srv)
{
    mbsc_server *core = mbsc_modbus_server_core(srv);
    mbsc_allowlist *al = NULL;
    mbsc_policy *policy = NULL;
    mbsc_config *cfg = NULL;
    char why[EX_WHY_SIZE];
    int closed;

    if (load_allowlist(st->o, &al) != 0 || load_policy(st->o, &policy) != 0 ||
        (cfg = make_config(st->o, al)) == NULL ||
        mbsc_server_set_config(core, cfg, why, sizeof why) != MBSC_OK) {
        ex_msg("reload failed: the old configuration stays in force");
        mbsc_config_free(cfg);
        mbsc_allowlist_free(al);
        mbsc_policy_free(policy);
        return;
    }
    mbsc_config_free(st->cfg); /* before the allow-list it borrows */
    mbsc_allowlist_free(st->al);
    st->cfg = cfg;
    st->al = al;
    mbsc_policy_free(st->policy); /* only used inside the hook, in this thread */
    st->policy = policy;
    warn_powerless_masters(policy, al, st->o->policy);
    closed = mbsc_server_apply_allowlist(core, al);
    ex_msg("reloaded: %zu masters in %s%s%s, %d disconnected", mbsc_allowlist_count(al),
           st->o->authorized, policy != NULL ? ", policy " : "",
           policy != NULL ? st->o->policy : "", closed > 0 ? closed : 0);
}

/* The server limits given on the command line, and our idle timeout; -1 if one is refused. */
static int apply_limits(const struct options *o, mbsc_server *core)
{
    size_t k;

    for (k = 0; k < N_NUMERIC; k++) {
        const struct numeric_option *num = &numeric_options[k];
        unsigned long v = *(const unsigned long *)(const void *)((const char *)o + num->offset);

        if (v == 0 && num->limit != MBSC_SERVER_IDLE_TIMEOUT_MS)
            continue; /* the library's default (0 means never for the idle timeout) */
        if (mbsc_server_set_limit(core, (enum mbsc_server_limit)num->limit, (unsigned)v) !=
            MBSC_OK) {
            ex_msg("%s %lu: rejected by the library", num->name, v);
            return -1;
        }
        if (mbsc_server_get_limit(core, (enum mbsc_server_limit)num->limit) != v)
            ex_msg("warning: %s %lu lowered to %u (descriptor limit, ulimit -n)", num->name, v,
                   mbsc_server_get_limit(core, (enum mbsc_server_limit)num->limit));
    }
    return 0;
}

/* Serve until a stop signal; returns the exit status. */
static int serve(const struct options *o, struct slave_state *st, modbus_mapping_t *map)
{
    mbsc_config *cfg = st->cfg;
    char why[EX_WHY_SIZE], addr[MBSC_ADDRSTRLEN];
    mbsc_modbus_server *srv = NULL;
    int rc;

    if (mbsc_modbus_server_new(&srv, o->listen, cfg, map, why, sizeof why) != MBSC_OK) {
        ex_msg("%s", why[0] != '\0' ? why : "cannot start the server");
        return EX_FAILURE;
    }
    mbsc_modbus_server_set_event_fn(srv, on_event, map);
    mbsc_modbus_server_set_request_hook(srv, policy_hook, st);
    if (apply_limits(o, mbsc_modbus_server_core(srv)) != 0) {
        mbsc_modbus_server_free(srv);
        return EX_FAILURE;
    }
    running_server = srv;
    /* Handlers before the "listening" line: a script that signals us as soon
     * as it has read the line must get a clean exit, not a default death. */
    if (set_stop_handlers(on_stop_signal) != 0) {
        ex_msg("sigaction: %s", strerror(errno));
        rc = EX_FAILURE;
        goto out;
    }
    if (mbsc_modbus_server_address(srv, addr, sizeof addr) < 0) {
        ex_msg("cannot read the listening address");
        rc = EX_FAILURE;
        goto out;
    }
    /* Scripts wait for this line instead of sleeping: flush it at once. */
    if (printf("listening on %s\n", addr) < 0 || fflush(stdout) == EOF)
        ex_msg("warning: cannot write to standard output: %s", strerror(errno));

    for (;;) {
        rc = mbsc_modbus_server_run(srv);
        if (rc != MBSC_OK || stop_requested || !reload_requested)
            break;
        reload_requested = 0;
        reload(st, srv);
    }
    if (rc != MBSC_OK) {
        ex_msg("server stopped: %s", mbsc_strerror(rc));
        rc = EX_FAILURE;
    } else {
        rc = EX_OK;
    }
out:
    (void)set_stop_handlers(SIG_DFL);
    running_server = NULL;
    mbsc_modbus_server_free(srv);
    return rc;
}

int main(int argc, char **argv)
{
    struct options o;
    struct slave_state st;
    modbus_mapping_t *map = NULL;
    int rc;

    ex_set_prog(PROG);
    rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;
    ex_ignore_sigpipe();
    if (mbsc_init() != MBSC_OK) {
        ex_msg("mbsc_init failed: libsodium cannot be initialised (is /dev/urandom or getrandom() "
               "available?)");
        return EX_FAILURE;
    }
    memset(&st, 0, sizeof st);
    st.o = &o;
    if (load_allowlist(&o, &st.al) != 0)
        return EX_FAILURE;
    rc = EX_FAILURE;
    if (load_policy(&o, &st.policy) != 0)
        goto out;
    warn_powerless_masters(st.policy, st.al, o.policy);
    st.refusal_window_ms = ex_now_ms();
    st.cfg = make_config(&o, st.al);
    if (st.cfg == NULL)
        goto out;
    /* modbus_mapping_new zero-fills every table. */
    map = modbus_mapping_new(SLAVE_ITEMS, SLAVE_ITEMS, SLAVE_ITEMS, SLAVE_ITEMS);
    if (map == NULL) {
        ex_msg("modbus_mapping_new: %s", modbus_strerror(errno));
        goto out;
    }
    rc = serve(&o, &st, map);
out:
    modbus_mapping_free(map);
    mbsc_config_free(st.cfg); /* before the allow-list it borrows */
    mbsc_allowlist_free(st.al);
    mbsc_policy_free(st.policy);
    return rc;
}
