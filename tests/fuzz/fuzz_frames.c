/* SPDX-License-Identifier: ISC */
/*
 * fuzz_frames.c - established sessions of each cipher, fed arbitrary and
 * mutated frames in both directions, across a rekey and at the end of the
 * frame counter.
 *
 * Input byte 0: the cipher (1 + (b & 3)); bits 2-3 where both directions'
 * frame counters start: 0, a few frames before the first rekey (65536), a
 * few frames before the counter's end (2^64 - 1, where sealing must stop),
 * or one direction each.  Byte 1 adds 0..3 to how close that is.  The
 * counters are set on both ends of each direction through
 * libmbsc-testing (mbsc_session_set_counters_for_testing), as if that many
 * frames had passed: no test could wait for 2^64 of them.
 *
 * Then a script of operations, one input byte each plus arguments: seal a
 * payload (master or slave, length and bytes from the input), deliver some
 * or all pending bytes of a direction, flip a bit, delete or insert bytes,
 * re-inject any frame sealed earlier in that direction (replay), swap the
 * two next pending frames (reordering).
 *
 * Properties (docs/design.md "Transport"):
 *   - the payloads a side delivers are always a prefix of the payloads its
 *     peer sealed, byte for byte: no forgery, replay or reordering passes;
 *   - a direction whose bytes were never changed delivers every payload
 *     sealed in it, and its receiver does not fail;
 *   - sealing succeeds exactly until the frame counter reaches 2^64 - 1,
 *     and fails there with MBSC_ERR_COUNTER_EXHAUSTED;
 *   - a failed session stays failed with the same error.
 *
 * The mutant check (make fuzz-mutant, CI) builds this target against a
 * record layer whose tag comparison is disabled (MBSC_FUZZ_MUTANT_NO_TAG_CHECK,
 * src/record/record.c): it must then find a forgery within seconds.
 */
#include <string.h>

#include "fuzz_common.h"
#include "session/session_internal.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FRAMES 48
#define CHAN_CAP   (MAX_FRAMES * 2 * (MBSC_FRAME_HEADER_BYTES + MBSC_MAX_FRAME_BODY))
#define MAX_OPS    96

struct direction {
    const char *name;
    mbsc_session *from, *to;
    uint64_t counter;     /* next frame index of the sender */
    int sender_exhausted; /* sealing refused at 2^64 - 1 (the sender is failed) */
    int changed;          /* bytes on the way were altered */
    int receiver_failed;
    struct fuzz_payload sent[MAX_FRAMES];
    size_t n_sent;
    struct fuzz_payload got[MAX_FRAMES];
    size_t n_got;
    uint8_t frames[MAX_FRAMES][MBSC_FRAME_HEADER_BYTES + MBSC_MAX_FRAME_BODY];
    size_t frame_len[MAX_FRAMES];
    uint8_t chan[CHAN_CAP]; /* bytes on the way: [start, end) */
    size_t start, end;
};

static struct direction dirs[2];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_init();
    return 0;
}

static uint64_t start_counter(unsigned where, unsigned extra)
{
    switch (where) {
    case 1: return MBSC_REKEY_AFTER_FRAMES - 1 - extra; /* 1..4 frames before the rekey */
    case 2: return UINT64_MAX - 1 - extra;              /* 1..4 frames before the end */
    default: return 0;
    }
}

static void check_prefix(const struct direction *d)
{
    size_t i;

    FUZZ_ASSERT(d->n_got <= d->n_sent,
                "%s: %zu payloads delivered, only %zu sealed: forgery, replay or reordering "
                "passed",
                d->name, d->n_got, d->n_sent);
    for (i = 0; i < d->n_got; i++)
        FUZZ_ASSERT(d->got[i].len == d->sent[i].len &&
                        memcmp(d->got[i].data, d->sent[i].data, d->got[i].len) == 0,
                    "%s: payload %zu delivered (%zu bytes) is not the one sealed (%zu bytes): "
                    "forgery, replay or reordering passed",
                    d->name, i, d->got[i].len, d->sent[i].len);
}

