/*
 * rg.c - shared error table, time, environment, logging and rg_buf.
 * See rg.h for contracts. Everything here is thread-safe.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include "common/rg.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <msgpack.h>

/* ---- errors ---- */

struct err_row {
    int err;
    const char *code;
    int http;
    int transient;
};

static const struct err_row err_table[] = {
    {RG_EBADREQ, "bad_request", 400, 0},
    {RG_EUNAUTH, "unauthorized", 401, 0},
    {RG_EFORBIDDEN, "forbidden", 403, 0},
    {RG_EBLOCKEDURL, "blocked_url", 403, 0},
    {RG_ENOTFOUND, "not_found", 404, 0},
    {RG_ECONFLICT, "conflict", 409, 1},
    {RG_ETOOLARGE, "payload_too_large", 413, 0},
    {RG_EMEDIA, "unsupported_media_type", 415, 0},
    {RG_ESTALE, "stale_ref", 422, 0},
    {RG_ENOMATCH, "no_match", 422, 1},
    {RG_EAMBIGUOUS, "ambiguous", 422, 0},
    {RG_ENOTACTIONABLE, "not_actionable", 422, 1},
    {RG_ENAVFAILED, "navigation_failed", 422, 1},
    {RG_ERATE, "rate_limited", 429, 1},
    {RG_EQUOTA, "quota_exceeded", 429, 0},
    {RG_ECRASHED, "browser_crashed", 502, 1},
    {RG_EPOOL, "pool_exhausted", 503, 1},
    {RG_EUNAVAIL, "unavailable", 503, 1},
    {RG_ETIMEOUT, "timeout", 504, 1},
    {RG_EINTERNAL, "internal", 500, 1},
    {RG_ECDP, "internal", 500, 1},
    {RG_EPROTO, "internal", 500, 1},
    {RG_ENOMEM, "internal", 500, 1},
    {RG_EBUSY, "unavailable", 503, 1},
};

static const struct err_row *err_find(int err)
{
    for (size_t i = 0; i < sizeof(err_table) / sizeof(err_table[0]); i++)
        if (err_table[i].err == err)
            return &err_table[i];
    return NULL;
}

const char *rg_err_code(int err)
{
    const struct err_row *r = err_find(err);
    return r ? r->code : "internal";
}

int rg_err_http(int err)
{
    const struct err_row *r = err_find(err);
    return r ? r->http : 500;
}

int rg_err_transient(int err)
{
    const struct err_row *r = err_find(err);
    return r ? r->transient : 1;
}

/* ---- time ---- */

int64_t rg_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t rg_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t rg_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rg_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

/* ---- strings ---- */

size_t rg_strlcpy(char *dst, const char *src, size_t size)
{
    size_t n = strlen(src);
    if (size) {
        size_t k = n < size - 1 ? n : size - 1;
        memcpy(dst, src, k);
        dst[k] = '\0';
    }
    return n;
}

size_t rg_utf8_prefix(const char *s, size_t max)
{
    size_t n = strnlen(s, max + 1);
    if (n <= max)
        return n;
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
        n--; /* s[n] continues a sequence that began before the cut */
    return n;
}

static const char b64_std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64_url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static int b64val(unsigned char c, int url)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == (url ? '-' : '+'))
        return 62;
    if (c == (url ? '_' : '/'))
        return 63;
    return -1;
}

long rg_base64_decode_to(const char *s, size_t n, unsigned char *out, size_t cap, int flags)
{
    int url = (flags & RG_B64_URL) != 0;
    while (!url && n && s[n - 1] == '=')
        n--;
    if (n % 4 == 1)
        return -1;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64val((unsigned char)s[i], url);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (out) {
                if (o >= cap)
                    return -1;
                out[o] = (unsigned char)(acc >> bits);
            }
            o++;
            acc &= (1u << bits) - 1;
        }
    }
    if (url && acc != 0) /* one token, one spelling */
        return -1;
    return (long)o;
}

unsigned char *rg_base64_decode(const char *s, size_t n, size_t *out_len)
{
    size_t cap = n / 4 * 3 + 3;
    unsigned char *out = malloc(cap);
    if (!out)
        return NULL;
    long got = rg_base64_decode_to(s, n, out, cap, 0);
    if (got < 0) {
        free(out);
        return NULL;
    }
    *out_len = (size_t)got;
    return out;
}

int rg_base64_append(rg_buf *b, const void *data, size_t n, int flags)
{
    const unsigned char *in = data;
    const char *abc = flags & RG_B64_URL ? b64_url : b64_std;
    int pad = !(flags & RG_B64_URL);
    if (n / 3 >= SIZE_MAX / 4 - 1)
        return RG_ENOMEM;
    size_t rest = n % 3, outn = n / 3 * 4 + (rest ? (pad ? 4 : rest + 1) : 0);
    if (rg_buf_reserve(b, outn) < 0)
        return RG_ENOMEM;
    char *o = b->data + b->len;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        *o++ = abc[v >> 18];
        *o++ = abc[v >> 12 & 63];
        *o++ = abc[v >> 6 & 63];
        *o++ = abc[v & 63];
    }
    if (rest) {
        uint32_t v = (uint32_t)in[i] << 16 | (rest == 2 ? (uint32_t)in[i + 1] << 8 : 0);
        *o++ = abc[v >> 18];
        *o++ = abc[v >> 12 & 63];
        if (rest == 2)
            *o++ = abc[v >> 6 & 63];
        else if (pad)
            *o++ = '=';
        if (pad)
            *o++ = '=';
    }
    b->len += outn;
    b->data[b->len] = '\0';
    return 0;
}

