/*
 * registry.h - element identity, stable refs, the per-page element registry
 * and its store, target strings, and observe (the page-side observer run over
 * DevTools). The rules are docs/protocol.md's "Targets" and "Stable refs".
 *
 * Dependencies: cdp/ (through a page handle: a connection and a flattened
 * session id) and common/. registry/ knows nothing about HTTP or msgpack, and
 * uses the pool only through that handle.
 *
 * Threading: a reg_page belongs to one thread at a time (the gateway runs the
 * commands of one session one at a time). Stores say their own rules.
 */
#ifndef REGISTRY_H
#define REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "cdp/cdp.h"
#include "common/rg.h"

#define REG_REF_MAX 32   /* "@" + 12 characters + "~" + suffix, with room */
#define REG_NORM_MAX 12  /* characters kept by normalization */
#define REG_SAME_SCORE 0.5 /* identity score below which elements differ */
#define REG_OUTLINE_OPTIONS_MAX 10 /* longer drop-downs are summarized in the outline */
#define REG_OUTLINE_OPTIONS_HEAD 5 /* options shown before the summary (and the selected) */
#define REG_TEXT_MAX_CHARS 1000    /* a text line (or an element's text after its colon) is
                                      clipped here, in UTF-16 units, with an ellipsis; keep
                                      the observer's TEXT_MAX (registry/observer/50-observe.js) equal */

/* ---- identity ------------------------------------------------------------ */

/** The identity signals of one element. Strings are owned (NULL: absent). */
typedef struct reg_identity {
    char *testid;
    char *id;
    char *aria_label;
    char *role;
    char *name;
    char *tag;
    char *parent_role;
    int sibling_index;
} reg_identity;

void reg_identity_destroy(reg_identity *id);
/** Deep copy; returns 0 or RG_ENOMEM. */
int reg_identity_copy(reg_identity *dst, const reg_identity *src);

/**
 * Normalizes s for a ref: lowercase, only [a-z0-9], the first 12 such
 * characters. Returns the length written to out (which has room for 13).
 */
size_t reg_normalize(const char *s, char *out);

/**
 * The ref an element's identity asks for, before uniqueness suffixes:
 * "@" + normalized testid, else id, else aria-label (each only if its
 * normalization is not empty), else "@e" + 6 base-36 digits of XXH3-64 over
 * role, name, tag, parent role and sibling index.
 */
void reg_ref_base(const reg_identity *id, char out[REG_REF_MAX]);

/**
 * Weighted identity comparison, 0..1: testId 3, id 3, ariaLabel 2, role 2,
 * name 2, tagName 1, parentRole 1, siblingIndex 1. A signal counts when
 * either side has it; it scores when both have it and it is equal.
 */
double reg_identity_score(const reg_identity *a, const reg_identity *b);

/* ---- targets ------------------------------------------------------------- */

enum reg_target_kind {
    REG_T_REF = 1,  /* @ref */
    REG_T_CSS,      /* css:SELECTOR */
    REG_T_XPATH,    /* xpath:EXPR */
    REG_T_ROLE,     /* role:ROLE or role:ROLE[name="..."] / [name~="..."] */
    REG_T_TEXT,     /* text:... exact (folded), text~:... substring */
    REG_T_LABEL,    /* label:... */
    REG_T_PLACEHOLDER,
    REG_T_TESTID,
    REG_T_ALT,
    REG_T_TITLE,
};

/** A parsed target string. value is owned; name too (role targets). */
typedef struct reg_target {
    int kind;
    char *value;   /* the ref (with "@"), selector, role or text */
    char *name;    /* role targets: the name, or NULL for any */
    int substring; /* text~:, label~: ..., or name~= */
} reg_target;

/**
 * Parses a target string of docs/protocol.md. Returns 0, or RG_EBADREQ with a
 * sentence in err (errlen bytes) saying what is wrong. Empty values,
 * unknown prefixes, bad refs and malformed role filters are errors.
 */
