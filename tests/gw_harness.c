/* SPDX-License-Identifier: ISC */
/*
 * gw_harness.c - what the gateway's tests and its benchmark share (see
 * gw_harness.h).  No Check here: failures are return values, so that the
 * benchmark can use it too.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gw_harness.h"
#include "testutil.h"

/* ---- the PLC: a plain libmodbus server in a thread ------------------------ */

static void *plc_main(void *arg)
{
    struct plc *p = arg;
    uint8_t q[MODBUS_TCP_MAX_ADU_LENGTH], held[MODBUS_TCP_MAX_ADU_LENGTH];
    int cfd = -1, n_held = 0;

    for (;;) {
        struct pollfd pfd[4] = {{p->stop[0], POLLIN, 0},
                                {p->lfd, POLLIN, 0},
                                {n_held > 0 ? -1 : cfd, POLLIN, 0},
                                {p->wake[0], POLLIN, 0}};

        if (poll(pfd, 4, -1) < 0)
            continue;
        if (pfd[0].revents)
            break;
        if (pfd[3].revents & POLLIN) {
            char sink[16];

            (void)!read(p->wake[0], sink, sizeof sink);
            pthread_mutex_lock(&p->mu);
            if (n_held > 0 && p->fault != PLC_HOLD && cfd >= 0) {
                modbus_reply(p->ctx, held, n_held, p->map);
                p->served++;
            }
            if (p->fault != PLC_HOLD)
                n_held = 0;
            pthread_mutex_unlock(&p->mu);
        }
        if (pfd[1].revents & POLLIN) {
            int fd = accept(p->lfd, NULL, NULL);

            if (fd >= 0) {
                pthread_mutex_lock(&p->mu);
                if (cfd >= 0)
                    close(cfd);
                cfd = fd;
                modbus_set_socket(p->ctx, cfd);
                p->accepts++;
                p->conn_fd = cfd;
                pthread_mutex_unlock(&p->mu);
            }
        }
        if (cfd >= 0 && (pfd[2].revents & (POLLIN | POLLHUP | POLLERR))) {
            int n = modbus_receive(p->ctx, q);

            if (n <= 0) {
                pthread_mutex_lock(&p->mu);
                close(cfd);
                cfd = p->conn_fd = -1;
                pthread_mutex_unlock(&p->mu);
                continue;
            }
            pthread_mutex_lock(&p->mu);
            if (p->fault == PLC_MANGLE) {
                /* A read answer with a byte count that does not fit the request. */
                uint8_t bad[11] = {q[0], q[1], 0, 0, 0, 5, q[6], q[7], 2, 0, 0};

                (void)!write(cfd, bad, sizeof bad);
            } else if (p->fault == PLC_HOLD) {
                memcpy(held, q, (size_t)n);
                n_held = n;
                p->held++;
                pthread_cond_broadcast(&p->held_cv);
            } else if (p->fault == PLC_OK) {
                modbus_reply(p->ctx, q, n, p->map);
                p->served++;
            }
            pthread_mutex_unlock(&p->mu);
        }
    }
    if (cfd >= 0)
        close(cfd);
    return NULL;
}

/* Start the PLC on 127.0.0.1:port (0: any free port), keeping p->map if set. */
int plc_start(struct plc *p, int port)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;

    p->conn_fd = -1;
    if (p->map == NULL) {
        p->map = modbus_mapping_new(100, 100, 100, 100);
        if (p->map == NULL)
            return -1;
        pthread_mutex_init(&p->mu, NULL);
        pthread_cond_init(&p->held_cv, NULL);
    }
    p->ctx = modbus_new_tcp(p->any_address ? NULL : "127.0.0.1", port);
    if (p->ctx == NULL)
        return -1;
    p->lfd = modbus_tcp_listen(p->ctx, 64);
    if (p->lfd < 0 || getsockname(p->lfd, (struct sockaddr *)&sa, &len) != 0 ||
        pipe(p->stop) != 0 || pipe(p->wake) != 0) {
        fprintf(stderr, "PLC on port %d: %s\n", port, strerror(errno));
        return -1;
    }
    p->port = ntohs(sa.sin_port);
    return pthread_create(&p->th, NULL, plc_main, p) == 0 ? 0 : -1;
}

