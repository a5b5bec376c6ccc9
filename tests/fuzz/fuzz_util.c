/*
 * fuzz_util.c - the checks every target of tests/fuzz/ may use (fuzz.h):
 * written apart from the code under test on purpose, so that the UTF-8
 * check decodes code points where wire/decode.c matches byte ranges.
 */
#include "fuzz.h"

#include <stdint.h>
#include <string.h>

#include "common/rg.h"

/* ---- UTF-8 --------------------------------------------------------------- */

int fz_utf8_ok(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    while (i < n) {
        unsigned c = p[i];
        size_t len;
        uint32_t cp, min;
        if (c == 0)
            return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xe0) == 0xc0) {
            len = 2, cp = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3, cp = c & 0x0f, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            len = 4, cp = c & 0x07, min = 0x10000;
        } else {
            return 0;
        }
        if (n - i < len)
            return 0;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (p[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += len;
    }
    return 1;
}

/* ---- refusals ------------------------------------------------------------ */

void fz_check_refusal(int rc, const char *err, const char *what)
{
    FZ_CHECK(rc == RG_EBADREQ, "%s returned %d", what, rc);
    FZ_CHECK(err[0], "%s refused without a sentence", what);
    FZ_CHECK(fz_utf8_ok(err, strlen(err)), "%s: the sentence is not UTF-8", what);
}
