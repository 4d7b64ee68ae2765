/* SPDX-License-Identifier: ISC */
/*
 * mbsc-gateway - secure Modbus in front of unmodified PLCs and SCADA hosts.
 *
 *   mbsc-gateway server ...   mbsc masters in, plain Modbus/TCP to a PLC out
 *   mbsc-gateway client ...   plain Modbus/TCP clients in, one mbsc session out
 *   mbsc-gateway status ...   print a running gateway's status (control.c)
 *   mbsc-gateway --check ...  validate a configuration, start nothing (verify.c)
 *
 * Every option is described by --help (options.c) and in docs/gateway.md;
 * gw.h lists the files and what each does.
 */
#include <stdio.h>
#include <string.h>

#include <mbsc.h>

#include "verify.h"
#include "control.h"
#include "gw.h"
#include "log.h"
#include "modes.h"
#include "options.h"
#include "signals.h"

int main(int argc, char **argv)
{
    struct gw_options o;
    int rc;

    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        gw_usage(stdout);
        return fflush(stdout) == 0 ? GW_EX_OK : GW_EX_FAILURE;
    }
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        /* As the other programs: "NAME (mbsc) VERSION", the library's version. */
        printf("%s (mbsc) %s\n", GW_PROG, mbsc_version());
        return fflush(stdout) == 0 ? GW_EX_OK : GW_EX_FAILURE;
    }
    if (argc < 2) {
        gw_usage(stderr);
        return GW_EX_USAGE;
    }
    if (strcmp(argv[1], "status") == 0)
        return gw_status_command(argc, argv);
    if (mbsc_init() != MBSC_OK) {
        gw_log(GW_ERR, "mbsc_init failed: libsodium cannot be initialised (is /dev/urandom or "
                       "getrandom() available?)");
        return GW_EX_FAILURE;
    }
    gw_options_init(&o);
    rc = gw_options_parse(&o, argc, argv);
    if (rc < 0 && o.check) {
        rc = gw_check(&o);
    } else if (rc < 0) {
        /*
         * A gateway that runs gets its time on each line, from here on; a
         * usage error and --check are a command's answer, read at once.
         */
        gw_log_set_timestamps(1);
        gw_log_set_level(o.log_level != 0 ? (enum gw_level)o.log_level : GW_INFO);
        if (gw_signals_init() != 0)
            rc = GW_EX_FAILURE;
        else
            rc = o.mode == GW_MODE_SERVER ? gw_server_mode(&o, argc, argv)
                                          : gw_client_mode(&o, argc, argv);
    }
    gw_options_free(&o);
    return rc;
}