int reg_target_parse(const char *s, size_t n, reg_target *t, char *err, size_t errlen);
void reg_target_destroy(reg_target *t);

/* ---- registry entries and stores ----------------------------------------- */

/** One registered element. Strings and arrays are owned. */
typedef struct reg_entry {
    char ref[REG_REF_MAX];
    reg_identity ident;
    char *selector;     /* the best selector */
    char **alt;         /* alternative selectors, best first */
    size_t n_alt;
    char *css_path;     /* cached CSS path */
    char *frame;        /* "" for the main document, "0", "0.1" for same-origin frames,
                           "x<key>" for a frame of another site (registry/frames.c) */
    char *name_attr;    /* the element's name attribute (self-healing), or NULL */
    int bounds[4];      /* x, y, w, h in CSS px at the last observation */
    int64_t last_seen_ms; /* as the store has it */
    int order;          /* position among the refs of its last observation */
    int64_t seen_ms;    /* when this worker's observations last saw it (its cached copy
                           only, never stored): last_seen_ms lags it while an unchanged
                           entry is not written again (registry.c, assign_refs) */
    int moved;          /* its cached copy only, never stored: order and bounds are newer
                           than the store's, written back with its time (assign_refs) */
    int drop;           /* in a commit only: remove this ref rather than write it (the
                           registry's own choice at the cap; only ref is read) */
} reg_entry;

void reg_entry_destroy(reg_entry *e);
int reg_entry_copy(reg_entry *dst, const reg_entry *src);
void reg_entries_free(reg_entry *v, size_t n);

typedef struct reg_store reg_store;

/**
 * A write fence: a store write goes ahead only while the Redis hash `key`
 * (in the page key's hash tag: the session's meta) has field "fence" equal
 * to *token, the number the session's claim got. A worker whose claim was
 * superseded (its lease lapsed and another worker claimed the session) has
 * an older token, and its writes change nothing. Both pointers are borrowed
 * from the session, which outlives its pages; *token is read at each write.
 */
typedef struct reg_fence {
    const char *key;
    const int64_t *token;
} reg_fence;

/** The refs a commit removed (stale, or over the cap). Owned; reg_removed_free. */
typedef struct reg_removed {
    char **refs;
    size_t n;
} reg_removed;

void reg_removed_free(reg_removed *r);

/**
 * Where registries live. The memory store is for a single process; the Redis
 * store (its own issue) implements the same operations, so nothing above the
 * store changes. Every operation is atomic for one page.
 */
typedef struct reg_store_ops {
    /** All entries of page (caller owns *out; reg_entries_free). */
    int (*load)(reg_store *s, const char *page, reg_entry **out, size_t *n);
    /**
     * One observation: upserts n entries (by ref; one with drop set is
     * removed instead), then removes entries last seen before now_ms -
     * stale_ms, then, while more than max remain, the least recently seen
     * (ties broken deterministically). removed (may be NULL) gets the refs
     * that went, dropped ones included, so a worker's cached copy of the
     * page follows the store without reading it back.
     */
    int (*commit)(reg_store *s, const char *page, const reg_entry *v, size_t n, int64_t now_ms,
                  int64_t stale_ms, size_t max, reg_removed *removed);
    /** Forgets a page. */
    int (*drop)(reg_store *s, const char *page);
    /**
     * Parks the page's registry: packs it into a compact form (one value per
     * page, only what re-binding by identity needs; selectors and bounds are
     * left out, the next observation recomputes them) that expires ttl_ms
     * from now. The next load unpacks it. The memory store has nothing to do.
     */
    int (*park)(reg_store *s, const char *page, int64_t ttl_ms);
    void (*destroy)(reg_store *s);
    /**
     * commit and park under a fence (f may be NULL: unfenced): nothing is
     * written and RG_ECONFLICT comes back once the fence no longer holds.
     * NULL in a store without fences (the memory store of one process).
     */
    int (*commit_fenced)(reg_store *s, const char *page, const reg_entry *v, size_t n,
                         int64_t now_ms, int64_t stale_ms, size_t max, reg_removed *removed,
                         const reg_fence *f);
    int (*park_fenced)(reg_store *s, const char *page, int64_t ttl_ms, const reg_fence *f);
} reg_store_ops;

