/* SPDX-License-Identifier: ISC */
/*
 * options.c - the gateway's settings, from the command line and from a
 * configuration file.
 *
 * Every option has the same name in both: "--request-timeout 500" on the
 * command line is "request-timeout = 500" in the file (docs/gateway.md).
 * The file is read first, then the command line overrides it.  The file
 * may also say "mode = server" or "mode = client", so that a service can
 * run "mbsc-gateway --config FILE" alone.
 *
 * Each setting remembers where it was given, so that what is wrong with it
 * is reported there: a setting twice in one file, a setting of the other
 * mode, a mode that the command line and the file disagree on.  Settings
 * that name a file (kind PATH) are taken relative to the configuration
 * file's directory when written relative in it, so that a directory of
 * keys and configuration can move as a whole.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "options.h"
#include "serial_target.h"
#include "tls_conf.h"

#define CONFIG_MAX_BYTES (64u * 1024u)
#define LINE_MAX_BYTES   1024u

/* PATH: a STRING naming a file; LEVEL: a log level (log.h). */
enum kind { STRING, NUMBER, FLAG, CIPHER, PATH, LEVEL };

/* Which modes an option belongs to. */
#define M_SERVER 1u
#define M_CLIENT 2u
#define M_BOTH   3u

struct option_def {
    const char *name;
    enum kind kind;
    size_t offset;
    unsigned modes;
    unsigned long min, max;
};

#define S(field) offsetof(struct gw_options, field)
static const struct option_def defs[] = {
    {"listen", STRING, S(listen), M_BOTH, 0, 0},
    {"upstream", STRING, S(upstream), M_BOTH, 0, 0},
    {"key", PATH, S(key), M_BOTH, 0, 0},
    {"authorized", PATH, S(authorized), M_SERVER, 0, 0},
    {"peer", PATH, S(peer), M_CLIENT, 0, 0},
    {"psk", PATH, S(psk), M_BOTH, 0, 0},
    {"ciphers", STRING, S(ciphers), M_BOTH, 0, 0},
    {"cipher", CIPHER, S(ciphers), M_CLIENT, 0, 0},
    {"policy", PATH, S(policy), M_SERVER, 0, 0},
    {"allow-remote-plaintext", FLAG, S(allow_remote_plaintext), M_CLIENT, 0, 1},
    {"max-in-flight", NUMBER, S(max_in_flight), M_BOTH, 1, 64},
    {"max-queue", NUMBER, S(max_queue), M_BOTH, 1, 1024},
    {"request-timeout", NUMBER, S(request_timeout_ms), M_BOTH, 1, 3600000},
    {"connect-timeout", NUMBER, S(connect_timeout_ms), M_BOTH, 1, 3600000},
    {"reconnect-max", NUMBER, S(reconnect_max_ms), M_BOTH, 100, 3600000},
    {"handshake-timeout", NUMBER, S(handshake_timeout_ms), M_SERVER, 1, 3600000},
    {"max-connections", NUMBER, S(max_connections), M_BOTH, 1, 1000000},
    {"drain-timeout", NUMBER, S(drain_ms), M_BOTH, 0, 3600000},
    {"control", PATH, S(control), M_BOTH, 0, 0},
    {"log-level", LEVEL, S(log_level), M_BOTH, 0, 0},
    {"max-sessions-per-master", NUMBER, S(max_sessions_per_master), M_SERVER, 1, 1000000},
    {"idle-timeout", NUMBER, S(idle_timeout_ms), M_SERVER, 0, 86400000},
    {"listen-tls", STRING, S(listen_tls), M_SERVER, 0, 0},
    {"tls-cert", PATH, S(tls_cert), M_SERVER, 0, 0},
    {"tls-key", PATH, S(tls_key), M_SERVER, 0, 0},
    {"tls-ca", PATH, S(tls_ca), M_SERVER, 0, 0},
    {"tls-legacy-ciphers", FLAG, S(tls_legacy_ciphers), M_SERVER, 0, 1},
    {"upstream-tls-cert", PATH, S(upstream_tls_cert), M_SERVER, 0, 0},
    {"upstream-tls-key", PATH, S(upstream_tls_key), M_SERVER, 0, 0},
    {"upstream-tls-ca", PATH, S(upstream_tls_ca), M_SERVER, 0, 0},
    {"upstream-tls-name", STRING, S(upstream_tls_name), M_SERVER, 0, 0},
};
#undef S

