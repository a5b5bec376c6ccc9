/*
 * registry.c - a page's element registry and observe: matching what the
 * page-side observer reports against registered entries, handing out refs,
 * committing to the store. The text outline and its diff are outline.c's.
 *
 * Matching, in order, for every element that gets a ref:
 *   0. the same DOM node as in the previous observation on this worker (the
 *      observer reports each node's index in its previous list): it keeps
 *      its ref whatever changed about it;
 *   1. the registered refs its identity asks for (base, base~2, ...): the
 *      best identity score >= 0.5 wins, ties go to the nearest document order;
 *   2. registered entries with the same role, name and tag (a reordered
 *      element whose sibling index changed): the nearest document order.
 * An element matched by none is new: it gets its base ref, or the first free
 * ~N suffix. A ref that is registered is never given to another element, so
 * an element that disappears leaves its ref pointing at nothing (stale_ref
 * when used), never at a look-alike.
 *
 * Threading: a reg_page is used by one thread at a time.
 */
#define _GNU_SOURCE
#include "registry/registry.h"
#include "registry/reg_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define OBSERVE_TIMEOUT_MS 10000
/* Replies a kept base may borrow from: past it the next observe asks for a whole reply. */
#define BASE_CHUNKS_MAX 16

/*
 * A parsed page reply (a whole one or a delta) that nodes borrow their
 * strings from, shared by the observations made from it and the page's base;
 * the last reference frees it. Observations may be freed on another thread
 * than the page's: the count is atomic.
 */
struct chunk {
    int refs;
    cJSON *root;
    size_t bytes; /* its JSON text, what the cap counts */
};

static struct chunk *chunk_ref(struct chunk *c)
{
    __atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
    return c;
}

static void chunk_unref(struct chunk *c)
{
    if (c && __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        cJSON_Delete(c->root);
        free(c);
    }
}

/*
 * The page's last reply as decoded (before refs were handed out), kept so
 * the next observe can ask the page for what changed only: the page-side
 * script keeps the same reply under the id it gave it (its "rid"). Only
 * used in the document (world generation) it came from.
 */
struct reg_base {
    char id[64];
    unsigned gen;            /* pg->obs_gen of the observation it came from */
    reg_node *nodes;         /* ref "", stability 0; strings in chunks[] */
    size_t n;
    const char **alts;       /* the nodes' alternative selectors, borrowed strings */
    unsigned char *chunk_of; /* by node: which of chunks[] holds its strings */
    struct chunk *chunks[BASE_CHUNKS_MAX];
    size_t n_chunks;
};

/* A frame's outline added to an observation (reg_observation_add_frame). */
struct xpart {
    cJSON *root;       /* the frame's reply, which its nodes borrow from */
    const char **alts; /* its nodes' alternative selectors */
    size_t at;         /* the page's node it goes under */
    size_t first, n;   /* its nodes in the observation, until they are placed */
    char frame[16];    /* "x<key>": its nodes' frame */
};

struct obs_priv {
    struct xpart xparts[REG_XFRAMES_MAX];
    size_t n_xparts;
    size_t n_page;      /* nodes of the page itself, before the frames' */
    int next_index;     /* the first page-side index a frame added next would take */
    reg_xseg segs[REG_XFRAMES_MAX]; /* the frames' indexes, pg->xsegs once committed */
    struct chunk *chunks[BASE_CHUNKS_MAX + 1]; /* replies the nodes borrow from, referenced */
    size_t n_chunks;
    unsigned char *chunk_of; /* by node: its chunk */
    int *prev;          /* by node: its page-side index in the previous observe, or -1 */
    char **refs;        /* refs handed out, owned */
    const char **alts;  /* alternative selectors of all nodes, borrowed strings */
};

static void base_free(struct reg_base *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n_chunks; i++)
        chunk_unref(b->chunks[i]);
    free(b->nodes);
    free(b->alts);
    free(b->chunk_of);
    free(b);
}

void reg_config_default(reg_config *cfg)
{
    cfg->stale_ms = 60000;
    cfg->max = 2000;
    cfg->keep_max = 8u << 20;
}

void reg_config_from_env(reg_config *cfg)
{
    cfg->stale_ms = rg_env_long("REFGATE_REGISTRY_STALE_MS", (long)cfg->stale_ms, 1, 86400000L);
    cfg->max = (size_t)rg_env_long("REFGATE_REGISTRY_MAX", (long)cfg->max, 1, 1000000L);
    cfg->keep_max = (size_t)rg_env_long("REFGATE_OBSERVE_KEEP_MAX", (long)cfg->keep_max, 0,
                                        1L << 30);
}

int reg_page_new(reg_store *store, const char *page_key, const reg_config *cfg, reg_page **out)
{
    *out = NULL;
    reg_page *pg = calloc(1, sizeof *pg);
    if (!pg || !(pg->key = strdup(page_key))) {
        free(pg);
        return RG_ENOMEM;
    }
    pg->store = store;
    if (cfg)
        pg->cfg = *cfg;
    else
        reg_config_default(&pg->cfg);
    *out = pg;
    return 0;
}

void reg_page_set_fence(reg_page *pg, const reg_fence *f)
{
    pg->fence = f;
}

static void free_prev(reg_page *pg)
{
    for (size_t i = 0; i < pg->n_prev; i++)
        free(pg->prev_refs[i]);
    free(pg->prev_refs);
    pg->prev_refs = NULL;
    pg->n_prev = 0;
}

void reg_page_free(reg_page *pg)
{
    if (!pg)
        return;
    reg_entries_free(pg->entries, pg->n_entries);
    free_prev(pg);
    base_free(pg->base);
    for (int i = 0; i < REG_BASELINES; i++) {
        free(pg->baseline[i].shape);
        free(pg->baseline[i].text);
    }
    free(pg->key);
    free(pg);
}

void reg_observation_free(reg_observation *o)
{
    if (!o)
        return;
    struct obs_priv *p = o->priv;
    if (p) {
        for (size_t i = 0; p->refs && i < o->n_nodes; i++)
            free(p->refs[i]);
        free(p->refs);
        free(p->alts);
        free(p->prev);
        free(p->chunk_of);
        for (size_t i = 0; i < p->n_chunks; i++)
            chunk_unref(p->chunks[i]);
        for (size_t i = 0; i < p->n_xparts; i++) {
            cJSON_Delete(p->xparts[i].root);
            free(p->xparts[i].alts);
        }
        free(p);
    }
    free(o->nodes);
    free(o->url);
    free(o->title);
    free(o->text);
    memset(o, 0, sizeof *o);
}

/* ---- decoding nodes ---- */

static unsigned state_bits(const cJSON *arr)
{
    static const char *names[] = {"checked", "disabled", "expanded", "focused",
                                  "selected", "required", "readonly"};
    unsigned bits = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, arr)
    {
        if (!cJSON_IsString(s))
            continue;
        for (unsigned i = 0; i < 7; i++)
            if (!strcmp(s->valuestring, names[i]))
                bits |= 1u << i;
    }
    return bits;
}

/* The alternative selectors a node of the reply carries. */
static size_t n_sel(const cJSON *it)
{
    return (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(it, "sel"));
}

/*
 * One node of the reply into *nd, its selectors appended at alts (room for
 * n_sel(it)), how many into *n_alt, its "p" into *prev (-1 when none).
 */
static void decode_one(const cJSON *it, reg_node *nd, const char **alts, size_t *n_alt,
                       int *prev, reg_observation *o)
{
    memset(nd, 0, sizeof *nd);
    *n_alt = 0;
    nd->depth = jint(it, "d", 0);
    nd->ref = "";
    *prev = -1;
    const char *x = jstr(it, "x");
    if (x) {
        /* a line of text: nothing but its place and its words */
        nd->is_text = 1;
        nd->text = x;
        nd->role = "text"; /* never NULL: callers compare roles and names */
        nd->xk = -1;
        nd->name = nd->tag = "";
        nd->index = -1;
        o->n_text++;
        return;
    }
    nd->text = jstr(it, "tx");
    nd->placeholder = jstr(it, "ph");
    nd->url = jstr(it, "u");
    nd->xk = jint(it, "xk", -1);
    const cJSON *xo = cJSON_GetObjectItemCaseSensitive(it, "xo");
    for (int k = 0; k < 2 && cJSON_IsArray(xo); k++) {
        const cJSON *v = cJSON_GetArrayItem(xo, k);
        nd->xo[k] = cJSON_IsNumber(v) && v->valuedouble > -1e9 && v->valuedouble < 1e9
                        ? (int)v->valuedouble
                        : 0;
    }
    nd->role = jstr(it, "role");
    nd->name = jstr(it, "name");
    nd->tag = jstr(it, "tag");
    nd->value = jstr(it, "value");
    nd->level = jint(it, "level", 0);
    nd->states = state_bits(cJSON_GetObjectItemCaseSensitive(it, "states"));
    nd->interactive = jint(it, "ia", 0) != 0;
    nd->no_ref = jint(it, "nr", 0) != 0;
    nd->editable = jint(it, "ce", 0) != 0;
    nd->frame = jstr(it, "frame");
    nd->index = jint(it, "i", -1); /* only nodes that may get a ref have one */
    *prev = jint(it, "p", -1);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(it, "b");
    for (int k = 0; k < 4 && cJSON_IsArray(b); k++) {
        const cJSON *bv = cJSON_GetArrayItem(b, k);
        nd->bounds[k] = cJSON_IsNumber(bv) && bv->valuedouble > -2147483648.0 &&
                                bv->valuedouble < 2147483648.0
                            ? (int)bv->valuedouble
                            : 0;
    }
    const cJSON *sel = cJSON_GetObjectItemCaseSensitive(it, "sel");
    const cJSON *sv;
    size_t a = 0;
    cJSON_ArrayForEach(sv, sel)
    {
        if (cJSON_IsString(sv))
            alts[a++] = sv->valuestring;
    }
    nd->alt = alts;
    nd->n_alt = a;
    *n_alt = a;
    nd->selector = a ? alts[0] : NULL;
    nd->ident.testid = (char *)jstr(it, "testid");
    nd->ident.id = (char *)jstr(it, "id");
    nd->ident.aria_label = (char *)jstr(it, "aria");
    nd->ident.role = (char *)nd->role;
    nd->ident.name = (char *)nd->name;
    nd->ident.tag = (char *)nd->tag;
    nd->ident.parent_role = (char *)jstr(it, "prole");
    nd->ident.sibling_index = jint(it, "sib", 0);
    nd->name_attr = jstr(it, "nattr");
}

