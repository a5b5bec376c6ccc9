/*
 * test_policy.c - the URL policy: WHATWG host parsing in every spelling, the
 * address classes, tenant allow and deny lists, and the DNS check (through
 * the lookup seam, except for names /etc/hosts or the address parser answer:
 * these tests never need the network).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <time.h>

#include <cmocka.h>

#include "common/rg.h"
#include "policy/policy.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/*
 * One URL and what the policy must say. For POL_ALLOW and POL_RESOLVE, word
 * is the normalized host; for a refusal, a word the reason must contain.
 */
struct row {
    const char *url;
    int rc;
    const char *word;
};

static pol *make(int allow_private, const char *const *allow, size_t n_allow,
                 const char *const *deny, size_t n_deny)
{
    pol *p = NULL;
    char err[256] = "";
    int rc = pol_new(allow_private, allow, n_allow, deny, n_deny, &p, err, sizeof err);
    if (rc != 0)
        fail_msg("pol_new: %d %s", rc, err);
    return p;
}

static void check_rows(const pol *p, const struct row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        pol_url u;
        char why[512] = "";
        int rc = pol_check_url(p, rows[i].url, strlen(rows[i].url), &u, why, sizeof why);
        const char *seen = rc == POL_ALLOW || rc == POL_RESOLVE ? u.host : why;
        if (rc != rows[i].rc || !strstr(seen, rows[i].word))
            fail_msg("\"%s\": got %d (%s), want %d with \"%s\"", rows[i].url, rc, seen, rows[i].rc,
                     rows[i].word);
        if (rows[i].rc == POL_ALLOW && u.host[0] && strcmp(u.host, rows[i].word))
            fail_msg("\"%s\": host %s, want exactly %s", rows[i].url, u.host, rows[i].word);
    }
}

#define B RG_EBLOCKEDURL
#define BAD RG_EBADREQ
#define OK POL_ALLOW
#define DNS POL_RESOLVE

/* ---- the default policy ---- */

/* Every spelling of loopback that a URL can carry. */
static const struct row loopback_rows[] = {
    {"http://127.0.0.1/", B, "127.0.0.1 is a loopback address"},
    {"http://127.1/", B, "127.0.0.1 is a loopback"},
    {"http://0x7f000001/", B, "127.0.0.1 is a loopback"},
    {"http://2130706433/", B, "127.0.0.1 is a loopback"},
    {"http://017700000001/", B, "127.0.0.1 is a loopback"},
    {"http://0x7f.1/", B, "127.0.0.1 is a loopback"},
    {"http://0177.0.0.1/", B, "127.0.0.1 is a loopback"},
    {"http://0x7F.0X0.0.1/", B, "127.0.0.1 is a loopback"},
    {"http://127.0.0.1./", B, "127.0.0.1 is a loopback"},
    {"http://127.255.255.254/", B, "loopback"},
    {"http://127%2e0%2e0%2e1/", B, "127.0.0.1 is a loopback"},
    {"http://%31%32%37.0.0.1/", B, "127.0.0.1 is a loopback"},
    {"http://[::1]/", B, "::1 is a loopback"},
    {"http://[0:0:0:0:0:0:0:1]/", B, "::1 is a loopback"},
    {"http://[::ffff:127.0.0.1]/", B, "::ffff:7f00:1 embeds 127.0.0.1, a loopback"},
    {"http://[::ffff:7f00:1]/", B, "embeds 127.0.0.1, a loopback"},
    {"http://[::127.0.0.1]/", B, "::7f00:1 embeds 127.0.0.1, a loopback"},
    {"http://[64:ff9b::127.0.0.1]/", B, "embeds 127.0.0.1, a loopback"},
    {"http://[2002:7f00:1::]/", B, "embeds 127.0.0.1, a loopback"},
    {"http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", B, "embeds 127.0.0.1, a loopback"},
    {"http://localhost/", B, "localhost resolves to 127.0.0.1, a loopback"},
    {"http://localhost./", B, "loopback"},
    {"http://LOCALHOST/", B, "loopback"},
    {"http://foo.localhost/", B, "loopback"},
    {"http://a.b.LocalHost../", B, "loopback"},
    {"http://localhost.localdomain/", B, "loopback"},
    {"http://%6c%6f%63%61%6c%68%6f%73%74/", B, "loopback"},
    {"http://%4C%4F%43%41%4C%48%4F%53%54/", B, "loopback"},
    {"http://public.com@127.0.0.1/", B, "127.0.0.1 is a loopback"},
    {"http://a@b@127.0.0.1/", B, "127.0.0.1 is a loopback"},
    {"http://user:pass@localhost:8080/", B, "loopback"},
    {"http://127.0.0.1#@public.com/", B, "127.0.0.1 is a loopback"},
    {"http://127.0.0.1?@public.com/", B, "127.0.0.1 is a loopback"},
    {"http://127.0.0.1\\@public.com/", B, "127.0.0.1 is a loopback"},
    {"http:\\\\127.0.0.1\\x", B, "127.0.0.1 is a loopback"},
    {"http:/\\/\\127.0.0.1/", B, "127.0.0.1 is a loopback"},
    {"http:127.0.0.1/", B, "127.0.0.1 is a loopback"},
    {"http:///127.0.0.1/", B, "127.0.0.1 is a loopback"},
    {"HTTP://127.0.0.1/", B, "127.0.0.1 is a loopback"},
    {"hTtPs://127.0.0.1:8443/", B, "127.0.0.1 is a loopback"},
    {" \x01http://127.0.0.1/ \x1f", B, "127.0.0.1 is a loopback"},
    {"ht\ttp://127.0.0.1/", B, "127.0.0.1 is a loopback"},
    {"http://12\n7.0.0.\r1/", B, "127.0.0.1 is a loopback"},
    {"http://127.0.0.1:8080/", B, "127.0.0.1 is a loopback"},
    {"http://[::1]:80/", B, "::1 is a loopback"},
    {"ws://127.0.0.1/socket", B, "127.0.0.1 is a loopback"},
    {"wss://localhost/socket", B, "loopback"},
};

/* The other classes, and their public neighbours. */
static const struct row class_rows[] = {
    {"http://10.0.0.1/", B, "10.0.0.1 is a private address"},
    {"http://0xa.1/", B, "10.0.0.1 is a private"},
    {"http://10.255.255.255/", B, "private"},
    {"http://172.16.0.1/", B, "private"},
    {"http://172.31.255.255/", B, "private"},
    {"http://192.168.1.1/", B, "private"},
    {"http://0xc0a80101/", B, "192.168.1.1 is a private"},
    {"http://[fc00::1]/", B, "private"},
    {"http://[fd12:3456::1]/", B, "private"},
    {"http://[fec0::1]/", B, "private"},
    {"http://[::ffff:10.0.0.1]/", B, "embeds 10.0.0.1, a private"},
    {"http://[::ffff:c0a8:101]/", B, "embeds 192.168.1.1, a private"},
    {"http://[64:ff9b:1::a00:1]/", B, "private"},
    {"http://172.15.255.255/", OK, "172.15.255.255"},
    {"http://172.32.0.1/", OK, "172.32.0.1"},
    {"http://192.169.0.1/", OK, "192.169.0.1"},
    {"http://169.254.1.1/", B, "link-local"},
    {"http://[fe80::1]/", B, "link-local"},
    {"http://[febf::1]/", B, "link-local"},
    {"http://100.64.0.1/", B, "cgnat"},
    {"http://100.127.255.255/", B, "cgnat"},
    {"http://100.63.255.255/", OK, "100.63.255.255"},
    {"http://100.128.0.1/", OK, "100.128.0.1"},
    {"http://224.0.0.1/", B, "multicast"},
    {"http://239.255.255.255/", B, "multicast"},
    {"http://[ff02::1]/", B, "multicast"},
    {"http://0.0.0.0/", B, "0.0.0.0 is the unspecified address"},
    {"http://0/", B, "unspecified"},
    {"http://0x/", B, "unspecified"},
    {"http://[::]/", B, "unspecified"},
    {"http://0.1.2.3/", B, "this-network"},
    {"http://255.255.255.255/", B, "broadcast"},
    {"http://4294967295/", B, "broadcast"},
    {"http://037777777777/", B, "broadcast"},
    {"http://169.254.169.254/latest/meta-data/", B, "169.254.169.254 is a cloud metadata"},
    {"http://0xa9fea9fe/", B, "metadata"},
    {"http://2852039166/", B, "metadata"},
    {"http://169.254.43518/", B, "metadata"},
    {"http://[::ffff:169.254.169.254]/", B, "metadata"},
    {"http://[::ffff:a9fe:a9fe]/", B, "metadata"},
    {"http://[fd00:ec2::254]/", B, "fd00:ec2::254 is a cloud metadata"},
    {"http://100.100.100.200/", B, "metadata"},
    {"http://169.254.170.2/v2/credentials", B, "metadata"},
    {"http://metadata.google.internal/", B, "metadata.google.internal is a cloud metadata host"},
    {"http://METADATA.Google.Internal./", B, "metadata"},
    {"http://198.18.0.1/", B, "benchmarking"},
    {"http://198.19.255.255/", B, "benchmarking"},
    {"http://198.20.0.1/", OK, "198.20.0.1"},
    {"http://192.0.2.1/", B, "documentation"},
    {"http://[2001:db8::1]/", B, "documentation"},
    {"http://240.0.0.1/", B, "reserved"},
    {"http://[100::1]/", B, "reserved"},
    {"http://[4000::1]/", B, "reserved"},
    {"http://[::8.8.8.8]/", B, "reserved"},
    {"http://8.8.8.8/", OK, "8.8.8.8"},
    {"https://1.1.1.1:443/", OK, "1.1.1.1"},
    {"http://[2606:4700:4700::1111]/", OK, "2606:4700:4700::1111"},
    {"http://[::ffff:8.8.8.8]/", OK, "::ffff:808:808"},
    {"http://[64:ff9b::8.8.8.8]/", OK, "64:ff9b::808:808"},
    {"http://[2002:808:808::1]/", OK, "2002:808:808::1"},
    {"http://[2001:0:4136:e378:8000:63bf:f7f7:f7f7]/", OK, "2001:0:4136:e378:8000:63bf:f7f7:f7f7"},
};

