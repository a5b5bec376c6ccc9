/*
 * policy.c - compiling a tenant's allow and deny lists, and the decision:
 * deny list, metadata, allow list, classes, in the order policy.h gives.
 *
 * A compiled pol is read-only: any thread. Nothing here allocates after
 * pol_new.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "policy/policy_int.h"

/* ---- names ---- */

/* The length of name without its trailing dots. */
static size_t name_trim(const char *name)
{
    size_t n = strlen(name);
    while (n && name[n - 1] == '.')
        n--;
    return n;
}

static int name_is(const char *name, size_t n, const char *what)
{
    return strlen(what) == n && !memcmp(name, what, n);
}

/* 1 when name (n bytes) is what or one of its subdomains. */
static int name_under(const char *name, size_t n, const char *what)
{
    size_t w = strlen(what);
    return name_is(name, n, what) ||
           (n > w && name[n - w - 1] == '.' && !memcmp(name + n - w, what, w));
}

/* Names Chromium resolves to loopback itself, without asking DNS. */
static int name_is_localhost(const char *name, size_t n)
{
    return name_under(name, n, "localhost") || name_is(name, n, "localhost.localdomain") ||
           name_is(name, n, "localhost6") || name_is(name, n, "localhost6.localdomain6");
}

static int name_is_metadata(const char *name, size_t n)
{
    static const char *const names[] = {"metadata",      "metadata.google.internal",
                                        "metadata.goog", "metadata.tencentyun.com",
                                        "instance-data", "instance-data.ec2.internal"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (name_is(name, n, names[i]))
            return 1;
    return 0;
}

/* ---- list entries ---- */

static int entry_chars_ok(const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              strchr(".-_*:[]/", c)))
            return 0;
    }
    return 1;
}

/* An address, with or without brackets; an IPv4 address in any URL spelling. */
static int entry_ip(const char *s, size_t n, pol_ip *ip)
{
    if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
        s++;
        n -= 2;
    }
    if (memchr(s, ':', n))
        return pol_parse_ipv6(s, n, ip);
    return pol_parse_ipv4(s, n, ip);
}

static int full_prefix(const pol_ip *ip)
{
    return ip->family == AF_INET ? 32 : 128;
}

/* "address/length", the address in any form entry_ip takes. */
static int entry_cidr(const char *s, struct pol_entry *e, const char *which, char *err,
                      size_t errlen)
{
    const char *slash = strrchr(s, '/');
    const char *len = slash + 1;
    size_t digits = strlen(len);
    if (entry_ip(s, (size_t)(slash - s), &e->net) < 0)
        return rg_errf(err, errlen, RG_EBADREQ, "%s entry \"%s\": \"%.*s\" is not an IP address",
                       which, s, (int)(slash - s), s);
    int bits = full_prefix(&e->net), prefix = 0;
    for (size_t i = 0; i < digits && i < 3; i++)
        prefix = len[i] >= '0' && len[i] <= '9' ? prefix * 10 + (len[i] - '0') : bits + 1;
    if (digits == 0 || digits > 3 || prefix > bits)
        return rg_errf(err, errlen, RG_EBADREQ,
                       "%s entry \"%s\": the prefix length must be 0 to %d", which, s, bits);
    if (pol_ip_host_bits(&e->net, prefix))
        return rg_errf(err, errlen, RG_EBADREQ, "%s entry \"%s\" has bits set after the first %d",
                       which, s, prefix);
    e->kind = POL_E_NET;
    e->prefix = prefix;
    return 0;
}

/*
 * The host part of an entry, s (n bytes; the entry is text, for messages): a
 * host name, "*.name" or ".name" (lowercase, valid as a URL host, trailing
 * dots dropped, written to name), or an IPv4 address in any URL spelling.
 */
