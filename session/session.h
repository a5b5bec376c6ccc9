/*
 * session.h - sessions whose state lives in Redis: a session is one browser
 * context with its tabs (popups and tab.new, up to tabs_max; one of them
 * active), leased from this worker's pool while it is live,
 * and a set of Redis keys that let any worker rebuild it after a park, a
 * crash or the death of the worker that held it.
 *
 * Redis data model (docs/architecture.md), all keys of a session under one hash tag:
 *   rg:{t:<tenant>:s:<sid>}:meta       hash   state (live/parked), owner, url,
 *                                             title, scroll, options, times,
 *                                             frozen (1 while its owner froze it)
 *   rg:{t:<tenant>:s:<sid>}:lease      string the owning worker's id, with a TTL
 *                                             it refreshes by heartbeat
 *   rg:{t:<tenant>:s:<sid>}:want       string another worker asks the owner to park
 *   rg:{t:<tenant>:s:<sid>}:park       string msgpack: cookies, storage, url,
 *                                             viewport, scroll, every tab's id,
 *                                             url and scroll (the last capture)
 *   rg:{t:<tenant>:s:<sid>}:reg:main   the first tab's registry (registry/);
 *                                      reg:t2, reg:t3... the other tabs'
 *   rg:{t:<tenant>:s:<sid>}:new        string a create in progress (its quota reservation)
 *   rg:t:<tenant>:sessions             zset   sid -> created (listing)
 *   rg:t:<tenant>:quota                zset   sid -> next check (the quota's count; quota.c)
 * Every key of a session expires after the dormant TTL without use.
 *
 * Ownership: a worker owns a live session while the lease key holds its id.
 * A heartbeat thread refreshes the leases of the sessions a worker holds;
 * a worker that dies stops owning them within lease_ms, and the next command
 * anywhere restores the session from its last checkpoint. A worker that
 * wants a session another live worker holds sets `want`; the owner parks it
 * at its next heartbeat, and the requester restores it.
 *
 * Tiers: a live session unused for freeze_idle_ms is frozen by the
 * heartbeat (Page.setWebLifecycleState frozen: its timers and rendering
 * stop, it keeps its memory and its JavaScript state) and woken by its next
 * command before that command touches the page; one unused for
 * idle_park_ms is parked (its context freed, restored by a reload).
 *
 * Commands on one session run one at a time in arrival order (sess_open
 * queues FIFO); different sessions run in parallel.
 *
 * Dependencies: pool/ (leases), registry/ (refs), cdp/, common/.
 */
#ifndef SESSION_H
#define SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "common/rg.h"
#include "egress/egress.h"
#include "pool/pool.h"
#include "registry/registry.h"

#define SESS_ID_MAX 40
#define SESS_TENANT_MAX 64
#define SESS_PAGE "main" /* the registry page of a session's first tab (t1) */
#define SESS_TABS_MAX 8   /* REFGATE_TABS_MAX: tabs a session holds at most */

/** A screencast's settings (Page.startScreencast). */
typedef struct sess_cast_opts {
    char format[8]; /* "jpeg" or "png" */
    int quality;    /* 0..100, jpeg only */
    int max_width, max_height;
} sess_cast_opts;

