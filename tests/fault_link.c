/* SPDX-License-Identifier: ISC */
/*
 * fault_link.c - a link between two network namespaces that loses,
 * delays, reorders and duplicates packets on command: what tests/faults.sh
 * uses where the kernel has no netem qdisc (sch_netem), with the same
 * faults.
 *
 *   tests/fault-link --a NETNS:IFNAME --b NETNS:IFNAME [--seed N]
 *
 * Makes a TUN device IFNAME inside each namespace (/run/netns/NETNS, as
 * "ip netns add" makes them), prints "ready" and moves every IP packet
 * one side sends to the other side, until stdin ends or SIGTERM; the
 * devices vanish with it.  The caller gives each device its address
 * ("ip addr add A peer B dev IFNAME") and brings it up.
 *
 * Commands on stdin, one per line, each answered "ok" on stdout once in
 * force (both directions alike, every packet on its own, as netem does):
 *   loss P          drop P percent of the packets
 *   delay MS JIT    hold each packet MS +/- JIT milliseconds (uniform), so
 *                   that packets overtake each other when JIT > 0
 *   duplicate P     send P percent of the packets twice
 *   partition       drop every packet
 *   clear           none of the above
 *   stats           one line: packets forwarded, dropped, duplicated
 */
#define _GNU_SOURCE /* setns() */
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define MAX_PACKET 65536
#define MAX_HELD   20000 /* packets held for delay; beyond, dropped (a full queue) */

struct held {
    int64_t due_ns;
    int to;
    size_t len;
    uint8_t *data;
};

static struct {
    double loss, dup; /* percent */
    int delay_ms, jitter_ms, partition;
} fault;

static struct held held[MAX_HELD];
static size_t n_held;
static unsigned long forwarded, dropped, duplicated;
static uint64_t rng = 0x9E3779B97F4A7C15u;
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* xorshift64*: a reproducible stream from --seed. */
static double uniform01(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (double)((rng * 2685821657736338717u) >> 11) / 9007199254740992.0;
}

/* A TUN device NAME in the namespace at /run/netns/NETNS ("NETNS:NAME"); its descriptor. */
static int open_tun(const char *spec)
{
    char ns[256], path[300];
    const char *colon = strchr(spec, ':');
    struct ifreq ifr;
    int nsfd, fd;

    if (colon == NULL || (size_t)(colon - spec) >= sizeof ns || strlen(colon + 1) >= IFNAMSIZ) {
        fprintf(stderr, "fault-link: '%s' is not NETNS:IFNAME\n", spec);
        return -1;
    }
    snprintf(ns, sizeof ns, "%.*s", (int)(colon - spec), spec);
    snprintf(path, sizeof path, "/run/netns/%s", ns);
    nsfd = open(path, O_RDONLY | O_CLOEXEC);
    if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) != 0) {
        fprintf(stderr, "fault-link: cannot enter %s: %s\n", path, strerror(errno));
        return -1;
    }
    close(nsfd);
    /* The device belongs to the namespace /dev/net/tun was opened in. */
    fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", colon + 1);
    if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) != 0) {
        fprintf(stderr, "fault-link: cannot make TUN device %s in %s: %s\n", colon + 1, ns,
                strerror(errno));
        return -1;
    }
    return fd;
}

static void send_now(int to, const uint8_t *p, size_t len)
{
    /* A full device queue drops the packet, as a real link would. */
    if (write(to, p, len) == (ssize_t)len)
        forwarded++;
    else
        dropped++;
}

static void hold(int to, const uint8_t *p, size_t len)
{
    double d = fault.delay_ms + (2 * uniform01() - 1) * fault.jitter_ms;
    struct held *h = &held[n_held];

    if (n_held == MAX_HELD || (h->data = malloc(len)) == NULL) {
        dropped++;
        return;
    }
    memcpy(h->data, p, len);
    h->len = len;
    h->to = to;
    h->due_ns = now_ns() + (int64_t)((d > 0 ? d : 0) * 1e6);
    n_held++;
}