static int entry_host(const char *s, size_t n, const char *text, struct pol_entry *e, char *name,
                      const char *which, char *err, size_t errlen)
{
    char host[POL_HOST_SIZE];
    size_t skip = 0;
    e->kind = POL_E_NAME;
    if (n >= 2 && s[0] == '*' && s[1] == '.')
        skip = 2;
    else if (n >= 1 && s[0] == '.')
        skip = 1;
    if (skip)
        e->kind = POL_E_SUFFIX;
    pol_ip ip;
    int rc = pol_parse_host(s + skip, n - skip, host, &ip, NULL, 0);
    if (rc == 0 && ip.family && e->kind == POL_E_NAME) {
        e->kind = POL_E_NET;
        e->net = ip;
        e->prefix = full_prefix(&ip);
        return 0;
    }
    size_t len = rc == 0 ? name_trim(host) : 0;
    if (rc < 0 || ip.family || len == 0 || memchr(host, '*', len))
        return rg_errf(err, errlen, RG_EBADREQ,
                       "%s entry \"%s\" is not a host name, *.name, .name, IP address or CIDR "
                       "range",
                       which, text);
    memcpy(name, host, len);
    name[len] = '\0';
    e->name = name;
    e->name_len = len;
    return 0;
}

/*
 * The port of an entry, what follows its ':': decimal digits worth 1 to
 * 65535 (leading zeros allowed, as in a URL), or -1. A URL may name port 0;
 * nothing listens there, so no entry needs it.
 */
static int entry_port(const char *s)
{
    long v = 0;
    if (!*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (*s - '0');
        if (v > 65535)
            return -1;
    }
    return v > 0 ? (int)v : -1;
}

/*
 * Parses entry s into e. Its text and name are written at *arena (room for
 * twice s and its NUL), which moves past them.
 *
 * Where the port is: after "]:" for a bracketed IPv6 address, and after the
 * only ':' of an entry that has one (a name, wildcard or IPv4 address: an
 * IPv6 address has at least two). An entry with two or more ':' and no
 * brackets is a bare IPv6 address and has no port, so "::1:80" is the address
 * ::1:80. A CIDR range has no port.
 */
static int entry_parse(const char *s, struct pol_entry *e, char **arena, const char *which,
                       char *err, size_t errlen)
{
    size_t n = strlen(s);
    char *text = *arena;
    for (size_t i = 0; i <= n; i++)
        text[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
    e->text = text;
    e->name = "";
    e->port = 0;
    *arena = text + n + 1;
    const char *slash = strchr(text, '/');
    if (slash && strchr(slash, ':'))
        return rg_errf(err, errlen, RG_EBADREQ, "%s entry \"%s\": a CIDR range takes no port",
                       which, text);
    if (slash)
        return entry_cidr(text, e, which, err, errlen);
    const char *colon = strchr(text, ':');
    const char *port = NULL;
    size_t host_len = n;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close || entry_ip(text, (size_t)(close + 1 - text), &e->net) < 0 ||
            e->net.family != AF_INET6)
            return rg_errf(err, errlen, RG_EBADREQ, "%s entry \"%s\" is not an IPv6 address", which,
                           text);
        if (close[1] && close[1] != ':')
            return rg_errf(err, errlen, RG_EBADREQ,
                           "%s entry \"%s\": only \":port\" may follow \"]\"", which, text);
        e->kind = POL_E_NET;
        e->prefix = full_prefix(&e->net);
        port = close[1] ? close + 2 : NULL;
    } else if (colon && strchr(colon + 1, ':')) {
        if (entry_ip(text, n, &e->net) < 0)
            return rg_errf(err, errlen, RG_EBADREQ,
                           "%s entry \"%s\" has two or more ':' but is not an IPv6 address (an "
                           "IPv6 address with a port is written [address]:port)",
                           which, text);
        e->kind = POL_E_NET;
        e->prefix = 128;
    } else {
        if (colon) {
            host_len = (size_t)(colon - text);
            port = colon + 1;
        }
        int rc = entry_host(text, host_len, text, e, *arena, which, err, errlen);
        if (rc < 0)
            return rc;
        if (e->kind != POL_E_NET)
            *arena += e->name_len + 1;
    }
    if (port) {
        e->port = entry_port(port);
        if (e->port < 0)
            return rg_errf(err, errlen, RG_EBADREQ,
                           "%s entry \"%s\": the port must be a number from 1 to 65535", which,
                           text);
    }
    return 0;
}