typedef struct sess_config {
    const char *worker_id;       /* REFGATE_WORKER_ID [w<pid>] */
    int worker_index, workers;   /* REFGATE_WORKER_INDEX (1-based), REFGATE_WORKERS: this
                                    worker's place behind nginx, so new session ids hash
                                    back to it; 0 when unknown */
    int lease_ms;                /* REFGATE_SESSION_LEASE_MS [5000] */
    int heartbeat_ms;            /* lease_ms / 5 */
    int64_t dormant_ttl_ms;      /* REFGATE_DORMANT_TTL_S [86400] */
    int64_t freeze_idle_ms;      /* REFGATE_FREEZE_IDLE_MS [30000]: a live session unused
                                    this long is frozen (timers and rendering stop) until
                                    its next command; 0 never */
    int64_t idle_park_ms;        /* REFGATE_IDLE_PARK_S [300]; 0 never */
    int park_lru;                /* REFGATE_PARK_LRU [1]: park the least recently used
                                    idle session when the pool is full (victim.c: the one
                                    that loses least first) */
    int64_t min_live_ms;         /* REFGATE_PARK_MIN_LIVE_MS [5000]: a session restored
                                    here less than this ago is parked for room only when
                                    no other idle live session can go; 0: no such bound */
    int64_t full_checkpoint_ms;  /* REFGATE_CHECKPOINT_FULL_MS [5000]: cookies and storage
                                    are captured after a navigation, and after other
                                    commands at most this often */
    size_t park_max_bytes;       /* REFGATE_PARK_MAX_BYTES [8 MiB]: storage beyond it is
                                    not kept (cookies, URL and scroll always are) */
    int park_wait_replicas;      /* REFGATE_PARK_WAIT_REPLICAS [0]: a park waits (WAIT) for
                                    this many replicas to hold it; 0: no wait */
    int park_wait_timeout_ms;    /* REFGATE_PARK_WAIT_TIMEOUT_MS [200]: how long; a park not
                                    acknowledged in time stands, counted and logged */
    int capacity;                /* live sessions this worker holds at most [pool size] */
    int warm;                    /* lease warm contexts: the pool makes contexts ahead
                                    (pool_set_warm), each pointed at an egress slot of
                                    this manager, so that a restore or a create skips
                                    making one. Only for the one manager of a pool.
                                    sess_config_default: 0; sess_config_from_env: 1 unless
                                    REFGATE_WARM_CONTEXTS=0 */
    size_t upload_file_max;      /* REFGATE_UPLOAD_FILE_MAX [10 MiB]: bytes of one uploaded file */
    size_t upload_session_max;   /* REFGATE_UPLOAD_SESSION_MAX [50 MiB]: uploaded bytes a live
                                    session holds at once */
    size_t download_session_max; /* REFGATE_DOWNLOAD_SESSION_MAX [50 MiB]: downloaded bytes a
                                    live session holds at once */
    /**
     * May the tenant's pages download files? Asked on the holder's thread
     * each time a session gets a context (create, restore); it may block
     * (Redis). 1 yes; 0 no, also when it cannot tell. NULL: never.
     */
    int (*downloads_allowed)(void *ud, const char *tenant);
    void *downloads_ud;
    int tabs_max;                /* REFGATE_TABS_MAX [8]: tabs a session holds at most (1 to
                                    64); a popup past it is closed before it runs */
    reg_config reg;
    /**
     * Page events of live sessions: kind "navigation" {url, tab}, "console"
     * {type, text, tab}, "dialog" {type, message, dismissed, tab} (dialogs
     * are always dismissed, so a page never blocks on one), "tab" {state
     * (opened, closed), tab, url, opener; reason "limit" for a popup closed
     * past tabs_max}. Called on the browser's
     * reader thread: be quick; data is the callee's. NULL: not reported.
     */
    void (*on_event)(void *ud, const char *tenant, const char *sid, const char *kind,
                     cJSON *data);
    /* ... and "download" {id, name, state: started/done/refused, bytes} (files.c). */
    void *event_ud;
    /**
     * The tenant's URL policy, asked for every request a live session's page
     * makes (and by sess_check_url): 0 to allow, RG_EBLOCKEDURL (or
     * RG_EBADREQ) with a reason in why to refuse, RG_EUNAVAIL when the
     * policy cannot be read (the request is refused all the same, and a
     * navigation fails with unavailable, not blocked_url). With may_block 0 it must
     * not wait (the DevTools reader thread asks) and answers 1 when it needs
     * DNS; it is then asked again, may_block 1, on a checker thread. NULL:
     * every request goes through.
     */
    int (*url_check)(void *ud, const char *tenant, const char *url, int may_block, char *why,
                     size_t whylen);
    void *url_ud;
    /**
     * The tenant's rules for connections. When set, every session's browser
     * context goes out through the egress proxy (egress/egress.h), on a port
     * of its own bound to the session's tenant, loopback included, and each
     * TCP connection its pages open (WebSocket, everything url_check cannot
     * see) is decided here; the proxy connects only to the
     * addresses this returns. Called on the proxy's connection threads, with
     * the tenant as tag and connect_ud as ud. NULL: no proxy.
     */
    egress_decide_fn connect_check;
    void *connect_ud;
    /**
     * The live view (cast.c): does anyone watch the session, and how? 1 with
     * *o filled when its page should stream a screencast, 0 when not. Asked
     * by the holder (sess_cast_sync, and at the end of every command so that a
     * restored page streams again); must not block. NULL: never.
     * Frames reach on_event as kind "frame" {data (the image, base64),
     * width, height (the page's viewport in CSS pixels), ts (ms), ack}; each
     * needs one sess_cast_ack with its ack once sent or given up.
     */
    int (*cast_wanted)(void *ud, const char *tenant, const char *sid, struct sess_cast_opts *o);
    void *cast_ud;
} sess_config;

void sess_config_default(sess_config *cfg);
/**
 * The worker (0-based of w1..wn) nginx's routing sends sid to when all are
 * up (route.c, the layout scripts/nginx-conf.sh renders).
 */
int sess_id_worker(const char *sid, int n);
/** The bucket (0..199) of nginx's split_clients that key falls in. */
int sess_route_bucket(const char *key);
/** The owner (0-based of w1..wn) of a bucket: the highest rendezvous score. */
int sess_route_owner(int bucket, int n);
void sess_config_from_env(sess_config *cfg);