/* Feed up to n pending bytes (0: all) to the receiver. */
static void deliver(struct direction *d, size_t n)
{
    size_t pending = d->end - d->start, before = d->n_got, got = d->n_got;
    int rc, err_before = mbsc_session_error(d->to);

    if (n == 0 || n > pending)
        n = pending;
    if (n == 0)
        return;
    rc = fuzz_feed(d->to, d->chan + d->start, n, d->got, MAX_FRAMES, &got);
    d->start += n;
    FUZZ_CHECK(got <= MAX_FRAMES);
    d->n_got = got;
    if (err_before != MBSC_OK) {
        FUZZ_ASSERT(rc == err_before && got == before,
                    "%s: failed receiver (%d) answered %d / delivered more", d->name, err_before,
                    rc);
    }
    if (rc != MBSC_OK) {
        d->receiver_failed = 1;
        FUZZ_ASSERT(mbsc_session_error(d->to) == rc, "%s: error %d not sticky (%d)", d->name, rc,
                    mbsc_session_error(d->to));
    }
    check_prefix(d);
}

static void seal(struct direction *d, struct fuzz_in *in, int big)
{
    size_t len = big ? fuzz_u16(in) % (MBSC_MAX_PAYLOAD + 1) : fuzz_byte(in), got = 0, out_len;
    const uint8_t *bytes = fuzz_take(in, len, &got), *out;
    struct fuzz_payload *p;
    int rc;

    if (d->n_sent >= MAX_FRAMES || mbsc_session_error(d->from) != MBSC_OK)
        return;
    p = &d->sent[d->n_sent];
    memset(p->data, 0, len);
    memcpy(p->data, bytes, got);
    p->len = len;
    rc = mbsc_session_send(d->from, p->data, len);
    if (d->counter == UINT64_MAX) {
        FUZZ_ASSERT(rc == MBSC_ERR_COUNTER_EXHAUSTED,
                    "%s: sealing frame 2^64 - 1 gave %d, not COUNTER_EXHAUSTED", d->name, rc);
        d->sender_exhausted = 1;
        return;
    }
    FUZZ_ASSERT(rc == MBSC_OK, "%s: sealing frame %llu failed: %d", d->name,
                (unsigned long long)d->counter, rc);
    d->counter++;
    out = mbsc_session_output(d->from, &out_len);
    FUZZ_ASSERT(out_len == len + MBSC_FRAME_OVERHEAD, "%s: frame of %zu bytes for %zu", d->name,
                out_len, len);
    FUZZ_CHECK(d->end + out_len <= CHAN_CAP);
    memcpy(d->frames[d->n_sent], out, out_len);
    d->frame_len[d->n_sent] = out_len;
    memcpy(d->chan + d->end, out, out_len);
    d->end += out_len;
    mbsc_session_output_consumed(d->from, out_len);
    d->n_sent++;
}

/* Length of the pending frame at offset off, or 0 if it is not whole. */
static size_t frame_at(const struct direction *d, size_t off)
{
    size_t body;

    if (d->end - off < MBSC_FRAME_HEADER_BYTES)
        return 0;
    body = (size_t)d->chan[off] << 8 | d->chan[off + 1];
    return d->end - off - MBSC_FRAME_HEADER_BYTES < body ? 0 : MBSC_FRAME_HEADER_BYTES + body;
}

static void insert(struct direction *d, size_t pos, const uint8_t *bytes, size_t n)
{
    if (n == 0 || d->end + n > CHAN_CAP)
        return;
    memmove(d->chan + pos + n, d->chan + pos, d->end - pos);
    memcpy(d->chan + pos, bytes, n);
    d->end += n;
    d->changed = 1;
}

