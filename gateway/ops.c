/*
 * ops.c - the handlers of the ops in wire/op.h's table: each takes a checked
 * command (args, timeout, the held session) and leaves its result or error in
 * it. act runs its steps here, each checked and counted as a command of its
 * own, on the act's held session.
 */
#define _GNU_SOURCE
#include "gateway/gw_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACT_STEPS_MAX 100

typedef int (*op_fn)(gw_cmd *c);

static int op_create(gw_cmd *c);
static int op_info(gw_cmd *c);
static int op_park(gw_cmd *c);
static int op_restore(gw_cmd *c);
static int op_close(gw_cmd *c);
static int op_navigate(gw_cmd *c);
static int op_history(gw_cmd *c);
static int op_observe(gw_cmd *c);
static int op_action(gw_cmd *c);
static int op_eval(gw_cmd *c);
static int op_act(gw_cmd *c);
static int op_subscribe(gw_cmd *c);
static int op_upload(gw_cmd *c);
static int op_downloads(gw_cmd *c);
static int op_console(gw_cmd *c);
static int op_network(gw_cmd *c);
static int op_state(gw_cmd *c);
static int op_cookies(gw_cmd *c);
static int op_cookie_set(gw_cmd *c);
static int op_cookies_clear(gw_cmd *c);
static int op_storage(gw_cmd *c);
static int op_resize(gw_cmd *c);
static int op_download_get(gw_cmd *c);
static int op_pdf(gw_cmd *c);
static int op_emulate(gw_cmd *c);
static int op_tabs(gw_cmd *c);
static int op_tab_new(gw_cmd *c);
static int op_tab_select(gw_cmd *c);
static int op_tab_close(gw_cmd *c);

/* The handler and its parameter (a registry op, a history step) of each op. */
typedef struct op_impl {
    op_fn run;
    int param;
} op_impl;

#define GW_OP_IMPL(ID, name, flags, handler, p, ...) [WIRE_OP_##ID] = {op_##handler, p},
static const op_impl impls[WIRE_OP_COUNT] = {WIRE_OPS(GW_OP_IMPL)};
#undef GW_OP_IMPL

/* Puts what the command saw (its dialogs, its page's errors) in its result,
   or in error.details when it failed; takes list, which may be NULL. */
static void attach(gw_cmd *c, const char *key, cJSON *list)
{
    if (list && c->rc == 0 && cJSON_IsObject(c->result))
        cJSON_AddItemToObject(c->result, key, list);
    else if (list && c->rc < 0 && (c->details || (c->details = cJSON_CreateObject())))
        cJSON_AddItemToObject(c->details, key, list);
    else
        cJSON_Delete(list);
}

/* A viewport's width and height, at create and resize, in CSS pixels. */
#define VIEWPORT_MIN 100
#define VIEWPORT_MAX 8192

#define ERRORS_LISTED 4      /* the last errors a reply lists */
#define ERROR_TEXT_LISTED 300 /* bytes of each one's text there */

/*
 * The errors the session's pages reported that no reply listed yet
 * (uncaught exceptions, console.error, a resource that failed): the last
 * ERRORS_LISTED as [{type, text}], each text clipped, or NULL when none
 * came. So an agent learns that its click broke the page without asking:
 * in that click's reply when the page's report came before it, else in the
 * next command's (the report and the click's answer take different ways
 * through the browser). The whole text and the rest are the console op's.
 */
static cJSON *errors_untold(sess *s)
{
    sess_console_list l;
    if (sess_console_untold(s, sess_console_level("error"), &l) < 0 || l.n == 0) {
        sess_console_list_free(&l);
        return NULL;
    }
    cJSON *out = cJSON_CreateArray();
    for (size_t i = l.n > ERRORS_LISTED ? l.n - ERRORS_LISTED : 0; out && i < l.n; i++) {
        cJSON *o = cJSON_CreateObject();
        char text[ERROR_TEXT_LISTED + 1];
        size_t n = rg_utf8_prefix(l.msgs[i].text, ERROR_TEXT_LISTED);
        memcpy(text, l.msgs[i].text, n);
        text[n] = '\0';
        cJSON_AddStringToObject(o, "type", l.msgs[i].type);
        cJSON_AddStringToObject(o, "text", text);
        cJSON_AddItemToArray(out, o);
    }
    sess_console_list_free(&l);
    return out;
}

int gw_op_run(gw_cmd *c)
{
    c->param = impls[c->id].param;
    if (c->s && (wire_ops[c->id].flags & WIRE_F_PAGE)) {
        const char *tab = gw_arg_str(c, "tab");
        if (tab)
            c->tab = tab;
        int rc = sess_use_tab(c->s, c->tab, c->err, sizeof c->err);
        if (rc < 0)
            return c->rc = rc;
        /* Dialogs the command makes the page open: answered as it says,
           and listed in its result. An act's steps inherit the act's. */
        const char *dlg = gw_arg_str(c, "dialog");
        sess_dialogs saved;
        sess_dialogs_begin(c->s, dlg ? !strcmp(dlg, "accept") : -1, gw_arg_str(c, "prompt_text"),
                           &saved);
        rc = impls[c->id].run(c);
        attach(c, "dialogs", sess_dialogs_end(c->s, &saved));
        attach(c, "errors", errors_untold(c->s));
        return rc;
    }
    return impls[c->id].run(c);
}

/* ---- session ops ---- */

/*
 * A ref the command's tab does not know but another tab's registry holds:
 * refs belong to their tab, so the stale_ref says which tab it is.
 */
static void stale_elsewhere(gw_cmd *c, const char *target)
{
    char other[16];
    if (target && target[0] == '@' && reg_page_has(sess_registry(c->s), target) == 0 &&
        sess_ref_tab(c->s, target, other, sizeof other))
        gw_fail(c, RG_ESTALE,
                "%.64s is a ref of tab %s, not of tab %s: pass \"tab\": \"%s\" or select that tab",
                target, other, sess_tab_id(c->s), other);
}

/* The tenant's URL policy on a navigation target, before the browser sees it. */
static int check_url(gw_cmd *c, const char *url)
{
    char why[256] = "";
    int rc = sess_check_url(c->g->sessions, c->who->tenant, url, why, sizeof why);
    if (rc == RG_EBLOCKEDURL)
        return gw_fail(c, rc, "the URL is refused by the tenant's policy: %s", why);
    if (rc < 0)
        return gw_fail(c, rc, "%s", why[0] ? why : "the URL cannot be opened");
    return 0;
}