typedef struct sess_mgr sess_mgr;
typedef struct sess sess;

/**
 * A worker's sessions. pool, redis and store are borrowed and outlive the
 * manager; store must be a Redis store for sessions to move between workers.
 * Starts the heartbeat thread (leases, park requests, freezing, idle parking).
 */
int sess_mgr_new(const sess_config *cfg, pool *p, rg_redis *redis, reg_store *store,
                 sess_mgr **out);
/**
 * Stops the heartbeat and frees the manager. Live sessions are not parked
 * (sess_park_all first for a clean shutdown): their leases expire and they
 * restore from their checkpoints elsewhere.
 */
void sess_mgr_free(sess_mgr *m);
/** Parks every live session of this worker (SIGTERM). Returns how many failed. */
int sess_park_all(sess_mgr *m);

typedef struct sess_options {
    int width, height;        /* viewport [1280 x 800] */
    const char *user_agent;   /* NULL: the browser's */
    const char *locale;       /* "de-DE" */
    const char *timezone;     /* "Europe/Berlin" */
    int quota;                /* > 0: the tenant may have at most this many sessions
                                 (live, parked and being created, across every worker);
                                 0: no quota */
    const cJSON *state;       /* NULL, or a storage state (sess_state_check'ed) to start
                                 from: its cookies and origins' localStorage (state.c) */
} sess_options;

/**
 * Checks a storage state in Playwright's storageState shape ({cookies:
 * [{name, value, domain, path, expires, httpOnly, secure, sameSite} or with
 * url], origins: [{origin, localStorage: [{name, value}]}]}) before a
 * session is made from it: 0, or RG_EBADREQ with a sentence in err. Keys of
 * a cookie or an origin other than those are ignored (Playwright's files
 * may carry more); at most 3,000 cookies and 16 origins.
 */
int sess_state_check(const cJSON *state, char *err, size_t errlen);
/**
 * The held session's storage state, in that shape (*out owned): every
 * cookie of its context, and the localStorage of each open tab's top
 * document's origin. RG_ECRASHED and the like when the browser cannot tell.
 */
int sess_state_get(sess *s, cJSON **out);
/**
 * The held session's cookies, each as sess_state_get gives them (*out: an
 * array, owned): every cookie of its context; with urls (an array of at most
 * 50 strings, or NULL) those the browser would send to one of them; with
 * name (or NULL) that name's only. RG_EBADREQ with err for URLs the browser
 * refuses.
 */
int sess_cookies_get(sess *s, const cJSON *urls, const char *name, cJSON **out, char *err,
                     size_t errlen);
/**
 * One cookie into the held session's context, from the cookies.set op's
 * args {name, value, url, domain, path, expires (Unix seconds; absent or not
 * above 0: a session cookie), http_only, secure, same_site}, their types
 * checked by the caller. Without url or domain, for the active tab's origin.
 * RG_EBADREQ with err for a cookie the browser will not take.
 */
int sess_cookie_set(sess *s, const cJSON *args, char *err, size_t errlen);
/**
 * Deletes the held session's cookies whose name, domain and path are those
 * given (each NULL: any), counting them into *n; with none given, all.
 */
int sess_cookies_clear(sess *s, const char *name, const char *domain, const char *path, int *n);
/**
 * The held session's active tab's top document's localStorage (kind
 * "local") or sessionStorage ("session"): op "get" answers {origin, items:
 * [{name, value}]} (key's item only when key is not NULL), "set" puts key's
 * value and answers {origin}, "clear" removes key (NULL: every item) and
 * answers {origin, cleared}. *out owned. RG_EBADREQ with err for another
 * kind, a page without storage of its own (about:blank) or a storage that
 * refused (its quota).
 */
int sess_storage(sess *s, const char *kind, const char *op, const char *key, const char *value,
                 cJSON **out, char *err, size_t errlen);

/**
 * Creates a session for tenant: a fresh context from the pool (parking the
 * least recently used idle session when the pool is full), its options
 * applied, its state in Redis. On success *out is held for the caller (as
 * after sess_open): run the first command (navigate), then sess_done.
 * With o->quota, a slot of the tenant's quota is reserved in Redis before
 * anything else (one atomic script) and given back if the create fails:
 * RG_EQUOTA when the tenant already has o->quota sessions; a create that
 * outlives timeout_ms + RG_QUOTA_GRACE_MS fails with RG_ETIMEOUT, leaving
 * nothing behind.
 */
int sess_create(sess_mgr *m, const char *tenant, const sess_options *o, int timeout_ms,
                sess **out, char *err, size_t errlen);

