/*
 * decode.c - untrusted request bodies (msgpack, JSON) to cJSON trees. See
 * wire.h for the contracts. Every input byte is untrusted: lengths are
 * checked against what is left before anything is sized by them, and
 * recursion only ever runs over trees whose depth has already been bounded.
 */
#include "wire/wire_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#define WIRE_KEYS_ON_STACK 16 /* map keys checked without malloc */
#define WIRE_ERR_KEY_BYTES 40 /* bytes of a key quoted in a message */

static const char msg_utf8[] = "strings must be UTF-8 without NUL bytes";

/* ---- errors -------------------------------------------------------------- */

static int nomem(char *err, size_t errlen)
{
    if (err && errlen)
        rg_strlcpy(err, "out of memory while decoding the body", errlen);
    return RG_ENOMEM;
}

static void err_clear(char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
}

/* ---- UTF-8 --------------------------------------------------------------- */

/*
 * Length of the UTF-8 sequence at p (n > 0 bytes available), or 0 when it is
 * not a valid one: NUL, a stray continuation byte, an overlong form, a
 * surrogate, a code point above U+10FFFF or a sequence cut short.
 */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    unsigned char c = p[0], lo = 0x80, hi = 0xbf;
    size_t len;

    if (c >= 0x01 && c <= 0x7f)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        lo = c == 0xe0 ? 0xa0 : 0x80;
        hi = c == 0xed ? 0x9f : 0xbf;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        lo = c == 0xf0 ? 0x90 : 0x80;
        hi = c == 0xf4 ? 0x8f : 0xbf;
    } else {
        return 0;
    }
    if (n < len || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return len;
}

/* 1 when s (n bytes) is UTF-8 without NUL bytes. */
static int utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    while (i < n) {
        size_t k = utf8_seq(p + i, n - i);
        if (!k)
            return 0;
        i += k;
    }
    return 1;
}

/* ---- duplicate keys ------------------------------------------------------ */

struct key_ref {
    const char *p;
    size_t n;
};

/* The keys of one map or object; small sets live in the struct itself. */
struct key_set {
    struct key_ref small[WIRE_KEYS_ON_STACK];
    struct key_ref *v;
    size_t n;
};

static int key_set_init(struct key_set *ks, size_t cap)
{
    ks->n = 0;
    ks->v = ks->small;
    if (cap <= WIRE_KEYS_ON_STACK)
        return 0;
    ks->v = cap <= SIZE_MAX / sizeof *ks->v ? malloc(cap * sizeof *ks->v) : NULL;
    return ks->v ? 0 : RG_ENOMEM;
}

static void key_set_destroy(struct key_set *ks)
{
    if (ks->v != ks->small)
        free(ks->v);
}

static int key_cmp(const void *a, const void *b)
{
    const struct key_ref *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = n ? memcmp(x->p, y->p, n) : 0;
    if (c)
        return c;
    return (x->n > y->n) - (x->n < y->n);
}

/* Sorts the set and returns a key that occurs twice in it, or NULL. */
static const struct key_ref *key_set_dup(struct key_set *ks)
{
    if (ks->n < 2)
        return NULL;
    qsort(ks->v, ks->n, sizeof *ks->v, key_cmp);
    for (size_t i = 1; i < ks->n; i++)
        if (key_cmp(&ks->v[i - 1], &ks->v[i]) == 0)
            return &ks->v[i];
    return NULL;
}

/*
 * Copies key k into dst (WIRE_ERR_KEY_BYTES + 4 bytes) for a message: whole
 * UTF-8 characters only, quotes, backslashes and control bytes as '?', and
 * "..." when it is cut.
 */
static void key_quote(char *dst, const struct key_ref *k)
{
    const unsigned char *s = (const unsigned char *)k->p;
    size_t i = 0, o = 0;

    while (i < k->n) {
        size_t len = utf8_seq(s + i, k->n - i);
        if (len == 0)
            len = 1;
        if (o + len > WIRE_ERR_KEY_BYTES) {
            memcpy(dst + o, "...", 3);
            o += 3;
            break;
        }
        if (len > 1)
            memcpy(dst + o, s + i, len);
        else if (s[i] < 0x20 || s[i] == 0x7f || s[i] == '"' || s[i] == '\\')
            dst[o] = '?';
        else
            dst[o] = (char)s[i];
        o += len;
        i += len;
    }
    dst[o] = '\0';
}

