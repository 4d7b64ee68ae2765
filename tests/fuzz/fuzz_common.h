/* SPDX-License-Identifier: ISC */
/*
 * fuzz_common.h - what the libFuzzer targets in tests/fuzz/ share: an input
 * cursor, the fixed keys of the mbsc/1 protocol vectors, sessions built
 * from them, moving bytes between sessions, and the assertion that turns a
 * broken property into a crash libFuzzer reports.
 *
 * Keys: tests/vectors/mbsc1/protocol_vectors.json, "handshakes" (static and
 * ephemeral keys of both sides, PSK of zeros).  With the ephemeral keys
 * fixed (libmbsc-testing), our sessions send exactly the vectors' handshake
 * frames, so the seed corpora (those frames) start the fuzzers at the end
 * of a valid handshake.
 */
#ifndef MBSC_FUZZ_COMMON_H
#define MBSC_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "mbsc.h"

/* A property that must hold for every input: abort (libFuzzer: a crash). */
#define FUZZ_ASSERT(cond, ...)                                                                     \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: property violated: %s: ", __FILE__, __LINE__, #cond);          \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* A harness fault (not a finding about the input): abort as well. */
#define FUZZ_CHECK(cond) FUZZ_ASSERT(cond, "harness setup failed")

/* Reading the input as a script: bytes run out as zeros. */
struct fuzz_in {
    const uint8_t *p;
    size_t n;
};
uint8_t fuzz_byte(struct fuzz_in *in);
uint16_t fuzz_u16(struct fuzz_in *in);
/* Up to want bytes (fewer at the end); *len gets how many. */
const uint8_t *fuzz_take(struct fuzz_in *in, size_t want, size_t *len);

/* The vectors' keys (hex decoded once, by fuzz_init). */
struct fuzz_keys {
    mbsc_keypair master, slave, stranger; /* stranger: in no allow-list */
    uint8_t master_e[32], slave_e[32];
    mbsc_allowlist *allow; /* the master only, named "master" */
};
extern struct fuzz_keys fuzz_keys;

/* Call once (LLVMFuzzerInitialize): sodium_init, keys. */
void fuzz_init(void);

/* Decode hex into out (exactly cap bytes), or abort. */
void fuzz_hex(uint8_t *out, size_t cap, const char *hex);

/* Configs from the vectors' keys; ciphers NULL keeps the default policy. */
mbsc_config *fuzz_master_config(const unsigned *ciphers, size_t n);
mbsc_config *fuzz_slave_config(const unsigned *ciphers, size_t n);

/* A session with the vectors' fixed ephemeral key for its role. */
mbsc_session *fuzz_session(const mbsc_config *cfg);

/*
 * Feed len bytes to s, taking every payload it opens (copied to
 * got/got_len when got is not NULL, up to cap payloads of up to
 * MBSC_MAX_PAYLOAD bytes each, with *ngot counting them).  Returns the
 * first error of feed or recv, or MBSC_OK.
 */
struct fuzz_payload {
    uint8_t data[MBSC_MAX_PAYLOAD];
    size_t len;
};
int fuzz_feed(mbsc_session *s, const uint8_t *in, size_t len, struct fuzz_payload *got, size_t cap,
              size_t *ngot);

/* Move all of a's output to b (payloads b opens are dropped); b's result. */
int fuzz_pump(mbsc_session *a, mbsc_session *b);

/* Run the handshake between m and s, both directions, to the end. */
void fuzz_handshake(mbsc_session *m, mbsc_session *s);

/* Take all of s's output: a pointer to it and its length. */
const uint8_t *fuzz_output(mbsc_session *s, size_t *len);

/* Number of whole frames in buf[0..len), or -1 if it is not whole frames. */
long fuzz_count_frames(const uint8_t *buf, size_t len);

#endif /* MBSC_FUZZ_COMMON_H */
