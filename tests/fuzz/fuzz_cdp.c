/*
 * fuzz_cdp.c - libFuzzer target: the bytes a browser writes on the DevTools
 * pipe, through cdp_frame_space/cdp_frame_commit in random read sizes, and
 * every complete message through cdp_json_sanitize and cJSON, as cdp.c's
 * reader does.
 *
 * Input: byte 0 picks the message cap (bit 7: the default cap, otherwise 1
 * to 1024 bytes, so that oversized messages are common), bytes 1 and 2 seed
 * the read sizes, the rest is the stream.
 *
 * Properties beyond "no crash, leak or undefined behaviour":
 *   - however the stream is split, the callbacks see exactly the NUL-
 *     separated messages of the stream, in order: those up to the cap whole
 *     and NUL-terminated, longer ones as one oversize call with their real
 *     length and first bytes; what is left afterwards is the unfinished
 *     last message;
 *   - cdp_frame_space gives at least the room asked for;
 *   - the sanitizer changes only \uXXXX escapes inside strings, each to
 *     \ufffd, counts them right, leaves no \u0000 and no lone surrogate
 *     escape in any string, and has nothing left to do when run again.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cdp/cdp.h"
#include "common/rg.h"
#include "tests/fuzz/fuzz.h"

#define BIG_WANT (5u * 1024 * 1024) /* past frame.c's shrink threshold */

/* One expected callback: message bytes [off, off + len) of the stream. */
struct want {
    size_t off, len;
};

struct run {
    const unsigned char *stream;
    size_t max;
    struct want *w;
    size_t n, next;
};