/* Checks that no key of ks occurs twice: 0, or RG_EBADREQ naming the key. */
static int key_set_check(struct key_set *ks, char *err, size_t errlen)
{
    const struct key_ref *dup = key_set_dup(ks);
    if (!dup)
        return 0;
    char q[WIRE_ERR_KEY_BYTES + 4];
    key_quote(q, dup);
    return rg_errf(err, errlen, RG_EBADREQ, "duplicate key \"%s\"", q);
}

/* ---- msgpack pre-scan ---------------------------------------------------- */

struct mp_scan {
    const unsigned char *p;
    size_t len;
    size_t off;
    char *err;
    size_t errlen;
};

/* What a tag byte from 0xc0 to 0xdf introduces. */
enum mp_tag_kind { MP_FIXED, MP_RESERVED, MP_STR, MP_BIN, MP_EXT, MP_ARRAY, MP_MAP };

/* kind, and the payload size (MP_FIXED) or the size of the length field. */
static const struct {
    unsigned char kind;
    unsigned char size;
} mp_tags[32] = {
    {MP_FIXED, 0},    /* 0xc0 nil */
    {MP_RESERVED, 0}, /* 0xc1 never used */
    {MP_FIXED, 0},    /* 0xc2 false */
    {MP_FIXED, 0},    /* 0xc3 true */
    {MP_BIN, 1},      /* 0xc4 bin 8 */
    {MP_BIN, 2},      /* 0xc5 bin 16 */
    {MP_BIN, 4},      /* 0xc6 bin 32 */
    {MP_EXT, 1},      /* 0xc7 ext 8 */
    {MP_EXT, 2},      /* 0xc8 ext 16 */
    {MP_EXT, 4},      /* 0xc9 ext 32 */
    {MP_FIXED, 4},    /* 0xca float 32 */
    {MP_FIXED, 8},    /* 0xcb float 64 */
    {MP_FIXED, 1},    /* 0xcc uint 8 */
    {MP_FIXED, 2},    /* 0xcd uint 16 */
    {MP_FIXED, 4},    /* 0xce uint 32 */
    {MP_FIXED, 8},    /* 0xcf uint 64 */
    {MP_FIXED, 1},    /* 0xd0 int 8 */
    {MP_FIXED, 2},    /* 0xd1 int 16 */
    {MP_FIXED, 4},    /* 0xd2 int 32 */
    {MP_FIXED, 8},    /* 0xd3 int 64 */
    {MP_FIXED, 2},    /* 0xd4 fixext 1: type byte and data */
    {MP_FIXED, 3},    /* 0xd5 fixext 2 */
    {MP_FIXED, 5},    /* 0xd6 fixext 4 */
    {MP_FIXED, 9},    /* 0xd7 fixext 8 */
    {MP_FIXED, 17},   /* 0xd8 fixext 16 */
    {MP_STR, 1},      /* 0xd9 str 8 */
    {MP_STR, 2},      /* 0xda str 16 */
    {MP_STR, 4},      /* 0xdb str 32 */
    {MP_ARRAY, 2},    /* 0xdc array 16 */
    {MP_ARRAY, 4},    /* 0xdd array 32 */
    {MP_MAP, 2},      /* 0xde map 16 */
    {MP_MAP, 4},      /* 0xdf map 32 */
};

static int mp_short(const struct mp_scan *s)
{
    return rg_errf(s->err, s->errlen, RG_EBADREQ,
                   "the body ends in the middle of a value (after %zu bytes)", s->len);
}

/* Skips n bytes whose size the tag byte fixes. */
static int mp_fixed(struct mp_scan *s, size_t n)
{
    if (s->len - s->off < n)
        return mp_short(s);
    s->off += n;
    return 0;
}

