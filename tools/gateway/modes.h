/* SPDX-License-Identifier: ISC */
/*
 * modes.h - the gateway's two front ends: server mode (server_mode.c) and
 * client mode (client_mode.c).  Each runs until SIGTERM or SIGINT and
 * returns an exit status (gw.h).  argc and argv are main()'s: a reload
 * (SIGHUP) parses them again, so that an edited configuration file is read,
 * and replaces the contents of o when it succeeds.
 */
#ifndef MBSC_GATEWAY_MODES_H
#define MBSC_GATEWAY_MODES_H

#include "options.h"

int gw_server_mode(struct gw_options *o, int argc, char **argv);
int gw_client_mode(struct gw_options *o, int argc, char **argv);

#endif /* MBSC_GATEWAY_MODES_H */
