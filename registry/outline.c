/*
 * outline.c - the text outline of an observation (reg_outline: the full
 * mode's elements, structure and text, or the interactive mode's refs
 * under their headings and landmarks, with depth folding) and the line
 * diff between two outlines (reg_text_diff). docs/protocol.md, "observe".
 *
 * Pure functions of their arguments: any thread.
 */
#define _GNU_SOURCE
#include "registry/registry.h"
#include "registry/reg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the outline ---- */

static void put_quoted(rg_buf *b, const char *s)
{
    rg_buf_puts(b, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            rg_buf_append(b, "\\", 1);
        rg_buf_append(b, *s == '\n' || *s == '\r' || *s == '\t' ? " " : s, 1);
    }
    rg_buf_puts(b, "\"");
}

static const char *state_names[] = {"checked", "disabled", "expanded", "focused",
                                    "selected", "required", "readonly"};

static void put_indent(rg_buf *b, int depth)
{
    for (int d = 0; d <= depth && d < 64; d++)
        rg_buf_puts(b, "  ");
}

/* Text after a colon or on a text line: as it is, one line. */
static void put_text(rg_buf *b, const char *s)
{
    for (; *s; s++)
        rg_buf_append(b, *s == '\n' || *s == '\r' || *s == '\t' ? " " : s, 1);
}

/* show_name: a row's name is its cells' text again, shown only when it has no cells */
static void put_node(rg_buf *b, const reg_node *nd, int show_name)
{
    put_indent(b, nd->depth);
    if (nd->is_text) {
        rg_buf_puts(b, "- text: ");
        put_text(b, nd->text ? nd->text : "");
        rg_buf_puts(b, "\n");
        return;
    }
    rg_buf_puts(b, "- ");
    rg_buf_puts(b, nd->role ? nd->role : "generic");
    if (show_name && nd->name && *nd->name) {
        rg_buf_puts(b, " ");
        put_quoted(b, nd->name);
    }
    if (nd->states) {
        int first = 1;
        rg_buf_puts(b, " (");
        for (int s = 0; s < 7; s++) {
            if (!(nd->states & (1u << s)))
                continue;
            rg_buf_puts(b, first ? "" : ", ");
            rg_buf_puts(b, state_names[s]);
            first = 0;
        }
        rg_buf_puts(b, ")");
    }
    if (nd->level > 0)
        rg_buf_printf(b, " [level=%d]", nd->level);
    if (nd->value && *nd->value) {
        rg_buf_puts(b, " [value=");
        put_quoted(b, nd->value);
        rg_buf_puts(b, "]");
    }
    if (nd->placeholder && *nd->placeholder) {
        rg_buf_puts(b, " [placeholder=");
        put_quoted(b, nd->placeholder);
        rg_buf_puts(b, "]");
    }
    if (nd->url && *nd->url) {
        rg_buf_puts(b, " [url=");
        put_quoted(b, nd->url);
        rg_buf_puts(b, "]");
    }
    if (nd->ref && *nd->ref)
        rg_buf_printf(b, " [ref=%s]", nd->ref);
    if (nd->text && *nd->text) {
        rg_buf_puts(b, ": ");
        put_text(b, nd->text);
    }
    rg_buf_puts(b, "\n");
}

/* The options of a drop-down <select>: listed, but not acted on by ref. */
static int dropdown_option(const reg_node *nd)
{
    return !nd->is_text && !nd->interactive && nd->role && !strcmp(nd->role, "option");
}

static int role_is(const reg_node *nd, const char *role)
{
    return !nd->is_text && nd->role && !strcmp(nd->role, role);
}

static int landmark(const reg_node *nd)
{
    static const char *const roles[] = {"banner", "navigation", "main", "contentinfo",
                                        "complementary", "search", "dialog", "alertdialog",
                                        "region", "form",
                                        /* a frame of another site holding refs: an agent
                                           sees which refs are in it */
                                        "Iframe", NULL};
    for (int i = 0; roles[i]; i++)
        if (role_is(nd, roles[i]))
            return 1;
    return 0;
}

/*
 * The interactive outline: the nodes with refs, and the headings and
 * landmarks that hold at least one of them (a heading holds the refs after
 * it up to the next heading; a landmark those inside it), nested as the
 * kept ones nest. Fills keep[] and rewrites depth[] for the kept nodes.
 */
static void interactive_only(const reg_observation *o, unsigned char *keep, int *depth)
{
    size_t n = o->n_nodes;
    for (size_t i = 0; i < n; i++) {
        const reg_node *nd = &o->nodes[i];
        keep[i] = nd->ref && *nd->ref;
        if (keep[i] || nd->is_text)
            continue;
        if (landmark(nd)) {
            for (size_t j = i + 1; j < n && o->nodes[j].depth > nd->depth && !keep[i]; j++)
                keep[i] = o->nodes[j].ref && *o->nodes[j].ref;
        } else if (role_is(nd, "heading")) {
            for (size_t j = i + 1; j < n && !role_is(&o->nodes[j], "heading") && !keep[i]; j++)
                keep[i] = o->nodes[j].ref && *o->nodes[j].ref;
        }
    }
    /* A kept node's depth is the number of its kept ancestors in the full
       outline: a button after a heading stays beside it, not under it. */
    int stack[256];
    unsigned char kept[256];
    int top = 0, n_kept = 0;
    for (size_t i = 0; i < n; i++) {
        int d = o->nodes[i].depth;
        while (top > 0 && stack[top - 1] >= d)
            n_kept -= kept[--top];
        depth[i] = n_kept;
        if (top < 256) {
            stack[top] = d;
            kept[top++] = keep[i];
            n_kept += keep[i];
        }
    }
}