/* Names go to DNS; schemes other than http(s) and ws(s) are refused. */
static const struct row scheme_and_name_rows[] = {
    {"https://example.com/", DNS, "example.com"},
    {"http://EXAMPLE.com./x", DNS, "example.com."},
    {"http://ex%41mple.com/", DNS, "example.com"},
    {"ws://example.com/socket", DNS, "example.com"},
    {"WSS://example.com:8443/socket", DNS, "example.com"},
    {"http://127.0.0.1.nip.io/", DNS, "127.0.0.1.nip.io"},
    {"http://127.0.0.1../", DNS, "127.0.0.1.."},
    {"http://evil.com:80\\@127.0.0.1/", DNS, "evil.com"},
    {"http://127.0.0.1:80@evil.com/", DNS, "evil.com"},
    {"about:blank", OK, ""},
    {"about:blank#top", OK, ""},
    {"about:blank?x=1", OK, ""},
    {"ABOUT:blank", OK, ""},
    {"about:BLANK", B, "\"about:\""},
    {"about:srcdoc", B, "\"about:\""},
    {"about:blankx", B, "\"about:\""},
    {"file:///etc/passwd", B, "\"file:\" is not allowed"},
    {"FILE://localhost/etc/passwd", B, "\"file:\""},
    {"javascript:alert(1)", B, "\"javascript:\""},
    {"JavaScript:alert(1)", B, "\"javascript:\""},
    {" java\tscript:alert(1)", B, "\"javascript:\""},
    {"data:text/html,<script>alert(1)</script>", B, "\"data:\""},
    {"blob:https://example.com/0b1c", B, "\"blob:\""},
    {"chrome://settings", B, "\"chrome:\""},
    {"chrome-extension://abc/x.html", B, "\"chrome-extension:\""},
    {"ftp://example.com/", B, "\"ftp:\""},
    {"view-source:http://example.com/", B, "\"view-source:\""},
    {"filesystem:http://example.com/temporary/x", B, "\"filesystem:\""},
    {"localhost:8080", B, "\"localhost:\""},
};

static void test_default_refuses_loopback_in_every_spelling(void **state)
{
    (void)state;
    pol *p = make(0, NULL, 0, NULL, 0);
    check_rows(p, loopback_rows, N(loopback_rows));
    pol_free(p);
}

static void test_default_classes(void **state)
{
    (void)state;
    pol *p = make(0, NULL, 0, NULL, 0);
    check_rows(p, class_rows, N(class_rows));
    pol_free(p);
}

static void test_default_schemes_and_names(void **state)
{
    (void)state;
    pol *p = make(0, NULL, 0, NULL, 0);
    check_rows(p, scheme_and_name_rows, N(scheme_and_name_rows));
    pol_free(p);
}

/* ---- parsing ---- */

static const struct row invalid_rows[] = {
    {"http://1.2.3.4.5/", BAD, "not an IPv4 address"},
    {"http://0x100.1/", BAD, "not an IPv4 address"},
    {"http://4294967296/", BAD, "not an IPv4 address"},
    {"http://256.1.1.1/", BAD, "not an IPv4 address"},
    {"http://1.2.3.256/", BAD, "not an IPv4 address"},
    {"http://1.2.3.09/", BAD, "not an IPv4 address"},
    {"http://0.0.0.0x100/", BAD, "not an IPv4 address"},
    {"http://040000000000/", BAD, "not an IPv4 address"},
    {"http://999999999999999999999/", BAD, "not an IPv4 address"},
    {"http://0xffffffffffffffffff/", BAD, "not an IPv4 address"},
    {"http://1..2/", BAD, "not an IPv4 address"},
    {"http://foo.0x/", BAD, "not an IPv4 address"},
    {"http://foo.123/", BAD, "not an IPv4 address"},
    {"http://[fe80::1%25eth0]/", BAD, "not an IPv6 address"},
    {"http://[::1/", BAD, "not an IPv6 address"},
    {"http://[1::2::3]/", BAD, "not an IPv6 address"},
    {"http://[1:2:3:4:5:6:7:8:9]/", BAD, "not an IPv6 address"},
    {"http://[::1.2.3]/", BAD, "not an IPv6 address"},
    {"http://[::01.2.3.4]/", BAD, "not an IPv6 address"},
    {"http://[::1]x/", BAD, "not an IPv6 address"},
    {"http://", BAD, "no host"},
    {"http:///", BAD, "no host"},
    {"http://user@/", BAD, "no host"},
    {"http://:80/", BAD, "no host"},
    {"http://example.com:65536/", BAD, "port"},
    {"http://example.com:8a/", BAD, "port"},
    {"http://example.com:-1/", BAD, "port"},
    {"//127.0.0.1/", BAD, "no scheme"},
    {"127.0.0.1", BAD, "no scheme"},
    {"", BAD, "no scheme"},
    {"1http://x/", BAD, "no scheme"},
    {"http://exa mple.com/", BAD, "character"},
    {"http://a%2fb/", BAD, "character"},
    {"http://a%40b/", BAD, "character"},
    {"http://a%00b/", BAD, "character"},
    {"http://a%zz/", BAD, "character"},
    {"http://a<b/", BAD, "character"},
    {"http://\xef\xbc\x91\xef\xbc\x92\xef\xbc\x97.0.0.1/", BAD, "non-ASCII"},
    {"http://%ef%bc%91%ef%bc%92%ef%bc%97.0.0.1/", BAD, "non-ASCII"},
    {"http://localhost%E3%80%82/", BAD, "non-ASCII"},
};

static const struct row ipv4_edge_rows[] = {
    {"http://1.256/", OK, "1.0.1.0"},
    {"http://1.2.3/", OK, "1.2.0.3"},
    {"http://1.0x10000/", OK, "1.1.0.0"},
    {"http://1.2.3.4./", OK, "1.2.3.4"},
    {"http://16843009/", OK, "1.1.1.1"},
    {"http://0x1.0x1.0x1.0x1/", OK, "1.1.1.1"},
    {"http://01.01.01.01/", OK, "1.1.1.1"},
    {"http://0x08080808/", OK, "8.8.8.8"},
    {"http://8.0x80808/", OK, "8.8.8.8"},
    {"http://[0:0:0:0:0:ffff:808:808]/", OK, "::ffff:808:808"},
    {"http://[2606:4700:0:0:0:0:0:1]/", OK, "2606:4700::1"},
    {"http://[2606:0:0:1:0:0:0:1]/", OK, "2606:0:0:1::1"},
};

static void test_invalid_urls_are_bad_requests(void **state)
{
    (void)state;
    pol *p = make(1, NULL, 0, NULL, 0);
    check_rows(p, invalid_rows, N(invalid_rows));
    check_rows(p, ipv4_edge_rows, N(ipv4_edge_rows));
    pol_free(p);
}

static void test_parse_fills_scheme_host_port(void **state)
{
    (void)state;
    static const struct {
        const char *url;
        const char *scheme, *host;
        int port, family;
    } rows[] = {
        {"HTTP://Example.COM", "http", "example.com", 80, 0},
        {"https://example.com", "https", "example.com", 443, 0},
        {"ws://example.com", "ws", "example.com", 80, 0},
        {"wss://example.com", "wss", "example.com", 443, 0},
        {"https://example.com:0080/", "https", "example.com", 80, 0},
        {"http://example.com:/", "http", "example.com", 80, 0},
        {"http://u:p@[::1]:65535/x?y#z", "http", "::1", 65535, AF_INET6},
        {"http://0x7f.1:8080", "http", "127.0.0.1", 8080, AF_INET},
        {"file:///etc/passwd", "file", "", -1, 0},
        {"about:blank", "about", "", -1, 0},
    };
    for (size_t i = 0; i < N(rows); i++) {
        pol_url u;
        char err[256] = "";
        assert_int_equal(pol_parse_url(rows[i].url, strlen(rows[i].url), &u, err, sizeof err), 0);
        assert_string_equal(u.scheme, rows[i].scheme);
        assert_string_equal(u.host, rows[i].host);
        assert_int_equal(u.port, rows[i].port);
        assert_int_equal(u.family, rows[i].family);
    }
    pol_url u;
    assert_int_equal(pol_parse_url("http://0x7f.1/", 14, &u, NULL, 0), 0);
    assert_memory_equal(u.addr, "\x7f\x00\x00\x01", 4);
    assert_int_equal(pol_parse_url("about:blank", 11, &u, NULL, 0), 0);
    assert_int_equal(u.about_blank, 1);
}