static int op_create(gw_cmd *c)
{
    sess_options o = {0};
    const cJSON *vp = cJSON_GetObjectItemCaseSensitive(c->args, "viewport");
    if (vp) {
        const cJSON *e;
        cJSON_ArrayForEach(e, vp)
        {
            if (strcmp(e->string, "width") && strcmp(e->string, "height"))
                return gw_fail(c, RG_EBADREQ, "args.viewport takes width and height only");
            if (!gw_is_int(e) || e->valuedouble < VIEWPORT_MIN || e->valuedouble > VIEWPORT_MAX)
                return gw_fail(c, RG_EBADREQ, "args.viewport.%s must be an integer from %d to %d",
                               e->string, VIEWPORT_MIN, VIEWPORT_MAX);
        }
        o.width = gw_arg_int(&(gw_cmd){.args = vp}, "width", 0);
        o.height = gw_arg_int(&(gw_cmd){.args = vp}, "height", 0);
    }
    o.user_agent = gw_arg_str(c, "user_agent") ? gw_arg_str(c, "user_agent") : c->who->user_agent;
    o.locale = gw_arg_str(c, "locale") ? gw_arg_str(c, "locale") : c->who->locale;
    /* The quota is reserved in Redis by sess_create before it does anything
       else (one script that counts and adds together, so a burst cannot
       overshoot it), and given back when the create fails. */
    if (c->who->max_sessions <= 0)
        return gw_fail(c, RG_EQUOTA, "the tenant's quota is 0 sessions");
    o.quota = c->who->max_sessions;
    o.timezone = gw_arg_str(c, "timezone");
    const char *url = gw_arg_str(c, "url");
    if (url && check_url(c, url) < 0)
        return c->rc;
    o.state = cJSON_GetObjectItemCaseSensitive(c->args, "state");
    if (o.state && sess_state_check(o.state, c->err, sizeof c->err) < 0)
        return c->rc = RG_EBADREQ;
    sess *s;
    int rc =
        sess_create(c->g->sessions, c->who->tenant, &o, c->timeout_ms, &s, c->err, sizeof c->err);
    if (rc < 0) {
        if (rc == RG_EPOOL)
            c->retry_after_ms = POOL_RETRY_AFTER_MS;
        return c->rc = rc;
    }
    c->s = s;
    c->full = 1;
    if (url) {
        sess_nav nav;
        rc = sess_navigate(s, url, "load", c->timeout_ms > 5000 ? c->timeout_ms : GW_NAV_TIMEOUT_MS,
                           &nav, c->err, sizeof c->err);
        sess_nav_free(&nav);
        if (rc < 0) {
            /* The session exists: say so, so the client can use or close it. */
            c->details = cJSON_CreateObject();
            cJSON_AddStringToObject(c->details, "session", sess_id(s));
            return c->rc = rc;
        }
    }
    c->result = cJSON_CreateObject();
    cJSON_AddStringToObject(c->result, "session", sess_id(s));
    cJSON_AddStringToObject(c->result, "worker", sess_worker(c->g->sessions));
    attach(c, "errors", errors_untold(s)); /* the first page's, as navigate's reply has them */
    return 0;
}

/*
 * The answering worker's capacity: the figures a lease is admitted by (its
 * pool's memory budget, the browsers' measured PSS and its age, the live
 * contexts and the hard cap) and why the last lease request that waited did.
 */
static void add_capacity(gw_cmd *c, cJSON *cap)
{
    pool_stats ps;
    pool_get_stats(c->g->pool, &ps);
    sess_stats ss;
    sess_get_stats(c->g->sessions, &ss);
    cJSON_AddStringToObject(cap, "worker", sess_worker(c->g->sessions));
    cJSON_AddNumberToObject(cap, "memory_budget_bytes", (double)ps.memory_max);
    cJSON_AddNumberToObject(cap, "memory_measured_bytes", (double)ps.memory_measured);
    cJSON_AddNumberToObject(cap, "memory_estimate_bytes", (double)ps.memory_estimate);
    cJSON_AddNumberToObject(cap, "memory_per_context_bytes", (double)ps.memory_per_context);
    cJSON_AddNumberToObject(cap, "memory_age_ms", (double)ps.memory_age_ms);
    cJSON_AddNumberToObject(cap, "contexts_live", ps.contexts_in_use);
    cJSON_AddNumberToObject(cap, "contexts_max", ps.contexts_max);
    cJSON_AddNumberToObject(cap, "sessions_live", ss.live);
    cJSON_AddNumberToObject(cap, "sessions_frozen", ss.frozen);
    cJSON_AddNumberToObject(cap, "queued", ps.queue_depth);
    cJSON_AddStringToObject(cap, "last_wait", ps.last_wait ? ps.last_wait : "");
    cJSON_AddNumberToObject(cap, "last_wait_age_ms", (double)ps.last_wait_age_ms);
}

static int op_info(gw_cmd *c)
{
    sess_wait_turn(c->g->sessions, c->who->tenant, c->sid, gw_left_ms(c, c->timeout_ms));
    sess_info in;
    int rc = sess_get_info(c->g->sessions, c->who->tenant, c->sid, &in);
    if (rc == RG_ENOTFOUND)
        return gw_fail(c, rc, "no session %s", c->sid);
    if (rc < 0)
        return gw_fail(c, rc, "Redis is unavailable; try again");
    c->result = cJSON_CreateObject();
    cJSON_AddStringToObject(c->result, "session", c->sid);
    cJSON_AddStringToObject(c->result, "state", in.state);
    cJSON_AddBoolToObject(c->result, "frozen", in.frozen);
    cJSON_AddStringToObject(c->result, "url", in.url);
    cJSON_AddStringToObject(c->result, "title", in.title);
    cJSON_AddNumberToObject(c->result, "created_ms", (double)in.created_ms);
    cJSON_AddNumberToObject(c->result, "last_used_ms", (double)in.last_used_ms);
    cJSON_AddStringToObject(c->result, "worker", in.worker);
    cJSON *vp = cJSON_AddObjectToObject(c->result, "viewport");
    cJSON_AddNumberToObject(vp, "width", in.width);
    cJSON_AddNumberToObject(vp, "height", in.height);
    /* what emulate set, as its reply says it ({} for nothing) */
    cJSON *em = *in.emulation ? cJSON_Parse(in.emulation) : NULL;
    if (!cJSON_IsObject(em)) {
        cJSON_Delete(em);
        em = cJSON_CreateObject();
    }
    cJSON_AddItemToObject(c->result, "emulation", em);
    sess_info_free(&in);
    add_capacity(c, cJSON_AddObjectToObject(c->result, "capacity"));
    return 0;
}

static int op_park(gw_cmd *c)
{
    size_t bytes = 0;
    int rc = sess_park(c->s, &bytes, c->err, sizeof c->err);
    if (rc < 0)
        return c->rc = rc;
    c->result = cJSON_CreateObject();
    cJSON_AddStringToObject(c->result, "state", "parked");
    cJSON_AddNumberToObject(c->result, "bytes", (double)bytes);
    return 0;
}

/* The restore itself happened when the session was opened: its outcome. */
static int op_restore(gw_cmd *c)
{
    c->result = cJSON_CreateObject();
    cJSON_AddStringToObject(c->result, "state", "live");
    cJSON_AddStringToObject(c->result, "worker", sess_worker(c->g->sessions));
    cJSON_AddBoolToObject(c->result, "restored", c->ri && c->ri->restored);
    cJSON_AddNumberToObject(c->result, "refs_kept", c->ri ? (double)c->ri->refs_kept : 0);
    cJSON_AddNumberToObject(c->result, "refs_lost", c->ri ? (double)c->ri->refs_lost : 0);
    return 0;
}

static int op_close(gw_cmd *c)
{
    int rc = sess_close(c->s);
    if (rc < 0)
        return gw_fail(c, rc, "Redis is unavailable; nothing was closed");
    c->result = cJSON_CreateObject();
    cJSON_AddBoolToObject(c->result, "closed", 1);
    /* Subscribers hear it, and the session's live views end with it. */
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "state", "closed");
    gw_event(c->g, c->who->tenant, c->sid, "session", d);
    return 0;
}

