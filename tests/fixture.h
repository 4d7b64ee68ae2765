/* SPDX-License-Identifier: ISC */
/*
 * fixture.h - what the suites that run whole handshakes (session in
 * memory, conn and modbus over loopback TCP) share: a master and a slave
 * that know each other, a plain TCP client, and counts of /proc entries.
 *
 * Unlike testutil.h these helpers use Check (a step that fails fails the
 * test at once) and the mbsc API, so only those suites link fixture.c.
 */
#ifndef MBSC_TEST_FIXTURE_H
#define MBSC_TEST_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "mbsc.h"

/*
 * Fresh keys for a master and a slave; the slave's allow-list names the
 * master, the master's config holds the slave's public key.
 */
struct tu_peers {
    mbsc_keypair master_kp, slave_kp;
    mbsc_allowlist *allow; /* the master's public key, name and role */
    mbsc_config *mcfg;     /* MBSC_ROLE_MASTER: master_kp, slave's public key */
    mbsc_config *scfg;     /* MBSC_ROLE_SLAVE: slave_kp, allow */
};

/*
 * Fill p (every field is overwritten).  master_role may be NULL, as in
 * mbsc_allowlist_add(); ciphers, when not NULL, is set on the master's
 * config (mbsc_config_set_ciphers), else both offer every cipher.
 */
void tu_peers_setup(struct tu_peers *p, const char *master_name, const char *master_role,
                    const char *ciphers);

/* Free the configs and the allow-list, wipe the key pairs. */
void tu_peers_teardown(struct tu_peers *p);

/* Handshake message 1 of a fresh session on mcfg, as it goes on the wire. */
size_t tu_message1(const mbsc_config *mcfg, uint8_t *buf, size_t cap);

/* A plain blocking TCP client (no mbsc) to "HOST:PORT"; -1 on failure.  Safe in threads. */
int tu_raw_connect(const char *addr);

/*
 * A master driven by hand on a socket, so that a test can hold it between
 * the slave's message 2 and its own confirming frame (to reload the slave
 * in between, say).  The test owns the loop: a slave in the test's own
 * thread is stepped between tu_hand_read() calls.
 */
struct tu_hand {
    int fd;
    mbsc_session *s; /* on the master's config */
};

/* Take the connected socket fd and send message 1 of a fresh session on mcfg. */
void tu_hand_start(struct tu_hand *h, const mbsc_config *mcfg, int fd);

/*
 * Wait up to timeout_ms for bytes from the slave and feed them to the
 * session: 1 when some came, 0 when none did, -1 when the slave closed
 * the connection (or reset it).  A session error fails the test.
 */
int tu_hand_read(struct tu_hand *h, int timeout_ms);

/*
 * Once established: queue payload (len bytes, or nothing if len is 0) and
 * send everything the session has queued, the confirming keep-alive first.
 */
void tu_hand_send(struct tu_hand *h, const uint8_t *payload, size_t len);

/* The next payload that has opened, copied to buf: its length, or -1 if none waits. */
long tu_hand_payload(struct tu_hand *h, uint8_t *buf, size_t cap);

/* Close the socket and free the session. */
void tu_hand_close(struct tu_hand *h);

/*
 * Entries of a /proc directory ("/proc/self/fd", "/proc/self/task"),
 * without the descriptor that reading /proc/self/fd opens itself.
 */
long tu_count_dir(const char *path);

/*
 * Raise RLIMIT_NOFILE to FD_SETSIZE + 64, so that a test can use up every
 * descriptor below FD_SETSIZE.  0 if the hard limit does not allow it (a
 * line that prog skips the test is printed then), else 1.
 */
int tu_fds_past_setsize(const char *prog);

#endif /* MBSC_TEST_FIXTURE_H */