/* Lengths, NUL bytes and NULL: the bounds of the input. */
static void test_parse_bounds(void **state)
{
    (void)state;
    pol *p = make(0, NULL, 0, NULL, 0);
    char why[256];
    size_t len = POL_URL_MAX_BYTES + 1;
    char *url = malloc(len + 1);
    memset(url, 'a', len);
    memcpy(url, "https://example.com/", 20);
    url[len] = '\0';
    assert_int_equal(pol_check_url(p, url, len, NULL, why, sizeof why), RG_EBADREQ);
    assert_non_null(strstr(why, "longer than 8192"));
    assert_int_equal(pol_check_url(p, url, len - 1, NULL, why, sizeof why), POL_RESOLVE);
    free(url);

    /* A 253-character name is fine; 254 is not, unless the last is a dot. */
    char host[300] = "http://";
    memset(host + 7, 'a', 253);
    for (int i = 7 + 60; i < 7 + 253; i += 61)
        host[i] = '.';
    host[7 + 253] = '\0';
    assert_int_equal(pol_check_url(p, host, strlen(host), NULL, why, sizeof why), POL_RESOLVE);
    strcat(host, ".");
    assert_int_equal(pol_check_url(p, host, strlen(host), NULL, why, sizeof why), POL_RESOLVE);
    host[strlen(host) - 1] = 'a';
    assert_int_equal(pol_check_url(p, host, strlen(host), NULL, why, sizeof why), RG_EBADREQ);
    assert_non_null(strstr(why, "longer than 253"));

    /* A NUL inside the host is a forbidden code point, not its end. */
    static const char nul[] = "http://evil.com\0.localhost/";
    assert_int_equal(pol_check_url(p, nul, sizeof nul - 1, NULL, why, sizeof why), RG_EBADREQ);
    assert_int_equal(pol_check_url(p, NULL, 0, NULL, NULL, 0), RG_EBADREQ);
    pol_free(p);
}

/* ---- allow_private ---- */

static const struct row private_rows[] = {
    {"http://127.0.0.1/", OK, "127.0.0.1"},
    {"http://[::1]/", OK, "::1"},
    {"http://localhost:3000/", OK, "localhost"},
    {"http://10.0.0.1/", OK, "10.0.0.1"},
    {"http://[fd12::1]/", OK, "fd12::1"},
    {"http://169.254.1.1/", OK, "169.254.1.1"},
    {"http://100.64.0.1/", OK, "100.64.0.1"},
    {"http://0.0.0.0/", OK, "0.0.0.0"},
    {"http://192.0.2.1/", OK, "192.0.2.1"},
    {"http://198.18.0.1/", OK, "198.18.0.1"},
    {"http://[::ffff:192.168.0.1]/", OK, "::ffff:c0a8:1"},
    {"http://169.254.169.254/", B, "metadata"},
    {"http://[::ffff:a9fe:a9fe]/", B, "metadata"},
    {"http://[fd00:ec2::254]/", B, "metadata"},
    {"http://100.100.100.200/", B, "metadata"},
    {"http://168.63.129.16/", B, "metadata"},
    {"http://metadata.google.internal/", B, "metadata"},
    {"http://224.0.0.1/", B, "multicast"},
    {"http://255.255.255.255/", B, "broadcast"},
    {"http://240.0.0.1/", B, "reserved"},
    {"file:///etc/passwd", B, "\"file:\""},
    {"https://example.com/", DNS, "example.com"},
};

static void test_allow_private_opens_all_but_metadata(void **state)
{
    (void)state;
    pol *p = make(1, NULL, 0, NULL, 0);
    check_rows(p, private_rows, N(private_rows));
    pol_free(p);
}

/* ---- lists ---- */

static void test_deny_list(void **state)
{
    (void)state;
    static const char *const deny[] = {"evil.com",        "*.bad.example",  ".Worse.Example.",
                                       "93.184.216.0/24", "2001:4860::/32", "8.8.8.8"};
    static const struct row rows[] = {
        {"http://evil.com/", B, "evil.com is on the tenant's deny list (\"evil.com\")"},
        {"http://EVIL.COM./", B, "deny list"},
        {"http://sub.evil.com/", DNS, "sub.evil.com"},
        {"http://notevil.com/", DNS, "notevil.com"},
        {"http://a.bad.example/", B, "deny list (\"*.bad.example\")"},
        {"http://a.b.bad.example/", B, "deny list"},
        {"http://bad.example/", DNS, "bad.example"},
        {"http://notbad.example/", DNS, "notbad.example"},
        {"http://x.worse.example/", B, "deny list (\".worse.example.\")"},
        {"http://worse.example/", DNS, "worse.example"},
        {"http://93.184.216.34/", B, "deny list (\"93.184.216.0/24\")"},
        {"http://93.184.217.1/", OK, "93.184.217.1"},
        {"http://[::ffff:93.184.216.34]/", B, "deny list"},
        {"http://[2002:5db8:d822::]/", B, "deny list"},
        {"http://[64:ff9b::5db8:d822]/", B, "deny list"},
        {"http://[2001:4860::8888]/", B, "deny list"},
        {"http://0x08080808/", B, "deny list (\"8.8.8.8\")"},
        {"http://134744072/", B, "deny list"},
        {"http://8.8.4.4/", OK, "8.8.4.4"},
    };
    pol *p = make(0, NULL, 0, deny, N(deny));
    check_rows(p, rows, N(rows));
    pol_free(p);
}

/* A non-empty allow list means only these; deny beats allow. */
static void test_allow_list_means_only_these(void **state)
{
    (void)state;
    static const char *const allow[] = {"example.com", "*.example.org",     "203.0.113.0/24",
                                        "10.1.0.0/16", "[2001:db8:1::]/48", "1.2.3.4"};
    static const char *const deny[] = {"blocked.example.org", "10.1.2.3"};
    static const struct row rows[] = {
        {"https://example.com/", DNS, "example.com"},
        {"https://a.example.org/", DNS, "a.example.org"},
        {"https://www.example.com/", DNS, "www.example.com"}, /* may resolve into a CIDR */
        {"https://blocked.example.org/", B, "deny list"},
        {"http://203.0.113.7/", OK, "203.0.113.7"},
        {"http://10.1.2.4/", OK, "10.1.2.4"},
        {"http://10.1.2.3/", B, "deny list"},
        {"http://10.2.0.1/", B, "10.2.0.1 is not on the tenant's allow list"},
        {"http://1.2.3.4/", OK, "1.2.3.4"},
        {"http://1.2.3.5/", B, "allow list"},
        {"http://8.8.8.8/", B, "allow list"},
        {"http://[2001:db8:1::5]/", OK, "2001:db8:1::5"},
        {"http://[2001:db8:2::5]/", B, "allow list"},
        {"http://[::ffff:1.2.3.4]/", OK, "::ffff:102:304"},
        {"http://[2002:102:304::]/", B, "allow list"},
        {"http://localhost/", B, "allow list"},
        {"about:blank", OK, ""},
        {"file:///x", B, "\"file:\""},
    };
    pol *p = make(0, allow, N(allow), deny, N(deny));
    check_rows(p, rows, N(rows));
    pol_free(p);

    /* With names only, a name not on the list needs no DNS to be refused. */
    static const char *const names[] = {"example.com", "*.example.net"};
    static const struct row name_rows[] = {
        {"http://example.com/", DNS, "example.com"},
        {"http://x.y.example.net/", DNS, "x.y.example.net"},
        {"http://example.net/", B, "example.net is not on the tenant's allow list"},
        {"http://www.example.com/", B, "allow list"},
        {"http://8.8.8.8/", B, "allow list"},
        {"http://localhost/", B, "allow list"},
    };
    p = make(0, names, N(names), NULL, 0);
    check_rows(p, name_rows, N(name_rows));
    pol_free(p);
}

