/*
 * sess_int.h - private to session/: the session and manager structures and
 * the functions the module's files share. The files, lowest first:
 *
 *   call.c       the one way to the page on a session's lease (sess_call...)
 *   nav.c        navigation: go to a URL, back, forward, reload; where it is
 *   intercept.c  every request of the page through the URL policy
 *   events.c     DevTools event handlers (dialogs, crashes, reports)
 *   console.c    what the pages said: the console op's log (events.c hands it
 *                the console, exception and log events)
 *   netlog.c     the requests the pages made: the network op's log (events.c
 *                hands it the Network events)
 *   files.c      the scratch directory: uploads, downloads (events.c hands it
 *                the download events; lease.c clears it with the context)
 *   tabs.c       the session's tabs: popups adopted before they load, the
 *                tab list, the tab a command acts on
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

#define SESS_TAB_ID_MAX 16
#define SESS_PAGE_KEY_MAX (SESS_TENANT_MAX + SESS_ID_MAX + 32)

/*
 * One tab: a page target of the session's context, attached with a
 * flattened session of its own, with its own registry and observer world.
 * id, target, session, opener and page_key are set before the tab is in the
 * list and never change; gone is set under m->mu (by the reader thread when
 * the page closes); the rest belongs to the session's holder. A tab leaves
 * the list and is freed only by the holder (sess_tabs_reap), after its
 * subscription ended, so a handler never sees it freed.
 */
/* Frames of other sites (at any depth) and workers followed in one tab: as
   many as the registry follows (REG_XFRAMES_TRACK). Past them, without the
   egress proxy, one gets none of its requests through (they could not be
   checked). */
#define SESS_XFRAMES_MAX 32

typedef struct sess_tab {
    sess *s;
    char id[SESS_TAB_ID_MAX];      /* "t1", "t2": stable, survives park and restore */
    char target[64], session[64];  /* DevTools target and flattened session */
    char opener[SESS_TAB_ID_MAX];  /* the tab that opened it, "" when none */
    char page_key[SESS_PAGE_KEY_MAX]; /* its registry: <tag>:main for t1, else <tag>:<id> */
    int gone;                      /* its page closed (guarded by m->mu) */
    int own_lease_page;            /* the pool lease's first page */
    reg_page *reg;
    reg_world *world;              /* NULL until the holder first uses the tab */
    int sub;                       /* the page-event subscription, 0 when none */
    int page_enabled;
    char *open_url;                /* the last URL this page opened a window on (reader thread) */
    char *start_url;               /* a popup's URL when it opened (set before it is listed):
                                      what it lists and parks on until it commits */
    int committed;                 /* a document of its own committed (atomic; reader thread) */
    /* Its frames of other sites (xframes.c): their sessions and event
       subscriptions. Written on the reader thread, read by the holder,
       both under m->mu. */
    struct sess_xframe {
        char target[64], session[64];
        char parent[64]; /* the session it attached on: the page's, or a frame's */
        int sub;
        int frame; /* an iframe; else a worker */
    } xf[SESS_XFRAMES_MAX];
    int n_xf;
} sess_tab;

#define SESS_TABS_CAP 64 /* REFGATE_TABS_MAX is at most this */

struct sess {
    sess_mgr *m;
    char tenant[SESS_TENANT_MAX];
    char id[SESS_ID_MAX];
    char tag[SESS_TENANT_MAX + SESS_ID_MAX + 16];     /* {t:<tenant>:s:<sid>} */

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
    uint64_t used_seq;             /* the manager's use_seq at that use: the order of uses,
                                      which last_used_ms's millisecond steps can tie */
    int64_t restored_ms;           /* when a restore here made it live; 0: never (victim.c) */
    int judged;                    /* loses is known: judged since the last command that
                                      may have changed the page (victim.c) */
    int loses;                     /* what a park would lose: SESS_LOSES_* bits */
    sess *next;

