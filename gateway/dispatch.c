/*
 * dispatch.c - one command map, as docs/protocol.md says: the map and its args
 * checked against the op's table (unknown keys and wrong types are
 * bad_request), the session taken for the command (restored when parked,
 * taken over from another worker), the op run, the reply map built, the
 * session checkpointed, and the reply kept for its idempotency_key.
 */
#define _GNU_SOURCE
#include "gw_int.h"

#include <hiredis/hiredis.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TIMEOUT_MS 5000
#define NAV_TIMEOUT_MS 30000
#define MAX_TIMEOUT_MS 600000
#define ACT_STEPS_MAX 100

/* ---- the command context ---- */

typedef struct cmd {
    gw *g;
    const gw_caller *who;
    const char *sid;
    const char *op;
    int op_index;
    const cJSON *args; /* never NULL: an empty object when absent */
    int timeout_ms;
    sess *s;
    int nested;        /* an act step */
    int full;          /* checkpoint cookies and storage after it */
    int changed;       /* the page may have changed: snapshot event */
    /* the outcome */
    int rc;
    char err[512];
    cJSON *result;
    cJSON *details;
    int retry_after_ms;
} cmd;

static int fail(cmd *c, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(cmd *c, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    c->rc = rc;
    return rc;
}

/* ---- argument tables ---- */

enum { A_STR = 1, A_INT, A_BOOL, A_MAP, A_STRS, A_MAPS, A_REQ = 0x100 };

typedef struct argspec {
    const char *name;
    int type;
} argspec;

typedef int (*op_fn)(cmd *c);

enum { OP_SESSION = 1, OP_NO_SESSION = 2, OP_WS_ONLY = 4, OP_NOT_IN_ACT = 8, OP_CHANGES = 16,
       OP_NAV = 32, OP_MOVES = 64 /* changes the scroll position, not the page */ };

typedef struct opspec {
    const char *name;
    op_fn run;
    unsigned flags;
    argspec args[10];
} opspec;

static int op_create(cmd *c);
static int op_info(cmd *c);
static int op_park(cmd *c);
static int op_restore(cmd *c);
static int op_close(cmd *c);
static int op_navigate(cmd *c);
static int op_history(cmd *c);
static int op_observe(cmd *c);
static int op_action(cmd *c);
static int op_eval(cmd *c);
static int op_act(cmd *c);
static int op_subscribe(cmd *c);

#define TGT {"target", A_STR}, {"nth", A_INT}
#define TGT_REQ {"target", A_STR | A_REQ}, {"nth", A_INT}

static const opspec ops[] = {
    {"session.create", op_create, OP_NO_SESSION | OP_NOT_IN_ACT,
     {{"viewport", A_MAP}, {"user_agent", A_STR}, {"locale", A_STR}, {"timezone", A_STR},
      {"url", A_STR}}},
    {"session.info", op_info, OP_NOT_IN_ACT, {{NULL, 0}}},
    {"session.park", op_park, OP_SESSION | OP_NOT_IN_ACT, {{NULL, 0}}},
    {"session.restore", op_restore, OP_SESSION | OP_NOT_IN_ACT, {{NULL, 0}}},
    {"session.close", op_close, OP_NOT_IN_ACT, {{NULL, 0}}},
    {"navigate", op_navigate, OP_SESSION | OP_CHANGES | OP_NAV,
     {{"url", A_STR | A_REQ}, {"wait", A_STR}}},
    {"back", op_history, OP_SESSION | OP_CHANGES | OP_NAV, {{"wait", A_STR}}},
    {"forward", op_history, OP_SESSION | OP_CHANGES | OP_NAV, {{"wait", A_STR}}},
    {"reload", op_history, OP_SESSION | OP_CHANGES | OP_NAV, {{"wait", A_STR}}},
    {"observe", op_observe, OP_SESSION,
     {{"format", A_STR}, {"diff", A_BOOL}, {"scope", A_STR}, {"max_elements", A_INT},
      {"viewport_only", A_BOOL}, {"mode", A_STR}, {"depth", A_INT}}},
    {"click", op_action, OP_SESSION | OP_CHANGES,
     {TGT_REQ, {"button", A_STR}, {"click_count", A_INT}, {"modifiers", A_STRS}}},
    {"fill", op_action, OP_SESSION | OP_CHANGES, {TGT_REQ, {"value", A_STR | A_REQ}}},
    {"type", op_action, OP_SESSION | OP_CHANGES,
     {TGT, {"text", A_STR | A_REQ}, {"delay_ms", A_INT}}},
    {"press", op_action, OP_SESSION | OP_CHANGES, {TGT, {"key", A_STR | A_REQ}}},
    {"select", op_action, OP_SESSION | OP_CHANGES, {TGT_REQ, {"values", A_STRS | A_REQ}}},
    {"check", op_action, OP_SESSION | OP_CHANGES, {TGT_REQ}},
    {"uncheck", op_action, OP_SESSION | OP_CHANGES, {TGT_REQ}},
    {"hover", op_action, OP_SESSION | OP_CHANGES, {TGT_REQ}},
    {"focus", op_action, OP_SESSION | OP_CHANGES, {TGT_REQ}},
    {"scroll", op_action, OP_SESSION | OP_MOVES,
     {TGT, {"dx", A_INT}, {"dy", A_INT}, {"to", A_STR}}},
    {"read", op_action, OP_SESSION, {TGT, {"what", A_STR}}},
    {"screenshot", op_action, OP_SESSION,
     {TGT, {"format", A_STR}, {"quality", A_INT}, {"full_page", A_BOOL}}},
    {"wait", op_action, OP_SESSION,
     {TGT, {"state", A_STR}, {"text", A_STR}, {"url", A_STR}}},
    {"inspect", op_action, OP_SESSION, {TGT_REQ}},
    {"eval", op_eval, OP_SESSION | OP_CHANGES, {{"expression", A_STR | A_REQ}, {"await", A_BOOL}}},
    {"act", op_act, OP_SESSION | OP_NOT_IN_ACT | OP_CHANGES,
     {{"steps", A_MAPS | A_REQ}, {"stop_on_error", A_BOOL}}},
    {"subscribe", op_subscribe, OP_WS_ONLY | OP_NOT_IN_ACT, {{"events", A_STRS | A_REQ}}},
};

#define N_OPS ((int)(sizeof ops / sizeof ops[0]))

const char *gw_op_name(int i)
{
    return i >= 0 && i < N_OPS ? ops[i].name : NULL;
}

int gw_op_index(const char *op)
{
    for (int i = 0; op && i < N_OPS; i++)
        if (!strcmp(ops[i].name, op))
            return i;
    return -1;
}

static const char *type_name(int t)
{
    switch (t & 0xff) {
    case A_STR:
        return "a string";
    case A_INT:
        return "an integer";
    case A_BOOL:
        return "a boolean";
    case A_MAP:
        return "a map";
    case A_STRS:
        return "an array of strings";
    default:
        return "an array of maps";
    }
}

static int is_int(const cJSON *v)
{
    return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
           fabs(v->valuedouble) < 9007199254740992.0;
}

static int type_ok(const cJSON *v, int t)
{
    switch (t & 0xff) {
    case A_STR:
        return cJSON_IsString(v) && !wire_is_bin(v);
    case A_INT:
        return is_int(v);
    case A_BOOL:
        return cJSON_IsBool(v);
    case A_MAP:
        return cJSON_IsObject(v);
    case A_STRS:
    case A_MAPS: {
        if (!cJSON_IsArray(v))
            return 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, v)
        {
            /* Each element is held to A_STR's rule: str, not bin. */
            if ((t & 0xff) == A_STRS ? !type_ok(e, A_STR) : !cJSON_IsObject(e))
                return 0;
        }
        return 1;
    }
    }
    return 0;
}

