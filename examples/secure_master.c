/* SPDX-License-Identifier: ISC */
/*
 * secure_master - a Modbus/TCP master (client) that talks to a slave
 * through the mbsc secure channel, with plain libmodbus calls.
 *
 *   secure_master --connect HOST:PORT --key FILE --peer FILE [--psk FILE]
 *                 [--cipher NAME | --ciphers LIST] [-a|--unit ID] [--timeout MS]
 *                 [--json | --csv] [--format FMT] [-B] [-v] ACTION...
 *   secure_master --connect ... [-a ID] [-t T[:FMT]] [-r REF] [-c N] [-1] [-l MS]
 *
 * mbsc_modbus_connect() runs the handshake and returns an ordinary
 * modbus_t; every action below is then a normal libmodbus call on it.  The
 * actions run in the order given, on one connection; a --poll keeps going
 * through exceptions, timeouts and lost connections (master_poll.c), and
 * mbpoll's short options describe such a poll in mbpoll's way
 * (master_options.c).
 *
 * Output: reads (and each read of --poll) print "ADDR: V1 V2 ..." on
 * stdout, in the chosen value format (master_values.c); --poll then prints
 * its counts and "rtt_us min=.. median=.. p99=.. max=.."; --json prints one
 * JSON object per result line instead, --csv one CSV row, and a poll's
 * failed reads and reconnections are records too (master_output.c).
 * stderr gets the negotiated cipher, with -v the transport the libmodbus
 * context uses and why (the synchronous one, or the pump: see
 * <mbsc/modbus.h>) and what each request does, in text a poll's errors,
 * and on failure a line "secure_master: <reason>".
 *
 * Addresses are the 0-based protocol addresses of the Modbus Application
 * Protocol, as on the wire; the 1-based reference numbers of device manuals
 * (holding register 0 = 40001) are only shown, in --help and with -v.
 *
 * Exit status: 0 success, 1 failure (keys, network, handshake, Modbus
 * exception, timeout, a poll with a failed read), 2 bad command line.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mbsc.h>
#include <mbsc/modbus.h>

#include "common.h"
#include "master.h"

/* ---- Connecting ----------------------------------------------------------- */

static mbsc_config *make_config(const struct options *o)
{
    char why[EX_WHY_SIZE];
    uint8_t peer[MBSC_KEY_BYTES];
    mbsc_config *cfg = ex_config_new(MBSC_ROLE_MASTER, o->key, o->psk);

    if (cfg == NULL)
        return NULL;
    if (mbsc_public_key_load(peer, o->peer, why, sizeof why) != MBSC_OK) {
        ex_msg("%s", why);
        goto fail;
    }
    if (mbsc_config_set_peer_public_key(cfg, peer) != MBSC_OK) {
        ex_msg("%s: cannot use this public key", o->peer);
        goto fail;
    }
    if (o->ciphers != NULL && mbsc_config_set_ciphers(cfg, o->ciphers) != MBSC_OK) {
        ex_msg("cipher list '%s' rejected by the library", o->ciphers);
        goto fail;
    }
    return cfg;
fail:
    mbsc_config_free(cfg);
    return NULL;
}

/* ---- One-shot actions ------------------------------------------------------ */

/* A failed read or write: the error record (JSON, CSV) and one line on stderr. */
static int action_failed(struct options *o, struct master_link *l, const struct action *a,
                         const struct mo_result *r, int saved_errno)
{
    struct mo_error e;

    master_link_failure(l, saved_errno, &e);
    if (o->out.format != MO_TEXT)
        mo_print_error(&o->out, r, &e);
    ex_msg("%s %s: %s", a->option, a->arg, e.message);
    return EX_FAILURE;
}