struct reg_store {
    const reg_store_ops *ops;
};

/** An in-process store (any thread; one mutex). */
reg_store *reg_store_mem_new(void);

typedef struct reg_redis_config {
    const char *url;        /* redis://[:password@]host[:port][/db]; REFGATE_REDIS_URL
                               [redis://127.0.0.1:6390, the Redis of `make run`] */
    int connect_timeout_ms; /* [500] */
    int command_timeout_ms; /* [1000] */
    int64_t ttl_ms;         /* a page's keys expire this long after its last commit [24 h] */
    rg_redis *conn;         /* connections shared with the rest of the process, or NULL
                               to open its own from url (borrowed: outlives the store) */
} reg_redis_config;

void reg_redis_config_default(reg_redis_config *cfg);
/** Takes REFGATE_REDIS_URL (and REFGATE_REDIS_TIMEOUT_MS for commands) when set. */
void reg_redis_config_from_env(reg_redis_config *cfg);

/**
 * The Redis store (store_redis.c): any thread. Page keys of the form
 * "{t:<tenant>:s:<sid>}:<page>" put a session's keys under one hash tag.
 * Returns NULL with a reason in err when Redis cannot be reached at start;
 * later outages make operations fail with RG_EUNAVAIL until it is back.
 */
reg_store *reg_store_redis_new(const reg_redis_config *cfg, char *err, size_t errlen);
void reg_store_free(reg_store *s);

/* ---- configuration --------------------------------------------------------- */

typedef struct reg_config {
    int64_t stale_ms; /* REFGATE_REGISTRY_STALE_MS [60000] */
    size_t max;       /* REFGATE_REGISTRY_MAX [2000] */
    size_t keep_max;  /* REFGATE_OBSERVE_KEEP_MAX [8 MiB]: bytes of reply kept for deltas, 0: none */
} reg_config;

void reg_config_default(reg_config *cfg);
void reg_config_from_env(reg_config *cfg);

/* ---- pages and observe ----------------------------------------------------- */

typedef struct reg_world reg_world;

/**
 * A page to observe: a DevTools connection, the page's flattened session,
 * and the page's refgate world (reg_world_new), or NULL, in which case
 * every call finds the world itself (Page.getFrameTree and
 * Page.createIsolatedWorld: two more round trips; for tests and tools).
 */
typedef struct reg_page_handle {
    cdp_conn *conn;
    const char *session;
    reg_world *world;
} reg_page_handle;

/**
 * Sets up refgate's isolated world in a page, once, when the page is made:
 * the observer (observer.js) is installed into every new document of the
 * page in a JavaScript world of its own, out of the page's reach, and the
 * world's execution context is followed through navigations (Runtime must
 * be enabled on the session for that; without it every call finds the
 * context again). session is borrowed for the call. Returns 0, or the DevTools call's
 * error. Free with reg_world_free after the page's last call.
 */
int reg_world_new(cdp_conn *conn, const char *session, int timeout_ms, reg_world **out);
/**
 * The same for a caller that attaches the page's frames of other sites
 * itself (Target.setAutoAttach on the page's session, iframes, flattened),
 * as the session does to check their requests before they run: the world
 * sends no setAutoAttach of its own, which would change how frames are
 * held. It follows the frames attached after it is made; the caller tells
 * it of those attached before (reg_world_xframe_known).
 */
