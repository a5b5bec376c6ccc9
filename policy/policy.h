/*
 * policy.h - the URL policy: which URLs a tenant's browser may load (SSRF
 * protection). This module decides; the gateway enforces (DevTools Fetch
 * interception on navigations and on every request a page makes, and the
 * egress proxy on every connection: pol_check_connect).
 *
 * What is refused by default (RG_EBLOCKEDURL with a sentence in `why`):
 *
 *   - every scheme but http:, https:, ws: and wss: (ws is checked as http,
 *     wss as https). about:blank is always allowed (its query and fragment
 *     are ignored, as WHATWG "matches about:blank" does); every other about:
 *     URL, and file:, data:, blob:, javascript:, chrome:, ftp:, ... are not.
 *   - every address that is not "public" (pol_addr_class):
 *       loopback      127.0.0.0/8, ::1, and the names localhost, *.localhost,
 *                     localhost.localdomain, localhost6(.localdomain6), which
 *                     Chromium maps to loopback without asking DNS
 *       private       10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10,
 *                     64:ff9b:1::/48 (local-use NAT64)
 *       link-local    169.254.0.0/16, fe80::/10
 *       cgnat         100.64.0.0/10
 *       multicast     224.0.0.0/4, ff00::/8
 *       unspecified   0.0.0.0, ::   (Linux connects 0.0.0.0 to the local host)
 *       this-network  the rest of 0.0.0.0/8
 *       broadcast     255.255.255.255
 *       metadata      169.254.169.254, 169.254.170.2, 169.254.170.23,
 *                     169.254.0.23, 100.100.100.200, 168.63.129.16,
 *                     fd00:ec2::254, fd00:ec2::23; the names metadata,
 *                     metadata.google.internal, metadata.goog,
 *                     metadata.tencentyun.com, instance-data,
 *                     instance-data.ec2.internal
 *       benchmarking  198.18.0.0/15, 2001:2::/48
 *       documentation 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32,
 *                     3fff::/20. Refused although the internet does not route
 *                     them: a provider's internal network may.
 *       reserved      240.0.0.0/4, 192.0.0.0/24, 192.88.99.0/24, 100::/64,
 *                     2001::/23 but Teredo, and all IPv6 outside 2000::/3
 *     An IPv6 address that embeds an IPv4 address (mapped ::ffff:0:0/96,
 *     compatible ::/96, translated ::ffff:0:0:0/96, NAT64 64:ff9b::/96, 6to4
 *     2002::/16, Teredo 2001::/32 server and client) takes the class of the
 *     IPv4 address when that class is not public.
 *
 * Parsing follows the WHATWG URL standard for special schemes, which is what
 * Chromium implements: leading and trailing C0 controls and spaces are
 * trimmed and tabs and newlines removed anywhere; the scheme is
 * case-insensitive; any run of / and \ follows "scheme:"; the authority ends
 * at / \ ? # and its last @ ends the userinfo; the host is percent-decoded and
 * lowercased; a host that ends in a number is an IPv4 address in any of its
 * spellings (1 to 4 parts, decimal, 0x hex or 0 octal, the last part filling
 * the remaining bytes, one trailing dot) and the URL is invalid when it does
 * not parse; [..] is an IPv6 address (with an embedded dotted quad allowed;
 * zone ids are not, so [fe80::1%25eth0] is invalid, as in Chromium). A URL
 * that is not valid is RG_EBADREQ. Hosts with non-ASCII characters (after
 * percent-decoding) are RG_EBADREQ too: this module does not implement UTS 46
 * mapping, under which for instance full-width digits become ASCII digits, so
 * it cannot know what such a host means; send internationalized names in
 * their ASCII (xn--) form, as Chromium reports them in requests anyway.
 *
 * Tenant rules (pol_new), in this order. An entry with a port applies only
 * to URLs whose port (given, or the scheme's default: 80 for http and ws,
 * 443 for https and wss) is that one; for every other URL it is as if it
 * were not listed. An entry without a port applies to every port.
 *
 *   1. The deny list: a host name that matches a name entry, or an address
 *      inside an address or CIDR entry, is refused. An IPv6 address also
 *      matches an IPv4 entry through any IPv4 address it embeds.
 *   2. Metadata: refused unless the allow list names it exactly: the address
 *      (an IP entry or a /32, /128 CIDR) or the host name (an exact entry,
 *      not a wildcard; its addresses are still checked), on the URL's port
 *      when the entry has one. A wider CIDR (169.254.0.0/16) or allow_private
 *      does not open metadata.
 *   3. The allow list, address entries: an address inside an allow IP or
 *      CIDR entry is allowed, whatever its class. An IPv6 address matches an
 *      IPv4 entry only in its mapped form (::ffff:a.b.c.d), which is the same
 *      destination.
 *   4. A non-empty allow list means "only these": a host that no entry names
 *      and whose address no entry contains is refused.
 *   5. The classes above: public is allowed; with allow_private so are
 *      loopback, private, link-local, cgnat, unspecified, this-network,
 *      benchmarking and documentation. Multicast, broadcast and reserved stay
 *      refused (no HTTP server lives there); open them with an allow CIDR.
 *
 * Allow-list host names pass step 4 only: the addresses the name resolves to
 * still go through steps 1, 2, 3 and 5, so allowing "intranet.example" does
 * not by itself let it reach 10.0.0.5; allow_private or a CIDR entry does.
 * For a name, the URL's port is what every entry is compared with, the name
 * entries and the address entries its addresses are checked against alike.
 * So "127.0.0.1:8080" lets pages reach http://127.0.0.1:8080/ (and
 * http://127.1:8080/, the same destination) but not 127.0.0.1:6390, nor
 * http://localhost:8080/: localhost also means ::1, which needs "[::1]:8080".
 *
 * List entries (letters are compared case-insensitively):
 *
 *   entry   = name [":" port] | wild [":" port] | ipv4 [":" port]
 *           | "[" ipv6 "]" [":" port] | ipv6 | cidr
 *   name    a host name ("example.com"; trailing dots ignored)
 *   wild    "*." name or "." name: every subdomain at any depth but NOT the
 *           name itself (list both to cover both)
 *   ipv4    an IPv4 address in any spelling a URL host may use ("127.1")
 *   ipv6    an IPv6 address without brackets. It never has a port: "::1:80"
 *           is the address ::1:80 on every port; write "[::1]:80" for ::1 on
 *           port 80.
 *   cidr    address "/" length ("10.0.0.0/8", "fd00::/8", "[fd00::]/8"),
 *           host bits zero. A range takes no port: "10.0.0.0/8:80" is
 *           malformed.
 *   port    decimal digits worth 1 to 65535 ("host:", "host:0",
 *           "host:65536", "host:12ab", "[::1]:" are malformed)
 *
 * A malformed entry fails pol_new with RG_EBADREQ. At most POL_LIST_MAX
 * entries per list.
 *
 * DNS. A host name is not decided by pol_check_url (it answers POL_RESOLVE);
 * pol_check_resolved resolves it with getaddrinfo(AF_UNSPEC) on a helper
 * thread, waits at most timeout_ms, and refuses the URL when ANY address is
 * refused, so a name with one public and one private address is refused.
 * Nothing is cached here: the caller decides whether to cache.
 *
 * DNS rebinding, honestly. pol_check_url and pol_check_resolved decide on a
 * URL, and whoever connects afterwards resolves the name again: a name whose
 * record changes in between (TTL 0 rebinding: public at check time,
 * 127.0.0.1 at connect time) slips through a check-then-connect design. So
 * the gateway uses them as the first line (DevTools Fetch interception, for
 * a clear error), and enforces on the connection with pol_check_connect: the
 * egress proxy (egress/egress.h) resolves once, checks every address and
 * connects only to one of the addresses it was handed. A name that answers
 * with any refused address is refused as a whole, so the multi-answer
 * tricks fail too.
 *
 * Threading: a compiled pol is read-only and may be used from any number of
 * threads at once (pol_set_lookup excepted: call it before sharing). The
 * only shared mutable state is an atomic count of DNS lookups in flight.
 * pol_check_url allocates nothing; pol_check_resolved allocates one small
 * job and starts one thread per lookup.
 *
 * Ownership: pol_new's caller owns the pol (pol_free). Strings passed in are
 * copied; nothing returned is borrowed.
 *
 * Dependencies: common/ (rg_err, rg_bad), libc, pthreads.
 */
