/*
 * reply.c - reply maps: a command's outcome, and error replies whose
 * message is whole UTF-8 whatever cut it short. Any thread.
 */
#define _GNU_SOURCE
#include "gateway/gw_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- replies ---- */

/*
 * Length of the UTF-8 character at p (NUL-terminated), or 0 when the bytes
 * there are not one whole character (cut short, a stray continuation byte).
 */
static size_t utf8_char_len(const unsigned char *p)
{
    unsigned char c = p[0];
    size_t n;
    if (c < 0x80)
        n = 1;
    else if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4;
    else
        return 0;
    if ((n == 3 && ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f))) ||
        (n == 4 && ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] > 0x8f))))
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

/*
 * A message as a reply may carry it. A sentence cut to fit its buffer (the
 * page's own error quoting a long selector, an exception's text) can end
 * inside a UTF-8 character, and a reply must be UTF-8 (wire.h) or strict
 * clients refuse all of it. Returns a copy without the bytes that do not
 * begin a whole character (caller frees), or NULL when message is whole.
 */
static char *utf8_whole(const char *message)
{
    const unsigned char *p = (const unsigned char *)message;
    size_t i = 0, o, n;
    while (p[i] && (n = utf8_char_len(p + i)) > 0)
        i += n;
    if (!p[i])
        return NULL;
    char *out = malloc(strlen(message) + 1);
    if (!out)
        abort();
    memcpy(out, message, i);
    for (o = i; p[i];) {
        if ((n = utf8_char_len(p + i)) == 0) {
            i++;
            continue;
        }
        memcpy(out + o, p + i, n);
        o += n;
        i += n;
    }
    out[o] = '\0';
    return out;
}

cJSON *gw_error_reply(int rc, const char *message, const cJSON *id, double ms, int retry_after_ms)
{
    char *whole = message ? utf8_whole(message) : NULL;
    if (whole)
        message = whole;
    cJSON *r = cJSON_CreateObject();
    cJSON_AddBoolToObject(r, "ok", 0);
    if (id)
        cJSON_AddItemToObject(r, "id", cJSON_Duplicate(id, 1));
    cJSON *e = cJSON_AddObjectToObject(r, "error");
    cJSON_AddStringToObject(e, "code", rg_err_code(rc));
    cJSON_AddStringToObject(e, "kind", rg_err_transient(rc) ? "transient" : "permanent");
    cJSON_AddStringToObject(e, "message", message && *message ? message : rg_err_code(rc));
    free(whole);
    if (retry_after_ms > 0)
        cJSON_AddNumberToObject(e, "retry_after_ms", retry_after_ms);
    wire_add_float(r, "ms", ms);
    return r;
}

/*
 * The command found its session parked (or its worker or browser gone) and
 * restored it first: every client is told, over HTTP too, what came back.
 */
static void add_restored(cJSON *r, const gw_cmd *c)
{
    if (!c->ri || !c->ri->restored)
        return;
    cJSON *d = cJSON_AddObjectToObject(r, "restored");
    cJSON_AddBoolToObject(d, "reloaded", c->ri->reloaded);
    cJSON_AddNumberToObject(d, "refs_kept", (double)c->ri->refs_kept);
    cJSON_AddNumberToObject(d, "refs_lost", (double)c->ri->refs_lost);
    cJSON_AddNumberToObject(d, "fields_restored", (double)c->ri->fields_restored);
    cJSON_AddNumberToObject(d, "fields_lost", (double)c->ri->fields_lost);
    cJSON *lost = cJSON_AddArrayToObject(d, "lost");
    if (c->ri->reloaded) /* what no capture holds */
        cJSON_AddItemToArray(lost, cJSON_CreateString("javascript_state"));
}

cJSON *gw_reply_of(gw_cmd *c, const cJSON *id, double ms)
{
    if (c->rc < 0) {
        cJSON *r = gw_error_reply(c->rc, c->err, id, ms, c->retry_after_ms);
        if (c->details) {
            cJSON_AddItemToObject(cJSON_GetObjectItemCaseSensitive(r, "error"), "details",
                                  c->details);
            c->details = NULL;
        }
        add_restored(r, c);
        return r;
    }
    cJSON *r = cJSON_CreateObject();
    cJSON_AddBoolToObject(r, "ok", 1);
    if (id)
        cJSON_AddItemToObject(r, "id", cJSON_Duplicate(id, 1));
    cJSON_AddItemToObject(r, "result", c->result ? c->result : cJSON_CreateObject());
    c->result = NULL;
    add_restored(r, c);
    wire_add_float(r, "ms", ms);
    return r;
}