static int hex(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The code unit of the escape \uXXXX at s[i] (s[i] is '\\'), or -1. */
static long unit_at(const char *s, size_t n, size_t i)
{
    if (n - i < 6 || s[i + 1] != 'u')
        return -1;
    long v = 0;
    for (size_t k = 2; k < 6; k++) {
        int h = hex((unsigned char)s[i + k]);
        if (h < 0)
            return -1;
        v = v << 4 | h;
    }
    return v;
}

/* No \u0000 and no unpaired surrogate escape in any string of s. */
static void check_clean(const char *s, size_t n)
{
    int in_str = 0;
    long prev_high = 0; /* the escape just before was a high surrogate */
    for (size_t i = 0; i < n;) {
        if (!in_str) {
            in_str = s[i] == '"';
            i++;
            continue;
        }
        if (s[i] != '\\') {
            FZ_CHECK(!prev_high, "a high surrogate escape without its low half");
            in_str = s[i] != '"';
            i++;
            continue;
        }
        long u = unit_at(s, n, i);
        if (u < 0) {
            FZ_CHECK(!prev_high, "a high surrogate escape without its low half");
            i += 2;
            continue;
        }
        FZ_CHECK(u != 0, "\\u0000 left at byte %zu", i);
        int low = u >= 0xdc00 && u <= 0xdfff, high = u >= 0xd800 && u <= 0xdbff;
        FZ_CHECK(!low || prev_high, "a lone low surrogate escape at byte %zu", i);
        FZ_CHECK(!prev_high || low, "a high surrogate escape without its low half");
        prev_high = high;
        i += 6;
    }
    FZ_CHECK(!prev_high, "a high surrogate escape ends the message");
}

/* What cdp.c does with a message, and the sanitizer's properties. */
static void on_msg(void *ud, char *msg, size_t len)
{
    struct run *r = ud;
    FZ_CHECK(r->next < r->n, "a message the stream does not hold");
    const struct want *w = &r->w[r->next++];
    FZ_CHECK(w->len <= r->max, "a message of %zu bytes over the cap of %zu delivered", w->len,
             r->max);
    FZ_CHECK(len == w->len && !memcmp(msg, r->stream + w->off, len),
             "message %zu: %zu bytes, want %zu", r->next - 1, len, w->len);
    FZ_CHECK(msg[len] == '\0', "a message without its NUL");

    const char *orig = (const char *)r->stream + w->off;
    size_t fixed = cdp_json_sanitize(msg, len), changed = 0;
    for (size_t i = 0; i < len;) {
        if (msg[i] == orig[i]) {
            i++;
            continue;
        }
        /* The first changed byte of a rewritten escape is its first hex
           digit: 0 of \u0000, d of a surrogate, now f of \ufffd. */
        size_t start = i - 2;
        FZ_CHECK(i >= 2 && start + 6 <= len && !memcmp(msg + start, "\\ufffd", 6),
                 "the sanitizer changed byte %zu outside an escape", i);
        long u = unit_at(orig, len, start);
        FZ_CHECK(u == 0 || (u >= 0xd800 && u <= 0xdfff), "the escape \\u%04lx was rewritten", u);
        changed++;
        i = start + 6;
    }
    FZ_CHECK(changed == fixed, "%zu escapes changed, %zu counted", changed, fixed);
    check_clean(msg, len);
    FZ_CHECK(cdp_json_sanitize(msg, len) == 0, "a second pass still found escapes to fix");

    cJSON *root = cJSON_ParseWithLength(msg, len);
    cJSON_Delete(root);
}

static void on_oversize(void *ud, const char *head, size_t head_len, size_t total)
{
    struct run *r = ud;
    FZ_CHECK(r->next < r->n, "an oversized message the stream does not hold");
    const struct want *w = &r->w[r->next++];
    FZ_CHECK(w->len > r->max, "a message of %zu bytes within the cap of %zu called oversized",
             w->len, r->max);
    FZ_CHECK(total == w->len, "oversized message of %zu bytes reported as %zu", w->len, total);
    /* The head is the first 128 bytes, or as many as the frame held when
       it saw the message was too long (more than the cap). */
    size_t most = w->len < 128 ? w->len : 128;
    size_t least = r->max + 1 < most ? r->max + 1 : most;
    FZ_CHECK(head_len >= least && head_len <= most && !memcmp(head, r->stream + w->off, head_len),
             "the head of an oversized %zu-byte message: %zu bytes, not its first %zu to %zu",
             w->len, head_len, least, most);
}

static uint32_t next_rand(uint32_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    size_t max = data[0] & 0x80 ? 0 : 1 + (size_t)(data[0] & 0x7f) * 8 + data[1] % 8;
    uint32_t seed = 0x9e3779b9u ^ (uint32_t)data[1] << 8 ^ data[2];
    const unsigned char *stream = data + 3;
    size_t n = size - 3;

    cdp_frame f;
    cdp_frame_init(&f, max);
    struct run r = {.stream = stream, .max = f.max, .w = malloc((n + 1) * sizeof *r.w)};
    FZ_CHECK(r.w, "out of memory");
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        if (stream[i] == '\0') {
            r.w[r.n++] = (struct want){start, i - start};
            start = i + 1;
        }
    }
    size_t tail = n - start;

    for (size_t off = 0; off < n;) {
        uint32_t x = next_rand(&seed);
        size_t chunk = 1 + x % (x & 0x100 ? 4096 : 16);
        size_t want = x % 997 == 0 ? BIG_WANT : chunk;
        char *p;
        size_t avail;
        FZ_CHECK(cdp_frame_space(&f, want, &p, &avail) == 0, "cdp_frame_space failed");
        FZ_CHECK(avail >= want, "asked for %zu bytes, got %zu", want, avail);
        if (chunk > n - off)
            chunk = n - off;
        memcpy(p, stream + off, chunk);
        cdp_frame_commit(&f, chunk, on_msg, on_oversize, &r);
        off += chunk;
    }
    FZ_CHECK(r.next == r.n, "%zu of %zu messages delivered", r.next, r.n);
    if (tail > f.max)
        FZ_CHECK(f.skipping && f.skipped == tail && f.len == 0,
                 "an unfinished %zu-byte message over the cap is not being skipped", tail);
    else
        FZ_CHECK(!f.skipping && f.len == tail && (!tail || !memcmp(f.buf, stream + start, tail)),
                 "the unfinished %zu-byte message is not what is buffered", tail);
    cdp_frame_destroy(&f);
    free(r.w);
    return 0;
}