/* Checks the list's size and entries' lengths; adds the arena bytes to *total. */
static int list_size(const char *const *v, size_t n, const char *which, size_t *total, char *err,
                     size_t errlen)
{
    if (n > POL_LIST_MAX)
        return rg_errf(err, errlen, RG_EBADREQ, "the %s list has more than %d entries", which,
                       POL_LIST_MAX);
    if (n && !v)
        return rg_errf(err, errlen, RG_EBADREQ, "the %s list is missing", which);
    for (size_t i = 0; i < n; i++) {
        size_t len = v[i] ? strlen(v[i]) : 0;
        if (len == 0 || len > POL_ENTRY_MAX)
            return rg_errf(err, errlen, RG_EBADREQ, "%s entry %zu must have 1 to %d characters",
                           which, i + 1, POL_ENTRY_MAX);
        if (!entry_chars_ok(v[i]))
            return rg_errf(err, errlen, RG_EBADREQ,
                           "%s entry %zu has a character other than letters, digits and "
                           ". - _ * : [ ] /",
                           which, i + 1);
        *total += 2 * (len + 1); /* text and name */
    }
    return 0;
}

static int list_build(struct pol_list *l, const char *const *v, size_t n, char **arena,
                      const char *which, char *err, size_t errlen)
{
    if (n == 0)
        return 0;
    l->v = calloc(n, sizeof *l->v);
    if (!l->v)
        return RG_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        int rc = entry_parse(v[i], &l->v[i], arena, which, err, errlen);
        if (rc < 0)
            return rc;
        l->n++;
        l->n_nets += l->v[i].kind == POL_E_NET;
        l->n_ports += l->v[i].port != 0;
    }
    return 0;
}

int pol_new(int allow_private, const char *const *allow, size_t n_allow, const char *const *deny,
            size_t n_deny, pol **out, char *err, size_t errlen)
{
    size_t total = 1;
    *out = NULL;
    int rc = list_size(allow, n_allow, "allow", &total, err, errlen);
    if (rc == 0)
        rc = list_size(deny, n_deny, "deny", &total, err, errlen);
    if (rc < 0)
        return rc;
    pol *p = calloc(1, sizeof *p);
    if (!p)
        return RG_ENOMEM;
    p->allow_private = allow_private != 0;
    p->lookup = pol_lookup_system;
    p->arena = malloc(total);
    p->gate = calloc(1, sizeof *p->gate);
    if (!p->arena || !p->gate) {
        rc = RG_ENOMEM;
        goto out;
    }
    atomic_init(&p->gate->inflight, 0);
    atomic_init(&p->gate->refs, 1);
    char *arena = p->arena;
    rc = list_build(&p->allow, allow, n_allow, &arena, "allow", err, errlen);
    if (rc == 0)
        rc = list_build(&p->deny, deny, n_deny, &arena, "deny", err, errlen);
out:
    if (rc < 0) {
        pol_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

void pol_free(pol *p)
{
    if (!p)
        return;
    free(p->allow.v);
    free(p->deny.v);
    free(p->arena);
    if (p->gate)
        pol_gate_release(p->gate);
    free(p);
}

void pol_set_lookup(pol *p, pol_lookup_fn fn, void *arg)
{
    p->lookup = fn ? fn : pol_lookup_system;
    p->lookup_arg = fn ? arg : NULL;
}

/* ---- matching ---- */

/* 1 when e applies to a URL to port: e has no port, or that one. */
static int port_matches(const struct pol_entry *e, int port)
{
    return e->port == 0 || e->port == port;
}

/* The first name entry of l for name (n bytes) on port; wildcards unless exact_only. */
static const struct pol_entry *match_name(const struct pol_list *l, const char *name, size_t n,
                                          int port, int exact_only)
{
    for (size_t i = 0; i < l->n; i++) {
        const struct pol_entry *e = &l->v[i];
        if (!port_matches(e, port))
            continue;
        if (e->kind == POL_E_NAME && e->name_len == n && !memcmp(name, e->name, n))
            return e;
        if (e->kind == POL_E_SUFFIX && !exact_only && n > e->name_len &&
            name[n - e->name_len - 1] == '.' &&
            !memcmp(name + n - e->name_len, e->name, e->name_len))
            return e;
    }
    return NULL;
}

/*
 * The first entry of l that contains ip and applies to port, preferring one
 * that names the address exactly (*exact, NULL is fine). An IPv6 address
 * matches IPv4 entries through what it embeds: only its mapped form when
 * mapped_only.
 */
static const struct pol_entry *match_addr(const struct pol_list *l, const pol_ip *ip, int port,
                                          int mapped_only, int *exact)
{
    const struct pol_entry *found = NULL;
    pol_ip emb[2];
    size_t n_emb = pol_ip_embedded_v4(ip, mapped_only, emb);
    for (size_t i = 0; i < l->n; i++) {
        const struct pol_entry *e = &l->v[i];
        if (e->kind != POL_E_NET || !port_matches(e, port))
            continue;
        int hit = pol_ip_in_net(ip, &e->net, e->prefix);
        for (size_t k = 0; k < n_emb && !hit; k++)
            hit = pol_ip_in_net(&emb[k], &e->net, e->prefix);
        if (!hit)
            continue;
        int full = e->prefix == full_prefix(&e->net);
        if (!found || full)
            found = e;
        if (full)
            break;
    }
    if (exact)
        *exact = found && found->prefix == full_prefix(&found->net);
    return found;
}

/* 1 when l has an address or CIDR entry that applies to port. */
static int has_net_for_port(const struct pol_list *l, int port)
{
    if (!l->n_nets)
        return 0;
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].kind == POL_E_NET && port_matches(&l->v[i], port))
            return 1;
    return 0;
}

