/*
 * url.c - the WHATWG URL parser, reduced to what the policy needs: scheme,
 * host and port of special URLs, and about:blank. Host parsing (IPv4 in its
 * many spellings, IPv6, percent-decoding, forbidden code points) follows the
 * standard step by step, because the policy must decide about the host
 * Chromium will connect to, not about one that merely looks similar.
 *
 * Pure functions, any thread, no allocation.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "policy/policy_int.h"

/* ---- characters ---- */

static int is_alpha(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static unsigned char lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

/* WHATWG "forbidden domain code point", for ASCII. */
static int forbidden_in_domain(unsigned char c)
{
    return c <= 0x20 || c == 0x7f || (c && strchr("#%/:<>?@[\\]^|", c));
}

void pol_show(const char *s, size_t n, char *buf, size_t size)
{
    size_t k = 0;
    if (!size)
        return;
    for (size_t i = 0; i < n && i < 64 && k + 1 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[k++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    if (n > 64 && k + 4 <= size) {
        memcpy(buf + k, "...", 3);
        k += 3;
    }
    buf[k] = '\0';
}

/* ---- IPv4 ---- */

/*
 * The WHATWG IPv4 number parser: "0x" or "0X" means hex, another leading 0
 * octal, an empty number after the prefix is 0. Values above 2^32 saturate
 * there (every caller refuses them). 0 or -1.
 */
static int ipv4_number(const char *s, size_t n, uint64_t *v)
{
    unsigned radix = 10;
    if (n == 0)
        return -1;
    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        radix = 16;
        s += 2;
        n -= 2;
    } else if (n >= 2 && s[0] == '0') {
        radix = 8;
        s++;
        n--;
    }
    uint64_t acc = 0;
    for (size_t i = 0; i < n; i++) {
        int d = rg_hex_value((unsigned char)s[i]);
        if (d < 0 || (unsigned)d >= radix)
            return -1;
        acc = acc * radix + (unsigned)d;
        if (acc > 0xffffffffu)
            acc = 0x100000000u;
    }
    *v = acc;
    return 0;
}

/* WHATWG "ends in a number": the host is then an IPv4 address or invalid. */
static int ends_in_number(const char *s, size_t n)
{
    if (n && s[n - 1] == '.')
        n--; /* one trailing dot; "" and "." end in no number */
    size_t start = n;
    while (start && s[start - 1] != '.')
        start--;
    const char *last = s + start;
    size_t len = n - start;
    if (len == 0)
        return 0;
    size_t i = 0;
    while (i < len && is_digit((unsigned char)last[i]))
        i++;
    uint64_t v;
    return i == len || ipv4_number(last, len, &v) == 0;
}

int pol_parse_ipv4(const char *s, size_t n, pol_ip *out)
{
    uint64_t num[4];
    size_t parts = 0;
    if (n && s[n - 1] == '.')
        n--;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.')
            continue;
        if (parts == 4 || ipv4_number(s + start, i - start, &num[parts]) < 0)
            return -1;
        parts++;
        start = i + 1;
    }
    for (size_t i = 0; i + 1 < parts; i++)
        if (num[i] > 255)
            return -1;
    if (num[parts - 1] >= (uint64_t)1 << (8 * (5 - parts)))
        return -1;
    uint32_t v = (uint32_t)num[parts - 1];
    for (size_t i = 0; i + 1 < parts; i++)
        v += (uint32_t)num[i] << (8 * (3 - i));
    memset(out, 0, sizeof *out);
    out->family = AF_INET;
    out->b[0] = (unsigned char)(v >> 24);
    out->b[1] = (unsigned char)(v >> 16);
    out->b[2] = (unsigned char)(v >> 8);
    out->b[3] = (unsigned char)v;
    return 0;
}

/* ---- IPv6 ---- */

/*
 * The dotted quad at the end of an IPv6 address (WHATWG: exactly four
 * decimal parts without leading zeros, each at most 255) into piece[*idx]
 * and the next. *pp is the index of its first character.
 */
static int ipv6_tail_v4(const char *s, size_t n, size_t *pp, uint16_t *piece, int *idx)
{
    size_t p = *pp;
    int seen = 0;
    if (*idx > 6)
        return -1;
    while (p < n) {
        int v = -1;
        if (seen > 0) {
            if (s[p] != '.' || seen >= 4)
                return -1;
            p++;
        }
        if (p >= n || !is_digit((unsigned char)s[p]))
            return -1;
        while (p < n && is_digit((unsigned char)s[p])) {
            if (v == 0)
                return -1;
            v = (v < 0 ? 0 : v * 10) + (s[p] - '0');
            if (v > 255)
                return -1;
            p++;
        }
        piece[*idx] = (uint16_t)(piece[*idx] * 0x100 + v);
        seen++;
        if (seen == 2 || seen == 4)
            (*idx)++;
    }
    *pp = p;
    return seen == 4 ? 0 : -1;
}

/* Moves the pieces after "::" to the end, as the standard's swap loop does. */
static void ipv6_expand(uint16_t *piece, int idx, int compress)
{
    int swaps = idx - compress;
    int i = 7;
    while (i != 0 && swaps > 0) {
        uint16_t t = piece[i];
        piece[i] = piece[compress + swaps - 1];
        piece[compress + swaps - 1] = t;
        i--;
        swaps--;
    }
}

int pol_parse_ipv6(const char *s, size_t n, pol_ip *out)
{
    uint16_t piece[8] = {0};
    int idx = 0, compress = -1;
    size_t p = 0;
    if (n && s[0] == ':') {
        if (n < 2 || s[1] != ':')
            return -1;
        p = 2;
        compress = ++idx;
    }
    while (p < n) {
        if (idx == 8)
            return -1;
        if (s[p] == ':') {
            if (compress >= 0)
                return -1;
            p++;
            compress = ++idx;
            continue;
        }
        unsigned v = 0;
        size_t len = 0;
        while (len < 4 && p < n && rg_hex_value((unsigned char)s[p]) >= 0) {
            v = v * 16 + (unsigned)rg_hex_value((unsigned char)s[p]);
            p++;
            len++;
        }
        if (p < n && s[p] == '.') {
            if (len == 0)
                return -1;
            p -= len;
            if (ipv6_tail_v4(s, n, &p, piece, &idx) < 0)
                return -1;
            break;
        }
        if (p < n && s[p] == ':') {
            if (++p == n)
                return -1;
        } else if (p < n) {
            return -1;
        }
        piece[idx++] = (uint16_t)v;
    }
    if (compress >= 0)
        ipv6_expand(piece, idx, compress);
    else if (idx != 8)
        return -1;
    memset(out, 0, sizeof *out);
    out->family = AF_INET6;
    for (int i = 0; i < 8; i++) {
        out->b[2 * i] = (unsigned char)(piece[i] >> 8);
        out->b[2 * i + 1] = (unsigned char)piece[i];
    }
    return 0;
}

/* The first longest run of two or more zero pieces, or -1. */
static int ipv6_zero_run(const uint16_t *piece)
{
    int best = -1, best_len = 1;
    for (int i = 0; i < 8;) {
        int j = i;
        while (j < 8 && piece[j] == 0)
            j++;
        if (j - i > best_len) {
            best = i;
            best_len = j - i;
        }
        i = j > i ? j : i + 1;
    }
    return best;
}

void pol_ip_format(const pol_ip *ip, char *buf, size_t size)
{
    if (ip->family == AF_INET) {
        snprintf(buf, size, "%u.%u.%u.%u", ip->b[0], ip->b[1], ip->b[2], ip->b[3]);
        return;
    }
    uint16_t piece[8];
    for (int i = 0; i < 8; i++)
        piece[i] = (uint16_t)(ip->b[2 * i] << 8 | ip->b[2 * i + 1]);
    int compress = ipv6_zero_run(piece);
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < 8 && k < size; i++) {
        if (i == compress) {
            k += (size_t)snprintf(buf + k, size - k, i == 0 ? "::" : ":");
            while (i + 1 < 8 && piece[i + 1] == 0)
                i++;
            continue;
        }
        k += (size_t)snprintf(buf + k, size - k, "%x%s", piece[i], i < 7 ? ":" : "");
    }
}