/* ---- files ---- */

/* nftw passes no user data: a failure is noted here, and the walk goes on. */
static __thread int rm_failed;

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    if (remove(path) < 0 && errno != ENOENT)
        rm_failed = 1;
    return 0;
}

int rg_rmtree(const char *path)
{
    rm_failed = 0;
    int rc = nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return rc == 0 && !rm_failed ? 0 : -1;
}

/* ---- environment ---- */

long rg_env_long(const char *name, long def, long min, long max)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return def;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max) {
        rg_log(RG_LOG_WARN, "config", "%s=%s is not an integer in [%ld, %ld]; using %ld", name, s,
               min, max, def);
        return def;
    }
    return v;
}

/* ---- logging ---- */

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static int log_level = RG_LOG_INFO;

static void log_init(void)
{
    const char *s = getenv("REFGATE_LOG_LEVEL");
    if (!s)
        return;
    if (!strcmp(s, "error"))
        log_level = RG_LOG_ERROR;
    else if (!strcmp(s, "warn"))
        log_level = RG_LOG_WARN;
    else if (!strcmp(s, "info"))
        log_level = RG_LOG_INFO;
    else if (!strcmp(s, "debug"))
        log_level = RG_LOG_DEBUG;
}

int rg_log_enabled(int level)
{
    pthread_once(&log_once, log_init);
    return level <= log_level;
}

void rg_log(int level, const char *module, const char *fmt, ...)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    if (!rg_log_enabled(level))
        return;
    char line[1024];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s: ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, names[level], module);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line)
        vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    /* One fputs per line so lines of different threads do not interleave. */
    size_t len = strlen(line);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len] = '\n';
    line[len + 1] = '\0';
    fputs(line, stderr);
}

/* ---- rg_buf ---- */

void rg_buf_init(rg_buf *b)
{
    memset(b, 0, sizeof *b);
}

void rg_buf_destroy(rg_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

void rg_buf_reset(rg_buf *b)
{
    b->len = 0;
    b->failed = 0;
    if (b->data)
        b->data[0] = '\0';
}

int rg_buf_reserve(rg_buf *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len - 1)
        goto fail;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (!p)
        goto fail;
    b->data = p;
    b->cap = cap;
    return 0;
fail:
    b->failed = 1;
    return RG_ENOMEM;
}

int rg_buf_append(rg_buf *b, const void *p, size_t n)
{
    if (rg_buf_reserve(b, n) < 0)
        return RG_ENOMEM;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int rg_buf_puts(rg_buf *b, const char *s)
{
    return rg_buf_append(b, s, strlen(s));
}

int rg_buf_printf(rg_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return RG_ENOMEM;
    }
    if ((size_t)n < sizeof small)
        return rg_buf_append(b, small, (size_t)n);
    if (rg_buf_reserve(b, (size_t)n) < 0)
        return RG_ENOMEM;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

int rg_buf_json_str(rg_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    /* Worst case every byte becomes \u00XX. */
    if (n > (SIZE_MAX - 2) / 6 || rg_buf_reserve(b, n * 6 + 2) < 0) {
        b->failed = 1;
        return RG_ENOMEM;
    }
    char *o = b->data + b->len;
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
        } else if (c == '\n') {
            *o++ = '\\';
            *o++ = 'n';
        } else if (c == '\r') {
            *o++ = '\\';
            *o++ = 'r';
        } else if (c == '\t') {
            *o++ = '\\';
            *o++ = 't';
        } else if (c < 0x20) {
            *o++ = '\\';
            *o++ = 'u';
            *o++ = '0';
            *o++ = '0';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        } else {
            *o++ = (char)c;
        }
    }
    *o++ = '"';
    b->len = (size_t)(o - b->data);
    b->data[b->len] = '\0';
    return 0;
}

int rg_buf_json_str_or_null(rg_buf *b, const char *s)
{
    return s ? rg_buf_json_str(b, s, strlen(s)) : rg_buf_puts(b, "null");
}

char *rg_buf_steal(rg_buf *b)
{
    char *p = b->data;
    if (!p)
        p = calloc(1, 1);
    memset(b, 0, sizeof *b);
    return p;
}

int rg_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

int rg_mp_key_is(const msgpack_object *k, const char *name)
{
    return k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(name) &&
           !memcmp(k->via.str.ptr, name, k->via.str.size);
}

int rg_hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

void rg_deadline(struct timespec *ts, int timeout_ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += timeout_ms / 1000;
    ts->tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}
