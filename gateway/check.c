/*
 * check.c - the checks of a command that need neither Redis nor a session:
 * the command map's keys, the op (wire/op.h's table), its args against the
 * op's argument list, the route and the caller's rights. Pure functions of
 * their input: any thread.
 */
#define _GNU_SOURCE
#include "gateway/gw_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


int gw_fail(gw_cmd *c, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    c->rc = rc;
    return rc;
}

static const char *type_name(int t)
{
    switch (t & 0xff) {
    case WIRE_STR:
        return "a string";
    case WIRE_INT:
        return "an integer";
    case WIRE_BOOL:
        return "a boolean";
    case WIRE_MAP:
        return "a map";
    case WIRE_STRS:
        return "an array of strings";
    default:
        return "an array of maps";
    }
}

int gw_is_int(const cJSON *v)
{
    return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
           fabs(v->valuedouble) < 9007199254740992.0;
}

static int type_ok(const cJSON *v, int t)
{
    switch (t & 0xff) {
    case WIRE_STR:
        return cJSON_IsString(v) && !wire_is_bin(v);
    case WIRE_INT:
        return gw_is_int(v);
    case WIRE_BOOL:
        return cJSON_IsBool(v);
    case WIRE_MAP:
        return cJSON_IsObject(v);
    case WIRE_STRS:
    case WIRE_MAPS: {
        if (!cJSON_IsArray(v))
            return 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, v)
        {
            /* Each element is held to WIRE_STR's rule: str, not bin. */
            if ((t & 0xff) == WIRE_STRS ? !type_ok(e, WIRE_STR) : !cJSON_IsObject(e))
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
    return (int)rg_utf8_prefix(s, (size_t)max);
}

/* Checks args against the op's table (and timeout_ms, which every op takes,
   and tab, dialog and prompt_text, which every page op takes). */
static int check_args(gw_cmd *c, const wire_op *o)
{
    const cJSON *a;
    cJSON_ArrayForEach(a, c->args)
    {
        if (!strcmp(a->string, "timeout_ms")) {
            if (!gw_is_int(a) || a->valuedouble < 1 || a->valuedouble > GW_MAX_TIMEOUT_MS)
                return gw_fail(c, RG_EBADREQ, "args.timeout_ms must be an integer from 1 to %d",
                               GW_MAX_TIMEOUT_MS);
            continue;
        }
        const wire_arg *sp = wire_op_arg(c->id, a->string);
        if (!sp && (o->flags & WIRE_F_PAGE) && !strcmp(a->string, "tab")) {
            /* The tab a page command acts on (every such op takes it). */
            if (!type_ok(a, WIRE_STR) || !*a->valuestring)
                return gw_fail(c, RG_EBADREQ, "args.tab must be a tab id such as \"t2\"");
            continue;
        }
        if (!sp && (o->flags & WIRE_F_PAGE) && !strcmp(a->string, "dialog")) {
            /* How the dialogs the command makes the page open are answered. */
            if (!type_ok(a, WIRE_STR) ||
                (strcmp(a->valuestring, "accept") && strcmp(a->valuestring, "dismiss")))
                return gw_fail(c, RG_EBADREQ, "args.dialog must be accept or dismiss");
            continue;
        }
        if (!sp && (o->flags & WIRE_F_PAGE) && !strcmp(a->string, "prompt_text")) {
            if (!type_ok(a, WIRE_STR) || strlen(a->valuestring) > SESS_PROMPT_TEXT_MAX)
                return gw_fail(c, RG_EBADREQ, "args.prompt_text must be a string of at most %d bytes",
                               SESS_PROMPT_TEXT_MAX);
            continue;
        }
        if (!sp)
            return gw_fail(c, RG_EBADREQ, "%s takes no argument \"%.*s\"", o->name,
                           quote_len(a->string, 64), a->string);
        if (!type_ok(a, sp->type))
            return gw_fail(c, RG_EBADREQ, "args.%s must be %s", sp->name, type_name(sp->type));
    }
    for (int i = 0; i < WIRE_OP_ARGS_MAX && o->args[i].name; i++)
        if ((o->args[i].type & WIRE_REQ) &&
            !cJSON_GetObjectItemCaseSensitive(c->args, o->args[i].name))
            return gw_fail(c, RG_EBADREQ, "%s needs args.%s", o->name, o->args[i].name);
    return 0;
}

const char *gw_arg_str(const gw_cmd *c, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->args, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int gw_arg_int(const gw_cmd *c, const char *k, int def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->args, k);
    if (!cJSON_IsNumber(v))
        return def;
    double d = v->valuedouble;
    return d > 1e9 ? 1000000000 : d < -1e9 ? -1000000000 : (int)d;
}

int gw_arg_bool(const gw_cmd *c, const char *k)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c->args, k));
}

int gw_has_arg(const gw_cmd *c, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(c->args, k) != NULL;
}

/* ---- checking a command map ---- */

