/*
 * fuzz_addr.c - libFuzzer target: the address spellings the URL policy
 * reads (IPv4 in WHATWG's many forms, IPv6, tenant list entries) and the
 * address classes of policy/addr.c.
 *
 * Byte 0 picks what the rest of the input is:
 *   0 an IPv4 host, inside http://.../ (bytes [0-9a-fA-FxX.] only)
 *   1 an IPv6 host, inside http://[...]/ (bytes [0-9a-fA-F:.] only)
 *   2 a tenant allow or deny list entry, for pol_new
 *   3 raw address bytes, for pol_addr_class
 *
 * Properties beyond "no crash, leak or undefined behaviour":
 *   0 whatever glibc's inet_aton reads (the BSD spellings WHATWG took over)
 *     is the same IPv4 address here; a host that ends in a number is an
 *     IPv4 address or refused, any other is a name;
 *   1 glibc's inet_pton and this parser accept the same IPv6 texts, as the
 *     same addresses;
 *   2 allow and deny lists accept the same entries, case does not matter,
 *     and the URL an accepted entry names is refused by a deny list of it
 *     and let through (or sent to DNS) by an allow list of it;
 *   3 the class names are policy.h's; an IPv6 address that embeds an IPv4
 *     address of a non-public class has that class (the mapped form always
 *     has the IPv4 class); any IPv6 address written by glibc parses back
 *     and the default policy allows it exactly when it is public.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "common/rg.h"
#include "policy/policy.h"
#include "tests/fuzz/fuzz.h"

#define TEXT_MAX 64 /* of an address spelling */
#define ENTRY_MAX 300

static pol *p0;

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char err[256] = "";
    (void)argc;
    (void)argv;
    FZ_CHECK(pol_new(0, NULL, 0, NULL, 0, &p0, err, sizeof err) == 0, "pol_new: %s", err);
    return 0;
}

/* ---- 0: IPv4 ------------------------------------------------------------- */

static int all_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return 0;
    return 1;
}

/* WHATWG "ends in a number", for a host of digits, letters and dots. */
static int ends_in_number(const char *s, size_t n)
{
    if (n && s[n - 1] == '.')
        n--;
    size_t start = n;
    while (start && s[start - 1] != '.')
        start--;
    const char *last = s + start;
    size_t len = n - start;
    if (!len)
        return 0;
    if (strspn(last, "0123456789") >= len)
        return 1;
    return len >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X') &&
           all_hex(last + 2, len - 2);
}

static void ipv4(const char *text, size_t n)
{
    char url[TEXT_MAX + 16];
    pol_url u;
    struct in_addr a;
    if (!n || n > TEXT_MAX || strspn(text, "0123456789abcdefABCDEFxX.") != n)
        return;
    int len = snprintf(url, sizeof url, "http://%s/", text);
    int rc = pol_parse_url(url, (size_t)len, &u, NULL, 0);
    if (inet_aton(text, &a))
        FZ_CHECK(rc == 0 && u.family == AF_INET && !memcmp(u.addr, &a, 4),
                 "inet_aton reads \"%s\" as %s, the policy as \"%s\"", text, inet_ntoa(a),
                 rc ? "invalid" : u.host);
    if (rc == 0)
        FZ_CHECK(u.family == (ends_in_number(text, n) ? AF_INET : 0),
                 "\"%s\" is read as \"%s\" (family %d)", text, u.host, u.family);
}

/* ---- 1: IPv6 ------------------------------------------------------------- */

static void ipv6(const char *text, size_t n)
{
    char url[TEXT_MAX + 16];
    pol_url u;
    unsigned char b[16];
    if (!n || n > TEXT_MAX || strspn(text, "0123456789abcdefABCDEF:.") != n)
        return;
    int len = snprintf(url, sizeof url, "http://[%s]/", text);
    int rc = pol_parse_url(url, (size_t)len, &u, NULL, 0);
    int ok = inet_pton(AF_INET6, text, b) == 1;
    FZ_CHECK(ok == (rc == 0), "\"%s\": glibc %s, the policy %s", text, ok ? "reads it" : "refuses",
             rc ? "refuses" : "reads it");
    if (ok)
        FZ_CHECK(u.family == AF_INET6 && !memcmp(u.addr, b, 16), "\"%s\" read as \"%s\"", text,
                 u.host);
}