/* ---- the decision ---- */

static int refuse_class(const char *subject, const char *a, int cls, const pol_ip *via, char *why,
                        size_t whylen)
{
    char v[POL_IP_TEXT];
    const char *phrase = pol_class_phrase(cls);
    if (!via->family) {
        if (subject)
            return rg_errf(why, whylen, RG_EBLOCKEDURL, "%s resolves to %s, %s", subject, a,
                           phrase);
        return rg_errf(why, whylen, RG_EBLOCKEDURL, "%s is %s", a, phrase);
    }
    pol_ip_format(via, v, sizeof v);
    if (subject)
        return rg_errf(why, whylen, RG_EBLOCKEDURL, "%s resolves to %s, which embeds %s, %s",
                       subject, a, v, phrase);
    return rg_errf(why, whylen, RG_EBLOCKEDURL, "%s embeds %s, %s", a, v, phrase);
}

/* Room for dest_text: a host, brackets, ':' and five digits. */
#define POL_DEST_SIZE (POL_HOST_SIZE + 8)

/*
 * How an allow-list refusal names the destination host: as it is, or with
 * ":port" ("[...]:port" for an IPv6 address) when some entry of l has a port,
 * since then the port may be what kept the URL off the list.
 */
static const char *dest_text(const struct pol_list *l, const char *host, int port, char *buf,
                             size_t size)
{
    if (!l->n_ports)
        return host;
    if (strchr(host, ':'))
        snprintf(buf, size, "[%s]:%d", host, port);
    else
        snprintf(buf, size, "%s:%d", host, port);
    return buf;
}

/*
 * Steps 1 to 5 of policy.h for one address of a URL to port. subject is the
 * host name that resolved to ip (NULL for an IP host); name_allowed says
 * whether an allow entry names it on that port.
 */
