/*
 * reg_int.h - private to registry/: calling the page-side script and small
 * JSON accessors shared by registry.c (observe) and act.c (targets, actions).
 */
#ifndef REG_INT_H
#define REG_INT_H

#include "registry/registry.h"

/**
 * Evaluates call in the page, where `g` is the installed page-side script
 * (registry/observer/; installed first when the document does not have
 * it). call must evaluate to a JSON string (or, with await_promise, a
 * promise of one). On success *out is the parsed object (caller owns).
 * A reply {"error": "..."} is RG_EBADREQ with the message in err (RG_ENOTACTIONABLE
 * with "code": "not_actionable": the element was disabled or left); DevTools
 * errors keep their code (RG_ETIMEOUT, RG_ECRASHED, ...); a page exception
 * or a malformed reply is RG_EINTERNAL.
 */
int reg_js(reg_page_handle h, const char *call, int await_promise, int timeout_ms, cJSON **out,
           char *err, size_t errlen);
/**
 * A page-side answer's {"error": "..."} (js may be any value): 0 when it has
 * none, else the message into err and RG_EBADREQ, or RG_ENOTACTIONABLE when
 * its "code" is "not_actionable". reg_js applies it to every reply.
 */
int reg_page_error(const cJSON *js, char *err, size_t errlen);
/* Lets the page forget a remote object of ours (objectId obj), without waiting. */
void reg_release_object(reg_page_handle h, const char *obj);

/** reg_js, and the length of the reply's JSON text into *len (NULL: not wanted). */
int reg_js_sized(reg_page_handle h, const char *call, int await_promise, int timeout_ms,
                 cJSON **out, size_t *len, char *err, size_t errlen);

/**
 * A DevTools handle on element index of the page-side script's list (the
 * element a resolve found), in refgate's world: its objectId into *object_id
 * (caller frees; release it with Runtime.releaseObject). RG_ESTALE when the
 * index holds no element any more; DevTools errors keep their code.
 */
int reg_js_element(reg_page_handle h, int index, int timeout_ms, char **object_id, char *err,
                   size_t errlen);

/* The isolated world the page-side script lives in (world.c). */
#define REG_WORLD_NAME "__refgate"
/* The binding the observer reports a document's load through (world.c, 99-api.js). */
#define REG_LOAD_BINDING "__refgateLoaded"

/** The script that installs observer.js and marks it with this build's tag. */
const char *reg_installer(void);
/** The main frame's id (Page.getFrameTree) into out. */
int reg_main_frame(reg_page_handle h, int timeout_ms, char *out, size_t outlen);
/** The world's execution context in the main frame's document, 0 when unknown. */
int reg_world_ctx(reg_world *w);
void reg_world_set_ctx(reg_world *w, int ctx);
/** How many contexts the world has had in the main frame (one per document it reached). */
unsigned reg_world_gen(reg_world *w);
const char *reg_world_frame(reg_world *w);

/* ---- frames of other sites (world.c, frames.c) ---- */

#define REG_XFRAMES_MAX 8 /* frames of other sites observed in one page */
/* Frames of other sites followed in one page: a page's dead or hidden ad
   frames must not take the places of the one an agent needs. */
#define REG_XFRAMES_TRACK 32

/** The page-side indexes [base, base + n) of an observation that are frame target's. */
typedef struct reg_xseg {
    char target[64];
    int base, n;
} reg_xseg;

/** A frame of another site in a page, as reg_world_xframes lists it. */
typedef struct reg_xframe {
    reg_page_handle h;  /* its session and world (h.session points into this struct) */
    char session[64], target[64];
    size_t slot;
    int key;            /* its owner element's key in the page's document, -1: not known yet */
    unsigned info;      /* its target's info changes seen when listed */
    int error;          /* 1: the browser's error page is in it, 0: not, -1: not known yet */
    int quiet;          /* it did not answer a while ago: left out for now */
} reg_xframe;

