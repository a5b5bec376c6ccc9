/*
 * fuzz_find.c - libFuzzer target: observe's find (registry/find.c), the one
 * place a client's regular expression reaches glibc's regcomp, through
 * reg_find_new and reg_find_lines over an outline.
 *
 * The input: one byte of options (bit 0: regex; the byte / 2 mod 21: the
 * context), then the pattern up to the first NUL byte, then the outline
 * (no NUL: the pattern alone, and a small outline of its own). Properties
 * beyond "no crash, leak, undefined behaviour or timeout":
 *   - a refusal is RG_EBADREQ with a sentence (or RG_ENOMEM), and no find;
 *   - every line of the answer is a line of the outline, a "..." gap line,
 *     a blank line between snippets or the last "more snippets" line;
 *   - no match gives "", and at most as many matches as the outline has
 *     lines;
 *   - for text (not regex) where pattern and outline are ASCII, the matches
 *     are the lines that hold the pattern without regard to case, counted
 *     here independently.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/rg.h"
#include "registry/registry.h"
#include "tests/fuzz/fuzz.h"

static const char small_outline[] = "- document \"Shop\"\n"
                                    "  - main\n"
                                    "    - list\n"
                                    "      - listitem\n"
                                    "        - checkbox \"Done\" [ref=@a]\n"
                                    "        - text: Buy milk 42\n"
                                    "  - contentinfo: Straße\n";

static int ascii(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80)
            return 0;
    return 1;
}

/* 1 when the line (n bytes) is one of the outline's. */
static int in_outline(const char *outline, const char *line, size_t n)
{
    for (const char *p = outline; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !memcmp(p, line, n))
            return 1;
        p += len + (e ? 1 : 0);
    }
    return 0;
}

static int gap_line(const char *line, size_t n)
{
    size_t k = 0;
    while (k < n && line[k] == ' ')
        k++;
    return n - k == 3 && !memcmp(line + k, "...", 3);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int regex = data[0] & 1, context = (data[0] >> 1) % 21;
    const char *rest = (const char *)data + 1;
    size_t rlen = size - 1;
    const char *nul = memchr(rest, 0, rlen);
    char *pattern = strndup(rest, nul ? (size_t)(nul - rest) : rlen);
    char *outline = nul ? strndup(nul + 1, rlen - (size_t)(nul - rest) - 1) : strdup(small_outline);
    if (!pattern || !outline) {
        free(pattern);
        free(outline);
        return 0;
    }
    reg_find *f = NULL;
    char err[256] = "";
    int rc = reg_find_new(pattern, regex, &f, err, sizeof err);
    FZ_CHECK(rc == 0 || rc == RG_EBADREQ || rc == RG_ENOMEM, "reg_find_new gave %d", rc);
    FZ_CHECK(rc == 0 ? f != NULL : f == NULL, "a find and a refusal (%d) together", rc);
    FZ_CHECK(rc != RG_EBADREQ || err[0], "a refusal without a sentence");
    if (rc == 0) {
        size_t n = 0, lines = 0, want = 0;
        char *t = NULL;
        rc = reg_find_lines(f, outline, context, &t, &n, err, sizeof err);
        FZ_CHECK(rc == 0 || rc == RG_ENOMEM || (regex && rc == RG_EBADREQ && err[0]),
                 "reg_find_lines gave %d", rc);
        if (rc == 0) {
            for (const char *p = outline; *p;) {
                const char *e = strchr(p, '\n');
                size_t len = e ? (size_t)(e - p) : strlen(p);
                lines++;
                if (!regex && ascii(pattern) && ascii(outline)) {
                    char *l = strndup(p, len);
                    want += l && strcasestr(l, pattern) != NULL;
                    free(l);
                }
                p += len + (e ? 1 : 0);
            }
            FZ_CHECK(n <= lines, "%zu matches in %zu lines", n, lines);
            FZ_CHECK(n > 0 || !t[0], "no match, and the answer is not empty");
            if (!regex && ascii(pattern) && ascii(outline))
                FZ_CHECK(n == want, "%zu matches, counted %zu", n, want);
            for (const char *p = t; *p;) {
                const char *e = strchr(p, '\n');
                size_t len = e ? (size_t)(e - p) : strlen(p);
                FZ_CHECK(len == 0 || gap_line(p, len) || in_outline(outline, p, len) ||
                             !strncmp(p, "... ", 4),
                         "an answer line that is not the outline's: %.*s", (int)len, p);
                p += len + (e ? 1 : 0);
            }
            free(t);
        }
        reg_find_free(f);
    }
    free(pattern);
    free(outline);
    return 0;
}