/* Reads a big-endian length field of n bytes (1, 2 or 4) into *v. */
static int mp_read_len(struct mp_scan *s, size_t n, size_t *v)
{
    if (s->len - s->off < n)
        return mp_short(s);
    size_t x = 0;
    for (size_t i = 0; i < n; i++)
        x = x << 8 | s->p[s->off + i];
    s->off += n;
    *v = x;
    return 0;
}

/* Skips a payload of n bytes that a header declared; what names it for a person. */
static int mp_payload(struct mp_scan *s, size_t n, const char *what)
{
    size_t left = s->len - s->off;
    if (n > left)
        return rg_errf(s->err, s->errlen, RG_EBADREQ,
                       "the body declares %s of %zu bytes but has %zu bytes left", what, n, left);
    s->off += n;
    return 0;
}

/* Checks a container's declared count n; *items gets how many values follow. */
static int mp_container(struct mp_scan *s, int is_map, size_t n, size_t *items)
{
    size_t left = s->len - s->off;
    if (is_map && n > left / 2)
        return rg_errf(s->err, s->errlen, RG_EBADREQ,
                       "the body declares a map of %zu entries but has %zu bytes left", n, left);
    if (!is_map && n > left)
        return rg_errf(s->err, s->errlen, RG_EBADREQ,
                       "the body declares an array of %zu elements but has %zu bytes left", n,
                       left);
    *items = is_map ? 2 * n : n;
    return 0;
}

/* Reads the header of a tag from 0xc0 to 0xdf (already consumed) and skips its payload. */
static int mp_tagged(struct mp_scan *s, unsigned char tag, int *container, size_t *items)
{
    unsigned kind = mp_tags[tag - 0xc0].kind;
    size_t size = mp_tags[tag - 0xc0].size, n = 0;
    int r;

    if (kind == MP_FIXED)
        return mp_fixed(s, size);
    if (kind == MP_RESERVED)
        return rg_errf(s->err, s->errlen, RG_EBADREQ,
                       "the body holds the reserved byte 0xc1 at offset %zu", s->off - 1);
    if ((r = mp_read_len(s, size, &n)) < 0)
        return r;
    if (kind == MP_STR)
        return mp_payload(s, n, "a string");
    if (kind == MP_BIN)
        return mp_payload(s, n, "binary data");
    if (kind == MP_EXT)
        return (r = mp_fixed(s, 1)) < 0 ? r : mp_payload(s, n, "an extension value");
    *container = 1;
    return mp_container(s, kind == MP_MAP, n, items);
}

/*
 * Reads one value's header at s->off and skips its payload. A container sets
 * *container and puts in *items the values inside it (a map's keys and
 * values); its contents are read by the following calls.
 */
static int mp_item(struct mp_scan *s, int *container, size_t *items)
{
    *container = 0;
    *items = 0;
    if (s->off >= s->len)
        return mp_short(s);
    unsigned char b = s->p[s->off++];
    if (b <= 0x7f || b >= 0xe0)
        return 0;
    if (b <= 0x9f) {
        *container = 1;
        return mp_container(s, b <= 0x8f, b & 0x0f, items);
    }
    if (b <= 0xbf)
        return mp_payload(s, b & 0x1f, "a string");
    return mp_tagged(s, b, container, items);
}

int wire_mp_prescan(const void *buf, size_t len, int max_depth, char *err, size_t errlen)
{
    struct mp_scan s = {buf, len, 0, err, errlen};
    size_t left[WIRE_PRESCAN_DEPTH_CAP]; /* values still to read in each open container */
    int depth = 0;

    err_clear(err, errlen);
    if (max_depth < 0 || max_depth > WIRE_PRESCAN_DEPTH_CAP) {
        if (err && errlen)
            rg_strlcpy(err, "wire_mp_prescan: max_depth out of range", errlen);
        return RG_EINTERNAL;
    }
    if (len == 0)
        return rg_errf(err, errlen, RG_EBADREQ, "the body is empty");
    do {
        int container, r;
        size_t items;
        if ((r = mp_item(&s, &container, &items)) < 0)
            return r;
        if (depth > 0)
            left[depth - 1]--;
        if (container && depth >= max_depth)
            return rg_errf(err, errlen, RG_EBADREQ, "the body nests deeper than %d levels",
                           max_depth);
        if (items > 0)
            left[depth++] = items;
        while (depth > 0 && left[depth - 1] == 0)
            depth--;
    } while (depth > 0);
    if (s.off != len)
        return rg_errf(err, errlen, RG_EBADREQ,
                       "the body has %zu bytes after its value (a body holds one value)",
                       len - s.off);
    return 0;
}

