/*
 * fuzz_wire.c - the checks that the request targets (fuzz_mp_command,
 * fuzz_json_command) share; see fuzz.h. The command rules come from
 * docs/protocol.md, not from wire/op.h's table, so that the two are compared.
 */
#define _GNU_SOURCE
#include "fuzz.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/rg.h"
#include "gateway/gateway.h"
#include "wire/op.h"
#include "wire/wire.h"

/* ---- the decoded tree ---------------------------------------------------- */

/* 1 when s is padded base64 of the standard alphabet. */
static int base64_ok(const char *s)
{
    size_t n = strlen(s), pad = 0;
    if (n % 4)
        return 0;
    while (pad < n && pad < 2 && s[n - 1 - pad] == '=')
        pad++;
    for (size_t i = 0; i < n - pad; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '+' || c == '/'))
            return 0;
    }
    return 1;
}

/* v's parents are `above` containers deep. */
static void check_tree(const cJSON *v, int above)
{
    int t = v->type & 0xff;
    int extra = v->type & ~0xff;

    FZ_CHECK(extra == 0 || (extra == WIRE_BIN && t == cJSON_String), "an item with type bits 0x%x",
             (unsigned)v->type);
    switch (t) {
    case cJSON_NULL:
    case cJSON_False:
    case cJSON_True:
        return;
    case cJSON_Number:
        FZ_CHECK(isfinite(v->valuedouble), "a number that is not finite");
        return;
    case cJSON_String:
        FZ_CHECK(v->valuestring, "a string item without a string");
        FZ_CHECK(fz_utf8_ok(v->valuestring, strlen(v->valuestring)), "a string that is not UTF-8");
        FZ_CHECK(!(extra & WIRE_BIN) || base64_ok(v->valuestring), "a WIRE_BIN item not base64");
        return;
    case cJSON_Array:
    case cJSON_Object:
        FZ_CHECK(above < WIRE_MAX_DEPTH, "containers nest deeper than %d", WIRE_MAX_DEPTH);
        for (const cJSON *ch = v->child; ch; ch = ch->next) {
            if (t == cJSON_Object) {
                FZ_CHECK(ch->string, "an object member without a key");
                FZ_CHECK(fz_utf8_ok(ch->string, strlen(ch->string)), "a key that is not UTF-8");
                for (const cJSON *o = v->child; o != ch; o = o->next)
                    FZ_CHECK(strcmp(o->string, ch->string) != 0, "the key \"%s\" twice",
                             ch->string);
            }
            check_tree(ch, above + 1);
        }
        return;
    default:
        FZ_CHECK(0, "an item of cJSON type %d", t);
    }
}

void fz_check_request_tree(const cJSON *v)
{
    FZ_CHECK(v, "a decoder succeeded without a tree");
    check_tree(v, 0);
}

int fz_same_tree(const cJSON *a, const cJSON *b, int bin_as_str)
{
    if (!a || !b)
        return a == b;
    int t = a->type & 0xff;
    if (t != (b->type & 0xff))
        return 0;
    if (!bin_as_str && ((a->type ^ b->type) & WIRE_BIN))
        return 0;
    switch (t) {
    case cJSON_Number:
        return a->valuedouble == b->valuedouble;
    case cJSON_String:
        return a->valuestring && b->valuestring && !strcmp(a->valuestring, b->valuestring);
    case cJSON_Array:
    case cJSON_Object: {
        const cJSON *x = a->child, *y = b->child;
        for (; x && y; x = x->next, y = y->next) {
            if (t == cJSON_Object && (!x->string || !y->string || strcmp(x->string, y->string)))
                return 0;
            if (!fz_same_tree(x, y, bin_as_str))
                return 0;
        }
        return !x && !y;
    }
    default:
        return 1;
    }
}

/* ---- round trips --------------------------------------------------------- */

