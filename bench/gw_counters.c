/* SPDX-License-Identifier: ISC */
/*
 * gw_counters.c - the timed rounds, and what each process on a path does
 * per forwarded request (gw_bench.h), from two sources named in the CSV's
 * metric:
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
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "gw_bench.h"

/* The sum over pid's threads of the number after key in their status
 * files; *min (if not NULL) the smallest. */
static double tasks_sum(pid_t pid, const char *key, double *min)
{
    char path[320], line[256];
    double sum = 0;
    struct dirent *e;
    DIR *d;

    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    if (min != NULL)
        *min = 0;
    if ((d = opendir(path)) == NULL)
        return 0;
    for (int first = 1; (e = readdir(d)) != NULL;) {
        FILE *f;
        double v = 0;

        snprintf(path, sizeof path, "/proc/%d/task/%s/status", (int)pid, e->d_name);
        if (e->d_name[0] == '.' || (f = fopen(path, "r")) == NULL)
            continue;
        while (fgets(line, sizeof line, f) != NULL)
            if (strncmp(line, key, strlen(key)) == 0) {
                v = strtod(line + strlen(key), NULL);
                break;
            }
        fclose(f);
        sum += v;
        if (min != NULL && (first || v < *min))
            *min = v;
        first = 0;
    }
    closedir(d);
    return sum;
}

/* The kernel's counters and the metric each becomes (struct gw_proc's ctxsw). */
static const char *const ctxsw[2][2] = {{"voluntary_ctxt_switches:", "ctxsw_vol_proc_status"},
                                        {"nonvoluntary_ctxt_switches:", "ctxsw_invol_proc_status"}};

/* The CSV subject of process i of p: "path/process". */
static const char *subject(const struct gw_path *p, int i)
{
    static char s[128];

    snprintf(s, sizeof s, "%.39s/%.23s", p->name, p->proc[i].name);
    return s;
}

void gw_counters_start(struct gw_path *p)
{
    for (int i = 0; i < p->n_proc; i++)
        for (int k = 0; k < 2; k++)
            p->proc[i].ctxsw[k] = tasks_sum(p->proc[i].pid, ctxsw[k][0], NULL);
}

void gw_counters_csv(const struct gw_path *p, FILE *csv)
{
    for (int i = 0; i < p->n_proc; i++)
        for (int k = 0; k < 2; k++)
            bench_csv_num(csv, subject(p, i), ctxsw[k][1], 0,
                          (tasks_sum(p->proc[i].pid, ctxsw[k][0], NULL) - p->proc[i].ctxsw[k]) /
                              (p->n > 0 ? p->n : 1),
                          "per_request");
}

/* Whether every thread of *pid has a tracer now. */
static int traced(const void *pid)
{
    double min;

    tasks_sum(*(const pid_t *)pid, "TracerPid:", &min);
    return min != 0;
}

int gw_strace_csv(struct gw_path *p, int n, FILE *csv)
{
    pid_t tracer[2];
    char out[2][128], pid[2][16];
    int i, st, ok = p->n_proc == 0;

    for (i = 0; i < p->n_proc; i++) {
        const char *argv[] = {"strace", "-c", "-f", "-q", "-o", out[i], "-p", pid[i], NULL};

        snprintf(out[i], sizeof out[i], "%s.strace", gw_file(p->proc[i].name));
        snprintf(pid[i], sizeof pid[i], "%d", (int)p->proc[i].pid);
        if ((tracer[i] = gw_exec(argv, NULL)) > 0)
            (void)gw_wait_for(traced, &p->proc[i].pid, tracer[i]);
    }
    for (i = 0; i < n && p->n_proc > 0; i++)
        gw_read10(p);
    for (i = 0; i < p->n_proc; i++) {
        char line[256];
        double pct, secs, per, calls = -1;
        FILE *f;

        if (tracer[i] <= 0)
            continue;
        kill(tracer[i], SIGINT);
        waitpid(tracer[i], &st, 0);
        /* The calls column of strace -c's "total" line. */
        for (f = fopen(out[i], "r"); f != NULL && fgets(line, sizeof line, f) != NULL;)
            if (strstr(line, " total") != NULL &&
                sscanf(line, "%lf %lf %lf %lf", &pct, &secs, &per, &calls) != 4)
                calls = -1;
        if (f != NULL)
            fclose(f);
        if (calls >= 0)
            bench_csv_num(csv, subject(p, i), "syscalls_strace", 0, calls / n, "per_request");
        ok |= calls >= 0;
    }
    return ok ? 0 : -1;
}

void gw_time(struct gw_path *p, int n, int count)
{
    for (int i = 0; i < n; i++) {
        for (int r = 0; r < 100; r++)
            gw_read10(&p[i]);
        gw_counters_start(&p[i]);
    }
    /* Every round times every path in turn: a busy moment falls on all of them. */
    for (int r = 0; r < GW_ROUNDS; r++)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < count / GW_ROUNDS; j++) {
                double t0 = gw_now_us();

                gw_read10(&p[i]);
                bench_samples_add(&p[i].t, gw_now_us() - t0);
                p[i].n++;
            }
}