int reg_world_new_attached(cdp_conn *conn, const char *session, int timeout_ms, reg_world **out);
/** A frame of another site (its target and flattened session) attached before w was made. */
void reg_world_xframe_known(reg_world *w, const char *target, const char *session);
void reg_world_free(reg_world *w);
/**
 * Where the main frame's current document ended its load: the JSON text
 * {"u": URL, "t": title, "s": HTTP status or 0} that the observer sent
 * from the world at the document's load event (a Runtime binding, so no
 * call into the page after the load), into *json (free it). RG_ENOTFOUND
 * when the current document sent none (not loaded yet, loaded before the
 * observer was in it, or the report was forgotten since); the caller then
 * asks the page. reg_world_forget_load drops a report, before a navigation.
 */
int reg_world_loaded(reg_world *w, char **json);
void reg_world_forget_load(reg_world *w);
/**
 * The second report of the same document, sent a task after its load event
 * with what a checkpoint keeps of the page: {"st": 1, "u", "t", "s", "o",
 * "x", "y", "ls", "ss"} ("st": 0 and no storage when it was too large to
 * send), into *json (free it). Waits up to timeout_ms for it: RG_ETIMEOUT
 * when it did not come, RG_ENOTFOUND when the document has no report or is
 * gone; the caller then asks the page.
 */
int reg_world_load_final(reg_world *w, int timeout_ms, char **json);

typedef struct reg_page reg_page;

/**
 * The registry of one page: page_key names it in the store (the gateway uses
 * tenant, session and page). store is borrowed and must outlive the page.
 */
int reg_page_new(reg_store *store, const char *page_key, const reg_config *cfg, reg_page **out);
void reg_page_free(reg_page *pg);
/**
 * Writes the entries whose last-seen time in the store lags what this
 * worker saw (an observe leaves an unchanged entry unwritten for a while),
 * so that whoever reads the store next (a park, another worker) has every
 * entry's true last-seen time. 0, or the store's error.
 */
int reg_page_flush(reg_page *pg);
/**
 * Fences pg's writes (its observations' commits) with f, borrowed until pg
 * is freed; NULL unfences. A commit the fence refuses fails with RG_ECONFLICT.
 */
void reg_page_set_fence(reg_page *pg, const reg_fence *f);

/**
 * 1 when pg's registry holds ref (loading it from the store first when
 * needed), 0 when it does not, or the store's error. For telling a ref of
 * another page from one that expired.
 */
int reg_page_has(reg_page *pg, const char *ref);

enum reg_stability { REG_STABLE = 0, REG_NEW, REG_MOVED };

/**
 * One outline node as observe reports it: an element, or (is_text) a line of
 * the page's text, which has only depth and text (role "text", name and tag
 * ""): no ref, no identity, and it never enters the registry. Borrowed from
 * the observation.
 */
typedef struct reg_node {
    int depth;
    int is_text;
    const char *text;     /* a text line's text; an element's text after the colon, or NULL */
    const char *placeholder; /* a field's placeholder when it is not its name, or NULL */
    const char *url;         /* an Iframe of another site: its src's origin and path, or NULL */
    int xk;                  /* an Iframe's key in its document (its frame's outline goes
                                under it: registry/frames.c), else -1 */
    int xo[2];               /* an Iframe: where its viewport starts in the top one */
    const char *role, *name, *tag, *value;
    int level;            /* heading level or 0 */
    unsigned states;      /* REG_S_* bits */
    int interactive;      /* has a ref */
    int no_ref;           /* past the registry cap: listed, but given no ref */
    int editable;         /* an editing root (contenteditable): its value is its text */
    const char *ref;      /* "" when none */
    const char *previous_ref; /* moved elements whose ref changed, else NULL */
    int stability;
    int bounds[4];
    const char *frame;
    const char *selector;
    const char *const *alt;
    size_t n_alt;
    reg_identity ident;   /* borrowed strings */
    const char *name_attr;
    int index;            /* in the page-side list of the observation */
} reg_node;

enum {
    REG_S_CHECKED = 1 << 0,
    REG_S_DISABLED = 1 << 1,
    REG_S_EXPANDED = 1 << 2,
    REG_S_FOCUSED = 1 << 3,
    REG_S_SELECTED = 1 << 4,
    REG_S_REQUIRED = 1 << 5,
    REG_S_READONLY = 1 << 6,
};