#define N_DEFS (sizeof defs / sizeof defs[0])
_Static_assert(N_DEFS <= GW_OPTIONS_MAX, "raise GW_OPTIONS_MAX for the new settings");

/* Settings held as a malloc'ed string (CIPHER shares ciphers' field). */
static int owns_string(enum kind k)
{
    return k == STRING || k == PATH;
}

void gw_options_init(struct gw_options *o)
{
    memset(o, 0, sizeof *o);
    o->max_in_flight = 1;
    o->max_queue = 16;
    o->request_timeout_ms = 1000;
    o->connect_timeout_ms = 3000;
    o->reconnect_max_ms = 5000;
    o->drain_ms = 2000;
    gw_route_table_init(&o->routes);
    /* A master gone without a word (or holding a session for nothing) frees its slot. */
    o->idle_timeout_ms = 300000;
}

void gw_options_free(struct gw_options *o)
{
    size_t i;

    for (i = 0; i < N_DEFS; i++)
        if (owns_string(defs[i].kind)) {
            char **p = (char **)(void *)((char *)o + defs[i].offset);

            free(*p);
            *p = NULL;
        }
    free(o->config);
    o->config = NULL;
}

static const struct option_def *find_def(const char *name, size_t len)
{
    size_t i;

    for (i = 0; i < N_DEFS; i++)
        if (strlen(defs[i].name) == len && memcmp(defs[i].name, name, len) == 0)
            return &defs[i];
    return NULL;
}

const char *gw_options_where(const struct gw_options *o, const char *name)
{
    const struct option_def *d = find_def(name, strlen(name));

    return d != NULL ? o->where[d - defs] : "";
}

/* Strict unsigned decimal: no sign, no spaces, no octal surprise. */
static int parse_number(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
    unsigned long v = 0;

    if (*s == '\0')
        return -1;
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9' || v > (max - (unsigned long)(*s - '0')) / 10)
            return -1;
        v = v * 10 + (unsigned long)(*s - '0');
    }
    if (v < min)
        return -1;
    *out = v;
    return 0;
}

/* Set one option; where names the place for messages ("--listen", "gw.conf:3"). */
static int set_option(struct gw_options *o, const struct option_def *d, const char *value,
                      const char *where)
{
    char *p = (char *)o + d->offset;
    enum gw_level level;

    switch (d->kind) {
    case STRING:
    case PATH:
    case CIPHER:
        if (value == NULL || value[0] == '\0') {
            gw_log(GW_ERR, "%s: %s needs a value", where, d->name);
            return -1;
        }
        if (d->kind == CIPHER && strchr(value, ',') != NULL) {
            gw_log(GW_ERR, "%s: cipher takes one name; use ciphers for a list", where);
            return -1;
        }
        free(*(char **)(void *)p);
        *(char **)(void *)p = strdup(value);
        if (*(char **)(void *)p == NULL) {
            gw_log(GW_ERR, "out of memory");
            return -1;
        }
        break;
    case FLAG:
        if (value == NULL || strcmp(value, "yes") == 0 || strcmp(value, "true") == 0 ||
            strcmp(value, "1") == 0) {
            *(int *)(void *)p = 1;
        } else if (strcmp(value, "no") == 0 || strcmp(value, "false") == 0 ||
                   strcmp(value, "0") == 0) {
            *(int *)(void *)p = 0;
        } else {
            gw_log(GW_ERR, "%s: %s is yes or no, not '%s'", where, d->name, value);
            return -1;
        }
        break;
    case NUMBER:
        if (value == NULL || parse_number(value, d->min, d->max, (unsigned long *)(void *)p) != 0) {
            gw_log(GW_ERR, "%s: %s must be a number from %lu to %lu, not '%s'", where, d->name,
                   d->min, d->max, value != NULL ? value : "");
            return -1;
        }
        break;
    case LEVEL:
        if (value == NULL || gw_log_level_parse(value, &level) != 0 || level == GW_ERR) {
            gw_log(GW_ERR, "%s: %s is debug, info or warning, not '%s'", where, d->name,
                   value != NULL ? value : "");
            return -1;
        }
        *(int *)(void *)p = (int)level;
        break;
    }
    snprintf(o->where[d - defs], sizeof o->where[0], "%s", where);
    return 0;
}

