/*
 * fuzz_target.c - libFuzzer target: untrusted target strings (args.target,
 * observe's scope) through reg_target_parse.
 *
 * Properties beyond "no crash, leak or undefined behaviour":
 *   - a refusal is RG_EBADREQ with a sentence, and leaves nothing allocated
 *     in the reg_target;
 *   - what is accepted is what docs/protocol.md describes: a ref is exactly
 *     @[a-z0-9]{1,12} with an optional ~N (N from 1, no leading zero), every
 *     other target starts with one of the documented prefixes and its value
 *     is the rest of the string, unchanged;
 *   - writing the parsed target back out (role names quoted and escaped)
 *     and parsing that again gives the same target.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rg.h"
#include "registry/registry.h"
#include "tests/fuzz/fuzz.h"

#define TARGET_MAX 4096 /* docs/protocol.md does not say; registry/target.c refuses more */

struct prefix {
    const char *text;
    int kind;
    int substring;
};

/* docs/protocol.md's prefixes, and the ~ (substring) forms the registry offers. */
static const struct prefix prefixes[] = {
    {"css:", REG_T_CSS, 0},
    {"xpath:", REG_T_XPATH, 0},
    {"role:", REG_T_ROLE, 0},
    {"text:", REG_T_TEXT, 0},
    {"text~:", REG_T_TEXT, 1},
    {"label:", REG_T_LABEL, 0},
    {"label~:", REG_T_LABEL, 1},
    {"placeholder:", REG_T_PLACEHOLDER, 0},
    {"placeholder~:", REG_T_PLACEHOLDER, 1},
    {"testid:", REG_T_TESTID, 0},
    {"alt:", REG_T_ALT, 0},
    {"alt~:", REG_T_ALT, 1},
    {"title:", REG_T_TITLE, 0},
    {"title~:", REG_T_TITLE, 1},
};

static const struct prefix *prefix_of(int kind, int substring)
{
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (prefixes[i].kind == kind && prefixes[i].substring == substring)
            return &prefixes[i];
    return NULL;
}

/* @[a-z0-9]{1,12}(~[1-9][0-9]*)? and shorter than REG_REF_MAX. */
static int ref_ok(const char *s, size_t n)
{
    size_t i = 1;
    if (n < 2 || n >= REG_REF_MAX || s[0] != '@')
        return 0;
    while (i < n && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
        i++;
    if (i == 1 || i > 13)
        return 0;
    if (i == n)
        return 1;
    if (s[i] != '~' || i + 1 == n || s[i + 1] < '1' || s[i + 1] > '9')
        return 0;
    for (i += 2; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

/* The target written back as a string (caller frees), or NULL when too long. */
static char *unparse(const reg_target *t, size_t *len)
{
    size_t cap = strlen(t->value) + (t->name ? 2 * strlen(t->name) : 0) + 32;
    char *s = malloc(cap);
    size_t n = 0;
    FZ_CHECK(s, "out of memory");
    if (t->kind == REG_T_REF) {
        n = (size_t)snprintf(s, cap, "%s", t->value);
    } else if (t->kind == REG_T_ROLE) {
        n = (size_t)snprintf(s, cap, "role:%s", t->value);
        if (t->name) {
            n += (size_t)snprintf(s + n, cap - n, "[name%s=\"", t->substring ? "~" : "");
            for (const char *c = t->name; *c; c++) {
                if (*c == '"' || *c == '\\')
                    s[n++] = '\\';
                s[n++] = *c;
            }
            n += (size_t)snprintf(s + n, cap - n, "\"]");
        }
    } else {
        const struct prefix *p = prefix_of(t->kind, t->substring);
        FZ_CHECK(p, "kind %d (substring %d) is not a documented target", t->kind, t->substring);
        n = (size_t)snprintf(s, cap, "%s%s", p->text, t->value);
    }
    *len = n;
    if (n > TARGET_MAX) {
        free(s);
        return NULL;
    }
    return s;
}

static int same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    char err[256] = "";
    reg_target t, again;

    int rc = reg_target_parse(s, size, &t, err, sizeof err);
    if (rc < 0) {
        FZ_CHECK(rc == RG_EBADREQ, "reg_target_parse returned %d", rc);
        FZ_CHECK(err[0], "refused without a sentence");
        FZ_CHECK(!t.value && !t.name, "a refusal left strings in the target");
        return 0;
    }
    FZ_CHECK(rc == 0, "reg_target_parse returned %d", rc);
    FZ_CHECK(size > 0 && size <= TARGET_MAX && !memchr(s, '\0', size),
             "accepted %zu bytes with a NUL, none or too many", size);
    FZ_CHECK(t.value, "accepted without a value");
    if (s[0] == '@') {
        FZ_CHECK(t.kind == REG_T_REF && ref_ok(s, size), "the ref \"%.*s\" was accepted", (int)size,
                 s);
        FZ_CHECK(strlen(t.value) == size && !memcmp(t.value, s, size), "the ref changed");
        FZ_CHECK(!t.name && !t.substring, "a ref with a name");
    } else if (t.kind != REG_T_ROLE) {
        const struct prefix *p = prefix_of(t.kind, t.substring);
        FZ_CHECK(p, "kind %d (substring %d) is not a documented target", t.kind, t.substring);
        size_t pl = strlen(p->text);
        FZ_CHECK(size > pl && !memcmp(s, p->text, pl), "the prefix %s is not the input's", p->text);
        FZ_CHECK(strlen(t.value) == size - pl && !memcmp(t.value, s + pl, size - pl),
                 "the value is not the rest of the target");
        FZ_CHECK(!t.name, "a name on a target that is not a role");
    } else {
        FZ_CHECK(size > 5 && !memcmp(s, "role:", 5), "a role without role:");
        FZ_CHECK(t.value[0] && strspn(t.value, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
                                               "VWXYZ-_") == strlen(t.value),
                 "the role \"%s\"", t.value);
        FZ_CHECK(t.name || !t.substring, "name~= without a name");
    }

    size_t len;
    char *back = unparse(&t, &len);
    if (back) {
        rc = reg_target_parse(back, len, &again, err, sizeof err);
        FZ_CHECK(rc == 0, "the target written back (%s) is refused: %s", back, err);
        FZ_CHECK(again.kind == t.kind && again.substring == t.substring &&
                     same_str(again.value, t.value) && same_str(again.name, t.name),
                 "the target written back (%s) parses differently", back);
        reg_target_destroy(&again);
        free(back);
    }
    reg_target_destroy(&t);
    return 0;
}
