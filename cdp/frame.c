/*
 * frame.c - NUL framing of Chromium's DevTools pipe and the escape pass that
 * makes its JSON digestible by cJSON. Pure functions over buffers: no I/O, no
 * threads; the reader thread of cdp.c owns one cdp_frame per connection.
 */
#include "cdp/cdp.h"

#include <stdlib.h>
#include <string.h>

#define FRAME_INITIAL_BYTES (256u * 1024)
/* What a buffer may keep between messages: the initial one plus the room of
   one read, which any message longer than one pipe read needs. Past it the
   buffer goes back to the initial size once the long message is out, so a
   worker's RSS does not keep each browser's longest message (docs/soak.md). */
#define FRAME_KEEP_BYTES (FRAME_INITIAL_BYTES + CDP_FRAME_READ_BYTES)

int cdp_frame_init(cdp_frame *f, size_t max)
{
    memset(f, 0, sizeof *f);
    f->max = max ? max : CDP_MAX_MESSAGE_BYTES;
    return 0;
}

void cdp_frame_destroy(cdp_frame *f)
{
    free(f->buf);
    memset(f, 0, sizeof *f);
}

int cdp_frame_space(cdp_frame *f, size_t want, char **p, size_t *avail)
{
    if (want == 0)
        want = 1;
    if (f->cap - f->len < want) {
        size_t need = f->len + want;
        size_t cap = f->cap ? f->cap : FRAME_INITIAL_BYTES;
        while (cap < need)
            cap *= 2;
        char *nb = realloc(f->buf, cap);
        if (!nb)
            return RG_ENOMEM;
        f->buf = nb;
        f->cap = cap;
    }
    *p = f->buf + f->len;
    *avail = f->cap - f->len;
    return 0;
}

/* Enters the skipping state for the message that starts at m (n bytes so far). */
static void frame_start_skip(cdp_frame *f, const char *m, size_t n)
{
    f->skipping = 1;
    f->skipped = n;
    f->head_len = n < sizeof f->head ? n : sizeof f->head;
    memcpy(f->head, m, f->head_len);
}

void cdp_frame_commit(cdp_frame *f, size_t n, cdp_frame_msg_fn on_msg,
                      cdp_frame_oversize_fn on_oversize, void *ud)
{
    size_t scan = f->len; /* bytes before this are known to hold no NUL */
    size_t start = 0;     /* first byte of the current message */
    f->len += n;

    if (f->skipping) {
        char *nul = memchr(f->buf, '\0', f->len);
        if (!nul) {
            f->skipped += f->len;
            f->len = 0;
            return;
        }
        size_t i = (size_t)(nul - f->buf);
        f->skipped += i;
        f->skipping = 0;
        if (on_oversize)
            on_oversize(ud, f->head, f->head_len, f->skipped);
        start = scan = i + 1;
    }

    while (scan < f->len) {
        char *nul = memchr(f->buf + scan, '\0', f->len - scan);
        if (!nul)
            break;
        size_t end = (size_t)(nul - f->buf);
        if (end - start > f->max) {
            /* Completed in this read but over the cap all the same. */
            if (on_oversize) {
                size_t h = end - start < sizeof f->head ? end - start : sizeof f->head;
                on_oversize(ud, f->buf + start, h, end - start);
            }
        } else if (on_msg) {
            on_msg(ud, f->buf + start, end - start);
        }
        start = scan = end + 1;
    }

    size_t rest = f->len - start;
    if (rest > f->max) {
        frame_start_skip(f, f->buf + start, rest);
        f->len = 0;
    } else {
        if (start && rest)
            memmove(f->buf, f->buf + start, rest);
        f->len = rest;
    }
    /* A long message must not pin its buffer for the life of the browser. */
    if (f->cap > FRAME_KEEP_BYTES && f->len < FRAME_INITIAL_BYTES / 2) {
        char *nb = realloc(f->buf, FRAME_INITIAL_BYTES);
        if (nb) {
            f->buf = nb;
            f->cap = FRAME_INITIAL_BYTES;
        }
    }
}

/* The code unit of a \uXXXX escape at s (s[0] == '\\'), or -1. */
static long escape_unit(const char *s, size_t left)
{
    if (left < 6 || s[0] != '\\' || s[1] != 'u')
        return -1;
    long v = 0;
    for (int i = 2; i < 6; i++) {
        int h = rg_hex_value(s[i]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

static void put_fffd(char *s)
{
    memcpy(s + 2, "fffd", 4);
}

size_t cdp_json_sanitize(char *s, size_t n)
{
    size_t fixed = 0;
    int in_str = 0;
    size_t i = 0;
    while (i < n) {
        char c = s[i];
        if (!in_str) {
            if (c == '"')
                in_str = 1;
            i++;
            continue;
        }
        if (c == '"') {
            in_str = 0;
            i++;
            continue;
        }
        if (c != '\\') {
            i++;
            continue;
        }
        if (i + 1 >= n)
            break;
        if (s[i + 1] != 'u') {
            i += 2; /* \" \\ \n ...: skip the pair so \\u is not an escape */
            continue;
        }
        long v = escape_unit(s + i, n - i);
        if (v < 0) {
            i += 2; /* malformed: leave it for the parser to reject */
            continue;
        }
        if (v == 0 || (v >= 0xDC00 && v <= 0xDFFF)) {
            put_fffd(s + i);
            fixed++;
            i += 6;
        } else if (v >= 0xD800 && v <= 0xDBFF) {
            long lo = escape_unit(s + i + 6, n - i - 6);
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
                i += 12; /* a proper pair */
            } else {
                put_fffd(s + i);
                fixed++;
                i += 6;
            }
        } else {
            i += 6;
        }
    }
    return fixed;
}