static void nav_result(gw_cmd *c, const sess_nav *nav, int with_status)
{
    c->result = cJSON_CreateObject();
    cJSON_AddStringToObject(c->result, "url", nav->url);
    if (with_status)
        cJSON_AddNumberToObject(c->result, "status", nav->status);
    cJSON_AddStringToObject(c->result, "title", nav->title);
}

static int op_navigate(gw_cmd *c)
{
    if (check_url(c, gw_arg_str(c, "url")) < 0)
        return c->rc;
    sess_nav nav;
    int rc = sess_navigate(c->s, gw_arg_str(c, "url"), gw_arg_str(c, "wait"), c->timeout_ms, &nav,
                           c->err, sizeof c->err);
    if (rc < 0)
        return c->rc = rc;
    nav_result(c, &nav, 1);
    sess_nav_free(&nav);
    c->full = 1;
    return 0;
}

static int op_history(gw_cmd *c)
{
    sess_nav nav;
    int rc = sess_history(c->s, c->param, gw_arg_str(c, "wait"), c->timeout_ms, &nav, c->err,
                          sizeof c->err);
    if (rc < 0)
        return c->rc = rc;
    nav_result(c, &nav, 0);
    if (c->param != 0) { /* back and forward: the page as it was left, or loaded again */
        cJSON_AddBoolToObject(c->result, "moved", nav.moved);
        cJSON_AddBoolToObject(c->result, "from_cache", nav.from_cache);
    }
    sess_nav_free(&nav);
    c->full = 1;
    return 0;
}

/* ---- observe ---- */

static const char *stability_name(int s)
{
    return s == REG_NEW ? "new" : s == REG_MOVED ? "moved" : "stable";
}

static cJSON *states_of(unsigned bits)
{
    static const char *names[] = {"checked",  "disabled", "expanded", "focused",
                                  "selected", "required", "readonly"};
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < 7; i++)
        if (bits & (1u << i))
            cJSON_AddItemToArray(a, cJSON_CreateString(names[i]));
    return a;
}

static cJSON *element_of(const reg_node *nd)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "ref", nd->ref);
    cJSON_AddStringToObject(e, "role", nd->role ? nd->role : "");
    cJSON_AddStringToObject(e, "name", nd->name ? nd->name : "");
    cJSON_AddItemToObject(e, "states", states_of(nd->states));
    cJSON_AddStringToObject(e, "tag", nd->tag ? nd->tag : "");
    cJSON *b = cJSON_AddObjectToObject(e, "bounds");
    cJSON_AddNumberToObject(b, "x", nd->bounds[0]);
    cJSON_AddNumberToObject(b, "y", nd->bounds[1]);
    cJSON_AddNumberToObject(b, "w", nd->bounds[2]);
    cJSON_AddNumberToObject(b, "h", nd->bounds[3]);
    cJSON_AddStringToObject(e, "selector", nd->selector ? nd->selector : "");
    cJSON *alt = cJSON_AddArrayToObject(e, "alt_selectors");
    for (size_t i = 0; i < nd->n_alt; i++)
        cJSON_AddItemToArray(alt, cJSON_CreateString(nd->alt[i]));
    cJSON_AddStringToObject(e, "frame", nd->frame ? nd->frame : "");
    cJSON_AddStringToObject(e, "stability", stability_name(nd->stability));
    if (nd->previous_ref)
        cJSON_AddStringToObject(e, "previous_ref", nd->previous_ref);
    return e;
}

/* A scope target becomes a CSS selector: css: as it is, anything else through inspect. */
static int scope_css(gw_cmd *c, const char *scope, char **css)
{
    *css = NULL;
    if (!strncmp(scope, "css:", 4)) {
        *css = strdup(scope + 4);
        return *css ? 0 : RG_ENOMEM;
    }
    reg_action a = {.op = REG_OP_INSPECT, .target = scope, .timeout_ms = c->timeout_ms};
    reg_action_result r = {0};
    int rc = reg_act(sess_registry(c->s), sess_handle(c->s), &a, &r, c->err, sizeof c->err);
    if (rc == RG_ESTALE)
        stale_elsewhere(c, a.target);
    if (rc == 0) {
        const cJSON *alt = cJSON_GetObjectItemCaseSensitive(r.value, "sel");
        const cJSON *last = cJSON_GetArrayItem(alt, cJSON_GetArraySize(alt) - 1);
        const char *v = cJSON_IsString(last) ? last->valuestring : "";
        if (!strncmp(v, "css:", 4))
            v += 4;
        if (cJSON_IsString(last) && !(*css = strdup(v)))
            rc = RG_ENOMEM;
        else if (!cJSON_IsString(last))
            rc = gw_fail(c, RG_EBADREQ, "the scope element has no CSS path");
    }
    reg_action_result_free(&r);
    return rc < 0 ? (c->rc = rc) : 0;
}

static int op_observe(gw_cmd *c)
{
    const char *format = gw_arg_str(c, "format");
    if (!format)
        format = "text";
    int text = !strcmp(format, "text") || !strcmp(format, "both");
    int elements = !strcmp(format, "elements") || !strcmp(format, "both");
    if (!text && !elements)
        return gw_fail(c, RG_EBADREQ, "args.format must be text, elements or both");
    int max = gw_arg_int(c, "max_elements", 0);
    if (gw_has_arg(c, "max_elements") && max < 1)
        return gw_fail(c, RG_EBADREQ, "args.max_elements must be at least 1");
    const char *mode = gw_arg_str(c, "mode");
    if (mode && strcmp(mode, "full") && strcmp(mode, "interactive"))
        return gw_fail(c, RG_EBADREQ, "args.mode must be full or interactive");
    int depth = gw_arg_int(c, "depth", 0);
    if (gw_has_arg(c, "depth") && depth < 1)
        return gw_fail(c, RG_EBADREQ, "args.depth must be at least 1");
    /* find: the outline's lines that match, in snippets (registry/find.c) */
    const char *find = gw_arg_str(c, "find");
    int context = gw_arg_int(c, "context", 3);
    if (!find && (gw_has_arg(c, "regex") || gw_has_arg(c, "context")))
        return gw_fail(c, RG_EBADREQ, "args.regex and args.context go with args.find");
    if (find && (context < 0 || context > 20))
        return gw_fail(c, RG_EBADREQ, "args.context must be 0 to 20");
    if (find && (gw_arg_bool(c, "diff") || elements))
        return gw_fail(c, RG_EBADREQ, "args.find takes format text and no diff");
    reg_find *finder = NULL;
    if (find) {
        int rc = reg_find_new(find, gw_arg_bool(c, "regex"), &finder, c->err, sizeof c->err);
        if (rc < 0)
            return c->err[0] ? (c->rc = rc) : gw_fail(c, rc, "out of memory");
    }
    char *css = NULL;
    const char *scope = gw_arg_str(c, "scope");
    if (scope && scope_css(c, scope, &css) < 0) {
        reg_find_free(finder);
        return c->rc;
    }
    reg_observe_opts opts = {.scope_css = css,
                             .viewport_only = gw_arg_bool(c, "viewport_only"),
                             .max_elements = (size_t)(max > 0 ? max : 0),
                             .diff = gw_arg_bool(c, "diff"),
                             .mode = mode && !strcmp(mode, "interactive") ? REG_MODE_INTERACTIVE
                                                                          : REG_MODE_FULL,
                             .depth = depth,
                             .no_selectors = !elements,
                             .no_bounds = !elements,
                             .no_baseline = finder != NULL,
                             .timeout_ms = c->timeout_ms};
    reg_observation o;
    int rc = reg_observe(sess_registry(c->s), sess_handle(c->s), &opts, &o);
    free(css);
    size_t matches = 0;
    if (rc == 0 && finder) {
        char *found = NULL;
        rc = reg_find_lines(finder, o.text, context, &found, &matches, c->err, sizeof c->err);
        free(o.text);
        o.text = found;
        if (rc < 0)
            reg_observation_free(&o);
        if (rc == RG_EBADREQ) {
            reg_find_free(finder);
            return c->rc = rc;
        }
    }
    reg_find_free(finder);
    if (rc == RG_EBADREQ)
        return gw_fail(c, rc, "the scope matches no element or is not a valid CSS selector");
    if (rc < 0)
        return gw_fail(c, rc, "observe failed (%s)", rg_err_code(rc));
    c->result = cJSON_CreateObject();
    cJSON_AddNumberToObject(c->result, "snapshot_id", (double)o.snapshot_id);
    cJSON_AddStringToObject(c->result, "url", o.url);
    cJSON_AddStringToObject(c->result, "title", o.title);
    if (text)
        cJSON_AddStringToObject(c->result, "text", o.text);
    if (elements) {
        cJSON *arr = cJSON_AddArrayToObject(c->result, "elements");
        for (size_t i = 0; i < o.n_nodes; i++)
            if (o.nodes[i].ref && o.nodes[i].ref[0])
                cJSON_AddItemToArray(arr, element_of(&o.nodes[i]));
    }
    if (find)
        cJSON_AddNumberToObject(c->result, "matches", (double)matches);
    cJSON_AddBoolToObject(c->result, "diff", opts.diff);
    cJSON_AddBoolToObject(c->result, "truncated", o.truncated);
    cJSON *counts = cJSON_AddObjectToObject(c->result, "counts");
    cJSON_AddNumberToObject(counts, "nodes", (double)o.n_nodes);
    cJSON_AddNumberToObject(counts, "refs", (double)o.n_refs);
    cJSON_AddNumberToObject(counts, "text", (double)o.n_text);
    cJSON_AddNumberToObject(counts, "new", (double)o.n_new);
    cJSON_AddNumberToObject(counts, "moved", (double)o.n_moved);
    cJSON_AddNumberToObject(counts, "stable", (double)o.n_stable);
    cJSON_AddNumberToObject(counts, "removed", (double)o.n_removed);
    reg_observation_free(&o);
    return 0;
}

