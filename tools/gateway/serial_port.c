/* SPDX-License-Identifier: ISC */
/*
 * serial_port.c - open and set up a serial port (serial_port.h).
 *
 * Two programs on one RS-485 line garble each other's frames and the
 * devices act on the pieces, so the gateway keeps the port to itself:
 * TIOCEXCL makes further opens fail (except for root, which it does not
 * stop), and an exclusive flock() is what stops a second gateway or any
 * program that locks alike, root or not.  When the port is taken, the
 * message names the process that holds it, found in /proc.
 */
#define _DEFAULT_SOURCE /* cfmakeraw, flock, TIOCEXCL */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/serial.h>
#endif

#include "serial_port.h"

/* "process 1234 (socat)" for a process other than this one with dev open, or "". */
static void holder_of(const char *dev, char *out, size_t len)
{
    char want[PATH_MAX], path[64], link[PATH_MAX];
    DIR *proc, *fds;
    struct dirent *p, *f;

    out[0] = '\0';
    if (realpath(dev, want) == NULL || (proc = opendir("/proc")) == NULL)
        return;
    while (out[0] == '\0' && (p = readdir(proc)) != NULL) {
        long pid = strtol(p->d_name, NULL, 10);

        if (pid <= 0 || pid == (long)getpid())
            continue;
        snprintf(path, sizeof path, "/proc/%ld/fd", pid);
        if ((fds = opendir(path)) == NULL)
            continue; /* gone, or not ours to look at */
        while ((f = readdir(fds)) != NULL) {
            char fd_path[sizeof path + sizeof f->d_name + 2];
            ssize_t n;

            snprintf(fd_path, sizeof fd_path, "%s/%s", path, f->d_name);
            n = readlink(fd_path, link, sizeof link - 1);
            if (n <= 0)
                continue;
            link[n] = '\0';
            if (strcmp(link, want) == 0) {
                char comm[64] = "?";
                FILE *c;

                snprintf(fd_path, sizeof fd_path, "/proc/%ld/comm", pid);
                if ((c = fopen(fd_path, "r")) != NULL) {
                    if (fgets(comm, sizeof comm, c) != NULL)
                        comm[strcspn(comm, "\n")] = '\0';
                    fclose(c);
                }
                snprintf(out, len, "process %ld (%s)", pid, comm);
                break;
            }
        }
        closedir(fds);
    }
    closedir(proc);
}

static int port_taken(const char *dev, char *why, size_t why_len)
{
    char who[128];

    holder_of(dev, who, sizeof who);
    snprintf(why, why_len,
             "serial port %s is in use by %s: two programs on one line garble each other's "
             "frames; fix: stop it (or give the gateway another port)",
             dev, who[0] != '\0' ? who : "another program (not visible to this user)");
    return -1;
}

static int open_failed(const char *dev, int err, char *why, size_t why_len)
{
    struct stat st;

    if (err == ENOENT || err == ENXIO || err == ENODEV) {
        snprintf(why, why_len,
                 "serial port %s: %s: is the adapter plugged in? (ls /dev/serial/by-id/ lists "
                 "them; the gateway keeps trying)",
                 dev, strerror(err));
    } else if ((err == EACCES || err == EPERM) && stat(dev, &st) == 0 &&
               (st.st_mode & 060) != 060) {
        /* Not even its group may use it: a group to join would not help. */
        snprintf(why, why_len,
                 "serial port %s: %s: the port is mode %03o, so only its owner (uid %lu) may "
                 "use it; fix: a udev rule that gives it to the group dialout with mode 0660 "
                 "(GROUP=\"dialout\", MODE=\"0660\"), and the gateway's user in that group",
                 dev, strerror(err), (unsigned)st.st_mode & 0777u, (unsigned long)st.st_uid);
    } else if (err == EACCES || err == EPERM) {
        /* Serial ports belong to the group dialout on Debian; name the port's own. */
        char group[64] = "dialout";

        if (stat(dev, &st) == 0) {
            struct group *g = getgrgid(st.st_gid);

            if (g != NULL)
                snprintf(group, sizeof group, "%.*s", (int)sizeof group - 1, g->gr_name);
        }
        snprintf(why, why_len,
                 "serial port %s: %s: the gateway's user may not use it; fix: add the user to "
                 "the port's group %s (usermod -aG %s USER, then restart the gateway), or "
                 "SupplementaryGroups=%s in its systemd unit",
                 dev, strerror(err), group, group, group);
    } else if (err == EBUSY) {
        return port_taken(dev, why, why_len);
    } else {
        snprintf(why, why_len, "serial port %s: cannot open it: %s", dev, strerror(err));
    }
    return -1;
}

/*
 * The fix for settings the port refused.  Linux pseudo-terminals (major
 * numbers 136 to 143: socat's, a virtual port's) have no parity bit.
 */
static const char *format_fix(int fd, const struct gw_serial_target *t)
{
    struct stat st;

    if (t->parity != 'N' && fstat(fd, &st) == 0 && major(st.st_rdev) >= 136 &&
        major(st.st_rdev) <= 143)
        return "this is a pseudo-terminal, which has no parity: write the format with N (e.g. "
               "8N1) on both ends";
    return "a rate and format the adapter supports, the same as the devices'";
}