static int alloc_nodes(reg_observation *o, struct obs_priv *p, size_t n, size_t n_alt)
{
    o->nodes = calloc(n ? n : 1, sizeof *o->nodes);
    p->refs = calloc(n ? n : 1, sizeof *p->refs);
    p->alts = calloc(n_alt ? n_alt : 1, sizeof *p->alts);
    p->prev = calloc(n ? n : 1, sizeof *p->prev);
    p->chunk_of = calloc(n ? n : 1, 1);
    return o->nodes && p->refs && p->alts && p->prev && p->chunk_of ? 0 : RG_ENOMEM;
}

/* A whole reply's "nodes", from chunk 0. */
static int decode_nodes(const cJSON *arr, reg_observation *o, struct obs_priv *p)
{
    size_t n = (size_t)cJSON_GetArraySize(arr);
    size_t n_alt = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        n_alt += n_sel(it);
    }
    if (alloc_nodes(o, p, n, n_alt) < 0)
        return RG_ENOMEM;
    size_t i = 0, a = 0, used;
    cJSON_ArrayForEach(it, arr)
    {
        decode_one(it, &o->nodes[i], &p->alts[a], &used, &p->prev[i], o);
        a += used;
        i++;
    }
    o->n_nodes = i;
    return 0;
}

static int moved(int v, int d);

/* The index the frame's node had in the last observation, or -1. */
static int frame_prev(const reg_page *pg, const char *target, int prev)
{
    for (size_t k = 0; prev >= 0 && k < pg->n_xsegs; k++)
        if (!strcmp(pg->xsegs[k].target, target))
            return prev < pg->xsegs[k].n ? pg->xsegs[k].base + prev : -1;
    return -1;
}

int reg_observation_add_frame(reg_page *pg, reg_observation *o, size_t at, const reg_xframe *x,
                              cJSON *root)
{
    struct obs_priv *p = o->priv;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "nodes");
    size_t n = (size_t)cJSON_GetArraySize(arr), n_alt = 0, total = o->n_nodes + n;
    if (!p || at >= o->n_nodes || p->n_xparts == REG_XFRAMES_MAX || !n) {
        cJSON_Delete(root);
        return 0;
    }
    if (!p->n_xparts) {
        p->n_page = o->n_nodes;
        for (size_t i = 0; i < o->n_nodes; i++)
            if (o->nodes[i].index >= p->next_index)
                p->next_index = o->nodes[i].index + 1;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        n_alt += n_sel(it);
    }
    const char **alts = calloc(n_alt ? n_alt : 1, sizeof *alts);
    reg_node *nodes = realloc(o->nodes, total * sizeof *nodes);
    if (nodes)
        o->nodes = nodes;
    char **refs = nodes ? realloc(p->refs, total * sizeof *refs) : NULL;
    if (refs)
        p->refs = refs;
    int *prev = refs ? realloc(p->prev, total * sizeof *prev) : NULL;
    if (prev)
        p->prev = prev;
    unsigned char *chunk_of = prev ? realloc(p->chunk_of, total) : NULL;
    if (chunk_of)
        p->chunk_of = chunk_of;
    if (!alts || !chunk_of) {
        free(alts);
        cJSON_Delete(root);
        return RG_ENOMEM;
    }
    memset(refs + o->n_nodes, 0, n * sizeof *refs);
    memset(chunk_of + o->n_nodes, 0, n); /* not read: the base is the page's nodes only */
    struct xpart *xp = &p->xparts[p->n_xparts++];
    *xp = (struct xpart){.root = root, .alts = alts, .at = at, .first = o->n_nodes, .n = n};
    snprintf(xp->frame, sizeof xp->frame, "x%d", x->key);
    /* "same": the frame handed back its unchanged last answer, whose nodes
       sit at the indexes they had (as assign_refs reads a page's) */
    int same = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "same"));
    int depth = o->nodes[at].depth + 1, base = p->next_index, n_index = 0;
    int ox = o->nodes[at].xo[0], oy = o->nodes[at].xo[1];
    size_t i = o->n_nodes, a = 0, used;
    cJSON_ArrayForEach(it, arr)
    {
        reg_node *nd = &nodes[i];
        decode_one(it, nd, &alts[a], &used, &prev[i], o);
        a += used;
        nd->depth += depth;
        nd->frame = xp->frame;
        if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(it, "b"))) {
            /* in the top viewport, as the page's (none when none were asked for) */
            nd->bounds[0] = moved(nd->bounds[0], ox);
            nd->bounds[1] = moved(nd->bounds[1], oy);
        }
        if (nd->index >= 0) {
            if (nd->index >= n_index)
                n_index = nd->index + 1;
            prev[i] = frame_prev(pg, x->target, same ? nd->index : prev[i]);
            nd->index += base;
        }
        i++;
    }
    reg_xseg *sg = &p->segs[p->n_xparts - 1];
    snprintf(sg->target, sizeof sg->target, "%s", x->target);
    sg->base = base;
    sg->n = n_index;
    p->next_index = base + n_index;
    o->n_nodes = total;
    return 0;
}

/* Moves each frame's nodes under its Iframe line, once refs are given. */
static int place_frames(reg_observation *o, struct obs_priv *p)
{
    if (!p->n_xparts)
        return 0;
    reg_node *nodes = malloc(o->n_nodes * sizeof *nodes);
    if (!nodes)
        return RG_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < p->n_page; i++) {
        nodes[k++] = o->nodes[i];
        for (size_t f = 0; f < p->n_xparts; f++) {
            if (p->xparts[f].at != i)
                continue;
            memcpy(&nodes[k], &o->nodes[p->xparts[f].first], p->xparts[f].n * sizeof *nodes);
            k += p->xparts[f].n;
        }
    }
    free(o->nodes);
    o->nodes = nodes;
    return 0;
}

/* A whole number in [lo, hi], or -1. */
static long whole(const cJSON *v, long lo, long hi)
{
    if (!cJSON_IsNumber(v) || v->valuedouble < (double)lo || v->valuedouble > (double)hi ||
        v->valuedouble != (double)(long)v->valuedouble)
        return -1;
    return (long)v->valuedouble;
}

/* Bounds a delta's run may move by, and a moved coordinate, clamped as
   decode_one clamps the page's. */
#define MOVE_MAX (1L << 30)

static int is_move(const cJSON *v)
{
    return cJSON_IsNumber(v) && v->valuedouble >= -(double)MOVE_MAX &&
           v->valuedouble <= (double)MOVE_MAX && v->valuedouble == (double)(long)v->valuedouble;
}

static int moved(int v, int d)
{
    long long r = (long long)v + d;
    return r > INT_MAX ? INT_MAX : r < INT_MIN ? INT_MIN : (int)r;
}

/*
 * A delta's "ops" against the base b (whose chunks are p's first ones, the
 * delta's own the last): a run [q, n] is the base's nodes q..q+n-1 as they
 * were, a run [q, n, dx, dy] the same with the bounds of those with an index
 * moved by (dx, dy), an object a node written out. A node from the base that has an index
 * gets its place among the indexed nodes as its index and its base index as
 * its previous one, which is what the page's walk gave it (50-observe.js,
 * deltaReply); a written-out node must already have that index. Anything
 * else is RG_EINTERNAL: the caller asks again for a whole reply.
 */
static int decode_delta(const cJSON *ops, long count, const struct reg_base *b,
                        reg_observation *o, struct obs_priv *p)
{
    if (!cJSON_IsArray(ops) || count < 0)
        return RG_EINTERNAL;
    size_t n = 0, n_alt = 0;
    const cJSON *op;
    cJSON_ArrayForEach(op, ops)
    {
        if (cJSON_IsObject(op)) {
            n_alt += n_sel(op);
            n++;
            continue;
        }
        long q = cJSON_IsArray(op) ? whole(op->child, 0, (long)b->n) : -1;
        long k = q >= 0 ? whole(op->child->next, 1, (long)b->n - q) : -1;
        if (k < 0)
            return RG_EINTERNAL;
        const cJSON *mx = op->child->next->next;
        if (mx && (!is_move(mx) || !is_move(mx->next) || mx->next->next))
            return RG_EINTERNAL;
        for (long j = q; j < q + k; j++)
            n_alt += b->nodes[j].n_alt;
        n += (size_t)k;
    }
    if (n != (size_t)count)
        return RG_EINTERNAL;
    if (alloc_nodes(o, p, n, n_alt) < 0)
        return RG_ENOMEM;
    size_t i = 0, a = 0, used;
    int ordinal = 0;
    unsigned char own = (unsigned char)(p->n_chunks - 1);
    cJSON_ArrayForEach(op, ops)
    {
        if (cJSON_IsObject(op)) {
            reg_node *nd = &o->nodes[i];
            decode_one(op, nd, &p->alts[a], &used, &p->prev[i], o);
            a += used;
            if (nd->index >= 0 && nd->index != ordinal++)
                return RG_EINTERNAL;
            p->chunk_of[i++] = own;
            continue;
        }
        size_t q = (size_t)op->child->valuedouble, k = (size_t)op->child->next->valuedouble;
        const cJSON *mx = op->child->next->next;
        int dx = mx ? (int)mx->valuedouble : 0, dy = mx ? (int)mx->next->valuedouble : 0;
        for (size_t j = q; j < q + k; j++, i++) {
            reg_node *nd = &o->nodes[i];
            const reg_node *bn = &b->nodes[j];
            *nd = *bn;
            nd->alt = &p->alts[a];
            for (size_t m = 0; m < bn->n_alt; m++)
                p->alts[a++] = bn->alt[m];
            nd->selector = nd->n_alt ? nd->alt[0] : NULL;
            p->prev[i] = -1;
            if (bn->index >= 0) {
                p->prev[i] = bn->index;
                nd->index = ordinal++;
                nd->bounds[0] = moved(bn->bounds[0], dx);
                nd->bounds[1] = moved(bn->bounds[1], dy);
            }
            o->n_text += nd->is_text != 0;
            p->chunk_of[i] = b->chunk_of[j];
        }
    }
    o->n_nodes = n;
    return 0;
}

