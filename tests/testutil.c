/* SPDX-License-Identifier: ISC */
/* testutil.c - see testutil.h. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

char *tu_read_srcfile(const char *relpath, size_t *len)
{
    const char *srcdir = getenv("srcdir");
    char path[4096];
    FILE *f;
    char *buf = NULL;
    long size;

    if (srcdir == NULL || *srcdir == '\0')
        srcdir = ".";
    if ((size_t)snprintf(path, sizeof path, "%s/%s", srcdir, relpath) >= sizeof path) {
        fprintf(stderr, "test data path too long: %s/%s\n", srcdir, relpath);
        return NULL;
    }
    f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        perror(path);
        fclose(f);
        return NULL;
    }
    buf = malloc((size_t)size + 1);
    if (buf == NULL || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "%s: cannot read %ld bytes\n", path, size);
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    buf[size] = '\0';
    if (len != NULL)
        *len = (size_t)size;
    return buf;
}

int tu_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

long tu_hex_decode(uint8_t *out, size_t cap, const char *hex, size_t hex_len)
{
    size_t i;

    if (hex_len % 2 != 0 || hex_len / 2 > cap)
        return -1;
    for (i = 0; i < hex_len / 2; i++) {
        int hi = tu_hex_digit(hex[2 * i]);
        int lo = tu_hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return (long)(hex_len / 2);
}

uint8_t *tu_hex_alloc(const char *hex, size_t *len)
{
    size_t n = strlen(hex);
    uint8_t *out = malloc(n / 2 + 1);

    if (out == NULL || tu_hex_decode(out, n / 2, hex, n) < 0) {
        free(out);
        return NULL;
    }
    if (len != NULL)
        *len = n / 2;
    return out;
}

void tu_fill_pattern(uint8_t *buf, size_t len, uint32_t seed)
{
    /* xorshift32: reproducible, independent of the code under test */
    uint32_t x = seed ? seed : 0x9e3779b9u;
    size_t i;

    for (i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = (uint8_t)(x >> 24);
    }
}

long long tu_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