/*
 * How many bytes of s a message quotes: at most max, and never part of a
 * character. s is UTF-8 (the decoders see to it); a cut character would make
 * the whole reply invalid UTF-8, which strict clients refuse.
 */
static int quote_len(const char *s, int max)
{
    size_t n = strnlen(s, (size_t)max + 1);
    if (n <= (size_t)max)
        return (int)n;
    n = (size_t)max;
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
        n--;
    return (int)n;
}

/* Checks args against the op's table (and timeout_ms, which every op takes). */
static int check_args(cmd *c, const opspec *o)
{
    const cJSON *a;
    cJSON_ArrayForEach(a, c->args)
    {
        if (!strcmp(a->string, "timeout_ms")) {
            if (!is_int(a) || a->valuedouble < 1 || a->valuedouble > MAX_TIMEOUT_MS)
                return fail(c, RG_EBADREQ, "args.timeout_ms must be an integer from 1 to %d",
                            MAX_TIMEOUT_MS);
            continue;
        }
        const argspec *sp = NULL;
        for (int i = 0; i < 10 && o->args[i].name; i++)
            if (!strcmp(o->args[i].name, a->string))
                sp = &o->args[i];
        if (!sp)
            return fail(c, RG_EBADREQ, "%s takes no argument \"%.*s\"", o->name,
                        quote_len(a->string, 64), a->string);
        if (!type_ok(a, sp->type))
            return fail(c, RG_EBADREQ, "args.%s must be %s", sp->name, type_name(sp->type));
    }
    for (int i = 0; i < 10 && o->args[i].name; i++)
        if ((o->args[i].type & A_REQ) &&
            !cJSON_GetObjectItemCaseSensitive(c->args, o->args[i].name))
            return fail(c, RG_EBADREQ, "%s needs args.%s", o->name, o->args[i].name);
    return 0;
}

static const char *arg_str(const cmd *c, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->args, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int arg_int(const cmd *c, const char *k, int def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->args, k);
    if (!cJSON_IsNumber(v))
        return def;
    double d = v->valuedouble;
    return d > 1e9 ? 1000000000 : d < -1e9 ? -1000000000 : (int)d;
}

static int arg_bool(const cmd *c, const char *k)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c->args, k));
}

static int has_arg(const cmd *c, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(c->args, k) != NULL;
}

/* ---- session ops ---- */

/* The tenant's URL policy on a navigation target, before the browser sees it. */
static int check_url(cmd *c, const char *url)
{
    char why[256] = "";
    int rc = sess_check_url(c->g->sessions, c->who->tenant, url, why, sizeof why);
    if (rc == RG_EBLOCKEDURL)
        return fail(c, rc, "the URL is refused by the tenant's policy: %s", why);
    if (rc < 0)
        return fail(c, rc, "%s", why[0] ? why : "the URL cannot be opened");
    return 0;
}