/*
 * Keeps what the observation o decoded (before its refs) as the page's base
 * for the next delta, under the page's id for it; only the replies its nodes
 * still borrow from stay referenced. Nothing is kept when the page gave no id,
 * over the cap (REFGATE_OBSERVE_KEEP_MAX, bytes of reply text) or out of
 * memory: the next observe then asks for a whole reply.
 */
static void keep_base(reg_page *pg, const reg_observation *o, const struct obs_priv *p,
                      const char *rid)
{
    /* the page's own nodes: its next delta is against its own reply */
    size_t n_nodes = p->n_xparts ? p->n_page : o->n_nodes;
    base_free(pg->base);
    pg->base = NULL;
    if (!rid || strlen(rid) >= sizeof pg->base->id || !pg->cfg.keep_max)
        return;
    int map[BASE_CHUNKS_MAX + 1];
    for (size_t c = 0; c < p->n_chunks; c++)
        map[c] = -1;
    for (size_t i = 0; i < n_nodes; i++)
        map[p->chunk_of[i]] = 0;
    size_t n_ch = 0, bytes = 0, n_alt = 0;
    for (size_t c = 0; c < p->n_chunks; c++) {
        if (map[c] < 0)
            continue;
        map[c] = (int)n_ch++;
        bytes += p->chunks[c]->bytes;
    }
    if (n_ch > BASE_CHUNKS_MAX || bytes > pg->cfg.keep_max)
        return;
    for (size_t i = 0; i < n_nodes; i++)
        n_alt += o->nodes[i].n_alt;
    struct reg_base *b = calloc(1, sizeof *b);
    if (!b)
        return;
    size_t n = n_nodes;
    b->nodes = malloc((n ? n : 1) * sizeof *b->nodes);
    b->alts = malloc((n_alt ? n_alt : 1) * sizeof *b->alts);
    b->chunk_of = malloc(n ? n : 1);
    if (!b->nodes || !b->alts || !b->chunk_of) {
        base_free(b);
        return;
    }
    snprintf(b->id, sizeof b->id, "%s", rid);
    b->gen = pg->obs_gen;
    b->n = n;
    size_t a = 0;
    for (size_t i = 0; i < n; i++) {
        reg_node *nd = &b->nodes[i];
        *nd = o->nodes[i];
        nd->ref = "";
        nd->previous_ref = NULL;
        nd->stability = 0;
        if (nd->n_alt)
            memcpy(&b->alts[a], o->nodes[i].alt, nd->n_alt * sizeof *b->alts);
        nd->alt = &b->alts[a];
        nd->selector = nd->n_alt ? nd->alt[0] : NULL;
        a += nd->n_alt;
        b->chunk_of[i] = (unsigned char)map[p->chunk_of[i]];
    }
    for (size_t c = 0; c < p->n_chunks; c++)
        if (map[c] >= 0)
            b->chunks[map[c]] = chunk_ref(p->chunks[c]);
    b->n_chunks = n_ch;
    pg->base = b;
}

/* ---- matching ---- */

static int wants_ref(const reg_node *nd)
{
    return !nd->is_text && !nd->no_ref &&
           (nd->interactive || (nd->ident.testid && *nd->ident.testid));
}

static int entry_by_ref_cmp(const void *a, const void *b)
{
    return strcmp((*(reg_entry *const *)a)->ref, (*(reg_entry *const *)b)->ref);
}

/*
 * A number per ref string, for one observation: open addressing on the
 * string's xxHash, the strings not copied (they outlive the table). Made
 * for at most n strings, so it never fills past half.
 *
 * assign_refs keeps in one the suffix the last new element of each base
 * ref got: the next one of the same base starts after it. Every suffix
 * below it was taken or held by an entry then, and still is (refs are only
 * ever taken here), so the ref is the same as trying from 1 - without
 * trying them all again: on a page of many look-alikes (a hundred "Add to
 * cart" buttons) that was quadratic. In another, the refs this observation
 * handed out (until 7 December a sorted array, each new ref inserted in
 * place: memory moved quadratic in the new refs, 5,000 on the controls
 * page). run_of keeps in a third where each base's run is.
 */
struct ref_table {
    const char **key; /* NULL: free */
    int *v;
    size_t cap;  /* a power of two */
    size_t used; /* at most half of cap */
};

static int ref_table_init(struct ref_table *t, size_t n)
{
    t->cap = 16;
    while (t->cap < 2 * n)
        t->cap *= 2;
    t->used = 0;
    t->key = calloc(t->cap, sizeof *t->key);
    t->v = calloc(t->cap, sizeof *t->v);
    return t->key && t->v ? 0 : RG_ENOMEM;
}

static void ref_table_free(struct ref_table *t)
{
    free(t->key);
    free(t->v);
    memset(t, 0, sizeof *t);
}

/* Where key is or would go. */
static size_t ref_table_at(const struct ref_table *t, const char *key)
{
    size_t i = (size_t)XXH3_64bits(key, strlen(key)) & (t->cap - 1);
    while (t->key[i] && strcmp(t->key[i], key))
        i = (i + 1) & (t->cap - 1);
    return i;
}

/* key's number, or NULL when it has none (or there is no table). */
static int *ref_table_find(const struct ref_table *t, const char *key)
{
    if (!t->cap)
        return NULL;
    size_t i = ref_table_at(t, key);
    return t->key[i] ? &t->v[i] : NULL;
}

/* key's number, made (0) when new; NULL when a new one would fill the table
   past half (its makers size it for what they put in: never). key must
   outlive the table. */
static int *ref_table_slot(struct ref_table *t, const char *key)
{
    size_t i = ref_table_at(t, key);
    if (!t->key[i]) {
        if (2 * (t->used + 1) > t->cap)
            return NULL;
        t->used++;
        t->key[i] = key;
    }
    return &t->v[i];
}

/*
 * Entries in the order a pick among equals takes them (struct run_ord):
 * by their identity signals (a hash of them), the latest seen first, then
 * by order, then by suffix. Two kinds: a base's run, the entries of its
 * refs from suffix 1 on up to the first suffix that is no entry (what
 * pass 1's scan of a base meets), and the exact index, every entry of the
 * page. With them the entries that score 1 against an element, and of
 * those the ones at or near its place, are a search away instead of a
 * score of every look-alike.
 */
struct run_ord {
    uint64_t sig; /* signals_hash of the entry (0 in a run whose entries are all alike) */
    int64_t seen; /* when an observation last saw it */
    int order;
    int k; /* the suffix of its ref (1: none) */
    reg_entry *e;
};

struct run {
    reg_entry **e; /* a base's run: e[k - 1] is base~k (base itself for k = 1) */
    int n;
    int same;            /* every entry has the first one's signals */
    struct run_ord *ord; /* NULL for a run of one, and for a run whose entries differ */
};

struct matcher {
    reg_entry **by_ref; /* entries sorted by ref */
    size_t n;
    unsigned char *claimed; /* by index into pg->entries */
    reg_entry *base;
    struct ref_table taken; /* refs handed out in this observation */
    /* pass 1's look-alikes (run_of): base -> its run's index + 1 in run_list */
    struct ref_table runs;
    struct run *run_list;
    size_t n_runs, max_runs; /* max_runs: the nodes pass 1 may ask for */
    struct run exact;        /* every entry, by signals (entry_index) */
    struct run loose;        /* every entry, by role, name and tag (entry_index) */
};

