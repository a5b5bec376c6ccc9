/*
 * fuzz_url.c - libFuzzer target: untrusted URLs (navigate's url, every
 * request a page makes) through pol_parse_url and pol_check_url under three
 * tenant policies.
 *
 * Properties beyond "no crash, leak or undefined behaviour":
 *   - a refusal is RG_EBADREQ with a sentence and an empty result; a parsed
 *     URL has a lowercase scheme, a host and port exactly for http(s) and
 *     ws(s), an IPv4 host written as its dotted quad, an IPv6 host that
 *     glibc reads as the same address and writes the same way;
 *   - normalizing is idempotent: scheme://host:port/ built from the result
 *     parses to the same result;
 *   - pol_check_url agrees with the parse, answers only allow, resolve,
 *     blocked_url or bad_request, and decides as policy.h says, checked
 *     against an oracle written here from policy.h (address ranges, the
 *     IPv4 addresses IPv6 forms embed, localhost and metadata names) for:
 *       P0 the default policy,
 *       P1 allow_private with a deny list,
 *       P2 an allow list of names, wildcards, addresses with ports, a CIDR
 *          and a metadata address.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/rg.h"
#include "policy/policy.h"
#include "tests/fuzz/fuzz.h"

static pol *p0, *p1, *p2;

static pol *make(int allow_private, const char *const *allow, size_t n_allow,
                 const char *const *deny, size_t n_deny)
{
    pol *p = NULL;
    char err[256] = "";
    int rc = pol_new(allow_private, allow, n_allow, deny, n_deny, &p, err, sizeof err);
    FZ_CHECK(rc == 0, "pol_new: %s", err);
    return p;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const char *const deny1[] = {"127.0.0.0/8", "[::1]", "*.internal", "evil.example:8080",
                                        "169.254.0.0/16"};
    static const char *const allow2[] = {"example.com", "*.example.org",   "127.0.0.1:8080",
                                         "[::1]:8080",  "93.184.216.0/24", "169.254.169.254"};
    (void)argc;
    (void)argv;
    p0 = make(0, NULL, 0, NULL, 0);
    p1 = make(1, NULL, 0, deny1, sizeof deny1 / sizeof deny1[0]);
    p2 = make(0, allow2, sizeof allow2 / sizeof allow2[0], NULL, 0);
    return 0;
}

/* ---- the oracle ---------------------------------------------------------- */

static int web(const char *scheme)
{
    return !strcmp(scheme, "http") || !strcmp(scheme, "https") || !strcmp(scheme, "ws") ||
           !strcmp(scheme, "wss");
}

static int zero(const unsigned char *b, size_t n)
{
    while (n--)
        if (b[n])
            return 0;
    return 1;
}

/* The class pol_addr_class gives the URL's address. */
static const char *url_class(const pol_url *u)
{
    struct sockaddr_in a4 = {.sin_family = AF_INET};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6};
    if (u->family == AF_INET) {
        memcpy(&a4.sin_addr, u->addr, 4);
        return pol_addr_class((const struct sockaddr *)&a4);
    }
    memcpy(&a6.sin6_addr, u->addr, 16);
    return pol_addr_class((const struct sockaddr *)&a6);
}

/*
 * The IPv4 addresses of policy.h's list: the address itself, or those an
 * IPv6 address embeds (mapped, compatible, translated, NAT64, 6to4, both of
 * Teredo's). mapped_only: an IPv6 address gives only its mapped form.
 */
static size_t v4s(const pol_url *u, int mapped_only, unsigned char out[2][4])
{
    const unsigned char *b = u->addr;
    if (u->family == AF_INET) {
        memcpy(out[0], b, 4);
        return 1;
    }
    int mapped = zero(b, 10) && b[10] == 0xff && b[11] == 0xff;
    if (mapped ||
        (!mapped_only &&
         (zero(b, 12) || (zero(b, 8) && b[8] == 0xff && b[9] == 0xff && zero(b + 10, 2)) ||
          (b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && zero(b + 4, 8))))) {
        memcpy(out[0], b + 12, 4);
        return 1;
    }
    if (mapped_only)
        return 0;
    if (b[0] == 0x20 && b[1] == 0x02) {
        memcpy(out[0], b + 2, 4);
        return 1;
    }
    if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) {
        memcpy(out[0], b + 4, 4);
        for (int i = 0; i < 4; i++)
            out[1][i] = (unsigned char)~b[12 + i];
        return 2;
    }
    return 0;
}