/* ---- hosts ---- */

/*
 * Percent-decodes and lowercases s (n bytes) into d (room for POL_HOST_MAX
 * + 1 characters and a NUL). Returns the length, or -1 when it is too long.
 */
static long host_decode(const char *s, size_t n, char *d)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '%' && i + 2 < n && rg_hex_value((unsigned char)s[i + 1]) >= 0 &&
            rg_hex_value((unsigned char)s[i + 2]) >= 0) {
            c = (unsigned char)(rg_hex_value((unsigned char)s[i + 1]) * 16 +
                                rg_hex_value((unsigned char)s[i + 2]));
            i += 2;
        }
        if (m == POL_HOST_MAX + 1)
            return -1;
        d[m++] = (char)lower(c);
    }
    d[m] = '\0';
    return (long)m;
}

static int host_check_chars(const char *d, size_t m, const char *raw, size_t n, char *err,
                            size_t errlen)
{
    char shown[80];
    for (size_t i = 0; i < m; i++) {
        unsigned char c = (unsigned char)d[i];
        if (c >= 0x80) {
            pol_show(raw, n, shown, sizeof shown);
            return rg_errf(err, errlen, RG_EBADREQ,
                           "the host \"%s\" has non-ASCII characters; send an internationalized "
                           "name in its ASCII (xn--) form",
                           shown);
        }
        if (forbidden_in_domain(c)) {
            pol_show(raw, n, shown, sizeof shown);
            return rg_errf(err, errlen, RG_EBADREQ,
                           "the host \"%s\" has a character a host cannot have", shown);
        }
    }
    if (m > POL_HOST_MAX && !(m == POL_HOST_MAX + 1 && d[m - 1] == '.'))
        return rg_errf(err, errlen, RG_EBADREQ, "the host is longer than %d characters",
                       POL_HOST_MAX);
    return 0;
}

