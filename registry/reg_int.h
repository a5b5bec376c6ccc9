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
 * A reply {"error": "..."} is RG_EBADREQ with the message in err; DevTools
 * errors keep their code (RG_ETIMEOUT, RG_ECRASHED, ...); a page exception
 * or a malformed reply is RG_EINTERNAL.
 */
int reg_js(reg_page_handle h, const char *call, int await_promise, int timeout_ms, cJSON **out,
           char *err, size_t errlen);

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
    char *prev_text[2]; /* the last outline of each mode (REG_MODE_*), for diffs */
    uint64_t seq;
    unsigned obs_gen;   /* 1 + reg_world_gen at the last observation (its document); 0: unknown */
    struct reg_base *base; /* the page's last reply as decoded, for its next delta, or NULL */
};


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

/* keys.c */
/** press: "Enter", "Control+a", ...; RG_EBADREQ for a key or modifier it does not know. */
int reg_press(reg_page_handle h, const char *spec, char *err, size_t errlen);
/** type: a key per character (insertText for the rest), until deadline (RG_ETIMEOUT). */
int reg_type_text(reg_page_handle h, const char *text, int delay_ms, int64_t deadline,
                  char *err, size_t errlen);

#endif
