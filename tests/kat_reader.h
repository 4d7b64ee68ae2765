/* SPDX-License-Identifier: ISC */
/*
 * kat_reader.h - reader for the known-answer files in tests/kat/.
 *
 * Format (see each file's header): comment lines start with '#'; a case is
 * four lines `key = hex`, `iv = hex` (may be empty), `offset = decimal`,
 * `keystream = hex`, and cases are separated by blank lines.  The comment
 * directly above a case names the published vector it came from.
 */
#ifndef MBSC_TESTS_KAT_READER_H
#define MBSC_TESTS_KAT_READER_H

#include <stddef.h>
#include <stdint.h>

struct kat_case {
    char source[160]; /* the comment line above the case, for messages */
    unsigned line;    /* line number of "key =" in the file */
    uint8_t key[32];
    size_t key_len;
    uint8_t iv[16];
    size_t iv_len;
    unsigned long offset;
    uint8_t *keystream;
    size_t keystream_len;
};

struct kat_file {
    struct kat_case *cases;
    size_t count;
};

/*
 * Parse $srcdir/relpath.  Returns 0, or -1 after printing the file and
 * line of the problem (a malformed file must fail loudly, not shrink the
 * test).
 */
int kat_load(struct kat_file *kf, const char *relpath);
void kat_free(struct kat_file *kf);

#endif /* MBSC_TESTS_KAT_READER_H */