#ifndef POLICY_H
#define POLICY_H

#include <stddef.h>
#include <sys/socket.h>

#include "../common/rg.h"

/* ---- limits ---- */
#define POL_URL_MAX_BYTES 8192  /* longer URLs are RG_EBADREQ */
#define POL_HOST_MAX 253        /* characters of a host name, trailing dot not counted */
#define POL_ENTRY_MAX 255       /* characters of one list entry */
#define POL_LIST_MAX 256        /* entries per list */
#define POL_MAX_ADDRS 64        /* addresses of one name; more is refused */
#define POL_DNS_MAX_INFLIGHT 16 /* lookups running at once per pol (RG_EBUSY beyond) */
#define POL_DNS_TIMEOUT_MS 5000 /* used when pol_check_resolved gets timeout_ms <= 0 */

/* Buffer sizes of pol_url. */
#define POL_SCHEME_SIZE 32
#define POL_HOST_SIZE (POL_HOST_MAX + 2)

/** A tenant's compiled rules. Read-only once built: any thread. */
typedef struct pol pol;

/**
 * Compiles a tenant's rules (see the file comment for their meaning). allow
 * holds n_allow entries, deny n_deny; either may be NULL when its count is 0.
 * Returns 0 and a pol the caller owns in *out, RG_EBADREQ with a sentence in
 * err naming the first malformed entry (or a list over POL_LIST_MAX), or
 * RG_ENOMEM.
 */