static void test_metadata_needs_an_exact_allow_entry(void **state)
{
    (void)state;
    static const char *const wide[] = {"169.254.0.0/16", "0.0.0.0/0", "::/0", "*.google.internal"};
    static const struct row wide_rows[] = {
        {"http://169.254.169.254/", B, "metadata"},
        {"http://[::ffff:169.254.169.254]/", B, "metadata"},
        {"http://[fd00:ec2::254]/", B, "metadata"},
        {"http://metadata.google.internal/", B, "metadata"},
        {"http://169.254.1.1/", OK, "169.254.1.1"},
        {"http://127.0.0.1/", OK, "127.0.0.1"},
        {"http://[::1]/", OK, "::1"},
        {"http://240.0.0.1/", OK, "240.0.0.1"},
    };
    pol *p = make(1, wide, N(wide), NULL, 0);
    check_rows(p, wide_rows, N(wide_rows));
    pol_free(p);

    static const char *const exact[] = {"169.254.169.254", "metadata.google.internal",
                                        "[fd00:ec2::254]"};
    static const struct row exact_rows[] = {
        {"http://169.254.169.254/", OK, "169.254.169.254"},
        {"http://[::ffff:169.254.169.254]/", OK, "::ffff:a9fe:a9fe"},
        {"http://[fd00:ec2::254]/", OK, "fd00:ec2::254"},
        {"http://metadata.google.internal/", DNS, "metadata.google.internal"},
        {"http://100.100.100.200/", B, "metadata"},
    };
    p = make(0, exact, N(exact), NULL, 0);
    check_rows(p, exact_rows, N(exact_rows));
    pol_free(p);
}

/* localhost means 127.0.0.1 and ::1 to Chromium: both must be allowed. */
static void test_localhost_needs_both_loopbacks(void **state)
{
    (void)state;
    static const char *const v4[] = {"127.0.0.0/8"};
    static const char *const both[] = {"127.0.0.0/8", "::1"};
    char why[256];
    pol *p = make(0, v4, N(v4), NULL, 0);
    assert_int_equal(pol_check_url(p, "http://localhost/", 17, NULL, why, sizeof why),
                     RG_EBLOCKEDURL);
    assert_non_null(strstr(why, "::1"));
    assert_int_equal(pol_check_url(p, "http://127.0.0.1/", 17, NULL, why, sizeof why), POL_ALLOW);
    pol_free(p);
    p = make(0, both, N(both), NULL, 0);
    assert_int_equal(pol_check_url(p, "http://localhost/", 17, NULL, why, sizeof why), POL_ALLOW);
    pol_free(p);
    /* A name entry alone does not open the loopback class. */
    static const char *const name[] = {"localhost"};
    p = make(0, name, N(name), NULL, 0);
    assert_int_equal(pol_check_url(p, "http://localhost/", 17, NULL, why, sizeof why),
                     RG_EBLOCKEDURL);
    assert_non_null(strstr(why, "loopback"));
    pol_free(p);
}

static void test_pol_new_rejects_bad_entries(void **state)
{
    (void)state;
    static const struct {
        const char *entry;
        const char *word;
    } bad[] = {
        {"", "1 to 255 characters"},
        {"*", "not a host name"},
        {"a.*.com", "not a host name"},
        {"*.", "not a host name"},
        {".", "not a host name"},
        {"*.10.0.0.1", "not a host name"},
        {"foo.123", "not a host name"},
        {"1.2.3.4.5", "not a host name"},
        {"10.0.0.1/33", "prefix length must be 0 to 32"},
        {"::/129", "prefix length must be 0 to 128"},
        {"10.0.0.0/", "prefix length"},
        {"10.0.0.0/-1", "prefix length"},
        {"10.0.0.0/08x", "prefix length"},
        {"10.0.0.1/8", "bits set after the first 8"},
        {"fd00::1/8", "bits set"},
        {"10.0.0/24x/8", "not an IP address"},
        {"[::1", "not an IPv6 address"},
        {"fe80::1::2", "not an IPv6 address"},
        {"exa mple.com", "character other than"},
        {"a%41.com", "character other than"},
        {"\xc3\xa9.com", "character other than"},
    };
    char err[256];
    pol *p = (pol *)&err; /* must be reset to NULL */
    for (size_t i = 0; i < N(bad); i++) {
        const char *const list[] = {"example.com", bad[i].entry};
        err[0] = '\0';
        int rc = pol_new(0, list, 2, NULL, 0, &p, err, sizeof err);
        if (rc != RG_EBADREQ || !strstr(err, bad[i].word) || p)
            fail_msg("entry \"%s\": %d \"%s\", want \"%s\"", bad[i].entry, rc, err, bad[i].word);
        assert_int_equal(pol_new(0, NULL, 0, list, 2, &p, err, sizeof err), RG_EBADREQ);
        assert_non_null(strstr(err, "deny"));
    }
    const char *many[POL_LIST_MAX + 1];
    for (size_t i = 0; i < N(many); i++)
        many[i] = "example.com";
    assert_int_equal(pol_new(0, many, POL_LIST_MAX + 1, NULL, 0, &p, err, sizeof err), RG_EBADREQ);
    assert_non_null(strstr(err, "more than 256"));
    assert_int_equal(pol_new(0, many, POL_LIST_MAX, many, POL_LIST_MAX, &p, err, sizeof err), 0);
    pol_free(p);
    const char *const null_entry[] = {NULL};
    assert_int_equal(pol_new(0, null_entry, 1, NULL, 0, &p, err, sizeof err), RG_EBADREQ);
    char longest[POL_ENTRY_MAX + 2];
    memset(longest, 'a', sizeof longest - 1);
    longest[sizeof longest - 1] = '\0';
    const char *const too_long[] = {longest};
    assert_int_equal(pol_new(0, too_long, 1, NULL, 0, &p, err, sizeof err), RG_EBADREQ);

    static const char *const good[] = {
        "[::1]",      "::1",          "[fd00::]/8",     "fd00::/8",
        "0x7f.1",     "EXAMPLE.COM.", ".example.com",   "*.example.com",
        "10.0.0.0/8", "0.0.0.0/0",    "_dmarc.example", "xn--nxasmq6b.com"};
    assert_int_equal(pol_new(0, good, N(good), good, N(good), &p, err, sizeof err), 0);
    pol_free(p);
    pol_free(NULL);
}

/* ---- entries with a port ---- */

static void test_port_entries_parse(void **state)
{
    (void)state;
    static const struct {
        const char *entry;
        const char *word;
    } bad[] = {
        {"example.com:", "the port must be a number from 1 to 65535"},
        {"example.com:0", "the port must be a number from 1 to 65535"},
        {"example.com:00", "the port must be"},
        {"example.com:65536", "the port must be"},
        {"example.com:99999999999999999999", "the port must be"},
        {"example.com:12ab", "the port must be"},
        {"example.com:-1", "the port must be"},
        {"*.example.com:", "the port must be"},
        {"127.0.0.1:", "the port must be"},
        {"[::1]:", "the port must be"},
        {"[::1]:0", "the port must be"},
        {"[::1]:65536", "the port must be"},
        {"[::1]80", "only \":port\" may follow \"]\""},
        {"[::1]x:80", "only \":port\" may follow"},
        {"[1.2.3.4]:80", "not an IPv6 address"},
        {"[example.com]:80", "not an IPv6 address"},
        {"[::1:80", "not an IPv6 address"},
        {"10.0.0.0/8:80", "\"10.0.0.0/8:80\": a CIDR range takes no port"},
        {"[fd00::]/8:443", "a CIDR range takes no port"},
        {"1:2:3:4:5:6:7:8:80", "[address]:port"},
        {"example.com:80:90", "two or more ':' but is not an IPv6 address"},
        {":80", "not a host name"},
        {"*:443", "not a host name"},
        {"*.:443", "not a host name"},
        {"1.2.3.4.5:80", "not a host name"},
    };
    char err[256];
    pol *p = NULL;
    for (size_t i = 0; i < N(bad); i++) {
        const char *const list[] = {bad[i].entry};
        err[0] = '\0';
        int rc = pol_new(0, list, 1, NULL, 0, &p, err, sizeof err);
        if (rc != RG_EBADREQ || !strstr(err, bad[i].word) || !strstr(err, "allow entry") || p)
            fail_msg("entry \"%s\": %d \"%s\", want \"%s\"", bad[i].entry, rc, err, bad[i].word);
        err[0] = '\0';
        rc = pol_new(0, NULL, 0, list, 1, &p, err, sizeof err);
        if (rc != RG_EBADREQ || !strstr(err, bad[i].word) || !strstr(err, "deny entry") || p)
            fail_msg("deny entry \"%s\": %d \"%s\"", bad[i].entry, rc, err);
    }

    static const char *const good[] = {
        "example.com:8443", "EXAMPLE.COM.:443", "*.example.com:443",
        ".example.com:1",   "127.0.0.1:8080",   "0x7f.1:65535",
        "[::1]:8080",       "[fd00::1]:443",    "[::ffff:1.2.3.4]:80",
        "[FD00::1]",        "::1:80",           "example.com:0080"};
    assert_int_equal(pol_new(0, good, N(good), good, N(good), &p, err, sizeof err), 0);
    pol_free(p);

    /* An unbracketed IPv6 address never has a port: "::1:80" is ::1:80 on every port. */
    static const char *const bare[] = {"::1:80"};
    static const struct row bare_rows[] = {
        {"http://[::1:80]/", OK, "::1:80"},
        {"https://[::1:80]:8443/", OK, "::1:80"},
        {"http://[::1]:80/", B, "::1 is not on the tenant's allow list"},
    };
    p = make(0, bare, N(bare), NULL, 0);
    check_rows(p, bare_rows, N(bare_rows));
    pol_free(p);
}

