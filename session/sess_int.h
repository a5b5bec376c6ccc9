/*
 * sess_int.h - private to session/: the session and manager structures and
 * the functions the module's files share. The files, lowest first:
 *
 *   call.c       the one way to the page on a session's lease (sess_call...)
 *   nav.c        navigation: go to a URL, back, forward, reload; where it is
 *   intercept.c  every request of the page through the URL policy
 *   events.c     DevTools event handlers (dialogs, popups, crashes, reports)
 *   files.c      the scratch directory: uploads, downloads (events.c hands it
 *                the download events; lease.c clears it with the context)
 *   park.c       options, capture, msgpack of the parked state, rebuild
 *   quota.c      the tenant's session quota in Redis
 *   lease.c      ownership: the Redis lease scripts, the context's lease,
 *                checkpoints, parking, the heartbeat (and its freezing of
 *                idle pages), the takeover
 *   session.c    the table, the per-session FIFO and the lifecycle
 *                (create, open, done, close, info, list, the manager)
 *
 * A file calls only the files above it, with one loop the design needs:
 * session.c calls lease.c to take a session over, checkpoint and let go of
 * it, and lease.c's heartbeat and parks (the module's own background loop)
 * take idle sessions through session.c's FIFO (sess_hold_locked and kin); a
 * frozen session is woken by session.c when a command takes it, and by the
 * park that takes it.
 *
 * Threading: a session's fields below "Owned by the holder" are touched only
 * by the thread that holds it (sess_hold_locked / sess_unhold_locked); the
 * rest by m->mu or atomics as marked. Event handlers run on the browser's
 * reader thread (events.c, intercept.c).
 */
#ifndef SESS_INT_H
#define SESS_INT_H

#include <pthread.h>

#include "session/session.h"

struct sess_waiter {
    pthread_cond_t cv;
    int granted;
    struct sess_waiter *next;
};

struct sess {
    sess_mgr *m;
    char tenant[SESS_TENANT_MAX];
    char id[SESS_ID_MAX];
    char tag[SESS_TENANT_MAX + SESS_ID_MAX + 16];     /* {t:<tenant>:s:<sid>} */
    char page_key[SESS_TENANT_MAX + SESS_ID_MAX + 32]; /* <tag>:main */

    /* Guarded by m->mu. */
    int busy;                      /* a command (or the heartbeat) holds it */
    struct sess_waiter *qhead, *qtail;
    int refs;                      /* holders, waiters and heartbeat snapshots */
    int in_table;
    int live;                      /* holds a context here and owns the lease */
    int want_park;                 /* another worker asked, or the lease was lost */
    int frozen;                    /* its page is frozen (the heartbeat froze it; not woken) */
    int no_freeze;                 /* a freeze failed: not tried again before the next command */
    int64_t last_used_ms;
    int64_t restored_ms;           /* when a restore here made it live; 0: never (victim.c) */
    int judged;                    /* loses is known: judged since the last command that
                                      may have changed the page (victim.c) */
    int loses;                     /* what a park would lose: SESS_LOSES_* bits */
    sess *next;

