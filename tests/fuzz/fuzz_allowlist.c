/* SPDX-License-Identifier: ISC */
/*
 * fuzz_allowlist.c - the allow-list parser and loader fed arbitrary text,
 * checked against a second, independent parser written here from the
 * documented format (mbsc/keys.h "File formats", docs/keys.md).
 *
 * The reference: lines end at LF (one CR before it, or at the very end, is
 * dropped); a line over MBSC_ALLOWLIST_LINE_MAX bytes is an error; "#" to
 * the end of the line is a comment; fields are separated by spaces and
 * tabs; a line with fields has 2 or 3: a key that libsodium decodes
 * canonically (as in fuzz_keyfile.c), a name and an optional role, each 1
 * to 63 of [A-Za-z0-9._-].  The first bad line is a syntax error and the
 * first line that repeats an earlier key a duplicate, whichever comes
 * first.
 *
 * Properties: mbsc_allowlist_parse returns MBSC_OK, _SYNTAX or _DUPLICATE
 * exactly as the reference says; on success the entries are the
 * reference's, in order, and mbsc_allowlist_find finds each key at its
 * index with its name and role; mbsc_allowlist_load of the same bytes in a
 * file gives the same result.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "fuzz_common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_REF 512

struct ref_entry {
    uint8_t key[32];
    char name[64], role[64];
};
static struct ref_entry ref[MAX_REF];
static char dir[64], file[96];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_init();
    snprintf(dir, sizeof dir, "/tmp/mbsc-fuzz-allow-XXXXXX");
    FUZZ_CHECK(mkdtemp(dir) != NULL);
    snprintf(file, sizeof file, "%s/allow", dir);
    return 0;
}

static int is_word(const uint8_t *s, size_t n)
{
    size_t i;

    if (n < 1 || n > 63)
        return 0;
    for (i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' || s[i] == '-'))
            return 0;
    return 1;
}

static int ref_key(uint8_t key[32], const uint8_t *b64, size_t n)
{
    char again[45];
    size_t got = 0;
    const char *end = NULL;

    if (n != 44 || memchr(b64, '\0', n) != NULL ||
        sodium_base642bin(key, 32, (const char *)b64, n, NULL, &got, &end,
                          sodium_base64_VARIANT_ORIGINAL) != 0 ||
        got != 32 || end != (const char *)b64 + n)
        return 0;
    sodium_bin2base64(again, sizeof again, key, 32, sodium_base64_VARIANT_ORIGINAL);
    return memcmp(again, b64, 44) == 0;
}

/* The reference parser: MBSC_OK with *count entries, or the error. */
static int ref_parse(const uint8_t *t, size_t len, size_t *count)
{
    size_t pos = 0;

    *count = 0;
    while (pos < len) {
        const uint8_t *lf = memchr(t + pos, '\n', len - pos);
        size_t end = lf ? (size_t)(lf - t) : len, n = end - pos, i = 0, nf = 0, k;
        const uint8_t *line = t + pos, *f[4];
        size_t fl[4];
        struct ref_entry e;

        pos = lf ? end + 1 : len;
        if (n > 0 && line[n - 1] == '\r')
            n--;
        if (n > MBSC_ALLOWLIST_LINE_MAX)
            return MBSC_ERR_ALLOWLIST_SYNTAX;
        for (k = 0; k < n; k++)
            if (line[k] == '#') {
                n = k;
                break;
            }
        while (nf < 4) {
            while (i < n && (line[i] == ' ' || line[i] == '\t'))
                i++;
            if (i == n)
                break;
            f[nf] = line + i;
            while (i < n && line[i] != ' ' && line[i] != '\t')
                i++;
            fl[nf] = (size_t)(line + i - f[nf]);
            nf++;
        }
        if (nf == 0)
            continue;
        memset(&e, 0, sizeof e);
        if (nf < 2 || nf > 3 || !ref_key(e.key, f[0], fl[0]) || !is_word(f[1], fl[1]) ||
            (nf == 3 && !is_word(f[2], fl[2])))
            return MBSC_ERR_ALLOWLIST_SYNTAX;
        for (k = 0; k < *count; k++)
            if (memcmp(ref[k].key, e.key, 32) == 0)
                return MBSC_ERR_ALLOWLIST_DUPLICATE;
        memcpy(e.name, f[1], fl[1]);
        if (nf == 3)
            memcpy(e.role, f[2], fl[2]);
        FUZZ_CHECK(*count < MAX_REF);
        ref[(*count)++] = e;
    }
    return MBSC_OK;
}

static void compare(mbsc_allowlist *al, int rc, int want, size_t count, const char *what)
{
    size_t i;

    FUZZ_ASSERT(rc == want, "%s returned %d, the reference %d", what, rc, want);
    if (rc != MBSC_OK) {
        FUZZ_ASSERT(al == NULL, "%s: list returned on failure", what);
        return;
    }
    FUZZ_ASSERT(mbsc_allowlist_count(al) == count, "%s: %zu entries, the reference %zu", what,
                mbsc_allowlist_count(al), count);
    for (i = 0; i < count; i++) {
        uint8_t key[32];
        const char *name = NULL, *role = NULL;
        FUZZ_ASSERT(
            mbsc_allowlist_get(al, i, key, &name, &role) == MBSC_OK &&
                memcmp(key, ref[i].key, 32) == 0 && strcmp(name, ref[i].name) == 0 &&
                (ref[i].role[0] ? role != NULL && strcmp(role, ref[i].role) == 0 : role == NULL),
            "%s: entry %zu differs", what, i);
        FUZZ_ASSERT(mbsc_allowlist_find(al, ref[i].key, &name, &role) == (int)i &&
                        strcmp(name, ref[i].name) == 0,
                    "%s: entry %zu not found at its index", what, i);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[MBSC_WHY_SIZE + 128];
    mbsc_allowlist *al = NULL;
    size_t count = 0;
    int want = ref_parse(data, size, &count), rc, fd;

    rc = mbsc_allowlist_parse(&al, (const char *)data, size, "fuzz", why, sizeof why);
    compare(al, rc, want, count, "mbsc_allowlist_parse");
    if (rc != MBSC_OK)
        FUZZ_ASSERT(strncmp(why, "fuzz:", 5) == 0, "message does not name the list: %s", why);
    mbsc_allowlist_free(al);
    al = NULL;

    fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    FUZZ_CHECK(fd >= 0 && write(fd, data, size) == (ssize_t)size && close(fd) == 0);
    rc = mbsc_allowlist_load(&al, file, why, sizeof why);
    compare(al, rc, want, count, "mbsc_allowlist_load");
    mbsc_allowlist_free(al);
    return 0;
}
