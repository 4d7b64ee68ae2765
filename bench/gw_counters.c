/* SPDX-License-Identifier: ISC */
/*
 * gw_counters.c - what each process on a path does per forwarded request
 * (gw_bench.h), from two sources named in the CSV's metric:
 *
 *  - during the timed rounds, the kernel's counters: context switches
 *    (voluntary: it waited; involuntary: it was preempted) summed over the
 *    threads in /proc/PID/task/TID/status (not /proc/PID/io's syscr and
 *    syscw: they miss recv and send on sockets);
 *  - in a separate counted run, every system call: strace -c -f attached
 *    to the process.  Not during the timed rounds: strace makes each call
 *    many times dearer.
 */
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "csv.h"
#include "gw_bench.h"

/* The number after "key" in the file's lines, 0 if none. */
static double field(const char *path, const char *key)
{
    char line[256];
    double v = 0;
    size_t len = strlen(key);
    FILE *f = fopen(path, "r");

    if (f == NULL)
        return 0;
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, key, len) == 0) {
            v = strtod(line + len, NULL);
            break;
        }
    fclose(f);
    return v;
}

static void read_counters(pid_t pid, double *vol, double *invol)
{
    char path[320];
    struct dirent *e;
    DIR *d;

    *vol = *invol = 0;
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    d = opendir(path);
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/%d/task/%s/status", (int)pid, e->d_name);
        *vol += field(path, "voluntary_ctxt_switches:");
        *invol += field(path, "nonvoluntary_ctxt_switches:");
    }
    if (d != NULL)
        closedir(d);
}

void gw_counters_start(struct gw_path *p)
{
    for (int i = 0; i < p->n_proc; i++)
        read_counters(p->proc[i].pid, &p->proc[i].vol, &p->proc[i].invol);
}

void gw_counters_csv(const struct gw_path *p, FILE *csv)
{
    for (int i = 0; i < p->n_proc; i++) {
        const struct gw_proc *q = &p->proc[i];
        double vol, invol, n = p->n > 0 ? p->n : 1;
        char subject[128];

        read_counters(q->pid, &vol, &invol);
        snprintf(subject, sizeof subject, "%.39s/%.23s", p->name, q->name);
        bench_csv_num(csv, subject, "ctxsw_vol_proc_status", 0, (vol - q->vol) / n, "per_request");
        bench_csv_num(csv, subject, "ctxsw_invol_proc_status", 0, (invol - q->invol) / n,
                      "per_request");
    }
}

/* Whether every thread of pid has a tracer now. */
static int traced(pid_t pid)
{
    char path[320];
    struct dirent *e;
    int all = 1;
    DIR *d;

    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    if ((d = opendir(path)) == NULL)
        return 0;
    while (all && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/%d/task/%s/status", (int)pid, e->d_name);
        all = field(path, "TracerPid:") != 0;
    }
    closedir(d);
    return all;
}

/* The calls column of strace -c's "total" line. */
static double strace_total(const char *path)
{
    char line[256];
    double calls = -1;
    FILE *f = fopen(path, "r");

    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strstr(line, " total") != NULL) {
            double pct, secs, per;

            if (sscanf(line, "%lf %lf %lf %lf", &pct, &secs, &per, &calls) != 4)
                calls = -1;
        }
    if (f != NULL)
        fclose(f);
    return calls;
}

int gw_strace_run(struct gw_path *p, int n)
{
    pid_t tracer[GW_MAX_PROCS];
    char out[GW_MAX_PROCS][128];
    int i, st, ok = 0;

    for (i = 0; i < p->n_proc; i++) {
        char pid[16];
        double end = gw_now_us() + 5e6;

        snprintf(out[i], sizeof out[i], "%s", gw_file(p->proc[i].name));
        strncat(out[i], ".strace", sizeof out[i] - strlen(out[i]) - 1);
        snprintf(pid, sizeof pid, "%d", (int)p->proc[i].pid);
        tracer[i] = fork();
        if (tracer[i] == 0) {
            execlp("strace", "strace", "-c", "-f", "-q", "-o", out[i], "-p", pid, (char *)NULL);
            _exit(127);
        }
        while (tracer[i] > 0 && !traced(p->proc[i].pid) && gw_now_us() < end &&
               waitpid(tracer[i], &st, WNOHANG) == 0)
            poll(NULL, 0, 10);
    }
    for (i = 0; i < n; i++)
        gw_read10(p);
    for (i = 0; i < p->n_proc; i++) {
        if (tracer[i] <= 0)
            continue;
        kill(tracer[i], SIGINT);
        waitpid(tracer[i], &st, 0);
        p->proc[i].syscalls = strace_total(out[i]);
        ok |= p->proc[i].syscalls >= 0;
    }
    return ok ? 0 : -1;
}