static reg_entry *find_ref(struct matcher *m, const char *ref)
{
    reg_entry key, *kp = &key;
    snprintf(key.ref, sizeof key.ref, "%s", ref);
    reg_entry **hit = m->n ? bsearch(&kp, m->by_ref, m->n, sizeof *m->by_ref, entry_by_ref_cmp)
                           : NULL;
    return hit ? *hit : NULL;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int taken(const struct matcher *m, const char *ref)
{
    return ref_table_find(&m->taken, ref) != NULL;
}

/* ref (kept until the table goes) is handed out. */
static int take(struct matcher *m, const char *ref)
{
    int *v = ref_table_slot(&m->taken, ref);
    if (!v)
        return RG_ENOMEM; /* the table was made for every ref: not reached */
    *v = 1;
    return 0;
}

static int claimable(struct matcher *m, const reg_entry *e)
{
    return e && !m->claimed[e - m->base];
}

static void suffixed(const char *base, int k, char out[REG_REF_MAX])
{
    if (k <= 1)
        snprintf(out, REG_REF_MAX, "%s", base);
    else
        snprintf(out, REG_REF_MAX, "%.*s~%d", REG_REF_MAX - 12, base, k);
}

/* when an observation last saw e */
static int64_t seen_at(const reg_entry *e)
{
    return e->seen_ms > e->last_seen_ms ? e->seen_ms : e->last_seen_ms;
}

static long order_gap(const reg_entry *e, size_t pos)
{
    long d = (long)e->order - (long)pos;
    return d < 0 ? -d : d;
}

/* Of two entries that score the same, a scan's choice: e over best when an
   observation saw it later, or as late and nearer to pos (of two as near,
   the scan keeps the one it met first). */
static int nearer(const reg_entry *e, const reg_entry *best, size_t pos)
{
    int64_t se = seen_at(e), sb = seen_at(best);
    return se > sb || (se == sb && order_gap(e, pos) < order_gap(best, pos));
}

/* a and b carry the same signals of the identity score (an empty string
   is no signal, as for the score): they score 1 against each other */
static int same_signal(const char *a, const char *b)
{
    int ha = a && *a, hb = b && *b;
    return ha == hb && (!ha || !strcmp(a, b));
}

static int same_signals(const reg_identity *a, const reg_identity *b)
{
    return a->sibling_index == b->sibling_index && same_signal(a->testid, b->testid) &&
           same_signal(a->id, b->id) && same_signal(a->aria_label, b->aria_label) &&
           same_signal(a->role, b->role) && same_signal(a->name, b->name) &&
           same_signal(a->tag, b->tag) && same_signal(a->parent_role, b->parent_role);
}

/* Adds the strings f[0..n) to st, each ended by a byte no signal needs
   (absent and empty alike, as for same_signal and same_str). */
static void hash_strings(XXH3_state_t *st, const char *const *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (f[i])
            XXH3_64bits_update(st, f[i], strlen(f[i]));
        XXH3_64bits_update(st, "\x1f", 1);
    }
}

/* A hash of the signals same_signals compares: equal for any two it finds the
   same (two different sets that share one are told apart by nearest). */
static uint64_t signals_hash(const reg_identity *id)
{
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    const char *f[] = {id->testid, id->id,  id->aria_label, id->role,
                       id->name,   id->tag, id->parent_role};
    hash_strings(&st, f, sizeof f / sizeof f[0]);
    XXH3_64bits_update(&st, &id->sibling_index, sizeof id->sibling_index);
    return XXH3_64bits_digest(&st);
}

/* Of equals, the lower suffix first, then (refs of different bases) the lower ref. */
static int suffix_cmp(const struct run_ord *x, const struct run_ord *y)
{
    if (x->k != y->k)
        return x->k < y->k ? -1 : 1;
    return strcmp(x->e->ref, y->e->ref);
}

static int run_ord_cmp(const void *a, const void *b)
{
    const struct run_ord *x = a, *y = b;
    if (x->sig != y->sig)
        return x->sig < y->sig ? -1 : 1;
    if (x->seen != y->seen)
        return x->seen > y->seen ? -1 : 1;
    if (x->order != y->order)
        return x->order < y->order ? -1 : 1;
    return suffix_cmp(x, y);
}

static void run_free(struct run *r)
{
    free(r->e);
    free(r->ord);
    memset(r, 0, sizeof *r);
}

/* base's run, made at its first ask; NULL with *rc RG_ENOMEM when there was
   no memory for it. */
static const struct run *run_of(struct matcher *m, const char *base, int *rc)
{
    if (!m->runs.cap) {
        m->run_list = calloc(m->max_runs ? m->max_runs : 1, sizeof *m->run_list);
        if (!m->run_list || ref_table_init(&m->runs, m->max_runs) < 0)
            goto nomem;
    }
    int *v = ref_table_slot(&m->runs, base);
    if (v && *v)
        return &m->run_list[*v - 1];
    if (!v || m->n_runs >= m->max_runs) /* one base per node asked: not reached */
        goto nomem;
    struct run *r = &m->run_list[m->n_runs];
    int cap = 0;
    /* a run is at most every entry long (until 7 December, 999 suffixes:
       the scan went through every one for each element) */
    for (int k = 1; (size_t)k <= m->n && k < INT_MAX; k++) {
        char ref[REG_REF_MAX];
        suffixed(base, k, ref);
        reg_entry *e = find_ref(m, ref);
        if (!e)
            break;
        if (r->n == cap) {
            int ncap = cap ? 2 * cap : 4;
            reg_entry **ne = realloc(r->e, (size_t)ncap * sizeof *ne);
            if (!ne)
                goto fail;
            r->e = ne;
            cap = ncap;
        }
        r->e[r->n++] = e;
    }
    r->same = 1;
    for (int i = 1; i < r->n && r->same; i++)
        r->same = same_signals(&r->e[0]->ident, &r->e[i]->ident);
    /* a run whose entries differ is only scanned (the exact index has them by signals) */
    if (r->n > 1 && r->same) {
        if (!(r->ord = malloc((size_t)r->n * sizeof *r->ord)))
            goto fail;
        for (int i = 0; i < r->n; i++)
            r->ord[i] = (struct run_ord){
                .seen = seen_at(r->e[i]), .order = r->e[i]->order, .k = i + 1, .e = r->e[i]};
        qsort(r->ord, (size_t)r->n, sizeof *r->ord, run_ord_cmp);
    }
    *v = (int)++m->n_runs;
    return r;
fail:
    run_free(r);
nomem:
    *rc = RG_ENOMEM;
    return NULL;
}

/* The suffix of a ref: N of base~N, 1 for none. */
static int suffix_of(const char *ref)
{
    const char *t = strrchr(ref, '~');
    long k = t ? strtol(t + 1, NULL, 10) : 1;
    return k > 1 && k < INT_MAX ? (int)k : 1;
}

/* A hash of role, name and tag, equal for any two same_str finds the same. */
static uint64_t loose_hash(const reg_identity *id)
{
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    const char *f[] = {id->role, id->name, id->tag};
    hash_strings(&st, f, sizeof f / sizeof f[0]);
    return XXH3_64bits_digest(&st);
}

/*
 * The exact index (loose 0: every entry by its signals, of equals the lower
 * suffix) or the loose one (loose 1: by role, name and tag, of equals the
 * first in pg->entries, as pass 2's scan of the entries took them), made at
 * its first ask. NULL with *rc RG_ENOMEM when there was no memory for it.
 */
static const struct run *entry_index(struct matcher *m, int loose, int *rc)
{
    struct run *r = loose ? &m->loose : &m->exact;
    if (r->ord || !m->n)
        return r;
    if (!(r->ord = malloc(m->n * sizeof *r->ord))) {
        *rc = RG_ENOMEM;
        return NULL;
    }
    for (size_t i = 0; i < m->n; i++) {
        reg_entry *e = &m->base[i];
        r->ord[i] = (struct run_ord){.sig = loose ? loose_hash(&e->ident) : signals_hash(&e->ident),
                                     .seen = seen_at(e),
                                     .order = e->order,
                                     .k = loose ? (int)i + 1 : suffix_of(e->ref),
                                     .e = e};
    }
    r->n = (int)m->n;
    qsort(r->ord, m->n, sizeof *r->ord, run_ord_cmp);
    return r;
}

/* r->ord[lo, hi) holds first the ones before() says come before key, then the
   rest: the first of the rest (hi when there is none). */