/* Where a restore's time goes (sess_restore_info.ms, sess_stats.restore_ms), in order. */
enum {
    SESS_RS_CLAIM,   /* the Redis claim, with any wait for another worker to let go */
    SESS_RS_ROOM,    /* parking other sessions to make room for it */
    SESS_RS_QUEUE,   /* waiting for a context (the pool's queue, the memory budget) and
                        for a work slot of its browser (REFGATE_RESTORES_PER_BROWSER) */
    SESS_RS_CONTEXT, /* making the context and its page (or taking a warm one) */
    SESS_RS_SETUP,   /* events, tabs, options, the observer's world, the lock-down */
    SESS_RS_STATE,   /* cookies and the storage script */
    SESS_RS_NAV,     /* loading the page, and its scroll */
    SESS_RS_OBSERVE, /* the observation that re-binds the refs */
    SESS_RS_FIELDS,  /* typed fields, focus, scrolled boxes put back */
    SESS_RS_TABS,    /* the other tabs */
    SESS_RS_PHASES
};

typedef struct sess_restore_info {
    int restored;        /* the command found the session parked (or orphaned) and rebuilt it */
    int reloaded;        /* the page was loaded again (its JavaScript state is new) */
    size_t refs_kept, refs_lost;
    size_t fields_restored, fields_lost; /* typed fields put back, or whose ref is gone */
    int parks;                /* sessions parked to make room for it */
    int ms[SESS_RS_PHASES];   /* milliseconds in each phase (SESS_RS_*) */
} sess_restore_info;

/** The name of a restore phase (SESS_RS_*), for logs and /metrics. */
const char *sess_restore_phase(int phase);

/**
 * Takes the session for one command, in arrival order, waiting up to
 * timeout_ms behind the commands before it. A session live on this worker
 * is used as it is; a parked one, or one whose worker or browser died, is
 * restored here; one held by another live worker is asked to park and then
 * restored here. Errors: RG_ENOTFOUND (no such session for this tenant),
 * RG_ECONFLICT (still queued, or the other worker did not let go, at the
 * timeout), RG_EUNAVAIL (Redis), RG_EPOOL, and restore's errors.
 */
int sess_open(sess_mgr *m, const char *tenant, const char *sid, int timeout_ms, sess **out,
              sess_restore_info *ri, char *err, size_t errlen);

/**
 * Takes the session like sess_open, but without rebuilding it when it is not
 * live here (for closing a parked session). Only sess_close and sess_done
 * make sense on the result.
 */
int sess_claim(sess_mgr *m, const char *tenant, const char *sid, int timeout_ms, sess **out,
               char *err, size_t errlen);

/**
 * Ends a command: checkpoints the URL and scroll position (and cookies and
 * storage when due or when full is set, after a navigation), marks the
 * session used and lets the next command in. full < 0: the command changed
 * nothing a checkpoint holds (observe, read, inspect...): no checkpoint.
 * s may have been parked or closed by the command.
 *
 * A light checkpoint (full == 0) asks the page for its URL, title and
 * scroll only when it cannot know them: when no navigation or title change
 * was seen since the last one (DevTools events) and the command reported
 * the scroll (sess_note_scroll), it writes from what it knows, and writes
 * nothing when nothing moved.
 */
void sess_done(sess *s, int full);

/**
 * After each action of a command: the page's scroll as the action's last
 * page call saw it (known: a click's or hover's actionability check), or
 * known 0 when the action did not say (a key press may have scrolled).
 * sess_done takes a known scroll instead of asking the page. For the
 * holder, between sess_claim and sess_done.
 */
void sess_note_scroll(sess *s, int known, double sx, double sy);

/**
 * The held session's mouse as input left it: where it is (page coordinates)
 * and the buttons it holds down (DevTools' bits: left 1, right 2, middle 4).
 * (0, 0) and none at first; kept while the session stays on this worker (a
 * restore elsewhere starts again at (0, 0) with no button down). The
 * holder's, between sess_claim and sess_done.
 */
typedef struct sess_pointer {
    int x, y, buttons;
} sess_pointer;
sess_pointer *sess_pointer_of(sess *s);

/*
 * Dialogs (alert, confirm, prompt) are answered at once, so that a page
 * never waits on one: dismissed unless the running command asks for them to
 * be accepted ("Leave site?" is always accepted, see events.c).
 */
#define SESS_PROMPT_TEXT_MAX 1000    /* what prompt() may be answered */
#define SESS_DIALOG_MESSAGE_MAX 300  /* of a dialog's message, in a reply */
#define SESS_DIALOGS_KEPT 4          /* the last dialogs a reply can list */

typedef struct sess_dialogs {
    int accept, has_text;
    char text[SESS_PROMPT_TEXT_MAX + 1];
    unsigned mark;
} sess_dialogs;

/**
 * From now until sess_dialogs_end, dialogs are accepted (accept 1; a
 * prompt() gets prompt_text, or its default when NULL) or dismissed
 * (accept 0); accept -1 and prompt_text NULL keep what an enclosing command
 * (act) asked. What was asked before goes to *saved. For the holder.
 */