/* ---- actions ---- */

static int modifiers_of(gw_cmd *c, unsigned *out)
{
    *out = 0;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(c->args, "modifiers");
    const cJSON *e;
    cJSON_ArrayForEach(e, m)
    {
        const char *k = e->valuestring;
        if (!strcmp(k, "Alt"))
            *out |= REG_MOD_ALT;
        else if (!strcmp(k, "Control"))
            *out |= REG_MOD_CTRL;
        else if (!strcmp(k, "Meta"))
            *out |= REG_MOD_META;
        else if (!strcmp(k, "Shift"))
            *out |= REG_MOD_SHIFT;
        else
            return gw_fail(c, RG_EBADREQ, "args.modifiers takes Alt, Control, Meta and Shift");
    }
    return 0;
}

static void add_healed(cJSON *res, const reg_action_result *r)
{
    if (!r->healed)
        return;
    cJSON *h = cJSON_AddObjectToObject(res, "healed");
    cJSON_AddStringToObject(h, "from", r->healed_from);
    cJSON_AddStringToObject(h, "via", r->healed_via ? r->healed_via : "");
}

static cJSON *copy_or(const cJSON *raw, const char *k, cJSON *def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(raw, k);
    if (v) {
        cJSON_Delete(def);
        return cJSON_Duplicate(v, 1);
    }
    return def;
}

