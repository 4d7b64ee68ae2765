/* SPDX-License-Identifier: ISC */
/*
 * status_fmt.h - the three forms of the status view (status_fmt.c): text
 * lines for people, one JSON object for programs, and the Prometheus text
 * exposition format for monitoring.
 *
 * Each part of the gateway writes what it knows in the form asked for
 * (routing.c its routes, each mode its masters or clients and its
 * totals); these helpers keep the escaping and the shape of each form in
 * one place.  Prometheus wants every sample of a metric family together,
 * under one HELP and one TYPE line, so a part writes a whole family at a
 * time.
 */
#ifndef MBSC_GATEWAY_STATUS_FMT_H
#define MBSC_GATEWAY_STATUS_FMT_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

enum gw_status_format { GW_STATUS_TEXT = 0, GW_STATUS_JSON, GW_STATUS_PROMETHEUS };

/* The word of the control protocol and of "status --json" for each form. */
const char *gw_status_format_word(enum gw_status_format f);
/* From that word ("text", "json", "prometheus"); 0, or -1 for another word. */
int gw_status_format_parse(const char *word, enum gw_status_format *f);

/* JSON: a string with its quotes, escaped (RFC 8259, section 7); NULL writes null. */
void gw_json_str(FILE *out, const char *s);
/* JSON: "key": "value" (value NULL: null), with a comma before it unless first. */
void gw_json_kv_str(FILE *out, int first, const char *key, const char *value);
void gw_json_kv_u64(FILE *out, int first, const char *key, uint64_t value);
/* A UTC time as "2026-12-01T23:51:36Z". */
void gw_time_utc(time_t t, char *buf, size_t len);

/* Prometheus: the HELP and TYPE lines of a family ("counter", "gauge"). */
void gw_prom_family(FILE *out, const char *name, const char *type, const char *help);
/* A label value, escaped as the exposition format asks (backslash, quote, newline). */
void gw_prom_label_value(FILE *out, const char *s);

#endif /* MBSC_GATEWAY_STATUS_FMT_H */
