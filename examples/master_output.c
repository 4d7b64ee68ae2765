/* SPDX-License-Identifier: ISC */
/*
 * examples/master_output.c - secure_master's result lines (see
 * master_output.h).  Action names and time stamps are our own; messages,
 * which may hold a host name or a path, are escaped for JSON and quoted for
 * CSV.
 */
#include "master_output.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common.h"

/* Longest value as text: "-2147483648", a float with nine digits and an exponent. */
#define VALUE_TEXT_SIZE 32

const char *mo_table_name(enum mo_table t)
{
    switch (t) {
    case MO_COILS: return "coils";
    case MO_DISCRETE_INPUTS: return "discrete inputs";
    case MO_INPUT_REGISTERS: return "input registers";
    case MO_HOLDING_REGISTERS:
    default: return "holding registers";
    }
}

void mo_reference(char *buf, size_t len, enum mo_table table, unsigned addr, unsigned count,
                  unsigned offset)
{
    unsigned long last = (unsigned long)addr + (count > 0 ? count : 1u); /* 1-based */
    int six = last > 9999ul;

    snprintf(buf, len, "%u%0*lu", (unsigned)table, six ? 5 : 4, (unsigned long)addr + offset + 1ul);
}

const char *mo_error_kind_name(enum mo_error_kind kind)
{
    switch (kind) {
    case MO_ERR_EXCEPTION: return "exception";
    case MO_ERR_TIMEOUT: return "timeout";
    case MO_ERR_DISCONNECTED: return "disconnected";
    case MO_ERR_BAD_ANSWER: return "bad-answer";
    case MO_ERR_CONNECT:
    default: return "connect";
    }
}