static void mutate(struct direction *d, struct fuzz_in *in)
{
    uint8_t how = fuzz_byte(in);
    size_t pending = d->end - d->start, pos = d->start + (pending ? fuzz_u16(in) % pending : 0);

    switch (how % 5) {
    case 0: /* flip one bit */
        if (pending == 0)
            return;
        d->chan[pos] ^= (uint8_t)(1u << (how >> 5));
        d->changed = 1;
        break;
    case 1: { /* delete bytes */
        size_t n = 1 + (how >> 3) % 16;
        if (pending == 0)
            return;
        if (n > d->end - pos)
            n = d->end - pos;
        memmove(d->chan + pos, d->chan + pos + n, d->end - pos - n);
        d->end -= n;
        d->changed = 1;
        break;
    }
    case 2: { /* insert arbitrary bytes */
        size_t n;
        const uint8_t *b = fuzz_take(in, 1 + (how >> 3) % 32, &n);
        insert(d, pending ? pos : d->end, b, n);
        break;
    }
    case 3: { /* replay any frame sealed so far, at a frame boundary or anywhere */
        size_t k;
        if (d->n_sent == 0)
            return;
        k = (how >> 3) % d->n_sent;
        insert(d, (how & 4) ? d->end : d->start, d->frames[k], d->frame_len[k]);
        break;
    }
    default: { /* swap the next two pending frames */
        uint8_t tmp[MBSC_FRAME_HEADER_BYTES + MBSC_MAX_FRAME_BODY];
        size_t a = frame_at(d, d->start), b = a ? frame_at(d, d->start + a) : 0;
        if (a == 0 || b == 0)
            return;
        memcpy(tmp, d->chan + d->start, a);
        memmove(d->chan + d->start, d->chan + d->start + a, b);
        memcpy(d->chan + d->start + b, tmp, a);
        d->changed |= a != b || memcmp(d->chan + d->start, d->chan + d->start + b, a) != 0;
        break;
    }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_in in = {data, size};
    uint8_t b0 = fuzz_byte(&in), b1 = fuzz_byte(&in);
    unsigned id = 1u + (b0 & 3u), where = (b0 >> 2) & 3u, ops = 0, i;
    uint64_t c_m2s, c_s2m;
    mbsc_config *mc = fuzz_master_config(&id, 1), *sc = fuzz_slave_config(&id, 1);
    mbsc_session *m, *s;

    /* Payloads of every size up to 4080 bytes, not only Modbus ADUs. */
    FUZZ_CHECK(mbsc_config_set_max_payload(mc, MBSC_MAX_PAYLOAD) == MBSC_OK &&
               mbsc_config_set_max_payload(sc, MBSC_MAX_PAYLOAD) == MBSC_OK);
    m = fuzz_session(mc);
    s = fuzz_session(sc);

    fuzz_handshake(m, s);
    FUZZ_CHECK(mbsc_cipher_id(mbsc_session_cipher(m)) == id &&
               mbsc_cipher_id(mbsc_session_cipher(s)) == id);
    c_m2s = start_counter(where == 3 ? 1 : where, b1 & 3u);
    c_s2m = start_counter(where == 3 ? 2 : where, (b1 >> 2) & 3u);
    FUZZ_CHECK(mbsc_session_set_counters_for_testing(m, c_m2s, c_s2m) == MBSC_OK);
    FUZZ_CHECK(mbsc_session_set_counters_for_testing(s, c_s2m, c_m2s) == MBSC_OK);

    memset(dirs, 0, sizeof dirs);
    dirs[0] = (struct direction){.name = "master to slave", .from = m, .to = s, .counter = c_m2s};
    dirs[1] = (struct direction){.name = "slave to master", .from = s, .to = m, .counter = c_s2m};

    while (in.n > 0 && ops++ < MAX_OPS) {
        uint8_t op = fuzz_byte(&in);
        struct direction *d = &dirs[op >> 7];

        switch (op & 7) {
        case 0:
        case 1:
        case 2: seal(d, &in, (op & 7) == 2); break;
        case 3:
        case 4: deliver(d, (op & 7) == 4 ? 0 : fuzz_u16(&in) % 8192); break;
        default: mutate(d, &in); break;
        }
    }
    /* Everything still on the way arrives. */
    for (i = 0; i < 2; i++)
        deliver(&dirs[i], 0);
    for (i = 0; i < 2; i++) {
        struct direction *d = &dirs[i];
        /* A receiver that failed because its own sealing hit the end of
         * the counter is not the channel's fault. */
        int receiver_exhausted = dirs[1 - i].sender_exhausted;
        check_prefix(d);
        if (!d->changed && !receiver_exhausted) {
            FUZZ_ASSERT(!d->receiver_failed, "%s: unaltered frames failed (error %d)", d->name,
                        mbsc_session_error(d->to));
            FUZZ_ASSERT(d->n_got == d->n_sent, "%s: %zu of %zu unaltered payloads delivered",
                        d->name, d->n_got, d->n_sent);
        }
    }
    mbsc_session_free(m);
    mbsc_session_free(s);
    mbsc_config_free(mc);
    mbsc_config_free(sc);
    return 0;
}
