/*
 * fuzz_delta.c - libFuzzer target: an observe reply and a delta against it
 * (what the page-side script sends, registry/observer/50-observe.js) through
 * the registry's splice (reg_delta_try: decode the whole reply, keep it as
 * the base, apply the delta).
 *
 * The input is the two texts separated by the first NUL byte (no NUL: the
 * same text twice). Properties beyond "no crash, leak or undefined
 * behaviour":
 *   - the result is 0 or RG_EINTERNAL (a reply that does not decode or fit,
 *     which makes reg_observe ask for a whole one), or RG_ENOMEM;
 *   - a delta (a text with a "base") that is accepted has exactly the node
 *     count it declares; a text without one is a whole reply.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rg.h"
#include "registry/reg_int.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    const char *nul = memchr(s, 0, size);
    size_t wlen = nul ? (size_t)(nul - s) : size;
    const char *delta = nul ? nul + 1 : s;
    size_t dlen = nul ? size - wlen - 1 : size;
    size_t n = 0;
    int rc = reg_delta_try(s, wlen, delta, dlen, &n);
    FZ_CHECK(rc == 0 || rc == RG_EINTERNAL || rc == RG_ENOMEM, "result %d", rc);
    cJSON *d = rc == 0 ? cJSON_ParseWithLength(delta, dlen) : NULL;
    if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(d, "base"))) {
        /* a delta (a text without "base" is a whole reply, taken as it is) */
        const cJSON *count = cJSON_GetObjectItemCaseSensitive(d, "count");
        FZ_CHECK(cJSON_IsNumber(count) && count->valuedouble == (double)n,
                 "%zu nodes spliced against a declared count", n);
    }
    cJSON_Delete(d);
    return 0;
}
