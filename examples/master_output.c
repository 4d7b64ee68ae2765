/* SPDX-License-Identifier: ISC */
/*
 * examples/master_output.c - secure_master's result lines (see
 * master_output.h).  JSON needs no escaping here: every string printed is
 * one of our own action names or a timestamp.
 */
#include "master_output.h"

#include <stdio.h>
#include <time.h>

#include "common.h"

void mo_reference(char *buf, size_t len, enum mo_table table, unsigned addr, unsigned count,
                  unsigned offset)
{
    unsigned long last = (unsigned long)addr + (count > 0 ? count : 1u); /* 1-based */
    int six = last > 9999ul;

    snprintf(buf, len, "%u%0*lu", (unsigned)table, six ? 5 : 4, (unsigned long)addr + offset + 1ul);
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

static unsigned value_at(const struct mo_result *r, unsigned i)
{
    return r->regs != NULL ? (unsigned)r->regs[i] : (r->bits[i] ? 1u : 0u);
}

static void print_text(const struct mo_result *r)
{
    unsigned i;

    if (r->written)
        return; /* writes print nothing in text mode: silence is success */
    printf("%u:", r->addr);
    for (i = 0; i < r->count; i++)
        printf(" %u", value_at(r, i));
    putchar('\n');
}

static void print_json(const struct mo_result *r, const char *now)
{
    char ref[16];
    unsigned i;

    mo_reference(ref, sizeof ref, r->table, r->addr, r->count, 0);
    printf("{\"time\":\"%s\",\"action\":\"%s\",\"fc\":%u,\"unit\":%u,\"addr\":%u,"
           "\"ref\":\"%s\",\"count\":%u,",
           now, r->action, r->fc, r->unit, r->addr, ref, r->count);
    if (r->seq >= 0)
        printf("\"seq\":%ld,", r->seq);
    printf("\"rtt_us\":%lu,\"%s\":[", (unsigned long)r->rtt_us, r->written ? "written" : "values");
    for (i = 0; i < r->count; i++)
        printf(i == 0 ? "%u" : ",%u", value_at(r, i));
    fputs("]}\n", stdout);
}

static void print_csv(struct mo_output *out, const struct mo_result *r, const char *now)
{
    char ref[16];
    unsigned i;

    if (!out->header_done) {
        fputs("time,action,fc,unit,addr,ref,count,seq,rtt_us", stdout);
        for (i = 0; i < out->csv_values; i++)
            printf(",v%u", i);
        putchar('\n');
        out->header_done = 1;
    }
    mo_reference(ref, sizeof ref, r->table, r->addr, r->count, 0);
    printf("%s,%s,%u,%u,%u,%s,%u,", now, r->action, r->fc, r->unit, r->addr, ref, r->count);
    if (r->seq >= 0)
        printf("%ld", r->seq);
    printf(",%lu", (unsigned long)r->rtt_us);
    /* Every row has the header's number of fields (RFC 4180). */
    for (i = 0; i < out->csv_values; i++) {
        if (i < r->count)
            printf(",%u", value_at(r, i));
        else
            putchar(',');
    }
    putchar('\n');
}

void mo_print_result(struct mo_output *out, const struct mo_result *r)
{
    char now[64];

    if (out->format == MO_TEXT) {
        print_text(r);
        return;
    }
    timestamp(now, sizeof now);
    if (out->format == MO_JSON)
        print_json(r, now);
    else
        print_csv(out, r, now);
}

void mo_print_poll_summary(struct mo_output *out, const struct mo_result *poll, unsigned long reads,
                           uint32_t min, uint32_t median, uint32_t p99, uint32_t max)
{
    char now[64];

    switch (out->format) {
    case MO_JSON:
        timestamp(now, sizeof now);
        printf("{\"time\":\"%s\",\"action\":\"poll-summary\",\"fc\":%u,\"unit\":%u,\"addr\":%u,"
               "\"count\":%u,\"reads\":%lu,\"rtt_us_min\":%lu,\"rtt_us_median\":%lu,"
               "\"rtt_us_p99\":%lu,\"rtt_us_max\":%lu}\n",
               now, poll->fc, poll->unit, poll->addr, poll->count, reads, (unsigned long)min,
               (unsigned long)median, (unsigned long)p99, (unsigned long)max);
        break;
    case MO_CSV:
        ex_msg("--poll %u:%u: %lu reads, rtt_us min=%lu median=%lu p99=%lu max=%lu", poll->addr,
               poll->count, reads, (unsigned long)min, (unsigned long)median, (unsigned long)p99,
               (unsigned long)max);
        break;
    case MO_TEXT:
    default:
        printf("rtt_us min=%lu median=%lu p99=%lu max=%lu\n", (unsigned long)min,
               (unsigned long)median, (unsigned long)p99, (unsigned long)max);
        break;
    }
}