enum reg_outline_mode {
    REG_MODE_FULL = 0,    /* elements, structure and the page's text */
    REG_MODE_INTERACTIVE, /* the elements with refs, under their headings and landmarks */
};

typedef struct reg_observe_opts {
    const char *scope_css; /* NULL: the whole page */
    int mode;              /* REG_MODE_* */
    int depth;             /* 0: all; else nesting deeper is folded into "- ... (N more)" */
    int viewport_only;
    size_t max_elements;   /* 0: the registry cap */
    int diff;              /* text holds only +/- lines against the previous observation */
    int no_selectors;      /* skip alternative selectors (the text outline does not show
                              them; the elements list and inspect do) */
    int no_bounds;         /* skip the refs' bounds, as no_selectors: nodes' bounds are then
                              zero and so are their registry entries' (never used to find
                              an element); viewport_only reads them all the same */
    int no_baseline;       /* a look that does not become the next diff's baseline (find) */
    int timeout_ms;
} reg_observe_opts;

/* The text outline's walk, in a reg_observe_opts initializer: what format
   `text` asks, and with it the snapshot event and a restore's re-binding,
   so that they share the page's kept answer (a walk of other options is
   another key there). */
#define REG_OBSERVE_TEXT .no_selectors = 1, .no_bounds = 1

/** An observation. Free with reg_observation_free. */
typedef struct reg_observation {
    char *url, *title;
    reg_node *nodes;
    size_t n_nodes;
    int truncated;
    size_t n_refs;         /* nodes with a ref */
    size_t n_new, n_moved, n_stable;
    size_t n_removed;      /* entries the store dropped (stale or over the cap) */
    size_t n_unmatched;    /* registered entries this observation found no element for
                              (after a restore: the refs lost; n_stable + n_moved kept) */
    size_t n_unwritten;    /* refs whose entries the commit left as they were: unchanged
                              but for where they sit, and written less than a quarter of
                              the stale time ago */
    int reused;            /* the page answered from its unchanged-page cache */
    int delta;             /* the page sent only what changed since the reply the page's
                              registry kept (registry.c); the result is the same either way */
    int mode;              /* the outline's REG_MODE_* */
    int depth;             /* the outline's folding depth, 0 for none */
    size_t n_text;         /* text lines (they are nodes too, with is_text) */
    char *text;            /* the outline (or the diff) */
    uint64_t snapshot_id;
    void *priv;            /* the parsed page reply that the nodes borrow from */
} reg_observation;

void reg_observation_free(reg_observation *o);

/**
 * Observes the page: runs the observer in it (installing it first when
 * needed), matches what it reports against the registry (same DOM node
 * first, then identity), gives refs to new elements, commits to the store
 * (stale cleanup and cap in the same step) and builds the outline.
 * Errors: the DevTools call's (RG_ETIMEOUT, RG_ECRASHED, ...), RG_EBADREQ
 * for a scope that matches nothing or is invalid, RG_EINTERNAL when the page
 * answered nonsense.
 */
int reg_observe(reg_page *pg, reg_page_handle h, const reg_observe_opts *opts,
                reg_observation *out);

/**
 * Builds the outline text of an observation (docs/protocol.md's format) in the
 * observation's mode and depth. Exposed for tests; reg_observe calls it.
 */
char *reg_outline(const reg_observation *o);

/**
 * The lines of `now` that are not in `before` prefixed "+ ", and those of
 * `before` no longer in `now` prefixed "- " (a line multiset difference in
 * the order of each text). Caller owns the result.
 */
char *reg_text_diff(const char *before, const char *now);

/** What observe's find looks for (find.c). */
typedef struct reg_find reg_find;