void fz_round_trips(const cJSON *t)
{
    char err[256];
    rg_buf mp, mp2, js;
    cJSON *back = NULL;
    int rc;

    rg_buf_init(&mp);
    rg_buf_init(&mp2);
    rg_buf_init(&js);

    rc = wire_mp_encode(t, &mp);
    FZ_CHECK(rc == 0 && !mp.failed, "wire_mp_encode of a decoded tree: %d", rc);
    rc = wire_mp_decode(mp.data, mp.len, &back, err, sizeof err);
    FZ_CHECK(rc == 0, "msgpack we encoded does not decode: %s", err);
    FZ_CHECK(fz_same_tree(t, back, 0), "msgpack round trip changed the tree");
    rc = wire_mp_encode(back, &mp2);
    FZ_CHECK(rc == 0 && mp2.len == mp.len && !memcmp(mp.data, mp2.data, mp.len),
             "encoding the decoded tree again gave other bytes");
    cJSON_Delete(back);
    back = NULL;

    rc = wire_json_encode(t, &js);
    FZ_CHECK(rc == 0 && !js.failed, "wire_json_encode of a decoded tree: %d", rc);
    rc = wire_json_decode(js.data, js.len, &back, err, sizeof err);
    FZ_CHECK(rc == 0, "JSON we encoded does not decode: %s (%s)", err, js.data);
    FZ_CHECK(fz_same_tree(t, back, 1), "JSON round trip changed the tree: %s", js.data);
    cJSON_Delete(back);

    rg_buf_destroy(&mp);
    rg_buf_destroy(&mp2);
    rg_buf_destroy(&js);
}

/* ---- commands ------------------------------------------------------------ */

/*
 * The ops of docs/protocol.md and the args each takes (every op also takes
 * timeout_ms; ops that take a target also take nth), with their types:
 * s string, i integer, b boolean, m map, S array of strings, M array of maps.
 */
struct op_rule {
    const char *op;
    const char *args[12];
    const char *types;
};

static const struct op_rule op_rules[] = {
    {"session.create", {"viewport", "user_agent", "locale", "timezone", "url", "state"}, "mssssm"},
    {"session.info", {NULL}, ""},
    {"session.state", {NULL}, ""},
    {"cookies", {"urls", "name"}, "Ss"},
    {"cookies.set",
     {"name", "value", "url", "domain", "path", "expires", "http_only", "secure", "same_site"},
     "sssssibbs"},
    {"cookies.clear", {"name", "domain", "path"}, "sss"},
    {"storage", {"kind", "key"}, "ss"},
    {"storage.set", {"kind", "key", "value"}, "sss"},
    {"storage.clear", {"kind", "key"}, "ss"},
    {"session.park", {NULL}, ""},
    {"session.restore", {NULL}, ""},
    {"session.close", {NULL}, ""},
    {"navigate", {"url", "wait"}, "ss"},
    {"back", {"wait"}, "s"},
    {"forward", {"wait"}, "s"},
    {"reload", {"wait"}, "s"},
    {"observe",
     {"format", "diff", "scope", "max_elements", "viewport_only", "mode", "depth", "find", "regex",
      "context"},
     "sbsibsisbi"},
    {"click", {"target", "nth", "button", "click_count", "modifiers"}, "sisiS"},
    {"fill", {"target", "nth", "value"}, "sis"},
    {"type", {"target", "nth", "text", "delay_ms"}, "sisi"},
    {"press", {"target", "nth", "key"}, "sis"},
    {"select", {"target", "nth", "values"}, "siS"},
    {"check", {"target", "nth"}, "si"},
    {"uncheck", {"target", "nth"}, "si"},
    {"hover", {"target", "nth"}, "si"},
    {"drag", {"target", "nth", "to"}, "sis"},
    {"focus", {"target", "nth"}, "si"},
    {"scroll", {"target", "nth", "dx", "dy", "to"}, "siiis"},
    {"read", {"target", "nth", "what"}, "sis"},
    {"screenshot", {"target", "nth", "format", "quality", "full_page"}, "sisib"},
    {"wait", {"target", "nth", "state", "text", "url", "load"}, "sissss"},
    {"inspect", {"target", "nth"}, "si"},
    {"eval", {"expression", "await"}, "sb"},
    {"act", {"steps", "stop_on_error"}, "Mb"},
    {"upload", {"target", "nth", "files"}, "siM"},
    {"downloads", {NULL}, ""},
    {"console", {"since", "level"}, "is"},
    {"network", {"since", "filter", "static"}, "isb"},
    {"resize", {"width", "height"}, "ii"},
    {"emulate",
     {"color_scheme", "reduced_motion", "forced_colors", "contrast", "media", "offline", "headers",
      "geolocation"},
     "sssssbmm"},
    {"pdf", {"landscape", "background", "paper"}, "bbs"},
    {"download.get", {"id"}, "s"},
    {"subscribe", {"events", "format", "quality", "max_width", "max_height", "max_fps"}, "Ssiiii"},
    {"session.view_token", {"control", "ttl_s"}, "bi"},
    {"input",
     {"type", "x", "y", "button", "count", "dx", "dy", "key", "text", "modifiers", "to_x", "to_y"},
     "siisiiissSii"},
    {"tabs", {NULL}, ""},
    {"tab.new", {"url"}, "s"},
    {"tab.select", {"tab"}, "s"},
    {"tab.close", {"tab"}, "s"},
};

