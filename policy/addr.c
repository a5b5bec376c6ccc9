/*
 * addr.c - address classes: which IPv4 and IPv6 ranges are loopback,
 * private, metadata, ... (the list and its reasons are in policy.h), and the
 * IPv4 addresses that IPv6 forms embed.
 *
 * Pure functions over constant tables, any thread.
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "policy/policy_int.h"

struct class_info {
    const char *name;
    const char *phrase;
    int opened_by_private;
};

static const struct class_info classes[] = {
    [POL_C_PUBLIC] = {"public", "a public address", 1},
    [POL_C_LOOPBACK] = {"loopback", "a loopback address", 1},
    [POL_C_PRIVATE] = {"private", "a private address", 1},
    [POL_C_LINK_LOCAL] = {"link-local", "a link-local address", 1},
    [POL_C_CGNAT] = {"cgnat", "a cgnat (carrier-grade NAT) address", 1},
    [POL_C_MULTICAST] = {"multicast", "a multicast address", 0},
    [POL_C_UNSPECIFIED] = {"unspecified", "the unspecified address", 1},
    [POL_C_THIS_NETWORK] = {"this-network", "a this-network (0.0.0.0/8) address", 1},
    [POL_C_BROADCAST] = {"broadcast", "the broadcast address", 0},
    [POL_C_METADATA] = {"metadata", "a cloud metadata address", 0},
    [POL_C_BENCHMARKING] = {"benchmarking", "a benchmarking address", 1},
    [POL_C_DOCUMENTATION] = {"documentation", "a documentation address", 1},
    [POL_C_RESERVED] = {"reserved", "a reserved address", 0},
    [POL_C_UNKNOWN] = {"unknown", "an address of unknown class", 0},
};

static const struct class_info *class_info(int cls)
{
    if (cls < 0 || cls > POL_C_UNKNOWN)
        cls = POL_C_UNKNOWN;
    return &classes[cls];
}

const char *pol_class_name(int cls)
{
    return class_info(cls)->name;
}

const char *pol_class_phrase(int cls)
{
    return class_info(cls)->phrase;
}

int pol_class_opened_by_private(int cls)
{
    return class_info(cls)->opened_by_private;
}

/* ---- tables: first match wins, so exact addresses come before ranges ---- */

#define V4(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))

struct v4_row {
    uint32_t net;
    int prefix;
    int cls;
};

static const struct v4_row v4_rows[] = {
    {V4(169, 254, 169, 254), 32, POL_C_METADATA}, /* AWS, GCP, Azure, OCI, ... */
    {V4(169, 254, 170, 2), 32, POL_C_METADATA},   /* AWS ECS task credentials */
    {V4(169, 254, 170, 23), 32, POL_C_METADATA},  /* AWS EKS pod identity */
    {V4(169, 254, 0, 23), 32, POL_C_METADATA},    /* Tencent Cloud */
    {V4(100, 100, 100, 200), 32, POL_C_METADATA}, /* Alibaba Cloud */
    {V4(168, 63, 129, 16), 32, POL_C_METADATA},   /* Azure WireServer */
    {V4(255, 255, 255, 255), 32, POL_C_BROADCAST},
    {V4(0, 0, 0, 0), 32, POL_C_UNSPECIFIED},
    {V4(0, 0, 0, 0), 8, POL_C_THIS_NETWORK},
    {V4(127, 0, 0, 0), 8, POL_C_LOOPBACK},
    {V4(10, 0, 0, 0), 8, POL_C_PRIVATE},
    {V4(172, 16, 0, 0), 12, POL_C_PRIVATE},
    {V4(192, 168, 0, 0), 16, POL_C_PRIVATE},
    {V4(169, 254, 0, 0), 16, POL_C_LINK_LOCAL},
    {V4(100, 64, 0, 0), 10, POL_C_CGNAT},
    {V4(192, 0, 0, 0), 24, POL_C_RESERVED}, /* IETF protocol assignments */
    {V4(192, 0, 2, 0), 24, POL_C_DOCUMENTATION},
    {V4(198, 51, 100, 0), 24, POL_C_DOCUMENTATION},
    {V4(203, 0, 113, 0), 24, POL_C_DOCUMENTATION},
    {V4(192, 88, 99, 0), 24, POL_C_RESERVED}, /* former 6to4 relay anycast */
    {V4(198, 18, 0, 0), 15, POL_C_BENCHMARKING},
    {V4(224, 0, 0, 0), 4, POL_C_MULTICAST},
    {V4(240, 0, 0, 0), 4, POL_C_RESERVED},
};

struct v6_row {
    unsigned char b[16];
    int prefix;
    int cls;
};

