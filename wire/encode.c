/*
 * encode.c - reply trees to msgpack and JSON, and the WIRE_BIN items (base64)
 * both directions share. See wire.h for the contracts. Nothing here keeps
 * state: any thread may call anything.
 */
#include "wire/wire_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#define WIRE_ENCODE_MAX_DEPTH 2000 /* reply trees are ours, but cycles exist */

/* Drops whatever an encoder appended to b after start. */
static void buf_rewind(rg_buf *b, size_t start)
{
    b->len = start;
    if (b->data)
        b->data[start] = '\0';
}

/* 1 when s (n bytes) is base64 that rg_base64_decode accepts. */
static int b64_valid(const char *s, size_t n)
{
    return rg_base64_decode_to(s, n, NULL, 0, 0) >= 0;
}

/* A WIRE_BIN string item for data (n bytes), built in scratch. NULL on ENOMEM. */
cJSON *wire_bin_item(rg_buf *scratch, const void *data, size_t n)
{
    rg_buf_reset(scratch);
    if (rg_base64_append(scratch, data, n, 0) < 0)
        return NULL;
    cJSON *item = cJSON_CreateString(scratch->data);
    if (item)
        item->type |= WIRE_BIN;
    return item;
}

cJSON *wire_bin_new(const void *data, size_t len)
{
    rg_buf scratch;
    rg_buf_init(&scratch);
    cJSON *item = wire_bin_item(&scratch, data, len);
    rg_buf_destroy(&scratch);
    return item;
}

cJSON *wire_add_float(cJSON *obj, const char *key, double d)
{
    cJSON *n = cJSON_AddNumberToObject(obj, key, d);
    if (n)
        n->type |= WIRE_FLOAT;
    return n;
}

int wire_is_bin(const cJSON *v)
{
    return v && cJSON_IsString(v) && (v->type & WIRE_BIN) ? 1 : 0;
}

/* ---- cJSON to msgpack ---------------------------------------------------- */

/* 1 when d is an integer in [-2^63, 2^63), which int64_t holds exactly. */
static int is_int64(double d)
{
    return d >= -9223372036854775808.0 && d < 9223372036854775808.0 && (double)(int64_t)d == d;
}

/*
 * 1 when d is an integer in [-2^53, 2^53]: the integers msgpack may carry
 * both ways. Larger integral doubles are packed as float64, because
 * wire_mp_decode refuses integers beyond 2^53 and a reply must decode as well
 * as the request it answers.
 */
static int is_exact_int(double d)
{
    return d >= -(double)WIRE_INT_EXACT_MAX && d <= (double)WIRE_INT_EXACT_MAX && is_int64(d);
}

static int mp_write(void *data, const char *buf, size_t len)
{
    return rg_buf_append(data, buf, len);
}

static int mpe_value(msgpack_packer *pk, const cJSON *v, int depth);

static int mpe_number(msgpack_packer *pk, double d)
{
    int r;
    if (is_exact_int(d) && d < 0)
        r = msgpack_pack_int64(pk, (int64_t)d);
    else if (is_exact_int(d))
        r = msgpack_pack_uint64(pk, (uint64_t)d);
    else
        r = msgpack_pack_double(pk, d);
    return r ? RG_ENOMEM : 0;
}

static int mpe_str(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);
    if (n > UINT32_MAX)
        return RG_EINTERNAL;
    return msgpack_pack_str(pk, n) || msgpack_pack_str_body(pk, s, n) ? RG_ENOMEM : 0;
}

static int mpe_bin(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s), len;
    if (!b64_valid(s, n))
        return RG_EINTERNAL;
    unsigned char *data = rg_base64_decode(s, n, &len);
    if (!data)
        return RG_ENOMEM;
    int r = len > UINT32_MAX ? RG_EINTERNAL : 0;
    if (r == 0 && (msgpack_pack_bin(pk, len) || msgpack_pack_bin_body(pk, data, len)))
        r = RG_ENOMEM;
    free(data);
    return r;
}

/* Number of children of an array or object. */
static size_t child_count(const cJSON *v)
{
    size_t n = 0;
    for (const cJSON *ch = v->child; ch; ch = ch->next)
        n++;
    return n;
}

static int mpe_array(msgpack_packer *pk, const cJSON *v, int depth)
{
    size_t n = child_count(v);
    int r;
    if (n > UINT32_MAX)
        return RG_EINTERNAL;
    if (msgpack_pack_array(pk, n))
        return RG_ENOMEM;
    for (const cJSON *ch = v->child; ch; ch = ch->next)
        if ((r = mpe_value(pk, ch, depth + 1)) < 0)
            return r;
    return 0;
}