/* Stop the PLC: listener and connection closed, as a PLC that is switched off. */
void plc_stop(struct plc *p)
{
    /* The listener stops first (shutdown makes Linux refuse new connections
     * at once): a gateway that reconnects while the thread is still closing
     * its connection must find nobody there, not a backlog that accepts it. */
    (void)shutdown(p->lfd, SHUT_RDWR);
    (void)!write(p->stop[1], "x", 1);
    pthread_join(p->th, NULL);
    close(p->stop[0]);
    close(p->stop[1]);
    close(p->wake[0]);
    close(p->wake[1]);
    close(p->lfd);
    modbus_free(p->ctx);
    p->ctx = NULL;
}

void plc_free(struct plc *p)
{
    if (p->ctx != NULL)
        plc_stop(p);
    modbus_mapping_free(p->map);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->held_cv);
    memset(p, 0, sizeof *p);
}

uint16_t plc_register(struct plc *p, int addr)
{
    uint16_t v;

    pthread_mutex_lock(&p->mu);
    v = p->map->tab_registers[addr];
    pthread_mutex_unlock(&p->mu);
    return v;
}

void plc_set_register(struct plc *p, int addr, uint16_t v)
{
    pthread_mutex_lock(&p->mu);
    p->map->tab_registers[addr] = v;
    pthread_mutex_unlock(&p->mu);
}

