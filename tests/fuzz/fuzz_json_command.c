/*
 * fuzz_json_command.c - libFuzzer target: an untrusted JSON request body
 * (Content-Type: application/json) through wire_json_decode, then the
 * gateway's command checks (gw_check_command).
 *
 * Properties beyond "no crash, leak or undefined behaviour":
 *   - a refusal is bad_request with a UTF-8 sentence;
 *   - what the decoder accepts keeps wire.h's promises and survives msgpack
 *     and JSON round trips (fuzz.h);
 *   - nothing valid is refused: a body that cJSON itself parses whole, that
 *     is UTF-8 without control bytes or \u0000, whose numbers are written as
 *     RFC 8259 says (cJSON also takes 01 and 1.), and whose tree is within
 *     the contract (depth, unique keys, finite numbers) decodes, to that tree;
 *   - the command checks answer as docs/protocol.md says (fuzz.h).
 */
#define _GNU_SOURCE
#include <math.h>
#include <regex.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/rg.h"
#include "wire/wire.h"
#include "tests/fuzz/fuzz.h"

/* 1 when the tree cJSON made is one wire.h lets through; v's parents are `above` deep. */
static int within_contract(const cJSON *v, int above)
{
    if (cJSON_IsNumber(v))
        return isfinite(v->valuedouble);
    if (!cJSON_IsArray(v) && !cJSON_IsObject(v))
        return 1;
    if (above >= WIRE_MAX_DEPTH)
        return 0;
    for (const cJSON *ch = v->child; ch; ch = ch->next) {
        if (cJSON_IsObject(v))
            for (const cJSON *o = v->child; o != ch; o = o->next)
                if (!strcmp(o->string, ch->string))
                    return 0;
        if (!within_contract(ch, above + 1))
            return 0;
    }
    return 1;
}

/* 1 when the body has a byte below 0x20 other than JSON's whitespace. */
static int has_control(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r')
            return 1;
    return 0;
}

/* 1 when every number outside the body's strings matches RFC 8259's grammar,
   checked with a regular expression rather than wire.c's own scanner. */
static int numbers_as_rfc(const char *text, size_t n)
{
    static regex_t re;
    static int compiled;
    if (!compiled) {
        if (regcomp(&re, "^-?(0|[1-9][0-9]*)([.][0-9]+)?([eE][-+]?[0-9]+)?$", REG_EXTENDED))
            abort();
        compiled = 1;
    }
    int in_str = 0;
    for (size_t i = 0; i < n; i++) {
        if (in_str) {
            if (text[i] == '\\')
                i++;
            else if (text[i] == '"')
                in_str = 0;
            continue;
        }
        if (text[i] == '"') {
            in_str = 1;
            continue;
        }
        if (text[i] != '-' && (text[i] < '0' || text[i] > '9'))
            continue;
        size_t len = 0; /* the body is not NUL-terminated: no strspn */
        while (i + len < n && text[i + len] && strchr("0123456789+-.eE", text[i + len]))
            len++;
        char *tok = strndup(text + i, len);
        int ok = tok && regexec(&re, tok, 0, NULL, 0) == 0;
        free(tok);
        if (!ok)
            return 0;
        i += len - 1;
    }
    return 1;
}

/* The tree cJSON alone makes of a body the oracle applies to, or NULL. */
static cJSON *oracle_tree(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data, *end = NULL;
    if (!size || !fz_utf8_ok(text, size) || has_control(data, size) ||
        memmem(data, size, "\\u0000", 6) || !numbers_as_rfc(text, size))
        return NULL;
    cJSON *t = cJSON_ParseWithLengthOpts(text, size, &end, 0);
    if (!t)
        return NULL;
    size_t off = (size_t)(end - text);
    while (off < size &&
           (text[off] == ' ' || text[off] == '\t' || text[off] == '\n' || text[off] == '\r'))
        off++;
    if (off != size || !within_contract(t, 0)) {
        cJSON_Delete(t);
        return NULL;
    }
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256] = "";
    cJSON *t = (cJSON *)1;
    cJSON *want = oracle_tree(data, size);

    int rc = wire_json_decode(data, size, &t, err, sizeof err);
    if (rc < 0) {
        fz_check_refusal(rc, err, "wire_json_decode");
        FZ_CHECK(!t, "a refusal left a tree in *out");
        FZ_CHECK(!want, "a valid body was refused: %s", err);
        return 0;
    }
    FZ_CHECK(!err[0], "success with the message \"%s\"", err);
    fz_check_request_tree(t);
    FZ_CHECK(!want || fz_same_tree(want, t, 0), "the tree differs from cJSON's own");
    cJSON_Delete(want);
    fz_round_trips(t);
    fz_check_command(t);
    cJSON_Delete(t);
    return 0;
}
