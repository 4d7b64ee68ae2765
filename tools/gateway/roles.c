/* SPDX-License-Identifier: ISC */
/*
 * roles.c - masters of the allow-list that the policy lets do nothing.
 *
 * The allow-list (mbsc/keys.h) gives entries in file order but not their
 * lines, which comments and blank lines shift; the line of an entry is
 * found again here by its key, the first word of its line, in the file's
 * text.  The file was just loaded under the rules of an allow-list, and is
 * read again under the same rules; should that fail (it changed in
 * between), the warning names the entry's number instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "roles.h"

/* The line (1-based) whose first word is b64, or 0. */
static unsigned line_of(const char *text, size_t len, const char *b64)
{
    size_t at = 0, n = strlen(b64);
    unsigned line = 1;

    while (at < len) {
        const char *p = text + at, *end = memchr(p, '\n', len - at);
        size_t rest = end != NULL ? (size_t)(end - p) : len - at;

        while (rest > 0 && (*p == ' ' || *p == '\t')) {
            p++;
            rest--;
        }
        if (rest >= n && memcmp(p, b64, n) == 0 &&
            (rest == n || p[n] == ' ' || p[n] == '\t' || p[n] == '#' || p[n] == '\r'))
            return line;
        if (end == NULL)
            break;
        at = (size_t)(end - text) + 1;
        line++;
    }
    return 0;
}

unsigned gw_roles_warn(const mbsc_allowlist *allow, const char *allow_path,
                       const mbsc_policy *policy, const char *policy_path)
{
    char *text = NULL, why[GW_WHY_SIZE], where[GW_WHY_SIZE];
    size_t len = 0, i, n = mbsc_allowlist_count(allow);
    unsigned warned = 0;

    if (policy == NULL)
        return 0;
    for (i = 0; i < n; i++) {
        uint8_t key[MBSC_KEY_BYTES];
        char b64[MBSC_KEY_BASE64_SIZE];
        const char *name = NULL, *role = NULL;
        unsigned line = 0;

        if (mbsc_allowlist_get(allow, i, key, &name, &role) != MBSC_OK ||
            (role != NULL && mbsc_policy_has_role(policy, role)))
            continue;
        /* The file is read once, for the first warning. */
        if (text == NULL && (text = malloc(MBSC_ALLOWLIST_MAX_BYTES)) != NULL &&
            mbsc_trusted_file_read(allow_path, text, MBSC_ALLOWLIST_MAX_BYTES, &len, why,
                                   sizeof why) != MBSC_OK)
            len = 0;
        if (text != NULL && mbsc_key_to_base64(b64, key) == MBSC_OK)
            line = line_of(text, len, b64);
        if (line != 0)
            snprintf(where, sizeof where, "%s:%u", allow_path, line);
        else
            snprintf(where, sizeof where, "%s (entry %zu)", allow_path, i + 1);
        if (role == NULL)
            gw_log(GW_WARN,
                   "%s: master %s has no role, and with the policy %s a master without a "
                   "role may do nothing; give it a role the policy names",
                   where, name, policy_path);
        else
            gw_log(GW_WARN,
                   "%s: master %s has role %s, which the policy %s does not name: it may do "
                   "nothing (a misspelt role, or a rule missing from the policy?)",
                   where, name, role, policy_path);
        warned++;
    }
    free(text);
    return warned;
}