static int in_net(const unsigned char *a, unsigned char n0, unsigned char n1, unsigned char n2,
                  unsigned char n3, int prefix)
{
    uint32_t x = (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 | a[3];
    uint32_t net = (uint32_t)n0 << 24 | (uint32_t)n1 << 16 | (uint32_t)n2 << 8 | n3;
    uint32_t mask = prefix ? 0xffffffffu << (32 - prefix) : 0;
    return (x & mask) == net;
}

static int is_v6_loopback(const pol_url *u)
{
    return u->family == AF_INET6 && zero(u->addr, 15) && u->addr[15] == 1;
}

/* The host name without trailing dots, and its length. */
static size_t trimmed(const char *host)
{
    size_t n = strlen(host);
    while (n && host[n - 1] == '.')
        n--;
    return n;
}

static int name_eq(const char *h, size_t n, const char *what)
{
    return strlen(what) == n && !memcmp(h, what, n);
}

/* h (n bytes) is a subdomain of what, at any depth, and not what itself. */
static int name_below(const char *h, size_t n, const char *what)
{
    size_t w = strlen(what);
    return n > w && h[n - w - 1] == '.' && !memcmp(h + n - w, what, w);
}

static int localhost_name(const char *h, size_t n)
{
    return name_eq(h, n, "localhost") || name_below(h, n, "localhost") ||
           name_eq(h, n, "localhost.localdomain") || name_eq(h, n, "localhost6") ||
           name_eq(h, n, "localhost6.localdomain6");
}

static int metadata_name(const char *h, size_t n)
{
    return name_eq(h, n, "metadata") || name_eq(h, n, "metadata.google.internal") ||
           name_eq(h, n, "metadata.goog") || name_eq(h, n, "metadata.tencentyun.com") ||
           name_eq(h, n, "instance-data") || name_eq(h, n, "instance-data.ec2.internal");
}

/* What policy.h makes of a URL with a web scheme under P0, P1 or P2. */
static int expected(int which, const pol_url *u)
{
    const char *cls;
    unsigned char v[2][4];
    size_t nv;

    if (u->family) {
        cls = url_class(u);
        switch (which) {
        case 0:
            return strcmp(cls, "public") ? RG_EBLOCKEDURL : POL_ALLOW;
        case 1:
            nv = v4s(u, 0, v);
            for (size_t i = 0; i < nv; i++)
                if (in_net(v[i], 127, 0, 0, 0, 8) || in_net(v[i], 169, 254, 0, 0, 16))
                    return RG_EBLOCKEDURL;
            if (is_v6_loopback(u) || !strcmp(cls, "metadata") || !strcmp(cls, "multicast") ||
                !strcmp(cls, "broadcast") || !strcmp(cls, "reserved"))
                return RG_EBLOCKEDURL;
            return POL_ALLOW;
        default:
            nv = v4s(u, 1, v);
            if (is_v6_loopback(u) && u->port == 8080)
                return POL_ALLOW;
            for (size_t i = 0; i < nv; i++)
                if (in_net(v[i], 93, 184, 216, 0, 24) || in_net(v[i], 169, 254, 169, 254, 32) ||
                    (in_net(v[i], 127, 0, 0, 1, 32) && u->port == 8080))
                    return POL_ALLOW;
            return RG_EBLOCKEDURL;
        }
    }
    size_t n = trimmed(u->host);
    switch (which) {
    case 0:
        return localhost_name(u->host, n) || metadata_name(u->host, n) ? RG_EBLOCKEDURL
                                                                       : POL_RESOLVE;
    case 1:
        if (name_below(u->host, n, "internal") ||
            (name_eq(u->host, n, "evil.example") && u->port == 8080) ||
            localhost_name(u->host, n) || metadata_name(u->host, n))
            return RG_EBLOCKEDURL;
        return POL_RESOLVE;
    default:
        if (localhost_name(u->host, n))
            return u->port == 8080 ? POL_ALLOW : RG_EBLOCKEDURL;
        return metadata_name(u->host, n) ? RG_EBLOCKEDURL : POL_RESOLVE;
    }
}

/* ---- the parse ----------------------------------------------------------- */

static int same_url(const pol_url *a, const pol_url *b)
{
    return !strcmp(a->scheme, b->scheme) && !strcmp(a->host, b->host) && a->port == b->port &&
           a->family == b->family && !memcmp(a->addr, b->addr, sizeof a->addr) &&
           a->about_blank == b->about_blank;
}

static void check_parsed(const pol_url *u)
{
    size_t sl = strlen(u->scheme);
    FZ_CHECK(sl > 0 && u->scheme[0] >= 'a' && u->scheme[0] <= 'z' &&
                 strspn(u->scheme, "abcdefghijklmnopqrstuvwxyz0123456789+-.") == sl,
             "the scheme \"%s\"", u->scheme);
    FZ_CHECK(!u->about_blank || !strcmp(u->scheme, "about"), "about_blank for %s:", u->scheme);
    if (!web(u->scheme)) {
        FZ_CHECK(!u->host[0] && u->port == -1 && !u->family, "a host for %s:", u->scheme);
        return;
    }
    FZ_CHECK(u->host[0] && u->port >= 0 && u->port <= 65535, "host \"%s\" port %d", u->host,
             u->port);
    FZ_CHECK(strlen(u->host) <= POL_HOST_MAX + 1, "a host of %zu characters", strlen(u->host));
    for (const char *c = u->host; *c; c++)
        FZ_CHECK((*c > 0x20 && *c < 0x7f && !(*c >= 'A' && *c <= 'Z') &&
                  !strchr("#%/:<>?@[\\]^|", *c)) ||
                     (u->family == AF_INET6 && *c == ':'),
                 "the host \"%s\" has the byte 0x%02x", u->host, (unsigned char)*c);
    if (u->family == AF_INET) {
        char q[16];
        snprintf(q, sizeof q, "%u.%u.%u.%u", u->addr[0], u->addr[1], u->addr[2], u->addr[3]);
        FZ_CHECK(!strcmp(q, u->host), "the IPv4 host \"%s\" is not %s", u->host, q);
    } else if (u->family == AF_INET6) {
        unsigned char b[16];
        char txt[INET6_ADDRSTRLEN];
        FZ_CHECK(inet_pton(AF_INET6, u->host, b) == 1 && !memcmp(b, u->addr, 16),
                 "glibc does not read the IPv6 host \"%s\" as its address", u->host);
        /* glibc writes an embedded dotted quad where the standard does not. */
        if (!zero(u->addr, 10)) {
            inet_ntop(AF_INET6, u->addr, txt, sizeof txt);
            FZ_CHECK(!strcmp(txt, u->host), "IPv6 host \"%s\", glibc writes \"%s\"", u->host, txt);
        }
    } else {
        FZ_CHECK(!u->family, "family %d", u->family);
    }

    /* Normalizing again changes nothing. */
    char again[POL_HOST_SIZE + 64];
    int v6 = u->family == AF_INET6;
    int len = snprintf(again, sizeof again, "%s://%s%s%s:%d/", u->scheme, v6 ? "[" : "", u->host,
                       v6 ? "]" : "", u->port);
    pol_url u2;
    char err[256] = "";
    int rc = pol_parse_url(again, (size_t)len, &u2, err, sizeof err);
    FZ_CHECK(rc == 0 && same_url(u, &u2), "%s parses %s", again, rc ? err : "differently");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *url = (const char *)data;
    pol_url u, uc;
    char err[256] = "", why[512] = "";

    int rc = pol_parse_url(url, size, &u, err, sizeof err);
    if (rc < 0) {
        fz_check_refusal(rc, err, "pol_parse_url");
        FZ_CHECK(!u.host[0] && !u.family && u.port == -1, "a refusal left a host");
    } else {
        FZ_CHECK(rc == 0, "pol_parse_url returned %d", rc);
        check_parsed(&u);
    }

    pol *ps[] = {p0, p1, p2};
    for (int i = 0; i < 3; i++) {
        why[0] = '\0';
        int d = pol_check_url(ps[i], url, size, &uc, why, sizeof why);
        if (rc < 0) {
            FZ_CHECK(d == RG_EBADREQ && why[0], "P%d: %d (%s) for a URL that does not parse (%s)",
                     i, d, why, err);
            continue;
        }
        FZ_CHECK(same_url(&u, &uc), "P%d: pol_check_url parsed differently", i);
        FZ_CHECK(d == POL_ALLOW || d == POL_RESOLVE || d == RG_EBLOCKEDURL,
                 "P%d: pol_check_url returned %d", i, d);
        FZ_CHECK(d >= 0 || (why[0] && fz_utf8_ok(why, strlen(why))),
                 "P%d: a refusal without a sentence", i);
        int want;
        if (u.about_blank)
            want = POL_ALLOW;
        else if (!web(u.scheme))
            want = RG_EBLOCKEDURL;
        else
            want = expected(i, &u);
        FZ_CHECK(d == want, "P%d: %d for %s (host \"%s\", port %d, class %s), policy.h says %d: %s",
                 i, d, u.scheme, u.host, u.port, u.family ? url_class(&u) : "name", want, why);
    }
    return 0;
}