/* ---- 2: list entries ----------------------------------------------------- */

static pol *entry_pol(int deny, const char *entry, int *rc)
{
    pol *p = NULL;
    char err[256] = "";
    const char *const list[] = {entry};
    *rc = deny ? pol_new(0, NULL, 0, list, 1, &p, err, sizeof err)
               : pol_new(1, list, 1, NULL, 0, &p, err, sizeof err);
    if (*rc < 0)
        fz_check_refusal(*rc, err, "pol_new");
    return p;
}

/* The URL an accepted entry names (a subdomain for a wildcard, the network for a range). */
static int entry_url(const char *e, char *url, size_t size)
{
    char host[ENTRY_MAX + 8];
    const char *slash = strchr(e, '/');
    if (slash)
        snprintf(host, sizeof host, "%.*s", (int)(slash - e), e);
    else if (e[0] == '*')
        snprintf(host, sizeof host, "x%s", e + 1);
    else if (e[0] == '.')
        snprintf(host, sizeof host, "x%s", e);
    else
        snprintf(host, sizeof host, "%s", e);
    int bare6 = slash && host[0] != '[' && strchr(host, ':');
    return snprintf(url, size, "http://%s%s%s/", bare6 ? "[" : "", host, bare6 ? "]" : "");
}

static int metadata_class(const pol_url *u)
{
    struct sockaddr_in a4 = {.sin_family = AF_INET};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6};
    const struct sockaddr *sa = (const struct sockaddr *)&a4;
    if (u->family == AF_INET) {
        memcpy(&a4.sin_addr, u->addr, 4);
    } else if (u->family == AF_INET6) {
        memcpy(&a6.sin6_addr, u->addr, 16);
        sa = (const struct sockaddr *)&a6;
    } else {
        return 0;
    }
    return !strcmp(pol_addr_class(sa), "metadata");
}

static void entry(const char *e, size_t n)
{
    char up[ENTRY_MAX + 1], url[ENTRY_MAX + 32];
    int rc_allow, rc_deny, rc_up;
    if (n > ENTRY_MAX)
        return;
    pol *allow = entry_pol(0, e, &rc_allow);
    pol *deny = entry_pol(1, e, &rc_deny);
    for (size_t i = 0; i <= n; i++)
        up[i] = (char)toupper((unsigned char)e[i]);
    pol_free(entry_pol(1, up, &rc_up));
    FZ_CHECK(rc_allow == rc_deny, "\"%s\": allow list %d, deny list %d", e, rc_allow, rc_deny);
    FZ_CHECK(rc_up == rc_deny, "\"%s\" %d, \"%s\" %d", e, rc_deny, up, rc_up);
    if (rc_allow == 0) {
        pol_url u;
        char why[512] = "";
        int len = entry_url(e, url, sizeof url);
        if (len > 0 && (size_t)len < sizeof url &&
            pol_parse_url(url, (size_t)len, &u, NULL, 0) == 0) {
            int d = pol_check_url(deny, url, (size_t)len, NULL, why, sizeof why);
            FZ_CHECK(d == RG_EBLOCKEDURL, "a deny list of \"%s\" lets %s through (%d)", e, url, d);
            d = pol_check_url(allow, url, (size_t)len, NULL, why, sizeof why);
            /* Metadata opens only to an entry that names the address exactly. */
            int range = strchr(e, '/') && !strstr(e, "/32") && !strstr(e, "/128");
            FZ_CHECK(d == POL_ALLOW || d == POL_RESOLVE || (range && metadata_class(&u)),
                     "an allow list of \"%s\" refuses %s (%d: %s)", e, url, d, why);
        }
    }
    pol_free(allow);
    pol_free(deny);
}

/* ---- 3: classes ---------------------------------------------------------- */

static const char *class4(const unsigned char *b)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    memcpy(&a.sin_addr, b, 4);
    return pol_addr_class((const struct sockaddr *)&a);
}

static const char *class6(const unsigned char *b)
{
    struct sockaddr_in6 a = {.sin6_family = AF_INET6};
    memcpy(&a.sin6_addr, b, 16);
    return pol_addr_class((const struct sockaddr *)&a);
}