void sess_dialogs_begin(sess *s, int accept, const char *prompt_text, sess_dialogs *saved);
/**
 * The dialogs that opened since the matching begin, oldest first (at most
 * SESS_DIALOGS_KEPT), as [{type, message, accepted}], or NULL when none
 * did; what was asked before comes back.
 */
cJSON *sess_dialogs_end(sess *s, const sess_dialogs *saved);

const char *sess_id(const sess *s);
const char *sess_worker(const sess_mgr *m);
reg_page *sess_registry(sess *s);
reg_page_handle sess_handle(sess *s);
/** 1 when the session's browser or page renderer died during the command (browser_crashed). */
int sess_lost(const sess *s);
/**
 * After a command on the held session timed out: stops whatever script the
 * page is running (a page stuck in a loop), so the next command finds the
 * page answering; the page's own timers and handlers go on afterwards.
 * Then asks the page for a trivial answer, waiting SESS_PROBE_TIMEOUT_MS:
 * a page that still does not answer (a renderer wedged in layout, say) has
 * its renderer ended, and the session restores from its checkpoint at the
 * next command. Returns 1 when it ended the renderer, else 0.
 */
int sess_interrupt(sess *s);
#define SESS_PROBE_TIMEOUT_MS 2000

typedef struct sess_nav {
    char *url, *title;   /* owned */
    int status;          /* HTTP status of the main document, 0 when unknown */
    int from_cache;      /* sess_history: the page came back from the back/forward cache */
    int moved;           /* sess_history: there was an entry to go to (0: the page stayed) */
} sess_nav;

void sess_nav_free(sess_nav *n);

/**
 * Navigates the session's page and waits for `wait` ("load" [default],
 * "domcontentloaded", "none") up to timeout_ms. RG_ENAVFAILED with the
 * browser's reason (DNS, connection, TLS) in err; RG_ETIMEOUT.
 */
int sess_navigate(sess *s, const char *url, const char *wait, int timeout_ms, sess_nav *out,
                  char *err, size_t errlen);

/**
 * Goes delta entries back (-1) or forward (+1) in the page's history, or
 * reloads (delta 0), waiting as sess_navigate does. Nothing to go to is not
 * an error: the page stays where it is. A page Chromium brings back from its
 * back/forward cache, as it was left, fires no load event: the wait ends
 * when its main frame is back (out->from_cache). Otherwise a back or
 * forward waits at most 5 s for the event and is not an error without it.
 */
int sess_history(sess *s, int delta, const char *wait, int timeout_ms, sess_nav *out, char *err,
                 size_t errlen);

/** The tenant's policy on url (may block on DNS): 0, RG_EBLOCKEDURL or RG_EBADREQ. */
int sess_check_url(sess_mgr *m, const char *tenant, const char *url, char *why, size_t whylen);

/* ---- tabs (for the holder, between sess_open and sess_done) ---- */

/**
 * Makes the session's page calls, registry and handle act on tab (an id
 * such as "t2"; NULL: the active tab) until sess_done or the next call.
 * RG_EBADREQ, with a sentence in err, when the session has no such tab.
 */
int sess_use_tab(sess *s, const char *tab, char *err, size_t errlen);
/** The id of the tab the command acts on ("" when the session has none here). */
const char *sess_tab_id(const sess *s);

typedef struct sess_tab_info {
    char tab[16];
    char opener[16];   /* "" when none */
    char *url, *title; /* owned */
    int active;
} sess_tab_info;

/** The session's tabs in the order they opened (caller frees with sess_tab_infos_free). */
int sess_tabs_list(sess *s, sess_tab_info **out, size_t *n);
void sess_tab_infos_free(sess_tab_info *v, size_t n);
/**
 * Opens a tab in the session's context, makes it active and navigates it
 * to url as sess_navigate does (the URL policy is the caller's to ask
 * first). tab gets its id (16 bytes), also when the navigation fails.
 * RG_EBADREQ when the session already holds tabs_max tabs.
 */
int sess_tab_new(sess *s, const char *url, int timeout_ms, char *tab, sess_nav *out, char *err,
                 size_t errlen);
/** Makes tab the active tab. RG_EBADREQ when there is no such tab. */
int sess_tab_select(sess *s, const char *tab, char *err, size_t errlen);
/** Closes tab (the active tab moves to its opener, else the newest). RG_EBADREQ for the last. */
int sess_tab_close(sess *s, const char *tab, char *err, size_t errlen);
/**
 * Gives every tab of the held session a viewport of width x height CSS
 * pixels (checked by the caller), and the tabs it opens later; the next
 * checkpoint writes it, so a restore keeps it. The active tab has it when
 * this returns; on failure the session keeps its old size.
 */
