/* SPDX-License-Identifier: ISC */
/*
 * options.h - the gateway's settings, from the command line and from a
 * configuration file (options.c).
 */
#ifndef MBSC_GATEWAY_OPTIONS_H
#define MBSC_GATEWAY_OPTIONS_H

#include <stdio.h>

#include "route.h"

/* Room for the settings of options.c's table, for where each was given. */
#define GW_OPTIONS_MAX 64u
/* "FILE:LINE" or "--name" (a longer path is cut in messages only). */
#define GW_WHERE_SIZE 256u

enum gw_mode { GW_MODE_NONE = 0, GW_MODE_SERVER, GW_MODE_CLIENT };

struct gw_options {
    enum gw_mode mode;
    char *config;     /* --config FILE, or NULL */
    char *listen;     /* HOST:PORT */
    char *upstream;   /* HOST:PORT: client, the server gateway; server, the default route */
    char *key;        /* our private key */
    char *authorized; /* server: the allow-list */
    char *peer;       /* client: the server gateway's public key */
    char *psk;        /* optional */
    char *ciphers;    /* optional cipher list (client: --cipher NAME is a list of one) */
    char *policy;     /* server: optional roles policy */
    int allow_remote_plaintext;         /* client: listen on a non-loopback address */
    unsigned long max_in_flight;        /* requests upstream at once (default 1) */
    unsigned long max_queue;            /* queued requests per master (default 16) */
    unsigned long request_timeout_ms;   /* answer 0x0B after this (default 1000) */
    unsigned long connect_timeout_ms;   /* TCP connect + handshake upstream (default 3000) */
    unsigned long reconnect_max_ms;     /* backoff ceiling (default 5000) */
    unsigned long handshake_timeout_ms; /* server: masters' handshake (0: default) */
    unsigned long max_connections;      /* masters / local clients at once (0: default) */
    unsigned long drain_ms;             /* SIGTERM: longest wait for requests in flight */
    char *control;                      /* optional UNIX socket for "mbsc-gateway status" */

    /* Server: how much one master may hold. */
    unsigned long max_sessions_per_master; /* sessions per master key (0: the library's, 4) */
    unsigned long idle_timeout_ms;         /* close a master idle that long (0: never) */

    /* Server: Modbus/TCP Security (docs/tls.md): masters over TLS, devices over TLS. */
    char *listen_tls;         /* HOST:PORT of the TLS listener, or NULL */
    char *tls_cert, *tls_key; /* its certificate (and chain) and key, PEM */
    char *tls_ca;             /* the CA of the masters' certificates */
    char *upstream_tls_cert;  /* what the gateway shows mbaps:// devices */
    char *upstream_tls_key;   /*   and its key */
    char *upstream_tls_ca;    /* the CA of the devices' certificates */
    char *upstream_tls_name;  /* the name their certificates carry (default: HOST) */
    int tls_legacy_ciphers;   /* also RSA key exchange, for old devices */

    /* Server: unit ids to PLCs (--route, route = ...), and --upstream as the default. */
    struct gw_route_table routes;
    int routes_from_command_line; /* --route given: the file's route lines are replaced */

    int log_level; /* log-level (enum gw_level), --verbose: debug; 0: the default, info */
    int check;     /* --check: validate everything, start nothing */

    /*
     * Where each setting of the table was given, for messages: "FILE:LINE"
     * or "--name"; "" while not set; and which file (1 for the first
     * --config read, 0 for the command line).  Indexed as the table.
     */
    char where[GW_OPTIONS_MAX][GW_WHERE_SIZE];
    unsigned where_file[GW_OPTIONS_MAX];
    char mode_where[GW_WHERE_SIZE];
    unsigned mode_file;
    unsigned files_read;
};

/* Defaults, as documented in --help and docs/gateway.md. */
void gw_options_init(struct gw_options *o);
void gw_options_free(struct gw_options *o);

/*
 * Fill o (fresh from gw_options_init) from argv (argv[1] is the mode, or
 * --help/--version were handled by the caller): a --config file first,
 * then the other options, which override it.  Relative paths in the file
 * are taken from the file's directory; on the command line, from the
 * working directory.  Every bad line of the file is reported, each with
 * its file and line.  Returns -1 to go on, or an exit status after a
 * message.  A reload (SIGHUP) calls it again with the same argv, so that
 * an edited configuration file is read anew.
 */
int gw_options_parse(struct gw_options *o, int argc, char **argv);

/* Where setting name was given ("gw.conf:4", "--upstream"), or "" when it was not. */
const char *gw_options_where(const struct gw_options *o, const char *name);

/* The whole --help text. */
void gw_usage(FILE *out);

#endif /* MBSC_GATEWAY_OPTIONS_H */