static int check_addr(const pol *p, const char *subject, const pol_ip *ip, int port,
                      int name_allowed, char *why, size_t whylen)
{
    char a[POL_IP_TEXT], dest[POL_DEST_SIZE];
    pol_ip_format(ip, a, sizeof a);
    const struct pol_entry *e = match_addr(&p->deny, ip, port, 0, NULL);
    if (e && subject)
        return rg_errf(why, whylen, RG_EBLOCKEDURL,
                       "%s resolves to %s, which is on the tenant's deny list (\"%s\")", subject, a,
                       e->text);
    if (e)
        return rg_errf(why, whylen, RG_EBLOCKEDURL, "%s is on the tenant's deny list (\"%s\")", a,
                       e->text);
    pol_ip via;
    int cls = pol_ip_class(ip, &via);
    int exact = 0;
    e = match_addr(&p->allow, ip, port, 1, &exact);
    if (cls == POL_C_METADATA)
        return e && exact ? POL_ALLOW : refuse_class(subject, a, cls, &via, why, whylen);
    if (e)
        return POL_ALLOW;
    if (p->allow.n && !name_allowed && subject)
        return rg_errf(why, whylen, RG_EBLOCKEDURL,
                       "%s is not on the tenant's allow list, nor is its address %s",
                       dest_text(&p->allow, subject, port, dest, sizeof dest), a);
    if (p->allow.n && !name_allowed)
        return rg_errf(why, whylen, RG_EBLOCKEDURL, "%s is not on the tenant's allow list",
                       dest_text(&p->allow, a, port, dest, sizeof dest));
    if (cls == POL_C_PUBLIC || (p->allow_private && pol_class_opened_by_private(cls)))
        return POL_ALLOW;
    return refuse_class(subject, a, cls, &via, why, whylen);
}

/* Chromium answers localhost names with 127.0.0.1 and ::1: both must pass. */
static int check_localhost(const pol *p, const char *host, int port, int name_allowed, char *why,
                           size_t whylen)
{
    pol_ip v4 = {.family = AF_INET, .b = {127, 0, 0, 1}};
    pol_ip v6 = {.family = AF_INET6, .b = {[15] = 1}};
    int rc = check_addr(p, host, &v4, port, name_allowed, why, whylen);
    return rc < 0 ? rc : check_addr(p, host, &v6, port, name_allowed, why, whylen);
}

/*
 * The decision for a host name on port before DNS: POL_ALLOW, POL_RESOLVE or
 * refused. A name that no allow entry names on port is refused here when no
 * address entry applies to port either, since no answer could then pass.
 */
static int check_name(const pol *p, const char *host, int port, char *why, size_t whylen)
{
    char dest[POL_DEST_SIZE];
    size_t n = name_trim(host);
    const struct pol_entry *e = match_name(&p->deny, host, n, port, 0);
    if (e)
        return rg_errf(why, whylen, RG_EBLOCKEDURL, "%s is on the tenant's deny list (\"%s\")",
                       host, e->text);
    int name_allowed = match_name(&p->allow, host, n, port, 0) != NULL;
    if (name_is_localhost(host, n))
        return check_localhost(p, host, port, name_allowed, why, whylen);
    if (name_is_metadata(host, n) && !match_name(&p->allow, host, n, port, 1))
        return rg_errf(why, whylen, RG_EBLOCKEDURL, "%s is a cloud metadata host name", host);
    if (p->allow.n && !name_allowed && !has_net_for_port(&p->allow, port))
        return rg_errf(why, whylen, RG_EBLOCKEDURL, "%s is not on the tenant's allow list",
                       dest_text(&p->allow, host, port, dest, sizeof dest));
    return POL_RESOLVE;
}

static int scheme_is_web(const char *scheme)
{
    return !strcmp(scheme, "http") || !strcmp(scheme, "https") || !strcmp(scheme, "ws") ||
           !strcmp(scheme, "wss");
}

/* The decision for a parsed URL without DNS. */
static int check_parsed(const pol *p, const pol_url *u, char *why, size_t whylen)
{
    if (u->about_blank)
        return POL_ALLOW;
    if (!scheme_is_web(u->scheme))
        return rg_errf(why, whylen, RG_EBLOCKEDURL,
                       "the scheme \"%s:\" is not allowed (http, https, ws and wss are)",
                       u->scheme);
    if (!u->host[0])
        return rg_errf(why, whylen, RG_EBADREQ, "the URL has no host");
    if (u->family) {
        pol_ip ip = {.family = u->family};
        memcpy(ip.b, u->addr, sizeof ip.b);
        return check_addr(p, NULL, &ip, u->port, 0, why, whylen);
    }
    return check_name(p, u->host, u->port, why, whylen);
}