char *reg_outline(const reg_observation *o)
{
    rg_buf b;
    rg_buf_init(&b);
    size_t n = o->n_nodes;
    unsigned char *keep = NULL;
    int *depth = NULL;
    if (o->mode == REG_MODE_INTERACTIVE) {
        keep = calloc(n ? n : 1, 1);
        depth = calloc(n ? n : 1, sizeof *depth);
        if (!keep || !depth) {
            free(keep);
            free(depth);
            return NULL;
        }
        interactive_only(o, keep, depth);
    }
    rg_buf_puts(&b, "- document");
    if (o->title && *o->title) {
        rg_buf_puts(&b, " ");
        put_quoted(&b, o->title);
    }
    rg_buf_puts(&b, "\n");
    for (size_t i = 0; i < n; i++) {
        if (keep && !keep[i])
            continue;
        reg_node nd = o->nodes[i];
        if (depth)
            nd.depth = depth[i];
        if (o->depth > 0 && nd.depth >= o->depth) {
            /* deeper than asked: one line says how much */
            size_t folded = 0, j = i;
            for (; j < n; j++) {
                if (keep && !keep[j])
                    continue;
                if ((depth ? depth[j] : o->nodes[j].depth) < o->depth)
                    break;
                folded++;
            }
            put_indent(&b, o->depth);
            rg_buf_printf(&b, "- ... (%zu more)\n", folded);
            i = j - 1;
            continue;
        }
        /* the next shown node, to know whether this one has children */
        size_t nx = i + 1;
        while (keep && nx < n && !keep[nx])
            nx++;
        int has_kids = nx < n && (depth ? depth[nx] : o->nodes[nx].depth) > nd.depth;
        if (!keep && dropdown_option(&nd)) {
            /* A long drop-down (countries, years) would drown the outline:
               its first options and the selected ones, then a count. */
            size_t j = i;
            while (j < n && dropdown_option(&o->nodes[j]) && o->nodes[j].depth == nd.depth)
                j++;
            if (j - i > REG_OUTLINE_OPTIONS_MAX) {
                size_t shown = 0;
                for (size_t k = i; k < j; k++) {
                    if (k - i < REG_OUTLINE_OPTIONS_HEAD ||
                        (o->nodes[k].states & REG_S_SELECTED)) {
                        put_node(&b, &o->nodes[k], 1);
                        shown++;
                    }
                }
                put_indent(&b, nd.depth);
                rg_buf_printf(&b, "- ... %zu more options\n", j - i - shown);
                i = j - 1;
                continue;
            }
        }
        /* an editing root's value is the text the outline shows in it */
        if (nd.editable && (nd.text || has_kids))
            nd.value = NULL;
        put_node(&b, &nd, !(has_kids && role_is(&nd, "row")));
    }
    free(keep);
    free(depth);
    if (b.failed) {
        rg_buf_destroy(&b);
        return NULL;
    }
    return rg_buf_steal(&b);
}

/* ---- diff ---- */

static int line_cmp(const void *a, const void *b)
{
    const reg_line *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->s, y->s, n);
    if (c)
        return c;
    if (x->n != y->n)
        return x->n < y->n ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

static int pos_cmp(const void *a, const void *b)
{
    const reg_line *x = a, *y = b;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

reg_line *reg_split_lines(const char *t, size_t *n)
{
    size_t cap = 1;
    for (const char *c = t; *c; c++)
        cap += *c == '\n';
    reg_line *v = calloc(cap, sizeof *v);
    if (!v)
        return NULL;
    size_t k = 0;
    while (*t) {
        const char *e = strchr(t, '\n');
        size_t len = e ? (size_t)(e - t) : strlen(t);
        v[k] = (reg_line){t, len, k, 0};
        k++;
        t += len + (e ? 1 : 0);
    }
    *n = k;
    return v;
}

char *reg_text_diff(const char *before, const char *now)
{
    size_t na = 0, nb = 0;
    reg_line *a = reg_split_lines(before, &na), *b = reg_split_lines(now, &nb);
    rg_buf out;
    rg_buf_init(&out);
    if (!a || !b) {
        free(a);
        free(b);
        return NULL;
    }
    /* Multiset difference: sort both, walk them together, mark the pairs. */
    qsort(a, na, sizeof *a, line_cmp);
    qsort(b, nb, sizeof *b, line_cmp);
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        reg_line ka = a[i], kb = b[j];
        ka.pos = kb.pos = 0;
        int c = line_cmp(&ka, &kb);
        if (c == 0) {
            a[i++].matched = 1;
            b[j++].matched = 1;
        } else if (c < 0) {
            i++;
        } else {
            j++;
        }
    }
    qsort(a, na, sizeof *a, pos_cmp);
    qsort(b, nb, sizeof *b, pos_cmp);
    for (i = 0; i < na; i++) {
        if (a[i].matched)
            continue;
        rg_buf_puts(&out, "- ");
        rg_buf_append(&out, a[i].s, a[i].n);
        rg_buf_puts(&out, "\n");
    }
    for (j = 0; j < nb; j++) {
        if (b[j].matched)
            continue;
        rg_buf_puts(&out, "+ ");
        rg_buf_append(&out, b[j].s, b[j].n);
        rg_buf_puts(&out, "\n");
    }
    free(a);
    free(b);
    if (out.failed) {
        rg_buf_destroy(&out);
        return NULL;
    }
    return rg_buf_steal(&out);
}