    /* Owned by the holder. */
    pool_lease *lease;
    egress_slot *egress;           /* the context's way out, with the lease */
    reg_page *reg;
    int width, height;
    char *user_agent, *locale, *timezone;
    int page_enabled;
    int window_id;                 /* the page's window (Browser.getWindowForTarget) when frozen */
    int sub;                       /* the page-event subscription, 0 when none */
    int popup_sub;                 /* the browser-level one that closes popups */
    int crash_sub;                 /* the browser-level one that sees the renderer crash */
    reg_world *world;              /* the observer's isolated world in the page, with the lease */
    int64_t created_ms;
    int64_t last_full_ms;          /* last capture of cookies and storage */
    uint64_t last_ckpt;            /* hash of the URL, title and scroll last written */
    /* What the last checkpoint wrote, while no event says the page moved on. */
    unsigned page_gen;             /* atomic: bumped by navigations and title changes */
    unsigned ckpt_gen;             /* page_gen when ckpt_* were captured */
    int ckpt_valid;
    char *ckpt_url, *ckpt_title, *ckpt_origin;
    double ckpt_sx, ckpt_sy;
    int has_hint;                  /* the command reported the scroll (sess_note_scroll) */
    double hint_sx, hint_sy;
    int info_sub;                  /* Target.targetInfoChanged: the title or URL changed */
    int lost;                      /* atomic: the browser died under the lease */
    int checks;                    /* URL checks in flight (guarded by m->mu) */
    struct sess_files *files;      /* uploads and downloads (files.c; its own mutex) */
    /* The live view (cast.c). */
    int cast_on;                   /* the page streams (the holder sets it, under m->mu) */
    cdp_conn *cast_conn;           /* where acks go; guarded by cast.c's lock */
    char cast_page[64];            /* the page's DevTools session id, for acks */
    sess_cast_opts cast_opts;      /* what the stream was started with (the holder's) */
};

struct sess_mgr {
    sess_config cfg;
    char worker[64];
    pool *pool;
    rg_redis *redis;
    reg_store *store;
    pthread_mutex_t mu;
    pthread_cond_t hb_cv;
    sess *table;
    int n_live;
    int stopping;
    pthread_t hb;
    sess_stats stats;
    struct sess_checkers *checkers;
    egress *egress;                /* NULL without cfg.connect_check */
    pthread_cond_t checks_cv;
};

/* How long one page call waits unless the command says otherwise. */
#define SESS_CALL_TIMEOUT_MS 10000

struct redisReply;

/* ---- call.c: the page on s's lease (RG_ECRASHED without one) ---- */

/** Calls method on s's page, waiting up to timeout_ms (holder; never on the reader thread). */
int sess_call(sess *s, const char *method, const char *params, int timeout_ms, cdp_reply *out);
/** Sends method to s's page without waiting; the reply is dropped (any thread). */
int sess_call_async(sess *s, const char *method, const char *params, int timeout_ms);
/** Calls method on s's browser (no session id: contexts, cookies, targets, permissions). */
int sess_browser_call(sess *s, const char *method, const char *params, int timeout_ms,
                      cdp_reply *out);
/** sess_browser_call without waiting; the reply is dropped (any thread). */
int sess_browser_call_async(sess *s, const char *method, const char *params, int timeout_ms);
/** A one-shot wait for event on s's page, made before what causes it (cdp_waiter_new). */
int sess_page_waiter(sess *s, const char *event, cdp_waiter **out);
/** Evaluates expr (which returns a JSON string) in the page and parses it into *out. */
int sess_eval_json(sess *s, const char *expr, int timeout_ms, cJSON **out);
/** A copy of o's string member k ("" when absent); NULL only without memory. */
char *sess_json_dup(const cJSON *o, const char *k);

/* ---- nav.c ---- */

/** Page.enable, once per lease (its events: loads, dialogs, navigations). */
int sess_enable_page(sess *s);

/* ---- intercept.c ---- */

/** Starts the URL checker threads (when cfg.url_check is set). */
int sess_checkers_start(sess_mgr *m);
void sess_checkers_stop(sess_mgr *m);
/** Fetch.requestPaused of s's page (reader thread). */
void sess_on_request_paused(sess *s, const cJSON *params);
/** Waits until s has no URL check in flight. */
void sess_checks_drain(sess *s);
/** Pauses every request of s's page for the URL policy. */
int sess_intercept(sess *s);

/* ---- events.c: handlers on the reader thread ---- */

/** Subscribes s's handlers to its fresh lease's page and browser (the holder's). */
void sess_events_bind(sess *s);
/** Ends those subscriptions (waiting for a handler in progress) before the lease goes. */
void sess_events_unbind(sess *s);

/* ---- files.c: the session's scratch directory ---- */