/*
 * An entry with a port matches only URLs to that port, given or the scheme's
 * default; a non-empty allow list then names a URL only on its port.
 */
static void test_port_entries_match_the_url_port(void **state)
{
    (void)state;
    static const char *const names[] = {"example.com:8443", "*.example.org:443",
                                        "ws.example.net:80"};
    static const struct row name_rows[] = {
        {"https://example.com:8443/", DNS, "example.com"},
        {"http://example.com:8443/", DNS, "example.com"},
        {"https://EXAMPLE.com.:08443/x", DNS, "example.com."},
        {"https://example.com/", B, "example.com:443 is not on the tenant's allow list"},
        {"http://example.com/", B, "example.com:80 is not on the tenant's allow list"},
        {"https://example.com:8444/", B, "example.com:8444 is not"},
        {"https://a.example.org/", DNS, "a.example.org"},
        {"wss://a.b.example.org:443/", DNS, "a.b.example.org"},
        {"http://a.example.org/", B, "a.example.org:80 is not"},
        {"http://a.example.org:443/", DNS, "a.example.org"},
        {"https://a.example.org:8443/", B, "allow list"},
        {"https://example.org/", B, "example.org:443 is not"},
        {"ws://ws.example.net/", DNS, "ws.example.net"},
        {"http://ws.example.net/", DNS, "ws.example.net"},
        {"wss://ws.example.net/", B, "ws.example.net:443 is not"},
        {"http://1.2.3.4:8443/", B, "1.2.3.4:8443 is not on the tenant's allow list"},
        {"https://localhost:8443/", B, "localhost:8443 is not on the tenant's allow list"},
    };
    pol *p = make(0, names, N(names), NULL, 0);
    check_rows(p, name_rows, N(name_rows));
    pol_free(p);

    static const char *const addrs[] = {"1.2.3.4:8080", "[2606:4700::1111]:443", "8.8.8.8",
                                        "2001:4860::/32"};
    static const struct row addr_rows[] = {
        {"http://1.2.3.4:8080/", OK, "1.2.3.4"},
        {"https://1.2.3.4:8080/", OK, "1.2.3.4"},
        {"http://0x01020304:8080/", OK, "1.2.3.4"},
        {"http://[::ffff:1.2.3.4]:8080/", OK, "::ffff:102:304"},
        {"http://1.2.3.4/", B, "1.2.3.4:80 is not on the tenant's allow list"},
        {"https://1.2.3.4/", B, "1.2.3.4:443 is not"},
        {"http://[::ffff:1.2.3.4]/", B, "[::ffff:102:304]:80 is not"},
        {"https://[2606:4700::1111]/", OK, "2606:4700::1111"},
        {"http://[2606:4700::1111]:443/", OK, "2606:4700::1111"},
        {"http://[2606:4700::1111]/", B, "[2606:4700::1111]:80 is not on the tenant's allow list"},
        {"http://8.8.8.8/", OK, "8.8.8.8"},
        {"http://8.8.8.8:12345/", OK, "8.8.8.8"},
        {"http://[2001:4860::8888]:1/", OK, "2001:4860::8888"},
        {"http://example.com/", DNS, "example.com"}, /* may resolve to 8.8.8.8 */
    };
    p = make(0, addrs, N(addrs), NULL, 0);
    check_rows(p, addr_rows, N(addr_rows));
    pol_free(p);

    /* No address entry applies to port 80: a name not named on it needs no DNS. */
    static const char *const one[] = {"1.2.3.4:8080", "example.com:8443"};
    static const struct row one_rows[] = {
        {"http://example.net/", B, "example.net:80 is not on the tenant's allow list"},
        {"http://example.com/", B, "example.com:80 is not"},
        {"http://example.net:8080/", DNS, "example.net"},
        {"http://example.com:8443/", DNS, "example.com"},
    };
    p = make(0, one, N(one), NULL, 0);
    check_rows(p, one_rows, N(one_rows));
    pol_free(p);
}

/* A deny entry with a port refuses that port only. */
static void test_deny_with_port(void **state)
{
    (void)state;
    static const char *const deny[] = {"evil.com:8080", "*.bad.example:443", "8.8.8.8:53",
                                       "[2606:4700::1111]:443", "0x7f.1:6390"};
    static const struct row rows[] = {
        {"http://evil.com:8080/", B, "evil.com is on the tenant's deny list (\"evil.com:8080\")"},
        {"https://EVIL.com.:8080/", B, "deny list"},
        {"http://evil.com/", DNS, "evil.com"},
        {"https://evil.com/", DNS, "evil.com"},
        {"https://a.bad.example/", B, "deny list (\"*.bad.example:443\")"},
        {"http://a.b.bad.example:443/", B, "deny list"},
        {"http://a.bad.example/", DNS, "a.bad.example"},
        {"https://a.bad.example:8443/", DNS, "a.bad.example"},
        {"http://8.8.8.8:53/", B, "8.8.8.8 is on the tenant's deny list (\"8.8.8.8:53\")"},
        {"http://134744072:53/", B, "deny list"},
        {"http://[::ffff:8.8.8.8]:53/", B, "deny list"},
        {"http://[64:ff9b::808:808]:53/", B, "deny list"},
        {"http://8.8.8.8/", OK, "8.8.8.8"},
        {"http://[::ffff:8.8.8.8]/", OK, "::ffff:808:808"},
        {"https://[2606:4700::1111]/", B, "deny list (\"[2606:4700::1111]:443\")"},
        {"http://[2606:4700::1111]/", OK, "2606:4700::1111"},
        {"http://127.0.0.1:6390/", B, "127.0.0.1 is on the tenant's deny list (\"0x7f.1:6390\")"},
        {"http://localhost:6390/", B, "localhost resolves to 127.0.0.1, which is on the tenant's"},
        {"http://127.0.0.1:6391/", OK, "127.0.0.1"},
        {"http://localhost:6391/", OK, "localhost"},
    };
    pol *p = make(1, NULL, 0, deny, N(deny));
    check_rows(p, rows, N(rows));
    pol_free(p);
}

/* An exact allow entry with a port opens a metadata address on that port only. */
static void test_metadata_with_port(void **state)
{
    (void)state;
    static const char *const allow[] = {"169.254.169.254:80", "metadata.google.internal:80",
                                        "[fd00:ec2::254]:8080", "169.254.0.0/16"};
    static const struct row rows[] = {
        {"http://169.254.169.254/", OK, "169.254.169.254"},
        {"http://169.254.169.254:80/", OK, "169.254.169.254"},
        {"http://0xa9fea9fe/", OK, "169.254.169.254"},
        {"http://[::ffff:169.254.169.254]/", OK, "::ffff:a9fe:a9fe"},
        {"https://169.254.169.254/", B, "169.254.169.254 is a cloud metadata address"},
        {"http://169.254.169.254:8080/", B, "cloud metadata"},
        {"http://[::ffff:a9fe:a9fe]:81/", B, "cloud metadata"},
        {"http://metadata.google.internal/", DNS, "metadata.google.internal"},
        {"https://metadata.google.internal/", B, "metadata.google.internal is a cloud metadata"},
        {"http://metadata.google.internal:8080/", B, "cloud metadata host name"},
        {"http://[fd00:ec2::254]:8080/", OK, "fd00:ec2::254"},
        {"http://[fd00:ec2::254]/", B, "fd00:ec2::254 is a cloud metadata address"},
        {"http://169.254.1.1:81/", OK, "169.254.1.1"},
        {"http://169.254.170.2/", B, "cloud metadata"},
    };
    pol *p = make(0, allow, N(allow), NULL, 0);
    check_rows(p, rows, N(rows));
    pol_free(p);
}

/*
 * The development tenant: exactly one local service. The same destination in
 * any spelling passes; another port, ::1, or a name meaning ::1 too does not.
 */