int pol_new(int allow_private, const char *const *allow, size_t n_allow, const char *const *deny,
            size_t n_deny, pol **out, char *err, size_t errlen);

/** Frees p (NULL is fine). DNS lookups still running keep what they need. */
void pol_free(pol *p);

/** A URL as Chromium sees it, reduced to what the policy needs. */
typedef struct pol_url {
    char scheme[POL_SCHEME_SIZE]; /* lowercase, without ':' (cut at 31 characters) */
    /* "" unless the scheme is http, https, ws or wss. Otherwise lowercase: a
     * name as written (trailing dot kept, it changes what DNS is asked), a
     * dotted-quad IPv4 address, or an IPv6 address without brackets in the
     * WHATWG form (compressed, hex only: "::ffff:7f00:1"). */
    char host[POL_HOST_SIZE];
    int port;               /* given or default (80, 443); -1 without a host */
    int family;             /* AF_INET or AF_INET6 for an IP host, else 0 */
    unsigned char addr[16]; /* the IP host in network order (4 or 16 bytes) */
    int about_blank;        /* 1 for about:blank */
} pol_url;

/** pol_check_url and pol_check_resolved: the URL may be loaded. */
#define POL_ALLOW 0
/** pol_check_url: the host is a name; decide with pol_check_resolved. */
#define POL_RESOLVE 1

/**
 * Parses url (len bytes, need not be NUL-terminated) as Chromium would, as
 * far as the policy needs: scheme, host and port. Returns 0 and fills *out,
 * or RG_EBADREQ with a sentence in err (NULL is fine) for a URL Chromium would
 * not load: no scheme, no host, a bad port, an invalid IPv4 or IPv6 host, a
 * forbidden host character, a non-ASCII host, or more than POL_URL_MAX_BYTES.
 * Schemes other than http(s) and ws(s) parse without looking at their host.
 */
int pol_parse_url(const char *url, size_t len, pol_url *out, char *err, size_t errlen);

/**
 * The decision without DNS. Returns POL_ALLOW, POL_RESOLVE (a host name that
 * is neither refused nor allowed by name: call pol_check_resolved), or a
 * negative code with a sentence in why (NULL is fine): RG_EBLOCKEDURL for a
 * refused URL, RG_EBADREQ for an invalid one. u (NULL is fine) receives the
 * parsed URL. Allocates nothing.
 */