/* UTC wall-clock time with milliseconds, ISO 8601: "2026-05-01T12:00:00.123Z". */
static void timestamp(char *buf, size_t len)
{
    struct timespec ts;
    struct tm tm;
    char secs[32];

    if (clock_gettime(CLOCK_REALTIME, &ts) != 0 || gmtime_r(&ts.tv_sec, &tm) == NULL ||
        strftime(secs, sizeof secs, "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
        snprintf(buf, len, "unknown");
        return;
    }
    snprintf(buf, len, "%s.%03ldZ", secs, ts.tv_nsec / 1000000L);
}

/* Registers read are shown in the chosen format; bits and written values as they are. */
static int formatted(const struct mo_result *r)
{
    return r->regs != NULL && !r->written;
}

unsigned mo_value_count(const struct mo_output *out, const struct mo_result *r)
{
    return formatted(r) ? r->count / mv_registers_per_value(out->values) : r->count;
}

static void value_text(char *buf, size_t len, const struct mo_output *out,
                       const struct mo_result *r, unsigned i, enum mv_syntax syntax)
{
    if (formatted(r))
        mv_format_value(buf, len, out->values, out->word_order, syntax, r->regs, i);
    else
        snprintf(buf, len, "%u", r->regs != NULL ? (unsigned)r->regs[i] : (r->bits[i] ? 1u : 0u));
}

/* s as a JSON string (RFC 8259, section 7): quotes, backslashes and controls escaped. */
static void json_string(const char *s)
{
    putchar('"');
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

/* s as a CSV field (RFC 4180): quoted, with its quotes doubled, when it needs it. */
static void csv_field(const char *s)
{
    if (strpbrk(s, ",\"\r\n") == NULL) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s != '\0'; s++) {
        if (*s == '"')
            putchar('"');
        putchar(*s);
    }
    putchar('"');
}

static void print_text(const struct mo_output *out, const struct mo_result *r)
{
    char v[VALUE_TEXT_SIZE];
    unsigned i, n = mo_value_count(out, r);

    if (r->written)
        return; /* writes print nothing in text mode: silence is success */
    printf("%u:", r->addr);
    for (i = 0; i < n; i++) {
        value_text(v, sizeof v, out, r, i, MV_TEXT);
        printf(" %s", v);
    }
    putchar('\n');
}

/* The members every record about a request opens with. */
static void json_head(const struct mo_result *r, const char *now)
{
    char ref[16];

    mo_reference(ref, sizeof ref, r->table, r->addr, r->count, 0);
    printf("{\"time\":\"%s\",\"action\":\"%s\",\"fc\":%u,\"unit\":%u,\"addr\":%u,"
           "\"ref\":\"%s\",\"count\":%u,",
           now, r->action, r->fc, r->unit, r->addr, ref, r->count);
    if (r->seq >= 0)
        printf("\"seq\":%ld,", r->seq);
}

static void print_json(const struct mo_output *out, const struct mo_result *r, const char *now)
{
    char v[VALUE_TEXT_SIZE];
    unsigned i, n = mo_value_count(out, r);

    json_head(r, now);
    printf("\"rtt_us\":%lu,", (unsigned long)r->rtt_us);
    if (formatted(r) && out->values != MV_UINT16) {
        /* The registers as they came too: nothing of the answer is lost. */
        printf("\"format\":\"%s\",", mv_format_name(out->values));
        if (mv_registers_per_value(out->values) == 2)
            printf("\"word_order\":\"%s\",",
                   out->word_order == MV_HIGH_WORD_FIRST ? "high-first" : "low-first");
        fputs("\"registers\":[", stdout);
        for (i = 0; i < r->count; i++)
            printf(i == 0 ? "%u" : ",%u", (unsigned)r->regs[i]);
        fputs("],", stdout);
    }
    printf("\"%s\":[", r->written ? "written" : "values");
    for (i = 0; i < n; i++) {
        value_text(v, sizeof v, out, r, i, MV_JSON);
        printf(i == 0 ? "%s" : ",%s", v);
    }
    fputs("]}\n", stdout);
}

static void csv_header(struct mo_output *out)
{
    unsigned i;

    if (out->header_done)
        return;
    fputs("time,action,fc,unit,addr,ref,count,seq,rtt_us", stdout);
    for (i = 0; i < out->csv_values; i++)
        printf(",v%u", i);
    /* After the values, so that v0 keeps its column of the earlier versions. */
    fputs(",error,exception,message\n", stdout);
    out->header_done = 1;
}

/* time,action,fc,unit,addr,ref,count,seq, of a request. */
static void csv_head(const struct mo_result *r, const char *now)
{
    char ref[16];

    mo_reference(ref, sizeof ref, r->table, r->addr, r->count, 0);
    printf("%s,%s,%u,%u,%u,%s,%u,", now, r->action, r->fc, r->unit, r->addr, ref, r->count);
    if (r->seq >= 0)
        printf("%ld", r->seq);
    putchar(',');
}

/* n value columns, of which the first have values; every row has the header's fields. */
static void csv_values(const struct mo_output *out, const struct mo_result *r, unsigned have)
{
    char v[VALUE_TEXT_SIZE];
    unsigned i;

    for (i = 0; i < out->csv_values; i++) {
        if (i < have) {
            value_text(v, sizeof v, out, r, i, MV_TEXT);
            printf(",%s", v);
        } else {
            putchar(',');
        }
    }
}

static void print_csv(struct mo_output *out, const struct mo_result *r, const char *now)
{
    csv_header(out);
    csv_head(r, now);
    printf("%lu", (unsigned long)r->rtt_us);
    csv_values(out, r, mo_value_count(out, r));
    fputs(",,,\n", stdout);
}

void mo_print_result(struct mo_output *out, const struct mo_result *r)
{
    char now[64];

    if (out->format == MO_TEXT) {
        print_text(out, r);
        return;
    }
    timestamp(now, sizeof now);
    if (out->format == MO_JSON)
        print_json(out, r, now);
    else
        print_csv(out, r, now);
}

void mo_print_error(struct mo_output *out, const struct mo_result *r, const struct mo_error *e)
{
    char now[64], code[8] = "";

    if (e->kind == MO_ERR_EXCEPTION)
        snprintf(code, sizeof code, "%u", e->exception);
    switch (out->format) {
    case MO_JSON:
        timestamp(now, sizeof now);
        json_head(r, now);
        printf("\"error\":\"%s\",", mo_error_kind_name(e->kind));
        if (code[0] != '\0')
            printf("\"exception\":%s,", code);
        fputs("\"message\":", stdout);
        json_string(e->message);
        fputs("}\n", stdout);
        break;
    case MO_CSV:
        timestamp(now, sizeof now);
        csv_header(out);
        csv_head(r, now);
        csv_values(out, r, 0);
        printf(",%s,%s,", mo_error_kind_name(e->kind), code);
        csv_field(e->message);
        putchar('\n');
        break;
    case MO_TEXT:
    default:
        ex_msg("read %ld of %s %u..%u: %s", r->seq, mo_table_name(r->table), r->addr,
               r->addr + r->count - 1, e->message);
        break;
    }
}

void mo_print_reconnected(struct mo_output *out, const char *address, const char *cipher,
                          unsigned long attempts)
{
    char now[64], line[512];

    snprintf(line, sizeof line, "reconnected to %s, cipher %s, after %lu attempt%s", address,
             cipher, attempts, attempts == 1 ? "" : "s");
    switch (out->format) {
    case MO_JSON:
        timestamp(now, sizeof now);
        printf("{\"time\":\"%s\",\"action\":\"reconnected\",\"connect\":", now);
        json_string(address);
        printf(",\"cipher\":\"%s\",\"attempts\":%lu}\n", cipher, attempts);
        break;
    case MO_CSV:
        timestamp(now, sizeof now);
        csv_header(out);
        printf("%s,reconnected,,,,,,,", now);
        csv_values(out, NULL, 0);
        fputs(",,,", stdout);
        csv_field(line);
        putchar('\n');
        break;
    case MO_TEXT:
    default: ex_msg("%s", line); break;
    }
}

static unsigned long errors_of(const struct mo_poll_stats *s)
{
    return s->reads - s->ok;
}

void mo_print_poll_summary(struct mo_output *out, const struct mo_result *poll,
                           const struct mo_poll_stats *s)
{
    char now[64];

    switch (out->format) {
    case MO_JSON:
        timestamp(now, sizeof now);
        printf("{\"time\":\"%s\",\"action\":\"poll-summary\",\"fc\":%u,\"unit\":%u,\"addr\":%u,"
               "\"count\":%u,\"reads\":%lu,\"ok\":%lu,\"errors\":%lu,\"exceptions\":%lu,"
               "\"timeouts\":%lu,\"disconnects\":%lu,\"bad_answers\":%lu,"
               "\"connect_failures\":%lu,\"reconnects\":%lu",
               now, poll->fc, poll->unit, poll->addr, poll->count, s->reads, s->ok, errors_of(s),
               s->exceptions, s->timeouts, s->disconnects, s->bad_answers, s->connect_failures,
               s->reconnects);
        if (s->ok > 0)
            printf(",\"rtt_us_min\":%lu,\"rtt_us_median\":%lu,\"rtt_us_p99\":%lu,"
                   "\"rtt_us_max\":%lu",
                   (unsigned long)s->rtt_min, (unsigned long)s->rtt_median,
                   (unsigned long)s->rtt_p99, (unsigned long)s->rtt_max);
        fputs("}\n", stdout);
        break;
    case MO_CSV:
        ex_msg("--poll %u:%u: %lu reads, %lu ok, %lu errors (%lu exceptions, %lu timeouts, "
               "%lu disconnects, %lu bad answers, %lu connect failures), %lu reconnects%s",
               poll->addr, poll->count, s->reads, s->ok, errors_of(s), s->exceptions, s->timeouts,
               s->disconnects, s->bad_answers, s->connect_failures, s->reconnects,
               s->ok > 0 ? "" : ", no round trip");
        if (s->ok > 0)
            ex_msg("--poll %u:%u: rtt_us min=%lu median=%lu p99=%lu max=%lu", poll->addr,
                   poll->count, (unsigned long)s->rtt_min, (unsigned long)s->rtt_median,
                   (unsigned long)s->rtt_p99, (unsigned long)s->rtt_max);
        break;
    case MO_TEXT:
    default:
        printf("reads=%lu ok=%lu errors=%lu exceptions=%lu timeouts=%lu disconnects=%lu "
               "bad_answers=%lu connect_failures=%lu reconnects=%lu\n",
               s->reads, s->ok, errors_of(s), s->exceptions, s->timeouts, s->disconnects,
               s->bad_answers, s->connect_failures, s->reconnects);
        if (s->ok > 0)
            printf("rtt_us min=%lu median=%lu p99=%lu max=%lu\n", (unsigned long)s->rtt_min,
                   (unsigned long)s->rtt_median, (unsigned long)s->rtt_p99,
                   (unsigned long)s->rtt_max);
        break;
    }
}