int gw_check_map(gw_cmd *c, const cJSON *m, int need_op, const cJSON **id, const char **idem)
{
    *id = NULL;
    *idem = NULL;
    if (!cJSON_IsObject(m))
        return gw_fail(c, RG_EBADREQ, "the command must be a map");
    /* A valid id first, wherever it stands in the map, so that the reply to any other
       error in it carries the id (a client matches replies to commands by it). */
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(m, "id");
    if ((cJSON_IsString(e) && !wire_is_bin(e)) || (gw_is_int(e) && e->valuedouble >= 0))
        *id = e;
    cJSON_ArrayForEach(e, m)
    {
        const char *k = e->string;
        if (!strcmp(k, "op")) {
            if (!cJSON_IsString(e) || wire_is_bin(e))
                return gw_fail(c, RG_EBADREQ, "op must be a string");
        } else if (!strcmp(k, "args")) {
            if (!cJSON_IsObject(e))
                return gw_fail(c, RG_EBADREQ, "args must be a map");
        } else if (!strcmp(k, "id")) {
            if (!(cJSON_IsString(e) && !wire_is_bin(e)) && !(gw_is_int(e) && e->valuedouble >= 0))
                return gw_fail(c, RG_EBADREQ, "id must be an unsigned integer or a string");
            *id = e;
        } else if (!strcmp(k, "idempotency_key")) {
            if (!cJSON_IsString(e) || !*e->valuestring || strlen(e->valuestring) > 64)
                return gw_fail(c, RG_EBADREQ, "idempotency_key must be a string of 1 to 64 bytes");
            *idem = e->valuestring;
        } else {
            return gw_fail(c, RG_EBADREQ, "unknown key \"%.*s\" in the command map",
                           quote_len(k, 64), k);
        }
    }
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(m, "op");
    if (!op && need_op)
        return gw_fail(c, RG_EBADREQ, "the command map needs an op");
    return 0;
}

/* Prepares c for the map m: op, args, timeout. */
const wire_op *gw_prepare(gw_cmd *c, const cJSON *m, const char *default_op)
{
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(m, "op");
    c->op = cJSON_IsString(op) ? op->valuestring : default_op;
    c->id = wire_op_find(c->op);
    if (c->id < 0) {
        const char *op_text = c->op ? c->op : "";
        gw_fail(c, RG_EBADREQ, "unknown op \"%.*s\"", quote_len(op_text, 64), op_text);
        return NULL;
    }
    const wire_op *o = &wire_ops[c->id];
    static cJSON empty = {.type = cJSON_Object};
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(m, "args");
    c->args = args ? args : &empty;
    if (check_args(c, o) < 0)
        return NULL;
    /* printing lays out the whole document, as a navigation loads it */
    int def = (o->flags & WIRE_F_NAV) || c->id == WIRE_OP_PDF ? GW_NAV_TIMEOUT_MS
                                                                : GW_DEFAULT_TIMEOUT_MS;
    c->timeout_ms = gw_arg_int(c, "timeout_ms", def);
    return o;
}

/*
 * The checks of gw_command that need neither Redis nor a session: the map,
 * the op and its args, the route (c->sid) and the caller's rights. 0, or
 * c->rc with c->err set. *o is the op's table entry once the op is known
 * (also when a later check fails: the command counts for that op); *id and
 * *idem as check_map leaves them (the reply echoes the id).
 */
int gw_check_cmd(gw_cmd *c, const cJSON *m, const wire_op **o, const cJSON **id, const char **idem)
{
    *o = NULL;
    if (gw_check_map(c, m, c->sid != NULL, id, idem) < 0)
        return c->rc;
    if (c->who->websocket && !*id)
        return gw_fail(c, RG_EBADREQ, "commands on the WebSocket need an id");
    /* POST /v1/sessions takes the op that creates a session, and only it. */
    const char *create = wire_op_name(WIRE_OP_SESSION_CREATE);
    if (!(*o = gw_prepare(c, m, c->sid ? NULL : create)))
        return c->rc;
    if (!c->sid && !((*o)->flags & WIRE_F_CREATE))
        return gw_fail(c, RG_EBADREQ, "POST /v1/sessions takes %s; send %s to /v1/sessions/{id}",
                       create, c->op);
    if (c->sid && ((*o)->flags & WIRE_F_CREATE))
        return gw_fail(c, RG_EBADREQ, "%s goes to POST /v1/sessions", c->op);
    if (((*o)->flags & WIRE_F_WS_ONLY) && !c->who->websocket)
        return gw_fail(c, RG_EBADREQ, "%s works on the WebSocket only", c->op);
    if (c->who->viewer && !((*o)->flags & WIRE_F_VIEW))
        return gw_fail(c, RG_EFORBIDDEN, "a view token opens the live view only: %s needs an API key",
                       c->op);
    if (((*o)->flags & WIRE_F_EVAL) && !c->who->allow_eval)
        return gw_fail(c, RG_EFORBIDDEN, "%s is not allowed for this tenant", c->op);
    return 0;
}

int gw_check_command(const gw_caller *who, const char *sid, const cJSON *m, char *err,
                     size_t errlen)
{
    gw_cmd c = {.who = who, .sid = sid, .id = -1};
    const wire_op *o;
    const cJSON *id;
    const char *idem;
    gw_check_cmd(&c, m, &o, &id, &idem);
    if (err && errlen)
        rg_strlcpy(err, c.err, errlen);
    return c.rc;
}