/**
 * Compiles a find: pattern as text (matched without regard to case), or with
 * regex a regular expression (POSIX extended, with \d, and "/re/i" for no
 * case). RG_EBADREQ with a sentence in err for an empty or too long pattern,
 * an invalid regex, a back-reference or repetition counts too large.
 */
int reg_find_new(const char *pattern, int regex, reg_find **out, char *err, size_t errlen);
void reg_find_free(reg_find *f);

/**
 * The outline's lines that match, in snippets: each matching line with
 * `context` lines before and after it (overlapping ones joined), after the
 * lines above it that it sits in, "..." where lines are left out, a blank line
 * between snippets, at most 100 snippets (then a line says how many more).
 * *out is "" when nothing matched; *n_matches counts the matching lines.
 * RG_EBADREQ with a sentence in err when a regex has not gone through the
 * outline within a second (glibc's matcher can be slow on patterns such as
 * (.*a){12}b), RG_ENOMEM.
 */
int reg_find_lines(const reg_find *f, const char *outline, int context, char **out,
                   size_t *n_matches, char *err, size_t errlen);

/* ---- targets and actions --------------------------------------------------- */

/** Where a target led. */
typedef struct reg_resolved {
    int index;                       /* page-side index, valid until the next observe */
    char ref[REG_REF_MAX];           /* the element's ref, "" when it has none */
    int healed;                      /* a ref re-bound by self-healing */
    char healed_from[REG_REF_MAX];
    const char *healed_via;          /* "testid", "aria_label", "id", "name" */
    int count;                       /* how many elements the locator matched */
} reg_resolved;

/**
 * Resolves a parsed target (with nth when has_nth; -1 is the last) to one
 * element. A ref goes through its cached node, whose identity must still
 * score >= 0.5 against the registry; else self-healing tries data-testid,
 * aria-label with role, id and the name attribute, and takes a match only
 * if exactly one element scores >= 0.5. Locators that match nothing are
 * polled until timeout_ms. Errors: RG_ESTALE (nothing confident: nothing is
 * done), RG_ENOMATCH, RG_EAMBIGUOUS (out->count), RG_EBADREQ (bad selector),
 * DevTools errors. err gets a sentence.
 */
int reg_resolve(reg_page *pg, reg_page_handle h, const reg_target *t, int has_nth, int nth,
                int timeout_ms, reg_resolved *out, char *err, size_t errlen);

enum reg_op {
    REG_OP_CLICK = 1,
    REG_OP_HOVER,
    REG_OP_FOCUS,
    REG_OP_FILL,
    REG_OP_TYPE,
    REG_OP_PRESS,
    REG_OP_SELECT,
    REG_OP_CHECK,
    REG_OP_UNCHECK,
    REG_OP_SCROLL,
    REG_OP_READ,
    REG_OP_SCREENSHOT,
    REG_OP_WAIT,
    REG_OP_INSPECT,
    REG_OP_UPLOAD,
    REG_OP_DRAG,
};

/* Modifier bits as DevTools numbers them. */
enum { REG_MOD_ALT = 1, REG_MOD_CTRL = 2, REG_MOD_META = 4, REG_MOD_SHIFT = 8 };

/** One action (docs/protocol.md, "Operations"). Strings are borrowed. */
typedef struct reg_action {
    int op;
    const char *target;     /* NULL: the focused element (type, press) or the page */
    int has_nth, nth;
    const char *button;     /* click: left [default], right, middle */
    int click_count;        /* click: [1] */
    unsigned modifiers;     /* click: REG_MOD_* */
    const char *value;      /* fill */
    const char *text;       /* type; wait: text to appear */
    int delay_ms;           /* type: between characters [0] */
    const char *key;        /* press: "Enter", "Control+a", ... */
    const char *const *values; /* select */
    size_t n_values;
    int dx, dy;             /* scroll */
    const char *to;         /* scroll: top, bottom, target; drag: the target to drop on */
    const char *what;       /* read: text [default], html, value, attributes */
    const char *format;     /* screenshot: png [default], jpeg */
    int quality;            /* screenshot: jpeg quality, 0 for the default */
    int full_page;          /* screenshot */
    const char *state;      /* wait: visible, hidden, enabled, attached, detached */
    const char *url;        /* wait: a substring of the URL */
    const char *load;       /* wait: load or domcontentloaded (the document's readyState) */
    const char *const *files; /* upload: absolute paths of files the browser can read */
    size_t n_files;
    int timeout_ms;         /* [5000] */
} reg_action;

