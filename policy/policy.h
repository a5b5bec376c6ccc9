/*
 * policy.h - the URL policy: which URLs a tenant's browser may load and which
 * addresses its pages may connect to (SSRF protection). This module decides;
 * the gateway enforces (DevTools Fetch interception on navigations and on
 * every request a page makes, and the egress proxy on every connection:
 * pol_check_connect). docs/policy.md is the specification: the schemes and
 * address classes refused by default, the WHATWG parsing, the order of the
 * tenant's rules, the list-entry grammar, DNS and rebinding.
 *
 * In short: http, https, ws and wss (and about:blank) only; every address
 * that is not public is refused (RG_EBLOCKEDURL with a sentence in `why`);
 * a URL that does not parse, or a host with non-ASCII characters, is
 * RG_EBADREQ. The tenant's deny list wins, metadata addresses open only by
 * an exact allow entry, a non-empty allow list means "only these", and
 * allow_private opens the private classes but never multicast, broadcast
 * or reserved. A host name is decided on every address it resolves to: one
 * refused address refuses the name.
 *
 * pol_check_url and pol_check_resolved decide on a URL, and whoever
 * connects afterwards resolves the name again (DNS rebinding): they are the
 * first line, for a clear error; pol_check_connect, on the addresses the
 * egress proxy then connects to, is the one that holds.
 *
 * Threading: a compiled pol is read-only and may be used from any number of
 * threads at once (pol_set_lookup excepted: call it before sharing). The
 * only shared mutable state is an atomic count of DNS lookups in flight.
 * pol_check_url allocates nothing; pol_check_resolved allocates one small
 * job and starts one thread per lookup. Nothing is cached here: the caller
 * decides whether to cache.
 *
 * Ownership: pol_new's caller owns the pol (pol_free). Strings passed in are
 * copied; nothing returned is borrowed.
 *
 * Dependencies: common/ (rg_err, rg_errf), libc, pthreads.
 */
#ifndef POLICY_H
#define POLICY_H

#include <stddef.h>
#include <sys/socket.h>

#include "common/rg.h"

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
