/*
 * fixture.h - the worlds a test program starts in main() before its tests
 * and stops after them: a Chromium pool beside a fixture server, a private
 * Redis with a connection to it, or the whole stack beside a fixture
 * server. Each start says on stderr, after the program's name, what did not
 * start, and leaves nothing running when it fails. Test code only; the pool
 * configuration is shared with the benchmarks.
 */
#ifndef RG_TEST_FIXTURE_H
#define RG_TEST_FIXTURE_H

#include <stddef.h>
#include <stdlib.h>

#include "common/rg.h"
#include "pool/pool.h"
#include "stack.h"
#include "support.h"

/**
 * cmocka's run of a group named name, with the RG_TEST_FILTER pattern (when
 * set) choosing the tests that run. For test programs, after <cmocka.h>.
 */
#define FX_RUN(name, tests, setup, teardown)                                                       \
    (getenv("RG_TEST_FILTER") ? cmocka_set_test_filter(getenv("RG_TEST_FILTER")) : (void)0,        \
     cmocka_run_group_tests_name(name, tests, setup, teardown))

/**
 * A pool configuration as tests and benchmarks use it: the defaults, the
 * REFGATE_* environment on top, one browser, and its run directory
 * /tmp/refgate-<tag>-<pid> written into run_dir (cfg points at it).
 */
void fx_pool_config(pool_config *cfg, const char *tag, char *run_dir, size_t len);

/** 0 when Chromium is there to start (or REFGATE_CHROMIUM names one); else -1 and a line. */
int fx_need_chromium(const char *who);

/* ---- a Chromium pool and a fixture server ---- */

typedef struct fx_browser {
    httpd *pages; /* serves docroot */
    pool *pool;   /* one browser, fx_pool_config's */
    char run_dir[64];
} fx_browser;

/** Starts the fixture server on docroot, then the pool (run directory named by tag). 0 or -1. */
int fx_browser_start(fx_browser *f, const char *who, const char *tag, const char *docroot);
/** Frees the pool, stops the server and removes the (empty) run directory. */
void fx_browser_stop(fx_browser *f);

/* ---- a private Redis ---- */

typedef struct fx_redis {
    redissrv *srv;
    rg_redis *conn; /* refgate's connection to it */
} fx_redis;

/** Starts redis-server (no password) and connects refgate's client to it. 0 or -1. */
int fx_redis_start(fx_redis *f, const char *who);
/** FLUSHALL through a direct connection: every test starts from an empty Redis. 0 or -1. */
int fx_redis_flush(fx_redis *f);
void fx_redis_stop(fx_redis *f);

/* ---- sessions: a Redis, a Chromium pool beside a docroot of pages, the registry's store ---- */

typedef struct fx_sessions {
    fx_redis db;
    fx_browser chrome;       /* serves docroot */
    struct reg_store *store; /* the registry in db (reg_store_redis_new) */
    char docroot[96];        /* /tmp/refgate-<tag>-docs-<pid>, removed at stop */
} fx_sessions;

/** Makes the docroot, starts Redis, the pool beside a server of the docroot, and the store. 0 or -1. */
int fx_sessions_start(fx_sessions *f, const char *who, const char *tag);
/** Writes html as docroot/name (a page the tests then load). 0 or -1. */
int fx_sessions_page(fx_sessions *f, const char *name, const char *html);
/** Frees the store, stops the pool and Redis, and removes the docroot and the run directory. */
void fx_sessions_stop(fx_sessions *f);

/* ---- the whole stack ---- */

typedef struct fx_stack {
    httpd *pages; /* the fixture server the sessions browse */
    stack *st;
    /* "Authorization: Bearer <key>\r\n" of tenant acme (0) and other (1) */
    char auth[2][128];
    char base_url[64]; /* the fixture server's http://127.0.0.1:<port> */
} fx_stack;

/**
 * Starts the fixture server on docroot (NULL: generated pages only), then
 * stack_start(workers, env). 0 or -1.
 */
int fx_stack_start(fx_stack *f, const char *who, const char *docroot, int workers,
                   const char *const *env);
void fx_stack_stop(fx_stack *f);

#endif