/* ---- msgpack to cJSON ---------------------------------------------------- */

/* One decode: a scratch buffer for NUL-terminated copies, and the caller's err. */
struct mp_ctx {
    rg_buf scratch;
    char *err;
    size_t errlen;
};

static int mp_value(struct mp_ctx *c, const msgpack_object *o, cJSON **out);

/* Stores a freshly created item in *out; a NULL item is ENOMEM. */
static int mp_made(struct mp_ctx *c, cJSON *item, cJSON **out)
{
    if (!item)
        return nomem(c->err, c->errlen);
    *out = item;
    return 0;
}

/* Checks a str and copies it into the scratch buffer as a C string in *s. */
static int mp_cstr(struct mp_ctx *c, const msgpack_object_str *str, const char **s)
{
    if (!utf8_valid(str->ptr, str->size))
        return rg_errf(c->err, c->errlen, RG_EBADREQ, "%s", msg_utf8);
    rg_buf_reset(&c->scratch);
    if (rg_buf_append(&c->scratch, str->ptr, str->size) < 0)
        return nomem(c->err, c->errlen);
    *s = c->scratch.data;
    return 0;
}

static int mp_int(struct mp_ctx *c, const msgpack_object *o, cJSON **out)
{
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 > WIRE_INT_EXACT_MAX)
        return rg_errf(c->err, c->errlen, RG_EBADREQ,
                       "integers must lie within -2^53..2^53, which a double holds exactly; "
                       "%" PRIu64 " does not",
                       o->via.u64);
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER && o->via.i64 < -(int64_t)WIRE_INT_EXACT_MAX)
        return rg_errf(c->err, c->errlen, RG_EBADREQ,
                       "integers must lie within -2^53..2^53, which a double holds exactly; "
                       "%" PRId64 " does not",
                       o->via.i64);
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
        return mp_made(c, cJSON_CreateNumber((double)o->via.u64), out);
    return mp_made(c, cJSON_CreateNumber((double)o->via.i64), out);
}

static int mp_str(struct mp_ctx *c, const msgpack_object *o, cJSON **out)
{
    const char *s;
    int r = mp_cstr(c, &o->via.str, &s);
    return r < 0 ? r : mp_made(c, cJSON_CreateString(s), out);
}

static int mp_array(struct mp_ctx *c, const msgpack_object *o, cJSON **out)
{
    cJSON *arr = cJSON_CreateArray();
    if (!arr)
        return nomem(c->err, c->errlen);
    for (uint32_t i = 0; i < o->via.array.size; i++) {
        cJSON *item;
        int r = mp_value(c, &o->via.array.ptr[i], &item);
        if (r == 0 && !cJSON_AddItemToArray(arr, item)) {
            cJSON_Delete(item);
            r = nomem(c->err, c->errlen);
        }
        if (r < 0) {
            cJSON_Delete(arr);
            return r;
        }
    }
    *out = arr;
    return 0;
}

/* Checks a map's keys: strings, UTF-8 without NUL, each at most once. */
static int mp_map_keys(struct mp_ctx *c, const msgpack_object_map *m)
{
    struct key_set ks;
    int r = 0;

    if (key_set_init(&ks, m->size) < 0)
        return nomem(c->err, c->errlen);
    for (uint32_t i = 0; i < m->size && r == 0; i++) {
        const msgpack_object *k = &m->ptr[i].key;
        if (k->type != MSGPACK_OBJECT_STR)
            r = rg_errf(c->err, c->errlen, RG_EBADREQ, "map keys must be strings");
        else if (!utf8_valid(k->via.str.ptr, k->via.str.size))
            r = rg_errf(c->err, c->errlen, RG_EBADREQ, "%s", msg_utf8);
        else
            ks.v[ks.n++] = (struct key_ref){k->via.str.ptr, k->via.str.size};
    }
    if (r == 0)
        r = key_set_check(&ks, c->err, c->errlen);
    key_set_destroy(&ks);
    return r;
}