static int ord_bound(const struct run *r, int lo, int hi, const struct run_ord *key,
                     int (*before)(const struct run_ord *, const struct run_ord *))
{
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (before(&r->ord[mid], key))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int order_before(const struct run_ord *o, const struct run_ord *key)
{
    return o->order < key->order;
}

static int sig_before(const struct run_ord *o, const struct run_ord *key)
{
    return o->sig < key->sig;
}

/* o is of key's slice: its signals, seen when key was */
static int in_slice(const struct run_ord *o, const struct run_ord *key)
{
    return o->sig == key->sig && o->seen == key->seen;
}

static int same_str(const char *a, const char *b)
{
    return (a ? a : "")[0] == (b ? b : "")[0] && !strcmp(a ? a : "", b ? b : "");
}

/* Whether e, of r, may be the pick for nd (NULL: any claimable entry): of
   the loose index, one with nd's role, name and tag that scores
   REG_SAME_SCORE; else one with all of nd's signals. */
static int pickable(struct matcher *m, const struct run *r, const reg_entry *e, const reg_node *nd)
{
    if (!claimable(m, e))
        return 0;
    if (!nd)
        return 1;
    if (r != &m->loose)
        return same_signals(&e->ident, &nd->ident);
    return same_str(e->ident.role, nd->ident.role) && same_str(e->ident.name, nd->ident.name) &&
           same_str(e->ident.tag, nd->ident.tag) &&
           reg_identity_score(&e->ident, &nd->ident) >= REG_SAME_SCORE;
}

/*
 * Of r->ord[first, end), entries seen at one time, the pickable entry
 * nearest to pos, of two as near the lower suffix (suffix_cmp); NULL when
 * none is.
 */
static reg_entry *nearest_in(struct matcher *m, const struct run *r, int first, int end, size_t pos,
                             const reg_node *nd)
{
    long p = (long)pos;
    int lo = ord_bound(r, first, end, &(struct run_ord){.order = (int)pos}, order_before);
    /* at or after pos: the first pickable one (of one order, the lowest suffix comes first) */
    const struct run_ord *up = NULL;
    for (int i = lo; i < end && !up; i++)
        if (pickable(m, r, r->ord[i].e, nd))
            up = &r->ord[i];
    /* before pos: the nearest order with a pickable entry, its lowest suffix */
    const struct run_ord *down = NULL;
    for (int i = lo - 1; i >= first; i--) {
        if (down && r->ord[i].order != down->order)
            break;
        if (up && p - r->ord[i].order > (long)up->order - p)
            break;
        if (pickable(m, r, r->ord[i].e, nd))
            down = &r->ord[i];
    }
    if (!up || !down) {
        const struct run_ord *o = up ? up : down;
        return o ? o->e : NULL;
    }
    long gu = (long)up->order - p, gd = p - down->order;
    return gd < gu || (gd == gu && suffix_cmp(down, up) < 0) ? down->e : up->e;
}

/*
 * Of the entries of r with signals sig (every one of a run whose entries
 * are all alike), the pickable one an observation saw last, of those the
 * nearest to pos, of two as near the lower suffix; with nd, only entries
 * whose signals are nd's (so that score 1 against it: a hash that two sets
 * of signals share is passed over). NULL when there is none. Found from
 * pos outwards by order, not by scoring every look-alike: on a reload of a
 * list whose items each hold the same button, or the same test id on
 * links of different names, with one element more above them (every place
 * moved by one), that was quadratic. The latest seen first: an entry of an
 * element gone since (a row deleted, renamed) does not take the ref of an
 * unchanged one that the last observation saw.
 */
static reg_entry *nearest(struct matcher *m, const struct run *r, uint64_t sig, size_t pos,
                          const reg_node *nd)
{
    if (!r->ord)
        return pickable(m, r, r->e[0], nd) ? r->e[0] : NULL;
    /* the run's entries with these signals, by when seen: slices of one time each */
    int first = ord_bound(r, 0, r->n, &(struct run_ord){.sig = sig}, sig_before);
    while (first < r->n && r->ord[first].sig == sig) {
        int end = ord_bound(r, first + 1, r->n, &r->ord[first], in_slice);
        reg_entry *e = nearest_in(m, r, first, end, pos, nd);
        if (e)
            return e;
        first = end;
    }
    return NULL;
}

/*
 * Pass 1, first round: an entry with all of nd's signals (a score of 1,
 * the most there is), whatever its base (one nd took by role and name
 * alone carries nd's signals since); NULL when none is claimable; *rc
 * RG_ENOMEM when there was no memory.
 */
static reg_entry *match_exact(struct matcher *m, const reg_node *nd, size_t pos, int *rc)
{
    const struct run *r = entry_index(m, 0, rc);
    if (!r || !r->n)
        return NULL;
    return nearest(m, r, signals_hash(&nd->ident), pos, nd);
}

/*
 * Pass 1, second round: of the base's run, the best score, of equals the
 * latest seen, then the nearest to pos, then the lowest suffix; none
 * scores 1 by now. NULL
 * when none scores REG_SAME_SCORE; *rc RG_ENOMEM when there was no memory.
 */
static reg_entry *match_base(struct matcher *m, const reg_node *nd, const char *base, size_t pos,
                             int *rc)
{
    const struct run *r = run_of(m, base, rc);
    if (!r || !r->n)
        return NULL;
    if (r->same) {
        /* every entry scores what the first does; 1: the first round looked
           at every one of them and found none claimable */
        double s = reg_identity_score(&r->e[0]->ident, &nd->ident);
        if (s < REG_SAME_SCORE || s == 1.0)
            return NULL;
        return nearest(m, r, 0, pos, NULL);
    }
    /* the element changed since (its sibling index, its name under a test id) */
    reg_entry *best = NULL;
    double best_score = 0;
    for (int k = 1; k <= r->n; k++) {
        reg_entry *e = r->e[k - 1];
        if (!claimable(m, e))
            continue;
        double s = reg_identity_score(&e->ident, &nd->ident);
        if (s < REG_SAME_SCORE)
            continue;
        if (!best || s > best_score || (s == best_score && nearer(e, best, pos))) {
            best = e;
            best_score = s;
        }
    }
    return best;
}

/*
 * Pass 2: same role, name and tag anywhere in the registry, scoring at
 * least REG_SAME_SCORE; of those the latest seen, then the nearest to pos,
 * then the first in pg->entries. NULL when none; *rc RG_ENOMEM when there
 * was no memory. Found through the loose index: a scan of every entry for
 * each element was quadratic on a page whose every element is new.
 */
static reg_entry *match_loose(struct matcher *m, const reg_node *nd, size_t pos, int *rc)
{
    const struct run *r = entry_index(m, 1, rc);
    if (!r || !r->n)
        return NULL;
    return nearest(m, r, loose_hash(&nd->ident), pos, nd);
}

static int fill_entry(reg_entry *e, const reg_node *nd, const char *ref, int64_t now, int order)
{
    memset(e, 0, sizeof *e);
    snprintf(e->ref, sizeof e->ref, "%s", ref);
    reg_entry src = {0};
    src.ident = nd->ident;
    src.selector = (char *)nd->selector;
    src.alt = (char **)nd->alt;
    src.n_alt = nd->n_alt;
    src.css_path = nd->n_alt ? (char *)nd->alt[nd->n_alt - 1] : NULL;
    src.frame = (char *)(nd->frame ? nd->frame : "");
    src.name_attr = (char *)nd->name_attr;
    memcpy(src.bounds, nd->bounds, sizeof src.bounds);
    int rc = reg_entry_copy(e, &src);
    snprintf(e->ref, sizeof e->ref, "%s", ref);
    e->last_seen_ms = e->seen_ms = now;
    e->order = order;
    return rc;
}

/* a and b both absent, or both present and equal */
static int same_opt(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

/* What fill_entry would write for nd is what e holds already, its last-seen
   time, its order and its bounds aside (where it sits, which an insert above
   it changes for every element below). */
static int entry_same(const reg_entry *e, const reg_node *nd)
{
    const reg_identity *a = &e->ident, *b = &nd->ident;
    if (a->sibling_index != b->sibling_index || e->n_alt != nd->n_alt)
        return 0;
    if (!same_opt(a->testid, b->testid) || !same_opt(a->id, b->id) ||
        !same_opt(a->aria_label, b->aria_label) || !same_opt(a->role, b->role) ||
        !same_opt(a->name, b->name) || !same_opt(a->tag, b->tag) ||
        !same_opt(a->parent_role, b->parent_role))
        return 0;
    if (!same_opt(e->selector, nd->selector) || !same_opt(e->name_attr, nd->name_attr) ||
        !same_opt(e->frame, nd->frame ? nd->frame : "") ||
        !same_opt(e->css_path, nd->n_alt ? nd->alt[nd->n_alt - 1] : NULL))
        return 0;
    for (size_t i = 0; i < nd->n_alt; i++)
        if (!same_opt(e->alt[i], nd->alt[i]))
            return 0;
    return 1;
}

static int entry_ref_cmp(const void *a, const void *b)
{
    return strcmp(((const reg_entry *)a)->ref, ((const reg_entry *)b)->ref);
}

static int ref_listed(char **sorted, size_t n, const char *ref)
{
    return n && bsearch(&ref, sorted, n, sizeof *sorted, str_cmp);
}

/* The store's copy of e is older than this worker's: its last-seen time, or
   where it sits (order and bounds). */
static int lagging(const reg_entry *e)
{
    return e->seen_ms > e->last_seen_ms || e->moved;
}

/* A copy of e to commit, with the time it was seen as its last-seen time. */
static int write_back(reg_entry *dst, const reg_entry *e)
{
    int rc = reg_entry_copy(dst, e);
    dst->last_seen_ms = dst->seen_ms = e->seen_ms;
    dst->moved = 0;
    return rc;
}

/*
 * Commits up (n entries, taken over whatever happens) to the store and brings
 * the page's cached entries in line from what the commit says it did: the
 * upserts replace or join them, the removed refs leave. One store round trip
 * per observation, not a commit and a read-back of the whole page.
 */
static int commit_and_cache(reg_page *pg, reg_entry *up, size_t n, size_t *n_removed, int all)
{
    reg_removed rm = {0};
    const reg_store_ops *ops = pg->store->ops;
    if (n)
        qsort(up, n, sizeof *up, entry_ref_cmp);
    /*
     * Cached entries whose store time lags (an observe left them unwritten,
     * assign_refs) go back with the time they were seen when the store may
     * soon count them stale (a quarter of the stale time early, which this
     * commit's clock cannot outrun), when it may evict by last-seen time,
     * and with all (a flush).
     */
    int64_t soon = rg_wall_ms() - pg->cfg.stale_ms + pg->cfg.stale_ms / 4;
    /* how many entries the commit would leave: the cached ones, the new
       refs among the upserts, less the drops (assign_refs) */
    size_t n_drop = 0, n_known = 0;
    for (size_t i = 0; i < n; i++)
        n_drop += up[i].drop != 0;
    for (size_t i = 0; n && i < pg->n_entries; i++) {
        const reg_entry *hit = bsearch(&pg->entries[i], up, n, sizeof *up, entry_ref_cmp);
        n_known += hit && !hit->drop;
    }
    int evicts = pg->n_entries + (n - n_drop - n_known) > pg->cfg.max + n_drop;
    size_t n0 = n;
    for (size_t i = 0; i < pg->n_entries; i++) {
        reg_entry *e = &pg->entries[i];
        if (!lagging(e) || (!all && !evicts && e->last_seen_ms >= soon) ||
            (n0 && bsearch(e, up, n0, sizeof *up, entry_ref_cmp)))
            continue;
        if (write_back(&up[n++], e) < 0) {
            reg_entries_free(up, n);
            return RG_ENOMEM;
        }
    }
    int rc = pg->fence && ops->commit_fenced
                 ? ops->commit_fenced(pg->store, pg->key, up, n, rg_wall_ms(), pg->cfg.stale_ms,
                                      pg->cfg.max, &rm, pg->fence)
                 : ops->commit(pg->store, pg->key, up, n, rg_wall_ms(), pg->cfg.stale_ms,
                               pg->cfg.max, &rm);
    if (n_removed)
        *n_removed = rm.n;
    reg_entry *merged = rc == 0 ? calloc(pg->n_entries + n + 1, sizeof *merged) : NULL;
    if (rc == 0 && !merged) {
        reg_entries_free(up, n);
        reg_removed_free(&rm);
        return reg_page_load(pg); /* no memory to merge: read the page back */
    }
    if (rc < 0) {
        reg_entries_free(up, n);
        reg_removed_free(&rm);
        return rc;
    }
    if (n > n0)
        qsort(up, n, sizeof *up, entry_ref_cmp);
    if (rm.n)
        qsort(rm.refs, rm.n, sizeof *rm.refs, str_cmp);
    size_t k = 0;
    for (size_t i = 0; i < pg->n_entries; i++) {
        reg_entry *e = &pg->entries[i];
        if ((n && bsearch(e, up, n, sizeof *up, entry_ref_cmp)) || ref_listed(rm.refs, rm.n, e->ref))
            reg_entry_destroy(e);
        else
            merged[k++] = *e;
    }
    for (size_t i = 0; i < n; i++) {
        if (up[i].drop || ref_listed(rm.refs, rm.n, up[i].ref))
            reg_entry_destroy(&up[i]);
        else
            merged[k++] = up[i];
    }
    free(up);
    free(pg->entries);
    pg->entries = merged;
    pg->n_entries = k;
    reg_removed_free(&rm);
    return 0;
}

int reg_page_load(reg_page *pg)
{
    reg_entry *v;
    size_t n;
    int rc = pg->store->ops->load(pg->store, pg->key, &v, &n);
    if (rc < 0)
        return rc;
    reg_entries_free(pg->entries, pg->n_entries);
    pg->entries = v;
    pg->n_entries = n;
    pg->loaded = 1;
    return 0;
}

int reg_page_flush(reg_page *pg)
{
    size_t lag = 0;
    for (size_t i = 0; i < pg->n_entries; i++)
        lag += lagging(&pg->entries[i]);
    if (!lag)
        return 0; /* the store has every sighting: no round trip */
    reg_entry *up = calloc(lag, sizeof *up);
    return up ? commit_and_cache(pg, up, 0, NULL, 1) : RG_ENOMEM;
}

/* When e was last seen: this worker's time, or the store's when newer. */
static int by_seen_then_ref(const void *a, const void *b)
{
    const reg_entry *x = *(reg_entry *const *)a, *y = *(reg_entry *const *)b;
    int64_t sx = seen_at(x), sy = seen_at(y);
    if (sx != sy)
        return sx < sy ? -1 : 1;
    return strcmp(x->ref, y->ref);
}

/*
 * Appends to up (at *n_up) a drop for each of the over entries that m's
 * observation did not claim and that were seen least recently. 0, or -1
 * when there are fewer such entries or no memory (up is then unchanged).
 */
static int evict_unseen(reg_page *pg, const struct matcher *m, size_t over, reg_entry *up,
                        size_t *n_up)
{
    size_t k = 0;
    reg_entry **v = malloc((m->n ? m->n : 1) * sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; i < m->n; i++)
        if (!m->claimed[i])
            v[k++] = &pg->entries[i];
    if (k < over) {
        free(v);
        return -1;
    }
    qsort(v, k, sizeof *v, by_seen_then_ref);
    for (size_t i = 0; i < over; i++) {
        reg_entry *d = &up[(*n_up)++];
        memset(d, 0, sizeof *d);
        memcpy(d->ref, v[i]->ref, sizeof d->ref);
        d->last_seen_ms = d->seen_ms = seen_at(v[i]);
        d->drop = 1;
    }
    free(v);
    return 0;
}

static int assign_refs(reg_page *pg, reg_observation *o, struct obs_priv *p, int same,
                       reg_entry **upserts, size_t *n_up)
{
    struct matcher m = {0};
    struct ref_table nk = {0};
    int rc = RG_ENOMEM;
    size_t n = o->n_nodes;
    m.base = pg->entries;
    m.n = pg->n_entries;
    m.max_runs = n;
    m.by_ref = calloc(m.n ? m.n : 1, sizeof *m.by_ref);
    m.claimed = calloc(m.n ? m.n : 1, 1);
    reg_entry **match = calloc(n ? n : 1, sizeof *match);
    char (*bases)[REG_REF_MAX] = calloc(n ? n : 1, REG_REF_MAX);
    /* each node's place among the nodes that want a ref, from 1: its order */
    int *place = calloc(n ? n : 1, sizeof *place);
    /* room for every node, and for every cached entry written back (commit_and_cache) */
    *upserts = calloc(n + m.n + 1, sizeof **upserts);
    *n_up = 0;
    if (!m.by_ref || !m.claimed || !match || !bases || !place || !*upserts)
        goto out;
    for (size_t i = 0; i < m.n; i++)
        m.by_ref[i] = &pg->entries[i];
    qsort(m.by_ref, m.n, sizeof *m.by_ref, entry_by_ref_cmp);

    /* Pass 0: the same DOM node as last time on this worker. */
    size_t i = 0;
    int places = 0;
    for (; i < n; i++) {
        reg_node *nd = &o->nodes[i];
        if (!wants_ref(nd))
            continue;
        place[i] = ++places;
        /* "same": the page handed back its unchanged last answer, so every
           node sits at the index it had. */
        int prev = same ? nd->index : p->prev[i];
        if (prev >= 0 && (size_t)prev < pg->n_prev && pg->prev_refs[prev]) {
            reg_entry *e = find_ref(&m, pg->prev_refs[prev]);
            if (claimable(&m, e)) {
                m.claimed[e - m.base] = 1;
                match[i] = e;
            }
        }
    }
    /*
     * Pass 1 and 2 in three rounds, each in document order: first every
     * element with an entry that has all its signals (score 1, of any
     * base), then the partial scores of its base's run, then pass 2.
     * Until 7 December one element went through all of them before the
     * next, so a look-alike that changed (renamed, or one place over among
     * its siblings) could take, with a partial score, the entry of an
     * unchanged element further down, whose ref then changed.
     */
    for (int round = 0; round < 3; round++) {
        for (i = 0; i < n; i++) {
            reg_node *nd = &o->nodes[i];
            if (!place[i] || match[i])
                continue;
            size_t pos = (size_t)place[i];
            /* the base ref, only for what pass 0 did not match (the new ones use it too) */
            if (round == 0)
                reg_ref_base(&nd->ident, bases[i]);
            int mrc = 0;
            reg_entry *e = round == 0   ? match_exact(&m, nd, pos, &mrc)
                           : round == 1 ? match_base(&m, nd, bases[i], pos, &mrc)
                                        : match_loose(&m, nd, pos, &mrc);
            if (mrc < 0)
                goto out;
            if (e) {
                m.claimed[e - m.base] = 1;
                match[i] = e;
            }
        }
    }
    for (i = 0; i < m.n; i++)
        o->n_unmatched += !m.claimed[i];
    /* Matched refs are taken first, so new elements never get them. */
    size_t n_match = 0, n_wanted = 0;
    for (i = 0; i < n; i++) {
        n_match += match[i] != NULL;
        n_wanted += wants_ref(&o->nodes[i]) && !match[i];
    }
    /* the refs handed out, for the new ones to avoid (none new: no table) */
    if (n_wanted && ref_table_init(&m.taken, n_match + n_wanted) < 0)
        goto out;
    for (i = 0; i < n; i++)
        if (match[i] &&
            (!(p->refs[i] = strdup(match[i]->ref)) || (n_wanted && take(&m, p->refs[i]) < 0)))
            goto out;
    int64_t now = rg_wall_ms();
    /*
     * A matched element whose entry would be written as it stands, and was
     * written less than a quarter of the stale time ago, is not written
     * again: an observe then commits what changed, not the whole page (on a
     * page of 5,000 refs, 5,000 Redis writes per observe). The cached copy
     * keeps when it was seen (seen_ms); the store's last-seen time lags it
     * by less than that quarter, and lagging entries are written back (with
     * the time they were seen) before the store could count them stale,
     * before any commit that may evict by last-seen time, and before a park
     * (reg_page_flush). So entries go stale when no observation saw them
     * for the stale time, as before.
     *
     * Where an entry sits is no reason to write it either: one element
     * inserted near the top of a page moves the order and the bounds of
     * every element below it, and those were all written again (5,000
     * entries on the 5,000-control page for one item added). The cached copy
     * takes the new order and bounds, so matching here uses them at once,
     * and is marked moved: it goes back to the store with its time, as
     * above. Until then another worker that loads the page sees the order
     * and bounds of the last write. Order only breaks ties between
     * look-alikes whose identity scores are equal, by nearness, which a
     * shift of the whole page does not change; a move that changes an
     * element's sibling index or parent is a change of its identity and
     * is written at once. Bounds are the last observation's, never used
     * to find an element.
     */
    /*
     * At the cap, the store would evict the least recently seen entries,
     * and its last-seen times lag this worker's: every entry would have to
     * be written with its time first (2,000 writes on the 5,000-control
     * page, each observe that brings one new ref). The registry makes that
     * choice itself from the times it holds: the entries this observation
     * did not see, least recently seen first (ties by ref), are removed in
     * the same commit, and the page stays at its cap without an eviction.
     */
    size_t over = pg->n_entries + n_wanted > pg->cfg.max
                      ? pg->n_entries + n_wanted - pg->cfg.max
                      : 0;
    int may_skip = over == 0 || evict_unseen(pg, &m, over, *upserts, n_up) == 0;
    /* only for the new ones: an observe where every ref matched makes no table */
    if (n_wanted && ref_table_init(&nk, n_wanted) < 0)
        goto out;
    for (i = 0; i < n; i++) {
        reg_node *nd = &o->nodes[i];
        if (!place[i])
            continue;
        int pos = place[i];
        if (!match[i]) {
            char ref[REG_REF_MAX];
            int *kp = ref_table_slot(&nk, bases[i]);
            for (int k = kp ? *kp + 1 : 1;; k++) {
                suffixed(bases[i], k, ref);
                if (!taken(&m, ref) && !find_ref(&m, ref)) {
                    if (kp)
                        *kp = k;
                    break;
                }
            }
            if (!(p->refs[i] = strdup(ref)) || take(&m, p->refs[i]) < 0)
                goto out;
            nd->stability = REG_NEW;
            o->n_new++;
        } else if (match[i]->ident.sibling_index != nd->ident.sibling_index ||
                   !same_str(match[i]->ident.parent_role, nd->ident.parent_role)) {
            nd->stability = REG_MOVED;
            o->n_moved++;
        } else {
            nd->stability = REG_STABLE;
            o->n_stable++;
        }
        nd->ref = p->refs[i];
        o->n_refs++;
        if (may_skip && match[i] && now - match[i]->last_seen_ms < pg->cfg.stale_ms / 4 &&
            entry_same(match[i], nd)) {
            reg_entry *e = match[i];
            if (e->order != pos || memcmp(e->bounds, nd->bounds, sizeof e->bounds)) {
                e->order = pos;
                memcpy(e->bounds, nd->bounds, sizeof e->bounds);
                e->moved = 1;
            }
            e->seen_ms = now;
            o->n_unwritten++;
            continue;
        }
        if (fill_entry(&(*upserts)[(*n_up)++], nd, nd->ref, now, pos) < 0)
            goto out;
    }
    rc = 0;
out:
    ref_table_free(&nk);
    free(m.by_ref);
    free(m.claimed);
    ref_table_free(&m.taken);
    for (size_t r = 0; r < m.n_runs; r++)
        run_free(&m.run_list[r]);
    run_free(&m.exact);
    run_free(&m.loose);
    free(m.run_list);
    ref_table_free(&m.runs);
    free(match);
    free(bases);
    free(place);
    return rc;
}

/* Remembers which ref each page-side index had, for pass 0 next time. */
static void remember(reg_page *pg, const reg_observation *o)
{
    free_prev(pg);
    int max_index = -1;
    for (size_t i = 0; i < o->n_nodes; i++)
        if (o->nodes[i].index > max_index)
            max_index = o->nodes[i].index;
    if (max_index < 0)
        return;
    pg->prev_refs = calloc((size_t)max_index + 1, sizeof *pg->prev_refs);
    if (!pg->prev_refs)
        return;
    pg->n_prev = (size_t)max_index + 1;
    for (size_t i = 0; i < o->n_nodes; i++)
        if (o->nodes[i].ref[0] && o->nodes[i].index >= 0)
            pg->prev_refs[o->nodes[i].index] = strdup(o->nodes[i].ref);
}

int reg_observe(reg_page *pg, reg_page_handle h, const reg_observe_opts *opts,
                reg_observation *out)
{
    memset(out, 0, sizeof *out);
    reg_observe_opts def = {0};
    if (!opts)
        opts = &def;
    size_t max = opts->max_elements ? opts->max_elements : pg->cfg.max;
    if (max > pg->cfg.max)
        max = pg->cfg.max;

    rg_buf oj;
    rg_buf_init(&oj);
    /* The interactive outline shows no text: the page need not collect it. */
    rg_buf_printf(&oj,
                  "{\"viewport_only\":%s,\"max_elements\":%zu,\"sel\":%s,\"b\":%s,"
                  "\"text\":%s,\"scope\":",
                  opts->viewport_only ? "true" : "false", max,
                  opts->no_selectors ? "false" : "true", opts->no_bounds ? "false" : "true",
                  opts->mode == REG_MODE_INTERACTIVE ? "false" : "true");
    rg_buf_json_str_or_null(&oj, opts->scope_css);
    rg_buf_puts(&oj, "}");
    if (oj.failed) {
        rg_buf_destroy(&oj);
        return RG_ENOMEM;
    }
    /* The base this page's registry holds, if it is of the current document. */
    unsigned gen = h.world ? reg_world_gen(h.world) + 1 : 0;
    const struct reg_base *base = pg->base && pg->base->gen == gen ? pg->base : NULL;
    int timeout = opts->timeout_ms > 0 ? opts->timeout_ms : OBSERVE_TIMEOUT_MS;
    reg_entry *up = NULL;
    size_t n_up = 0;
    cJSON *root = NULL;
    int rc = 0;
    /* At most twice: a delta that does not fit the base is asked for again whole. */
    for (int attempt = 0; attempt < 2; attempt++, base = NULL) {
        char err[256] = "";
        size_t len = 0;
        rg_buf call;
        rg_buf_init(&call);
        rg_buf_printf(&call,
                      "(function(o,b){if(o.scope){var s;try{s=document.querySelector(o.scope)}"
                      "catch(e){return JSON.stringify({error:\"scope is not a valid CSS selector\"})}"
                      "if(!s)return JSON.stringify({error:\"scope matches no element\"})}"
                      "return g.observe(JSON.stringify(o),b)})(%s,",
                      oj.data);
        rg_buf_json_str_or_null(&call, base ? base->id : NULL);
        rg_buf_puts(&call, ")");
        rc = call.failed ? RG_ENOMEM
                         : reg_js_sized(h, call.data, 0, timeout, &root, &len, err, sizeof err);
        rg_buf_destroy(&call);
        if (rc < 0) {
            rg_log(RG_LOG_DEBUG, "registry", "observe failed: %s", err);
            break;
        }
        struct obs_priv *p = calloc(1, sizeof *p);
        struct chunk *ch = calloc(1, sizeof *ch);
        if (!p || !ch) {
            free(p);
            free(ch);
            cJSON_Delete(root);
            rc = RG_ENOMEM;
            break;
        }
        *ch = (struct chunk){1, root, len};
        out->priv = p;
        const char *bid = jstr(root, "base");
        if (bid && (!base || strcmp(bid, base->id))) {
            p->chunks[p->n_chunks++] = ch;
            rc = RG_EINTERNAL; /* a delta against a reply this registry does not hold */
        } else if (bid) {
            for (size_t c = 0; c < base->n_chunks; c++)
                p->chunks[p->n_chunks++] = chunk_ref(base->chunks[c]);
            p->chunks[p->n_chunks++] = ch;
            rc = decode_delta(cJSON_GetObjectItemCaseSensitive(root, "ops"),
                              whole(cJSON_GetObjectItemCaseSensitive(root, "count"), 0, 1L << 30),
                              base, out, p);
            out->delta = 1;
        } else {
            p->chunks[p->n_chunks++] = ch;
            rc = decode_nodes(cJSON_GetObjectItemCaseSensitive(root, "nodes"), out, p);
        }
        if (rc == RG_EINTERNAL && bid && attempt == 0) {
            rg_log(RG_LOG_DEBUG, "registry", "observe: the page's delta does not fit: asked again");
            reg_observation_free(out);
            continue;
        }
        break;
    }
    rg_buf_destroy(&oj);
    if (rc < 0) {
        base_free(pg->base);
        pg->base = NULL;
        reg_observation_free(out);
        return rc;
    }
    struct obs_priv *p = out->priv;
    root = p->chunks[p->n_chunks - 1]->root;
    const char *u = jstr(root, "url"), *t = jstr(root, "title");
    out->url = strdup(u ? u : "");
    out->title = strdup(t ? t : "");
    const cJSON *tr = cJSON_GetObjectItemCaseSensitive(root, "truncated");
    out->truncated = cJSON_IsTrue(tr);
    if (!out->url || !out->title) {
        rc = RG_ENOMEM;
        goto fail;
    }
    if (!pg->loaded && (rc = reg_page_load(pg)) < 0)
        goto fail;
    int same = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "same"));
    out->reused = same;
    if ((rc = reg_frames_observe(pg, h, opts, max, out)) < 0)
        goto fail;
    if (p->n_xparts && same) {
        /* as assign_refs reads "same": every page node at the index it had */
        for (size_t i = 0; i < p->n_page; i++)
            p->prev[i] = out->nodes[i].index;
        same = 0;
    }
    if ((rc = assign_refs(pg, out, p, same, &up, &n_up)) < 0)
        goto fail;
    rc = commit_and_cache(pg, up, n_up, &out->n_removed, 0);
    up = NULL; /* taken over by the cache */
    if (rc < 0)
        goto fail;
    remember(pg, out);
    pg->obs_gen = gen;
    memcpy(pg->xsegs, p->segs, sizeof pg->xsegs);
    pg->n_xsegs = p->n_xparts;
    keep_base(pg, out, p, jstr(root, "rid"));
    if ((rc = place_frames(out, p)) < 0)
        goto fail;
    out->snapshot_id = ++pg->seq;
    out->mode = opts->mode == REG_MODE_INTERACTIVE ? REG_MODE_INTERACTIVE : REG_MODE_FULL;
    out->depth = opts->depth > 0 ? opts->depth : 0;
    char *full = reg_outline(out);
    if (!full) {
        rc = RG_ENOMEM;
        goto fail;
    }
    /* A diff is against the previous outline of the same shape: a scoped
       look does not move the whole page's baseline. */
    char *shape = NULL;
    if (asprintf(&shape, "%d|%d|%d|%zu|%s", out->mode, out->depth, !!opts->viewport_only, max,
                 opts->scope_css ? opts->scope_css : "") < 0) {
        free(full);
        rc = RG_ENOMEM;
        goto fail;
    }
    int b = 0, same_shape = 0;
    for (int i = 0; i < REG_BASELINES && !same_shape; i++) {
        same_shape = pg->baseline[i].shape && !strcmp(pg->baseline[i].shape, shape);
        if (same_shape || pg->baseline[i].used < pg->baseline[b].used)
            b = i;
    }
    const char *prev = same_shape && pg->baseline[b].text ? pg->baseline[b].text : "";
    out->text = opts->diff ? reg_text_diff(prev, full) : strdup(full);
    if (!out->text) {
        free(full);
        free(shape);
        rc = RG_ENOMEM;
        goto fail;
    }
    if (opts->no_baseline) {
        free(full);
        free(shape);
        return 0;
    }
    free(pg->baseline[b].shape);
    free(pg->baseline[b].text);
    pg->baseline[b].shape = shape;
    pg->baseline[b].text = full;
    pg->baseline[b].used = out->snapshot_id;
    return 0;
fail:
    base_free(pg->base);
    pg->base = NULL;
    reg_entries_free(up, n_up);
    reg_observation_free(out);
    return rc;
}