int pol_parse_host(const char *s, size_t n, char *host, pol_ip *ip, char *err, size_t errlen)
{
    char shown[80];
    memset(ip, 0, sizeof *ip);
    host[0] = '\0';
    if (n == 0)
        return rg_errf(err, errlen, RG_EBADREQ, "the URL has no host");
    if (s[0] == '[') {
        if (n < 2 || s[n - 1] != ']' || pol_parse_ipv6(s + 1, n - 2, ip) < 0) {
            pol_show(s, n, shown, sizeof shown);
            return rg_errf(err, errlen, RG_EBADREQ, "the host \"%s\" is not an IPv6 address",
                           shown);
        }
        pol_ip_format(ip, host, POL_HOST_SIZE);
        return 0;
    }
    char d[POL_HOST_SIZE];
    long m = host_decode(s, n, d);
    if (m < 0)
        return rg_errf(err, errlen, RG_EBADREQ, "the host is longer than %d characters",
                       POL_HOST_MAX);
    int rc = host_check_chars(d, (size_t)m, s, n, err, errlen);
    if (rc < 0)
        return rc;
    if (ends_in_number(d, (size_t)m)) {
        if (pol_parse_ipv4(d, (size_t)m, ip) < 0) {
            pol_show(s, n, shown, sizeof shown);
            return rg_errf(err, errlen, RG_EBADREQ,
                           "the host \"%s\" ends in a number but is not an IPv4 address", shown);
        }
        pol_ip_format(ip, host, POL_HOST_SIZE);
        return 0;
    }
    memcpy(host, d, (size_t)m + 1);
    return 0;
}

/* ---- URLs ---- */

/*
 * Copies url without leading and trailing C0 controls and spaces, and
 * without any tab or newline (WHATWG's first steps). Returns the length.
 */
static size_t url_clean(const char *url, size_t len, char *buf)
{
    while (len && (unsigned char)url[0] <= 0x20) {
        url++;
        len--;
    }
    while (len && (unsigned char)url[len - 1] <= 0x20)
        len--;
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (url[i] != '\t' && url[i] != '\n' && url[i] != '\r')
            buf[n++] = url[i];
    buf[n] = '\0';
    return n;
}

/* The index of the ':' that ends a valid scheme, or 0 when there is none. */
static size_t scheme_end(const char *s, size_t n)
{
    if (n == 0 || !is_alpha((unsigned char)s[0]))
        return 0;
    for (size_t i = 1; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == ':')
            return i;
        if (!is_alpha(c) && !is_digit(c) && c != '+' && c != '-' && c != '.')
            return 0;
    }
    return 0;
}