int sess_resize(sess *s, int width, int height, char *err, size_t errlen);
/**
 * The id of another open tab whose registry holds ref, into tab (16
 * bytes): 1, or 0 when none does. A ref that is stale here may be that
 * tab's.
 */
int sess_ref_tab(sess *s, const char *ref, char *tab, size_t len);

/** Parks the held session: captures, writes it, frees the context. *bytes: the parked size. */
int sess_park(sess *s, size_t *bytes, char *err, size_t errlen);

/** Closes the held session and forgets everything it had in Redis. */
int sess_close(sess *s);

typedef struct sess_info {
    char state[16];        /* live, parked */
    int frozen;            /* live, and frozen by its worker until the next command */
    char worker[64];       /* the owner when live */
    char *url, *title;     /* owned */
    int64_t created_ms, last_used_ms;
    int width, height;
    char *emulation;       /* owned: the emulate op's state as of the last checkpoint, a JSON
                              object, "" when nothing is emulated */
    size_t parked_bytes;   /* the captured state (cookies, storage, URL...) */
} sess_info;

void sess_info_free(sess_info *i);

/**
 * Waits (up to timeout_ms) until the commands this worker has queued on the
 * session before now are done, so that what follows sees their effects.
 */
void sess_wait_turn(sess_mgr *m, const char *tenant, const char *sid, int timeout_ms);

/* ---- files (files.c) ----
 * A live session keeps its files in a scratch directory of its own, mode
 * 0700, under the pool's (pool_files_dir): uploads under up/, downloads
 * under dl/ (named by their id). The directory and everything in it goes
 * when the session's context goes: at park, at close, when it moves to
 * another worker or its browser dies. Byte limits are sess_config's.
 */

/** One file for sess_upload: name and bytes borrowed for the call. */
typedef struct sess_file {
    const char *name;
    const void *data;
    size_t len;
} sess_file;

/**
 * Checks a file name from a client: 1 to RG_FILE_NAME_MAX bytes of UTF-8,
 * no '/', no '\\', no NUL or other control character, not "." or "..".
 * 0, or RG_EBADREQ with a sentence in err.
 */
int sess_file_name_check(const char *name, char *err, size_t errlen);

/**
 * Writes files into a new directory of the held session's scratch space and
 * sets them on the <input type=file> that a's target names (a->op is set to
 * REG_OP_UPLOAD here; target, nth and timeout_ms are a's). Checked before
 * anything is written: 1 to RG_UPLOAD_FILES_MAX files, valid names, none
 * twice, each at most upload_file_max bytes (RG_ETOOLARGE) and all the
 * session's uploads together at most upload_session_max (RG_ETOOLARGE).
 * When the target or the browser refuses them the files are removed again:
 * an error changes nothing. out as reg_act's.
 */
int sess_upload(sess *s, const reg_action *a, const sess_file *files, size_t n,
                reg_action_result *out, char *err, size_t errlen);

enum sess_dl_state { SESS_DL_STARTED = 1, SESS_DL_DONE, SESS_DL_REFUSED };

/** One download as sess_downloads lists it. */
typedef struct sess_download {
    char id[64];
    char name[RG_FILE_NAME_MAX + 1];
    char mime[96];
    size_t bytes;
    int state; /* enum sess_dl_state */
} sess_download;

/** The name of a sess_dl_state: started, done, refused. */
const char *sess_dl_state_name(int state);

/**
 * The held session's downloads, oldest first, into *out (caller frees; NULL
 * with *n 0 when there are none). 0 or RG_ENOMEM.
 */
int sess_downloads(sess *s, sess_download **out, size_t *n);

/**
 * The held session's emulated media (the emulate op): changes holds any of
 * color_scheme (light, dark), reduced_motion (reduce, no-preference),
 * forced_colors (active, none), contrast (more, no-preference) and media
 * (screen, print), "" to stop emulating one; the others stay as they were.
 * Applied to every tab, and to the tabs, restores and checkpoints to come.
 * *now: the whole emulation after it, a map of the args (caller frees).
 * RG_EBADREQ for a value a feature does not take, or none of them given
 * (nothing changes).
 */
int sess_emulate(sess *s, const cJSON *changes, cJSON **now, char *err, size_t errlen);

/** The most bytes of one PDF (sess_pdf). */
#define SESS_PDF_MAX (32 << 20)

/**
 * The held session's active page as a PDF (Page.printToPDF, read from its
 * stream a chunk at a time) into *out (caller frees): landscape or not, with
 * the page's backgrounds or not, on letter (default) or a4 paper, within
 * timeout_ms in all. RG_EBADREQ for another paper, RG_ETOOLARGE past
 * SESS_PDF_MAX, RG_ETIMEOUT, the DevTools call's errors; a sentence in err.
 */
