/*
 * store_mem.c - the in-process registry store: page key -> entries, one mutex.
 * Used by tests and by a single worker without Redis; the Redis store keeps
 * the same contract (registry.h, reg_store_ops).
 */
#define _GNU_SOURCE
#include "registry/registry.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct mem_page {
    char *key;
    reg_entry *v;
    size_t n, cap;
    struct mem_page *next;
};

struct mem_store {
    reg_store base;
    pthread_mutex_t mu;
    struct mem_page *pages;
};

void reg_entry_destroy(reg_entry *e)
{
    if (!e)
        return;
    reg_identity_destroy(&e->ident);
    free(e->selector);
    for (size_t i = 0; i < e->n_alt; i++)
        free(e->alt[i]);
    free(e->alt);
    free(e->css_path);
    free(e->frame);
    free(e->name_attr);
    memset(e, 0, sizeof *e);
}

void reg_entries_free(reg_entry *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        reg_entry_destroy(&v[i]);
    free(v);
}

int reg_entry_copy(reg_entry *dst, const reg_entry *src)
{
    memset(dst, 0, sizeof *dst);
    memcpy(dst->ref, src->ref, sizeof dst->ref);
    memcpy(dst->bounds, src->bounds, sizeof dst->bounds);
    dst->last_seen_ms = src->last_seen_ms;
    dst->seen_ms = src->seen_ms;
    dst->order = src->order;
    if (reg_identity_copy(&dst->ident, &src->ident) < 0)
        goto fail;
    if ((src->selector && !(dst->selector = strdup(src->selector))) ||
        (src->css_path && !(dst->css_path = strdup(src->css_path))) ||
        (src->frame && !(dst->frame = strdup(src->frame))) ||
        (src->name_attr && !(dst->name_attr = strdup(src->name_attr))))
        goto fail;
    if (src->n_alt) {
        dst->alt = calloc(src->n_alt, sizeof *dst->alt);
        if (!dst->alt)
            goto fail;
        for (size_t i = 0; i < src->n_alt; i++) {
            if (!(dst->alt[i] = strdup(src->alt[i])))
                goto fail;
            dst->n_alt = i + 1;
        }
    }
    return 0;
fail:
    reg_entry_destroy(dst);
    return RG_ENOMEM;
}

static struct mem_page *find_page(struct mem_store *m, const char *key, int create)
{
    for (struct mem_page *p = m->pages; p; p = p->next)
        if (!strcmp(p->key, key))
            return p;
    if (!create)
        return NULL;
    struct mem_page *p = calloc(1, sizeof *p);
    if (!p || !(p->key = strdup(key))) {
        free(p);
        return NULL;
    }
    p->next = m->pages;
    m->pages = p;
    return p;
}

