/*
 * egress.h - the browsers' only way out: a SOCKS5 proxy on loopback that
 * checks every connection a page opens and connects to the very address it
 * checked.
 *
 * Why a proxy. DevTools Fetch interception sees URLs, not connections: it
 * misses WebSocket handshakes, it sees a frame's or a worker's requests
 * only once that target is attached with a Fetch of its own
 * (session/xframes.c), and it checks a name that Chromium then resolves
 * again, so a name that answers a public address at check time and
 * 127.0.0.1 a moment later (DNS rebinding) gets through. Here the decision is made on the connection:
 * Chromium sends the host name to the proxy (SOCKS5 carries names, so the
 * browser does no DNS of its own), the proxy asks the owner's rules, gets
 * the checked addresses back and connects to one of them. Nothing else
 * leaves the browser: every scheme Chromium fetches over TCP (http, https,
 * ws, wss) goes through the context's proxy, loopback included when the
 * context is created with the bypass list "<-loopback>".
 *
 * Slots. Each browser context gets a slot: a listening socket on
 * 127.0.0.1 with a port of its own, so a connection's slot tells whose
 * rules apply (Chromium does not authenticate to SOCKS proxies). A slot is
 * bound to a tag (the tenant) that is handed to the decide hook; an
 * unbound or closed slot refuses everything. Closing a slot ends its
 * connections at once.
 *
 * SOCKS5 as served (RFC 1928): no authentication; CONNECT only (BIND and
 * UDP ASSOCIATE are answered "command not supported"); IPv4, IPv6 and
 * domain-name addresses. Replies: 0x02 "not allowed by ruleset" when the
 * hook refuses, 0x04 "host unreachable" when the name does not resolve or
 * no address answered in time, 0x05 "connection refused", 0x01 otherwise.
 *
 * Bounds: connections at once in all (max_conns) and per slot
 * (max_conns_per_slot), beyond which a new connection is closed at once;
 * the handshake and the connect each have a timeout; a connection with no
 * traffic either way for idle_timeout_ms is closed.
 *
 * Threading: one acceptor thread; each connection runs on a thread of its
 * own (small stack) from the handshake to the close. The decide hook is
 * called on those threads and may block (DNS) for a bounded time. All
 * functions are thread-safe.
 *
 * Dependencies: common/ (rg.h), libc, pthreads.
 */
#ifndef EGRESS_H
#define EGRESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define EGRESS_TAG_MAX 64
#define EGRESS_MAX_ADDRS 64

typedef struct egress egress;
typedef struct egress_slot egress_slot;

/**
 * The rules: may the owner tag reach host (a name as the browser sent it,
 * or an IPv4 or IPv6 address in text, without brackets) on port? Returns 0
 * and the addresses to try, in order, in addrs (at most max; their ports
 * are ignored), with their count in *n; or a negative code with a sentence
 * in why: RG_EBLOCKEDURL refused, RG_ENAVFAILED the name does not resolve,
 * anything else a failure. Called on connection threads; may block for a
 * bounded time.
 */
typedef int (*egress_decide_fn)(void *ud, const char *tag, const char *host, int port,
                                struct sockaddr_storage *addrs, size_t max, size_t *n, char *why,
                                size_t whylen);

/** A refusal or failure, for logs and tests (called on connection threads). */
typedef void (*egress_refused_fn)(void *ud, const char *tag, const char *host, int port, int rc,
                                  const char *why);

typedef struct egress_config {
    egress_decide_fn decide; /* required */
    egress_refused_fn refused; /* NULL: refusals are logged at info level */
    void *ud;
    int max_conns;            /* REFGATE_EGRESS_MAX_CONNS [2048] */
    int max_conns_per_slot;   /* REFGATE_EGRESS_MAX_CONNS_PER_SLOT [256] */
    int handshake_timeout_ms; /* [10000] from accept to the CONNECT request */
    int connect_timeout_ms;   /* REFGATE_EGRESS_CONNECT_TIMEOUT_MS [10000] all addresses */
    int idle_timeout_ms;      /* REFGATE_EGRESS_IDLE_TIMEOUT_MS [300000] */
} egress_config;

void egress_config_default(egress_config *cfg);
void egress_config_from_env(egress_config *cfg);

/** Starts the acceptor. The caller owns *out. */
int egress_new(const egress_config *cfg, egress **out);

/**
 * Closes every slot and connection and waits for the connection threads
 * to finish (each ends within the decide hook's own bound).
 */
void egress_free(egress *e);

/**
 * Opens a slot listening on 127.0.0.1 on a port of its own, refusing
 * everything until egress_slot_bind. The caller owns *out.
 */
int egress_slot_open(egress *e, egress_slot **out);

/** The slot's port on 127.0.0.1. */
int egress_slot_port(const egress_slot *s);

/** Binds the slot to tag (copied; at most EGRESS_TAG_MAX - 1 bytes). */
void egress_slot_bind(egress_slot *s, const char *tag);