/** The files state of a new session; NULL without memory. */
struct sess_files *sess_files_new(void);
void sess_files_free(struct sess_files *f);
/**
 * Sets the fresh context's download behaviour: into the session's dl/
 * directory when cfg.downloads_allowed says so, else refused; either way
 * the page's download events reach sess_files_on_event.
 */
int sess_files_lock_down(sess *s);
/** Page.downloadWillBegin / Page.downloadProgress of s's page (reader thread). */
void sess_files_on_event(sess *s, const char *method, const cJSON *params);
/** Forgets every file: the directory removed, the counts and the list emptied (holder). */
void sess_files_clear(sess *s);

/* ---- park.c ---- */

/** Sets s's viewport (0 or less: 1280 x 800) and options (copied; NULL or "": none). */
void sess_set_options(sess *s, int width, int height, const char *user_agent, const char *locale,
                      const char *tz);
/** Applies viewport, user agent, locale and timezone to the page. */
int sess_apply_options(sess *s);

/** What a capture read from the page. */
typedef struct sess_capture {
    char *url, *title, *origin;
    double sx, sy;
    char *cookies;       /* JSON array of cookie params, or NULL */
    char *ls, *ss;       /* JSON objects, or NULL */
    char *form;          /* reg_state_capture's JSON: typed fields, focus, scrolled boxes; or NULL */
} sess_capture;

void sess_capture_free(sess_capture *c);
/**
 * Reads URL, title and scroll; with full, cookies, the origin's storage and
 * what a reload loses (reg_state_capture, for the refs of the last
 * observation) too.
 */
int sess_capture_page(sess *s, int full, sess_capture *c);
/** The parked state as one msgpack value (caller frees *out). */
int sess_pack(const sess *s, const sess_capture *c, char **out, size_t *len);
int sess_unpack(const char *buf, size_t len, sess_capture *c);

/**
 * Rebuilds the page on s's fresh lease: cookies, storage before the page's
 * scripts, the URL, scroll, then one observation that re-binds the registry.
 */
int sess_rebuild(sess *s, const char *url, double sx, double sy, const sess_capture *parked,
                 sess_restore_info *ri, char *err, size_t errlen);

/* ---- victim.c: which live session a park for room takes ---- */

#define SESS_LOSES_FIELDS 1       /* a field edited since load (reg_state_edited) */
#define SESS_LOSES_BEFOREUNLOAD 2 /* the page has a beforeunload handler */
#define SESS_JUDGE_PER_BEAT 4     /* judgements a heartbeat makes at most, freezes aside */

/**
 * Judges what parking s (held, live, awake) would lose: fields edited since
 * load and a beforeunload handler, into s->loses (s->judged set). A page
 * that does not answer is taken to lose both.
 */
void sess_judge(sess *s);
/** s's page may have changed (a command that was not read-only): judge it again. */
void sess_unjudge_locked(sess *s);
/**
 * The live, idle session of m (other than except) a park for room should
 * take, or NULL (m->mu held): by tier, then least recently used. Tiers,
 * first to go first: judged to lose nothing; losing something or not
 * judged; restored here less than min_live_ms ago. *tier gets the tier.
 */
sess *sess_victim_locked(sess_mgr *m, const sess *except, int64_t now, int *tier);

/* ---- cast.c: the live view's screencast ---- */

/** The holder starts or stops s's screencast as cfg.cast_wanted says (when live here). */
void sess_cast_apply(sess *s);
/** Page.screencastFrame on the reader thread: to on_event, or acked at once. */
void sess_cast_frame(sess *s, const cJSON *params);
/** The lease is going: acks have nowhere to go (before the lease is released). */
void sess_cast_unbind(sess *s);

/* ---- quota.c ---- */