/* termios for t: raw 8-bit characters, t's rate, parity and stop bits, no flow control. */
static int set_line(int fd, const struct gw_serial_target *t, char *why, size_t why_len)
{
    struct termios tio, back;
    unsigned long code;
    speed_t speed;

    if (gw_serial_rate_code(t->baud, &code) != 0) {
        snprintf(why, why_len, "serial port %s: %u baud is not a rate of <termios.h>", t->device,
                 t->baud);
        return -1;
    }
    speed = (speed_t)code;
    if (tcgetattr(fd, &tio) != 0) {
        snprintf(why, why_len,
                 "%s is not a serial port (%s); fix: name the serial device, e.g. /dev/ttyUSB0 or "
                 "/dev/serial/by-id/...",
                 t->device, strerror(errno));
        return -1;
    }
    cfmakeraw(&tio);
    tio.c_cflag &= ~(tcflag_t)(CSIZE | PARENB | PARODD | CSTOPB);
#ifdef CRTSCTS
    tio.c_cflag &= ~(tcflag_t)CRTSCTS;
#endif
    tio.c_cflag |= CS8 | CLOCAL | CREAD;
    if (t->parity != 'N')
        tio.c_cflag |= PARENB | (t->parity == 'O' ? PARODD : 0);
    if (t->stop_bits == 2)
        tio.c_cflag |= CSTOPB;
    tio.c_iflag &= ~(tcflag_t)(IXON | IXOFF | IXANY | INPCK);
    /*
     * VMIN 1: a read with nothing to read fails with EAGAIN (the port is
     * non-blocking), so that a read of 0 bytes means a hang-up.
     */
    tio.c_cc[VMIN] = 1;
    tio.c_cc[VTIME] = 0;
    if (cfsetispeed(&tio, speed) != 0 || cfsetospeed(&tio, speed) != 0 ||
        tcsetattr(fd, TCSANOW, &tio) != 0) {
        snprintf(why, why_len, "serial port %s refuses %u baud %u%c%u (%s); fix: %s", t->device,
                 t->baud, t->data_bits, t->parity, t->stop_bits, strerror(errno),
                 format_fix(fd, t));
        return -1;
    }
    /* Some drivers take what they cannot do without an error: read it back. */
    if (tcgetattr(fd, &back) != 0 || cfgetospeed(&back) != speed ||
        (back.c_cflag & (CSIZE | PARENB | PARODD | CSTOPB)) !=
            (tio.c_cflag & (CSIZE | PARENB | PARODD | CSTOPB))) {
        snprintf(why, why_len,
                 "serial port %s did not take %u baud %u%c%u (it reports other settings); fix: %s",
                 t->device, t->baud, t->data_bits, t->parity, t->stop_bits, format_fix(fd, t));
        return -1;
    }
    return 0;
}

/* RS-485 mode as t asks; 0, or -1 with why (rs485=required on a port without it). */
static int set_rs485(int fd, const struct gw_serial_target *t, char *note, size_t note_len,
                     char *why, size_t why_len)
{
    int err = ENOTTY;

    if (t->rs485 == GW_RS485_OFF)
        return 0;
#if defined(__linux__) && defined(TIOCSRS485)
    {
        struct serial_rs485 rs;

        memset(&rs, 0, sizeof rs);
        rs.flags = SER_RS485_ENABLED | SER_RS485_RTS_ON_SEND;
        if (ioctl(fd, TIOCSRS485, &rs) == 0)
            return 0;
        err = errno;
    }
#else
    (void)fd;
#endif
    if (t->rs485 == GW_RS485_REQUIRED) {
        snprintf(why, why_len,
                 "serial port %s has no RS-485 mode (TIOCSRS485: %s) and rs485=required; fix: "
                 "rs485=yes to go on without it (most USB RS-485 adapters switch direction "
                 "themselves), or a port with RS-485 mode",
                 t->device, strerror(err));
        return -1;
    }
    snprintf(note, note_len,
             "serial port %s has no RS-485 mode (TIOCSRS485: %s): going on without it, as "
             "rs485=yes allows (most USB RS-485 adapters switch direction themselves)",
             t->device, strerror(err));
    return 0;
}

int gw_serial_port_open(const struct gw_serial_target *t, int *fd_out, char *note, size_t note_len,
                        char *why, size_t why_len)
{
    int fd = open(t->device, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);

    note[0] = '\0';
    if (fd < 0)
        return open_failed(t->device, errno, why, why_len);
    if (!isatty(fd)) {
        snprintf(why, why_len,
                 "%s is not a serial port; fix: name the serial device, e.g. /dev/ttyUSB0 or "
                 "/dev/serial/by-id/...",
                 t->device);
        close(fd);
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int err = errno;

        close(fd);
        if (err == EWOULDBLOCK)
            return port_taken(t->device, why, why_len);
        snprintf(why, why_len, "serial port %s: cannot lock it: %s", t->device, strerror(err));
        return -1;
    }
    if (ioctl(fd, TIOCEXCL) != 0) {
        snprintf(why, why_len, "serial port %s: TIOCEXCL: %s", t->device, strerror(errno));
        close(fd);
        return -1;
    }
    if (set_line(fd, t, why, why_len) != 0 || set_rs485(fd, t, note, note_len, why, why_len) != 0) {
        gw_serial_port_release(fd);
        close(fd);
        return -1;
    }
    (void)tcflush(fd, TCIOFLUSH);
    *fd_out = fd;
    return 0;
}

void gw_serial_port_release(int fd)
{
    (void)ioctl(fd, TIOCNXCL);
}