/* The page's inspect answer in docs/protocol.md's shape. */
static cJSON *inspect_shape(const cJSON *raw)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "ref", copy_or(raw, "ref", cJSON_CreateString("")));
    cJSON_AddItemToObject(o, "role", copy_or(raw, "role", cJSON_CreateString("none")));
    cJSON_AddItemToObject(o, "name", copy_or(raw, "name", cJSON_CreateString("")));
    cJSON_AddItemToObject(o, "description", copy_or(raw, "description", cJSON_CreateString("")));
    cJSON_AddItemToObject(o, "states", copy_or(raw, "states", cJSON_CreateArray()));
    cJSON_AddItemToObject(o, "tag", copy_or(raw, "tag", cJSON_CreateString("")));
    cJSON *id = cJSON_AddObjectToObject(o, "identity");
    static const char *map[][2] = {
        {"testid", "testid"}, {"id", "id"},   {"aria_label", "aria"},   {"role", "role"},
        {"name", "name"},     {"tag", "tag"}, {"parent_role", "prole"}, {"sibling_index", "sib"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        cJSON_AddItemToObject(id, map[i][0], copy_or(raw, map[i][1], cJSON_CreateNull()));
    const cJSON *sel = cJSON_GetObjectItemCaseSensitive(raw, "sel");
    const cJSON *first = cJSON_GetArrayItem(sel, 0);
    cJSON_AddItemToObject(
        o, "selector", cJSON_IsString(first) ? cJSON_Duplicate(first, 0) : cJSON_CreateString(""));
    cJSON_AddItemToObject(o, "alt_selectors", copy_or(raw, "sel", cJSON_CreateArray()));
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(raw, "b");
    cJSON *bo = cJSON_AddObjectToObject(o, "bounds");
    static const char *bk[] = {"x", "y", "w", "h"};
    for (int i = 0; i < 4; i++) {
        const cJSON *v = cJSON_GetArrayItem(b, i);
        cJSON_AddNumberToObject(bo, bk[i], cJSON_IsNumber(v) ? v->valuedouble : 0);
    }
    cJSON_AddItemToObject(o, "frame", copy_or(raw, "frame", cJSON_CreateString("")));
    if (cJSON_GetObjectItemCaseSensitive(raw, "value"))
        cJSON_AddItemToObject(o, "value", copy_or(raw, "value", NULL));
    if (cJSON_GetObjectItemCaseSensitive(raw, "level"))
        cJSON_AddItemToObject(o, "level", copy_or(raw, "level", NULL));
    return o;
}

static cJSON *action_result(int op, reg_action_result *r)
{
    cJSON *res = NULL;
    switch (op) {
    case REG_OP_INSPECT:
        res = inspect_shape(r->value);
        break;
    case REG_OP_SCROLL:
        res = r->value && cJSON_IsObject(r->value) ? r->value : cJSON_CreateObject();
        if (res == r->value)
            r->value = NULL;
        break;
    case REG_OP_READ:
        res = cJSON_CreateObject();
        cJSON_AddItemToObject(res, "value", r->value ? r->value : cJSON_CreateNull());
        r->value = NULL;
        break;
    case REG_OP_SELECT:
        res = cJSON_CreateObject();
        cJSON_AddItemToObject(res, "selected", r->value ? r->value : cJSON_CreateArray());
        r->value = NULL;
        break;
    case REG_OP_SCREENSHOT:
        res = cJSON_CreateObject();
        cJSON_AddItemToObject(res, "data", wire_bin_new(r->data, r->data_len));
        cJSON_AddNumberToObject(res, "width", r->width);
        cJSON_AddNumberToObject(res, "height", r->height);
        break;
    case REG_OP_WAIT:
        res = cJSON_CreateObject();
        cJSON_AddNumberToObject(res, "ms", (double)r->ms);
        break;
    case REG_OP_CHECK:
    case REG_OP_UNCHECK:
        res = cJSON_CreateObject();
        cJSON_AddBoolToObject(res, "checked", r->checked);
        break;
    default:
        res = cJSON_CreateObject();
        break;
    }
    if (op != REG_OP_INSPECT && op != REG_OP_SCROLL && r->ref[0])
        cJSON_AddStringToObject(res, "ref", r->ref);
    if (r->has_point) {
        cJSON_AddNumberToObject(res, "x", r->x);
        cJSON_AddNumberToObject(res, "y", r->y);
    }
    add_healed(res, r);
    return res;
}

static int op_action(gw_cmd *c)
{
    reg_action a = {0};
    a.op = c->param;
    a.target = gw_arg_str(c, "target");
    a.has_nth = gw_has_arg(c, "nth");
    a.nth = gw_arg_int(c, "nth", 0);
    a.button = gw_arg_str(c, "button");
    a.click_count = gw_arg_int(c, "click_count", 0);
    a.value = gw_arg_str(c, "value");
    a.text = gw_arg_str(c, "text");
    a.delay_ms = gw_arg_int(c, "delay_ms", 0);
    a.key = gw_arg_str(c, "key");
    a.dx = gw_arg_int(c, "dx", 0);
    a.dy = gw_arg_int(c, "dy", 0);
    a.to = gw_arg_str(c, "to");
    a.what = gw_arg_str(c, "what");
    a.format = gw_arg_str(c, "format");
    a.quality = gw_arg_int(c, "quality", 0);
    a.full_page = gw_arg_bool(c, "full_page");
    a.state = gw_arg_str(c, "state");
    a.url = gw_arg_str(c, "url");
    a.timeout_ms = c->timeout_ms;
    /* wait for the document's load state, or for the network to go quiet after it */
    const char *load = a.op == REG_OP_WAIT ? gw_arg_str(c, "load") : NULL;
    if (load && strcmp(load, "load") && strcmp(load, "domcontentloaded") &&
        strcmp(load, "networkidle"))
        return gw_fail(c, RG_EBADREQ, "args.load must be load, domcontentloaded or networkidle");
    if (load && (a.target || a.text || a.url || a.state))
        return gw_fail(c, RG_EBADREQ, "args.load is a wait of its own: no target, text, url or "
                                      "state beside it");
    a.load = load && !strcmp(load, "networkidle") ? "load" : load;
    if (a.delay_ms < 0 || a.delay_ms > 1000)
        return gw_fail(c, RG_EBADREQ, "args.delay_ms must be from 0 to 1000");
    if (gw_has_arg(c, "click_count") && (a.click_count < 1 || a.click_count > 3))
        return gw_fail(c, RG_EBADREQ, "args.click_count must be 1, 2 or 3");
    if (modifiers_of(c, &a.modifiers) < 0)
        return c->rc;
    const cJSON *vals = cJSON_GetObjectItemCaseSensitive(c->args, "values");
    const char *vbuf[64];
    if (vals) {
        int n = cJSON_GetArraySize(vals);
        if (n > 64)
            return gw_fail(c, RG_EBADREQ, "args.values holds at most 64 values");
        const cJSON *e;
        cJSON_ArrayForEach(e, vals)
        {
            vbuf[a.n_values++] = e->valuestring;
        }
        a.values = vbuf;
    }
    reg_action_result r = {0};
    int64_t t0 = rg_now_ms();
    int rc = reg_act(sess_registry(c->s), sess_handle(c->s), &a, &r, c->err, sizeof c->err);
    if (rc == 0 && load && !strcmp(load, "networkidle")) {
        rc = sess_network_quiet(c->s, c->timeout_ms - (int)(rg_now_ms() - t0), c->err,
                                sizeof c->err);
        r.ms = rg_now_ms() - t0;
    }
    if (rc == RG_ESTALE)
        stale_elsewhere(c, a.target);
    if (rc == RG_EAMBIGUOUS) {
        c->details = cJSON_CreateObject();
        cJSON_AddNumberToObject(c->details, "count", r.count);
    }
    if (rc < 0) {
        reg_action_result_free(&r);
        return c->rc = rc;
    }
    /* The last action's scroll, or none: a key press may have scrolled since a click. */
    sess_note_scroll(c->s, r.has_scroll, r.sx, r.sy);
    c->result = action_result(a.op, &r);
    reg_action_result_free(&r);
    return 0;
}

/* ---- eval ---- */

static int op_eval(gw_cmd *c)
{
    if (!c->who->allow_eval)
        return gw_fail(c, RG_EFORBIDDEN, "eval is not allowed for this tenant");
    const char *expr = gw_arg_str(c, "expression");
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_printf(&q, "{\"returnByValue\":true,\"awaitPromise\":%s,\"expression\":",
                  gw_arg_bool(c, "await") ? "true" : "false");
    rg_buf_json_str(&q, expr, strlen(expr));
    rg_buf_puts(&q, "}");
    reg_page_handle h = sess_handle(c->s);
    cdp_reply r;
    int rc = q.failed ? RG_ENOMEM
                      : cdp_call(h.conn, h.session, "Runtime.evaluate", q.data, c->timeout_ms, &r);
    rg_buf_destroy(&q);
    if (rc < 0)
        return gw_fail(c, rc, "the evaluation failed (%s)", rg_err_code(rc));
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(r.result, "exceptionDetails");
    if (ex) {
        const cJSON *desc = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(ex, "exception"), "description");
        gw_fail(c, RG_EBADREQ, "the expression threw: %.400s",
                cJSON_IsString(desc) ? desc->valuestring : "an exception");
        cdp_reply_free(&r);
        return c->rc;
    }
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(r.result, "result");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(res, "value");
    c->result = cJSON_CreateObject();
    cJSON_AddItemToObject(c->result, "value", v ? cJSON_Duplicate(v, 1) : cJSON_CreateNull());
    cdp_reply_free(&r);
    return 0;
}

/* ---- files ---- */

/*
 * One entry of upload's files, {name, data, mime}, into f: data is msgpack
 * bin, or in a JSON body the base64 of the bytes (JSON has no bin); *bytes
 * gets the decoded copy (caller frees).
 */
static int upload_file_of(gw_cmd *c, const cJSON *e, int i, sess_file *f, unsigned char **bytes)
{
    *bytes = NULL;
    const cJSON *k;
    cJSON_ArrayForEach(k, e)
    {
        if (strcmp(k->string, "name") && strcmp(k->string, "data") && strcmp(k->string, "mime"))
            return gw_fail(c, RG_EBADREQ, "args.files[%d] takes name, data and mime only", i);
    }
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(e, "data");
    const cJSON *mime = cJSON_GetObjectItemCaseSensitive(e, "mime");
    if (!cJSON_IsString(name) || wire_is_bin(name))
        return gw_fail(c, RG_EBADREQ, "args.files[%d].name must be a string", i);
    if (!cJSON_IsString(data))
        return gw_fail(c, RG_EBADREQ,
                       "args.files[%d].data must be the file's bytes: bin in msgpack, a base64 "
                       "string in JSON",
                       i);
    if (mime && (!cJSON_IsString(mime) || wire_is_bin(mime) || !strchr(mime->valuestring, '/') ||
                 strlen(mime->valuestring) > 127))
        return gw_fail(c, RG_EBADREQ, "args.files[%d].mime must be a media type (type/subtype)", i);
    char why[256];
    if (sess_file_name_check(name->valuestring, why, sizeof why) < 0)
        return gw_fail(c, RG_EBADREQ, "args.files[%d].name: %s", i, why);
    size_t n = strlen(data->valuestring), len = 0;
    if (n) {
        *bytes = rg_base64_decode(data->valuestring, n, &len);
        if (!*bytes)
            return gw_fail(c, RG_EBADREQ, "args.files[%d].data is not base64", i);
    }
    f->name = name->valuestring;
    f->data = *bytes ? (const void *)*bytes : (const void *)"";
    f->len = len;
    return 0;
}