/* Decodes value i of map m and adds it to obj under its key. */
static int mp_map_entry(struct mp_ctx *c, const msgpack_object_map *m, uint32_t i, cJSON *obj)
{
    cJSON *val;
    const char *key;
    int r = mp_value(c, &m->ptr[i].val, &val);
    if (r < 0)
        return r;
    /* The key goes through the scratch buffer after the value, which used it too. */
    if ((r = mp_cstr(c, &m->ptr[i].key.via.str, &key)) < 0 ||
        !cJSON_AddItemToObject(obj, key, val)) {
        cJSON_Delete(val);
        return r < 0 ? r : nomem(c->err, c->errlen);
    }
    return 0;
}

static int mp_map(struct mp_ctx *c, const msgpack_object *o, cJSON **out)
{
    const msgpack_object_map *m = &o->via.map;
    int r = mp_map_keys(c, m);
    if (r < 0)
        return r;
    cJSON *obj = cJSON_CreateObject();
    if (!obj)
        return nomem(c->err, c->errlen);
    for (uint32_t i = 0; i < m->size; i++) {
        if ((r = mp_map_entry(c, m, i, obj)) < 0) {
            cJSON_Delete(obj);
            return r;
        }
    }
    *out = obj;
    return 0;
}

/* Converts one msgpack value (depth already bounded by the pre-scan) to *out. */
static int mp_value(struct mp_ctx *c, const msgpack_object *o, cJSON **out)
{
    *out = NULL;
    switch (o->type) {
    case MSGPACK_OBJECT_NIL:
        return mp_made(c, cJSON_CreateNull(), out);
    case MSGPACK_OBJECT_BOOLEAN:
        return mp_made(c, cJSON_CreateBool(o->via.boolean), out);
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        return mp_int(c, o, out);
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        if (!isfinite(o->via.f64))
            return rg_errf(c->err, c->errlen, RG_EBADREQ,
                           "numbers must be finite (no NaN or infinity)");
        return mp_made(c, cJSON_CreateNumber(o->via.f64), out);
    case MSGPACK_OBJECT_STR:
        return mp_str(c, o, out);
    case MSGPACK_OBJECT_BIN:
        return mp_made(c, wire_bin_item(&c->scratch, o->via.bin.ptr, o->via.bin.size), out);
    case MSGPACK_OBJECT_ARRAY:
        return mp_array(c, o, out);
    case MSGPACK_OBJECT_MAP:
        return mp_map(c, o, out);
    case MSGPACK_OBJECT_EXT:
        return rg_errf(c->err, c->errlen, RG_EBADREQ,
                       "msgpack extension types (ext) are not accepted");
    }
    return rg_errf(c->err, c->errlen, RG_EBADREQ,
                   "the body holds a value of an unknown msgpack type");
}

int wire_mp_decode(const void *buf, size_t len, cJSON **out, char *err, size_t errlen)
{
    struct mp_ctx c = {.err = err, .errlen = errlen};
    msgpack_unpacked up;
    size_t off = 0;

    *out = NULL;
    int r = wire_mp_prescan(buf, len, WIRE_MAX_DEPTH, err, errlen);
    if (r < 0)
        return r;
    rg_buf_init(&c.scratch);
    msgpack_unpacked_init(&up);
    msgpack_unpack_return ur = msgpack_unpack_next(&up, buf, len, &off);
    if (ur == MSGPACK_UNPACK_NOMEM_ERROR)
        r = nomem(err, errlen);
    else if (ur != MSGPACK_UNPACK_SUCCESS || off != len)
        r = rg_errf(err, errlen, RG_EBADREQ, "the body is not valid msgpack");
    else
        r = mp_value(&c, &up.data, out);
    msgpack_unpacked_destroy(&up);
    rg_buf_destroy(&c.scratch);
    return r;
}