    /* The tabs: the list and n_tabs are guarded by m->mu (the reader thread
       adds popups); active, cur and front are the holder's. */
    sess_tab *tabs[SESS_TABS_CAP];
    int n_tabs;
    int next_tab;                  /* the number of the next tab id (guarded by m->mu) */
    sess_tab *active;              /* the tab commands act on unless they name one */
    sess_tab *cur;                 /* the tab this command acts on (sess_call's page) */
    sess_tab *front;               /* the tab last brought to the front */
    char *emul_ua;                 /* Emulation.setUserAgentOverride params a new tab gets, or NULL */
    char *media;                   /* the emulate op's state, a JSON object of its args, or NULL;
                                      swapped under m->mu (new tabs read it) */
    unsigned media_gen;            /* counts media's changes (the holder's thread) */
    unsigned media_saved_gen;      /* media_gen when the meta in Redis, which session.info
                                      reads, last got media */
    int tabs_changed;              /* atomic: a tab opened or closed since the last full checkpoint */
    int pending;                   /* the holder made a page: the next one without opener is it */
    char pending_id[SESS_TAB_ID_MAX]; /* the id it takes ("": the next number); m->mu */

    /* Owned by the holder. */
    pool_lease *lease;
    egress_slot *egress;           /* the context's way out, with the lease */
    int width, height;
    sess_pointer pointer; /* where input left the mouse (session.h) */
    char *user_agent, *locale, *timezone;
    int window_id;                 /* the page's window (Browser.getWindowForTarget) when frozen */
    int popup_sub;                 /* the browser-level one that adopts popups as tabs */
    int gone_sub;                  /* the browser-level one that sees tabs close */
    int crash_sub;                 /* the browser-level one that sees the renderer crash */
    int64_t created_ms;
    int64_t last_full_ms;          /* last capture of cookies and storage */
    uint64_t last_ckpt;            /* hash of the URL, title and scroll last written */
    /* What the last checkpoint wrote, while no event says the page moved on. */
    unsigned page_gen;             /* atomic: bumped by navigations and title changes */
    unsigned ckpt_gen;             /* page_gen when ckpt_* were captured */
    int ckpt_valid;
    char *ckpt_url, *ckpt_title, *ckpt_origin;
    double ckpt_sx, ckpt_sy;
    /* The last navigation ended with the observer's report from its load
       event (nav.c), with the page_gen and the tab it is of: the full
       checkpoint after that navigation takes the page's part from the
       report's second part (lease.c, reg_world_load_final) when nothing was
       sent to the browser nor a page handle given out since. */
    int load_report;
    unsigned load_gen;
    const sess_tab *load_tab;
    int load_touched;              /* atomic: a call or a page handle since it (call.c) */
    int seeding;                   /* atomic: state.c answers the page's documents */
    int has_hint;                  /* the command reported the scroll (sess_note_scroll) */
    int scroll_owed;               /* atomic: a checkpoint left the scroll to the heartbeat */
    double hint_sx, hint_sy;
    int info_sub;                  /* Target.targetInfoChanged: the title or URL changed */
    int lost;                      /* atomic: the browser died under the lease */
    /* Fencing (lease.c): the token of this worker's last claim (atomic; written
       by the holder while not live), the meta key it lives in, and the fence
       the tabs' registries write under. */
    int64_t fence;
    int64_t lease_ok_ms;           /* atomic: when the lease was last known ours */
    char fence_key[SESS_TENANT_MAX + SESS_ID_MAX + 32];
    reg_fence fence_ref;
    int checks;                    /* URL checks in flight (guarded by m->mu) */
    /* Dialogs (events.c), guarded by m->mu: how the running command has them
       answered (sess_dialogs_begin), and the last ones that opened. */
    int dlg_accept;
    int dlg_has_text;
    char dlg_text[SESS_PROMPT_TEXT_MAX + 1];
    unsigned dlg_seq;              /* dialogs so far */
    struct sess_dlg {             /* dialog n is at n % SESS_DIALOGS_KEPT */
        int accepted;
        char type[16];
        char message[SESS_DIALOG_MESSAGE_MAX + 1];
    } dlg_last[SESS_DIALOGS_KEPT];
    struct sess_files *files;      /* uploads and downloads (files.c; its own mutex) */
    struct sess_console *console;  /* what the pages said (console.c; its own mutex) */
    struct sess_netlog *netlog;    /* the requests they made (netlog.c; its own mutex) */
    /* The live view (cast.c). */
    int cast_on;                   /* the page streams (the holder sets it, under m->mu) */
    cdp_conn *cast_conn;           /* where acks go; guarded by cast.c's lock */
    char cast_page[64];            /* the page's DevTools session id, for acks */
    sess_cast_opts cast_opts;      /* what the stream was started with (the holder's) */
    char cast_params[160];         /* its Page.startScreencast params; cast.c's lock */
    int cast_paused;               /* stopped by sess_cast_pause; cast.c's lock */
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
    uint64_t use_seq; /* atomic: counts the sessions' uses (sess.used_seq) */
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
/* How long the checkpoint after a navigation waits for the observer's second
   load report (a task after the load event) before it asks the page itself. */
#define SESS_LOAD_FINAL_WAIT_MS 1000

struct redisReply;

/* ---- call.c: the page on s's lease (RG_ECRASHED without one) ---- */

/** Calls method on s's page (the tab the command acts on), waiting up to timeout_ms (holder; never on the reader thread). */
int sess_call(sess *s, const char *method, const char *params, int timeout_ms, cdp_reply *out);
/** Sends method to s's page without waiting; the reply is dropped (any thread). */
int sess_call_async(sess *s, const char *method, const char *params, int timeout_ms);
/** Calls method on s's browser (no session id: contexts, cookies, targets, permissions). */
int sess_browser_call(sess *s, const char *method, const char *params, int timeout_ms,
                      cdp_reply *out);
/** sess_browser_call without waiting; the reply is dropped (any thread). */
int sess_browser_call_async(sess *s, const char *method, const char *params, int timeout_ms);
/** Sends method to tab t's page without waiting (any thread; the lease held or bound). */
int sess_tab_call_async(sess_tab *t, const char *method, const char *params, int timeout_ms);
/** A one-shot wait for event on s's page, made before what causes it (cdp_waiter_new). */
int sess_page_waiter(sess *s, const char *event, cdp_waiter **out);
/**
 * Evaluates expr in the page's main world; its value (an object, a number...)
 * into *out as the browser serializes it (returnByValue), so no function of
 * the page (a JSON.stringify it replaced) takes part. RG_EINTERNAL when it
 * threw or gave undefined.
 */
int sess_eval_json(sess *s, const char *expr, int timeout_ms, cJSON **out);
/** o's string member k, or "" when absent or not a string (borrowed from o). */
const char *sess_jstr(const cJSON *o, const char *k);
/** A copy of o's string member k ("" when absent); NULL only without memory. */
char *sess_json_dup(const cJSON *o, const char *k);

/* ---- nav.c ---- */

/** Page.enable, once per lease (its events: loads, dialogs, navigations). */
int sess_enable_page(sess *s);

/* ---- intercept.c ---- */

/** Starts the URL checker threads (when cfg.url_check is set). */
int sess_checkers_start(sess_mgr *m);
void sess_checkers_stop(sess_mgr *m);
/** Fetch.requestPaused of tab t's page (reader thread). */
void sess_on_request_paused(sess_tab *t, const char *session, const cJSON *params);

/* ---- xframes.c: frames of other sites in a tab ---- */

/* The Target.setAutoAttach parameters for a tab's page and its frames: their
   frames of other sites and workers attached, held until set up. */
const char *sess_xframes_params(void);
/* Target.attachedToTarget and detachedFromTarget on t's page or one of its
   frames, parent the session they came on (reader thread). */
void sess_xframe_attached(sess_tab *t, const char *parent, const cJSON *params);
void sess_xframe_detached(sess_tab *t, const cJSON *params);
/* Tells t's world of the frames attached before it was made (the holder). */
void sess_xframes_to_world(sess *s, sess_tab *t);
/* Ends t's frames' subscriptions (the holder, before t is freed). */
void sess_xframes_end(sess *s, sess_tab *t);
/** Waits until s has no URL check in flight. */
void sess_checks_drain(sess *s);
/** Pauses every request of s's page for the URL policy. */
int sess_intercept(sess *s);
/** Fetch.enable's parameters, or NULL when the session checks no URL. */
const char *sess_intercept_params(const sess_mgr *m);

/* ---- console.c ---- */

struct sess_console *sess_console_new(void);
void sess_console_free(struct sess_console *c);
/** Forgets the kept messages (with the context); the count goes on. */
void sess_console_clear(sess *s);
/** A console, exception or log event of tab t (reader thread); text: a console call's, joined. */
void sess_console_event(sess_tab *t, const char *method, const cJSON *params, const char *text);

/**
 * The kept part of a numbered log after since (console.c, netlog.c): a log
 * whose last entry is seq, cleared when its count was base, keeping the last
 * kept. *from is the first entry to list (past seq: none); *dropped how many
 * after since are no longer kept; *reset 1 when since was past seq (another
 * worker's count: the whole log then).
 */
void sess_log_window(uint64_t seq, uint64_t base, uint64_t kept, uint64_t since, uint64_t *from,
                     uint64_t *dropped, int *reset);

/* ---- netlog.c ---- */

/*
 * Network.enable's parameters: the network op reads the events only, so the
 * browser keeps no response bodies for us (1 byte a page, 1 a resource: 0
 * is not "none" to every Chromium) and sends no request bodies.
 */
#define SESS_NETWORK_PARAMS "{\"maxTotalBufferSize\":1,\"maxResourceBufferSize\":1,\"maxPostDataSize\":0}"

struct sess_netlog *sess_netlog_new(void);
void sess_netlog_free(struct sess_netlog *l);
/** Forgets the kept requests (with the context); the count goes on. */
void sess_netlog_clear(sess *s);
/** A Network event of tab t (reader thread). */
void sess_netlog_event(sess_tab *t, const char *session_id, const char *method,
                       const cJSON *params);
/* The frames and workers on these DevTools sessions went away: their
   requests still waiting are over (the browser will say no more of them). */
void sess_netlog_senders_gone(sess_tab *t, const char (*sessions)[64], int n);
/** The URL policy refused a request of s's page to url, for why (without
    the egress proxy: intercept.c; any thread). The network op names it. */
void sess_netlog_refused(sess *s, const char *url, const char *why);

/** Cookies as Storage.setCookies takes them (JSON text, caller frees; NULL without
    memory): each with the keys keep names (n of them), expires when it is a positive
    number and the cookie not a session one, path "/" when it has neither url nor path
    (park.c). */
char *sess_cookie_params(const cJSON *cookies, const char *const *keep, size_t n);
/** A Storage call on s's browser context: {"cookies": cookies (JSON text, when not
    NULL), "browserContextId": the context} (park.c). r starts zeroed. */
int sess_context_call(sess *s, const char *method, const char *cookies, cdp_reply *r);
/** Browser.setPermission on s's browser context: descriptor is the Permissions API's
    (JSON text, {"name": ...}), setting "granted", "denied" or "prompt"; waited for when
    wait is set, else only sent (park.c). */
int sess_set_permission(sess *s, const char *descriptor, const char *setting, int wait);
/** Puts a checked storage state into s, fresh and not yet written (state.c): 0, or
    RG_EBADREQ (a cookie the browser refuses) and others, with a sentence in err. */
int sess_state_apply(sess *s, const cJSON *state, char *err, size_t errlen);

/** The host (lowercase, an IPv6 address without brackets) and port of an
    http(s) URL, as Chromium names them to its proxy (nav.c): 0, or -1. */
int sess_url_host_port(const char *url, char *host, size_t len, int *port);

/* ---- events.c: handlers on the reader thread ---- */

/** Subscribes s's handlers to its fresh lease's browser (the holder's). */
void sess_events_bind(sess *s);
/** Ends those subscriptions (waiting for a handler in progress) before the lease goes. */
void sess_events_unbind(sess *s);
/** The page events of a tab (ud: the sess_tab), for cdp_subscribe on its session. */
void sess_page_event(void *ud, const char *session_id, const char *method, const cJSON *params);
/** Reports a page event of s (sess_config.on_event); data taken over. */
void sess_report(sess *s, const char *kind, cJSON *data);

/* ---- tabs.c ---- */

/**
 * Makes the lease's first page a tab (id: "t1", or the id it had before a
 * park), active and current. The holder's, right after the lease.
 */
int sess_tabs_init(sess *s, const char *first_id);
/** Adopts the context's new pages as tabs (browser-level subscriptions, pool_lease_adopt). */
void sess_tabs_bind(sess *s);
/** Ends that before the lease goes; when it returns no tab handler runs. */
void sess_tabs_unbind(sess *s);
/** Frees every tab (after sess_tabs_unbind). */
void sess_tabs_free(sess *s);
/** Frees the tabs whose page closed; a new active tab when the active one went. */
void sess_tabs_reap(sess *s);
/** The live tab with id, or NULL. */
sess_tab *sess_tab_find(sess *s, const char *id);
/** Sets up t for use (its registry and observer world); the holder's. */
int sess_tab_prepare(sess *s, sess_tab *t);
/** How many tabs are open (not gone). */
int sess_tabs_open(sess *s);
/** The open tabs, in order, into v (SESS_TABS_CAP); returns how many. */
int sess_tabs_snapshot(sess *s, sess_tab **v);
/** The URL to show and park t on, whose page says url (the one it opens until it commits). */
const char *sess_tab_url(sess_tab *t, const char *url);
/**
 * Opens a page in the context as a tab with id want (NULL: the next
 * number), on about:blank, set up like a popup; not made active.
 */
int sess_tab_open(sess *s, const char *want, sess_tab **out, char *err, size_t errlen);

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
/** How many downloads began in the session's context so far, those past the
    list's cap (refused, not listed) included; the last one as it began into
    *last (NULL is fine). Any thread. */
size_t sess_downloads_begun(sess *s, sess_download *last);
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
    char *tabs;          /* JSON array of every tab {id, url, sx, sy, opener}, in order; or NULL */
    char *tab;           /* the active tab's id (url, sx, sy above are its), or NULL */
    int next_tab;        /* the number the next tab id takes */
    char *media;         /* the session's emulated media (sess->media), or NULL */
} sess_capture;