int reg_page_index(const reg_page *pg, const char *ref)
{
    for (size_t i = 0; ref && i < pg->n_prev; i++) {
        if (!pg->prev_refs[i] || strcmp(pg->prev_refs[i], ref))
            continue;
        if (!pg->act_frame[0])
            return (int)i;
        /* an action in a frame: the frame's own index */
        int k = (int)i - pg->act_base;
        if (pg->act_base >= 0)
            return k < pg->act_n ? k : -1;
        break;
    }
    /* a frame's indexes not known here: the element found by identity */
    if (pg->act_frame[0] && pg->act_base < 0 && ref && !strcmp(ref, pg->act_ref))
        return pg->act_hint;
    return -1;
}

int reg_page_bind(reg_page *pg, int index, const char *ref)
{
    if (pg->act_frame[0]) {
        /* a frame's index: a place past the page's is its when its place is
           known, else the binding waits for the next observation */
        if (pg->act_base < 0 || index >= pg->act_n)
            return 0;
        index += pg->act_base;
    }
    if (index < 0)
        return 0;
    if ((size_t)index >= pg->n_prev) {
        char **nv = realloc(pg->prev_refs, ((size_t)index + 1) * sizeof *nv);
        if (!nv)
            return RG_ENOMEM;
        memset(nv + pg->n_prev, 0, ((size_t)index + 1 - pg->n_prev) * sizeof *nv);
        pg->prev_refs = nv;
        pg->n_prev = (size_t)index + 1;
    }
    char *copy = strdup(ref);
    if (!copy)
        return RG_ENOMEM;
    /* A ref belongs to one page-side index at a time. */
    for (size_t i = 0; i < pg->n_prev; i++) {
        if (pg->prev_refs[i] && !strcmp(pg->prev_refs[i], ref)) {
            free(pg->prev_refs[i]);
            pg->prev_refs[i] = NULL;
        }
    }
    free(pg->prev_refs[index]);
    pg->prev_refs[index] = copy;
    return 0;
}