/* The ops that act on a page, which also take an optional string tab (docs/protocol.md, Tabs),
   dialog and prompt_text (docs/protocol.md, Actions). */
static int takes_tab(const char *op)
{
    static const char *const page_ops[] = {
        "navigate", "back",   "forward", "reload", "observe",    "click", "fill",    "type",
        "press",    "select", "check",   "uncheck", "hover",     "focus", "scroll",  "read",
        "screenshot", "wait", "inspect", "eval",   "act",        "upload", "drag",
        "storage",  "storage.set", "storage.clear", "pdf"};
    for (size_t i = 0; i < sizeof page_ops / sizeof page_ops[0]; i++)
        if (!strcmp(page_ops[i], op))
            return 1;
    return 0;
}

static const struct op_rule *op_rule(const char *op)
{
    for (size_t i = 0; i < sizeof op_rules / sizeof op_rules[0]; i++)
        if (!strcmp(op_rules[i].op, op))
            return &op_rules[i];
    return NULL;
}

static int is_integer(const cJSON *v)
{
    return cJSON_IsNumber(v) && floor(v->valuedouble) == v->valuedouble &&
           fabs(v->valuedouble) <= 9007199254740992.0;
}

static int type_is(const cJSON *v, char type)
{
    const cJSON *e;
    switch (type) {
    case 's':
        return cJSON_IsString(v) && !(v->type & WIRE_BIN);
    case 'i':
        return is_integer(v);
    case 'b':
        return cJSON_IsBool(v);
    case 'm':
        return cJSON_IsObject(v);
    default:
        if (!cJSON_IsArray(v))
            return 0;
        cJSON_ArrayForEach(e, v)
        {
            if (type == 'S' ? !cJSON_IsString(e) : !cJSON_IsObject(e))
                return 0;
        }
        return 1;
    }
}

