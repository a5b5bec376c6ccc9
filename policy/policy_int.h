/*
 * policy_int.h - what the files of policy/ share: the address type, the
 * class table, the host parser and the compiled rules. Nothing outside
 * policy/ includes this header.
 */
#ifndef POLICY_INT_H
#define POLICY_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

/** An IPv4 (4 bytes used) or IPv6 address in network order; family 0: none. */
typedef struct pol_ip {
    int family;
    unsigned char b[16];
} pol_ip;

/** Longest text of a pol_ip (an IPv6 address is at most 39 characters). */
#define POL_IP_TEXT 48

/** Address classes; pol_class_name gives the names of policy.h. */
enum pol_class {
    POL_C_PUBLIC = 0,
    POL_C_LOOPBACK,
    POL_C_PRIVATE,
    POL_C_LINK_LOCAL,
    POL_C_CGNAT,
    POL_C_MULTICAST,
    POL_C_UNSPECIFIED,
    POL_C_THIS_NETWORK,
    POL_C_BROADCAST,
    POL_C_METADATA,
    POL_C_BENCHMARKING,
    POL_C_DOCUMENTATION,
    POL_C_RESERVED,
    POL_C_UNKNOWN
};

/* ---- addr.c ---- */

/**
 * The class of ip. When the class comes from an IPv4 address that an IPv6
 * address embeds, *via (NULL is fine) receives it; otherwise via->family is 0.
 */
int pol_ip_class(const pol_ip *ip, pol_ip *via);
/** "loopback", ... */
const char *pol_class_name(int cls);
/** "a loopback address", ... for sentences; contains the class name. */
const char *pol_class_phrase(int cls);
/** 1 when allow_private opens cls. */
int pol_class_opened_by_private(int cls);
/**
 * The IPv4 addresses an IPv6 address embeds, into out (room for 2): the
 * mapped form only when mapped_only, else also compatible, translated, NAT64,
 * 6to4 and Teredo (server and client). Returns how many.
 */
size_t pol_ip_embedded_v4(const pol_ip *ip, int mapped_only, pol_ip out[2]);
/** 1 when ip lies in net/prefix (same family). */
int pol_ip_in_net(const pol_ip *ip, const pol_ip *net, int prefix);
/** 1 when net has a bit set past prefix. */
int pol_ip_host_bits(const pol_ip *net, int prefix);
/** Converts an AF_INET or AF_INET6 socket address; -1 for anything else. */
int pol_ip_from_sockaddr(const struct sockaddr *sa, pol_ip *out);

/* ---- url.c ---- */

/** Dotted quad, or the WHATWG IPv6 serialization, into buf (POL_IP_TEXT). */
void pol_ip_format(const pol_ip *ip, char *buf, size_t size);
/** The WHATWG IPv4 parser (1 to 4 parts, hex, octal). 0 or -1. */
int pol_parse_ipv4(const char *s, size_t n, pol_ip *out);
/** The WHATWG IPv6 parser (no brackets, no zone id). 0 or -1. */
int pol_parse_ipv6(const char *s, size_t n, pol_ip *out);
/**
 * The WHATWG host parser for special schemes, ASCII only: s (n bytes) as it
 * stands in the URL. Fills host (POL_HOST_SIZE bytes) and *ip (family 0 for a
 * name). 0 or RG_EBADREQ with a sentence in err.
 */
int pol_parse_host(const char *s, size_t n, char *host, pol_ip *ip, char *err, size_t errlen);
/** Copies s (n bytes) for a message: printable ASCII, at most 64 characters. */
void pol_show(const char *s, size_t n, char *buf, size_t size);

/* ---- policy.c ---- */

/* ---- the compiled rules ---- */

enum pol_entry_kind { POL_E_NAME, POL_E_SUFFIX, POL_E_NET };

struct pol_entry {
    int kind;
    const char *text; /* as given (lowercased), for messages; in the arena */
    const char *name; /* NAME, SUFFIX: without "*." or ".", trailing dots, port; in the arena */
    size_t name_len;
    pol_ip net; /* NET */
    int prefix; /* NET: an IP entry has the full length */
    int port;   /* 1 to 65535: only URLs to that port match; 0: any port (a CIDR always) */
};

struct pol_list {
    struct pol_entry *v;
    size_t n;
    size_t n_nets;  /* NET entries among them */
    size_t n_ports; /* entries with a port among them */
};

/**
 * What the lookups of one pol share with the threads that run them: the
 * count in flight, and references (the pol's, one per running thread).
 */
struct pol_gate {
    atomic_int inflight;
    atomic_int refs;
};

struct pol {
    int allow_private;
    struct pol_list allow;
    struct pol_list deny;
    char *arena; /* the strings of every entry */
    pol_lookup_fn lookup;
    void *lookup_arg;
    struct pol_gate *gate;
};

/** The default lookup: getaddrinfo(AF_UNSPEC, SOCK_STREAM). */
int pol_lookup_system(void *arg, const char *host, pol_addrs *out, char *why, size_t whylen);
/** Drops one reference to g, freeing it with the last. */
void pol_gate_release(struct pol_gate *g);

#endif
