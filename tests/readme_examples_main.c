/* SPDX-License-Identifier: ISC */
/*
 * readme_examples_main.c - runs the C examples of README.md, which
 * .ci/consumer-build extracts into their own files and compiles with
 * -Wall -Wextra -Werror against the installed library.  A renamed or
 * changed example function fails the link here: update both together.
 */
#include <mbsc.h>
#include <stdio.h>
#include <string.h>

int encrypt_trivium(uint8_t *buf, size_t len, const uint8_t key[10], const uint8_t iv[10]);
int next_request(mbsc_conn *c, int stop_fd, uint8_t *buf, size_t cap, size_t *len);
#ifdef WITH_MODBUS
int read_ten(const char *slave, const char *key_file, const char *slave_pub_file);
#endif

int main(void)
{
    static const uint8_t key[10] = {9, 8, 7}, iv[10] = {1, 2, 3};
    uint8_t buf[100] = {0}, zero[100] = {0};
    size_t len = 1;

    /* Encrypting twice with the same key and IV gives the plaintext back. */
    if (encrypt_trivium(buf, sizeof buf, key, iv) != MBSC_OK ||
        memcmp(buf, zero, sizeof buf) == 0 ||
        encrypt_trivium(buf, sizeof buf, key, iv) != MBSC_OK ||
        memcmp(buf, zero, sizeof buf) != 0) {
        fprintf(stderr, "readme_examples: encrypt_trivium does not round-trip\n");
        return 1;
    }
    /* No connection: the loop must not wait, only report it. */
    if (next_request(NULL, -1, buf, sizeof buf, &len) != -1) {
        fprintf(stderr, "readme_examples: next_request did not fail without a connection\n");
        return 1;
    }
#ifdef WITH_MODBUS
    /* No key file there: the example must report it and return -1. */
    if (read_ten("127.0.0.1:1", "/nonexistent/master.key", "/nonexistent/slave.pub") != -1) {
        fprintf(stderr, "readme_examples: read_ten did not fail on a missing key file\n");
        return 1;
    }
#endif
    printf("readme_examples: the README's C examples build and run\n");
    return 0;
}
