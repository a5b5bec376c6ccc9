/*
 * client.h - the msgpack HTTP client of the benchmarks that go through
 * nginx (bench/gateway.c, bench/loop.c): commands on kept-alive connections
 * to one stack (tests/support/stack.c), sessions opened and closed, refs read
 * from an outline as an agent reads them, and the statistics both print.
 * Bench code only. One stack per process: gwc_init before anything else.
 */
#ifndef RG_BENCH_CLIENT_H
#define RG_BENCH_CLIENT_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "tests/support/net.h"
#include "tests/support/stack.h"

/* nginx closes a client connection after 1,000 requests: open a new one first. */
#define CONN_REQUESTS 500

/* One item added to a page, the same for every side that measures an observe
 * after it (bench/observe.c, bench/gateway.c, bench/peer/observe.mjs has it
 * too): a list item with a link at the end of the first list of the first
 * section (or of the body). An expression that evaluates to true. */
#define BENCH_ADD_ITEM_JS                                                                          \
    "(function(){var s=document.querySelector('main section')||document.body;"                     \
    "var u=s.querySelector('ul,ol')||s;var li=document.createElement(u===s?'div':'li');"           \
    "li.innerHTML='<a href=\\\"#added\\\">Added item</a>';u.appendChild(li);return true})()"

/** The stack every call goes to, and the default tenant's Authorization header line. */
extern stack *gwc_st;
extern char gwc_auth[160];

/** Sets the stack, its first tenant's key, and the name that prefixes diagnostics. */
void gwc_init(stack *st, const char *who);

/** The p-quantile (0..1) of n values, nearest rank; sorts v. 0 for n = 0. */
double gwc_pct(double *v, int n, double p);
/** min, median (nearest rank, as gwc_pct) and max of n values as a JSON member; sorts v. */
void gwc_print_mmm(const char *key, double *v, int n);

/**
 * One command (a cJSON map, borrowed) in msgpack on the kept-alive
 * connection *fd, with the Authorization line who, reconnecting when it was
 * closed under us. On 200 with ok:true returns 0 and, when reply is not
 * NULL, the decoded reply (caller owns). bytes gets the reply body's size,
 * ms the client-side time; either may be NULL.
 */
int gwc_call(const char *who, int *fd, const char *sid, const cJSON *cmd, cJSON **reply,
             size_t *bytes, double *ms);
/**
 * One JSON command (body) as the stack's first tenant on the kept-alive *fd,
 * reconnecting when it was closed under us: the decoded reply (caller frees)
 * or NULL when there was none. *ok: 200 with ok:true; status (may be NULL)
 * the HTTP status, 0 without a reply; ms (may be NULL) the client-side time.
 */
cJSON *gwc_call_json(int *fd, const char *sid, const char *body, int *ok, int *status, double *ms);
/**
 * Before the i-th request on *fd: every CONN_REQUESTS requests, a new
 * connection, so that nginx's keepalive_requests never closes one under a
 * timed request (a client would retry that request; a bench would count it).
 */
void gwc_renew_conn(int *fd, int i);
/** {"op": op} with an args map the caller may fill (args may be NULL); caller owns. */
cJSON *gwc_op_new(const char *op, cJSON **args);
/** reply.result[key] when it is a string, else NULL. */
const char *gwc_result_str(const cJSON *reply, const char *key);
/**
 * The ref on the first line of an observe outline that contains `line` (for
 * example `button "Target"`), into out; 0, or -1 when there is none.
 */
int gwc_find_ref(const char *text, const char *line, char *out, size_t len);
/** session.create (on url when not NULL) as who; the id into sid (64 bytes). 0 or -1. */
int gwc_create_as(const char *who, const char *url, char *sid);
int gwc_create(const char *url, char *sid);
void gwc_close_session(const char *sid);
/** An observe (diff or not); the outline's text into *text (caller frees) when asked. */
int gwc_observe(int *fd, const char *sid, int diff, char **text, size_t *bytes, double *ms);

#endif