/* What docs/protocol.md says about a command map gw_check_command accepted. */
static void check_accepted(const cJSON *t, const gw_caller *who, const char *sid)
{
    FZ_CHECK(cJSON_IsObject(t), "a command that is not a map was accepted");
    const cJSON *e;
    cJSON_ArrayForEach(e, t)
    {
        FZ_CHECK(!strcmp(e->string, "op") || !strcmp(e->string, "args") ||
                     !strcmp(e->string, "id") || !strcmp(e->string, "idempotency_key"),
                 "the command key \"%s\" was accepted", e->string);
    }
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(t, "op");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(t, "args");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(t, "id");
    const cJSON *idem = cJSON_GetObjectItemCaseSensitive(t, "idempotency_key");
    FZ_CHECK(!op || type_is(op, 's'), "an op that is not a string was accepted");
    FZ_CHECK(op || !sid, "a command without op was accepted on a session");
    const char *name = op ? op->valuestring : "session.create";
    const struct op_rule *rule = op_rule(name);
    FZ_CHECK(rule, "the unknown op \"%s\" was accepted", name);
    FZ_CHECK(!strcmp(name, "session.create") == !sid, "%s was accepted %s a session id", name,
             sid ? "with" : "without");
    FZ_CHECK(strcmp(name, "eval") || who->allow_eval, "eval was accepted from a tenant without it");
    FZ_CHECK(strcmp(name, "subscribe") || who->websocket, "subscribe was accepted over HTTP");
    FZ_CHECK(!who->viewer || !strcmp(name, "subscribe") || !strcmp(name, "input"),
             "%s was accepted from a view token", name);
    FZ_CHECK(!who->websocket || id, "a WebSocket command without id was accepted");
    FZ_CHECK(!id || type_is(id, 's') || (is_integer(id) && id->valuedouble >= 0),
             "an id that is neither a string nor an unsigned integer was accepted");
    FZ_CHECK(!idem ||
                 (cJSON_IsString(idem) && idem->valuestring[0] && strlen(idem->valuestring) <= 64),
             "a bad idempotency_key was accepted");
    FZ_CHECK(!args || cJSON_IsObject(args), "args that are not a map were accepted");
    cJSON_ArrayForEach(e, args)
    {
        if (!strcmp(e->string, "timeout_ms")) {
            FZ_CHECK(is_integer(e) && e->valuedouble >= 1, "a bad timeout_ms was accepted");
            continue;
        }
        if (!strcmp(e->string, "tab") && takes_tab(name)) {
            FZ_CHECK(type_is(e, 's'), "%s accepted a tab that is not a string", name);
            continue;
        }
        if (!strcmp(e->string, "dialog") && takes_tab(name)) {
            FZ_CHECK(type_is(e, 's') && (!strcmp(e->valuestring, "accept") ||
                                         !strcmp(e->valuestring, "dismiss")),
                     "%s accepted a dialog that is neither accept nor dismiss", name);
            continue;
        }
        if (!strcmp(e->string, "prompt_text") && takes_tab(name)) {
            FZ_CHECK(type_is(e, 's') && strlen(e->valuestring) <= 1000,
                     "%s accepted a prompt_text that is no string of at most 1000 bytes", name);
            continue;
        }
        size_t i = 0;
        while (i < 12 && rule->args[i] && strcmp(rule->args[i], e->string))
            i++;
        FZ_CHECK(i < 12 && rule->args[i], "%s accepted the argument \"%s\"", name, e->string);
        FZ_CHECK(type_is(e, rule->types[i]), "%s accepted args.%s of the wrong type", name,
                 e->string);
    }
}

/* The type letter of op_rules for a wire/op.h argument type. */
static char rule_letter(int type)
{
    switch (type & ~WIRE_REQ) {
    case WIRE_STR:
        return 's';
    case WIRE_INT:
        return 'i';
    case WIRE_BOOL:
        return 'b';
    case WIRE_MAP:
        return 'm';
    case WIRE_STRS:
        return 'S';
    default:
        return 'M';
    }
}

/*
 * docs/protocol.md (op_rules) against wire/op.h, once per process: the same
 * ops, each with the same arguments of the same types, and the same page ops.
 * A table that falls behind the protocol fails on the first input, not when
 * the fuzzer happens on the op it lacks.
 */