/* The default port of the schemes the policy lets through, or -1. */
static int web_default_port(const char *scheme)
{
    if (!strcmp(scheme, "http") || !strcmp(scheme, "ws"))
        return 80;
    if (!strcmp(scheme, "https") || !strcmp(scheme, "wss"))
        return 443;
    return -1;
}

/* about:blank, with any query or fragment (WHATWG "matches about:blank"). */
static int is_about_blank(const char *scheme, const char *rest, size_t n)
{
    return !strcmp(scheme, "about") && n >= 5 && !memcmp(rest, "blank", 5) &&
           (n == 5 || rest[5] == '?' || rest[5] == '#');
}

/* The port after "host:", p (n bytes, maybe empty): the value, or -1. */
static int parse_port(const char *p, size_t n, int def)
{
    long v = 0;
    if (n == 0)
        return def;
    for (size_t i = 0; i < n; i++) {
        if (!is_digit((unsigned char)p[i]))
            return -1;
        v = v * 10 + (p[i] - '0');
        if (v > 65535)
            return -1;
    }
    return (int)v;
}

/* Host and port of a special URL; s is what follows "scheme:". */
static int parse_authority(const char *s, size_t n, int def_port, pol_url *out, char *err,
                           size_t errlen)
{
    size_t i = 0;
    while (i < n && (s[i] == '/' || s[i] == '\\'))
        i++;
    size_t end = i;
    while (end < n && s[end] != '/' && s[end] != '\\' && s[end] != '?' && s[end] != '#')
        end++;
    size_t host = i;
    for (size_t k = i; k < end; k++)
        if (s[k] == '@')
            host = k + 1;
    size_t colon = end;
    int brackets = 0;
    for (size_t k = host; k < end && colon == end; k++) {
        if (s[k] == '[')
            brackets = 1;
        else if (s[k] == ']')
            brackets = 0;
        else if (s[k] == ':' && !brackets)
            colon = k;
    }
    if (colon == host)
        return rg_errf(err, errlen, RG_EBADREQ, "the URL has no host");
    out->port = colon < end ? parse_port(s + colon + 1, end - colon - 1, def_port) : def_port;
    if (out->port < 0)
        return rg_errf(err, errlen, RG_EBADREQ, "the URL's port is not a number from 0 to 65535");
    pol_ip ip;
    int rc = pol_parse_host(s + host, colon - host, out->host, &ip, err, errlen);
    if (rc < 0)
        return rc;
    out->family = ip.family;
    memcpy(out->addr, ip.b, sizeof out->addr);
    return 0;
}

int pol_parse_url(const char *url, size_t len, pol_url *out, char *err, size_t errlen)
{
    char buf[POL_URL_MAX_BYTES + 1];
    memset(out, 0, sizeof *out);
    out->port = -1;
    if (!url)
        return rg_errf(err, errlen, RG_EBADREQ, "no URL");
    if (len > POL_URL_MAX_BYTES)
        return rg_errf(err, errlen, RG_EBADREQ, "the URL is longer than %d bytes",
                       POL_URL_MAX_BYTES);
    size_t n = url_clean(url, len, buf);
    size_t colon = scheme_end(buf, n);
    if (!colon)
        return rg_errf(err, errlen, RG_EBADREQ, "the URL has no scheme (such as https:)");
    size_t k = 0;
    for (; k < colon && k + 1 < sizeof out->scheme; k++)
        out->scheme[k] = (char)lower((unsigned char)buf[k]);
    out->scheme[k] = '\0';
    const char *rest = buf + colon + 1;
    size_t rest_len = n - colon - 1;
    int def_port = web_default_port(out->scheme);
    if (def_port < 0) {
        out->about_blank = is_about_blank(out->scheme, rest, rest_len);
        return 0;
    }
    int rc = parse_authority(rest, rest_len, def_port, out, err, errlen);
    if (rc < 0) {
        out->host[0] = '\0';
        out->family = 0;
        out->port = -1;
    }
    return rc;
}
