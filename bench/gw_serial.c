/* SPDX-License-Identifier: ISC */
/*
 * gw_serial.c - a serial line (gw_bench.h): a pty pair made by socat,
 * libmodbus's RTU server in a thread on one end, one request at a time at
 * 19200 and 115200 baud 8N1, straight and through a server gateway, beside
 * the time the frames would take on a real wire.  A pty moves bytes at once
 * whatever its rate, so the rows show what the gateway adds, not the wire.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gw_bench.h"
#include "mbsc/modbus.h"

struct rtu_line {
    pid_t socat;
    char ends[2][128]; /* the gateway's or master's end, the device's end */
    modbus_t *dev;
    modbus_mapping_t *map;
    pthread_t th;
    int stop[2];
};

static void *rtu_dev_main(void *arg)
{
    struct rtu_line *l = arg;
    uint8_t q[MODBUS_RTU_MAX_ADU_LENGTH];
    int rc;

    for (;;) {
        struct pollfd pfd[2] = {{modbus_get_socket(l->dev), POLLIN, 0}, {l->stop[0], POLLIN, 0}};

        if ((poll(pfd, 2, -1) < 0 && errno != EINTR) || pfd[1].revents != 0 ||
            (pfd[0].revents & (POLLHUP | POLLERR | POLLNVAL)))
            return NULL;
        if ((pfd[0].revents & POLLIN) && (rc = modbus_receive(l->dev, q)) > 0)
            modbus_reply(l->dev, q, rc, l->map);
    }
}

static int both_ends(const void *arg)
{
    const struct rtu_line *l = arg;
    struct stat st;

    return stat(l->ends[0], &st) == 0 && stat(l->ends[1], &st) == 0;
}

/* A pty pair named NAME-gw and NAME-dev, the device (unit 1, 8N1) on NAME-dev. */
static void line_up(struct rtu_line *l, const char *name, int baud)
{
    char a[200], b[200];
    const char *argv[] = {"socat", a, b, NULL};

    snprintf(l->ends[0], sizeof l->ends[0], "%s-gw", gw_file(name));
    snprintf(l->ends[1], sizeof l->ends[1], "%s-dev", gw_file(name));
    snprintf(a, sizeof a, "pty,raw,echo=0,link=%s", l->ends[0]);
    snprintf(b, sizeof b, "pty,raw,echo=0,link=%s", l->ends[1]);
    if ((l->socat = gw_exec(argv, NULL)) < 0 || !gw_wait_for(both_ends, l, l->socat))
        bench_fail("socat made no pty pair");
    l->map = modbus_mapping_new(0, 0, 100, 0);
    /* A pty has no parity: 8N1 on both ends. */
    l->dev = modbus_new_rtu(l->ends[1], baud, 'N', 8, 1);
    if (l->map == NULL || l->dev == NULL || modbus_set_slave(l->dev, 1) != 0 ||
        modbus_connect(l->dev) != 0 || pipe(l->stop) != 0 ||
        pthread_create(&l->th, NULL, rtu_dev_main, l) != 0)
        bench_fail("the RTU device did not start");
}

static void line_down(struct rtu_line *l)
{
    int st;

    (void)!write(l->stop[1], "s", 1);
    pthread_join(l->th, NULL);
    close(l->stop[0]);
    close(l->stop[1]);
    modbus_close(l->dev);
    modbus_free(l->dev);
    modbus_mapping_free(l->map);
    kill(l->socat, SIGTERM);
    waitpid(l->socat, &st, 0);
}

/* The rows of one rate: straight to the device, and through a server gateway. */
static void rate_rows(int baud, int count, FILE *csv)
{
    struct rtu_line direct, behind;
    struct gw_path p[2];
    struct gwp srv;
    char route[200], name[48];
    const char *args[] = {
        "server",          "--listen",     "127.0.0.1:0",        "--route", route, "--key",
        gw_file("gw.key"), "--authorized", gw_file("allow.txt"), NULL};
    /* Read 10 registers: a request of 8 bytes and an answer of 25; 10 bits a character in 8N1. */
    double char_us = 10e6 / baud, t35_us = baud > 19200 ? 1750 : 3.5 * char_us;

    memset(p, 0, sizeof p);
    line_up(&direct, "direct", baud);
    line_up(&behind, "behind", baud);
    snprintf(route, sizeof route, "1=rtu:%s,%d,8N1", behind.ends[0], baud);
    gw_program = "tools/mbsc-gateway";
    if (!gw_spawn(&srv, args))
        bench_fail("the serial gateway did not start");
    p[0].ctx = modbus_new_rtu(direct.ends[0], baud, 'N', 8, 1);
    if (p[0].ctx == NULL || modbus_set_slave(p[0].ctx, 1) != 0 || modbus_connect(p[0].ctx) != 0)
        bench_fail("the RTU master did not start");
    modbus_set_response_timeout(p[0].ctx, 5, 0);
    p[1].ctx = gw_secure(srv.addr, &gw_masters_kp[0], NULL);
    if (modbus_set_slave(p[1].ctx, 1) != 0)
        bench_fail("unit 1");
    for (int i = 0; i < 2; i++)
        snprintf(p[i].name, sizeof p[i].name, "serial-%d-%s", baud, i == 0 ? "direct" : "gw1");
    gw_time(p, 2, count);
    (void)gw_finish(&srv, SIGTERM);
    modbus_close(p[0].ctx);
    modbus_free(p[0].ctx);
    mbsc_modbus_close(p[1].ctx);
    line_down(&direct);
    line_down(&behind);
    snprintf(name, sizeof name, "serial-%d-wire", baud);
    bench_csv_num(csv, name, "wire_us", 0, (8 + 25) * char_us + 2 * t35_us, "us");
    bench_csv_num(csv, name, "t35_us", 0, t35_us, "us");
    gw_rtt_csv(&p[0], csv);
    gw_rtt_csv(&p[1], csv);
}

void gw_serial_rows(int count, FILE *csv)
{
    if (system("socat -V >/dev/null 2>&1") != 0) {
        bench_csv_text(csv, "serial", "missing", "socat is not installed (apt-get install socat)");
        return;
    }
    fprintf(stderr, "%s: the serial line rows ...\n", bench_prog);
    bench_csv_num(csv, "serial", "requests_per_path", 0, count / GW_ROUNDS * GW_ROUNDS, "requests");
    rate_rows(19200, count, csv);
    rate_rows(115200, count, csv);
}