static void test_one_local_service(void **state)
{
    (void)state;
    static const char *const allow[] = {"127.0.0.1:8080"};
    static const struct row rows[] = {
        {"http://127.0.0.1:8080/", OK, "127.0.0.1"},
        {"http://127.1:8080/", OK, "127.0.0.1"},
        {"http://0x7f000001:8080/", OK, "127.0.0.1"},
        {"http://2130706433:8080/api", OK, "127.0.0.1"},
        {"ws://127.0.0.1:8080/socket", OK, "127.0.0.1"},
        {"https://127.0.0.1:8080/", OK, "127.0.0.1"},
        {"http://[::ffff:127.0.0.1]:8080/", OK, "::ffff:7f00:1"},
        {"http://127.0.0.1:6390/", B, "127.0.0.1:6390 is not on the tenant's allow list"},
        {"http://127.1:6390/", B, "127.0.0.1:6390 is not on the tenant's allow list"},
        {"http://0x7f000001:6390/", B, "127.0.0.1:6390 is not on the tenant's allow list"},
        {"http://127.0.0.1/", B, "127.0.0.1:80 is not"},
        {"https://127.0.0.1/", B, "127.0.0.1:443 is not"},
        {"http://127.0.0.2:8080/", B, "127.0.0.2:8080 is not"},
        {"http://[::1]:8080/", B, "[::1]:8080 is not on the tenant's allow list"},
        {"http://[::127.0.0.1]:8080/", B, "allow list"},
        {"http://localhost:8080/", B,
         "localhost:8080 is not on the tenant's allow list, nor is "
         "its address ::1"},
        {"http://localhost:6390/", B, "localhost:6390 is not"},
        {"http://10.0.0.1:8080/", B, "10.0.0.1:8080 is not"},
        {"http://example.com/", B, "example.com:80 is not on the tenant's allow list"},
        {"http://example.com:8080/", DNS, "example.com"},
    };
    pol *p = make(0, allow, N(allow), NULL, 0);
    check_rows(p, rows, N(rows));
    pol_free(p);

    /* A name entry for localhost does not open ::1: it needs its own entry. */
    char why[256];
    static const char *const named[] = {"127.0.0.1:8080", "localhost:8080"};
    p = make(0, named, N(named), NULL, 0);
    assert_int_equal(pol_check_url(p, "http://localhost:8080/", 22, NULL, why, sizeof why),
                     RG_EBLOCKEDURL);
    assert_string_equal(why, "localhost resolves to ::1, a loopback address");
    pol_free(p);
    static const char *const both[] = {"127.0.0.1:8080", "[::1]:8080"};
    static const struct row both_rows[] = {
        {"http://localhost:8080/", OK, "localhost"},
        {"http://[::1]:8080/", OK, "::1"},
        {"http://localhost:6390/", B, "localhost:6390 is not on the tenant's allow list"},
        {"http://[::1]:6390/", B, "[::1]:6390 is not"},
    };
    p = make(0, both, N(both), NULL, 0);
    check_rows(p, both_rows, N(both_rows));
    pol_free(p);
}

/* ---- classes ---- */

static const char *class_of(const char *text)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    if (strchr(text, ':')) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        assert_int_equal(inet_pton(AF_INET6, text, &a->sin6_addr), 1);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        assert_int_equal(inet_pton(AF_INET, text, &a->sin_addr), 1);
    }
    return pol_addr_class((const struct sockaddr *)&ss);
}

static void test_addr_class(void **state)
{
    (void)state;
    static const struct {
        const char *addr, *cls;
    } rows[] = {
        {"8.8.8.8", "public"},
        {"127.0.0.1", "loopback"},
        {"10.1.2.3", "private"},
        {"172.16.0.1", "private"},
        {"192.168.0.1", "private"},
        {"169.254.0.1", "link-local"},
        {"100.64.0.1", "cgnat"},
        {"224.0.0.251", "multicast"},
        {"0.0.0.0", "unspecified"},
        {"0.0.0.1", "this-network"},
        {"255.255.255.255", "broadcast"},
        {"169.254.169.254", "metadata"},
        {"169.254.170.2", "metadata"},
        {"100.100.100.200", "metadata"},
        {"168.63.129.16", "metadata"},
        {"198.18.5.5", "benchmarking"},
        {"203.0.113.1", "documentation"},
        {"240.1.2.3", "reserved"},
        {"192.0.0.8", "reserved"},
        {"2001:4860::1", "public"},
        {"::1", "loopback"},
        {"::", "unspecified"},
        {"fd00::1", "private"},
        {"fe80::1", "link-local"},
        {"ff05::2", "multicast"},
        {"fd00:ec2::254", "metadata"},
        {"fd00:ec2::23", "metadata"},
        {"::ffff:169.254.169.254", "metadata"},
        {"::ffff:10.0.0.1", "private"},
        {"::ffff:8.8.8.8", "public"},
        {"64:ff9b::a9fe:a9fe", "metadata"},
        {"64:ff9b::808:808", "public"},
        {"2002:a00:1::", "private"},
        {"2002:808:808::", "public"},
        {"2001:db8::1", "documentation"},
        {"3fff::1", "documentation"},
        {"2001:2::1", "benchmarking"},
        {"2001:10::1", "reserved"},
        {"100::1", "reserved"},
        {"8000::1", "reserved"},
    };
    for (size_t i = 0; i < N(rows); i++)
        if (strcmp(class_of(rows[i].addr), rows[i].cls))
            fail_msg("%s: %s, want %s", rows[i].addr, class_of(rows[i].addr), rows[i].cls);
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    assert_string_equal(pol_addr_class((const struct sockaddr *)&un), "unknown");
    assert_string_equal(pol_addr_class(NULL), "unknown");
}

/* ---- DNS through the system resolver (no network needed) ---- */

static void test_resolve_localhost_with_getaddrinfo(void **state)
{
    (void)state;
    pol *p = make(0, NULL, 0, NULL, 0);
    pol_addrs a;
    char why[256] = "";
    assert_int_equal(pol_resolve(p, "localhost", 5000, &a, why, sizeof why), 0);
    assert_true(a.n >= 1);
    for (size_t i = 0; i < a.n; i++)
        assert_string_equal(pol_addr_class((const struct sockaddr *)&a.addr[i]), "loopback");

    pol_url u;
    assert_int_equal(pol_check_url(p, "http://localhost/", 17, &u, why, sizeof why),
                     RG_EBLOCKEDURL);
    assert_int_equal(pol_check_resolved(p, &u, 5000, why, sizeof why), RG_EBLOCKEDURL);
    assert_non_null(strstr(why, "loopback"));

    /* Names glibc reads as numbers: resolved, then refused by address. */
    static const char *const numeric[] = {"0x7f.1", "2130706433", "127.0.0.1"};
    for (size_t i = 0; i < N(numeric); i++) {
        memset(&u, 0, sizeof u);
        strcpy(u.scheme, "http");
        strcpy(u.host, numeric[i]);
        u.port = 80;
        assert_int_equal(pol_check_resolved(p, &u, 5000, why, sizeof why), RG_EBLOCKEDURL);
        assert_non_null(strstr(why, "resolves to 127.0.0.1, a loopback address"));
    }
    /* An IP host and a refused scheme need no lookup. */
    assert_int_equal(pol_check_url(p, "http://8.8.8.8/", 15, &u, why, sizeof why), POL_ALLOW);
    assert_int_equal(pol_check_resolved(p, &u, 5000, why, sizeof why), POL_ALLOW);
    assert_int_equal(pol_check_url(p, "file:///x", 9, &u, why, sizeof why), RG_EBLOCKEDURL);
    assert_int_equal(pol_check_resolved(p, &u, 5000, why, sizeof why), RG_EBLOCKEDURL);
    assert_int_equal(pol_dns_inflight(p), 0);
    pol_free(p);
}

/* ---- DNS through a fake lookup ---- */

struct fake {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int hold; /* lookups wait while set */
    int calls, returned;
    int rc;
    const char *addrs[4];
    char host[POL_HOST_SIZE];
};

static struct fake fake = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void fake_reset(int rc, const char *a0, const char *a1)
{
    pthread_mutex_lock(&fake.mu);
    fake.hold = 0;
    fake.calls = fake.returned = 0;
    fake.rc = rc;
    memset(fake.addrs, 0, sizeof fake.addrs);
    fake.addrs[0] = a0;
    fake.addrs[1] = a1;
    fake.host[0] = '\0';
    pthread_mutex_unlock(&fake.mu);
}

static void fake_add(pol_addrs *out, const char *text)
{
    struct sockaddr_storage *ss = &out->addr[out->n++];
    memset(ss, 0, sizeof *ss);
    if (strchr(text, ':')) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        inet_pton(AF_INET6, text, &a->sin6_addr);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)ss;
        a->sin_family = AF_INET;
        inet_pton(AF_INET, text, &a->sin_addr);
    }
}

static int fake_lookup(void *arg, const char *host, pol_addrs *out, char *why, size_t whylen)
{
    struct fake *f = arg;
    pthread_mutex_lock(&f->mu);
    f->calls++;
    rg_strlcpy(f->host, host, sizeof f->host);
    pthread_cond_broadcast(&f->cv);
    while (f->hold)
        pthread_cond_wait(&f->cv, &f->mu);
    out->n = 0;
    for (size_t i = 0; i < N(f->addrs) && f->addrs[i]; i++)
        fake_add(out, f->addrs[i]);
    int rc = f->rc;
    if (rc < 0)
        snprintf(why, whylen, "%s does not resolve (fake)", host);
    f->returned++;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    return rc;
}

static void fake_hold(void)
{
    pthread_mutex_lock(&fake.mu);
    fake.hold = 1;
    pthread_mutex_unlock(&fake.mu);
}