/**
 * The frames of other sites attached to the page of w (a page's world, not
 * a frame's), at most max, in out. The worlds of detached ones are freed.
 * The page's holder only.
 */
size_t reg_world_xframes(reg_world *w, reg_xframe *out, size_t max);
/** Makes x's world if it has none yet (x->h.world stays NULL if that fails). */
void reg_world_xframe_open(reg_world *w, reg_xframe *x, int timeout_ms);
/**
 * Adds the outline of a frame of another site, the page-side reply root
 * (taken over, freed with o), to o, to go under o's node at once refs are
 * given (reg_observation_place_frames): its nodes one level deeper, with
 * indexes of their own past the page's (pg->xsegs), "frame" "x<key>". 0 or
 * RG_ENOMEM.
 */
int reg_observation_add_frame(reg_page *pg, reg_observation *o, size_t at, const reg_xframe *x,
                              cJSON *root);
/**
 * Adds the outlines of the page's frames of other sites to o, each to go
 * under its Iframe line (registry/frames.c), with at most max refs among
 * them all. A frame that does not answer is left out, and so is everything
 * past REG_XFRAMES_MAX. 0 or RG_ENOMEM.
 */
int reg_frames_observe(reg_page *pg, reg_page_handle h, const reg_observe_opts *opts, size_t max,
                       reg_observation *o);
/**
 * The frame of another site whose key in the page's current document is key
 * into *x, and where its indexes start in the last observation into *base
 * (-1: not known), how many into *n. RG_ENOTFOUND when no attached frame has
 * that key.
 */
int reg_frames_find(reg_page *pg, reg_page_handle h, int key, reg_xframe *x, int *base, int *n);
/**
 * The frames of other sites that the last observation holds content of,
 * when it was of the page's current document: each into x[k] (opened, its
 * handle ready) with where its indexes start (base[k]) and how many (n[k]),
 * at most max. Their count.
 */
size_t reg_frames_last(reg_page *pg, reg_page_handle h, reg_xframe *x, int *base, int *n,
                       size_t max);
/**
 * 1 when call (a page call answering {"ok": bool}, as waitCheck) answers ok
 * in any frame of another site of the page h that holds a page of its own,
 * else 0. A frame that does not answer counts as not ok.
 */
int reg_frames_any(reg_page_handle h, const char *call);
/**
 * Where frame x's viewport is in the page's (h): xy[0], xy[1] in CSS px of
 * the page's viewport, and the page's scroll in xy[2], xy[3]. 0 or an error.
 */
int reg_frames_offset(reg_page_handle h, const reg_xframe *x, double xy[4]);
/**
 * The frame's element that is e's, found by identity (the frame observed
 * now), into *local (the frame's own index; -1 when no single element scores
 * at least REG_SAME_SCORE). For a frame whose indexes are not known here (a
 * session restored on this worker before its frames were in). 0 or the
 * call's error.
 */
int reg_frames_locate(reg_page_handle fh, const reg_entry *e, int *local);
/** Leaves x out of observations for ms (it did not answer). */
void reg_world_xframe_quiet(reg_world *w, const reg_xframe *x, int ms);
/** Keeps whether x holds the browser's error page, until its target's info changes. */
void reg_world_xframe_error(reg_world *w, const reg_xframe *x, int error);
/** Keeps x's key for the page's current document. */
void reg_world_xframe_key(reg_world *w, const reg_xframe *x, int key);

/* Shapes of observation whose last outlines a page keeps for diffs: the
   whole page in each mode, and a scoped or partial one or two. */
#define REG_BASELINES 4