int pol_check_url(const pol *p, const char *url, size_t len, pol_url *u, char *why, size_t whylen);

/**
 * The whole decision for u as filled by pol_parse_url or pol_check_url: an
 * IP host or a name decided by name is answered at once; any other name is
 * resolved (at most timeout_ms; <= 0 means POL_DNS_TIMEOUT_MS) and every
 * address checked. Returns POL_ALLOW or a negative code with a sentence in
 * why: RG_EBLOCKEDURL when refused, also when the lookup timed out ("DNS
 * lookup timed out") or gave more than POL_MAX_ADDRS addresses;
 * RG_ENAVFAILED when the name does not resolve; RG_EBUSY when
 * POL_DNS_MAX_INFLIGHT lookups of p are still running; RG_EUNAVAIL when no
 * thread could be started. Blocks the calling thread for the lookup.
 */
int pol_check_resolved(const pol *p, const pol_url *u, int timeout_ms, char *why, size_t whylen);

/**
 * The class of an AF_INET or AF_INET6 address: "public", "loopback",
 * "private", "link-local", "cgnat", "multicast", "unspecified",
 * "this-network", "broadcast", "metadata", "benchmarking", "documentation",
 * "reserved"; "unknown" for NULL or another family. A static string.
 */
const char *pol_addr_class(const struct sockaddr *sa);

/* ---- DNS ---- */

/** Addresses of one name, as AF_INET / AF_INET6 socket addresses (port 0). */
typedef struct pol_addrs {
    size_t n;
    struct sockaddr_storage addr[POL_MAX_ADDRS];
} pol_addrs;

/**
 * A blocking lookup, run on the helper thread: fills out with the addresses
 * of host and returns 0, or a negative code with a sentence in why (whylen
 * bytes, never NULL). It may outlive the pol_resolve call that started it
 * (after a timeout), so arg must outlive every lookup.
 */
typedef int (*pol_lookup_fn)(void *arg, const char *host, pol_addrs *out, char *why, size_t whylen);

/**
 * Replaces p's lookup (the seam for tests); fn NULL restores getaddrinfo.
 * Not thread-safe: call before p is shared.
 */
void pol_set_lookup(pol *p, pol_lookup_fn fn, void *arg);

/**
 * Resolves host with p's lookup on a helper thread and waits at most
 * timeout_ms (> 0). Returns 0 with the addresses in *out, or a negative code
 * with a sentence in why: RG_ETIMEOUT ("DNS lookup timed out"; the lookup
 * runs on and frees itself), RG_ENAVFAILED (does not resolve), RG_EBLOCKEDURL
 * (more than POL_MAX_ADDRS addresses), RG_EBUSY, RG_EUNAVAIL (as above).
 */
int pol_resolve(const pol *p, const char *host, int timeout_ms, pol_addrs *out, char *why,
                size_t whylen);

/** DNS lookups of p still running, timed-out ones included (for metrics). */
int pol_dns_inflight(const pol *p);

/* ---- connections ---- */

/**
 * The decision for one connection, as an egress proxy needs it: may a page
 * connect to host (a name, or an IPv4 or IPv6 address in any URL spelling,
 * IPv6 with or without brackets) on port? The host is read as a URL's host
 * would be, then decided as pol_check_resolved decides, except that a name
 * is always resolved (localhost too) and out receives the addresses that
 * were checked, which are the only ones the caller may connect to. For an
 * IP host, out holds that address. Returns POL_ALLOW, or a negative code
 * with a sentence in why (out->n is 0 then): RG_EBLOCKEDURL refused,
 * RG_EBADREQ a host no URL could have, RG_ENAVFAILED no such name,
 * RG_ETIMEOUT the lookup took longer than timeout_ms, RG_EBUSY or
 * RG_EUNAVAIL as pol_resolve.
 */
int pol_check_connect(const pol *p, const char *host, int port, int timeout_ms, pol_addrs *out,
                      char *why, size_t whylen);

#endif