/* Checked after the embedded-IPv4 forms; see pol_ip_class. */
static const struct v6_row v6_rows[] = {
    {{0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54}, 128, POL_C_METADATA}, /* fd00:ec2::254 */
    {{0xfd, 0x00, 0x0e, 0xc2, [15] = 0x23}, 128, POL_C_METADATA},              /* fd00:ec2::23 */
    {{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48, POL_C_PRIVATE}, /* 64:ff9b:1::/48 local NAT64 */
    {{0x00, 0x64, 0xff, 0x9b}, 96, POL_C_PUBLIC},              /* NAT64 of a public address */
    {{0xfc}, 7, POL_C_PRIVATE},                                /* unique local */
    {{0xfe, 0xc0}, 10, POL_C_PRIVATE},                         /* site-local (deprecated) */
    {{0xfe, 0x80}, 10, POL_C_LINK_LOCAL},
    {{0xff}, 8, POL_C_MULTICAST},
    {{0x01, 0x00}, 64, POL_C_RESERVED}, /* discard-only */
    {{0x20, 0x01, 0x0d, 0xb8}, 32, POL_C_DOCUMENTATION},
    {{0x3f, 0xff}, 20, POL_C_DOCUMENTATION},
    {{0x20, 0x01, 0x00, 0x02, 0x00, 0x00}, 48, POL_C_BENCHMARKING},
    {{0x20, 0x01, 0x00, 0x00}, 32, POL_C_PUBLIC}, /* Teredo of public addresses */
    {{0x20, 0x01, 0x00}, 23, POL_C_RESERVED},     /* IETF protocol assignments */
    {{0x20}, 3, POL_C_PUBLIC},                    /* global unicast */
};

/* ---- helpers ---- */

static int prefix_match(const unsigned char *a, const unsigned char *net, int prefix)
{
    int full = prefix / 8, rest = prefix % 8;
    if (memcmp(a, net, (size_t)full))
        return 0;
    if (!rest)
        return 1;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return (a[full] & mask) == (net[full] & mask);
}

int pol_ip_in_net(const pol_ip *ip, const pol_ip *net, int prefix)
{
    return ip->family == net->family && prefix_match(ip->b, net->b, prefix);
}

int pol_ip_host_bits(const pol_ip *net, int prefix)
{
    int bits = net->family == AF_INET ? 32 : 128;
    for (int i = prefix; i < bits; i++)
        if (net->b[i / 8] & (0x80 >> (i % 8)))
            return 1;
    return 0;
}

static int zeros(const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return 0;
    return 1;
}

static void v4_from(const unsigned char *b, int invert, pol_ip *out)
{
    memset(out, 0, sizeof *out);
    out->family = AF_INET;
    for (int i = 0; i < 4; i++)
        out->b[i] = invert ? (unsigned char)~b[i] : b[i];
}

static int is_mapped(const unsigned char *b)
{
    return zeros(b, 10) && b[10] == 0xff && b[11] == 0xff;
}

size_t pol_ip_embedded_v4(const pol_ip *ip, int mapped_only, pol_ip out[2])
{
    const unsigned char *b = ip->b;
    if (ip->family != AF_INET6)
        return 0;
    if (is_mapped(b)) {
        v4_from(b + 12, 0, &out[0]);
        return 1;
    }
    if (mapped_only)
        return 0;
    if (zeros(b, 12) || /* compatible ::a.b.c.d */
        (zeros(b, 8) && b[8] == 0xff && b[9] == 0xff && zeros(b + 10, 2)) || /* translated */
        (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && zeros(b + 4, 8))) {
        v4_from(b + 12, 0, &out[0]);
        return 1;
    }
    if (b[0] == 0x20 && b[1] == 0x02) { /* 6to4 */
        v4_from(b + 2, 0, &out[0]);
        return 1;
    }
    if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) { /* Teredo */
        v4_from(b + 4, 0, &out[0]);
        v4_from(b + 12, 1, &out[1]);
        return 2;
    }
    return 0;
}

static int v4_class(const unsigned char *b)
{
    uint32_t a = V4(b[0], b[1], b[2], b[3]);
    for (size_t i = 0; i < sizeof v4_rows / sizeof v4_rows[0]; i++) {
        int p = v4_rows[i].prefix;
        uint32_t mask = p ? 0xffffffffu << (32 - p) : 0;
        if ((a & mask) == v4_rows[i].net)
            return v4_rows[i].cls;
    }
    return POL_C_PUBLIC;
}

static int v6_class(const unsigned char *b)
{
    for (size_t i = 0; i < sizeof v6_rows / sizeof v6_rows[0]; i++)
        if (prefix_match(b, v6_rows[i].b, v6_rows[i].prefix))
            return v6_rows[i].cls;
    return POL_C_RESERVED;
}

int pol_ip_class(const pol_ip *ip, pol_ip *via)
{
    pol_ip emb[2];
    if (via)
        via->family = 0;
    if (ip->family == AF_INET)
        return v4_class(ip->b);
    if (ip->family != AF_INET6)
        return POL_C_UNKNOWN;
    if (zeros(ip->b, 16))
        return POL_C_UNSPECIFIED;
    if (zeros(ip->b, 15) && ip->b[15] == 1)
        return POL_C_LOOPBACK;
    size_t n = pol_ip_embedded_v4(ip, 0, emb);
    for (size_t i = 0; i < n; i++) {
        int cls = v4_class(emb[i].b);
        if (cls != POL_C_PUBLIC || is_mapped(ip->b)) {
            if (via)
                *via = emb[i];
            return cls;
        }
    }
    return v6_class(ip->b);
}

int pol_ip_from_sockaddr(const struct sockaddr *sa, pol_ip *out)
{
    memset(out, 0, sizeof *out);
    if (!sa)
        return -1;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
        out->family = AF_INET;
        memcpy(out->b, &in->sin_addr, 4);
        return 0;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
        out->family = AF_INET6;
        memcpy(out->b, &in6->sin6_addr, 16);
        return 0;
    }
    return -1;
}

const char *pol_addr_class(const struct sockaddr *sa)
{
    pol_ip ip;
    if (pol_ip_from_sockaddr(sa, &ip) < 0)
        return pol_class_name(POL_C_UNKNOWN);
    return pol_class_name(pol_ip_class(&ip, NULL));
}
