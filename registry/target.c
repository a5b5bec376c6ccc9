/*
 * target.c - parses target strings (docs/protocol.md, "Targets"). Input is
 * untrusted: every error is an RG_EBADREQ with a sentence a person can act
 * on, and nothing is read past n bytes. Any thread.
 */
#define _GNU_SOURCE
#include "registry/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TARGET_MAX_BYTES 4096

struct prefix {
    const char *text;
    int kind;
    int substring;
};

/* Longer spellings first so "text~:" is not read as "text:". */
static const struct prefix prefixes[] = {
    {"css:", REG_T_CSS, 0},
    {"xpath:", REG_T_XPATH, 0},
    {"role:", REG_T_ROLE, 0},
    {"text~:", REG_T_TEXT, 1},
    {"text:", REG_T_TEXT, 0},
    {"label~:", REG_T_LABEL, 1},
    {"label:", REG_T_LABEL, 0},
    {"placeholder~:", REG_T_PLACEHOLDER, 1},
    {"placeholder:", REG_T_PLACEHOLDER, 0},
    {"testid:", REG_T_TESTID, 0},
    {"alt~:", REG_T_ALT, 1},
    {"alt:", REG_T_ALT, 0},
    {"title~:", REG_T_TITLE, 1},
    {"title:", REG_T_TITLE, 0},
};

void reg_target_destroy(reg_target *t)
{
    if (!t)
        return;
    free(t->value);
    free(t->name);
    memset(t, 0, sizeof *t);
}

static int valid_ref(const char *s, size_t n)
{
    /* @ + [a-z0-9]{1,12} + optional ~N */
    if (n < 2 || n >= REG_REF_MAX || s[0] != '@')
        return 0;
    size_t i = 1, base = 0;
    while (i < n && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9'))) {
        i++;
        base++;
    }
    if (base == 0 || base > REG_NORM_MAX)
        return 0;
    if (i == n)
        return 1;
    if (s[i] != '~' || i + 1 == n || s[i + 1] == '0')
        return 0;
    for (i++; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

static int is_role_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
}

/* role:ROLE, role:ROLE[name="..."], role:ROLE[name~="..."] */
static int parse_role(const char *s, size_t n, reg_target *t, char *err, size_t errlen)
{
    size_t i = 0;
    while (i < n && is_role_char(s[i]))
        i++;
    if (i == 0)
        return rg_errf(err, errlen, RG_EBADREQ, "role: needs a role name, for example role:button");
    t->value = strndup(s, i);
    if (i == n)
        return t->value ? 0 : RG_ENOMEM;
    const char *rest = s + i;
    size_t left = n - i;
    size_t skip;
    if (left >= 7 && !memcmp(rest, "[name=\"", 7)) {
        skip = 7;
    } else if (left >= 8 && !memcmp(rest, "[name~=\"", 8)) {
        skip = 8;
        t->substring = 1;
    } else {
        return rg_errf(err, errlen, RG_EBADREQ,
                       "after the role only [name=\"...\"] or [name~=\"...\"] may follow");
    }
    char *name = malloc(left);
    if (!name)
        return RG_ENOMEM;
    size_t o = 0, j = skip;
    for (; j < left; j++) {
        char c = rest[j];
        if (c == '\\' && j + 1 < left && (rest[j + 1] == '"' || rest[j + 1] == '\\')) {
            name[o++] = rest[++j];
            continue;
        }
        if (c == '"')
            break;
        name[o++] = c;
    }
    name[o] = '\0';
    if (j >= left || j + 2 != left || rest[j + 1] != ']') {
        free(name);
        return rg_errf(err, errlen, RG_EBADREQ,
                       "the role's name must be a quoted string closed by \"]");
    }
    t->name = name;
    return 0;
}

int reg_target_parse(const char *s, size_t n, reg_target *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    if (!s || n == 0)
        return rg_errf(err, errlen, RG_EBADREQ, "the target is empty");
    if (n > TARGET_MAX_BYTES)
        return rg_errf(err, errlen, RG_EBADREQ, "the target is longer than 4096 bytes");
    if (memchr(s, '\0', n))
        return rg_errf(err, errlen, RG_EBADREQ, "the target contains a NUL byte");
    if (s[0] == '@') {
        if (!valid_ref(s, n))
            return rg_errf(err, errlen, RG_EBADREQ,
                           "a ref is @ followed by up to 12 characters a-z or 0-9 and an optional "
                           "~N suffix, as observe returns it");
        t->kind = REG_T_REF;
        t->value = strndup(s, n);
        return t->value ? 0 : RG_ENOMEM;
    }
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t pl = strlen(prefixes[i].text);
        if (n < pl || memcmp(s, prefixes[i].text, pl) != 0)
            continue;
        t->kind = prefixes[i].kind;
        t->substring = prefixes[i].substring;
        if (n == pl) {
            reg_target_destroy(t);
            return rg_errf(err, errlen, RG_EBADREQ, "the target has a prefix but nothing after it");
        }
        if (t->kind == REG_T_ROLE) {
            int rc = parse_role(s + pl, n - pl, t, err, errlen);
            if (rc < 0)
                reg_target_destroy(t);
            return rc;
        }
        t->value = strndup(s + pl, n - pl);
        return t->value ? 0 : RG_ENOMEM;
    }
    return rg_errf(err, errlen, RG_EBADREQ,
                   "unknown target: use @ref, css:, xpath:, role:, text:, label:, placeholder:, "
                   "testid:, alt: or title:");
}
