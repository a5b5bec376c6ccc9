/*
 * ident.c - identity signals, ref generation and the weighted identity
 * comparison (docs/protocol.md, "Stable refs"). Pure functions; any thread.
 */
#define _GNU_SOURCE
#include "registry/registry.h"

#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

void reg_identity_destroy(reg_identity *id)
{
    if (!id)
        return;
    free(id->testid);
    free(id->id);
    free(id->aria_label);
    free(id->role);
    free(id->name);
    free(id->tag);
    free(id->parent_role);
    memset(id, 0, sizeof *id);
}

int reg_identity_copy(reg_identity *dst, const reg_identity *src)
{
    memset(dst, 0, sizeof *dst);
    const char *in[] = {src->testid, src->id,  src->aria_label, src->role,
                        src->name,   src->tag, src->parent_role};
    char **out[] = {&dst->testid, &dst->id,  &dst->aria_label, &dst->role,
                    &dst->name,   &dst->tag, &dst->parent_role};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        *out[i] = dup_or_null(in[i]);
        if (in[i] && !*out[i]) {
            reg_identity_destroy(dst);
            return RG_ENOMEM;
        }
    }
    dst->sibling_index = src->sibling_index;
    return 0;
}

size_t reg_normalize(const char *s, char *out)
{
    size_t n = 0;
    for (; s && *s && n < REG_NORM_MAX; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c - 'A' + 'a');
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
            out[n++] = (char)c;
    }
    out[n] = '\0';
    return n;
}

/* Hash input: the five signals separated by a byte that never occurs in them. */
static void hash_field(XXH3_state_t *st, const char *s)
{
    if (s)
        XXH3_64bits_update(st, s, strlen(s));
    XXH3_64bits_update(st, "\x1f", 1);
}

void reg_ref_base(const reg_identity *id, char out[REG_REF_MAX])
{
    char norm[REG_NORM_MAX + 1];
    const char *named[] = {id->testid, id->id, id->aria_label};
    for (size_t i = 0; i < 3; i++) {
        if (named[i] && reg_normalize(named[i], norm) > 0) {
            out[0] = '@';
            memcpy(out + 1, norm, strlen(norm) + 1);
            return;
        }
    }
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    hash_field(&st, id->role);
    hash_field(&st, id->name);
    hash_field(&st, id->tag);
    hash_field(&st, id->parent_role);
    char sib[16];
    int k = 0;
    unsigned v = (unsigned)(id->sibling_index < 0 ? 0 : id->sibling_index);
    do {
        sib[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (int i = 0; i < k / 2; i++) {
        char t = sib[i];
        sib[i] = sib[k - 1 - i];
        sib[k - 1 - i] = t;
    }
    XXH3_64bits_update(&st, sib, (size_t)k);
    uint64_t h = XXH3_64bits_digest(&st);
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    out[0] = '@';
    out[1] = 'e';
    for (int i = 0; i < 6; i++) {
        out[2 + i] = digits[h % 36];
        h /= 36;
    }
    out[8] = '\0';
}

/* Adds a signal of weight w: counted when either side has it, scored when equal. */
static void weigh(const char *a, const char *b, int w, int *total, int *score)
{
    int ha = a && *a, hb = b && *b;
    if (!ha && !hb)
        return;
    *total += w;
    if (ha && hb && strcmp(a, b) == 0)
        *score += w;
}

double reg_identity_score(const reg_identity *a, const reg_identity *b)
{
    int total = 0, score = 0;
    weigh(a->testid, b->testid, 3, &total, &score);
    weigh(a->id, b->id, 3, &total, &score);
    weigh(a->aria_label, b->aria_label, 2, &total, &score);
    weigh(a->role, b->role, 2, &total, &score);
    weigh(a->name, b->name, 2, &total, &score);
    weigh(a->tag, b->tag, 1, &total, &score);
    weigh(a->parent_role, b->parent_role, 1, &total, &score);
    total += 1;
    score += a->sibling_index == b->sibling_index;
    return (double)score / total;
}