/** What an action returns. Free with reg_action_result_free. */
typedef struct reg_action_result {
    char ref[REG_REF_MAX];
    int has_point;
    double x, y;            /* click, hover: the point in CSS px */
    int has_scroll;
    double sx, sy;          /* click, hover: the page's scroll as the pointer acted; fill: as
                               the value was set */
    int healed;
    char healed_from[REG_REF_MAX];
    const char *healed_via;
    int checked;            /* check, uncheck */
    cJSON *value;           /* read, select (selected), inspect, scroll {x, y}: owned */
    unsigned char *data;    /* screenshot bytes, owned */
    size_t data_len;
    int width, height;      /* screenshot */
    int64_t ms;             /* wait: how long it took */
    int count;              /* how many elements the target matched (RG_EAMBIGUOUS says it) */
} reg_action_result;

void reg_action_result_free(reg_action_result *r);

/**
 * Runs one action on the page. Element actions resolve their target first
 * (reg_resolve) and wait, up to timeout_ms, until the element is attached,
 * visible, stable, enabled and (for pointer actions) receives the pointer at
 * its centre, else RG_ENOTACTIONABLE. Errors carry a sentence in err.
 *
 * upload sets a->files on an <input type=file> (DOM.setFileInputFiles; the
 * page sees input and change as from a file chooser). It does not wait for
 * visibility: file inputs are often hidden behind a styled label. A target
 * that is not a file input is RG_EBADREQ, several files for an input
 * without `multiple` too, and a disabled input RG_ENOTACTIONABLE.
 */
int reg_act(reg_page *pg, reg_page_handle h, const reg_action *a, reg_action_result *out,
            char *err, size_t errlen);

/**
 * What a reload loses, from the elements of the last observation of pg: the
 * fields whose value differs from their default (text, textareas,
 * checkboxes, radios, selects; never password fields), the text of
 * contenteditable elements, the focused element, and the scroll offsets of
 * scrolled containers (by CSS path). *out is JSON keyed by ref, owned by the
 * caller: {"fields":[{"ref":"@q","value":"milk"},{"ref":"@agree","checked":
 * true},{"ref":"@size","selected":["m"]}],"focus":"@q","scroll":[{"css":
 * "...","x":0,"y":120}]}. A field whose element has no ref is not kept.
 * When the page's current document is not the one last observed (a
 * navigation since), nothing is captured and the page is not asked: *out
 * stays NULL and the call returns 0.
 */
int reg_state_capture(reg_page *pg, reg_page_handle h, char **out);

/**
 * Puts a reg_state_capture back on a (reloaded) page, after an observation
 * of it that re-bound the refs: values set as fill sets them (input and
 * change fire), checkboxes, selections, contenteditable text, scroll and
 * focus. *restored fields went back; *lost had no element with that ref.
 * RG_EBADREQ for a state that is not a capture's JSON.
 */
int reg_state_restore(reg_page *pg, reg_page_handle h, const char *state, int *restored,
                      int *lost);

/**
 * Counts, in *edited, the fields of h's whole document (in refgate's world)
 * whose value a reload would reset: typed text (password fields included),
 * toggled checkboxes and radios, changed selections, chosen files; at most
 * the first 5000 fields are looked at. 0, or the page call's error.
 */
int reg_state_edited(reg_page_handle h, int *edited);

/** The page-side observer script (registry/observer/, embedded at build time). */
extern const char reg_observer_js[];

#endif
