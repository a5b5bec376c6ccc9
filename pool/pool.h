/*
 * pool.h - headless Chromium processes and the browser contexts leased from
 * them, one context with one page per session.
 *
 * A pool runs N browsers (each the real Chromium binary, talking DevTools over
 * a pipe, see cdp/cdp.h) and hands out leases: a fresh browser context with
 * one page target, attached as a flattened session. More pages of the
 * context (popups, tabs) are the lease owner's (pool_lease_adopt). Capacity is N browsers
 * times M contexts; when all are taken a lease request waits in a bounded
 * queue, served by turns among its owners (tenants) and in arrival order
 * within each, up to a timeout, then fails with RG_EPOOL and a retry hint.
 *
 * A manager thread owns the processes: it starts browsers, pings them, replaces
 * any that crash or stop answering (telling every lease on it), recycles a
 * browser after a number of contexts (drained first), and reaps children.
 *
 * No orphans: each browser runs under a small guard process; the guard gets a
 * signal when the pool's process dies (or when the pool stops the browser)
 * and then kills Chromium's whole process group at once and reaps it, so no
 * renderer outlives its owner and none is left a zombie. Scratch
 * directories (profile, HOME, log) live under the run directory and are swept
 * at start-up when their owner is gone.
 *
 * Threading: pool_acquire, pool_release and the lease accessors may be called
 * from any thread. Lost-lease callbacks run on the manager thread.
 */
#ifndef POOL_H
#define POOL_H

#include <stdint.h>
#include <sys/types.h>

#include "cdp/cdp.h"

/* Defaults; pool_config holds the values in use (REFGATE_* variables, README.md). */
#define POOL_BROWSERS 2
#define POOL_CONTEXTS_PER_BROWSER 16
#define POOL_QUEUE_MAX 64           /* lease requests waiting at once */
#define POOL_LEASE_TIMEOUT_MS 10000 /* how long a lease request may wait */
#define POOL_START_TIMEOUT_MS 30000 /* browser cold start to first answer */
#define POOL_PING_INTERVAL_MS 2000
#define POOL_PING_TIMEOUT_MS 5000
#define POOL_PING_MISSES 2
#define POOL_CLOSE_GRACE_MS 2000     /* Browser.close before SIGKILL */
#define POOL_RECYCLE_AFTER 200       /* contexts created before a browser is recycled */
#define POOL_RETRY_AFTER_MS 1000     /* hint given with pool_exhausted */
#define POOL_WORK_PER_BROWSER 2      /* parks and restores a browser runs at once */
#define POOL_WARM_PER_BROWSER 1      /* contexts a browser keeps made ahead (pool_set_warm) */
#define POOL_WARM_DELAY_MS 1000      /* from a lease taking a warm context to the next */
#define POOL_WARM_QUIET_MS 250       /* no DevTools call in flight for this long first */
#define POOL_WARM_QUIET_MAX_MS 10000 /* after the delay, made without a quiet moment */
#define POOL_CREATE_TIMEOUT_MS 10000 /* each DevTools call that makes a context */
#define POOL_DISPOSE_TIMEOUT_MS 5000
#define POOL_MEMORY_SAMPLE_MS 1000   /* how often the browsers' PSS is read */
#define POOL_MEMORY_SAMPLE_COST 20   /* a sample waits at least this many times its own cost */
#define POOL_MEMORY_CONTEXT_GUESS (64LL << 20) /* a context's cost before one is measured */
#define POOL_MEMORY_CONTEXT_MIN (8LL << 20)    /* the least a context is taken to cost */
#define POOL_MEMORY_FLOOR (256LL << 20)        /* the least derived default budget */

typedef struct pool pool;
typedef struct pool_lease pool_lease;