static int op_upload(gw_cmd *c)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(c->args, "files");
    int n = cJSON_GetArraySize(arr);
    if (n < 1 || n > RG_UPLOAD_FILES_MAX)
        return gw_fail(c, RG_EBADREQ, "args.files holds 1 to %d files", RG_UPLOAD_FILES_MAX);
    sess_file files[RG_UPLOAD_FILES_MAX];
    unsigned char *bytes[RG_UPLOAD_FILES_MAX] = {0};
    int i = 0, rc = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        if ((rc = upload_file_of(c, e, i, &files[i], &bytes[i])) < 0)
            break;
        i++;
    }
    reg_action a = {.target = gw_arg_str(c, "target"),
                    .has_nth = gw_has_arg(c, "nth"),
                    .nth = gw_arg_int(c, "nth", 0),
                    .timeout_ms = c->timeout_ms};
    reg_action_result r = {0};
    if (rc == 0) {
        rc = sess_upload(c->s, &a, files, (size_t)n, &r, c->err, sizeof c->err);
        if (rc == RG_EAMBIGUOUS) {
            c->details = cJSON_CreateObject();
            cJSON_AddNumberToObject(c->details, "count", r.count);
        }
        if (rc < 0)
            c->rc = rc;
    }
    for (int k = 0; k < RG_UPLOAD_FILES_MAX; k++)
        free(bytes[k]);
    if (rc < 0) {
        reg_action_result_free(&r);
        return c->rc;
    }
    c->result = cJSON_CreateObject();
    cJSON_AddStringToObject(c->result, "ref", r.ref);
    cJSON_AddNumberToObject(c->result, "files", n);
    add_healed(c->result, &r);
    reg_action_result_free(&r);
    return 0;
}

static int op_downloads(gw_cmd *c)
{
    sess_download *d;
    size_t n;
    int rc = sess_downloads(c->s, &d, &n);
    if (rc < 0)
        return gw_fail(c, rc, "the downloads could not be listed");
    c->result = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(c->result, "downloads");
    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", d[i].id);
        cJSON_AddStringToObject(o, "name", d[i].name);
        cJSON_AddNumberToObject(o, "bytes", (double)d[i].bytes);
        cJSON_AddStringToObject(o, "mime", d[i].mime);
        cJSON_AddStringToObject(o, "state", sess_dl_state_name(d[i].state));
        cJSON_AddItemToArray(arr, o);
    }
    free(d);
    return 0;
}

/* The end of a console or network reply: the count to pass as since next, and what it lost. */
static void log_tail(cJSON *res, uint64_t next, uint64_t dropped, int reset)
{
    cJSON_AddNumberToObject(res, "next", (double)next);
    if (dropped)
        cJSON_AddNumberToObject(res, "dropped", (double)dropped);
    if (reset)
        cJSON_AddBoolToObject(res, "reset", 1);
}

/* What the session's pages said (session/console.c), after `since`. */
static int op_console(gw_cmd *c)
{
    int64_t since = gw_arg_int(c, "since", 0);
    if (since < 0)
        return gw_fail(c, RG_EBADREQ, "args.since must be at least 0 (a console reply's next)");
    int level = sess_console_level(gw_arg_str(c, "level"));
    if (level < 0)
        return gw_fail(c, RG_EBADREQ, "args.level must be all, warning or error");
    sess_console_list l;
    int rc = sess_console(c->s, (uint64_t)since, level, &l);
    if (rc < 0)
        return gw_fail(c, rc, "the console could not be listed");
    c->result = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(c->result, "messages");
    for (size_t i = 0; i < l.n; i++) {
        const sess_console_msg *e = &l.msgs[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "seq", (double)e->seq);
        cJSON_AddStringToObject(o, "type", e->type);
        cJSON_AddStringToObject(o, "source", e->source);
        cJSON_AddStringToObject(o, "text", e->text);
        if (e->url[0])
            cJSON_AddStringToObject(o, "url", e->url);
        if (e->line)
            cJSON_AddNumberToObject(o, "line", e->line);
        cJSON_AddStringToObject(o, "tab", e->tab);
        cJSON_AddNumberToObject(o, "ts", (double)e->ts_ms);
        cJSON_AddItemToArray(arr, o);
    }
    log_tail(c->result, l.next, l.dropped, l.reset);
    sess_console_list_free(&l);
    return 0;
}

/* The session's cookies and localStorage, as Playwright's storageState() gives them. */
static int op_state(gw_cmd *c)
{
    int rc = sess_state_get(c->s, &c->result);
    return rc < 0 ? gw_fail(c, rc, "the browser did not give the session's state") : 0;
}

/*
 * The cookies of the session's context (cookies), one set (cookies.set) and
 * the deletion of those matching a name, domain and path (cookies.clear),
 * as Playwright's context.cookies(), addCookies() and clearCookies() do.
 * No URL policy: a cookie opens no connection. The cookie jar is the
 * checkpoint's, so a change is written at once (a full checkpoint).
 */
static int op_cookies(gw_cmd *c)
{
    cJSON *list = NULL;
    int rc = sess_cookies_get(c->s, cJSON_GetObjectItemCaseSensitive(c->args, "urls"),
                              gw_arg_str(c, "name"), &list, c->err, sizeof c->err);
    if (rc < 0)
        return c->err[0] ? (c->rc = rc) : gw_fail(c, rc, "the browser did not give the cookies");
    c->result = cJSON_CreateObject();
    cJSON_AddItemToObject(c->result, "cookies", list);
    return 0;
}

static int op_cookie_set(gw_cmd *c)
{
    int rc = sess_cookie_set(c->s, c->args, c->err, sizeof c->err);
    if (rc < 0)
        return c->err[0] ? (c->rc = rc) : gw_fail(c, rc, "the browser did not set the cookie");
    c->full = 1;
    c->result = cJSON_CreateObject();
    return 0;
}

static int op_cookies_clear(gw_cmd *c)
{
    int n = 0;
    int rc = sess_cookies_clear(c->s, gw_arg_str(c, "name"), gw_arg_str(c, "domain"),
                                gw_arg_str(c, "path"), &n);
    if (rc < 0)
        return gw_fail(c, rc, "the browser did not clear the cookies");
    c->full = 1;
    c->result = cJSON_CreateObject();
    cJSON_AddNumberToObject(c->result, "cleared", n);
    return 0;
}

/*
 * The active tab's localStorage or sessionStorage (kind, "local" by
 * default): read (storage), one item set (storage.set, param 1), one item
 * or all removed (storage.clear, param 2), as Playwright's page.localStorage
 * does. The park's capture holds that storage: a change is a full checkpoint.
 */