/** rg:t:<tenant>:quota, the set of the tenant's sessions the quota counts. */
void sess_quota_key(char *out, size_t len, const char *tenant);
/** rg:{t:<tenant>:s:<sid>}:new, the marker of a create in progress. */
void sess_new_key(char *out, size_t len, const char *tenant, const char *sid);
/**
 * Reserves one of tenant's max sessions for sid, for a create that takes at
 * most ttl_ms (past it the reservation lapses and sess_write_new refuses).
 * 0; RG_EQUOTA with *have the tenant's sessions (creates in progress
 * included); RG_EUNAVAIL. Nothing stays reserved after an error.
 */
int sess_quota_reserve(sess_mgr *m, const char *tenant, const char *sid, int max, int64_t ttl_ms,
                       size_t *have);
/**
 * The create of sid is written (its marker consumed): its member is next
 * looked at when the session's keys can first expire; best effort.
 */
void sess_quota_commit(sess_mgr *m, const char *tenant, const char *sid);
/** Gives sid's reservation back at once (its create failed); best effort. */
void sess_quota_release(sess_mgr *m, const char *tenant, const char *sid);
/** How many sessions the quota counts for tenant, dead members dropped first. */
int sess_quota_count(sess_mgr *m, const char *tenant, size_t *n);

/* ---- lease.c: ownership (s held by the caller unless said otherwise) ---- */

/** rg:<tag>:<kind>, one of s's keys (kind: meta, lease, park, want). */
void sess_key(char *out, size_t len, const sess *s, const char *kind);
/** rg:t:<tenant>:sessions, the tenant's listing. */
void sess_index_key(char *out, size_t len, const char *tenant);
/** A field of an HGETALL reply: its string ("" when absent), or that as a number. */
const char *sess_hash_str(const struct redisReply *h, const char *name);
double sess_hash_num(const struct redisReply *h, const char *name);

/** Leases a context for s (parking an idle session first when the pool is full). */
int sess_lease_context(sess *s, int timeout_ms, char *err, size_t errlen);
/** Watches s's fresh lease (events.c) and opens its registry page. */
int sess_bind_lease(sess *s);
/** Lets go of s's context: subscriptions, URL checks, world, pool lease, egress slot. */
void sess_release_local(sess *s);
/** Forgets s's local context and marks it not live (the browser died, or it moved). */
void sess_drop_local(sess *s);
/** What the last checkpoint wrote is no longer known (a new lease, a restore, a drop). */
void sess_forget_ckpt(sess *s);
/** Writes the new session's meta, lease and listing (consuming a quota marker when reserved). */
int sess_write_new(sess *s, int reserved);
/** The checkpoint sess_done writes: none when full < 0 or the session is not live here. */
void sess_checkpoint(sess *s, int full);
/** Parks the least recently used idle live session other than except (takes it itself). */
int sess_park_lru(sess_mgr *m, const sess *except);
/** Makes s (held, not live) live here: claims it, then rebuilds it unless rebuild is 0. */
int sess_take_over(sess *s, int timeout_ms, int rebuild, sess_restore_info *ri, char *err,
                   size_t errlen);
/**
 * Wakes s's page if the heartbeat froze it (Page.setWebLifecycleState
 * active), before anything else touches the page. 0 when it runs (or never
 * slept); the call's error when the page did not answer.
 */
int sess_wake(sess *s);
/** The heartbeat thread's body (arg: the manager): leases, park requests, freezes, idle parks. */
void *sess_heartbeat_main(void *arg);

/* ---- session.c: the per-session FIFO, all with m->mu held ---- */

/** Waits until s is the caller's (who took a reference), in arrival order. 0 or RG_ECONFLICT. */
int sess_hold_locked(sess_mgr *m, sess *s, int timeout_ms);
/** Lets the next holder in and drops the caller's reference. */
void sess_unhold_locked(sess_mgr *m, sess *s);
/** Takes s, reference included, only if it is live and nobody holds or awaits it. */
int sess_hold_idle_locked(sess *s);
/** Drops a reference; frees s once it left the table and nobody has it. */
void sess_unref_locked(sess_mgr *m, sess *s);

#endif
