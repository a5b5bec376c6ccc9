/*
 * fuzz_view_token.c - libFuzzer target: untrusted live view tokens (the
 * ?token= of a WebSocket handshake) through gw_view_token_parse and
 * gw_view_token_verify (gateway/view.c).
 *
 * Properties beyond "no crash, leak or undefined behaviour":
 *   - a token is accepted only in its one spelling: writing the parsed
 *     claims back out gives the input byte for byte;
 *   - the claims are what docs/protocol.md describes: a valid tenant name,
 *     a control bit of 0 or 1, an expiry of at most 12 digits;
 *   - verify accepts nothing the parser refuses, and under a fixed secret it
 *     accepts an input only when it is the token make would have made;
 *   - a token made for the parsed claims verifies for its session, and not
 *     for another session, nor once expired, nor with its control bit
 *     flipped.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gw_int.h"
#include "tests/fuzz/fuzz.h"

static const unsigned char secret[GW_VIEW_SECRET_BYTES] = "fuzzing secret, 32 bytes long!!";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gw_view_claims cl;
    int rc = gw_view_token_parse((const char *)data, size, &cl);
    FZ_CHECK(rc == 0 || rc == RG_EUNAUTH, "parse returned %d", rc);
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    gw_view_claims v;
    int vr = gw_view_token_verify(secret, sizeof secret, s, "s1", 0, &v);
    FZ_CHECK(vr == 0 || vr == RG_EUNAUTH, "verify returned %d", vr);
    /* verify reads a C string (the handshake's): up to the first NUL. */
    gw_view_claims p2;
    FZ_CHECK(vr != 0 || gw_view_token_parse(s, strlen(s), &p2) == 0,
             "verify accepted what parse refused");
    if (rc == 0) {
        FZ_CHECK(tenant_name_valid(cl.tenant), "the tenant \"%s\" was accepted", cl.tenant);
        FZ_CHECK(cl.control == 0 || cl.control == 1, "control %d", cl.control);
        FZ_CHECK(cl.exp >= 0 && cl.exp < 1000000000000LL, "expiry %lld", cl.exp);
        /* The one spelling: the claims written out again are the input
           (the mac as the input had it, whatever it is). */
        char made[GW_VIEW_TOKEN_MAX + 1];
        FZ_CHECK(gw_view_token_make(secret, sizeof secret, cl.tenant, "s1", cl.exp, cl.control,
                                    made, sizeof made) == 0,
                 "no token for claims the parser accepted");
        size_t head = (size_t)(strrchr(made, '.') - made) + 1;
        FZ_CHECK(size > head && !memcmp(made, data, head),
                 "accepted a second spelling of the claims: %.*s vs %s", (int)size,
                 (const char *)data, made);
        /* Under the fixed secret, verify takes the input only if it is make's token. */
        if (cl.exp > 0)
            FZ_CHECK((vr == 0) == (strlen(made) == size && !memcmp(made, data, size)),
                     "verify and make disagree");
        /* make -> verify round trip, and what must not pass. */
        long long exp = cl.exp > 0 ? cl.exp : 1;
        gw_view_token_make(secret, sizeof secret, cl.tenant, "s1", exp, cl.control, made,
                           sizeof made);
        FZ_CHECK(gw_view_token_verify(secret, sizeof secret, made, "s1", exp - 1, &v) == 0 &&
                     v.control == cl.control && v.exp == exp && !strcmp(v.tenant, cl.tenant),
                 "a made token did not verify");
        FZ_CHECK(gw_view_token_verify(secret, sizeof secret, made, "s2", exp - 1, &v) == RG_EUNAUTH,
                 "a token verified for another session");
        FZ_CHECK(gw_view_token_verify(secret, sizeof secret, made, "s1", exp, &v) == RG_EUNAUTH,
                 "an expired token verified");
        char *bit = strchr(strchr(made, '.') + 1, '.') + 1;
        *bit = *bit == '1' ? '0' : '1';
        FZ_CHECK(gw_view_token_verify(secret, sizeof secret, made, "s1", exp - 1, &v) == RG_EUNAUTH,
                 "a token verified with its control bit flipped");
    }
    free(s);
    return 0;
}