static void fake_release(void)
{
    pthread_mutex_lock(&fake.mu);
    fake.hold = 0;
    pthread_cond_broadcast(&fake.cv);
    pthread_mutex_unlock(&fake.mu);
}

/* Waits until every lookup thread of p has let go of it. */
static void wait_idle(const pol *p)
{
    for (int i = 0; i < 5000 && pol_dns_inflight(p) > 0; i++)
        rg_sleep_ms(1);
    assert_int_equal(pol_dns_inflight(p), 0);
}

static pol *make_fake(int allow_private, const char *const *allow, size_t n_allow,
                      const char *const *deny, size_t n_deny)
{
    pol *p = make(allow_private, allow, n_allow, deny, n_deny);
    pol_set_lookup(p, fake_lookup, &fake);
    return p;
}

/* pol_check_url then pol_check_resolved, as the gateway calls them. */
static int decide(const pol *p, const char *url, char *why, size_t whylen)
{
    pol_url u;
    int rc = pol_check_url(p, url, strlen(url), &u, why, whylen);
    return rc == POL_RESOLVE ? pol_check_resolved(p, &u, 2000, why, whylen) : rc;
}

static void test_resolved_any_refused_address_refuses(void **state)
{
    (void)state;
    char why[256];
    pol *p = make_fake(0, NULL, 0, NULL, 0);

    fake_reset(0, "93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946");
    assert_int_equal(decide(p, "https://Example.COM./", why, sizeof why), POL_ALLOW);
    assert_string_equal(fake.host, "example.com.");

    fake_reset(0, "93.184.216.34", "10.0.0.1");
    assert_int_equal(decide(p, "https://rebind.example/", why, sizeof why), RG_EBLOCKEDURL);
    assert_string_equal(why, "rebind.example resolves to 10.0.0.1, a private address");

    fake_reset(0, "::ffff:127.0.0.1", NULL);
    assert_int_equal(decide(p, "https://mapped.example/", why, sizeof why), RG_EBLOCKEDURL);
    assert_non_null(strstr(why, "embeds 127.0.0.1, a loopback address"));

    fake_reset(RG_ENAVFAILED, NULL, NULL);
    assert_int_equal(decide(p, "https://nx.example/", why, sizeof why), RG_ENAVFAILED);
    assert_non_null(strstr(why, "nx.example does not resolve"));

    fake_reset(0, NULL, NULL);
    assert_int_equal(decide(p, "https://empty.example/", why, sizeof why), RG_ENAVFAILED);
    assert_non_null(strstr(why, "no addresses"));
    pol_free(p);

    /* allow_private opens the private answer, never a metadata one. */
    p = make_fake(1, NULL, 0, NULL, 0);
    fake_reset(0, "93.184.216.34", "10.0.0.1");
    assert_int_equal(decide(p, "https://rebind.example/", why, sizeof why), POL_ALLOW);
    fake_reset(0, "8.8.8.8", "fd00:ec2::254");
    assert_int_equal(decide(p, "https://meta.example/", why, sizeof why), RG_EBLOCKEDURL);
    assert_non_null(strstr(why, "fd00:ec2::254, a cloud metadata address"));
    wait_idle(p);
    pol_free(p);
}

/* The egress proxy's question: the addresses checked are the ones handed back. */
static void test_check_connect(void **state)
{
    (void)state;
    char why[256], text[64];
    pol_addrs a;
    const char *one[] = {"127.0.0.1:8080"};
    pol *p = make_fake(0, one, 1, NULL, 0);
    /* IP hosts in any spelling: that address, no lookup. */
    fake_reset(0, "127.0.0.1", NULL);
    assert_int_equal(pol_check_connect(p, "127.1", 8080, 2000, &a, why, sizeof why), POL_ALLOW);
    assert_int_equal(a.n, 1);
    inet_ntop(AF_INET, &((struct sockaddr_in *)&a.addr[0])->sin_addr, text, sizeof text);
    assert_string_equal(text, "127.0.0.1");
    assert_int_equal(pol_check_connect(p, "0x7f000001", 8080, 2000, &a, why, sizeof why),
                     POL_ALLOW);
    assert_int_equal(pol_check_connect(p, "::ffff:127.0.0.1", 8080, 2000, &a, why, sizeof why),
                     POL_ALLOW);
    assert_int_equal(a.addr[0].ss_family, AF_INET6);
    assert_int_equal(pol_check_connect(p, "[::ffff:7f00:1]", 8080, 2000, &a, why, sizeof why),
                     POL_ALLOW);
    assert_int_equal(fake.calls, 0);
    /* The port is the one asked for, so the decoy beside the service is refused. */
    assert_int_equal(pol_check_connect(p, "127.0.0.1", 6390, 2000, &a, why, sizeof why),
                     RG_EBLOCKEDURL);
    assert_int_equal(a.n, 0);
    /* localhost is looked up (its answer is what gets connected to), and
       refused since ::1:8080 is not on the list. */
    fake_reset(0, "127.0.0.1", NULL);
    assert_int_equal(pol_check_connect(p, "localhost", 8080, 2000, &a, why, sizeof why),
                     RG_EBLOCKEDURL);
    pol_free(p);

    p = make_fake(1, NULL, 0, NULL, 0);
    fake_reset(0, "127.0.0.1", NULL);
    assert_int_equal(pol_check_connect(p, "localhost", 8080, 2000, &a, why, sizeof why),
                     POL_ALLOW);
    assert_int_equal(fake.calls, 1);
    assert_int_equal(a.n, 1);
    /* A name: every answer checked and handed back in order; one bad
       answer refuses the whole name and hands back nothing. */
    fake_reset(0, "93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946");
    assert_int_equal(pol_check_connect(p, "example.com", 443, 2000, &a, why, sizeof why),
                     POL_ALLOW);
    assert_int_equal(a.n, 2);
    assert_int_equal(a.addr[0].ss_family, AF_INET);
    assert_int_equal(a.addr[1].ss_family, AF_INET6);
    fake_reset(0, "93.184.216.34", "169.254.169.254");
    assert_int_equal(pol_check_connect(p, "rebind.example", 80, 2000, &a, why, sizeof why),
                     RG_EBLOCKEDURL);
    assert_int_equal(a.n, 0);
    fake_reset(RG_ENAVFAILED, NULL, NULL);
    assert_int_equal(pol_check_connect(p, "nx.example", 80, 2000, &a, why, sizeof why),
                     RG_ENAVFAILED);
    /* Metadata names are refused before any lookup; malformed hosts and ports are bad. */
    fake_reset(0, "8.8.8.8", NULL);
    assert_int_equal(
        pol_check_connect(p, "metadata.google.internal", 80, 2000, &a, why, sizeof why),
        RG_EBLOCKEDURL);
    assert_int_equal(fake.calls, 0);
    const char *bad[] = {"a/b", "evil.example@8.8.8.8", "a b", "x?y", "x#y", "", "1.2.3.4.5"};
    for (size_t i = 0; i < N(bad); i++)
        assert_int_equal(pol_check_connect(p, bad[i], 80, 2000, &a, why, sizeof why),
                         RG_EBADREQ);
    assert_int_equal(pol_check_connect(p, "example.com", 0, 2000, &a, why, sizeof why),
                     RG_EBADREQ);
    assert_int_equal(pol_check_connect(p, "example.com", 65536, 2000, &a, why, sizeof why),
                     RG_EBADREQ);
    assert_int_equal(fake.calls, 0);
    wait_idle(p);
    pol_free(p);
}

static void test_resolved_lists(void **state)
{
    (void)state;
    char why[256];
    /* An allowed name's addresses are still checked... */
    static const char *const name[] = {"intranet.example"};
    pol *p = make_fake(0, name, N(name), NULL, 0);
    fake_reset(0, "10.0.0.5", NULL);
    assert_int_equal(decide(p, "http://intranet.example/", why, sizeof why), RG_EBLOCKEDURL);
    assert_non_null(strstr(why, "10.0.0.5, a private address"));
    fake_reset(0, "93.184.216.34", NULL);
    assert_int_equal(decide(p, "http://intranet.example/", why, sizeof why), POL_ALLOW);
    assert_int_equal(fake.calls, 1);
    pol_free(p);
    /* ...and opened by allow_private or by a CIDR entry. */
    p = make_fake(1, name, N(name), NULL, 0);
    fake_reset(0, "10.0.0.5", NULL);
    assert_int_equal(decide(p, "http://intranet.example/", why, sizeof why), POL_ALLOW);
    pol_free(p);
    static const char *const name_net[] = {"intranet.example", "10.0.0.0/8"};
    p = make_fake(0, name_net, N(name_net), NULL, 0);
    fake_reset(0, "10.0.0.5", NULL);
    assert_int_equal(decide(p, "http://intranet.example/", why, sizeof why), POL_ALLOW);
    /* A name that is not listed passes only with every address in a CIDR. */
    fake_reset(0, "10.9.9.9", "10.0.0.1");
    assert_int_equal(decide(p, "http://other.example/", why, sizeof why), POL_ALLOW);
    fake_reset(0, "10.9.9.9", "8.8.8.8");
    assert_int_equal(decide(p, "http://other.example/", why, sizeof why), RG_EBLOCKEDURL);
    assert_string_equal(why, "other.example is not on the tenant's allow list, nor is its address "
                             "8.8.8.8");
    pol_free(p);
    /* Deny entries apply to resolved addresses. */
    static const char *const deny[] = {"93.184.216.0/24"};
    p = make_fake(0, NULL, 0, deny, N(deny));
    fake_reset(0, "93.184.216.34", NULL);
    assert_int_equal(decide(p, "http://example.com/", why, sizeof why), RG_EBLOCKEDURL);
    assert_non_null(strstr(why, "which is on the tenant's deny list (\"93.184.216.0/24\")"));
    wait_idle(p);
    pol_free(p);
}

