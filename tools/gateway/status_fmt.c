/* SPDX-License-Identifier: ISC */
/*
 * status_fmt.c - escaping and shape of the status view's forms
 * (status_fmt.h).  The Prometheus form is the text exposition format,
 * version 0.0.4 (prometheus.io/docs/instrumenting/exposition_formats/).
 */
#include <inttypes.h>
#include <string.h>

#include "status_fmt.h"

const char *gw_status_format_word(enum gw_status_format f)
{
    switch (f) {
    case GW_STATUS_JSON: return "json";
    case GW_STATUS_PROMETHEUS: return "prometheus";
    case GW_STATUS_TEXT: break;
    }
    return "text";
}

int gw_status_format_parse(const char *word, enum gw_status_format *f)
{
    if (strcmp(word, "text") == 0)
        *f = GW_STATUS_TEXT;
    else if (strcmp(word, "json") == 0)
        *f = GW_STATUS_JSON;
    else if (strcmp(word, "prometheus") == 0)
        *f = GW_STATUS_PROMETHEUS;
    else
        return -1;
    return 0;
}

void gw_json_str(FILE *out, const char *s)
{
    if (s == NULL) {
        fputs("null", out);
        return;
    }
    fputc('"', out);
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

void gw_json_kv_str(FILE *out, int first, const char *key, const char *value)
{
    fprintf(out, "%s\"%s\":", first ? "" : ",", key);
    gw_json_str(out, value);
}

void gw_json_kv_u64(FILE *out, int first, const char *key, uint64_t value)
{
    fprintf(out, "%s\"%s\":%" PRIu64, first ? "" : ",", key, value);
}

void gw_time_utc(time_t t, char *buf, size_t len)
{
    struct tm tm;

    if (gmtime_r(&t, &tm) == NULL || strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, len, "?");
}

void gw_prom_family(FILE *out, const char *name, const char *type, const char *help)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void gw_prom_label_value(FILE *out, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\' || *s == '"')
            fprintf(out, "\\%c", *s);
        else if (*s == '\n')
            fputs("\\n", out);
        else
            fputc(*s, out);
    }
}