static int mem_load(reg_store *s, const char *page, reg_entry **out, size_t *n)
{
    struct mem_store *m = (struct mem_store *)s;
    *out = NULL;
    *n = 0;
    int rc = 0;
    pthread_mutex_lock(&m->mu);
    struct mem_page *p = find_page(m, page, 0);
    if (p && p->n) {
        reg_entry *v = calloc(p->n, sizeof *v);
        if (!v)
            rc = RG_ENOMEM;
        for (size_t i = 0; rc == 0 && i < p->n; i++) {
            rc = reg_entry_copy(&v[i], &p->v[i]);
            if (rc == 0)
                *n = i + 1;
        }
        if (rc < 0) {
            reg_entries_free(v, *n);
            *n = 0;
        } else {
            *out = v;
        }
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* Most recently seen first; among equals, earlier order first. */
static int by_recency(const void *a, const void *b)
{
    const reg_entry *x = a, *y = b;
    if (x->last_seen_ms != y->last_seen_ms)
        return x->last_seen_ms > y->last_seen_ms ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

static int by_ref(const void *a, const void *b)
{
    return strcmp(((const reg_entry *)a)->ref, ((const reg_entry *)b)->ref);
}

void reg_removed_free(reg_removed *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        free(r->refs[i]);
    free(r->refs);
    r->refs = NULL;
    r->n = 0;
}

/* Records a removed ref (when the caller wants them) and destroys the entry. */
static void drop_entry(reg_entry *e, reg_removed *removed, size_t *gone)
{
    if (removed) {
        char **nr = realloc(removed->refs, (removed->n + 1) * sizeof *nr);
        if (nr) {
            removed->refs = nr;
            if ((nr[removed->n] = strdup(e->ref)))
                removed->n++;
        }
    }
    (*gone)++;
    reg_entry_destroy(e);
}

static int mem_commit(reg_store *s, const char *page, const reg_entry *v, size_t n, int64_t now_ms,
                      int64_t stale_ms, size_t max, reg_removed *removed)
{
    struct mem_store *m = (struct mem_store *)s;
    int rc = 0;
    size_t gone = 0;
    if (removed)
        *removed = (reg_removed){0};
    pthread_mutex_lock(&m->mu);
    struct mem_page *p = find_page(m, page, 1);
    if (!p) {
        rc = RG_ENOMEM;
        goto out;
    }
    /* Copies first, so a failed allocation leaves the page unchanged. */
    reg_entry *fresh = n ? calloc(n, sizeof *fresh) : NULL;
    if (n && !fresh) {
        rc = RG_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if ((rc = reg_entry_copy(&fresh[i], &v[i])) < 0) {
            reg_entries_free(fresh, i);
            goto out;
        }
    }
    if (p->n + n > p->cap) {
        size_t cap = (p->n + n) * 2;
        reg_entry *nv = realloc(p->v, cap * sizeof *nv);
        if (!nv) {
            reg_entries_free(fresh, n);
            rc = RG_ENOMEM;
            goto out;
        }
        p->v = nv;
        p->cap = cap;
    }
    /* Upsert by ref: existing entries sorted by ref, each upsert a binary search. */
    if (p->n)
        qsort(p->v, p->n, sizeof *p->v, by_ref);
    size_t old_n = p->n;
    for (size_t i = 0; i < n; i++) {
        reg_entry *hit = old_n ? bsearch(&fresh[i], p->v, old_n, sizeof *p->v, by_ref) : NULL;
        if (v[i].drop) {
            if (hit)
                hit->drop = 1; /* removed with the stale ones below */
            reg_entry_destroy(&fresh[i]);
        } else if (hit) {
            reg_entry_destroy(hit);
            *hit = fresh[i];
        } else {
            p->v[p->n++] = fresh[i];
        }
    }
    free(fresh);
    /* Stale entries, then the cap. */
    size_t k = 0;
    for (size_t j = 0; j < p->n; j++) {
        if (p->v[j].drop || p->v[j].last_seen_ms < now_ms - stale_ms) {
            drop_entry(&p->v[j], removed, &gone);
        } else {
            p->v[k++] = p->v[j];
        }
    }
    p->n = k;
    if (p->n > max) {
        qsort(p->v, p->n, sizeof *p->v, by_recency);
        for (size_t j = max; j < p->n; j++)
            drop_entry(&p->v[j], removed, &gone);
        p->n = max;
    }
out:
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static int mem_drop(reg_store *s, const char *page)
{
    struct mem_store *m = (struct mem_store *)s;
    pthread_mutex_lock(&m->mu);
    for (struct mem_page **pp = &m->pages; *pp; pp = &(*pp)->next) {
        if (!strcmp((*pp)->key, page)) {
            struct mem_page *p = *pp;
            *pp = p->next;
            reg_entries_free(p->v, p->n);
            free(p->key);
            free(p);
            break;
        }
    }
    pthread_mutex_unlock(&m->mu);
    return 0;
}

static void mem_destroy(reg_store *s)
{
    struct mem_store *m = (struct mem_store *)s;
    while (m->pages)
        mem_drop(s, m->pages->key);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

/* Memory pages live until dropped: the process is their lifetime. */
static int mem_park(reg_store *s, const char *page, int64_t ttl_ms)
{
    (void)s;
    (void)page;
    (void)ttl_ms;
    return 0;
}

static const reg_store_ops mem_ops = {mem_load, mem_commit, mem_drop, mem_park, mem_destroy,
                                      NULL,     NULL};

reg_store *reg_store_mem_new(void)
{
    struct mem_store *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->base.ops = &mem_ops;
    pthread_mutex_init(&m->mu, NULL);
    return &m->base;
}

void reg_store_free(reg_store *s)
{
    if (s)
        s->ops->destroy(s);
}