typedef struct pool_config {
    const char *chromium_path; /* REFGATE_CHROMIUM [/usr/lib/chromium/chromium] */
    const char *run_dir;       /* REFGATE_RUN_DIR [/tmp/refgate]: profiles, HOME, logs */
    int browsers;              /* REFGATE_BROWSERS [2] */
    int contexts_per_browser;  /* REFGATE_CONTEXTS_PER_BROWSER [16] */
    int queue_max;             /* REFGATE_POOL_QUEUE_MAX [64] lease requests waiting */
    int lease_timeout_ms;      /* REFGATE_POOL_LEASE_TIMEOUT_MS [10000] default wait */
    int start_timeout_ms;      /* cold start to first DevTools answer [30000] */
    int ping_interval_ms;      /* REFGATE_POOL_PING_INTERVAL_MS [2000] */
    int ping_timeout_ms;       /* REFGATE_POOL_PING_TIMEOUT_MS [5000] */
    int ping_misses;           /* REFGATE_POOL_PING_MISSES [2] missed in a row: replaced */
    int close_grace_ms;        /* Browser.close before SIGKILL [2000] */
    int recycle_after;         /* REFGATE_POOL_RECYCLE_AFTER [200] contexts per browser */
    const char *const *extra_args; /* more Chromium flags, NULL-terminated, or NULL */
    size_t max_message_bytes;  /* REFGATE_CDP_MAX_MESSAGE_BYTES [64 MiB] */
    int js_heap_mb;            /* REFGATE_JS_HEAP_MB [1024]: V8's old-space cap per page
                                  (--max-old-space-size): a page that allocates without
                                  end crashes its own renderer there; 0: Chromium's own */
    int64_t memory_max;        /* REFGATE_MEMORY_MAX: bytes the browsers' PSS may reach
                                  before a new context waits; 0: no budget (the count
                                  alone). pool_config_default: 0; pool_config_from_env:
                                  the variable, else pool_memory_default() */
    int memory_sample_ms;      /* REFGATE_MEMORY_SAMPLE_MS [1000]: how often the PSS is read
                                  (by the manager thread, never on a lease's path) */
    int work_per_browser;      /* REFGATE_RESTORES_PER_BROWSER [2]: parks and restores one
                                  browser runs at once (pool_work_begin); 0: no bound */
    int warm_per_browser;      /* REFGATE_WARM_CONTEXTS [1]: contexts each browser keeps made
                                  ahead, with their page, once pool_set_warm is called;
                                  0: none */
    int warm_quiet_ms;         /* REFGATE_WARM_QUIET_MS [250]: a warm context is made once
                                  its browser had no DevTools call in flight for this
                                  long (making one holds the browser about 80 ms, which
                                  a command then would wait), or warm_quiet_max_ms
                                  after the delay anyway; 0: no wait for quiet */
    int warm_quiet_max_ms;     /* how long after the delay a warm context waits for a
                                  quiet browser at most [POOL_WARM_QUIET_MAX_MS] */
} pool_config;

/** Fills cfg with the defaults of common/rg.h. */
void pool_config_default(pool_config *cfg);
/** Overrides fields from the REFGATE_* environment variables named above. */
void pool_config_from_env(pool_config *cfg);

/**
 * The default memory budget of one worker's pool: half the machine's
 * memory (MemTotal, or the container's cgroup memory limit when lower)
 * shared among the workers, and never less than POOL_MEMORY_FLOOR:
 * MemTotal / 2 / workers. The other half is left to the
 * workers themselves, Redis, nginx, the page cache and whatever else runs.
 * 0 when MemTotal cannot be read (no budget).
 */
int64_t pool_memory_default(int workers);

/**
 * Parses a size: bytes, or a number with K, M or G (binary units; "512M",
 * "512MB" and "512MiB" alike). 0, or -1 for anything else.
 */
int pool_parse_size(const char *s, int64_t *out);

/**
 * Sweeps what an earlier, killed owner left in the run directory, starts the
 * browsers and returns once every one answers (or, after start_timeout_ms,
 * once at least one does; the manager keeps trying for the rest). Fails with
 * RG_EUNAVAIL when no browser starts; the reason is logged with the tail of
 * Chromium's log. The caller owns *out.
 *
 * The thread that calls pool_new may exit afterwards: processes are started
 * only by the pool's own manager thread.
 */
int pool_new(const pool_config *cfg, pool **out);

/**
 * Closes every browser (Browser.close, then SIGKILL to its process group
 * after close_grace_ms), reaps them and removes their scratch directories.
 * Leases not yet released are freed here: their pointers die with the pool.
 */
void pool_free(pool *p);

/**
 * Leases a new browser context with one page (about:blank), attached with a
 * flattened session. Waits up to timeout_ms (<= 0: the configured default) in
 * the queue (by turns among owners, pool_lease_opts.owner) when the pool is
 * full. Errors: RG_EPOOL when no capacity came in time or the queue is full
 * (*retry_after_ms, when not NULL, gets a hint), RG_ECRASHED / RG_ETIMEOUT
 * when the browser failed while creating the context and no other one could
 * serve within the time. The caller owns *out
 * and gives it back with pool_release.
 */