static int known_class(const char *c)
{
    static const char *const names[] = {"public",    "loopback",  "private",      "link-local",
                                        "cgnat",     "multicast", "unspecified",  "this-network",
                                        "broadcast", "metadata",  "benchmarking", "documentation",
                                        "reserved"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(c, names[i]))
            return 1;
    return 0;
}

/* An IPv6 form that embeds v4 takes v4's class when that is not public. */
static void embeds(const unsigned char *v6, const unsigned char *v4, const char *form)
{
    const char *c4 = class4(v4), *c6 = class6(v6);
    if (strcmp(c4, "public"))
        FZ_CHECK(!strcmp(c6, c4), "%s of a %s address is %s", form, c4, c6);
}

static void classes(const unsigned char *p, size_t n)
{
    unsigned char v6[16] = {0};
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    FZ_CHECK(!strcmp(pol_addr_class(NULL), "unknown"), "NULL has a class");
    FZ_CHECK(!strcmp(pol_addr_class((const struct sockaddr *)&un), "unknown"),
             "AF_UNIX has a class");
    if (n < 4)
        return;
    const char *c4 = class4(p);
    FZ_CHECK(known_class(c4), "the class \"%s\"", c4);

    memset(v6, 0, 16); /* mapped ::ffff:a.b.c.d: always the IPv4 class */
    v6[10] = v6[11] = 0xff;
    memcpy(v6 + 12, p, 4);
    FZ_CHECK(!strcmp(class6(v6), c4), "::ffff: of a %s address is %s", c4, class6(v6));
    if (!(p[0] == 0 && p[1] == 0 && p[2] == 0 && p[3] <= 1)) { /* not :: or ::1 */
        memset(v6, 0, 16);
        memcpy(v6 + 12, p, 4);
        embeds(v6, p, "compatible ::a.b.c.d");
    }
    memset(v6, 0, 16);
    v6[8] = v6[9] = 0xff;
    memcpy(v6 + 12, p, 4);
    embeds(v6, p, "translated ::ffff:0:a.b.c.d");
    memset(v6, 0, 16);
    v6[1] = 0x64, v6[2] = 0xff, v6[3] = 0x9b;
    memcpy(v6 + 12, p, 4);
    embeds(v6, p, "NAT64 64:ff9b::a.b.c.d");
    memset(v6, 0, 16);
    v6[0] = 0x20, v6[1] = 0x02;
    memcpy(v6 + 2, p, 4);
    embeds(v6, p, "6to4 2002:a.b.c.d::");
    memset(v6, 0, 16);
    v6[0] = 0x20, v6[1] = 0x01;
    memcpy(v6 + 4, p, 4);
    for (int i = 0; i < 4; i++)
        v6[12 + i] = 0xff; /* client 0.0.0.0 inverted: this-network wins if the server is public */
    if (strcmp(c4, "public"))
        FZ_CHECK(!strcmp(class6(v6), c4), "Teredo with a %s server is %s", c4, class6(v6));

    if (n < 16)
        return;
    const char *c6 = class6(p);
    FZ_CHECK(known_class(c6), "the class \"%s\"", c6);
    char text[INET6_ADDRSTRLEN], url[INET6_ADDRSTRLEN + 16];
    inet_ntop(AF_INET6, p, text, sizeof text);
    int len = snprintf(url, sizeof url, "http://[%s]/", text);
    pol_url u;
    char why[512] = "";
    int d = pol_check_url(p0, url, (size_t)len, &u, why, sizeof why);
    FZ_CHECK(d != RG_EBADREQ && u.family == AF_INET6 && !memcmp(u.addr, p, 16),
             "glibc's \"%s\" reads differently (%d: %s)", text, d, why);
    FZ_CHECK((d == POL_ALLOW) == !strcmp(c6, "public"), "%s (%s): %d %s", text, c6, d, why);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[ENTRY_MAX + 1];
    if (size < 1)
        return 0;
    size_t n = size - 1 < ENTRY_MAX ? size - 1 : ENTRY_MAX;
    memcpy(text, data + 1, n);
    text[n] = '\0';
    n = strlen(text);
    switch (data[0] % 4) {
    case 0:
        ipv4(text, n);
        break;
    case 1:
        ipv6(text, n);
        break;
    case 2:
        entry(text, n);
        break;
    default:
        classes(data + 1, size - 1);
    }
    return 0;
}
