/* SPDX-License-Identifier: ISC */
/*
 * plot.c - the PNG (see plot.h).  The data tables and the gnuplot script
 * (plot_script.c) go to a private temporary directory, gnuplot runs on the
 * script, and the directory is removed.
 */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "build_info.h"
#include "plot.h"
#include "plot_script.h"

extern char **environ;

/* The gnuplot to run: configure's choice, else "gnuplot"; a bare name is
 * looked up in PATH.  0 if it is not there. */
static int find_gnuplot(char *out, size_t len)
{
    const char *name = BENCH_BUILD_GNUPLOT[0] ? BENCH_BUILD_GNUPLOT : "gnuplot";
    const char *path = getenv("PATH");

    if (strchr(name, '/') != NULL) {
        snprintf(out, len, "%s", name);
        return access(out, X_OK) == 0;
    }
    while (path != NULL && *path != '\0') {
        const char *colon = strchr(path, ':');
        size_t dirlen = colon ? (size_t)(colon - path) : strlen(path);
        /* An empty PATH entry means the current directory. */
        snprintf(out, len, "%.*s/%s", (int)(dirlen ? dirlen : 1), dirlen ? path : ".", name);
        if (access(out, X_OK) == 0)
            return 1;
        path = colon ? colon + 1 : NULL;
    }
    return 0;
}

static void remove_dir(const char *dir)
{
    char path[512];

    for (size_t i = 0; i < BENCH_N_PLOT_FILES; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, bench_plot_files[i]);
        (void)unlink(path);
    }
    (void)rmdir(dir);
}

int bench_plot(const struct bench_ctx *ctx, const struct bench_machine *m, const char *png)
{
    char gnuplot[512], dir[256], script[300], cwd[512], abs_png[1024];
    const char *tmp = getenv("TMPDIR");
    char *argv[3];
    pid_t pid;
    int status = 0, rc;

    if (!find_gnuplot(gnuplot, sizeof gnuplot)) {
        fprintf(stderr, "%s: gnuplot is not installed: no plot (%s not written)\n", BENCH_PROG,
                png);
        return 1;
    }
    /* gnuplot runs in the temporary directory: make the PNG's path absolute. */
    if (png[0] != '/' && getcwd(cwd, sizeof cwd) != NULL)
        snprintf(abs_png, sizeof abs_png, "%s/%s", cwd, png);
    else
        snprintf(abs_png, sizeof abs_png, "%s", png);
    snprintf(dir, sizeof dir, "%s/mbsc-bench.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "%s: --plot: cannot make a temporary directory: %s\n", BENCH_PROG,
                strerror(errno));
        return -1;
    }
    if (bench_plot_write(ctx, m, dir, abs_png) != 0) {
        fprintf(stderr, "%s: --plot: cannot write the plot data in %s\n", BENCH_PROG, dir);
        remove_dir(dir);
        return -1;
    }
    snprintf(script, sizeof script, "%s/plot.gp", dir);
    argv[0] = gnuplot;
    argv[1] = script;
    argv[2] = NULL;
    rc = posix_spawn(&pid, gnuplot, NULL, NULL, argv, environ);
    if (rc == 0 && waitpid(pid, &status, 0) < 0)
        rc = errno;
    remove_dir(dir);
    if (rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "%s: --plot: gnuplot (%s) failed%s%s\n", BENCH_PROG, gnuplot,
                rc ? ": " : "", rc ? strerror(rc) : "");
        return -1;
    }
    return 0;
}