int plc_accepts(struct plc *p)
{
    int n;

    pthread_mutex_lock(&p->mu);
    n = p->accepts;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void plc_set_fault(struct plc *p, enum plc_fault f)
{
    pthread_mutex_lock(&p->mu);
    p->fault = f;
    pthread_mutex_unlock(&p->mu);
}

int plc_wait_held(struct plc *p, int timeout_ms)
{
    struct timespec end;
    int ok;

    clock_gettime(CLOCK_REALTIME, &end);
    end.tv_sec += timeout_ms / 1000;
    end.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (end.tv_nsec >= 1000000000L) {
        end.tv_sec++;
        end.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&p->mu);
    while (p->held == 0 && pthread_cond_timedwait(&p->held_cv, &p->mu, &end) == 0)
        continue;
    ok = p->held > 0;
    pthread_mutex_unlock(&p->mu);
    return ok;
}

int plc_wait_queued(struct plc *p, int timeout_ms)
{
    long long end = tu_now_ms() + timeout_ms;

    for (;;) {
        int n = 0;

        pthread_mutex_lock(&p->mu);
        if (p->conn_fd < 0 || ioctl(p->conn_fd, FIONREAD, &n) != 0)
            n = 0;
        pthread_mutex_unlock(&p->mu);
        if (n > 0)
            return 1;
        if (tu_now_ms() >= end)
            return 0;
        poll(NULL, 0, 5); /* the bytes arrive from another process: nothing to wait on */
    }
}

void plc_release(struct plc *p)
{
    plc_set_fault(p, PLC_OK);
    (void)!write(p->wake[1], "r", 1);
}

/* ---- the gateway process ------------------------------------------------------ */

const char *gw_program = "tools/mbsc-gateway";
int gw_journal_stream;

const char *gateway_path(void)
{
    static char path[4096];
    const char *b = getenv("top_builddir");

    if (gw_program[0] == '/')
        return gw_program; /* another build's, for a comparison */
    snprintf(path, sizeof path, "%s/%s", b != NULL ? b : ".", gw_program);
    return path;
}

/* Read what the gateway has logged, waiting up to timeout_ms for something. */
int read_log(struct gwp *g, int timeout_ms)
{
    struct pollfd pfd = {g->err_fd, POLLIN, 0};
    ssize_t n;

    if (poll(&pfd, 1, timeout_ms) <= 0)
        return 0;
    n = read(g->err_fd, g->log + g->log_len, sizeof g->log - 1 - g->log_len);
    if (n <= 0)
        return -1;
    g->log_len += (size_t)n;
    g->log[g->log_len] = '\0';
    return 1;
}

/* Wait until the log, after the mark, holds needle; then move the mark past it. */
int wait_log(struct gwp *g, const char *needle)
{
    long long end = tu_now_ms() + WAIT_MS;

    for (;;) {
        char *hit = strstr(g->log + g->mark, needle);

        if (hit != NULL) {
            g->mark = (size_t)(hit - g->log) + strlen(needle);
            return 1;
        }
        if (tu_now_ms() >= end || read_log(g, (int)(end - tu_now_ms())) < 0)
            return 0;
    }
}

/* Start the gateway with args (NULL-terminated); 0 if it did not start listening. */
int gw_spawn(struct gwp *g, const char *const *args)
{
    char *argv[64], *runner, *word;
    int out[2], err[2], argc = 0;
    size_t i, n = 0;
    char line[256];
    long long end = tu_now_ms() + WAIT_MS;

    memset(g, 0, sizeof *g);
    /* Cross builds run the program under $TEST_RUNNER (qemu-user), as the tests. */
    runner = getenv("TEST_RUNNER") != NULL ? strdup(getenv("TEST_RUNNER")) : NULL;
    for (word = runner != NULL ? strtok(runner, " ") : NULL; word != NULL && argc < 8;
         word = strtok(NULL, " "))
        argv[argc++] = strdup(word);
    free(runner);
    argv[argc++] = strdup(gateway_path());
    for (i = 0; args[i] != NULL && argc < 63; i++)
        argv[argc++] = strdup(args[i]);
    argv[argc] = NULL;
    if (pipe(out) != 0 || pipe(err) != 0)
        return 0;
    g->pid = fork();
    if (g->pid < 0)
        return 0;
    if (g->pid == 0) {
        dup2(out[1], 1);
        dup2(err[1], 2);
        close(out[0]);
        close(err[0]);
        if (gw_journal_stream) {
            struct stat st;
            char stream[64];

            /* What systemd sets when stderr is connected to the journal: its device and inode. */
            if (fstat(2, &st) == 0) {
                snprintf(stream, sizeof stream, "%llu:%llu", (unsigned long long)st.st_dev,
                         (unsigned long long)st.st_ino);
                setenv("JOURNAL_STREAM", stream, 1);
            }
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    for (i = 0; argv[i] != NULL; i++)
        free(argv[i]);
    close(out[1]);
    close(err[1]);
    g->out_fd = out[0];
    g->err_fd = err[0];
    /* The first stdout line: "listening on HOST:PORT". */
    while (n < sizeof line - 1 && tu_now_ms() < end) {
        struct pollfd pfd[2] = {{g->out_fd, POLLIN, 0}, {g->err_fd, POLLIN, 0}};

        if (poll(pfd, 2, (int)(end - tu_now_ms())) <= 0)
            break;
        if (pfd[1].revents)
            (void)read_log(g, 0);
        if (pfd[0].revents) {
            ssize_t r = read(g->out_fd, line + n, 1);

            if (r <= 0)
                break;
            if (line[n] == '\n')
                break;
            n++;
        }
    }
    line[n] = '\0';
    if (strncmp(line, "listening on ", 13) != 0 || n - 13 >= sizeof g->addr)
        return 0;
    memcpy(g->addr, line + 13, n - 13 + 1);
    return 1;
}

/* Send sig (0: none) and wait for the exit; the exit status, or 128 + signal. */
int gw_finish(struct gwp *g, int sig)
{
    int st = 0;

    if (g->pid <= 0)
        return -1;
    if (sig != 0)
        kill(g->pid, sig);
    while (read_log(g, 100) >= 0 && waitpid(g->pid, &st, WNOHANG) == 0) {
    }
    if (waitpid(g->pid, &st, 0) < 0 && errno != ECHILD) {
        /* reaped above */
    }
    while (read_log(g, 0) > 0) {
    }
    close(g->out_fd);
    close(g->err_fd);
    g->pid = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int gw_run_status(const char *args, char *out, size_t len)
{
    char cmd[8192];
    const char *runner = getenv("TEST_RUNNER");
    size_t n = 0;
    FILE *p;
    int st;

    snprintf(cmd, sizeof cmd, "%s %s status %s 2>&1", runner != NULL ? runner : "", gateway_path(),
             args);
    out[0] = '\0';
    p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    while (n < len - 1) {
        size_t k = fread(out + n, 1, len - 1 - n, p);

        if (k == 0)
            break;
        n += k;
    }
    out[n] = '\0';
    st = pclose(p);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