void sess_capture_free(sess_capture *c);
/* One DevTools call that puts the emulate op's state on a page (tabs.c). */
typedef struct sess_emul_call {
    const char *method;
    char *params;
} sess_emul_call;
#define SESS_EMUL_CALLS 4
/* The kinds of emulation, one page call each. */
#define SESS_EMUL_MEDIA 1u    /* color scheme and the other media features, the media type */
#define SESS_EMUL_NETWORK 2u  /* offline */
#define SESS_EMUL_HEADERS 4u  /* extra request headers */
#define SESS_EMUL_POSITION 8u /* geolocation */
/**
 * The page calls for the emulation state (sess->media's JSON text, NULL for
 * none) into out: one for each kind in kinds, taking it back where the state
 * has none of it; with kinds 0, one for each kind the state has. The count (0
 * to SESS_EMUL_CALLS; sess_emul_calls_free), or RG_ENOMEM with none to free.
 */
int sess_emul_calls(const char *state, unsigned kinds, sess_emul_call *out);
void sess_emul_calls_free(sess_emul_call *c, int n);
/** Sends what is emulated (s->media, read under m->mu) to a new tab's or frame's DevTools
    session, in order on the pipe, waiting for nothing (the browser's reader thread). */
void sess_emul_to(sess *s, const char *session_id);
/** s->media on the held session's current page, and its context's geolocation permission
    (after lock_down, which denies it). The calls' errors. */