int pol_check_url(const pol *p, const char *url, size_t len, pol_url *u, char *why, size_t whylen)
{
    pol_url local;
    if (!u)
        u = &local;
    int rc = pol_parse_url(url, len, u, why, whylen);
    return rc < 0 ? rc : check_parsed(p, u, why, whylen);
}

/* Resolves u's host name and checks every address; out (NULL is fine) gets them. */
static int resolve_and_check(const pol *p, const pol_url *u, int timeout_ms, pol_addrs *out,
                             char *why, size_t whylen)
{
    pol_addrs local;
    pol_addrs *addrs = out ? out : &local;
    int rc = pol_resolve(p, u->host, timeout_ms > 0 ? timeout_ms : POL_DNS_TIMEOUT_MS, addrs,
                         why, whylen);
    if (rc < 0)
        return rc;
    size_t n = name_trim(u->host);
    int name_allowed = match_name(&p->allow, u->host, n, u->port, 0) != NULL;
    for (size_t i = 0; i < addrs->n; i++) {
        pol_ip ip;
        if (pol_ip_from_sockaddr((const struct sockaddr *)&addrs->addr[i], &ip) < 0)
            return rg_errf(why, whylen, RG_EBLOCKEDURL, "%s resolves to an unknown address family",
                           u->host);
        rc = check_addr(p, u->host, &ip, u->port, name_allowed, why, whylen);
        if (rc < 0)
            return rc;
    }
    return POL_ALLOW;
}

int pol_check_resolved(const pol *p, const pol_url *u, int timeout_ms, char *why, size_t whylen)
{
    int rc = check_parsed(p, u, why, whylen);
    if (rc != POL_RESOLVE)
        return rc;
    rc = resolve_and_check(p, u, timeout_ms, NULL, why, whylen);
    return rc == RG_ETIMEOUT ? RG_EBLOCKEDURL : rc;
}

int pol_check_connect(const pol *p, const char *host, int port, int timeout_ms, pol_addrs *out,
                      char *why, size_t whylen)
{
    out->n = 0;
    if (port < 1 || port > 65535)
        return rg_errf(why, whylen, RG_EBADREQ, "port %d is out of range", port);
    /* The host as a URL's, so every spelling means what it means in a URL;
       but only a host: nothing that would end the authority early. */
    for (const char *c = host; *c; c++)
        if ((unsigned char)*c <= ' ' || strchr("/\\?#@", *c))
            return rg_errf(why, whylen, RG_EBADREQ, "the host \"%.64s\" is malformed", host);
    char url[POL_HOST_SIZE + 32];
    int bracket = strchr(host, ':') && host[0] != '[';
    int len = snprintf(url, sizeof url, "http://%s%s%s:%d/", bracket ? "[" : "", host,
                       bracket ? "]" : "", port);
    if (len < 0 || (size_t)len >= sizeof url)
        return rg_errf(why, whylen, RG_EBADREQ, "the host name is too long");
    pol_url u;
    int rc = pol_check_url(p, url, (size_t)len, &u, why, whylen);
    if (rc < 0)
        return rc;
    if (u.family) {
        struct sockaddr_storage *ss = &out->addr[0];
        memset(ss, 0, sizeof *ss);
        if (u.family == AF_INET) {
            struct sockaddr_in *a = (struct sockaddr_in *)ss;
            a->sin_family = AF_INET;
            memcpy(&a->sin_addr, u.addr, 4);
        } else {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
            a->sin6_family = AF_INET6;
            memcpy(&a->sin6_addr, u.addr, 16);
        }
        out->n = 1;
        return POL_ALLOW;
    }
    /* A name: its addresses, every one checked, even when the name alone
       was enough (localhost), since these are what will be connected to. */
    rc = resolve_and_check(p, &u, timeout_ms, out, why, whylen);
    if (rc < 0)
        out->n = 0;
    return rc;
}