/* A page's registry (see registry.c). */
struct reg_page {
    reg_store *store;
    char *key;
    const reg_fence *fence; /* borrowed (reg_page_set_fence), NULL: unfenced */
    reg_config cfg;
    reg_entry *entries; /* the store's view after the last commit */
    size_t n_entries;
    int loaded;
    char **prev_refs;   /* by page-side index of the previous observation */
    size_t n_prev;
    /* The last outline of each shape of observation (mode, depth, scope,
       viewport_only, max), for diffs: at most REG_BASELINES, the one used
       longest ago making room. */
    struct {
        char *shape, *text;
        uint64_t used; /* seq of the observation that last used it */
    } baseline[REG_BASELINES];
    uint64_t seq;
    unsigned obs_gen;   /* 1 + reg_world_gen at the last observation (its document); 0: unknown */
    struct reg_base *base; /* the page's last reply as decoded, for its next delta, or NULL */
    /* Frames of other sites: the page-side indexes of the last observation
       that are a frame's (its own index plus base), by the frame's target. */
    reg_xseg xsegs[REG_XFRAMES_MAX];
    size_t n_xsegs;
    /* An action on a ref in a frame (act.c): indexes are the frame's, and
       reg_page_index and reg_page_bind add or take away act_base (-1: the
       frame's indexes of the last observation are not known here). */
    char act_frame[16]; /* the frame's "x<key>", "" for none */
    int act_base, act_n;
    int act_hint;               /* act_base -1: act_ref's element found by identity, or -1 */
    char act_ref[REG_REF_MAX];
    reg_page_handle act_top;    /* the page the frame is in */
    reg_xframe act_xf;          /* the frame (act_xf.h.session is not set) */
};

/* Whether pg's last observation is of h's current document: its page-side
   indexes hold there. Only a world follows the documents: 0 without one. */
static inline int reg_observed_here(const reg_page *pg, reg_page_handle h)
{
    return h.world && pg->obs_gen == reg_world_gen(h.world) + 1;
}

/**
 * For tests: whether o's nodes are what the whole reply `reply` (a page-side
 * walk's JSON, parsed) decodes to, field by field, with the index each node
 * had in the previous observe as the registry uses it; 0 if so, else -1 with
 * the first difference in why.
 */
int reg_observation_check(const reg_observation *o, const cJSON *reply, char *why, size_t whylen);

/**
 * For the fuzzer: decodes whole (a page's whole observe reply), keeps it as a
 * base under the id "b", then applies delta (a reply against base "b") to it
 * as reg_observe would. 0 with the spliced node count in *n_nodes, or
 * RG_EINTERNAL for a reply that does not decode or fit (reg_observe asks again
 * then), RG_ENOMEM. Leaves nothing allocated.
 */
int reg_delta_try(const char *whole, size_t wlen, const char *delta, size_t dlen,
                  size_t *n_nodes);

/** Reloads pg->entries from the store. */
int reg_page_load(reg_page *pg);
/** Remembers that page-side index holds ref (for the cached-node path). */
int reg_page_bind(reg_page *pg, int index, const char *ref);
/** The page-side index of ref in the last observation, or -1 (ref may be NULL). */
int reg_page_index(const reg_page *pg, const char *ref);
/** Registers one element that has no ref yet (inspect): a fresh unique ref into ref. */
int reg_page_register(reg_page *pg, const reg_node *nd, char ref[REG_REF_MAX]);

const char *jstr(const cJSON *o, const char *k);
int jint(const cJSON *o, const char *k, int def);

/* outline.c */
/** One line of an outline: where it starts, its length without the newline, its index. */
typedef struct reg_line {
    const char *s;
    size_t n;
    size_t pos;
    int matched;
} reg_line;
/** The lines of t (which they point into); NULL when out of memory. Caller frees the array. */
reg_line *reg_split_lines(const char *t, size_t *n);

/* keys.c */
/** press: "Enter", "Control+a", ...; RG_EBADREQ for a key or modifier it does not know. */
int reg_press(reg_page_handle h, const char *spec, char *err, size_t errlen);
/** type: a key per character (insertText for the rest), until deadline (RG_ETIMEOUT). */
int reg_type_text(reg_page_handle h, const char *text, int delay_ms, int64_t deadline,
                  char *err, size_t errlen);

#endif