static int op_storage(gw_cmd *c)
{
    static const char *const ops[] = {"get", "set", "clear"};
    const char *kind = gw_arg_str(c, "kind");
    cJSON *out = NULL;
    int rc = sess_storage(c->s, kind ? kind : "local", ops[c->param], gw_arg_str(c, "key"),
                          gw_arg_str(c, "value"), &out, c->err, sizeof c->err);
    if (rc < 0)
        return c->err[0] ? (c->rc = rc)
                         : gw_fail(c, rc, "the page did not answer about its storage");
    if (c->param > 0)
        c->full = 1;
    c->result = out;
    return 0;
}

/* The requests the session's pages made (session/netlog.c), after `since`. */
static int op_network(gw_cmd *c)
{
    int64_t since = gw_arg_int(c, "since", 0);
    if (since < 0)
        return gw_fail(c, RG_EBADREQ, "args.since must be at least 0 (a network reply's next)");
    sess_net_list l;
    int rc = sess_network(c->s, (uint64_t)since, gw_arg_str(c, "filter"), gw_arg_bool(c, "static"),
                          &l);
    if (rc < 0)
        return gw_fail(c, rc, "the requests could not be listed");
    c->result = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(c->result, "requests");
    for (size_t i = 0; i < l.n; i++) {
        const sess_net_req *e = &l.reqs[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "seq", (double)e->seq);
        cJSON_AddStringToObject(o, "method", e->method);
        cJSON_AddStringToObject(o, "url", e->url);
        cJSON_AddStringToObject(o, "type", e->type);
        if (e->status) {
            cJSON_AddNumberToObject(o, "status", e->status);
            cJSON_AddStringToObject(o, "status_text", e->status_text);
        }
        if (e->failure[0])
            cJSON_AddStringToObject(o, "failure", e->failure);
        if (e->blocked)
            cJSON_AddStringToObject(o, "blocked", e->blocked);
        if (e->done)
            cJSON_AddNumberToObject(o, "ms", (double)(int64_t)(e->ms * 100 + 0.5) / 100);
        else
            cJSON_AddBoolToObject(o, "pending", 1);
        cJSON_AddStringToObject(o, "tab", e->tab);
        cJSON_AddNumberToObject(o, "ts", (double)e->ts_ms);
        cJSON_AddItemToArray(arr, o);
    }
    log_tail(c->result, l.next, l.dropped, l.reset);
    sess_net_list_free(&l);
    return 0;
}

/* The viewport of every tab, from now on and after a restore. */
static int op_resize(gw_cmd *c)
{
    static const char *const dims[] = {"width", "height"};
    int v[2];
    for (int k = 0; k < 2; k++) {
        v[k] = gw_arg_int(c, dims[k], 0);
        if (v[k] < VIEWPORT_MIN || v[k] > VIEWPORT_MAX)
            return gw_fail(c, RG_EBADREQ, "args.%s must be an integer from %d to %d", dims[k],
                           VIEWPORT_MIN, VIEWPORT_MAX);
    }
    int rc = sess_resize(c->s, v[0], v[1], c->err, sizeof c->err);
    if (rc < 0)
        return c->rc = rc;
    c->full = 1; /* written at once: a restore keeps it */
    c->result = cJSON_CreateObject();
    cJSON_AddNumberToObject(c->result, "width", v[0]);
    cJSON_AddNumberToObject(c->result, "height", v[1]);
    return 0;
}

/* The media, network and position the pages see, for every tab, kept by restores
   (session/tabs.c). */
static int op_emulate(gw_cmd *c)
{
    cJSON *now = NULL;
    int rc = sess_emulate(c->s, c->args, &now, c->err, sizeof c->err);
    if (rc < 0)
        return c->rc = rc;
    c->full = 1; /* written at once: a restore keeps it */
    c->result = now;
    return 0;
}

/* A result whose data is bytes read (taken and freed here); what names them, for the error. */
static int bytes_result(gw_cmd *c, unsigned char *data, size_t len, const char *what)
{
    c->result = cJSON_CreateObject();
    cJSON *bin = wire_bin_new(data, len);
    free(data);
    if (!bin)
        return gw_fail(c, RG_ENOMEM, "the %s is too large to send", what);
    cJSON_AddItemToObject(c->result, "data", bin);
    return 0;
}

/* The tab's page as a PDF, as the browser prints it (session/files.c). */
static int op_pdf(gw_cmd *c)
{
    unsigned char *data;
    size_t len;
    int background = gw_has_arg(c, "background") ? gw_arg_bool(c, "background") : 1;
    int rc = sess_pdf(c->s, gw_arg_bool(c, "landscape"), background, gw_arg_str(c, "paper"),
                      c->timeout_ms, &data, &len, c->err, sizeof c->err);
    if (rc < 0 || (rc = bytes_result(c, data, len, "PDF")) < 0)
        return c->rc = rc;
    cJSON_AddNumberToObject(c->result, "bytes", (double)len);
    return 0;
}

static int op_download_get(gw_cmd *c)
{
    sess_download d;
    unsigned char *data;
    size_t len;
    int rc = sess_download_read(c->s, gw_arg_str(c, "id"), &d, &data, &len, c->err, sizeof c->err);
    if (rc < 0 || (rc = bytes_result(c, data, len, "download")) < 0)
        return c->rc = rc;
    cJSON_AddStringToObject(c->result, "name", d.name);
    cJSON_AddStringToObject(c->result, "mime", d.mime);
    return 0;
}

/* ---- act and subscribe ---- */

static cJSON *run_in_session(gw_cmd *parent, const cJSON *step, int64_t deadline,
                             const char *why, int *ok);

/*
 * The act's timeout_ms bounds the whole batch (GW_MAX_TIMEOUT_MS when it
 * gives none): each step gets at most what is left of it, and once it has
 * run out no further step starts, whatever stop_on_error says: the next one
 * is the last entry, a timeout. Before, a
 * batch of 100 steps could hold the session for 100 times its steps'
 * timeouts, long after nginx had answered the client with a 504.
 */
static int op_act(gw_cmd *c)
{
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(c->args, "steps");
    if (cJSON_GetArraySize(steps) > ACT_STEPS_MAX)
        return gw_fail(c, RG_EBADREQ, "args.steps holds at most %d steps", ACT_STEPS_MAX);
    int stop = !gw_has_arg(c, "stop_on_error") || gw_arg_bool(c, "stop_on_error");
    int64_t deadline =
        rg_now_ms() + (gw_has_arg(c, "timeout_ms") ? c->timeout_ms : GW_MAX_TIMEOUT_MS);
    const char *why = "the act's timeout_ms ran out";
    if (c->who->deadline_ms && c->who->deadline_ms < deadline) { /* over HTTP */
        deadline = c->who->deadline_ms;
        why = c->g->http_cut;
    }
    c->result = cJSON_CreateObject();
    cJSON *results = cJSON_AddArrayToObject(c->result, "results");
    const cJSON *st;
    cJSON_ArrayForEach(st, steps)
    {
        int ok = 0, late = rg_now_ms() >= deadline; /* then the step says so, and ends it */
        cJSON *reply = run_in_session(c, st, deadline, why, &ok);
        cJSON_AddItemToArray(results, reply);
        if ((!ok && stop) || late)
            break;
    }
    return 0;
}