static int mpe_object(msgpack_packer *pk, const cJSON *v, int depth)
{
    size_t n = child_count(v);
    int r;
    if (n > UINT32_MAX)
        return RG_EINTERNAL;
    if (msgpack_pack_map(pk, n))
        return RG_ENOMEM;
    for (const cJSON *ch = v->child; ch; ch = ch->next) {
        if (!ch->string)
            return RG_EINTERNAL;
        if ((r = mpe_str(pk, ch->string)) < 0 || (r = mpe_value(pk, ch, depth + 1)) < 0)
            return r;
    }
    return 0;
}

static int mpe_value(msgpack_packer *pk, const cJSON *v, int depth)
{
    if (!v || depth > WIRE_ENCODE_MAX_DEPTH)
        return RG_EINTERNAL;
    switch (v->type & 0xff) {
    case cJSON_NULL:
        return msgpack_pack_nil(pk) ? RG_ENOMEM : 0;
    case cJSON_False:
        return msgpack_pack_false(pk) ? RG_ENOMEM : 0;
    case cJSON_True:
        return msgpack_pack_true(pk) ? RG_ENOMEM : 0;
    case cJSON_Number:
        return (v->type & WIRE_FLOAT) ? (msgpack_pack_double(pk, v->valuedouble) ? RG_ENOMEM : 0)
                                      : mpe_number(pk, v->valuedouble);
    case cJSON_String:
        if (!v->valuestring)
            return RG_EINTERNAL;
        return wire_is_bin(v) ? mpe_bin(pk, v->valuestring) : mpe_str(pk, v->valuestring);
    case cJSON_Array:
        return mpe_array(pk, v, depth);
    case cJSON_Object:
        return mpe_object(pk, v, depth);
    default:
        return RG_EINTERNAL;
    }
}

int wire_mp_encode(const cJSON *v, rg_buf *out)
{
    size_t start = out->len;
    msgpack_packer pk;

    msgpack_packer_init(&pk, out, mp_write);
    int r = mpe_value(&pk, v, 0);
    if (r < 0)
        buf_rewind(out, start);
    return r;
}

/* ---- cJSON to JSON ------------------------------------------------------- */

static int jse_value(rg_buf *b, const cJSON *v, int depth);

static int jse_number(rg_buf *b, double d)
{
    char s[32];

    if (!isfinite(d))
        return rg_buf_puts(b, "null");
    if (is_int64(d)) {
        snprintf(s, sizeof s, "%" PRId64, (int64_t)d);
    } else {
        snprintf(s, sizeof s, "%.15g", d);
        if (strtod(s, NULL) != d)
            snprintf(s, sizeof s, "%.17g", d);
    }
    return rg_buf_puts(b, s);
}

static int jse_str(rg_buf *b, const char *s)
{
    return s ? rg_buf_json_str(b, s, strlen(s)) : RG_EINTERNAL;
}

static int jse_array(rg_buf *b, const cJSON *v, int depth)
{
    int r;
    if (rg_buf_append(b, "[", 1) < 0)
        return RG_ENOMEM;
    for (const cJSON *ch = v->child; ch; ch = ch->next) {
        if (ch != v->child && rg_buf_append(b, ",", 1) < 0)
            return RG_ENOMEM;
        if ((r = jse_value(b, ch, depth + 1)) < 0)
            return r;
    }
    return rg_buf_append(b, "]", 1);
}

static int jse_object(rg_buf *b, const cJSON *v, int depth)
{
    int r;
    if (rg_buf_append(b, "{", 1) < 0)
        return RG_ENOMEM;
    for (const cJSON *ch = v->child; ch; ch = ch->next) {
        if (ch != v->child && rg_buf_append(b, ",", 1) < 0)
            return RG_ENOMEM;
        if ((r = jse_str(b, ch->string)) < 0)
            return r;
        if (rg_buf_append(b, ":", 1) < 0)
            return RG_ENOMEM;
        if ((r = jse_value(b, ch, depth + 1)) < 0)
            return r;
    }
    return rg_buf_append(b, "}", 1);
}

static int jse_value(rg_buf *b, const cJSON *v, int depth)
{
    if (!v || depth > WIRE_ENCODE_MAX_DEPTH)
        return RG_EINTERNAL;
    switch (v->type & 0xff) {
    case cJSON_NULL:
        return rg_buf_puts(b, "null");
    case cJSON_False:
        return rg_buf_puts(b, "false");
    case cJSON_True:
        return rg_buf_puts(b, "true");
    case cJSON_Number:
        return jse_number(b, v->valuedouble);
    case cJSON_String:
        return jse_str(b, v->valuestring);
    case cJSON_Array:
        return jse_array(b, v, depth);
    case cJSON_Object:
        return jse_object(b, v, depth);
    default:
        return RG_EINTERNAL;
    }
}

int wire_json_encode(const cJSON *v, rg_buf *out)
{
    size_t start = out->len;
    int r = jse_value(out, v, 0);
    if (r < 0)
        buf_rewind(out, start);
    return r;
}