int pool_acquire(pool *p, int timeout_ms, pool_lease **out, int *retry_after_ms);

/** What a lease's context is created with (pool_acquire_with). */
typedef struct pool_lease_opts {
    /* Target.createBrowserContext's proxyServer ("socks5://127.0.0.1:PORT")
       and proxyBypassList ("<-loopback>" sends loopback through it too);
       NULL for none. */
    const char *proxy_server;
    const char *proxy_bypass;
    /* Who asks (the tenant), for fair queueing: when the pool is full,
       waiting requests are served by turns among owners, each owner's in
       arrival order, so one owner's burst does not keep another's single
       request waiting behind all of it. NULL: one anonymous owner. */
    const char *owner;
    /* In and out: the request's place in the queue (0: a new one). A caller
       that asks again after a timeout passes back what it got, and keeps
       its place; 0 again once it is served. NULL: none kept. */
    uint64_t *ticket;
    /* 1: the lease is made holding a work slot of its browser (pool_work_begin),
       taken before its context is made, for a restore; it waits for the slot
       up to work_timeout_ms (<= 0: the request's own timeout) after it got a
       context slot. */
    int work;
    int work_timeout_ms;
    /* 1: a warm context (pool_set_warm) may serve the lease, made ahead with
       the proxy its prepare callback gave it; take its token with
       pool_lease_take_token. Its own proxy_server above is then not used. */
    int warm;
} pool_lease_opts;

/** What a warm context is made with: filled by the prepare callback. */
typedef struct pool_warm_opts {
    char proxy_server[64]; /* "" for none */
    char proxy_bypass[32];
} pool_warm_opts;

/**
 * Keeps warm_per_browser contexts per ready browser made ahead (a context
 * with its page, its renderer started) by a thread of the pool, so that a
 * lease with opts.warm skips Target.createBrowserContext, createTarget and
 * the renderer's start. A warm context is never used twice: it is fresh,
 * made for no one, and goes to one lease (then another is made). Before
 * each, prepare(ud, o) fills o and returns a token the pool keeps with the
 * context (the caller's, e.g. the proxy slot the context was pointed at;
 * NULL: make none now); discard(ud, token) is called for a token whose
 * context is dropped unused (its browser died, recycled, or this is called
 * again). A warm context counts against the memory budget but not against
 * contexts_per_browser, and is made only while the budget has room.
 * pool_set_warm(p, NULL, NULL, NULL) stops making them and drops every one,
 * and returns once prepare is not running: call it before what the tokens
 * point at goes away.
 */
void pool_set_warm(pool *p, void *(*prepare)(void *ud, pool_warm_opts *o),
                   void (*discard)(void *ud, void *token), void *ud);

/**
 * The token a warm context came with (pool_set_warm's prepare), now the
 * caller's; NULL when the lease's context was not a warm one or the token
 * was taken already.
 */
void *pool_lease_take_token(pool_lease *l);

/** pool_acquire, with the context created as o says (NULL: as pool_acquire). */
int pool_acquire_with(pool *p, const pool_lease_opts *o, int timeout_ms, pool_lease **out,
                      int *retry_after_ms);

/**
 * 1 when a lease request made now would be served without waiting: nobody
 * is queued, a ready browser is under contexts_per_browser, and one more
 * context fits the memory budget. For a caller that can make room first
 * (the session layer parks a session); the answer may be stale at once.
 */
int pool_has_room(pool *p);

/**
 * Disposes of the lease's browser context (and its pages) and frees its slot
 * for the next request. Accepts NULL and leases whose browser is gone.
 */
void pool_release(pool_lease *l);

/** The DevTools connection of the lease's browser (borrowed until release). */
cdp_conn *pool_lease_conn(pool_lease *l);
/** The flattened session id of the lease's page: pass it to cdp_call. */
const char *pool_lease_session(pool_lease *l);
const char *pool_lease_target(pool_lease *l);
const char *pool_lease_context(pool_lease *l);
/**
 * The guard process of the lease's browser: Chromium and all its processes
 * are its descendants (for diagnostics, tests and benchmarks).
 */
pid_t pool_lease_guard(pool_lease *l);
/** 1 once the lease's browser has died or been replaced; its calls fail then. */
int pool_lease_lost(pool_lease *l);
/**
 * Where the lease's request spent its time: waiting for a slot (the queue,
 * the memory budget), and making the context and its page
 * (Target.createBrowserContext, createTarget, attachToTarget).
 */