static int op_subscribe(gw_cmd *c)
{
    static const char *kinds[] = {"navigation", "console", "dialog",  "snapshot",
                                  "session",    "download", "screencast", "tab"};
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(c->args, "events");
    const cJSON *e;
    int cast = 0;
    cJSON_ArrayForEach(e, ev)
    {
        int known = 0;
        for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
            known |= !strcmp(kinds[i], e->valuestring);
        if (!known)
            return gw_fail(c, RG_EBADREQ,
                           "args.events takes navigation, console, dialog, "
                           "snapshot, session, download, screencast and tab");
        cast |= !strcmp(e->valuestring, "screencast");
    }
    /* The screencast's settings (the WebSocket side starts it). */
    const char *fmt = gw_arg_str(c, "format");
    int quality = gw_arg_int(c, "quality", 60);
    int mw = gw_arg_int(c, "max_width", 1280), mh = gw_arg_int(c, "max_height", 800);
    int fps = gw_arg_int(c, "max_fps", GW_CAST_FPS_DEFAULT);
    if ((fmt || gw_has_arg(c, "quality") || gw_has_arg(c, "max_width") ||
         gw_has_arg(c, "max_height") || gw_has_arg(c, "max_fps")) &&
        !cast)
        return gw_fail(c, RG_EBADREQ,
                       "args.format, quality, max_width, max_height and max_fps "
                       "go with screencast");
    if (fmt && strcmp(fmt, "jpeg") && strcmp(fmt, "png"))
        return gw_fail(c, RG_EBADREQ, "args.format must be jpeg or png");
    if (quality < 1 || quality > 100)
        return gw_fail(c, RG_EBADREQ, "args.quality must be from 1 to 100");
    if (mw < 16 || mw > 4096 || mh < 16 || mh > 4096)
        return gw_fail(c, RG_EBADREQ, "args.max_width and max_height must be from 16 to 4096");
    if (fps < 1 || fps > GW_CAST_FPS_MAX)
        return gw_fail(c, RG_EBADREQ, "args.max_fps must be from 1 to %d", GW_CAST_FPS_MAX);
    /* The WebSocket side records the subscription from the reply. */
    c->result = cJSON_CreateObject();
    cJSON_AddItemToObject(c->result, "events", cJSON_Duplicate(ev, 1));
    if (cast) {
        cJSON *sc = cJSON_AddObjectToObject(c->result, "screencast");
        cJSON_AddStringToObject(sc, "format", fmt ? fmt : "jpeg");
        cJSON_AddNumberToObject(sc, "quality", quality);
        cJSON_AddNumberToObject(sc, "max_width", mw);
        cJSON_AddNumberToObject(sc, "max_height", mh);
        cJSON_AddNumberToObject(sc, "max_fps", fps);
    }
    return 0;
}

/* One act step on the parent's held session, ending by deadline (ms), which why names: its
   reply map. */
static cJSON *run_in_session(gw_cmd *parent, const cJSON *step, int64_t deadline,
                             const char *why, int *ok)
{
    int64_t t0 = rg_now_us();
    gw_cmd c = {.g = parent->g,
                .who = parent->who,
                .sid = parent->sid,
                .s = parent->s,
                .tab = parent->tab,
                .nested = 1,
                .id = -1};
    const cJSON *id;
    const char *idem;
    const wire_op *o = NULL;
    if (gw_check_map(&c, step, 1, &id, &idem) == 0) {
        if (cJSON_GetObjectItemCaseSensitive(step, "id") ||
            cJSON_GetObjectItemCaseSensitive(step, "idempotency_key"))
            gw_fail(&c, RG_EBADREQ, "act steps take op and args only");
        else if ((o = gw_prepare(&c, step, NULL)) && (o->flags & WIRE_F_NOT_IN_ACT))
            gw_fail(&c, RG_EBADREQ, "%s cannot be an act step", c.op);
        else if (o) {
            int asked = c.timeout_ms;
            if (rg_now_ms() >= deadline) {
                gw_fail(&c, RG_ETIMEOUT, "%s: no time was left for this step", why);
            } else {
                c.timeout_ms = gw_clamp_ms(deadline, asked);
                sess_note_scroll(c.s, 0, 0, 0); /* a step that does not say may scroll (eval) */
                gw_op_run(&c);
                if (c.rc < 0 && c.timeout_ms < asked && rg_now_ms() >= deadline)
                    gw_note_cut(&c, why);
            }
        }
    }
    if (c.rc == 0 && o && (o->flags & WIRE_F_CHANGES))
        parent->changed = 1;
    parent->full |= c.full;
    double ms = (double)(rg_now_us() - t0) / 1000.0;
    if (o)
        gw_metrics_count(parent->g, c.id, c.rc, ms);
    *ok = c.rc == 0;
    cJSON *r = gw_reply_of(&c, NULL, ms);
    cJSON_Delete(c.result);
    cJSON_Delete(c.details);
    return r;
}

/* ---- tabs ---- */

static int op_tabs(gw_cmd *c)
{
    sess_tab_info *v;
    size_t n;
    int rc = sess_tabs_list(c->s, &v, &n);
    if (rc < 0)
        return gw_fail(c, rc, "the tabs could not be listed (%s)", rg_err_code(rc));
    c->result = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(c->result, "tabs");
    for (size_t i = 0; i < n; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "tab", v[i].tab);
        cJSON_AddStringToObject(t, "url", v[i].url);
        cJSON_AddStringToObject(t, "title", v[i].title);
        cJSON_AddBoolToObject(t, "active", v[i].active);
        if (v[i].opener[0])
            cJSON_AddStringToObject(t, "opener", v[i].opener);
        else
            cJSON_AddNullToObject(t, "opener");
        cJSON_AddItemToArray(arr, t);
    }
    sess_tab_infos_free(v, n);
    return 0;
}

static int op_tab_new(gw_cmd *c)
{
    const char *url = gw_arg_str(c, "url");
    if (check_url(c, url) < 0)
        return c->rc;
    char tab[16];
    sess_nav nav;
    c->full = 1; /* which tab is active is the park's to keep */
    int rc = sess_tab_new(c->s, url, c->timeout_ms, tab, &nav, c->err, sizeof c->err);
    if (rc < 0) {
        sess_nav_free(&nav);
        if (tab[0]) {
            /* The tab exists: say so, so the client can use or close it. */
            c->details = cJSON_CreateObject();
            cJSON_AddStringToObject(c->details, "tab", tab);
        }
        return c->rc = rc;
    }
    c->result = cJSON_CreateObject();
    cJSON_AddStringToObject(c->result, "tab", tab);
    cJSON_AddStringToObject(c->result, "url", nav.url);
    cJSON_AddStringToObject(c->result, "title", nav.title);
    sess_nav_free(&nav);
    return 0;
}

static int op_tab_select(gw_cmd *c)
{
    const char *tab = gw_arg_str(c, "tab");
    int rc = sess_tab_select(c->s, tab, c->err, sizeof c->err);
    if (rc < 0)
        return c->rc = rc;
    c->full = 1;
    c->tab = NULL; /* what follows (the snapshot event) is the new active tab's */
    c->result = cJSON_CreateObject();
    cJSON_AddStringToObject(c->result, "tab", tab);
    return 0;
}

static int op_tab_close(gw_cmd *c)
{
    int rc = sess_tab_close(c->s, gw_arg_str(c, "tab"), c->err, sizeof c->err);
    if (rc < 0)
        return c->rc = rc;
    c->full = 1;
    c->result = cJSON_CreateObject();
    cJSON_AddBoolToObject(c->result, "closed", 1);
    return 0;
}