static int run_action(struct options *o, struct master_link *l, const struct action *a)
{
    uint16_t regs[MAX_READ_REGISTERS];
    uint8_t bits[MAX_READ_BITS];
    int addr = (int)a->addr, count = (int)a->count, rc;
    modbus_t *ctx = l->ctx;
    struct mo_result r;
    uint64_t t0;

    if (a->kind == ACT_POLL)
        return master_run_poll(o, l, a);
    master_describe(o, a, &r);
    if (ctx == NULL) {
        /* A poll before this one ended without a connection: one more try. */
        struct mo_error e;

        if (master_link_open(l, &e) != 0) {
            if (o->out.format != MO_TEXT)
                mo_print_error(&o->out, &r, &e);
            ex_msg("%s %s: %s", a->option, a->arg, e.message);
            return EX_FAILURE;
        }
        ctx = l->ctx;
    }
    t0 = master_now_ns();
    switch (a->kind) {
    case ACT_WRITE_REGISTERS:
        rc = modbus_write_registers(ctx, addr, count, a->values.regs);
        r.regs = a->values.regs;
        break;
    case ACT_WRITE_REGISTER:
        rc = modbus_write_register(ctx, addr, a->values.regs[0]);
        r.regs = a->values.regs;
        break;
    case ACT_WRITE_COILS:
        rc = modbus_write_bits(ctx, addr, count, a->values.bits);
        r.bits = a->values.bits;
        break;
    case ACT_WRITE_COIL:
        rc = modbus_write_bit(ctx, addr, a->values.bits[0]);
        r.bits = a->values.bits;
        break;
    case ACT_READ_REGISTERS:
        rc = modbus_read_registers(ctx, addr, count, regs);
        r.regs = regs;
        break;
    case ACT_READ_INPUT:
        rc = modbus_read_input_registers(ctx, addr, count, regs);
        r.regs = regs;
        break;
    case ACT_READ_COILS:
        rc = modbus_read_bits(ctx, addr, count, bits);
        r.bits = bits;
        break;
    case ACT_READ_DISCRETE:
    default:
        rc = modbus_read_input_bits(ctx, addr, count, bits);
        r.bits = bits;
        break;
    }
    r.rtt_us = master_elapsed_us(t0);
    /* libmodbus returns the number of items (1 for FC5/FC6), or -1 with errno set. */
    if (rc != count)
        return action_failed(o, l, a, &r, rc < 0 ? errno : EMBBADDATA);
    l->answered++;
    master_say_request(o, &r);
    mo_print_result(&o->out, &r);
    return EX_OK;
}

static int run(struct options *o, const mbsc_config *cfg)
{
    struct master_link l;
    struct mo_error e;
    const mbsc_cipher *cipher;
    char why[EX_WHY_SIZE];
    size_t i;
    int rc = EX_OK;
    uint64_t t0 = master_now_ns();

    memset(&l, 0, sizeof l);
    l.o = o;
    l.cfg = cfg;
    /* The first connection decides: a wrong key or address ends the program
     * at once; only a poll, once running, lives through failures. */
    if (master_link_open(&l, &e) != 0) {
        ex_msg("%s", e.message);
        return EX_FAILURE;
    }
    cipher = mbsc_modbus_cipher(l.ctx);
    ex_msg("connected to %s, cipher %s", o->connect,
           cipher != NULL ? mbsc_cipher_name(cipher) : "?");
    if (o->verbose) {
        ex_msg("connect and handshake took %lu us; unit %lu, reply timeout %lu ms",
               (unsigned long)master_elapsed_us(t0), o->unit, o->timeout_ms);
        /* Why this path: the probe repeats the checks the connect just made. */
        (void)mbsc_modbus_probe_path(why, sizeof why);
        ex_msg("transport %s (%s)", mbsc_modbus_path_name(mbsc_modbus_path(l.ctx)), why);
    }

    master_catch_interrupts();
    for (i = 0; i < o->n_actions && rc == EX_OK; i++) {
        /* After an interrupt nothing more is sent; ending an open-ended
         * poll that way is its normal end (status 0). */
        if (master_interrupted) {
            if (i == 0 || o->actions[i - 1].kind != ACT_POLL || o->actions[i - 1].poll_count != 0) {
                ex_msg("interrupted before %s %s", o->actions[i].option, o->actions[i].arg);
                rc = EX_FAILURE;
            }
            break;
        }
        rc = run_action(o, &l, &o->actions[i]);
    }
    master_link_close(&l);
    return rc;
}

int main(int argc, char **argv)
{
    struct options o;
    mbsc_config *cfg;
    int rc;

    ex_set_prog(PROG);
    rc = master_parse_args(argc, argv, &o);
    if (rc >= 0) {
        free(o.actions);
        return rc;
    }
    ex_ignore_sigpipe();
    if (mbsc_init() != MBSC_OK) {
        ex_msg("%s", mbsc_strerror(MBSC_ERR_INIT));
        free(o.actions);
        return EX_FAILURE;
    }
    cfg = make_config(&o);
    rc = cfg != NULL ? run(&o, cfg) : EX_FAILURE;
    mbsc_config_free(cfg);
    free(o.actions);
    /* Results are only results if they reached their reader. */
    if (fflush(stdout) == EOF || ferror(stdout)) {
        if (rc == EX_OK)
            ex_msg("cannot write to standard output: %s", strerror(errno));
        rc = EX_FAILURE;
    }
    return rc;
}