static const char *mode_name(enum gw_mode m)
{
    return m == GW_MODE_SERVER ? "server" : m == GW_MODE_CLIENT ? "client" : "none";
}

/*
 * The mode, from the command line's first word or a file's "mode =" line.
 * They must agree: a file that says client under "mbsc-gateway server"
 * is a mistake to report, not a switch to make silently.
 */
static int set_mode(struct gw_options *o, const char *value, const char *where)
{
    enum gw_mode m;

    if (strcmp(value, "server") == 0)
        m = GW_MODE_SERVER;
    else if (strcmp(value, "client") == 0)
        m = GW_MODE_CLIENT;
    else {
        gw_log(GW_ERR, "%s: mode is server or client, not '%s'", where, value);
        return -1;
    }
    if (o->mode != GW_MODE_NONE && m != o->mode) {
        gw_log(GW_ERR,
               "%s: mode = %s, but %s says %s: a gateway has one mode; make them agree, or "
               "leave the mode out of one of them",
               where, value, o->mode_where, mode_name(o->mode));
        return -1;
    }
    o->mode = m;
    snprintf(o->mode_where, sizeof o->mode_where, "%s", where);
    return 0;
}

static char *trim(char *s)
{
    char *e;

    while (*s == ' ' || *s == '\t')
        s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        *--e = '\0';
    return s;
}

/* A route from the file (sep ' ') or the command line (sep '='). */
static int add_route(struct gw_options *o, const char *value, char sep, const char *where)
{
    char why[GW_WHY_SIZE];

    if (gw_route_add(&o->routes, value, sep, where, why, sizeof why) != 0) {
        gw_log(GW_ERR, "%s", why);
        return -1;
    }
    return 0;
}

/* The file being read: its name for messages, its directory for relative paths. */
struct config_file {
    const char *path;
    unsigned id;    /* o->files_read when it was opened */
    char dir[4096]; /* "" when the path names no directory: the working one */
};

/* A value in quotes: the quotes would become part of it (a file "\"/etc/k\"" does not exist). */
static int quoted(const char *where, const char *key, const char *value)
{
    size_t n = strlen(value);

    if (value[0] != '"' && value[0] != '\'')
        return 0;
    if (n >= 2 && value[n - 1] == value[0])
        gw_log(GW_ERR,
               "%s: the value of %s is in quotes, which would be part of it; values are "
               "written bare: %s = %.*s",
               where, key, key, (int)(n - 2), value + 1);
    else
        gw_log(GW_ERR, "%s: the value of %s starts with a quote; values are written bare", where,
               key);
    return 1;
}

/* One line of the config file, without its line end: set what it says. */
static int config_line(struct gw_options *o, const struct config_file *f, char *line,
                       const char *where)
{
    char *hash = strchr(line, '#'), *eq, *key, *value, joined[sizeof f->dir + LINE_MAX_BYTES + 2];
    const struct option_def *d;

    if (hash != NULL)
        *hash = '\0';
    key = trim(line);
    if (*key == '\0')
        return 0;
    eq = strchr(key, '=');
    if (eq == NULL) {
        gw_log(GW_ERR, "%s: expected 'key = value', got '%s'", where, key);
        return -1;
    }
    *eq = '\0';
    value = trim(eq + 1);
    key = trim(key);
    if (quoted(where, key, value))
        return -1;
    if (strcmp(key, "mode") == 0) {
        if (o->mode_file == f->id) {
            gw_log(GW_ERR, "%s: mode is set twice in %s (first at %s); keep one line", where,
                   f->path, o->mode_where);
            return -1;
        }
        if (set_mode(o, value, where) != 0)
            return -1;
        o->mode_file = f->id;
        return 0;
    }
    if (strcmp(key, "route") == 0)
        return add_route(o, value, ' ', where);
    d = find_def(key, strlen(key));
    if (d == NULL) {
        gw_log(GW_ERR, "%s: unknown setting '%s' (see mbsc-gateway --help)", where, key);
        return -1;
    }
    if (o->where_file[d - defs] == f->id) {
        gw_log(GW_ERR, "%s: %s is set twice in %s (first at %s); keep one line", where, d->name,
               f->path, o->where[d - defs]);
        return -1;
    }
    if (d->kind == PATH && value[0] != '/' && value[0] != '\0' && f->dir[0] != '\0') {
        snprintf(joined, sizeof joined, "%s/%s", f->dir, value);
        value = joined;
    }
    if (set_option(o, d, value, where) != 0)
        return -1;
    o->where_file[d - defs] = f->id;
    return 0;
}