int sess_pdf(sess *s, int landscape, int background, const char *paper, int timeout_ms,
             unsigned char **out, size_t *len, char *err, size_t errlen);

/**
 * The bytes of the held session's finished download id into *data (caller
 * frees) and its entry into *d. RG_ENOTFOUND (no such download, or it was
 * refused), RG_ECONFLICT (still in progress), with a sentence in err.
 */
int sess_download_read(sess *s, const char *id, sess_download *d, unsigned char **data, size_t *len,
                       char *err, size_t errlen);

/*
 * The console: what the session's pages said (console.c). The last
 * SESS_CONSOLE_KEPT messages live with the session's context on this worker
 * (a park, a move or a crash clears them; the count goes on here).
 */
#define SESS_CONSOLE_KEPT 200     /* messages kept, the last ones */
#define SESS_CONSOLE_TEXT_MAX 1000 /* bytes of a message's text kept */
#define SESS_CONSOLE_URL_MAX 300   /* bytes of its source URL kept */

/** One message. */
typedef struct sess_console_msg {
    uint64_t seq;    /* 1, 2, ...: the session's count of messages when it came */
    char type[16];   /* the console call's (log, info, warning, error, debug, ...),
                        "exception" for an uncaught one, a browser entry's level */
    char source[16]; /* console, exception, or the browser's (network, security, ...) */
    char tab[16];
    char *text;      /* clipped at SESS_CONSOLE_TEXT_MAX bytes */
    char *url;       /* where it came from, "" when unknown; clipped */
    int line;        /* 1-based, 0 when unknown */
    int64_t ts_ms;   /* Unix time in ms, as the page's clock said */
} sess_console_msg;

typedef struct sess_console_list {
    sess_console_msg *msgs;
    size_t n;
    uint64_t next;    /* the count now: pass it as since for what comes later */
    uint64_t dropped; /* after since, but no longer kept */
    int reset;        /* since was past the count: the log started again here */
} sess_console_list;

/** The level name's number: "all" (or NULL) 0, "warning" 1, "error" 2, else -1. */
int sess_console_level(const char *name);
/**
 * The held session's kept messages after since, oldest first, at level
 * (sess_console_level) or above, into *out (sess_console_list_free).
 * 0 or RG_ENOMEM.
 */
int sess_console(sess *s, uint64_t since, int level, sess_console_list *out);
/**
 * Like sess_console, after the messages an earlier call listed (since the
 * session's first message for the first call): each message is listed by
 * one call only. What a command's reply uses for the page's new errors.
 */
int sess_console_untold(sess *s, int level, sess_console_list *out);
void sess_console_list_free(sess_console_list *l);

/*
 * The network log: the requests the session's pages made (netlog.c). The
 * last SESS_NET_KEPT live with the session's context on this worker, as
 * the console's messages do.
 */
#define SESS_NET_KEPT 500     /* requests kept, the last ones */
#define SESS_NET_URL_MAX 1000 /* bytes of a request's URL kept */

/** One request (one hop of a redirect chain). */
typedef struct sess_net_req {
    uint64_t seq;          /* 1, 2, ...: the session's count of requests when it was sent */
    char id[48];           /* the browser's request id, while the request may still change */
    char tab[16];
    char sender[64]; /* the DevTools session it came on: page, frame or worker */
    char method[16];
    char type[24];         /* the browser's resource type: Document, XHR, Fetch, Script, ... */
    char *url;             /* clipped at SESS_NET_URL_MAX bytes */
    int status;            /* the HTTP status, 0 while none came (or it failed first) */
    char status_text[48];
    char failure[64];      /* the browser's error ("net::ERR_CONNECTION_REFUSED"), "" if none */
    char *blocked;         /* in a listing: why the URL policy refused it (its failure), or NULL */
    int done;              /* answered (its headers came) or failed */
    double start_ms, ms;   /* sent (the browser's clock), and how long until done */
    int64_t ts_ms;         /* Unix time in ms when it was sent */
    int64_t seen_ms;       /* rg_now_ms() at its last event (sent, answered, failed) */
} sess_net_req;

typedef struct sess_net_list {
    sess_net_req *reqs;
    size_t n;
    uint64_t next;    /* the count now: pass it as since for what comes later */
    uint64_t dropped; /* after since, but no longer kept */
    int reset;        /* since was past the count: the log started again here */
} sess_net_list;

/**
 * The held session's kept requests after since, oldest first: those whose
 * URL has filter (NULL or "": all), and static resources (images, fonts,
 * style sheets, scripts, media) only with with_static or when they failed.
 * Into *out (sess_net_list_free). 0 or RG_ENOMEM.
 */
int sess_network(sess *s, uint64_t since, const char *filter, int with_static,
                 sess_net_list *out);
void sess_net_list_free(sess_net_list *l);