static void check_tables_agree(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    size_t nrules = sizeof op_rules / sizeof op_rules[0];
    FZ_CHECK(nrules == WIRE_OP_COUNT, "docs/protocol.md has %zu ops, wire/op.h %d", nrules,
             (int)WIRE_OP_COUNT);
    for (int id = 0; id < WIRE_OP_COUNT; id++) {
        const wire_op *w = &wire_ops[id];
        const struct op_rule *r = op_rule(w->name);
        FZ_CHECK(r, "wire/op.h's op %s is not in docs/protocol.md's table", w->name);
        FZ_CHECK(!(w->flags & WIRE_F_PAGE) == !takes_tab(w->name),
                 "%s takes a tab in one table and not in the other", w->name);
        size_t n = 0;
        while (n < WIRE_OP_ARGS_MAX && w->args[n].name)
            n++;
        FZ_CHECK(strlen(r->types) == n, "%s: %zu args in wire/op.h, %zu in the docs", w->name, n,
                 strlen(r->types));
        for (size_t i = 0; i < n; i++) {
            size_t j = 0;
            while (j < n && strcmp(r->args[j], w->args[i].name))
                j++;
            FZ_CHECK(j < n, "%s: wire/op.h's arg %s is not in the docs", w->name, w->args[i].name);
            FZ_CHECK(r->types[j] == rule_letter(w->args[i].type), "%s.%s: types differ", w->name,
                     w->args[i].name);
        }
    }
}

/* The reply a client gets for a refused command must reach it intact. */
static void check_error_reply(int rc, const char *message, const cJSON *t)
{
    cJSON *r = cJSON_CreateObject();
    FZ_CHECK(r, "out of memory");
    cJSON_AddBoolToObject(r, "ok", 0);
    /* gw_command echoes the id only once it has checked it. */
    const cJSON *id = cJSON_IsObject(t) ? cJSON_GetObjectItemCaseSensitive(t, "id") : NULL;
    if (id && (type_is(id, 's') || (is_integer(id) && id->valuedouble >= 0)))
        cJSON_AddItemToObject(r, "id", cJSON_Duplicate(id, 1));
    cJSON *e = cJSON_AddObjectToObject(r, "error");
    cJSON_AddStringToObject(e, "code", rg_err_code(rc));
    cJSON_AddStringToObject(e, "kind", rg_err_transient(rc) ? "transient" : "permanent");
    cJSON_AddStringToObject(e, "message", message);
    cJSON_AddNumberToObject(r, "ms", 0.25);
    fz_round_trips(r);
    cJSON_Delete(r);
}

void fz_check_command(const cJSON *t)
{
    static const gw_caller callers[] = {
        {.tenant = "t1", .allow_eval = 0, .websocket = 0},
        {.tenant = "t1", .allow_eval = 1, .websocket = 0},
        {.tenant = "t1", .allow_eval = 0, .websocket = 1},
        {.tenant = "t1", .allow_eval = 1, .websocket = 1},
        {.tenant = "t1", .allow_eval = 0, .websocket = 1, .viewer = 1},
    };
    static const char *const sids[] = {NULL, "s1"};
    int rcs[5][2];

    check_tables_agree();

    for (int c = 0; c < 5; c++) {
        for (int s = 0; s < 2; s++) {
            char err[512] = "";
            int rc = gw_check_command(&callers[c], sids[s], t, err, sizeof err);
            rcs[c][s] = rc;
            if (rc == 0) {
                FZ_CHECK(!err[0], "accepted with the message \"%s\"", err);
                check_accepted(t, &callers[c], sids[s]);
                continue;
            }
            FZ_CHECK(rc == RG_EBADREQ || rc == RG_EFORBIDDEN, "gw_check_command returned %d", rc);
            FZ_CHECK(err[0], "refused (%d) without a message", rc);
            FZ_CHECK(fz_utf8_ok(err, strlen(err)), "the message is not UTF-8: %s", err);
            check_error_reply(rc, err, t);
        }
    }
    /* eval is the only thing a tenant's right changes. */
    for (int c = 0; c < 4; c += 2)
        for (int s = 0; s < 2; s++)
            FZ_CHECK(rcs[c][s] == rcs[c + 1][s] ||
                         (rcs[c][s] == RG_EFORBIDDEN && rcs[c + 1][s] == 0),
                     "allow_eval changed %d into %d", rcs[c][s], rcs[c + 1][s]);
    /* A view token takes away, never adds. */
    for (int s = 0; s < 2; s++)
        FZ_CHECK(rcs[4][s] == rcs[2][s] || rcs[4][s] == RG_EFORBIDDEN,
                 "a view token changed %d into %d", rcs[2][s], rcs[4][s]);
}
