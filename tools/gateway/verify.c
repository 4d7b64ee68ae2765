/* SPDX-License-Identifier: ISC */
/*
 * verify.c - "mbsc-gateway --check": what a start would load, loaded and
 * thrown away.
 *
 * The command line and the file have been parsed already (options.c
 * reports every bad line of the file and exits before this), so what is
 * left is what a start reads from elsewhere: the key files, the allow-list
 * and the policy (with their permissions and owners), the kind of upstream
 * each route's target takes, and the control socket's path and
 * directory.  The same functions as a start do it, so the check cannot
 * pass what a start refuses.  Files are checked as the user who runs --check: run it as the
 * gateway's user (sudo -u mbsc ...), whose rights decide at start.
 */
#include <stdio.h>

#include "verify.h"
#include "control.h"
#include "log.h"
#include "secrets.h"
#include "up_kinds.h"

/* Every target takes a kind; the number that do not. */
static unsigned check_targets(const struct gw_options *o)
{
    mbsc_config *cfg = NULL;
    char why[GW_WHY_SIZE];
    unsigned bad = 0;
    size_t i;

    /* Client mode's upstream is an mbsc session: its kind is chosen with a config. */
    if (o->mode == GW_MODE_CLIENT && (cfg = mbsc_config_new(MBSC_ROLE_MASTER)) == NULL) {
        gw_log(GW_ERR, "out of memory");
        return 1;
    }
    for (i = 0; i < o->routes.n; i++)
        if (gw_up_kind_for(o->routes.routes[i].target, cfg, why, sizeof why) == NULL) {
            gw_log(GW_ERR, "%s: %s", o->routes.routes[i].where, why);
            bad++;
        }
    if (o->upstream != NULL && gw_up_kind_for(o->upstream, cfg, why, sizeof why) == NULL) {
        gw_log(GW_ERR, "%s: %s", gw_options_where(o, "upstream"), why);
        bad++;
    }
    mbsc_config_free(cfg);
    return bad;
}

int gw_check(const struct gw_options *o)
{
    const char *source = o->config != NULL ? o->config : "the command line";
    size_t masters = 0;
    unsigned bad = gw_secrets_check(o, &masters);
    char why[GW_WHY_SIZE], warned[64] = "";

    bad += check_targets(o);
    if (o->control != NULL) {
        int r = gw_control_path_check(o->control, why, sizeof why);

        if (r != 0)
            gw_log(r > 0 ? GW_WARN : GW_ERR, "%s", why);
        bad += r < 0;
    }
    if (bad > 0) {
        gw_log(GW_ERR, "%s: %u problem%s; a gateway would not start with it", source, bad,
               bad == 1 ? "" : "s");
        return GW_EX_USAGE;
    }
    if (gw_log_warnings() > 0)
        snprintf(warned, sizeof warned, " (with %u warning%s above)", gw_log_warnings(),
                 gw_log_warnings() == 1 ? "" : "s");
    if (o->mode == GW_MODE_SERVER) {
        printf("%s: configuration OK%s: server mode on %s", source, warned, o->listen);
        if (o->upstream != NULL)
            printf(", default route %s", o->upstream);
        if (o->routes.n > 0)
            printf(", %zu route%s by unit id", o->routes.n, o->routes.n == 1 ? "" : "s");
        printf(", %zu master%s allowed, %s%s\n", masters, masters == 1 ? "" : "s",
               o->policy != NULL ? "policy " : "no policy", o->policy != NULL ? o->policy : "");
    } else {
        printf("%s: configuration OK%s: client mode on %s, mbsc upstream %s\n", source, warned,
               o->listen, o->upstream);
    }
    return fflush(stdout) == 0 ? GW_EX_OK : GW_EX_FAILURE;
}