/* ---- JSON to cJSON ------------------------------------------------------- */

static int json_space(unsigned char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* 1 when the escape at p (a backslash, n bytes available) is \u0000. */
static int json_nul_escape(const unsigned char *p, size_t n)
{
    return n >= 6 && p[1] == 'u' && !memcmp(p + 2, "0000", 4);
}

/* Checks the byte at p[i] (at least 0x80, or a control byte) of a JSON body. */
static int json_odd_byte(const unsigned char *p, size_t len, size_t i, int in_str, size_t *k,
                         char *err, size_t errlen)
{
    if (p[i] == '\0')
        return in_str
                   ? rg_errf(err, errlen, RG_EBADREQ, "%s (a NUL byte at byte %zu)", msg_utf8, i)
                   : rg_errf(err, errlen, RG_EBADREQ, "the body holds a NUL byte at byte %zu", i);
    if (p[i] < 0x80) {
        *k = 1;
        if (in_str || json_space(p[i]))
            return 0;
        return rg_errf(err, errlen, RG_EBADREQ,
                       "the body holds the control byte 0x%02x at byte %zu", p[i], i);
    }
    if ((*k = utf8_seq(p + i, len - i)) > 0)
        return 0;
    return in_str ? rg_errf(err, errlen, RG_EBADREQ, "%s (byte %zu)", msg_utf8, i)
                  : rg_errf(err, errlen, RG_EBADREQ, "the body is not UTF-8 text (byte %zu)", i);
}

/* Moves *i past the decimal digits at p[*i]: 0 when there are none. */
static int json_digits(const unsigned char *p, size_t len, size_t *i)
{
    size_t from = *i;
    while (*i < len && p[*i] >= '0' && p[*i] <= '9')
        (*i)++;
    return *i > from;
}

/*
 * The length of the JSON number (RFC 8259 section 6) at p, 0 when what is
 * there is not one: cJSON reads numbers with strtod and so would take 01, 1.
 * and -.5 too, which a strict decoder refuses.
 */
static size_t json_number_len(const unsigned char *p, size_t len)
{
    size_t i = 0;
    if (i < len && p[i] == '-')
        i++;
    if (i < len && p[i] == '0')
        i++;
    else if (!json_digits(p, len, &i))
        return 0;
    if (i < len && p[i] == '.' && (++i, !json_digits(p, len, &i)))
        return 0;
    if (i < len && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        if (i < len && (p[i] == '+' || p[i] == '-'))
            i++;
        if (!json_digits(p, len, &i))
            return 0;
    }
    /* Whatever follows must end the number: 01 and 1.2.3 are not numbers. */
    if (i < len && ((p[i] >= '0' && p[i] <= '9') || p[i] == '.' || p[i] == 'e' || p[i] == 'E' ||
                    p[i] == '+' || p[i] == '-'))
        return 0;
    return i;
}

/*
 * Checks a JSON body before cJSON parses it: UTF-8 throughout, no NUL byte,
 * no \u0000, no control byte outside strings, numbers as RFC 8259 writes
 * them, and nesting at most WIRE_MAX_DEPTH. Brackets are counted outside strings, which is exact
 * for valid JSON; invalid JSON that this lets through cJSON refuses.
 */
static int json_prescan(const unsigned char *p, size_t len, char *err, size_t errlen)
{
    int depth = 0, in_str = 0, r;
    size_t i = 0, k = 0;

    while (i < len) {
        unsigned char ch = p[i];
        if (ch < 0x20 || ch >= 0x80) {
            if ((r = json_odd_byte(p, len, i, in_str, &k, err, errlen)) < 0)
                return r;
            i += k;
            continue;
        }
        if (in_str && ch == '\\') {
            if (json_nul_escape(p + i, len - i))
                return rg_errf(err, errlen, RG_EBADREQ, "%s (\\u0000 at byte %zu)", msg_utf8, i);
            /* Skip the escaped character unless it needs the checks above. */
            i += i + 1 < len && p[i + 1] >= 0x20 && p[i + 1] < 0x80 ? 2 : 1;
            continue;
        }
        if (!in_str && (ch == '-' || (ch >= '0' && ch <= '9'))) {
            size_t n = json_number_len(p + i, len - i);
            if (!n)
                return rg_errf(err, errlen, RG_EBADREQ,
                               "the body is not valid JSON (a malformed number at byte %zu)", i);
            i += n;
            continue;
        }
        if (ch == '"')
            in_str = !in_str;
        else if (!in_str && (ch == '[' || ch == '{') && ++depth > WIRE_MAX_DEPTH)
            return rg_errf(err, errlen, RG_EBADREQ,
                           "the body nests deeper than %d levels (byte %zu)", WIRE_MAX_DEPTH, i);
        else if (!in_str && (ch == ']' || ch == '}') && depth > 0)
            depth--;
        i++;
    }
    return 0;
}

/* Checks that the keys of object o are unique. */
static int json_keys_unique(const cJSON *o, char *err, size_t errlen)
{
    struct key_set ks;
    size_t n = 0;
    int r;

    for (const cJSON *ch = o->child; ch; ch = ch->next)
        n++;
    if (key_set_init(&ks, n) < 0)
        return nomem(err, errlen);
    for (const cJSON *ch = o->child; ch; ch = ch->next)
        ks.v[ks.n++] = (struct key_ref){ch->string, ch->string ? strlen(ch->string) : 0};
    r = key_set_check(&ks, err, errlen);
    key_set_destroy(&ks);
    return r;
}

/*
 * Checks what the pre-scan cannot see in a parsed tree: finite numbers and
 * unique keys (and, defensively, the depth; v's parents are depth deep).
 */
static int json_check(const cJSON *v, int depth, char *err, size_t errlen)
{
    int r;

    if (cJSON_IsNumber(v) && !isfinite(v->valuedouble))
        return rg_errf(err, errlen, RG_EBADREQ, "numbers must be finite (no NaN or infinity)");
    if (!cJSON_IsArray(v) && !cJSON_IsObject(v))
        return 0;
    if (depth >= WIRE_MAX_DEPTH)
        return rg_errf(err, errlen, RG_EBADREQ, "the body nests deeper than %d levels",
                       WIRE_MAX_DEPTH);
    if (cJSON_IsObject(v) && (r = json_keys_unique(v, err, errlen)) < 0)
        return r;
    for (const cJSON *ch = v->child; ch; ch = ch->next)
        if ((r = json_check(ch, depth + 1, err, errlen)) < 0)
            return r;
    return 0;
}

/* The sentence for a body cJSON refused; end is where it stopped (may be NULL). */
static int json_parse_error(const char *buf, size_t len, const char *end, char *err, size_t errlen)
{
    if (end && end >= buf && (size_t)(end - buf) <= len)
        return rg_errf(err, errlen, RG_EBADREQ, "the body is not valid JSON (error at byte %zu)",
                       (size_t)(end - buf));
    return rg_errf(err, errlen, RG_EBADREQ, "the body is not valid JSON");
}

int wire_json_decode(const void *buf, size_t len, cJSON **out, char *err, size_t errlen)
{
    const char *text = buf, *end = NULL;
    int r;

    *out = NULL;
    err_clear(err, errlen);
    if (len == 0)
        return rg_errf(err, errlen, RG_EBADREQ, "the body is empty");
    if ((r = json_prescan(buf, len, err, errlen)) < 0)
        return r;
    /* Not cJSON_GetErrorPtr, which is one global for all threads: end says where. */
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root)
        return json_parse_error(text, len, end, err, errlen);
    size_t off = (size_t)(end - text);
    while (off < len && json_space((unsigned char)text[off]))
        off++;
    if (off != len)
        r = rg_errf(err, errlen, RG_EBADREQ, "the body has more after its JSON value (byte %zu)",
                    off);
    else
        r = json_check(root, 0, err, errlen);
    if (r < 0) {
        cJSON_Delete(root);
        return r;
    }
    *out = root;
    return 0;
}
