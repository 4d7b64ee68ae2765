/* SPDX-License-Identifier: ISC */
/*
 * plain_plc.c - a plain Modbus/TCP server (libmodbus, no mbsc) standing in
 * for a PLC behind mbsc-gateway in tests/two_hosts.sh: the tests' PLC
 * thread (gw_harness.c) as a program.
 *
 *   tests/plain-plc --port N     listens on 0.0.0.0:N (0: any free port)
 *
 * Prints "listening on PORT" once it listens, serves until SIGTERM or
 * SIGINT, then exits 0.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_harness.h"

int main(int argc, char **argv)
{
    struct plc plc;
    sigset_t set;
    int sig = 0;

    if (argc != 3 || strcmp(argv[1], "--port") != 0) {
        fprintf(stderr, "usage: plain-plc --port N\n");
        return 2;
    }
    /* Wait for the stop signals with sigwait, in this thread only. */
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    memset(&plc, 0, sizeof plc);
    plc.any_address = 1;
    if (plc_start(&plc, atoi(argv[2])) != 0)
        return 1;
    printf("listening on %d\n", plc.port);
    fflush(stdout);
    sigwait(&set, &sig);
    plc_free(&plc);
    return 0;
}