/** How many failed connections a slot remembers (egress_slot_since). */
#define EGRESS_FAILED_KEPT 8

/** A point in a slot's history of connections (egress_slot_mark). */
typedef struct egress_mark {
    uint64_t refused; /* connections the rules refused before it */
    uint64_t failed;  /* connections that failed otherwise before it */
} egress_mark;

/** The slot's history now, for egress_slot_since. */
void egress_slot_mark(egress_slot *s, egress_mark *m);

/**
 * Since mark: returns how many connections of the slot the rules refused,
 * and sets *host_failed to whether a connection to host:port (host as the
 * browser sent it, compared without case) failed for another reason: the
 * name did not resolve, no address answered, the destination refused it.
 * Only the last EGRESS_FAILED_KEPT such failures are remembered. Both are
 * recorded before the browser is answered, so a caller that saw a request
 * fail sees it here.
 *
 * What it is for: telling a navigation the rules refused (a redirect to a
 * refused host; Chromium reports every SOCKS refusal alike) from one whose
 * own server was down while the page it left had requests refused.
 */
uint64_t egress_slot_since(egress_slot *s, const egress_mark *mark, const char *host, int port,
                           int *host_failed);

/** How many refused destinations (host and port) a slot remembers with their reasons. */
#define EGRESS_REFUSED_KEPT 16
/** The bytes of a remembered reason, with its NUL. */
#define EGRESS_WHY_MAX 192

/**
 * The reasons of the last EGRESS_REFUSED_KEPT refused destinations (host
 * and port, hosts compared without case), one place each: a destination
 * refused again gets the new reason in its place, a new one the oldest
 * place. Zeroed is empty. No lock of its own: its owner's (a slot's, the
 * session's network log without the proxy).
 */
typedef struct egress_refusals {
    uint64_t n; /* destinations noted; the next goes at n % EGRESS_REFUSED_KEPT */
    struct {
        int port;
        char host[256]; /* a longer host is not remembered */
        char why[EGRESS_WHY_MAX];
    } at[EGRESS_REFUSED_KEPT];
} egress_refusals;

void egress_refusals_note(egress_refusals *r, const char *host, int port, const char *why);
/** 1 with the reason for host:port in why (cut to whylen), or 0. */
int egress_refusals_find(const egress_refusals *r, const char *host, int port, char *why,
                         size_t whylen);

/**
 * Why the rules last refused a connection of the slot to host:port (host
 * as the browser sent it, compared without case), when it is among the
 * last EGRESS_REFUSED_KEPT destinations refused: 1 with the reason in why,
 * else 0. Recorded before the browser is answered, as egress_slot_since's
 * counts are. What it is for: telling a client which of its page's
 * failed requests the URL policy refused, and why.
 */
int egress_slot_refusal(egress_slot *s, const char *host, int port, char *why, size_t whylen);

/**
 * Stops listening and ends the slot's connections (they see a reset).
 * Accepts NULL. The slot's memory goes when its last connection thread is
 * done; the pointer must not be used after this call.
 */
void egress_slot_close(egress_slot *s);

typedef struct egress_stats {
    int slots;             /* open */
    int conns;             /* connections open now */
    uint64_t accepted;     /* connections accepted */
    uint64_t connected;    /* CONNECT requests that reached their destination */
    uint64_t refused;      /* refused by the rules */
    uint64_t failed;       /* bad handshakes, unresolvable names, unreachable destinations */
    uint64_t over_limit;   /* closed at once: too many connections */
    uint64_t bytes_out;    /* browser to destination */
    uint64_t bytes_in;     /* destination to browser */
} egress_stats;

void egress_get_stats(egress *e, egress_stats *st);

/* ---- lower level, exposed for tests and fuzzers ------------------------ */

/**
 * The SOCKS5 greeting and CONNECT request a connection's thread reads from
 * the browser's socket fd (blocking or not) before deadline_ms (rg_now_ms
 * time), and the answers it owes the browser on the way: the method choice
 * (0x00 no authentication, or 0xff when the browser does not offer it), and a
 * reply for a request it cannot serve (0x07 a command other than CONNECT,
 * 0x08 an unknown address type, 0x01 port 0, an address or name too long
 * for host, or a name that is empty or has a character other than the
 * letters, digits and - . _ : [ ] of a URL host). Reads no further than
 * the request's end.
 *
 * Returns 0 with the destination in host (hostlen bytes, NUL-terminated:
 * the name as sent, or the IPv4 or IPv6 address in text without brackets)
 * and *port (1 to 65535); the caller then owes the browser the reply.
 * Returns -1 when the handshake failed (a broken greeting or request, EOF,
 * an error or the deadline), after any answer above.
 */
int egress_handshake(int fd, char *host, size_t hostlen, int *port, int64_t deadline_ms);

#endif