/*
 * Read the config file: "key = value" lines, '#' comments, blank lines.
 * It names the key files and the policy, so whoever may change it may
 * change them: it is read under the rules of an allow-list (mbsc/keys.h),
 * owner and directories included.  Every bad line is reported, not only
 * the first, so that one edit can fix them all.
 */
static int read_config(struct gw_options *o, const char *path)
{
    char why[MBSC_WHY_SIZE + 4096], where[4096 + 32];
    char *text = malloc(CONFIG_MAX_BYTES + 1), *line;
    struct config_file f;
    const char *slash = strrchr(path, '/');
    unsigned lineno = 0;
    size_t len = 0;
    int r, rc = 0;

    if (text == NULL) {
        gw_log(GW_ERR, "out of memory");
        return -1;
    }
    f.path = path;
    f.id = ++o->files_read;
    f.dir[0] = '\0';
    if (slash != NULL)
        snprintf(f.dir, sizeof f.dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    if (strcmp(f.dir, "/") == 0)
        f.dir[0] = '\0'; /* "/" + "/" + name would do, but "/name" reads better */
    r = mbsc_trusted_file_read(path, text, CONFIG_MAX_BYTES, &len, why, sizeof why);
    if (r != MBSC_OK) {
        if (r == MBSC_ERR_BUFFER_TOO_SMALL)
            gw_log(GW_ERR, "configuration %s: larger than %u bytes: is this a configuration file?",
                   path, CONFIG_MAX_BYTES);
        else
            gw_log(GW_ERR, "configuration %s", why);
        free(text);
        return -1;
    }
    text[len] = '\0';
    for (line = text; line < text + len; lineno++) {
        char *lf = memchr(line, '\n', (size_t)(text + len - line));
        size_t n = lf != NULL ? (size_t)(lf - line) : (size_t)(text + len - line);

        snprintf(where, sizeof where, "%s:%u", path, lineno + 1);
        if (n > LINE_MAX_BYTES) {
            gw_log(GW_ERR, "%s: line longer than %u bytes", where, LINE_MAX_BYTES);
            rc = -1;
        } else if (memchr(line, '\0', n) != NULL) {
            gw_log(GW_ERR, "%s: NUL byte in the line (is this a text file?)", where);
            rc = -1;
            break; /* a binary file: one line says it */
        } else {
            line[n] = '\0';
            if (config_line(o, &f, line, where) != 0)
                rc = -1;
        }
        line += n + 1;
    }
    free(text);
    return rc;
}

/* Is every address hostport resolves to a loopback one? */
static int loopback_only(const char *hostport)
{
    char host[256], port[8];

    if (mbsc_parse_hostport(hostport, host, sizeof host, port, sizeof port) != MBSC_OK)
        return 0;
    return strcmp(host, "localhost") == 0 || strncmp(host, "127.", 4) == 0 ||
           strcmp(host, "[::1]") == 0 || strcmp(host, "::1") == 0;
}

static int check_hostport(const char *name, const char *value)
{
    char host[256], port[8];
    unsigned long n;

    if (mbsc_parse_hostport(value, host, sizeof host, port, sizeof port) != MBSC_OK ||
        parse_number(port, 0, 65535, &n) != 0) {
        gw_log(GW_ERR, "%s '%s' is not HOST:PORT or [V6ADDR]:PORT", name, value);
        return -1;
    }
    return 0;
}

static int check_required(const struct gw_options *o)
{
    int server = o->mode == GW_MODE_SERVER;
    /* A server with a TLS listener alone needs no mbsc key: its masters bring certificates. */
    int mbsc_in = !server || o->listen != NULL || o->listen_tls == NULL;
    const char *missing = o->listen == NULL && mbsc_in                           ? "listen"
                          : o->upstream == NULL && (!server || o->routes.n == 0) ? "upstream"
                          : o->key == NULL && mbsc_in                            ? "key"
                          : server && mbsc_in && o->authorized == NULL           ? "authorized"
                          : !server && o->peer == NULL                           ? "peer"
                                                                                 : NULL;

    if (missing != NULL) {
        int no_route =
            server && (o->listen != NULL || o->listen_tls != NULL) && o->upstream == NULL;
        int no_listen = server && o->listen == NULL;

        gw_log(GW_ERR, "%s mode needs --%s%s (see mbsc-gateway --help)",
               server ? "server" : "client", missing,
               no_route ? " HOST:PORT (the default route) or at least one --route UNITS=HOST:PORT"
               : no_listen ? " HOST:PORT (mbsc masters), --listen-tls HOST:PORT (Modbus/TCP "
                             "Security masters), or both"
                           : "");
        return -1;
    }
    if (!server && gw_serial_target_is(o->upstream)) {
        gw_log(GW_ERR,
               "%s: a client gateway's upstream is a server gateway or an mbsc slave "
               "(HOST:PORT); a serial line goes behind a server gateway: mbsc-gateway server "
               "--upstream %s ...",
               gw_options_where(o, "upstream"), o->upstream);
        return -1;
    }
    if (!server && o->upstream != NULL && gw_route_is_tls(o->upstream)) {
        gw_log(GW_ERR,
               "%s: a client gateway carries its clients over an mbsc session; mbaps:// "
               "devices are reached through a server gateway's routes",
               gw_options_where(o, "upstream"));
        return -1;
    }
    /* A serial line (rtu:...) is checked with the routes, where its place is known. */
    if ((o->listen != NULL && check_hostport("listen", o->listen) != 0) ||
        (o->listen_tls != NULL && check_hostport("listen-tls", o->listen_tls) != 0) ||
        (o->upstream != NULL && !(server && gw_serial_target_is(o->upstream)) &&
         check_hostport("upstream", server ? gw_route_hostport(o->upstream) : o->upstream) != 0))
        return -1;
    if (server && gw_tls_check_options(o) != 0)
        return -1;
    if (!server && o->routes.n > 0) {
        gw_log(GW_ERR,
               "%s: routes by unit id are a setting of server mode; a client gateway "
               "sends everything to its --upstream",
               o->routes.routes[0].where);
        return -1;
    }

    if (!server && !o->allow_remote_plaintext && !loopback_only(o->listen)) {
        gw_log(GW_ERR,
               "client mode would accept plaintext Modbus on %s, which is not a "
               "loopback address: listen on 127.0.0.1 or [::1], or give "
               "--allow-remote-plaintext if the network to the clients is trusted",
               o->listen);
        return -1;
    }
    return 0;
}

/* Settings given for the other mode, each reported where it was given; 0 if none. */
static int other_mode_settings(const struct gw_options *o)
{
    unsigned mode_bit = o->mode == GW_MODE_SERVER ? M_SERVER : M_CLIENT;
    int bad = 0;
    size_t i;

    for (i = 0; i < N_DEFS; i++) {
        if (o->where[i][0] == '\0' || (defs[i].modes & mode_bit))
            continue;
        gw_log(GW_ERR,
               "%s: %s is a setting of %s mode, and this gateway runs in %s mode (as %s says); %s",
               o->where[i], defs[i].name,
               mode_name(o->mode == GW_MODE_SERVER ? GW_MODE_CLIENT : GW_MODE_SERVER),
               mode_name(o->mode), o->mode_where,
               o->where_file[i] != 0 ? "remove the line" : "leave the option out");
        bad = 1;
    }
    return bad ? -1 : 0;
}

int gw_options_parse(struct gw_options *o, int argc, char **argv)
{
    char where[GW_WHERE_SIZE];
    int i, first = 1;

    if (argc > 1 && argv[1][0] != '-') {
        if (strcmp(argv[1], "server") != 0 && strcmp(argv[1], "client") != 0) {
            gw_log(GW_ERR,
                   "unknown mode '%s': the first word is server, client or status "
                   "(see mbsc-gateway --help)",
                   argv[1]);
            return GW_EX_USAGE;
        }
        if (set_mode(o, argv[1], "the command line") != 0)
            return GW_EX_USAGE;
        first = 2;
    }
    /* The file first, wherever --config stands, so that the command line wins. */
    for (i = first; i < argc; i++) {
        const char *v = NULL;

        if (strncmp(argv[i], "--config=", 9) == 0)
            v = argv[i] + 9;
        else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            v = argv[i + 1];
        if (v != NULL) {
            free(o->config);
            o->config = strdup(v);
            if (o->config == NULL)
                return GW_EX_USAGE;
            if (read_config(o, v) != 0) {
                /* The rest of the file's mistakes, in the same run. */
                if (o->mode != GW_MODE_NONE)
                    (void)other_mode_settings(o);
                return GW_EX_USAGE;
            }
        }
    }
    for (i = first; i < argc; i++) {
        const char *arg = argv[i], *eq, *value = NULL;
        const struct option_def *d;
        size_t len;

        if (strncmp(arg, "--", 2) != 0) {
            gw_log(GW_ERR, "unexpected argument '%s' (see mbsc-gateway --help)", arg);
            return GW_EX_USAGE;
        }
        arg += 2;
        eq = strchr(arg, '=');
        len = eq != NULL ? (size_t)(eq - arg) : strlen(arg);
        if (len == 6 && memcmp(arg, "config", 6) == 0) {
            if (eq == NULL && i + 1 >= argc) {
                gw_log(GW_ERR, "--config needs a file");
                return GW_EX_USAGE;
            }
            if (eq == NULL)
                i++;
            continue;
        }
        if (len == 7 && memcmp(arg, "verbose", 7) == 0) {
            o->log_level = GW_DEBUG; /* as log-level = debug, and after it on the line */
            snprintf(o->where[find_def("log-level", 9) - defs], sizeof o->where[0], "--verbose");
            continue;
        }
        if (len == 5 && memcmp(arg, "check", 5) == 0) {
            o->check = 1;
            continue;
        }
        if (len == 5 && memcmp(arg, "route", 5) == 0) {
            if (eq == NULL && i + 1 >= argc) {
                gw_log(GW_ERR, "--route needs UNITS=HOST:PORT, e.g. --route 1-10=192.168.1.10:502");
                return GW_EX_USAGE;
            }
            /* The command line's routes replace the file's, as any option does. */
            if (!o->routes_from_command_line) {
                gw_route_table_init(&o->routes);
                o->routes_from_command_line = 1;
            }
            if (add_route(o, eq != NULL ? eq + 1 : argv[++i], '=', "--route") != 0)
                return GW_EX_USAGE;
            continue;
        }
        d = find_def(arg, len);
        if (d == NULL) {
            gw_log(GW_ERR, "unknown option '%s' (see mbsc-gateway --help)", argv[i]);
            return GW_EX_USAGE;
        }
        if (eq != NULL)
            value = eq + 1;
        else if (d->kind != FLAG) {
            if (i + 1 >= argc) {
                gw_log(GW_ERR, "--%s needs a value", d->name);
                return GW_EX_USAGE;
            }
            value = argv[++i];
        }
        snprintf(where, sizeof where, "--%s", d->name);
        if (set_option(o, d, value, where) != 0)
            return GW_EX_USAGE;
        o->where_file[d - defs] = 0;
    }
    if (o->mode == GW_MODE_NONE) {
        gw_log(GW_ERR, "say which mode: mbsc-gateway server ... or mbsc-gateway client ... "
                       "(or mode = ... in the --config file)");
        return GW_EX_USAGE;
    }
    if (other_mode_settings(o) != 0)
        return GW_EX_USAGE;
    if (check_required(o) != 0)
        return GW_EX_USAGE;
    if (o->upstream != NULL) {
        char why[GW_WHY_SIZE];

        if (gw_route_set_default(&o->routes, o->upstream, gw_options_where(o, "upstream"), why,
                                 sizeof why) != 0) {
            gw_log(GW_ERR, "%s", why);
            return GW_EX_USAGE;
        }
    }
    return -1;
}

void gw_usage(FILE *out)
{
    fputs("usage: mbsc-gateway server --listen HOST:PORT --upstream TARGET --key FILE\n"
          "                           --authorized FILE [--psk FILE] [--ciphers LIST]\n"
          "                           [--policy FILE] [--route UNITS=TARGET ...] [options]\n"
          "       mbsc-gateway server --listen-tls HOST:PORT --tls-cert FILE --tls-key FILE\n"
          "                           --tls-ca FILE --upstream TARGET [--policy FILE]\n"
          "                           [--listen HOST:PORT --key FILE --authorized FILE] [options]\n"
          "       mbsc-gateway client --listen HOST:PORT --upstream HOST:PORT --key FILE\n"
          "                           --peer FILE [--psk FILE] [--cipher NAME | --ciphers LIST]\n"
          "                           [--allow-remote-plaintext] [options]\n"
          "       mbsc-gateway [server|client] --config FILE [options]\n"
          "       mbsc-gateway [server|client] --check [--config FILE] [options]\n"
          "       mbsc-gateway status --control PATH [--json | --prometheus]\n"
          "       mbsc-gateway --help | --version\n"
          "\n"
          "server: accepts mbsc masters on --listen and forwards each authorised request\n"
          "        as plain Modbus/TCP to the PLC its unit id is routed to (--route), or\n"
          "        to --upstream, over one connection per PLC, or as Modbus RTU to the\n"
          "        devices on a serial line, one request at a time.\n"
          "client: accepts plain Modbus/TCP clients on --listen (loopback only, unless\n"
          "        --allow-remote-plaintext) and carries their requests over one mbsc\n"
          "        session to a server gateway or any mbsc slave at --upstream.\n"
          "\n"
          "  --listen HOST:PORT      where to listen; port 0 picks a free port\n"
          "  --upstream TARGET       the PLC (server: the default route, for unit 0 and\n"
          "                          every unit no --route names) or the server gateway\n"
          "  --route UNITS=TARGET    server: the PLC for these unit ids (N, N-M or a list,\n"
          "                          1-255, e.g. 1-10,20=192.168.1.10:502); repeatable;\n"
          "                          a unit with no route and no --upstream gets 0A\n"
          "                          TARGET: HOST:PORT; in server mode also a Modbus/TCP\n"
          "                          Security device, mbaps://HOST:PORT (TLS; --upstream-tls-*\n"
          "                          below), or a serial line\n"
          "                          rtu:DEVICE[,BAUD[,FORMAT]][,rs485=yes|required]\n"
          "                          [,timeout=MS][,turnaround=MS], e.g.\n"
          "                          rtu:/dev/ttyUSB0,19200,8E1 (the defaults)\n"
          "  --listen-tls HOST:PORT  server: accept Modbus/TCP Security masters (TLS, port\n"
          "                          802; docs/tls.md), beside --listen or alone\n"
          "  --tls-cert FILE         server: the TLS listener's certificate, PEM (chain after)\n"
          "  --tls-key FILE          server: its private key, PEM, mode 0600\n"
          "  --tls-ca FILE           server: the CA of the masters' certificates, PEM; a\n"
          "                          master's role is its certificate's extension\n"
          "                          1.3.6.1.4.1.50316.802.1\n"
          "  --tls-legacy-ciphers    also TLS 1.2 with RSA key exchange, for old devices\n"
          "  --upstream-tls-cert FILE  server: the certificate shown to mbaps:// devices\n"
          "  --upstream-tls-key FILE   its private key, PEM, mode 0600\n"
          "  --upstream-tls-ca FILE    the CA of the devices' certificates, PEM\n"
          "  --upstream-tls-name NAME  the name each device's certificate must carry\n"
          "                          (default: the HOST of its target)\n"
          "  --key FILE              our private key (mbsc-keygen), mode 0600\n"
          "  --authorized FILE       server: allow-list of masters, '<key> <name> [role]'\n"
          "  --policy FILE           server: roles to rights (docs/policy.md); without it\n"
          "                          every authorised master may do everything\n"
          "  --peer FILE             client: the public key of the server gateway\n"
          "  --psk FILE              optional pre-shared key, mode 0600\n"
          "  --ciphers LIST          comma-separated ciphers (server: allowed; client: offer,\n"
          "                          in order); default chacha20,trivium,rabbit,enocoro128v2\n"
          "  --cipher NAME           client: offer this one cipher only\n"
          "  --allow-remote-plaintext  client: accept plaintext clients on any address\n"
          "  --max-in-flight N       requests upstream at once, 1-64 (default 1)\n"
          "  --max-queue N           requests queued per master, 1-1024 (default 16);\n"
          "                          beyond it the master gets exception 06 (busy)\n"
          "  --request-timeout MS    answer exception 0B when upstream has not answered\n"
          "                          within MS of the request's arrival (default 1000)\n"
          "  --connect-timeout MS    TCP connect (and handshake) upstream, and the longest\n"
          "                          time sent data may stay unacknowledged (default 3000)\n"
          "  --reconnect-max MS      longest wait between reconnection attempts; they\n"
          "                          start at 100 ms and double (default 5000)\n"
          "  --handshake-timeout MS  server: masters' handshake deadline (default 2000)\n"
          "  --max-connections N     masters (server) or local clients (client) at once\n"
          "  --max-sessions-per-master N  server: sessions one master key may hold at\n"
          "                          once (default 4); more are refused, and logged\n"
          "  --idle-timeout MS       server: close a master's session after MS without\n"
          "                          a request (default 300000, five minutes; 0: never)\n"
          "  --drain-timeout MS      on SIGTERM/SIGINT, longest wait for the requests in\n"
          "                          flight before exiting (default 2000)\n"
          "  --config FILE           settings as 'name = value' lines, names as the options\n"
          "                          without '--', plus 'mode = server|client'; '#' comments;\n"
          "                          options on the command line override the file;\n"
          "                          relative paths in it are from the file's directory\n"
          "  --check                 load and check everything the gateway would (files,\n"
          "                          keys, allow-list, policy, routes), listen on nothing,\n"
          "                          and exit 0 (it would start) or 2, with every problem\n"
          "  --control PATH          a UNIX socket (mode 0600) where 'mbsc-gateway status'\n"
          "                          reads the status; its directory must be writable;\n"
          "                          a socket another gateway runs with is not taken\n"
          "  --log-level LEVEL       debug, info (default) or warning\n"
          "  --verbose               --log-level debug: also every forwarded request\n"
          "\n"
          "Output: the first line on stdout is 'listening on HOST:PORT' with the real port.\n"
          "Logs go to journald with fields (MBSC_MASTER=, MBSC_REASON=, ...) when run by\n"
          "systemd, else to stderr, each line after its local time.  Answers\n"
          "made by the gateway: 01 refused by the policy, 06 the master's queue is full,\n"
          "0A upstream unreachable (client mode: 0B), 0B upstream did not answer in time.\n"
          "\n"
          "Signals: SIGHUP re-reads the configuration file, the key, PSK, allow-list,\n"
          "policy, routes and TLS certificates, keys and CAs (all or nothing: a bad file\n"
          "keeps the old ones); SIGUSR1\n"
          "logs the status (masters, routes, counters), as\n"
          "'mbsc-gateway status --control PATH' prints it (--json: one JSON object,\n"
          "--prometheus: the Prometheus text format);\n"
          "SIGTERM/SIGINT stop after the requests in flight (exit status 0).\n"
          "Exit status: 0 after SIGTERM/SIGINT (--check: it would start), 1 on a runtime\n"
          "failure, 2 on bad usage or configuration.\n"
          "Documentation: mbsc-gateway(1), mbsc-gateway.conf(5), mbsc-policy(5),\n"
          "mbsc-allowlist(5), and /usr/share/doc/mbsc-tools/ (gateway.md, policy.md, tls.md).\n",
          out);
}
