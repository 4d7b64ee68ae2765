/* SPDX-License-Identifier: ISC */
/*
 * fault_plc.c - the PLC of the fault suite (tests/faults.sh): a plain
 * Modbus/TCP server on libmodbus that records every write it executes.
 *
 *   tests/fault-plc --port N --record FILE [--late-ms MS]
 *
 * Listens on 127.0.0.1:N (0: any free port), prints "listening on PORT"
 * once it does, serves up to MAX_CONNS connections at once (a server
 * gateway killed and restarted leaves its old connection behind for a
 * moment), and exits 0 on SIGTERM or SIGINT.
 *
 *  - A write of the counter (fault_common.h: function 16, registers 0-1)
 *    is appended to FILE as "VALUE TIME_MS" before it is executed and
 *    answered: an acknowledged write is always on record; a PLC killed
 *    between the two leaves a write recorded and unanswered, which the
 *    master never saw acknowledged (allowed).
 *  - At start the counter is restored from the last line of FILE, as a real
 *    PLC keeps such values in retentive memory: a restart must not make a
 *    read return an older value than the last write.
 *  - SIGUSR1: from the next request on, answer each one MS milliseconds
 *    late (--late-ms, default 1300), after the gateway's request timeout;
 *    SIGUSR2: answer at once again.
 *
 * Why C on libmodbus rather than python3-pymodbus: libmodbus is already a
 * dependency (the other test PLCs use it), the suite kills and restarts
 * this program a hundred times and it starts in milliseconds, and the late
 * mode needs exact control of when each answer leaves.
 */
#include <errno.h>
#include <fcntl.h>
#include <modbus.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fault_common.h"

#define MAX_CONNS 16

static volatile sig_atomic_t stop, late;

static void on_signal(int sig)
{
    if (sig == SIGUSR1)
        late = 1;
    else if (sig == SIGUSR2)
        late = 0;
    else
        stop = 1;
}

static int usage(void)
{
    fprintf(stderr, "usage: fault-plc --port N --record FILE [--late-ms MS]\n");
    return 2;
}

/* The last value in the record, or 0 if there is none. */
static uint32_t last_recorded(const char *path)
{
    unsigned long v, last = 0;
    long long t;
    FILE *f = fopen(path, "r");

    if (f == NULL)
        return 0;
    while (fscanf(f, "%lu %lld", &v, &t) == 2)
        last = v;
    fclose(f);
    return (uint32_t)last;
}

/* Append "VALUE TIME_MS" in one write(2), so that a kill leaves whole lines. */
static int record(int fd, uint32_t value)
{
    char line[64];
    int n = snprintf(line, sizeof line, "%lu %lld\n", (unsigned long)value, fault_now_ms());

    return write(fd, line, (size_t)n) == n ? 0 : -1;
}

/* The counter value a request writes, if it is a well-formed write of the counter. */
static int counter_write(const uint8_t *q, int n, uint32_t *value)
{
    if (n != 17 || q[7] != 0x10 || q[8] != 0 || q[9] != FAULT_COUNTER_ADDR || q[10] != 0 ||
        q[11] != 2 || q[12] != 4)
        return 0;
    *value = (uint32_t)q[13] << 24 | (uint32_t)q[14] << 16 | (uint32_t)q[15] << 8 | q[16];
    return 1;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !stop) {
    }
}

static void serve_request(modbus_t *ctx, modbus_mapping_t *map, int fd, int rec, int late_ms,
                          int *closed)
{
    uint8_t q[MODBUS_TCP_MAX_ADU_LENGTH];
    uint32_t value;
    int n;

    modbus_set_socket(ctx, fd);
    n = modbus_receive(ctx, q);
    if (n <= 0) {
        *closed = 1;
        return;
    }
    if (late)
        sleep_ms(late_ms);
    if (counter_write(q, n, &value) && record(rec, value) != 0) {
        fprintf(stderr, "fault-plc: cannot write the record: %s\n", strerror(errno));
        exit(1);
    }
    if (modbus_reply(ctx, q, n, map) < 0)
        *closed = 1; /* the master has gone; what it wrote is done and recorded */
}

int main(int argc, char **argv)
{
    struct pollfd pfd[1 + MAX_CONNS];
    const char *path = NULL;
    int port = -1, late_ms = 1300, lfd, rec, n_conns = 0, i;
    struct sigaction sa;
    struct sockaddr_in sin;
    socklen_t sl = sizeof sin;
    modbus_mapping_t *map;
    modbus_t *ctx;
    uint32_t v;

    for (i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--port") == 0)
            port = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--record") == 0)
            path = argv[i + 1];
        else if (strcmp(argv[i], "--late-ms") == 0)
            late_ms = atoi(argv[i + 1]);
        else
            return usage();
    }
    if (i != argc || port < 0 || port > 65535 || path == NULL || late_ms < 0)
        return usage();
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: poll() returns to look at the flags */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    map = modbus_mapping_new(0, 0, FAULT_REGISTERS, FAULT_REGISTERS);
    rec = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    ctx = modbus_new_tcp("127.0.0.1", port);
    if (map == NULL || rec < 0 || ctx == NULL) {
        fprintf(stderr, "fault-plc: cannot start: %s\n", strerror(errno));
        return 1;
    }
    for (i = 0; i < FAULT_TAG_COUNT; i++) {
        map->tab_registers[FAULT_TAG_FIRST + i] = fault_tag(FAULT_TAG_FIRST + (unsigned)i, 0);
        map->tab_input_registers[FAULT_TAG_FIRST + i] = fault_tag(FAULT_TAG_FIRST + (unsigned)i, 1);
    }
    v = last_recorded(path);
    map->tab_registers[FAULT_COUNTER_ADDR] = (uint16_t)(v >> 16);
    map->tab_registers[FAULT_COUNTER_ADDR + 1] = (uint16_t)v;
    lfd = modbus_tcp_listen(ctx, 8);
    if (lfd < 0 || getsockname(lfd, (struct sockaddr *)&sin, &sl) != 0) {
        fprintf(stderr, "fault-plc: cannot listen on port %d: %s\n", port, strerror(errno));
        return 1;
    }
    printf("listening on %d\n", ntohs(sin.sin_port));
    fflush(stdout);

    pfd[0].fd = lfd;
    pfd[0].events = POLLIN;
    while (!stop) {
        for (i = 0; i <= n_conns; i++)
            pfd[i].revents = 0;
        if (poll(pfd, (nfds_t)(1 + n_conns), -1) < 0)
            continue; /* EINTR: a signal */
        for (i = 1; i <= n_conns; i++) {
            int closed = 0;

            if (pfd[i].revents == 0)
                continue;
            serve_request(ctx, map, pfd[i].fd, rec, late_ms, &closed);
            if (closed) {
                close(pfd[i].fd);
                pfd[i--] = pfd[n_conns--];
            }
        }
        if (pfd[0].revents & POLLIN) {
            int fd = accept(lfd, NULL, NULL);

            if (fd >= 0 && n_conns == MAX_CONNS)
                close(fd); /* full: refused, as a real PLC does */
            else if (fd >= 0) {
                pfd[++n_conns].fd = fd;
                pfd[n_conns].events = POLLIN;
            }
        }
    }
    for (i = 1; i <= n_conns; i++)
        close(pfd[i].fd);
    close(lfd);
    close(rec);
    modbus_free(ctx);
    modbus_mapping_free(map);
    return 0;
}