/** How long the network must be quiet to be idle (Playwright's networkidle). */
#define SESS_NET_QUIET_MS 500

/**
 * Waits up to timeout_ms until the held session's current tab has no
 * request waiting for its answer's headers, and none was sent or answered
 * for SESS_NET_QUIET_MS. 0, or RG_ETIMEOUT with a sentence in err.
 */
int sess_network_quiet(sess *s, int timeout_ms, char *err, size_t errlen);

/** What Redis says about a session, without restoring it. RG_ENOTFOUND, RG_EUNAVAIL. */
int sess_get_info(sess_mgr *m, const char *tenant, const char *sid, sess_info *out);

/**
 * Makes the session's page stream (or stop streaming) as cfg.cast_wanted
 * says now: a session that should stream is opened (restored when parked,
 * woken when frozen), one that should stop is only claimed (a parked one
 * stays parked). Waits behind the session's commands up to timeout_ms.
 * 0, or sess_open's errors.
 */
int sess_cast_sync(sess_mgr *m, const char *tenant, const char *sid, int timeout_ms, char *err,
                   size_t errlen);
/**
 * Tells the session's page that a frame (its ack from the "frame" event)
 * was sent or given up, so it may capture the next one. Any thread; a no-op
 * once the page is gone.
 */
void sess_cast_ack(sess_mgr *m, const char *tenant, const char *sid, int ack);
/**
 * Stops (pause 1) or starts again (pause 0) the capture of a session's
 * screencast without changing whether it should stream: the gateway's
 * frame-rate cap, and a stop while no viewer can take a frame (Chromium
 * captures every painted frame while a screencast runs, acked or not). Any
 * thread; a no-op when the page does not stream, or already is as asked.
 * A stream started with new settings (sess_cast_apply) is not paused.
 */
void sess_cast_pause(sess_mgr *m, const char *tenant, const char *sid, int pause);

#define SESS_LIST_MAX 1000 /* sessions a listing returns at most */
#define SESS_CURSOR_MAX 96 /* bytes of a listing's cursor, with its NUL */

/** One session of a listing: its id and what sess_get_info gives. */
typedef struct sess_listed {
    char sid[SESS_ID_MAX + 1];
    sess_info info; /* owned */
} sess_listed;

/**
 * The tenant's sessions, oldest first, with their info (caller frees with
 * sess_list_free): at most limit (1 to SESS_LIST_MAX) of them, after the
 * cursor `after` (NULL or "": from the first). When more may follow, *next
 * is the cursor to pass next time, else "" (next holds SESS_CURSOR_MAX
 * bytes). A cursor is "<created ms>:<sid>" of the last session a page
 * looked at, so sessions made or closed between pages neither repeat nor
 * push others out. Sessions whose keys expired are left out (and leave the
 * index). A page costs Redis three round trips at most on one server (a
 * cursor's ties, the index, one pipeline of every session's reads), not
 * one per session. RG_EBADREQ for a malformed cursor, RG_EUNAVAIL.
 */
int sess_list(sess_mgr *m, const char *tenant, const char *after, size_t limit, sess_listed **out,
              size_t *n, char *next);
void sess_list_free(sess_listed *v, size_t n);
/**
 * How many sessions the tenant's quota counts (live, parked and being
 * created), sessions whose keys expired dropped first; 0 when Redis cannot
 * say.
 */
size_t sess_count(sess_mgr *m, const char *tenant);

typedef struct sess_stats {
    int live;       /* sessions live on this worker */
    int frozen;     /* of those, frozen (idle; woken by the next command) */
    uint64_t parked, restored, park_failures;
    uint64_t fenced;             /* sessions dropped here because a write found another
                                    worker's fence token (claimed elsewhere) */
    uint64_t park_unreplicated;  /* parks no replica acknowledged within the wait */
    uint64_t freezes, wakes; /* freezes done, and wakes of frozen sessions */
    /* Parks for room (LRU), by what the victim stood to lose (victim.c's tiers). */
    uint64_t evicted_clean;  /* nothing edited, no beforeunload handler */
    uint64_t evicted_losing; /* edited fields or a beforeunload handler, or not judged */
    uint64_t evicted_fresh;  /* restored less than min_live_ms before: nothing else could go */
    uint64_t judged;         /* pages judged (sess_judge) */
    uint64_t room_waits;     /* leases that found no room and no session to park at once */
    uint64_t restore_ms[SESS_RS_PHASES]; /* restores' time, summed by phase */
    uint64_t park_deferred;  /* parks not done: their browser's work slots stayed busy */
} sess_stats;

void sess_get_stats(sess_mgr *m, sess_stats *st);
/** The egress proxy's counters; 0 and zeros when there is none. */
int sess_egress_stats(sess_mgr *m, egress_stats *st);

#endif
