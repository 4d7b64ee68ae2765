/* SPDX-License-Identifier: ISC */
/*
 * events.c - events to the application (mbsc_server_set_event_fn).
 *
 * The connections (peer.c) and the refusal counts (refusals.c) report
 * through it, and server.c calls both of them: in server.c it closed a
 * ring between those files.
 */
#include <string.h>

#include "server/server_internal.h"

void srv_emit(mbsc_server *srv, enum mbsc_server_event_type type,
              const struct mbsc_server_conn_info *conn, int error, const char *detail)
{
    struct mbsc_server_event ev;

    if (srv->event_fn == NULL)
        return;
    memset(&ev, 0, sizeof ev);
    ev.type = type;
    ev.conn = conn;
    ev.error = error;
    ev.detail = detail;
    srv->event_fn(srv->event_user, &ev);
}