int reg_page_register(reg_page *pg, const reg_node *nd, char ref[REG_REF_MAX])
{
    int rc;
    if (!pg->loaded && (rc = reg_page_load(pg)) < 0)
        return rc;
    char base[REG_REF_MAX];
    reg_ref_base(&nd->ident, base);
    for (int k = 1;; k++) {
        suffixed(base, k, ref);
        size_t i = 0;
        while (i < pg->n_entries && strcmp(pg->entries[i].ref, ref))
            i++;
        if (i == pg->n_entries)
            break;
    }
    reg_entry *e = calloc(pg->n_entries + 1, sizeof *e); /* room for commit_and_cache */
    if (!e || fill_entry(e, nd, ref, rg_wall_ms(), 0) < 0) {
        reg_entries_free(e, e ? 1 : 0);
        return RG_ENOMEM;
    }
    rc = commit_and_cache(pg, e, 1, NULL, 0);
    if (rc == 0)
        rc = reg_page_bind(pg, nd->index, ref);
    return rc;
}

/* ---- checking a delta against a whole reply (tests) ---- */

static int str_differ(const char *a, const char *b)
{
    return (a == NULL) != (b == NULL) || (a && strcmp(a, b));
}

int reg_observation_check(const reg_observation *o, const cJSON *reply, char *why, size_t whylen)
{
    reg_observation w = {0};
    struct obs_priv wp = {0};
    int rc = -1;
    const char *u = jstr(reply, "url"), *t = jstr(reply, "title");
    const struct obs_priv *op = o->priv;
    if (decode_nodes(cJSON_GetObjectItemCaseSensitive(reply, "nodes"), &w, &wp) < 0) {
        snprintf(why, whylen, "the whole reply does not decode");
        goto out;
    }
    if (str_differ(o->url, u ? u : "") || str_differ(o->title, t ? t : "") ||
        o->truncated != cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "truncated"))) {
        snprintf(why, whylen, "url, title or truncated differ");
        goto out;
    }
    if (o->n_nodes != w.n_nodes || o->n_text != w.n_text) {
        snprintf(why, whylen, "%zu nodes (%zu text) against %zu (%zu)", o->n_nodes, o->n_text,
                 w.n_nodes, w.n_text);
        goto out;
    }
    for (size_t i = 0; i < o->n_nodes; i++) {
        const reg_node *a = &o->nodes[i], *b = &w.nodes[i];
        /* an unchanged-page answer: every node at the index it had */
        int pa = o->reused ? a->index : op->prev[i], pb = o->reused ? b->index : wp.prev[i];
        const char *what = NULL;
        if (a->depth != b->depth || a->is_text != b->is_text || a->level != b->level ||
            a->states != b->states || a->interactive != b->interactive || a->no_ref != b->no_ref ||
            a->editable != b->editable)
            what = "depth, kind, level, states or flags";
        else if (str_differ(a->text, b->text))
            what = "text";
        else if (str_differ(a->placeholder, b->placeholder))
            what = "placeholder";
        else if (str_differ(a->url, b->url))
            what = "url";
        else if (str_differ(a->role, b->role) || str_differ(a->name, b->name))
            what = "role or name";
        else if (str_differ(a->tag, b->tag) || str_differ(a->value, b->value))
            what = "tag or value";
        else if (str_differ(a->frame, b->frame) || str_differ(a->name_attr, b->name_attr))
            what = "frame or name attribute";
        else if (a->index != b->index || pa != pb)
            what = "index or previous index";
        else if (memcmp(a->bounds, b->bounds, sizeof a->bounds))
            what = "bounds";
        else if (str_differ(a->ident.testid, b->ident.testid) ||
                 str_differ(a->ident.id, b->ident.id) ||
                 str_differ(a->ident.aria_label, b->ident.aria_label) ||
                 str_differ(a->ident.parent_role, b->ident.parent_role) ||
                 a->ident.sibling_index != b->ident.sibling_index)
            what = "identity";
        else if (a->n_alt != b->n_alt || str_differ(a->selector, b->selector))
            what = "selectors";
        for (size_t k = 0; !what && k < a->n_alt; k++)
            if (str_differ(a->alt[k], b->alt[k]))
                what = "selectors";
        if (what) {
            snprintf(why, whylen,
                     "node %zu (%s \"%.60s\"): %s differ (index %d/%d, previous %d/%d; "
                     "delta's %s \"%.60s\" text \"%.60s\")",
                     i, b->role ? b->role : "?", b->name ? b->name : (b->text ? b->text : ""),
                     what, a->index, b->index, pa, pb, a->role ? a->role : "?",
                     a->name ? a->name : "", a->text ? a->text : "");
            goto out;
        }
    }
    rc = 0;
