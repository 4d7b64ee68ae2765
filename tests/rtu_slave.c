/* SPDX-License-Identifier: ISC */
/*
 * rtu_slave.c - a Modbus RTU device (libmodbus's RTU server, no mbsc) on a
 * serial port, standing in for the devices on a serial line behind
 * mbsc-gateway in tests/two_hosts.sh.
 *
 *   tests/rtu-slave DEVICE BAUD FORMAT UNIT     e.g. /dev/pts/3 19200 8N1 1
 *
 * 100 items of each table.  Prints "serving DEVICE" once the port is set
 * up, serves until SIGTERM or SIGINT, then exits 0.
 */
#include <errno.h>
#include <modbus.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

int main(int argc, char **argv)
{
    struct sigaction sa;
    modbus_mapping_t *map;
    modbus_t *ctx;
    int unit;

    if (argc != 5 || strlen(argv[3]) != 3 || argv[3][0] != '8') {
        fprintf(stderr, "usage: rtu-slave DEVICE BAUD FORMAT UNIT (FORMAT: 8N1, 8E1...)\n");
        return 2;
    }
    unit = atoi(argv[4]);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: poll returns */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    ctx = modbus_new_rtu(argv[1], atoi(argv[2]), argv[3][1], 8, argv[3][2] - '0');
    map = modbus_mapping_new(100, 100, 100, 100);
    if (ctx == NULL || map == NULL || modbus_set_slave(ctx, unit) != 0 ||
        modbus_connect(ctx) != 0) {
        fprintf(stderr, "rtu-slave: %s: %s\n", argv[1], modbus_strerror(errno));
        return 1;
    }
    printf("serving %s\n", argv[1]);
    fflush(stdout);
    while (!stop) {
        uint8_t q[MODBUS_RTU_MAX_ADU_LENGTH];
        struct pollfd pfd = {modbus_get_socket(ctx), POLLIN, 0};
        int rc;

        if (poll(&pfd, 1, -1) <= 0)
            continue;
        if (pfd.revents & (POLLHUP | POLLERR | POLLNVAL)) {
            fprintf(stderr, "rtu-slave: %s hung up\n", argv[1]);
            break;
        }
        rc = modbus_receive(ctx, q);
        if (rc > 0)
            modbus_reply(ctx, q, rc, map);
    }
    modbus_close(ctx);
    modbus_free(ctx);
    modbus_mapping_free(map);
    return 0;
}