int sess_emul_apply(sess *s);
/**
 * A restore loads its pages from the network, so an emulated offline waits
 * until they are back: begin sets s->media to the parked state without it
 * (1 when it held offline back), end sets the whole state and takes every
 * tab and frame offline.
 */
int sess_emul_restore_begin(sess *s, const char *state);
void sess_emul_restore_end(sess *s, const char *state);
/**
 * Reads URL, title and scroll; with full, cookies, the origin's storage and
 * what a reload loses (reg_state_capture, for the refs of the last
 * observation) too.
 */
int sess_capture_page(sess *s, int full, sess_capture *c);
/** The same full capture, the page's part from w's second load report
    (waited for up to SESS_LOAD_FINAL_WAIT_MS) when it carries the storage
    ("st": 1, 99-api.js), else from the page; the cookies are asked for
    once, either way. */
int sess_capture_loaded(sess *s, reg_world *w, sess_capture *c);
/** The page keys of the tabs a capture lists (t1's "main" included); caller frees each and v. */
int sess_capture_page_keys(const sess *s, const sess_capture *c, char ***v, size_t *n);
/** Opens and rebuilds the capture's other tabs after the first (restore); the refs into ri. */
int sess_rebuild_tabs(sess *s, const sess_capture *parked, sess_restore_info *ri);
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
#define SESS_OWED_IDLE_MS 100     /* idle before the heartbeat takes an owed scroll (lease.c) */
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