out:
    free(w.nodes);
    free(wp.refs);
    free(wp.alts);
    free(wp.prev);
    free(wp.chunk_of);
    return rc;
}

/* ---- the splice alone (the fuzzer) ---- */

/* Decodes one reply text into o as reg_observe does; base: the base it is a delta against. */
static int decode_text(const char *text, size_t len, const struct reg_base *base,
                       reg_observation *o)
{
    memset(o, 0, sizeof *o);
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (!root)
        return RG_EINTERNAL;
    struct obs_priv *p = calloc(1, sizeof *p);
    struct chunk *ch = calloc(1, sizeof *ch);
    if (!p || !ch) {
        free(p);
        free(ch);
        cJSON_Delete(root);
        return RG_ENOMEM;
    }
    *ch = (struct chunk){1, root, len};
    o->priv = p;
    const char *bid = jstr(root, "base");
    int rc;
    if (bid && (!base || strcmp(bid, base->id))) {
        p->chunks[p->n_chunks++] = ch;
        rc = RG_EINTERNAL;
    } else if (bid) {
        for (size_t c = 0; c < base->n_chunks; c++)
            p->chunks[p->n_chunks++] = chunk_ref(base->chunks[c]);
        p->chunks[p->n_chunks++] = ch;
        rc = decode_delta(cJSON_GetObjectItemCaseSensitive(root, "ops"),
                          whole(cJSON_GetObjectItemCaseSensitive(root, "count"), 0, 1L << 30),
                          base, o, p);
    } else {
        p->chunks[p->n_chunks++] = ch;
        rc = decode_nodes(cJSON_GetObjectItemCaseSensitive(root, "nodes"), o, p);
    }
    if (rc < 0)
        reg_observation_free(o);
    return rc;
}

int reg_delta_try(const char *whole_text, size_t wlen, const char *delta, size_t dlen,
                  size_t *n_nodes)
{
    *n_nodes = 0;
    reg_page pg = {0};
    reg_config_default(&pg.cfg);
    reg_observation a, b;
    int rc = decode_text(whole_text, wlen, NULL, &a);
    if (rc < 0)
        return rc;
    keep_base(&pg, &a, a.priv, "b");
    reg_observation_free(&a);
    rc = pg.base ? decode_text(delta, dlen, pg.base, &b) : RG_EINTERNAL;
    if (rc == 0) {
        *n_nodes = b.n_nodes;
        reg_observation_free(&b);
    }
    base_free(pg.base);
    return rc;
}