static void pass(int to, const uint8_t *p, size_t len)
{
    int copies = 1 + (uniform01() * 100 < fault.dup), i;

    if (fault.partition || uniform01() * 100 < fault.loss) {
        dropped++;
        return;
    }
    duplicated += (unsigned long)(copies - 1);
    for (i = 0; i < copies; i++) {
        if (fault.delay_ms == 0 && fault.jitter_ms == 0)
            send_now(to, p, len);
        else
            hold(to, p, len);
    }
}

/* Send what is due; milliseconds until the next packet is (-1: none held). */
static int release_due(void)
{
    int64_t now = now_ns(), next = -1;
    size_t i = 0;

    while (i < n_held) {
        if (held[i].due_ns <= now) {
            send_now(held[i].to, held[i].data, held[i].len);
            free(held[i].data);
            held[i] = held[--n_held];
            continue;
        }
        if (next < 0 || held[i].due_ns < next)
            next = held[i].due_ns;
        i++;
    }
    return next < 0 ? -1 : (int)((next - now) / 1000000 + 1);
}

static void command(char *line)
{
    double a = 0;
    int x = 0, y = 0;

    if (strcmp(line, "clear") == 0)
        memset(&fault, 0, sizeof fault);
    else if (sscanf(line, "loss %lf", &a) == 1)
        fault.loss = a;
    else if (sscanf(line, "duplicate %lf", &a) == 1)
        fault.dup = a;
    else if (sscanf(line, "delay %d %d", &x, &y) == 2 && x >= 0 && y >= 0 && y <= x) {
        fault.delay_ms = x;
        fault.jitter_ms = y;
    } else if (strcmp(line, "partition") == 0)
        fault.partition = 1;
    else if (strcmp(line, "stats") == 0)
        printf("forwarded %lu dropped %lu duplicated %lu held %zu\n", forwarded, dropped,
               duplicated, n_held);
    else {
        printf("error: unknown command '%s'\n", line);
        fflush(stdout);
        return;
    }
    printf("ok\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    static uint8_t buf[MAX_PACKET];
    const char *a = NULL, *b = NULL;
    char line[256];
    size_t line_len = 0;
    int fd[2], i;

    for (i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--a") == 0)
            a = argv[i + 1];
        else if (strcmp(argv[i], "--b") == 0)
            b = argv[i + 1];
        else if (strcmp(argv[i], "--seed") == 0)
            rng = strtoull(argv[i + 1], NULL, 10) | 1;
        else
            break;
    }
    if (i != argc || a == NULL || b == NULL) {
        fprintf(stderr, "usage: fault-link --a NETNS:IFNAME --b NETNS:IFNAME [--seed N]\n");
        return 2;
    }
    fd[0] = open_tun(a);
    fd[1] = fd[0] >= 0 ? open_tun(b) : -1;
    if (fd[1] < 0)
        return 1;
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    printf("ready\n");
    fflush(stdout);
    while (!stop) {
        struct pollfd pfd[3] = {{fd[0], POLLIN, 0}, {fd[1], POLLIN, 0}, {0, POLLIN, 0}};

        if (poll(pfd, 3, release_due()) < 0)
            continue;
        for (i = 0; i < 2; i++) {
            ssize_t n;

            while (pfd[i].revents & POLLIN && (n = read(fd[i], buf, sizeof buf)) > 0)
                pass(fd[1 - i], buf, (size_t)n);
        }
        if (pfd[2].revents & (POLLIN | POLLHUP)) {
            ssize_t n = read(0, line + line_len, sizeof line - 1 - line_len);
            char *nl;

            if (n <= 0)
                break; /* the suite has gone */
            line_len += (size_t)n;
            line[line_len] = '\0';
            while ((nl = strchr(line, '\n')) != NULL) {
                *nl = '\0';
                command(line);
                line_len -= (size_t)(nl + 1 - line);
                memmove(line, nl + 1, line_len + 1);
            }
            if (line_len == sizeof line - 1)
                line_len = 0; /* a line that long is no command */
        }
    }
    return 0;
}