/* For a name, its port decides the name entries and the addresses' entries alike. */
static void test_resolved_with_port_entries(void **state)
{
    (void)state;
    char why[256];
    /* An allowed name on its port, with its address allowed on that port. */
    static const char *const svc[] = {"intranet.example:8443", "10.0.0.5:8443"};
    pol *p = make_fake(0, svc, N(svc), NULL, 0);
    fake_reset(0, "10.0.0.5", NULL);
    assert_int_equal(decide(p, "https://intranet.example:8443/", why, sizeof why), POL_ALLOW);
    assert_int_equal(fake.calls, 1);
    fake_reset(0, "10.0.0.5", NULL);
    assert_int_equal(decide(p, "https://intranet.example/", why, sizeof why), RG_EBLOCKEDURL);
    assert_string_equal(why, "intranet.example:443 is not on the tenant's allow list");
    assert_int_equal(fake.calls, 0);
    fake_reset(0, "10.0.0.5", "10.0.0.6");
    assert_int_equal(decide(p, "https://intranet.example:8443/", why, sizeof why), RG_EBLOCKEDURL);
    assert_string_equal(why, "intranet.example resolves to 10.0.0.6, a private address");
    pol_free(p);

    /* A name allowed on every port: its address is allowed on 8443 only. */
    static const char *const any_port[] = {"intranet.example", "10.0.0.5:8443"};
    p = make_fake(0, any_port, N(any_port), NULL, 0);
    fake_reset(0, "10.0.0.5", NULL);
    assert_int_equal(decide(p, "http://intranet.example:8443/", why, sizeof why), POL_ALLOW);
    assert_int_equal(decide(p, "http://intranet.example/", why, sizeof why), RG_EBLOCKEDURL);
    assert_string_equal(why, "intranet.example resolves to 10.0.0.5, a private address");
    pol_free(p);

    /* A name not listed passes only with every address allowed on its port. */
    static const char *const nets[] = {"10.0.0.5:8443", "10.0.0.6:8443"};
    p = make_fake(0, nets, N(nets), NULL, 0);
    fake_reset(0, "10.0.0.5", "10.0.0.6");
    assert_int_equal(decide(p, "http://other.example:8443/", why, sizeof why), POL_ALLOW);
    fake_reset(0, "10.0.0.5", "10.0.0.7");
    assert_int_equal(decide(p, "http://other.example:8443/", why, sizeof why), RG_EBLOCKEDURL);
    assert_string_equal(why, "other.example:8443 is not on the tenant's allow list, nor is its "
                             "address 10.0.0.7");
    fake_reset(0, "10.0.0.5", "10.0.0.6");
    assert_int_equal(decide(p, "https://other.example/", why, sizeof why), RG_EBLOCKEDURL);
    assert_int_equal(fake.calls, 0);
    pol_free(p);

    /* The development tenant, through a name: ::1 needs its own entry. */
    static const char *const dev[] = {"dev.example:8080", "127.0.0.1:8080"};
    p = make_fake(0, dev, N(dev), NULL, 0);
    fake_reset(0, "127.0.0.1", NULL);
    assert_int_equal(decide(p, "http://dev.example:8080/", why, sizeof why), POL_ALLOW);
    assert_int_equal(decide(p, "http://dev.example:6390/", why, sizeof why), RG_EBLOCKEDURL);
    assert_string_equal(why, "dev.example:6390 is not on the tenant's allow list");
    fake_reset(0, "127.0.0.1", "::1");
    assert_int_equal(decide(p, "http://dev.example:8080/", why, sizeof why), RG_EBLOCKEDURL);
    assert_string_equal(why, "dev.example resolves to ::1, a loopback address");
    pol_free(p);

    /* A deny entry with a port refuses the resolved address on that port only. */
    static const char *const deny[] = {"93.184.216.34:443"};
    p = make_fake(0, NULL, 0, deny, N(deny));
    fake_reset(0, "93.184.216.34", NULL);
    assert_int_equal(decide(p, "https://example.com/", why, sizeof why), RG_EBLOCKEDURL);
    assert_string_equal(why, "example.com resolves to 93.184.216.34, which is on the tenant's "
                             "deny list (\"93.184.216.34:443\")");
    assert_int_equal(decide(p, "http://example.com/", why, sizeof why), POL_ALLOW);
    wait_idle(p);
    pol_free(p);
}

static void test_resolve_timeout_and_cap(void **state)
{
    (void)state;
    char why[256];
    pol *p = make_fake(0, NULL, 0, NULL, 0);
    fake_reset(0, "93.184.216.34", NULL);
    fake_hold();
    pol_url u;
    assert_int_equal(pol_check_url(p, "https://slow.example/", 21, &u, why, sizeof why),
                     POL_RESOLVE);
    assert_int_equal(pol_check_resolved(p, &u, 20, why, sizeof why), RG_EBLOCKEDURL);
    assert_non_null(strstr(why, "DNS lookup timed out"));
    assert_true(pol_dns_inflight(p) >= 1);

    /* The lookups that timed out still run: the cap counts them. */
    while (pol_dns_inflight(p) < POL_DNS_MAX_INFLIGHT)
        assert_int_equal(pol_check_resolved(p, &u, 1, why, sizeof why), RG_EBLOCKEDURL);
    assert_int_equal(pol_check_resolved(p, &u, 1000, why, sizeof why), RG_EBUSY);
    assert_non_null(strstr(why, "too many DNS lookups"));
    fake_release();
    wait_idle(p);
    assert_int_equal(fake.returned, POL_DNS_MAX_INFLIGHT);
    assert_int_equal(pol_check_resolved(p, &u, 2000, why, sizeof why), POL_ALLOW);
    pol_free(p);
}

/* A pol may be freed while a lookup that timed out still runs. */
static void test_free_with_lookup_in_flight(void **state)
{
    (void)state;
    char why[256];
    pol *p = make_fake(0, NULL, 0, NULL, 0);
    fake_reset(0, "93.184.216.34", NULL);
    fake_hold();
    pol_addrs a;
    assert_int_equal(pol_resolve(p, "slow.example", 10, &a, why, sizeof why), RG_ETIMEOUT);
    assert_string_equal(why, "DNS lookup timed out (slow.example, 10 ms)");
    pol_free(p);
    fake_release();
    pthread_mutex_lock(&fake.mu);
    while (fake.returned < 1)
        pthread_cond_wait(&fake.cv, &fake.mu);
    pthread_mutex_unlock(&fake.mu);
    rg_sleep_ms(20); /* lets the thread drop its references; ASan checks the rest */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_refuses_loopback_in_every_spelling),
        cmocka_unit_test(test_default_classes),
        cmocka_unit_test(test_default_schemes_and_names),
        cmocka_unit_test(test_invalid_urls_are_bad_requests),
        cmocka_unit_test(test_parse_fills_scheme_host_port),
        cmocka_unit_test(test_parse_bounds),
        cmocka_unit_test(test_allow_private_opens_all_but_metadata),
        cmocka_unit_test(test_deny_list),
        cmocka_unit_test(test_allow_list_means_only_these),
        cmocka_unit_test(test_metadata_needs_an_exact_allow_entry),
        cmocka_unit_test(test_localhost_needs_both_loopbacks),
        cmocka_unit_test(test_pol_new_rejects_bad_entries),
        cmocka_unit_test(test_port_entries_parse),
        cmocka_unit_test(test_port_entries_match_the_url_port),
        cmocka_unit_test(test_deny_with_port),
        cmocka_unit_test(test_metadata_with_port),
        cmocka_unit_test(test_one_local_service),
        cmocka_unit_test(test_addr_class),
        cmocka_unit_test(test_resolve_localhost_with_getaddrinfo),
        cmocka_unit_test(test_resolved_any_refused_address_refuses),
        cmocka_unit_test(test_check_connect),
        cmocka_unit_test(test_resolved_lists),
        cmocka_unit_test(test_resolved_with_port_entries),
        cmocka_unit_test(test_resolve_timeout_and_cap),
        cmocka_unit_test(test_free_with_lookup_in_flight),
    };
    return cmocka_run_group_tests_name("policy", tests, NULL, NULL);
}
