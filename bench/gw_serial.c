/* SPDX-License-Identifier: ISC */
/*
 * gw_serial.c - a serial line (gw_bench.h): a pty pair made by socat,
 * libmodbus's RTU server in a thread on one end, and one request at a time
 * at 19200 and 115200 baud 8N1, straight from a libmodbus RTU master and
 * through a server gateway (mbsc master -> server gw -> rtu:...), beside
 * the time the two frames would take on a real wire (their bits at that
 * rate, plus t3.5 after each).  A pty moves bytes at once whatever its
 * rate, so the rows show what the gateway adds, not the wire.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "csv.h"
#include "gw_bench.h"
#include "mbsc/modbus.h"

#define ROUNDS 10

struct rtu_line {
    pid_t socat;
    char gw_end[128], dev_end[128];
    modbus_t *dev;
    modbus_mapping_t *map;
    pthread_t th;
    int stop[2];
};

static void *rtu_dev_main(void *arg)
{
    struct rtu_line *l = arg;

    for (;;) {
        uint8_t q[MODBUS_RTU_MAX_ADU_LENGTH];
        struct pollfd pfd[2] = {{modbus_get_socket(l->dev), POLLIN, 0}, {l->stop[0], POLLIN, 0}};
        int rc;

        if (poll(pfd, 2, -1) < 0 && errno != EINTR)
            break;
        if (pfd[1].revents != 0 || (pfd[0].revents & (POLLHUP | POLLERR | POLLNVAL)))
            break;
        if (!(pfd[0].revents & POLLIN))
            continue;
        rc = modbus_receive(l->dev, q);
        if (rc > 0)
            modbus_reply(l->dev, q, rc, l->map);
    }
    return NULL;
}

/* A pty pair named NAME-gw and NAME-dev, the device (unit 1, 8N1) on NAME-dev. */
static void line_up(struct rtu_line *l, const char *name, int baud)
{
    char a[200], b[200];
    struct stat st;
    double end = gw_now_us() + 10e6;

    snprintf(l->gw_end, sizeof l->gw_end, "%s-gw", gw_file(name));
    snprintf(l->dev_end, sizeof l->dev_end, "%s-dev", gw_file(name));
    snprintf(a, sizeof a, "pty,raw,echo=0,link=%s", l->gw_end);
    snprintf(b, sizeof b, "pty,raw,echo=0,link=%s", l->dev_end);
    if ((l->socat = fork()) < 0)
        gw_die("fork");
    if (l->socat == 0) {
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL); /* gone with the bench */
        execlp("socat", "socat", a, b, (char *)NULL);
        _exit(127);
    }
    while (stat(l->gw_end, &st) != 0 || stat(l->dev_end, &st) != 0) {
        if (gw_now_us() > end)
            gw_die("socat made no pty pair");
        poll(NULL, 0, 10);
    }
    l->map = modbus_mapping_new(0, 0, 100, 0);
    /* A pty has no parity: 8N1 on both ends. */
    l->dev = modbus_new_rtu(l->dev_end, baud, 'N', 8, 1);
    if (l->map == NULL || l->dev == NULL || modbus_set_slave(l->dev, 1) != 0 ||
        modbus_connect(l->dev) != 0 || pipe(l->stop) != 0 ||
        pthread_create(&l->th, NULL, rtu_dev_main, l) != 0)
        gw_die("the RTU device did not start");
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
    snprintf(route, sizeof route, "1=rtu:%s,%d,8N1", behind.gw_end, baud);
    gw_program = "tools/mbsc-gateway";
    if (!gw_spawn(&srv, args))
        gw_die("the serial gateway did not start");
    p[0].ctx = modbus_new_rtu(direct.gw_end, baud, 'N', 8, 1);
    if (p[0].ctx == NULL || modbus_set_slave(p[0].ctx, 1) != 0 || modbus_connect(p[0].ctx) != 0)
        gw_die("the RTU master did not start");
    modbus_set_response_timeout(p[0].ctx, 5, 0);
    p[1].ctx = gw_secure(srv.addr, &gw_masters_kp[0], NULL);
    if (modbus_set_slave(p[1].ctx, 1) != 0)
        gw_die("unit 1");
    for (int i = 0; i < 2; i++) {
        snprintf(p[i].name, sizeof p[i].name, "serial-%d-%s", baud, i == 0 ? "direct" : "gw1");
        if ((p[i].t = calloc((size_t)count, sizeof *p[i].t)) == NULL)
            gw_die("out of memory");
        for (int w = 0; w < 100; w++)
            gw_read10(&p[i]);
    }
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < count / ROUNDS; j++) {
                double t0 = gw_now_us();

                gw_read10(&p[i]);
                p[i].t[p[i].n++] = gw_now_us() - t0;
            }
    (void)gw_finish(&srv, SIGTERM);
    modbus_close(p[0].ctx);
    modbus_free(p[0].ctx);
    mbsc_modbus_close(p[1].ctx);
    line_down(&direct);
    line_down(&behind);
    snprintf(name, sizeof name, "serial-%d-wire", baud);
    bench_csv_num(csv, name, "wire_us", 0, (8 + 25) * char_us + 2 * t35_us, "us");
    bench_csv_num(csv, name, "t35_us", 0, t35_us, "us");
    for (int i = 0; i < 2; i++) {
        gw_sort(p[i].t, (size_t)p[i].n);
        bench_csv_num(csv, p[i].name, "rtt_us_p50", 0, gw_quantile(p[i].t, (size_t)p[i].n, 0.5),
                      "us");
        bench_csv_num(csv, p[i].name, "rtt_us_p99", 0, gw_quantile(p[i].t, (size_t)p[i].n, 0.99),
                      "us");
        free(p[i].t);
    }
}

void gw_serial_rows(int count, FILE *csv)
{
    if (system("socat -V >/dev/null 2>&1") != 0) {
        bench_csv_text(csv, "serial", "missing", "socat is not installed (apt-get install socat)");
        return;
    }
    fprintf(stderr, GW_PROG ": the serial line rows ...\n");
    bench_csv_num(csv, "serial", "requests_per_path", 0, count / ROUNDS * ROUNDS, "requests");
    rate_rows(19200, count, csv);
    rate_rows(115200, count, csv);
}