/** Takes token as s's fence (a claim's or a create's). */
void sess_set_fence(sess *s, int64_t token);
/** The fence s's registries write under (borrowed from s). */
const reg_fence *sess_reg_fence(sess *s);
/** The lease of s was found ours just now (a write the fence let through). */
void sess_lease_confirmed(sess *s);
/**
 * Before s (live here, held) acts: when its lease was not renewed within
 * lease_ms (Redis was out of reach, this process stopped), asks Redis whether
 * it is still ours. RG_ECONFLICT, the local copy dropped, when another
 * worker claimed it meanwhile; 0 otherwise, also when Redis does not answer
 * (the fence still guards every write).
 */
int sess_check_lease(sess *s);
/** rg:<tag>:<kind>, one of s's keys (kind: meta, lease, park, want). */
void sess_key(char *out, size_t len, const sess *s, const char *kind);
/** rg:t:<tenant>:sessions, the tenant's listing. */
void sess_index_key(char *out, size_t len, const char *tenant);
/** A field of an HGETALL reply: its string ("" when absent), or that as a number. */
const char *sess_hash_str(const struct redisReply *h, const char *name);
double sess_hash_num(const struct redisReply *h, const char *name);

/** The pool's callbacks for a warm context (pool_set_warm): its egress slot, if any. */
void *sess_warm_prepare(void *ud, pool_warm_opts *o);
void sess_warm_discard(void *ud, void *token);
/**
 * Leases a context for s (parking an idle session first when the pool is
 * full). ri (or NULL) gets the parks it made and the time of the room,
 * queue and context phases.
 */
int sess_lease_context(sess *s, int timeout_ms, sess_restore_info *ri, char *err, size_t errlen);
/** Watches s's fresh lease (events.c), makes its page tab first_tab (NULL: "t1") with its registry. */
int sess_bind_lease(sess *s, const char *first_tab);
/** Lets go of s's context: subscriptions, URL checks, tabs, pool lease, egress slot. */
void sess_release_local(sess *s);
/** Forgets s's local context and marks it not live (the browser died, or it moved). */
void sess_drop_local(sess *s);
/** What the last checkpoint wrote is no longer known (a new lease, a restore, a drop). */
void sess_forget_ckpt(sess *s);
/** Writes the new session's meta, lease and listing (consuming a quota marker when reserved). */
int sess_write_new(sess *s, int reserved);
/** The checkpoint sess_done writes: none when full < 0 or the session is not live here. */
void sess_checkpoint(sess *s, int full);
/** Parks the least recently used idle live session other than except (takes it itself),
    waiting up to timeout_ms for a work slot of its browser (RG_EPOOL without one). */
int sess_park_lru(sess_mgr *m, const sess *except, int timeout_ms);
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