void pool_lease_times(const pool_lease *l, int *wait_ms, int *create_ms);

/**
 * New pages of a browser start paused: each is attached with a flattened
 * session and waits for Runtime.runIfWaitingForDebugger. A lease whose owner
 * adopts its context's new pages (on 1) gets them that way, through its own
 * Target.attachedToTarget subscription (browser level), and must set them up
 * and let them run, or close them; the pool lets every other page run at
 * once (the lease's first page included) and detaches from it.
 */
void pool_lease_adopt(pool_lease *l, int on);
/** 1 while the lease adopts its context's new pages (and its browser lives). */
int pool_lease_adopts(pool_lease *l);

/**
 * fn is called once, on the manager thread, when the lease's browser dies
 * (crash, hang, kill); not when the lease is released. If the browser is
 * already gone when this is called, fn is called before it returns.
 */
void pool_lease_on_lost(pool_lease *l, void (*fn)(void *ud, pool_lease *l), void *ud);

typedef struct pool_stats {
    int browsers;         /* processes alive, including ones starting or draining */
    int browsers_ready;   /* accepting leases */
    int contexts_in_use;  /* leases outstanding */
    int queue_depth;      /* lease requests waiting */
    uint64_t restarts;    /* browsers replaced after a crash or a failed ping */
    uint64_t pings_missed; /* health checks that got no answer in time */
    uint64_t recycles;    /* browsers retired after recycle_after contexts */
    uint64_t contexts_created;
    int contexts_max;     /* the hard cap: ready browsers times contexts_per_browser */
    /* The memory budget: the figures admission decides by. */
    int64_t memory_max;          /* the budget in bytes; 0: none */
    int64_t memory_measured;     /* the browsers' PSS at the last sample (bytes; 0: none yet) */
    int64_t memory_estimate;     /* that, corrected by contexts opened or closed since */
    int64_t memory_per_context;  /* what one more context is taken to cost */
    int64_t memory_age_ms;       /* age of the last sample; -1: none yet */
    int64_t memory_sample_us;    /* the CPU time the last sample took the manager thread */
    int memory_procs;            /* processes the last sample counted */
    uint64_t memory_samples;
    uint64_t memory_walks;       /* smaps_rollup files read by all samples (the costly part) */
    /* Lease requests that had to wait, by what was full when they queued. */
    uint64_t waits_memory;       /* a browser had a free slot, the budget did not */
    uint64_t waits_contexts;     /* every ready browser was at contexts_per_browser */
    uint64_t waits_queue;        /* others were queued before it */
    uint64_t waits_browsers;     /* no browser was ready */
    const char *last_wait;       /* "memory", "contexts", "queue", "browsers" or "" (static) */
    int work_busy;               /* work slots held (parks and restores running) */
    int work_queued;             /* parks and restores waiting for one */
    uint64_t work_waits;         /* parks and restores that had to wait for one */
    uint64_t work_timeouts;      /* ... and got none in time */
    int warm_ready;              /* warm contexts made ahead, not yet leased */
    uint64_t warm_made, warm_used; /* made ahead, and leased */
    int64_t last_wait_age_ms;    /* -1: no request waited yet */
} pool_stats;

void pool_get_stats(pool *p, pool_stats *st);

/**
 * The pool's directory for its sessions' files (uploads, downloads):
 * <run_dir>/files-<owner tag>, mode 0700, made by pool_new and removed with
 * everything in it by pool_free; a pool that finds one whose owner is gone
 * (the process died) removes it, as it does the browser directories.
 * Borrowed until pool_free; any thread.
 */
const char *pool_files_dir(const pool *p);

/**
 * Parks and restores are the heavy work of a browser (a renderer started, a
 * page loaded and read, a context disposed of); each takes one of its
 * browser's work slots (work_per_browser), so that a burst of them does not
 * slow every one of them down together. Takes one for l's browser, waiting
 * up to timeout_ms behind earlier requests (first come, first served).
 * 0; RG_EPOOL when none came in time (nothing taken); RG_ECRASHED when the
 * browser is gone. A lease holds at most one (0 at once if it holds one);
 * pool_work_end or pool_release gives it back. Any thread.
 */
int pool_work_begin(pool_lease *l, int timeout_ms);
/** Gives back l's work slot, if it holds one. Accepts NULL. */
void pool_work_end(pool_lease *l);

/** Guard processes of the live browsers; returns how many (at most max). */
int pool_guards(pool *p, pid_t *out, int max);

#endif