static int op_create(cmd *c)
{
    sess_options o = {0};
    const cJSON *vp = cJSON_GetObjectItemCaseSensitive(c->args, "viewport");
    if (vp) {
        const cJSON *e;
        cJSON_ArrayForEach(e, vp)
        {
            if (strcmp(e->string, "width") && strcmp(e->string, "height"))
                return fail(c, RG_EBADREQ, "args.viewport takes width and height only");
            if (!is_int(e) || e->valuedouble < 100 || e->valuedouble > 8192)
                return fail(c, RG_EBADREQ, "args.viewport.%s must be an integer from 100 to 8192",
                            e->string);
        }
        o.width = arg_int(&(cmd){.args = vp}, "width", 0);
        o.height = arg_int(&(cmd){.args = vp}, "height", 0);
    }
    o.user_agent = arg_str(c, "user_agent") ? arg_str(c, "user_agent") : c->who->user_agent;
    o.locale = arg_str(c, "locale") ? arg_str(c, "locale") : c->who->locale;
    /* The quota is reserved in Redis by sess_create before it does anything
       else (one script that counts and adds together, so a burst cannot
       overshoot it), and given back when the create fails. */
    if (c->who->max_sessions <= 0)
        return fail(c, RG_EQUOTA, "the tenant's quota is 0 sessions");
    o.quota = c->who->max_sessions;
    o.timezone = arg_str(c, "timezone");
    const char *url = arg_str(c, "url");
    if (url && check_url(c, url) < 0)
        return c->rc;
    sess *s;
    int rc = sess_create(c->g->sessions, c->who->tenant, &o, c->timeout_ms, &s, c->err,
                         sizeof c->err);
    if (rc < 0) {
        if (rc == RG_EPOOL)
            c->retry_after_ms = RG_POOL_RETRY_AFTER_MS;
        return c->rc = rc;
    }
    c->s = s;
    c->full = 1;
    if (url) {
        sess_nav nav;
        rc = sess_navigate(s, url, "load", c->timeout_ms > 5000 ? c->timeout_ms : NAV_TIMEOUT_MS,
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
    return 0;
}

static int op_info(cmd *c)
{
    sess_wait_turn(c->g->sessions, c->who->tenant, c->sid, c->timeout_ms);
    sess_info in;
    int rc = sess_get_info(c->g->sessions, c->who->tenant, c->sid, &in);
    if (rc == RG_ENOTFOUND)
        return fail(c, rc, "no session %s", c->sid);
    if (rc < 0)
        return fail(c, rc, "Redis is unavailable; try again");
    c->result = cJSON_CreateObject();
    cJSON_AddStringToObject(c->result, "session", c->sid);
    cJSON_AddStringToObject(c->result, "state", in.state);
    cJSON_AddStringToObject(c->result, "url", in.url);
    cJSON_AddStringToObject(c->result, "title", in.title);
    cJSON_AddNumberToObject(c->result, "created_ms", (double)in.created_ms);
    cJSON_AddNumberToObject(c->result, "last_used_ms", (double)in.last_used_ms);
    cJSON_AddStringToObject(c->result, "worker", in.worker);
    cJSON *vp = cJSON_AddObjectToObject(c->result, "viewport");
    cJSON_AddNumberToObject(vp, "width", in.width);
    cJSON_AddNumberToObject(vp, "height", in.height);
    sess_info_free(&in);
    return 0;
}

static int op_park(cmd *c)
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

/* The restore itself happened when the session was opened (see run_session). */
static int op_restore(cmd *c)
{
    (void)c;
    return 0;
}

static int op_close(cmd *c)
{
    int rc = sess_close(c->s);
    if (rc < 0)
        return fail(c, rc, "Redis is unavailable; nothing was closed");
    c->result = cJSON_CreateObject();
    cJSON_AddBoolToObject(c->result, "closed", 1);
    return 0;
}

static void nav_result(cmd *c, const sess_nav *nav, int with_status)
{
    c->result = cJSON_CreateObject();
    cJSON_AddStringToObject(c->result, "url", nav->url);
    if (with_status)
        cJSON_AddNumberToObject(c->result, "status", nav->status);
    cJSON_AddStringToObject(c->result, "title", nav->title);
}

static int op_navigate(cmd *c)
{
    if (check_url(c, arg_str(c, "url")) < 0)
        return c->rc;
    sess_nav nav;
    int rc = sess_navigate(c->s, arg_str(c, "url"), arg_str(c, "wait"), c->timeout_ms, &nav,
                           c->err, sizeof c->err);
    if (rc < 0)
        return c->rc = rc;
    nav_result(c, &nav, 1);
    sess_nav_free(&nav);
    c->full = 1;
    return 0;
}

static int op_history(cmd *c)
{
    int delta = !strcmp(c->op, "back") ? -1 : !strcmp(c->op, "forward") ? 1 : 0;
    sess_nav nav;
    int rc = sess_history(c->s, delta, arg_str(c, "wait"), c->timeout_ms, &nav, c->err,
                          sizeof c->err);
    if (rc < 0)
        return c->rc = rc;
    nav_result(c, &nav, 0);
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
static int scope_css(cmd *c, const char *scope, char **css)
{
    *css = NULL;
    if (!strncmp(scope, "css:", 4)) {
        *css = strdup(scope + 4);
        return *css ? 0 : RG_ENOMEM;
    }
    reg_action a = {.op = REG_OP_INSPECT, .target = scope, .timeout_ms = c->timeout_ms};
    reg_action_result r = {0};
    int rc = reg_act(sess_registry(c->s), sess_handle(c->s), &a, &r, c->err, sizeof c->err);
    if (rc == 0) {
        const cJSON *alt = cJSON_GetObjectItemCaseSensitive(r.value, "sel");
        const cJSON *last = cJSON_GetArrayItem(alt, cJSON_GetArraySize(alt) - 1);
        const char *v = cJSON_IsString(last) ? last->valuestring : "";
        if (!strncmp(v, "css:", 4))
            v += 4;
        if (cJSON_IsString(last) && !(*css = strdup(v)))
            rc = RG_ENOMEM;
        else if (!cJSON_IsString(last))
            rc = fail(c, RG_EBADREQ, "the scope element has no CSS path");
    }
    reg_action_result_free(&r);
    return rc < 0 ? (c->rc = rc) : 0;
}

static int op_observe(cmd *c)
{
    const char *format = arg_str(c, "format");
    if (!format)
        format = "text";
    int text = !strcmp(format, "text") || !strcmp(format, "both");
    int elements = !strcmp(format, "elements") || !strcmp(format, "both");
    if (!text && !elements)
        return fail(c, RG_EBADREQ, "args.format must be text, elements or both");
    int max = arg_int(c, "max_elements", 0);
    if (has_arg(c, "max_elements") && max < 1)
        return fail(c, RG_EBADREQ, "args.max_elements must be at least 1");
    const char *mode = arg_str(c, "mode");
    if (mode && strcmp(mode, "full") && strcmp(mode, "interactive"))
        return fail(c, RG_EBADREQ, "args.mode must be full or interactive");
    int depth = arg_int(c, "depth", 0);
    if (has_arg(c, "depth") && depth < 1)
        return fail(c, RG_EBADREQ, "args.depth must be at least 1");
    char *css = NULL;
    const char *scope = arg_str(c, "scope");
    if (scope && scope_css(c, scope, &css) < 0)
        return c->rc;
    reg_observe_opts opts = {.scope_css = css,
                             .viewport_only = arg_bool(c, "viewport_only"),
                             .max_elements = (size_t)(max > 0 ? max : 0),
                             .diff = arg_bool(c, "diff"),
                             .mode = mode && !strcmp(mode, "interactive") ? REG_MODE_INTERACTIVE
                                                                           : REG_MODE_FULL,
                             .depth = depth,
                             .no_selectors = !elements,
                             .timeout_ms = c->timeout_ms};
    reg_observation o;
    int rc = reg_observe(sess_registry(c->s), sess_handle(c->s), &opts, &o);
    free(css);
    if (rc == RG_EBADREQ)
        return fail(c, rc, "the scope matches no element or is not a valid CSS selector");
    if (rc < 0)
        return fail(c, rc, "observe failed (%s)", rg_err_code(rc));
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

static int action_op(const char *op)
{
    static const struct {
        const char *name;
        int op;
    } map[] = {{"click", REG_OP_CLICK},   {"hover", REG_OP_HOVER},
               {"focus", REG_OP_FOCUS},   {"fill", REG_OP_FILL},
               {"type", REG_OP_TYPE},     {"press", REG_OP_PRESS},
               {"select", REG_OP_SELECT}, {"check", REG_OP_CHECK},
               {"uncheck", REG_OP_UNCHECK}, {"scroll", REG_OP_SCROLL},
               {"read", REG_OP_READ},     {"screenshot", REG_OP_SCREENSHOT},
               {"wait", REG_OP_WAIT},     {"inspect", REG_OP_INSPECT}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(map[i].name, op))
            return map[i].op;
    return 0;
}

static int modifiers_of(cmd *c, unsigned *out)
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
            return fail(c, RG_EBADREQ, "args.modifiers takes Alt, Control, Meta and Shift");
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
    static const char *map[][2] = {{"testid", "testid"}, {"id", "id"},
                                   {"aria_label", "aria"}, {"role", "role"},
                                   {"name", "name"}, {"tag", "tag"},
                                   {"parent_role", "prole"}, {"sibling_index", "sib"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        cJSON_AddItemToObject(id, map[i][0], copy_or(raw, map[i][1], cJSON_CreateNull()));
    const cJSON *sel = cJSON_GetObjectItemCaseSensitive(raw, "sel");
    const cJSON *first = cJSON_GetArrayItem(sel, 0);
    cJSON_AddItemToObject(o, "selector", cJSON_IsString(first) ? cJSON_Duplicate(first, 0)
                                                               : cJSON_CreateString(""));
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

static int op_action(cmd *c)
{
    reg_action a = {0};
    a.op = action_op(c->op);
    a.target = arg_str(c, "target");
    a.has_nth = has_arg(c, "nth");
    a.nth = arg_int(c, "nth", 0);
    a.button = arg_str(c, "button");
    a.click_count = arg_int(c, "click_count", 0);
    a.value = arg_str(c, "value");
    a.text = arg_str(c, "text");
    a.delay_ms = arg_int(c, "delay_ms", 0);
    a.key = arg_str(c, "key");
    a.dx = arg_int(c, "dx", 0);
    a.dy = arg_int(c, "dy", 0);
    a.to = arg_str(c, "to");
    a.what = arg_str(c, "what");
    a.format = arg_str(c, "format");
    a.quality = arg_int(c, "quality", 0);
    a.full_page = arg_bool(c, "full_page");
    a.state = arg_str(c, "state");
    a.url = arg_str(c, "url");
    a.timeout_ms = c->timeout_ms;
    if (a.op == REG_OP_WAIT)
        a.text = arg_str(c, "text");
    if (a.delay_ms < 0 || a.delay_ms > 1000)
        return fail(c, RG_EBADREQ, "args.delay_ms must be from 0 to 1000");
    if (has_arg(c, "click_count") && (a.click_count < 1 || a.click_count > 3))
        return fail(c, RG_EBADREQ, "args.click_count must be 1, 2 or 3");
    if (modifiers_of(c, &a.modifiers) < 0)
        return c->rc;
    const cJSON *vals = cJSON_GetObjectItemCaseSensitive(c->args, "values");
    const char *vbuf[64];
    if (vals) {
        int n = cJSON_GetArraySize(vals);
        if (n > 64)
            return fail(c, RG_EBADREQ, "args.values holds at most 64 values");
        const cJSON *e;
        cJSON_ArrayForEach(e, vals)
        {
            vbuf[a.n_values++] = e->valuestring;
        }
        a.values = vbuf;
    }
    reg_action_result r = {0};
    int rc = reg_act(sess_registry(c->s), sess_handle(c->s), &a, &r, c->err, sizeof c->err);
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

static int op_eval(cmd *c)
{
    if (!c->who->allow_eval)
        return fail(c, RG_EFORBIDDEN, "eval is not allowed for this tenant");
    const char *expr = arg_str(c, "expression");
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_printf(&q, "{\"returnByValue\":true,\"awaitPromise\":%s,\"expression\":",
                  arg_bool(c, "await") ? "true" : "false");
    rg_buf_json_str(&q, expr, strlen(expr));
    rg_buf_puts(&q, "}");
    reg_page_handle h = sess_handle(c->s);
    cdp_reply r;
    int rc = q.failed ? RG_ENOMEM
                      : cdp_call(h.conn, h.session, "Runtime.evaluate", q.data, c->timeout_ms, &r);
    rg_buf_destroy(&q);
    if (rc < 0)
        return fail(c, rc, "the evaluation failed (%s)", rg_err_code(rc));
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(r.result, "exceptionDetails");
    if (ex) {
        const cJSON *desc = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(ex, "exception"), "description");
        fail(c, RG_EBADREQ, "the expression threw: %.400s",
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

/* ---- act and subscribe ---- */

static cJSON *run_in_session(cmd *parent, const cJSON *step, int *ok);

static int op_act(cmd *c)
{
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(c->args, "steps");
    if (cJSON_GetArraySize(steps) > ACT_STEPS_MAX)
        return fail(c, RG_EBADREQ, "args.steps holds at most %d steps", ACT_STEPS_MAX);
    int stop = !has_arg(c, "stop_on_error") || arg_bool(c, "stop_on_error");
    c->result = cJSON_CreateObject();
    cJSON *results = cJSON_AddArrayToObject(c->result, "results");
    const cJSON *st;
    cJSON_ArrayForEach(st, steps)
    {
        int ok = 0;
        cJSON *reply = run_in_session(c, st, &ok);
        cJSON_AddItemToArray(results, reply);
        if (!ok && stop)
            break;
    }
    return 0;
}

static int op_subscribe(cmd *c)
{
    static const char *kinds[] = {"navigation", "console", "dialog", "snapshot", "session"};
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(c->args, "events");
    const cJSON *e;
    cJSON_ArrayForEach(e, ev)
    {
        int known = 0;
        for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
            known |= !strcmp(kinds[i], e->valuestring);
        if (!known)
            return fail(c, RG_EBADREQ,
                        "args.events takes navigation, console, dialog, snapshot and session");
    }
    /* The WebSocket side records the subscription from the reply. */
    c->result = cJSON_CreateObject();
    cJSON_AddItemToObject(c->result, "events", cJSON_Duplicate(ev, 1));
    return 0;
}

/* ---- replies ---- */

/*
 * Length of the UTF-8 character at p (NUL-terminated), or 0 when the bytes
 * there are not one whole character (cut short, a stray continuation byte).
 */
static size_t utf8_char_len(const unsigned char *p)
{
    unsigned char c = p[0];
    size_t n;
    if (c < 0x80)
        n = 1;
    else if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4;
    else
        return 0;
    if ((n == 3 && ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f))) ||
        (n == 4 && ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] > 0x8f))))
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

/*
 * A message as a reply may carry it. A sentence cut to fit its buffer (the
 * page's own error quoting a long selector, an exception's text) can end
 * inside a UTF-8 character, and a reply must be UTF-8 (wire.h) or strict
 * clients refuse all of it. Returns a copy without the bytes that do not
 * begin a whole character (caller frees), or NULL when message is whole.
 */
static char *utf8_whole(const char *message)
{
    const unsigned char *p = (const unsigned char *)message;
    size_t i = 0, o, n;
    while (p[i] && (n = utf8_char_len(p + i)) > 0)
        i += n;
    if (!p[i])
        return NULL;
    char *out = malloc(strlen(message) + 1);
    if (!out)
        abort();
    memcpy(out, message, i);
    for (o = i; p[i];) {
        if ((n = utf8_char_len(p + i)) == 0) {
            i++;
            continue;
        }
        memcpy(out + o, p + i, n);
        o += n;
        i += n;
    }
    out[o] = '\0';
    return out;
}

cJSON *gw_error_reply(int rc, const char *message, const cJSON *id, double ms, int retry_after_ms)
{
    char *whole = message ? utf8_whole(message) : NULL;
    if (whole)
        message = whole;
    cJSON *r = cJSON_CreateObject();
    cJSON_AddBoolToObject(r, "ok", 0);
    if (id)
        cJSON_AddItemToObject(r, "id", cJSON_Duplicate(id, 1));
    cJSON *e = cJSON_AddObjectToObject(r, "error");
    cJSON_AddStringToObject(e, "code", rg_err_code(rc));
    cJSON_AddStringToObject(e, "kind", rg_err_transient(rc) ? "transient" : "permanent");
    cJSON_AddStringToObject(e, "message", message && *message ? message : rg_err_code(rc));
    free(whole);
    if (retry_after_ms > 0)
        cJSON_AddNumberToObject(e, "retry_after_ms", retry_after_ms);
    wire_add_float(r, "ms", ms);
    return r;
}

static cJSON *reply_of(cmd *c, const cJSON *id, double ms)
{
    if (c->rc < 0) {
        cJSON *r = gw_error_reply(c->rc, c->err, id, ms, c->retry_after_ms);
        if (c->details) {
            cJSON_AddItemToObject(cJSON_GetObjectItemCaseSensitive(r, "error"), "details",
                                  c->details);
            c->details = NULL;
        }
        return r;
    }
    cJSON *r = cJSON_CreateObject();
    cJSON_AddBoolToObject(r, "ok", 1);
    if (id)
        cJSON_AddItemToObject(r, "id", cJSON_Duplicate(id, 1));
    cJSON_AddItemToObject(r, "result", c->result ? c->result : cJSON_CreateObject());
    c->result = NULL;
    wire_add_float(r, "ms", ms);
    return r;
}

/* ---- checking a command map ---- */

static int check_map(cmd *c, const cJSON *m, int need_op, const cJSON **id, const char **idem)
{
    *id = NULL;
    *idem = NULL;
    if (!cJSON_IsObject(m))
        return fail(c, RG_EBADREQ, "the command must be a map");
    const cJSON *e;
    cJSON_ArrayForEach(e, m)
    {
        const char *k = e->string;
        if (!strcmp(k, "op")) {
            if (!cJSON_IsString(e) || wire_is_bin(e))
                return fail(c, RG_EBADREQ, "op must be a string");
        } else if (!strcmp(k, "args")) {
            if (!cJSON_IsObject(e))
                return fail(c, RG_EBADREQ, "args must be a map");
        } else if (!strcmp(k, "id")) {
            if (!(cJSON_IsString(e) && !wire_is_bin(e)) && !(is_int(e) && e->valuedouble >= 0))
                return fail(c, RG_EBADREQ, "id must be an unsigned integer or a string");
            *id = e;
        } else if (!strcmp(k, "idempotency_key")) {
            if (!cJSON_IsString(e) || !*e->valuestring || strlen(e->valuestring) > 64)
                return fail(c, RG_EBADREQ, "idempotency_key must be a string of 1 to 64 bytes");
            *idem = e->valuestring;
        } else {
            return fail(c, RG_EBADREQ, "unknown key \"%.*s\" in the command map", quote_len(k, 64),
                        k);
        }
    }
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(m, "op");
    if (!op && need_op)
        return fail(c, RG_EBADREQ, "the command map needs an op");
    return 0;
}

/* Prepares c for the map m: op, args, timeout. */
static const opspec *prepare(cmd *c, const cJSON *m, const char *default_op)
{
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(m, "op");
    c->op = cJSON_IsString(op) ? op->valuestring : default_op;
    c->op_index = gw_op_index(c->op);
    if (c->op_index < 0) {
        const char *op_text = c->op ? c->op : "";
        fail(c, RG_EBADREQ, "unknown op \"%.*s\"", quote_len(op_text, 64), op_text);
        return NULL;
    }
    const opspec *o = &ops[c->op_index];
    static cJSON empty = {.type = cJSON_Object};
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(m, "args");
    c->args = args ? args : &empty;
    if (check_args(c, o) < 0)
        return NULL;
    int def = (o->flags & OP_NAV) || !strcmp(c->op, "session.create") ? NAV_TIMEOUT_MS
                                                                       : DEFAULT_TIMEOUT_MS;
    c->timeout_ms = arg_int(c, "timeout_ms", def);
    return o;
}

/*
 * The checks of gw_command that need neither Redis nor a session: the map,
 * the op and its args, the route (c->sid) and the caller's rights. 0, or
 * c->rc with c->err set. *o is the op's table entry once the op is known
 * (also when a later check fails: the command counts for that op); *id and
 * *idem as check_map leaves them (the reply echoes the id).
 */
static int check_command(cmd *c, const cJSON *m, const opspec **o, const cJSON **id,
                         const char **idem)
{
    *o = NULL;
    if (check_map(c, m, c->sid != NULL, id, idem) < 0)
        return c->rc;
    if (c->who->websocket && !*id)
        return fail(c, RG_EBADREQ, "commands on the WebSocket need an id");
    if (!(*o = prepare(c, m, c->sid ? NULL : "session.create")))
        return c->rc;
    if (!c->sid && strcmp(c->op, "session.create"))
        return fail(c, RG_EBADREQ,
                    "POST /v1/sessions takes session.create; send %s to /v1/sessions/{id}", c->op);
    if (c->sid && ((*o)->flags & OP_NO_SESSION))
        return fail(c, RG_EBADREQ, "session.create goes to POST /v1/sessions");
    if (((*o)->flags & OP_WS_ONLY) && !c->who->websocket)
        return fail(c, RG_EBADREQ, "%s works on the WebSocket only", c->op);
    if (!strcmp(c->op, "eval") && !c->who->allow_eval)
        return fail(c, RG_EFORBIDDEN, "eval is not allowed for this tenant");
    return 0;
}

int gw_check_command(const gw_caller *who, const char *sid, const cJSON *m, char *err,
                     size_t errlen)
{
    cmd c = {.who = who, .sid = sid};
    const opspec *o;
    const cJSON *id;
    const char *idem;
    check_command(&c, m, &o, &id, &idem);
    if (err && errlen)
        rg_strlcpy(err, c.err, errlen);
    return c.rc;
}

/* One act step on the parent's held session: its reply map. */
static cJSON *run_in_session(cmd *parent, const cJSON *step, int *ok)
{
    int64_t t0 = rg_now_us();
    cmd c = {.g = parent->g, .who = parent->who, .sid = parent->sid, .s = parent->s, .nested = 1};
    const cJSON *id;
    const char *idem;
    const opspec *o = NULL;
    if (check_map(&c, step, 1, &id, &idem) == 0) {
        if (cJSON_GetObjectItemCaseSensitive(step, "id") ||
            cJSON_GetObjectItemCaseSensitive(step, "idempotency_key"))
            fail(&c, RG_EBADREQ, "act steps take op and args only");
        else if ((o = prepare(&c, step, NULL)) && (o->flags & OP_NOT_IN_ACT))
            fail(&c, RG_EBADREQ, "%s cannot be an act step", c.op);
        else if (o) {
            sess_note_scroll(c.s, 0, 0, 0); /* a step that does not say may scroll (eval) */
            o->run(&c);
        }
    }
    if (c.rc == 0 && o && (o->flags & OP_CHANGES))
        parent->changed = 1;
    parent->full |= c.full;
    double ms = (double)(rg_now_us() - t0) / 1000.0;
    if (o)
        gw_metrics_count(parent->g, c.op_index, c.rc, ms);
    *ok = c.rc == 0;
    cJSON *r = reply_of(&c, NULL, ms);
    cJSON_Delete(c.result);
    cJSON_Delete(c.details);
    return r;
}

/* ---- idempotency ---- */

static void idem_key(char *out, size_t len, const gw_caller *who, const char *sid, const char *k)
{
    if (sid)
        snprintf(out, len, "rg:{t:%s:s:%s}:idem:%s", who->tenant, sid, k);
    else
        snprintf(out, len, "rg:t:%s:idem:%s", who->tenant, k);
}

static cJSON *idem_decode(const redisReply *rep, int *status);

/*
 * Reserves key for this command (SET NX of a marker), or gets the stored
 * reply of the first command with it. 0: reserved, run it; 1: *out holds
 * the first reply; RG_ECONFLICT: the first is still running; RG_EUNAVAIL.
 */
static int idem_begin(gw *g, const char *key, int timeout_ms, cJSON **out, int *status)
{
    *out = NULL;
    char ms[24];
    snprintf(ms, sizeof ms, "%d", timeout_ms + 30000);
    redisContext *c = rg_redis_take(g->redis);
    if (!c)
        return RG_EUNAVAIL;
    redisReply *rep = redisCommand(c, "SET %s running NX PX %s GET", key, ms);
    rg_redis_give(g->redis, c, rep == NULL);
    int rc;
    if (!rep || rep->type == REDIS_REPLY_ERROR)
        rc = RG_EUNAVAIL;
    else if (rep->type == REDIS_REPLY_NIL)
        rc = 0;
    else if (rep->type == REDIS_REPLY_STRING && !strcmp(rep->str, "running"))
        rc = RG_ECONFLICT;
    else
        rc = (*out = idem_decode(rep, status)) ? 1 : RG_EINTERNAL;
    freeReplyObject(rep);
    return rc;
}

/* Lets go of a reservation (the command failed in a way a retry may fix). */
static void idem_cancel(gw *g, const char *key)
{
    redisContext *c = rg_redis_take(g->redis);
    redisReply *rep = c ? redisCommand(c, "DEL %s", key) : NULL;
    rg_redis_give(g->redis, c, rep == NULL);
    freeReplyObject(rep);
}

static cJSON *idem_decode(const redisReply *rep, int *status)
{
    cJSON *out = NULL;
    if (rep && rep->type == REDIS_REPLY_STRING && rep->len > 4) {
        *status = (int)strtol(rep->str, NULL, 10);
        char err[64];
        if (wire_mp_decode(rep->str + 4, rep->len - 4, &out, err, sizeof err) < 0)
            out = NULL;
    }
    return out;
}

static void idem_put(gw *g, const char *key, const cJSON *reply, int status)
{
    rg_buf b;
    rg_buf_init(&b);
    rg_buf_printf(&b, "%03d ", status);
    if (wire_mp_encode(reply, &b) < 0 || b.failed) {
        rg_buf_destroy(&b);
        return;
    }
    char ms[24];
    snprintf(ms, sizeof ms, "%lld", (long long)g->cfg.idempotency_ms);
    const char *argv[] = {"SET", key, b.data, "PX", ms, "XX"};
    size_t argl[] = {3, strlen(key), b.len, 2, strlen(ms), 2};
    redisContext *c = rg_redis_take(g->redis);
    redisReply *rep = c ? redisCommandArgv(c, 6, argv, argl) : NULL;
    rg_redis_give(g->redis, c, rep == NULL);
    freeReplyObject(rep);
    rg_buf_destroy(&b);
}

/* ---- running one command ---- */

static int open_for(cmd *c, const opspec *o, sess_restore_info *ri)
{
    int rc;
    if (!strcmp(o->name, "session.close"))
        rc = sess_claim(c->g->sessions, c->who->tenant, c->sid, c->timeout_ms > 10000 ? c->timeout_ms : 10000,
                        &c->s, c->err, sizeof c->err);
    else
        rc = sess_open(c->g->sessions, c->who->tenant, c->sid,
                       c->timeout_ms > 10000 ? c->timeout_ms : 10000, &c->s, ri, c->err,
                       sizeof c->err);
    if (rc == RG_EPOOL)
        c->retry_after_ms = RG_POOL_RETRY_AFTER_MS;
    if (rc == RG_ECONFLICT || rc == RG_EUNAVAIL)
        c->retry_after_ms = 1000;
    return rc < 0 ? (c->rc = rc) : 0;
}

static void session_event(cmd *c, const sess_restore_info *ri)
{
    if (!gw_ws_wants(c->g, c->who->tenant, c->sid, "session"))
        return;
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "state", "restored");
    cJSON_AddStringToObject(d, "worker", sess_worker(c->g->sessions));
    cJSON_AddNumberToObject(d, "refs_kept", (double)ri->refs_kept);
    cJSON_AddNumberToObject(d, "refs_lost", (double)ri->refs_lost);
    gw_ws_event(c->g, c->who->tenant, c->sid, "session", d);
}

/* After an action that may have changed the page: the diff to snapshot subscribers. */
static void snapshot_event(gw *g, sess *s, const char *tid, const char *sid, const char *op)
{
    if (!s || sess_lost(s) || !gw_ws_wants(g, tid, sid, "snapshot"))
        return;
    reg_observe_opts opts = {.diff = 1, .no_selectors = 1, .timeout_ms = 5000};
    reg_observation o;
    if (reg_observe(sess_registry(s), sess_handle(s), &opts, &o) < 0)
        return;
    if (o.text && *o.text) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "op", op);
        cJSON_AddNumberToObject(d, "snapshot_id", (double)o.snapshot_id);
        cJSON_AddStringToObject(d, "url", o.url);
        cJSON_AddStringToObject(d, "diff", o.text);
        gw_ws_event(g, tid, sid, "snapshot", d);
    }
    reg_observation_free(&o);
}

void gw_after_run(gw *g, gw_after *after)
{
    if (!after || !after->s)
        return;
    if (after->snapshot)
        snapshot_event(g, after->s, after->tenant, after->sid, after->op);
    sess_done(after->s, after->full);
    after->s = NULL;
}

cJSON *gw_command(gw *g, const gw_caller *who, const char *sid, const cJSON *m, int *status,
                  int *retry_after_ms, gw_after *after)
{
    if (after)
        after->s = NULL;
    int64_t t0 = rg_now_us();
    cmd c = {.g = g, .who = who, .sid = sid};
    const cJSON *id = NULL;
    const char *idem = NULL;
    const opspec *o = NULL;
    cJSON *reply = NULL;
    char ikey[256] = "";
    sess_restore_info ri = {0};
    if (check_command(&c, m, &o, &id, &idem) < 0)
        goto out;
    if (idem) {
        idem_key(ikey, sizeof ikey, who, sid, idem);
        int st = 200;
        cJSON *prev = NULL;
        int ir = idem_begin(g, ikey, c.timeout_ms, &prev, &st);
        if (ir == 1) {
            /* The first reply, with this request's id. */
            cJSON_DeleteItemFromObjectCaseSensitive(prev, "id");
            if (id)
                cJSON_AddItemToObject(prev, "id", cJSON_Duplicate(id, 1));
            *status = st;
            reply = prev;
            goto done;
        }
        if (ir < 0) {
            ikey[0] = '\0';
            fail(&c, ir == RG_ECONFLICT ? RG_ECONFLICT : RG_EUNAVAIL,
                 ir == RG_ECONFLICT ? "a command with this idempotency_key is still running"
                                    : "Redis is unavailable; nothing was done");
            c.retry_after_ms = 1000;
            goto out;
        }
    }
    if (sid && !strcmp(c.op, "session.park")) {
        /* Parking a parked session changes nothing (and restores nothing). */
        sess_wait_turn(g->sessions, who->tenant, sid, c.timeout_ms);
        sess_info in;
        if (sess_get_info(g->sessions, who->tenant, sid, &in) == 0) {
            int parked = !strcmp(in.state, "parked");
            size_t bytes = in.parked_bytes;
            sess_info_free(&in);
            if (parked) {
                c.result = cJSON_CreateObject();
                cJSON_AddStringToObject(c.result, "state", "parked");
                cJSON_AddNumberToObject(c.result, "bytes", (double)bytes);
                goto out;
            }
        }
    }
    if (sid && o->run != op_info && strcmp(c.op, "subscribe")) {
        if (open_for(&c, o, &ri) < 0)
            goto out;
        if (ri.restored)
            session_event(&c, &ri);
    }
    o->run(&c);
    if (!strcmp(c.op, "session.restore") && c.rc == 0) {
        c.result = cJSON_CreateObject();
        cJSON_AddStringToObject(c.result, "state", "live");
        cJSON_AddStringToObject(c.result, "worker", sess_worker(g->sessions));
        cJSON_AddBoolToObject(c.result, "restored", ri.restored);
        cJSON_AddNumberToObject(c.result, "refs_kept", (double)ri.refs_kept);
        cJSON_AddNumberToObject(c.result, "refs_lost", (double)ri.refs_lost);
    }
    if (c.rc == 0 && o && (o->flags & OP_CHANGES))
        c.changed = 1;
    /* Reading ops leave nothing to checkpoint (act steps report through c.changed). */
    if (!c.full && !c.changed && !(o->flags & (OP_MOVES | OP_NAV | OP_CHANGES)))
        c.full = -1;
    if (c.rc < 0 && c.s && sess_lost(c.s))
        c.rc = RG_ECRASHED; /* whatever the call saw, the cause is the dead renderer */
    if (c.rc == RG_ECRASHED)
        snprintf(c.err, sizeof c.err, "the session's browser died; the next command restores "
                                      "the session from its last checkpoint");
    else if (c.rc == RG_ETIMEOUT && c.s && sess_interrupt(c.s))
        /* A page stuck in a script was stopped; one that still did not
           answer was ended. */
        snprintf(c.err + strlen(c.err), sizeof c.err - strlen(c.err),
                 "; the page stopped answering and was ended: the next command restores "
                 "the session from its last checkpoint");
    if (c.s && after) {
        after->s = c.s;
        after->full = c.full;
        after->snapshot = c.changed && c.rc == 0;
        snprintf(after->tenant, sizeof after->tenant, "%s", who->tenant);
        snprintf(after->sid, sizeof after->sid, "%s", sid);
        snprintf(after->op, sizeof after->op, "%s", c.op);
    } else if (c.s) {
        if (c.changed && c.rc == 0)
            snapshot_event(g, c.s, who->tenant, sid, c.op);
        sess_done(c.s, c.full);
    }
    c.s = NULL;
out:
    if (c.rc == RG_ECRASHED)
        c.retry_after_ms = 0;
    *status = c.rc < 0 ? rg_err_http(c.rc) : 200;
    reply = reply_of(&c, id, (double)(rg_now_us() - t0) / 1000.0);
    /* Kept: what worked, and what will fail the same way again. A transient
       failure lets the key go, so a retry runs. */
    if (ikey[0] && (c.rc == 0 || !rg_err_transient(c.rc)))
        idem_put(g, ikey, reply, *status);
    else if (ikey[0])
        idem_cancel(g, ikey);
done:
    if (o)
        gw_metrics_count(g, c.op_index, c.rc, (double)(rg_now_us() - t0) / 1000.0);
    *retry_after_ms = c.retry_after_ms;
    cJSON_Delete(c.result);
    cJSON_Delete(c.details);
    return reply;
}
