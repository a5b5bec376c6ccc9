/*
 * mcp.c - refgate's MCP server (Model Context Protocol), whatever carries
 * its messages: JSON-RPC 2.0 framed on cJSON, the tools with the Playwright
 * MCP server's names and argument shapes, each a command or a few on one
 * refgate session through the session's backend (mcp_session.call): the
 * gateway over HTTP for refgate-cli mcp (stdio), the command pipeline in
 * process for POST /v1/mcp. See mcp/mcp.h.
 *
 * An action answers with what it changed in the outline (observe with
 * diff), a snapshot with the whole outline, a screenshot with an image.
 * refgate's errors are tool results with isError and the error's code and
 * message; protocol errors (malformed JSON, an unknown method or tool,
 * missing arguments) are JSON-RPC errors.
 *
 * Threading: a session is used by one thread at a time.
 */
#define _GNU_SOURCE
#include "mcp/mcp.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rg.h"

#define MCP_WAIT_MAX_S 30

/* The protocol revisions this server speaks, newest first. */
static const char *const versions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};

static const cJSON *item(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

static const char *str_of(const cJSON *o, const char *k)
{
    const cJSON *v = item(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

/* A count in a reply (matches, cleared): 0 when it is missing or not a count, so that a reply
   of another version is printed, never cast from NaN. */
static int count_of(const cJSON *o, const char *k)
{
    const cJSON *v = item(o, k);
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= INT_MAX
               ? (int)v->valuedouble
               : 0;
}

/* ---- tool results --------------------------------------------------------- */

/* A tool result: content (text and images) and isError. */
typedef struct result {
    cJSON *content;
    int error;
    const cJSON *call; /* the tool call's arguments (acceptDialogs, promptText) */
} result;

static void add_text(result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_text(result *r, const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "type", "text");
    cJSON_AddStringToObject(c, "text", n >= 0 ? s : "out of memory");
    cJSON_AddItemToArray(r->content, c);
    free(s);
}

static void say_errors(result *r, const cJSON *res);

/* A failed command: its code and message, as the tool's error. */
static int failed(result *r, const cJSON *reply)
{
    const cJSON *e = item(reply, "error");
    const char *code = str_of(e, "code"), *msg = str_of(e, "message");
    add_text(r, "error %s: %s", code ? code : "internal", msg ? msg : "no message");
    say_errors(r, item(e, "details"));
    r->error = 1;
    return -1;
}

/* The page's errors a reply lists (those no earlier reply did), as lines for the agent. */
static void say_errors(result *r, const cJSON *res)
{
    const cJSON *d, *es = item(res, "errors");
    if (!cJSON_IsArray(es) || !cJSON_GetArraySize(es))
        return;
    cJSON_ArrayForEach(d, es)
        add_text(r, "- Page error (%s): %s", or_empty(str_of(d, "type")), or_empty(str_of(d, "text")));
    add_text(r, "- browser_console_messages lists the whole console");
}

/*
 * Runs op with args (consumed) on the session, making the session first
 * when there is none. 0 with *out (the reply's result, owned by *reply), or
 * -1 with the error already in r.
 */
/* The ops that can make a page open a dialog: they take its answer. */
static int opens_dialogs(const char *op)
{
    static const char *const ops[] = {"click", "type",  "press",    "fill",  "select", "check",
                                      "uncheck", "hover", "drag",   "eval",  "navigate",
                                      "back",    "upload", NULL};
    for (int i = 0; ops[i]; i++)
        if (!strcmp(op, ops[i]))
            return 1;
    return 0;
}

/* The dialogs a command's result lists, as lines for the agent. */
static void say_dialogs(result *r, const cJSON *res)
{
    const cJSON *d, *ds = item(res, "dialogs");
    if (!cJSON_IsArray(ds) || !cJSON_GetArraySize(ds))
        return;
    int dismissed = 0;
    cJSON_ArrayForEach(d, ds)
    {
        int acc = cJSON_IsTrue(item(d, "accepted"));
        dismissed |= !acc;
        add_text(r, "- Dialog: %s \"%s\" was %s", or_empty(str_of(d, "type")),
                 or_empty(str_of(d, "message")), acc ? "accepted" : "dismissed");
    }
    if (dismissed)
        add_text(r, "- To accept such a dialog, call the tool again with acceptDialogs: true "
                    "(and promptText for a prompt)");
}

static int run(mcp_session *m, result *r, const char *op, cJSON *args, cJSON **reply, const cJSON **out)
{
    char err[512];
    *reply = NULL;
    if (r->call && args && opens_dialogs(op)) {
        /* the tool call's answer for the dialogs its commands open */
        const char *pt = str_of(r->call, "promptText");
        if (cJSON_IsTrue(item(r->call, "acceptDialogs")))
            cJSON_AddStringToObject(args, "dialog", "accept");
        if (pt)
            cJSON_AddStringToObject(args, "prompt_text", pt);
    }
    if (!m->sid[0] && m->no_create) {
        add_text(r, "error not_found: the session was closed; initialize a new MCP session");
        r->error = 1;
        cJSON_Delete(args);
        return -1;
    }
    if (!m->sid[0]) {
        cJSON *made = NULL;
        int rc = m->call(m->ud, m->sid, "POST", "session.create", NULL, &made, err, sizeof err);
        const char *sid = rc == 0 && cJSON_IsTrue(item(made, "ok"))
                              ? str_of(item(made, "result"), "session")
                              : NULL;
        if (sid) {
            snprintf(m->sid, sizeof m->sid, "%s", sid);
            m->made = 1;
        } else if (rc == 0) {
            failed(r, made);
        } else {
            add_text(r, "error unavailable: %s", err);
            r->error = 1;
        }
        cJSON_Delete(made);
        if (!sid) {
            cJSON_Delete(args);
            return -1;
        }
    }
    if (m->call(m->ud, m->sid, "POST", op, args, reply, err, sizeof err) < 0) {
        add_text(r, "error unavailable: %s", err);
        r->error = 1;
        return -1;
    }
    if (!cJSON_IsTrue(item(*reply, "ok"))) {
        failed(r, *reply);
        cJSON_Delete(*reply);
        *reply = NULL;
        return -1;
    }
    *out = item(*reply, "result");
    say_dialogs(r, *out);
    say_errors(r, *out);
    return 0;
}

/* run, for a command whose result is not needed. */
static int run_only(mcp_session *m, result *r, const char *op, cJSON *args)
{
    cJSON *reply;
    const cJSON *res;
    int rc = run(m, r, op, args, &reply, &res);
    cJSON_Delete(reply);
    return rc;
}

/* The outline (whole, or what changed since the last one) after the page header. */
static void outline(mcp_session *m, result *r, int diff)
{
    cJSON *args = cJSON_CreateObject(), *reply;
    const cJSON *res;
    if (diff)
        cJSON_AddTrueToObject(args, "diff");
    if (run(m, r, "observe", args, &reply, &res) < 0)
        return;
    const char *text = str_of(res, "text");
    add_text(r, "- Page URL: %s\n- Page Title: %s\n%s\n%s", or_empty(str_of(res, "url")),
             or_empty(str_of(res, "title")),
             diff ? "- Changes in the outline (+ added, - removed):" : "- Page outline:",
             text && *text ? text : diff ? "(none)" : "(empty)");
    cJSON_Delete(reply);
}

/* A filename the server cannot write (over HTTP): 1 with the refusal in r, saying to ask for
   what in the answer instead. */
static int cannot_save(mcp_session *m, result *r, const char *file, const char *what)
{
    if (!file || m->save_file)
        return 0;
    add_text(r, "error bad_request: filename names a file on the agent's machine, which "
                "refgate's server cannot write over HTTP; call without it to get the %s in the "
                "answer",
             what);
    r->error = 1;
    return 1;
}

/* ---- the tools ------------------------------------------------------------ */

#define TARGET_DESC "Exact target element reference from the page snapshot (@ref), or a refgate target"
#define DIALOG_PROPS                                                                               \
    ",\"acceptDialogs\":{\"type\":\"boolean\",\"description\":\"Accept the confirm() and "             \
    "prompt() dialogs this call makes the page open (they are dismissed otherwise)\"},"           \
    "\"promptText\":{\"type\":\"string\",\"description\":\"What an accepted prompt() returns\"}"
#define ELEMENT_PROP                                                                               \
    "\"element\":{\"type\":\"string\",\"description\":\"Human-readable element description\"},"   \
    "\"target\":{\"type\":\"string\",\"description\":\"" TARGET_DESC "\"}"

typedef struct tool {
    const char *name, *title, *description;
    const char *schema;   /* the inputSchema, JSON */
    const char *required; /* the arguments a call must carry, space-separated: "name" a
                             string, "name[]" an array, "name#" a number */
    void (*fn)(mcp_session *m, const cJSON *a, result *r);
} tool;

static cJSON *target_args(const cJSON *a)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "target", str_of(a, "target"));
    return args;
}

/* op with one string argument taken from the tool's own, then the outline (or its diff). */
static void one_arg(mcp_session *m, result *r, const char *op, const cJSON *a, const char *key, int diff)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, key, str_of(a, key));
    if (run_only(m, r, op, args) == 0)
        outline(m, r, diff);
}

static void t_navigate(mcp_session *m, const cJSON *a, result *r)
{
    one_arg(m, r, "navigate", a, "url", 0);
}

/* back, forward and reload: the op, then the page's whole outline. */
static void history(mcp_session *m, result *r, const char *op)
{
    if (run_only(m, r, op, NULL) == 0)
        outline(m, r, 0);
}

static void t_back(mcp_session *m, const cJSON *a, result *r)
{
    (void)a;
    history(m, r, "back");
}

static void t_forward(mcp_session *m, const cJSON *a, result *r)
{
    (void)a;
    history(m, r, "forward");
}

static void t_reload(mcp_session *m, const cJSON *a, result *r)
{
    (void)a;
    history(m, r, "reload");
}

/* Is element el the one whose ref is the n bytes at ref? */
static int is_ref(const cJSON *el, const char *ref, size_t n)
{
    const char *r = str_of(el, "ref");
    return r && strlen(r) == n && !memcmp(r, ref, n);
}

/*
 * The outline with each ref's box appended to its line, "[box=x,y,w,h]" in
 * CSS pixels of the viewport (Playwright's boxes), from the elements of an
 * observe with format both. The elements come in the outline's order, so
 * each is looked for from the one after the last found: one pass on a page
 * of thousands of refs. Caller frees.
 */
static char *with_boxes(const char *text, const cJSON *elements)
{
    rg_buf b;
    rg_buf_init(&b);
    const cJSON *next = cJSON_IsArray(elements) ? elements->child : NULL;
    for (const char *l = text; *l;) {
        const char *e = strchr(l, '\n');
        size_t n = e ? (size_t)(e - l) : strlen(l);
        rg_buf_append(&b, l, n);
        const char *at = memmem(l, n, "[ref=", 5);
        const char *end = at ? memchr(at, ']', n - (size_t)(at - l)) : NULL;
        const cJSON *el = NULL;
        for (const cJSON *k = next; end && k && !el; k = k->next)
            el = is_ref(k, at + 5, (size_t)(end - at - 5)) ? k : NULL;
        for (const cJSON *k = elements ? elements->child : NULL; end && k != next && !el;
             k = k->next) /* out of order: from the start */
            el = is_ref(k, at + 5, (size_t)(end - at - 5)) ? k : NULL;
        if (el) {
            next = el->next;
            const cJSON *bx = item(el, "bounds");
            rg_buf_printf(&b, " [box=%.0f,%.0f,%.0f,%.0f]", cJSON_GetNumberValue(item(bx, "x")),
                          cJSON_GetNumberValue(item(bx, "y")), cJSON_GetNumberValue(item(bx, "w")),
                          cJSON_GetNumberValue(item(bx, "h")));
        }
        rg_buf_puts(&b, "\n");
        l += n + (e ? 1 : 0);
    }
    if (b.failed) {
        rg_buf_destroy(&b);
        return NULL;
    }
    return rg_buf_steal(&b);
}

/* Playwright's browser_snapshot: the whole outline, or the part under target, to depth, with
   boxes; to filename on this machine over stdio. */
static void t_snapshot(mcp_session *m, const cJSON *a, result *r)
{
    const char *file = str_of(a, "filename"), *target = str_of(a, "target");
    const cJSON *depth = item(a, "depth");
    int boxes = cJSON_IsTrue(item(a, "boxes"));
    if (!file && !target && !depth && !boxes) {
        outline(m, r, 0);
        return;
    }
    if (cannot_save(m, r, file, "snapshot"))
        return;
    cJSON *args = cJSON_CreateObject(), *reply;
    const cJSON *res;
    if (target)
        cJSON_AddStringToObject(args, "scope", target);
    if (cJSON_IsNumber(depth))
        cJSON_AddNumberToObject(args, "depth", depth->valuedouble);
    if (boxes)
        cJSON_AddStringToObject(args, "format", "both");
    if (run(m, r, "observe", args, &reply, &res) < 0)
        return;
    const char *text = or_empty(str_of(res, "text"));
    char *boxed = boxes ? with_boxes(text, item(res, "elements")) : NULL;
    char *page = NULL, err[512] = "";
    if (asprintf(&page, "- Page URL: %s\n- Page Title: %s\n- Page outline:\n%s",
                 or_empty(str_of(res, "url")), or_empty(str_of(res, "title")),
                 boxed ? boxed : text) < 0)
        page = NULL;
    if (!page || (boxes && !boxed)) {
        add_text(r, "error internal: out of memory");
        r->error = 1;
    } else if (!file) {
        add_text(r, "%s", page);
    } else if (m->save_file(m->ud, file, page, strlen(page), err, sizeof err) < 0) {
        add_text(r, "error bad_request: %s", err);
        r->error = 1;
    } else {
        add_text(r, "Saved the snapshot to %s (%zu bytes)", file, strlen(page));
    }
    free(page);
    free(boxed);
    cJSON_Delete(reply);
}

/* Playwright's browser_find: observe's find, its snippets under a line that counts them. */
static void t_find(mcp_session *m, const cJSON *a, result *r)
{
    const char *text = str_of(a, "text"), *re = str_of(a, "regex");
    if (!text == !re) {
        add_text(r, "error bad_request: give text or regex, one of them");
        r->error = 1;
        return;
    }
    cJSON *args = cJSON_CreateObject(), *reply;
    const cJSON *res;
    cJSON_AddStringToObject(args, "find", text ? text : re);
    if (re)
        cJSON_AddTrueToObject(args, "regex");
    if (run(m, r, "observe", args, &reply, &res) < 0)
        return;
    int n = count_of(res, "matches");
    const char *q = text ? text : re;
    if (!n)
        add_text(r, "No matches found for %s%s%s.", text ? "\"" : "", q, text ? "\"" : "");
    else
        add_text(r, "Found %d %s for %s%s%s:\n\n%s", n, n == 1 ? "match" : "matches",
                 text ? "\"" : "", q, text ? "\"" : "", or_empty(str_of(res, "text")));
    cJSON_Delete(reply);
}

static void t_click(mcp_session *m, const cJSON *a, result *r)
{
    cJSON *args = target_args(a);
    const char *button = str_of(a, "button");
    if (button)
        cJSON_AddStringToObject(args, "button", button);
    if (cJSON_IsTrue(item(a, "doubleClick")))
        cJSON_AddNumberToObject(args, "click_count", 2);
    /* Playwright's modifiers; ControlOrMeta is Control, the browser running on Linux */
    const cJSON *mod, *mods = item(a, "modifiers");
    if (cJSON_IsArray(mods)) {
        cJSON *out = cJSON_AddArrayToObject(args, "modifiers");
        cJSON_ArrayForEach(mod, mods)
        {
            const char *k = cJSON_IsString(mod) ? mod->valuestring : "";
            cJSON_AddItemToArray(out, cJSON_CreateString(!strcmp(k, "ControlOrMeta") ? "Control" : k));
        }
    }
    if (run_only(m, r, "click", args) == 0)
        outline(m, r, 1);
}

static void t_check(mcp_session *m, const cJSON *a, result *r)
{
    if (run_only(m, r, "check", target_args(a)) == 0)
        outline(m, r, 1);
}

static void t_uncheck(mcp_session *m, const cJSON *a, result *r)
{
    if (run_only(m, r, "uncheck", target_args(a)) == 0)
        outline(m, r, 1);
}

/*
 * The vision tools: the mouse at page coordinates (CSS pixels of the viewport,
 * as browser_take_screenshot's image measures them), for agents that act on
 * what they see. The input op, then the diff.
 */
/* A coordinate rounded to the pixel; one far out of any page stays as it is, for the op to refuse. */
static double pixel(double v)
{
    return v > -1e6 && v < 1e6 ? (double)(long)(v + (v < 0 ? -0.5 : 0.5)) : v;
}

static void mouse_xy(mcp_session *m, const cJSON *a, result *r, const char *type)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "type", type);
    cJSON_AddNumberToObject(args, "x", pixel(cJSON_GetNumberValue(item(a, "x"))));
    cJSON_AddNumberToObject(args, "y", pixel(cJSON_GetNumberValue(item(a, "y"))));
    const char *button = str_of(a, "button");
    if (button)
        cJSON_AddStringToObject(args, "button", button);
    if (cJSON_IsNumber(item(a, "clickCount")))
        cJSON_AddNumberToObject(args, "count", cJSON_GetNumberValue(item(a, "clickCount")));
    if (run_only(m, r, "input", args) == 0)
        outline(m, r, 1);
}

static void t_mouse_click(mcp_session *m, const cJSON *a, result *r)
{
    mouse_xy(m, a, r, "click");
}

static void t_mouse_move(mcp_session *m, const cJSON *a, result *r)
{
    mouse_xy(m, a, r, "move");
}

/* down, up and wheel act where the mouse is (the session remembers it). */
static void mouse_here(mcp_session *m, const cJSON *a, result *r, const char *type)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "type", type);
    const char *button = str_of(a, "button");
    if (button)
        cJSON_AddStringToObject(args, "button", button);
    if (!strcmp(type, "wheel")) {
        cJSON_AddNumberToObject(args, "dx", pixel(cJSON_GetNumberValue(item(a, "deltaX"))));
        cJSON_AddNumberToObject(args, "dy", pixel(cJSON_GetNumberValue(item(a, "deltaY"))));
    }
    if (run_only(m, r, "input", args) == 0)
        outline(m, r, 1);
}

static void t_mouse_down(mcp_session *m, const cJSON *a, result *r)
{
    mouse_here(m, a, r, "down");
}

static void t_mouse_up(mcp_session *m, const cJSON *a, result *r)
{
    mouse_here(m, a, r, "up");
}

static void t_mouse_wheel(mcp_session *m, const cJSON *a, result *r)
{
    mouse_here(m, a, r, "wheel");
}

static void t_mouse_drag(mcp_session *m, const cJSON *a, result *r)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "type", "drag");
    cJSON_AddNumberToObject(args, "x", pixel(cJSON_GetNumberValue(item(a, "startX"))));
    cJSON_AddNumberToObject(args, "y", pixel(cJSON_GetNumberValue(item(a, "startY"))));
    cJSON_AddNumberToObject(args, "to_x", pixel(cJSON_GetNumberValue(item(a, "endX"))));
    cJSON_AddNumberToObject(args, "to_y", pixel(cJSON_GetNumberValue(item(a, "endY"))));
    if (run_only(m, r, "input", args) == 0)
        outline(m, r, 1);
}

static void t_hover(mcp_session *m, const cJSON *a, result *r)
{
    if (run_only(m, r, "hover", target_args(a)) == 0)
        outline(m, r, 1);
}

/* Playwright's browser_drag, with targets where it has refs. */
static void t_drag(mcp_session *m, const cJSON *a, result *r)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "target", str_of(a, "startTarget"));
    cJSON_AddStringToObject(args, "to", str_of(a, "endTarget"));
    if (run_only(m, r, "drag", args) == 0)
        outline(m, r, 1);
}

/* Playwright's browser_type replaces the field's text: emptied, then typed
   key by key, so fields that listen for keydown react; submit is Enter. */
static void t_type(mcp_session *m, const cJSON *a, result *r)
{
    cJSON *args = target_args(a);
    cJSON_AddStringToObject(args, "value", "");
    if (run_only(m, r, "fill", args) < 0)
        return;
    args = target_args(a);
    cJSON_AddStringToObject(args, "text", str_of(a, "text"));
    if (run_only(m, r, "type", args) < 0)
        return;
    if (cJSON_IsTrue(item(a, "submit"))) {
        args = target_args(a);
        cJSON_AddStringToObject(args, "key", "Enter");
        if (run_only(m, r, "press", args) < 0)
            return;
    }
    outline(m, r, 1);
}

static void t_press(mcp_session *m, const cJSON *a, result *r)
{
    one_arg(m, r, "press", a, "key", 1);
}

static void t_select(mcp_session *m, const cJSON *a, result *r)
{
    cJSON *args = target_args(a);
    cJSON_AddItemToObject(args, "values", cJSON_Duplicate(item(a, "values"), 1));
    if (run_only(m, r, "select", args) == 0)
        outline(m, r, 1);
}

/* One field of browser_fill_form, by its type. -1 with the error in r. */
static int fill_field(mcp_session *m, const cJSON *f, result *r)
{
    const char *type = str_of(f, "type"), *value = str_of(f, "value");
    if (!type || !value || !str_of(f, "target")) {
        add_text(r, "error bad_request: every field needs a type, a target and a value (strings)");
        r->error = 1;
        return -1;
    }
    cJSON *args = target_args(f);
    if (!strcmp(type, "checkbox") || !strcmp(type, "radio"))
        return run_only(m, r, strcmp(value, "true") ? "uncheck" : "check", args);
    if (!strcmp(type, "combobox")) {
        cJSON *vals = cJSON_CreateArray();
        cJSON_AddItemToArray(vals, cJSON_CreateString(value));
        cJSON_AddItemToObject(args, "values", vals);
        return run_only(m, r, "select", args);
    }
    cJSON_AddStringToObject(args, "value", value);
    return run_only(m, r, "fill", args);
}

static void t_fill_form(mcp_session *m, const cJSON *a, result *r)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, item(a, "fields"))
    {
        if (fill_field(m, f, r) < 0)
            return;
    }
    outline(m, r, 1);
}

static void t_screenshot(mcp_session *m, const cJSON *a, result *r)
{
    const char *type = str_of(a, "type");
    int jpeg = type && !strcmp(type, "jpeg");
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "format", jpeg ? "jpeg" : "png");
    if (cJSON_IsTrue(item(a, "fullPage")))
        cJSON_AddTrueToObject(args, "full_page");
    if (str_of(a, "target"))
        cJSON_AddStringToObject(args, "target", str_of(a, "target"));
    cJSON *reply;
    const cJSON *res;
    if (run(m, r, "screenshot", args, &reply, &res) < 0)
        return;
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "type", "image");
    cJSON_AddStringToObject(c, "data", or_empty(str_of(res, "data"))); /* bin arrives as base64 */
    cJSON_AddStringToObject(c, "mimeType", jpeg ? "image/jpeg" : "image/png");
    cJSON_AddItemToArray(r->content, c);
    cJSON_Delete(reply);
}

static void t_wait(mcp_session *m, const cJSON *a, result *r)
{
    const cJSON *t = item(a, "time");
    if (cJSON_IsNumber(t)) {
        double most = m->wait_max_ms > 0 ? m->wait_max_ms : MCP_WAIT_MAX_S * 1000.0;
        double ms = t->valuedouble * 1000.0;
        rg_sleep_ms((int)(ms > most ? most : ms > 0 ? ms : 0)); /* NaN is refused by cJSON */
    }
    if (str_of(a, "textGone")) {
        cJSON *args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "text", str_of(a, "textGone"));
        cJSON_AddStringToObject(args, "state", "hidden");
        if (run_only(m, r, "wait", args) < 0)
            return;
    }
    if (str_of(a, "text")) {
        cJSON *args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "text", str_of(a, "text"));
        if (run_only(m, r, "wait", args) < 0)
            return;
    }
    outline(m, r, 1);
}

static void t_evaluate(mcp_session *m, const cJSON *a, result *r)
{
    if (str_of(a, "target")) {
        add_text(r, "error bad_request: browser_evaluate on an element is not supported");
        r->error = 1;
        return;
    }
    cJSON *args = cJSON_CreateObject();
    char *expr = NULL;
    if (asprintf(&expr, "(%s)()", str_of(a, "function")) < 0)
        expr = NULL;
    cJSON_AddStringToObject(args, "expression", expr ? expr : "undefined");
    cJSON_AddTrueToObject(args, "await");
    free(expr);
    cJSON *reply;
    const cJSON *res;
    if (run(m, r, "eval", args, &reply, &res) < 0)
        return;
    char *v = cJSON_PrintUnformatted(item(res, "value"));
    add_text(r, "%s", v ? v : "undefined");
    free(v);
    cJSON_Delete(reply);
}

/*
 * Playwright's browser_file_upload answers a file chooser that a click
 * opened; refgate sets the files on the file input itself: target, or the
 * page's only <input type=file>. paths are read on the agent's machine
 * (stdio); files carry the bytes in base64 (any transport).
 */
static void t_file_upload(mcp_session *m, const cJSON *a, result *r)
{
    const cJSON *paths = item(a, "paths"), *files = item(a, "files");
    int np = cJSON_GetArraySize(paths), nf = cJSON_GetArraySize(files);
    if ((paths && !cJSON_IsArray(paths)) || (files && !cJSON_IsArray(files))) {
        add_text(r, "error bad_request: paths and files are arrays");
        r->error = 1;
        return;
    }
    if (np + nf == 0) {
        add_text(r, "No file was given, and refgate opens no file chooser: nothing to do. Give "
                    "paths (files on this machine) or files ([{name, data}], data in base64).");
        return;
    }
    if (np && !m->local_file) {
        add_text(r, "error bad_request: paths name files on the agent's machine, which "
                    "refgate's server cannot read over HTTP; send their bytes instead: files "
                    "[{name, data (base64), mime}]");
        r->error = 1;
        return;
    }
    cJSON *args = cJSON_CreateObject();
    const char *target = str_of(a, "target");
    cJSON_AddStringToObject(args, "target", target ? target : "css:input[type=file]");
    cJSON *list = cJSON_AddArrayToObject(args, "files");
    const cJSON *e;
    cJSON_ArrayForEach(e, paths)
    {
        char err[512] = "";
        cJSON *f = cJSON_IsString(e) ? m->local_file(m->ud, e->valuestring, err, sizeof err) : NULL;
        if (!f) {
            add_text(r, "error bad_request: %s", err[0] ? err : "paths holds strings");
            r->error = 1;
            cJSON_Delete(args);
            return;
        }
        cJSON_AddItemToArray(list, f);
    }
    cJSON_ArrayForEach(e, files)
    {
        cJSON *f = cJSON_CreateObject();
        static const char *keys[] = {"name", "data", "mime"};
        for (size_t k = 0; k < 3; k++)
            if (item(e, keys[k]))
                cJSON_AddItemToObject(f, keys[k], cJSON_Duplicate(item(e, keys[k]), 1));
        cJSON_AddItemToArray(list, f);
    }
    if (run_only(m, r, "upload", args) == 0) {
        add_text(r, "Uploaded %d file%s.", np + nf, np + nf == 1 ? "" : "s");
        outline(m, r, 1);
    }
}

/* The session's tabs reply: its "tabs" array in *tabs (borrowed from *reply). */
static int list_tabs(mcp_session *m, result *r, cJSON **reply, const cJSON **tabs)
{
    const cJSON *res;
    if (run(m, r, "tabs", NULL, reply, &res) < 0)
        return -1;
    *tabs = item(res, "tabs");
    return 0;
}

/*
 * Playwright's browser_tabs: list, new, select and close, a tab named by its
 * index (0-based, in the order the tabs opened); close without an index
 * closes the current tab. Answers with the tabs as they are afterwards.
 */
static void t_tabs(mcp_session *m, const cJSON *a, result *r)
{
    const char *action = str_of(a, "action");
    const cJSON *index = item(a, "index");
    if (!action || (strcmp(action, "list") && strcmp(action, "new") && strcmp(action, "select") &&
         strcmp(action, "close"))) {
        add_text(r, "error bad_request: action must be list, new, select or close");
        r->error = 1;
        return;
    }
    if (index && (!cJSON_IsNumber(index) || index->valuedouble < 0 ||
                  index->valuedouble > INT_MAX || /* before the cast below: 1e300 is not an int */
                  index->valuedouble != (int)index->valuedouble)) {
        add_text(r, "error bad_request: index must be a whole number from 0");
        r->error = 1;
        return;
    }
    cJSON *reply = NULL;
    const cJSON *tabs = NULL;
    if (!strcmp(action, "new")) {
        cJSON *args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "url", str_of(a, "url") ? str_of(a, "url") : "about:blank");
        if (run_only(m, r, "tab.new", args) < 0)
            return;
    } else if (!strcmp(action, "select") || !strcmp(action, "close")) {
        if (!index && !strcmp(action, "select")) {
            add_text(r, "error bad_request: select needs the tab's index");
            r->error = 1;
            return;
        }
        if (list_tabs(m, r, &reply, &tabs) < 0)
            return;
        const cJSON *t = NULL, *e;
        int i = 0;
        cJSON_ArrayForEach(e, tabs)
        {
            if (index ? i == index->valueint : cJSON_IsTrue(item(e, "active")))
                t = e;
            i++;
        }
        if (!t) {
            add_text(r, "error bad_request: there is no tab %d (the session has %d)",
                     index ? index->valueint : -1, i);
            r->error = 1;
            cJSON_Delete(reply);
            return;
        }
        cJSON *args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "tab", or_empty(str_of(t, "tab")));
        cJSON_Delete(reply);
        reply = NULL;
        if (run_only(m, r, !strcmp(action, "select") ? "tab.select" : "tab.close", args) < 0)
            return;
    }
    if (list_tabs(m, r, &reply, &tabs) < 0)
        return;
    rg_buf b;
    rg_buf_init(&b);
    rg_buf_puts(&b, "### Open tabs");
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, tabs)
    {
        rg_buf_printf(&b, "\n- %d: %s[%s] (%s)", i++,
                      cJSON_IsTrue(item(e, "active")) ? "(current) " : "",
                      or_empty(str_of(e, "title")), or_empty(str_of(e, "url")));
    }
    add_text(r, "%s", b.failed ? "" : b.data);
    rg_buf_destroy(&b);
    cJSON_Delete(reply);
}

/* The viewport, then what the new size changed in the outline. */
static void t_resize(mcp_session *m, const cJSON *a, result *r)
{
    cJSON *args = cJSON_CreateObject();
    const cJSON *w = item(a, "width"), *h = item(a, "height");
    cJSON_AddNumberToObject(args, "width", cJSON_IsNumber(w) ? w->valuedouble : 0);
    cJSON_AddNumberToObject(args, "height", cJSON_IsNumber(h) ? h->valuedouble : 0);
    if (run_only(m, r, "resize", args) == 0) {
        add_text(r, "The viewport is %.0fx%.0f.", w->valuedouble, h->valuedouble);
        outline(m, r, 1);
    }
}

/*
 * The console: what the page logged, its uncaught errors and the
 * browser's warnings about it, oldest first. Playwright's tool takes a
 * level (each includes the more severe ones; info and debug are all here)
 * and, in older versions, onlyErrors.
 */
static void t_console(mcp_session *m, const cJSON *a, result *r)
{
    cJSON *args = cJSON_CreateObject(), *reply;
    const cJSON *res;
    const char *level = str_of(a, "level");
    if (cJSON_IsTrue(item(a, "onlyErrors")) || (level && !strcmp(level, "error")))
        cJSON_AddStringToObject(args, "level", "error");
    else if (level && !strcmp(level, "warning"))
        cJSON_AddStringToObject(args, "level", "warning");
    if (run(m, r, "console", args, &reply, &res) < 0)
        return;
    const cJSON *msg, *msgs = item(res, "messages");
    const cJSON *dropped = item(res, "dropped");
    if (cJSON_IsNumber(dropped))
        add_text(r, "(%.0f earlier messages are no longer kept)", dropped->valuedouble);
    cJSON_ArrayForEach(msg, msgs)
    {
        const cJSON *line = item(msg, "line");
        const char *url = str_of(msg, "url");
        if (url && cJSON_IsNumber(line))
            add_text(r, "[%s] %s @ %s:%d", or_empty(str_of(msg, "type")), or_empty(str_of(msg, "text")),
                     url, line->valueint);
        else
            add_text(r, "[%s] %s%s%s", or_empty(str_of(msg, "type")), or_empty(str_of(msg, "text")),
                     url ? " @ " : "", or_empty(url));
    }
    if (!cJSON_GetArraySize(msgs))
        add_text(r, "No console messages.");
    cJSON_Delete(reply);
}

/*
 * The requests the page made since it was opened, oldest first, as
 * Playwright's tool lists them ("[GET] url => [200] OK"); static resources
 * (images, fonts, scripts, style sheets) only with includeStatic, or when
 * they failed.
 */
static void t_network(mcp_session *m, const cJSON *a, result *r)
{
    cJSON *args = cJSON_CreateObject(), *reply;
    const cJSON *res;
    if (cJSON_IsTrue(item(a, "includeStatic")))
        cJSON_AddBoolToObject(args, "static", 1);
    if (run(m, r, "network", args, &reply, &res) < 0)
        return;
    const cJSON *q, *reqs = item(res, "requests");
    const cJSON *dropped = item(res, "dropped");
    if (cJSON_IsNumber(dropped))
        add_text(r, "(%.0f earlier requests are no longer kept)", dropped->valuedouble);
    cJSON_ArrayForEach(q, reqs)
    {
        const char *method = or_empty(str_of(q, "method")), *url = or_empty(str_of(q, "url"));
        const char *fail = str_of(q, "failure"), *blocked = str_of(q, "blocked");
        const cJSON *st = item(q, "status");
        if (fail && blocked)
            add_text(r, "[%s] %s => [FAILED] %s (the URL policy refused it: %s)", method, url, fail,
                     blocked);
        else if (fail)
            add_text(r, "[%s] %s => [FAILED] %s", method, url, fail);
        else if (cJSON_IsNumber(st))
            add_text(r, "[%s] %s => [%d] %s", method, url, st->valueint,
                     or_empty(str_of(q, "status_text")));
        else
            add_text(r, "[%s] %s => (pending)", method, url);
    }
    if (!cJSON_GetArraySize(reqs))
        add_text(r, "No requests.");
    cJSON_Delete(reply);
}

static void t_park(mcp_session *m, const cJSON *a, result *r)
{
    (void)a;
    if (run_only(m, r, "session.park", NULL) == 0)
        add_text(r, "The session %s is parked; the next tool call restores it.", m->sid);
}

static void t_close(mcp_session *m, const cJSON *a, result *r)
{
    (void)a;
    char err[512];
    cJSON *reply = NULL;
    if (!m->sid[0]) {
        add_text(r, "No session was open.");
        return;
    }
    if (m->call(m->ud, m->sid, "DELETE", NULL, NULL, &reply, err, sizeof err) < 0) {
        add_text(r, "error unavailable: %s", err);
        r->error = 1;
    } else if (!cJSON_IsTrue(item(reply, "ok"))) {
        failed(r, reply);
    } else {
        add_text(r, "The session %s is closed; the next tool call opens a new one.", m->sid);
        m->sid[0] = '\0';
        m->made = 0;
    }
    cJSON_Delete(reply);
}


/*
 * The session's cookies and localStorage (session.state), as Playwright's
 * browser_storage_state saves them: to filename on this machine over stdio,
 * or in the answer, from which an agent passes them back to
 * browser_set_storage_state as state.
 */
static void t_storage_state(mcp_session *m, const cJSON *a, result *r)
{
    const char *file = str_of(a, "filename");
    if (cannot_save(m, r, file, "state"))
        return;
    cJSON *reply;
    const cJSON *res;
    if (run(m, r, "session.state", NULL, &reply, &res) < 0)
        return;
    char *text = cJSON_PrintUnformatted(res);
    char err[512] = "";
    int nc = cJSON_GetArraySize(item(res, "cookies")), no = cJSON_GetArraySize(item(res, "origins"));
    if (!text) {
        add_text(r, "error internal: out of memory");
        r->error = 1;
    } else if (!file) {
        add_text(r, "The storage state (%d cookies, %d origins with localStorage), for "
                    "browser_set_storage_state's state; it holds credentials:\n%s",
                 nc, no, text);
    } else if (m->save_file(m->ud, file, text, strlen(text), err, sizeof err) < 0) {
        add_text(r, "error bad_request: %s", err);
        r->error = 1;
    } else {
        add_text(r, "Saved the storage state (%d cookies, %d origins with localStorage) to %s",
                 nc, no, file);
    }
    free(text);
    cJSON_Delete(reply);
}

/* What the emulate op's result says is emulated now, as a line for the agent. */
static void say_emulated(result *r, const cJSON *res)
{
    const cJSON *it, *g = item(res, "geolocation");
    rg_buf b;
    rg_buf_init(&b);
    cJSON_ArrayForEach(it, res)
    {
        if (cJSON_IsString(it))
            rg_buf_printf(&b, "%s%s: %s", b.len ? ", " : "", it->string, it->valuestring);
    }
    if (cJSON_IsTrue(item(res, "offline")))
        rg_buf_printf(&b, "%soffline", b.len ? ", " : "");
    if (cJSON_GetArraySize(item(res, "headers")))
        rg_buf_printf(&b, "%s%d extra request headers", b.len ? ", " : "",
                      cJSON_GetArraySize(item(res, "headers")));
    if (g)
        rg_buf_printf(&b, "%sthe position %g, %g", b.len ? ", " : "",
                      cJSON_GetNumberValue(item(g, "latitude")),
                      cJSON_GetNumberValue(item(g, "longitude")));
    add_text(r, "Emulating %s", b.len ? b.data : "nothing: the browser's own media and network");
    rg_buf_destroy(&b);
}

/* Playwright's browser_network_state_set: offline or online, for every tab. */
static void t_network_state(mcp_session *m, const cJSON *a, result *r)
{
    const char *state = str_of(a, "state");
    if (!state || (strcmp(state, "online") && strcmp(state, "offline"))) {
        add_text(r, "error bad_request: state must be online or offline");
        r->error = 1;
        return;
    }
    cJSON *args = cJSON_CreateObject(), *reply;
    const cJSON *res;
    cJSON_AddBoolToObject(args, "offline", !strcmp(state, "offline"));
    if (run(m, r, "emulate", args, &reply, &res) < 0)
        return;
    add_text(r, "Network is now %s", state);
    cJSON_Delete(reply);
}

/*
 * Playwright's browser_emulate_media: its camelCase arguments as the emulate
 * op's, null to stop one ("" for the op), absent to leave it; the answer says
 * what is emulated now.
 */
static void t_emulate_media(mcp_session *m, const cJSON *a, result *r)
{
    static const char *const names[][2] = {{"colorScheme", "color_scheme"},
                                           {"reducedMotion", "reduced_motion"},
                                           {"forcedColors", "forced_colors"},
                                           {"contrast", "contrast"},
                                           {"media", "media"}};
    cJSON *args = cJSON_CreateObject(), *reply;
    const cJSON *res;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const cJSON *v = item(a, names[i][0]);
        if (cJSON_IsNull(v))
            cJSON_AddStringToObject(args, names[i][1], "");
        else if (v)
            cJSON_AddItemToObject(args, names[i][1], cJSON_Duplicate(v, 1));
    }
    if (run(m, r, "emulate", args, &reply, &res) < 0)
        return;
    say_emulated(r, res);
    cJSON_Delete(reply);
}

/*
 * Playwright's browser_pdf_save: the page as a PDF, to filename on this
 * machine over stdio, or else in the answer as an embedded resource (its
 * bytes in base64), which is what a hosted agent over HTTP gets.
 */
static void t_pdf_save(mcp_session *m, const cJSON *a, result *r)
{
    const char *file = str_of(a, "filename");
    if (cannot_save(m, r, file, "PDF"))
        return;
    cJSON *reply;
    const cJSON *res;
    if (run(m, r, "pdf", NULL, &reply, &res) < 0)
        return;
    const char *b64 = or_empty(str_of(res, "data")); /* bin arrives as base64 */
    size_t n = 0;
    unsigned char *pdf = file ? rg_base64_decode(b64, strlen(b64), &n) : NULL;
    char err[512] = "";
    if (file && !pdf) {
        add_text(r, "error internal: the PDF did not decode");
        r->error = 1;
    } else if (file && m->save_file(m->ud, file, pdf, n, err, sizeof err) < 0) {
        add_text(r, "error bad_request: %s", err);
        r->error = 1;
    } else if (file) {
        add_text(r, "Saved the page as PDF to %s (%zu bytes)", file, n);
    } else {
        add_text(r, "The page as PDF (%.0f bytes), in the resource that follows",
                 cJSON_GetNumberValue(item(res, "bytes")));
        cJSON *c = cJSON_CreateObject(), *rs = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "type", "resource");
        cJSON_AddStringToObject(rs, "uri", "refgate://page.pdf");
        cJSON_AddStringToObject(rs, "mimeType", "application/pdf");
        cJSON_AddStringToObject(rs, "blob", b64);
        cJSON_AddItemToObject(c, "resource", rs);
        cJSON_AddItemToArray(r->content, c);
    }
    free(pdf);
    cJSON_Delete(reply);
}

/*
 * A state (filename on this machine, or state itself) put into the browser:
 * refgate puts a state into a new session only, so the session this MCP
 * session made is closed and a new one made from the state, on about:blank
 * (its tabs go with the old one). Over HTTP the MCP session is bound to
 * its browser session at initialize: there, make the session with
 * session.create's state instead.
 */
static void t_set_storage_state(mcp_session *m, const cJSON *a, result *r)
{
    const char *file = str_of(a, "filename");
    const cJSON *given = item(a, "state");
    char err[512] = "";
    if (m->no_create) {
        add_text(r, "error bad_request: over HTTP this MCP session keeps the browser session it "
                    "began with; create a session with its state (POST /v1/sessions with "
                    "args.state) and connect to it instead");
        r->error = 1;
        return;
    }
    if (!file == !given || (file && !m->load_json)) {
        add_text(r, "error bad_request: give filename (a file of browser_storage_state or "
                    "Playwright's storageState) or state, one of them");
        r->error = 1;
        return;
    }
    cJSON *state = file ? m->load_json(m->ud, file, err, sizeof err) : cJSON_Duplicate(given, 1);
    if (!state) {
        add_text(r, "error bad_request: %s", err[0] ? err : "out of memory");
        r->error = 1;
        return;
    }
    cJSON *args = cJSON_CreateObject();
    cJSON_AddItemToObject(args, "state", state);
    cJSON *made = NULL;
    int rc = m->call(m->ud, "", "POST", "session.create", args, &made, err, sizeof err);
    const char *sid = rc == 0 && cJSON_IsTrue(item(made, "ok"))
                          ? str_of(item(made, "result"), "session")
                          : NULL;
    if (rc < 0) {
        add_text(r, "error unavailable: %s", err);
        r->error = 1;
    } else if (!sid) {
        failed(r, made);
    } else {
        char old[sizeof m->sid];
        snprintf(old, sizeof old, "%s", m->made ? m->sid : "");
        snprintf(m->sid, sizeof m->sid, "%s", sid);
        m->made = 1;
        cJSON *gone = NULL;
        if (old[0])
            m->call(m->ud, old, "DELETE", NULL, NULL, &gone, err, sizeof err);
        cJSON_Delete(gone);
        add_text(r, "Started session %s from the state%s%s; it is on about:blank: navigate to "
                    "go on",
                 sid, old[0] ? " and closed " : "", old);
    }
    cJSON_Delete(made);
}

/*
 * Cookies, with the names, arguments and answers of Playwright's MCP tools
 * (its "storage" capability): the list filtered as it filters (domain: a part
 * of the cookie's domain; path: its beginning), one cookie by name, a set
 * (for the page's own site unless a domain is given), a delete by name, and
 * a clear of them all.
 */
static void t_cookie_list(mcp_session *m, const cJSON *a, result *r)
{
    cJSON *reply;
    const cJSON *res, *c;
    if (run(m, r, "cookies", NULL, &reply, &res) < 0)
        return;
    const char *dom = str_of(a, "domain"), *path = str_of(a, "path");
    int n = 0;
    cJSON_ArrayForEach(c, item(res, "cookies"))
    {
        const char *cd = or_empty(str_of(c, "domain")), *cp = or_empty(str_of(c, "path"));
        if ((dom && !strstr(cd, dom)) || (path && strncmp(cp, path, strlen(path))))
            continue;
        add_text(r, "%s=%s (domain: %s, path: %s)", or_empty(str_of(c, "name")),
                 or_empty(str_of(c, "value")), cd, cp);
        n++;
    }
    if (!n)
        add_text(r, "No cookies found");
    cJSON_Delete(reply);
}

static void t_cookie_get(mcp_session *m, const cJSON *a, result *r)
{
    cJSON *args = cJSON_CreateObject(), *reply;
    const cJSON *res;
    const char *name = or_empty(str_of(a, "name"));
    cJSON_AddStringToObject(args, "name", name);
    if (run(m, r, "cookies", args, &reply, &res) < 0)
        return;
    const cJSON *c = cJSON_GetArrayItem(item(res, "cookies"), 0);
    if (!c)
        add_text(r, "Cookie '%s' not found", name);
    else
        add_text(r, "%s=%s (domain: %s, path: %s, httpOnly: %s, secure: %s, sameSite: %s)", name,
                 or_empty(str_of(c, "value")), or_empty(str_of(c, "domain")),
                 or_empty(str_of(c, "path")), cJSON_IsTrue(item(c, "httpOnly")) ? "true" : "false",
                 cJSON_IsTrue(item(c, "secure")) ? "true" : "false",
                 or_empty(str_of(c, "sameSite")));
    cJSON_Delete(reply);
}

static void t_cookie_set(mcp_session *m, const cJSON *a, result *r)
{
    static const char *const map[][2] = {{"name", "name"},         {"value", "value"},
                                         {"domain", "domain"},     {"path", "path"},
                                         {"httpOnly", "http_only"}, {"secure", "secure"},
                                         {"sameSite", "same_site"}};
    cJSON *args = cJSON_CreateObject();
    for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
        const cJSON *v = item(a, map[i][0]);
        if (v)
            cJSON_AddItemToObject(args, map[i][1], cJSON_Duplicate(v, 1));
    }
    const cJSON *exp = item(a, "expires");
    if (cJSON_IsNumber(exp)) { /* the protocol's expires is whole seconds, up to year 9999 */
        double e = exp->valuedouble > 253402300799.0 ? 253402300799.0 : exp->valuedouble;
        cJSON_AddNumberToObject(args, "expires", e > 0 ? (double)(long long)e : -1);
    }
    if (run_only(m, r, "cookies.set", args) == 0)
        add_text(r, "Set the cookie %s.", or_empty(str_of(a, "name")));
}

static void t_cookie_delete(mcp_session *m, const cJSON *a, result *r)
{
    cJSON *args = cJSON_CreateObject(), *reply;
    const cJSON *res;
    cJSON_AddStringToObject(args, "name", or_empty(str_of(a, "name")));
    if (run(m, r, "cookies.clear", args, &reply, &res) == 0)
        add_text(r, "Deleted %d cookie(s) named %s.", count_of(res, "cleared"),
                 or_empty(str_of(a, "name")));
    cJSON_Delete(reply);
}

static void t_cookie_clear(mcp_session *m, const cJSON *a, result *r)
{
    (void)a;
    cJSON *reply;
    const cJSON *res;
    if (run(m, r, "cookies.clear", NULL, &reply, &res) == 0)
        add_text(r, "Cleared %d cookie(s).", count_of(res, "cleared"));
    cJSON_Delete(reply);
}

/*
 * localStorage and sessionStorage of the active tab's page, with the names,
 * arguments and answers of Playwright's MCP tools: "KEY=VALUE" lines, one
 * item, a set, a delete, a clear.
 */
static void storage_tool(mcp_session *m, const cJSON *a, result *r, const char *kind,
                         const char *op)
{
    cJSON *args = cJSON_CreateObject(), *reply;
    const cJSON *res, *it;
    const char *key = str_of(a, "key"), *what = kind[0] == 'l' ? "localStorage" : "sessionStorage";
    cJSON_AddStringToObject(args, "kind", kind);
    if (key)
        cJSON_AddStringToObject(args, "key", key);
    if (!strcmp(op, "storage.set"))
        cJSON_AddStringToObject(args, "value", or_empty(str_of(a, "value")));
    if (run(m, r, op, args, &reply, &res) < 0)
        return;
    int n = 0;
    cJSON_ArrayForEach(it, item(res, "items"))
    {
        add_text(r, "%s=%s", or_empty(str_of(it, "name")), or_empty(str_of(it, "value")));
        n++;
    }
    if (!strcmp(op, "storage") && !n && key)
        add_text(r, "%s key '%s' not found", what, key);
    else if (!strcmp(op, "storage") && !n)
        add_text(r, "No %s items found", what);
    else if (!strcmp(op, "storage.set"))
        add_text(r, "Set %s item %s.", what, or_empty(key));
    else if (!strcmp(op, "storage.clear"))
        add_text(r, "Removed %d %s item(s).", count_of(res, "cleared"), what);
    cJSON_Delete(reply);
}

#define STORAGE_TOOL(fn, kind, op)                                                                 \
    static void fn(mcp_session *m, const cJSON *a, result *r)                                      \
    {                                                                                              \
        storage_tool(m, a, r, kind, op);                                                           \
    }
STORAGE_TOOL(t_local_list, "local", "storage")
STORAGE_TOOL(t_local_set, "local", "storage.set")
STORAGE_TOOL(t_local_delete, "local", "storage.clear")
STORAGE_TOOL(t_session_list, "session", "storage")
STORAGE_TOOL(t_session_set, "session", "storage.set")
STORAGE_TOOL(t_session_delete, "session", "storage.clear")
#undef STORAGE_TOOL

/* The clear tools take no key: a key from a confused agent must not narrow them. */
static void t_local_clear(mcp_session *m, const cJSON *a, result *r)
{
    (void)a;
    storage_tool(m, NULL, r, "local", "storage.clear");
}

static void t_session_clear(mcp_session *m, const cJSON *a, result *r)
{
    (void)a;
    storage_tool(m, NULL, r, "session", "storage.clear");
}

// clang-format off
static const tool tools[] = {
    {"browser_navigate", "Navigate to a URL", "Navigate to a URL",
     "{\"type\":\"object\",\"properties\":{\"url\":{\"type\":\"string\",\"description\":\"The URL to navigate to\"}},\"required\":[\"url\"]}",
     "url", t_navigate},
    {"browser_navigate_back", "Go back", "Go back to the previous page in the history",
     "{\"type\":\"object\",\"properties\":{}}", "", t_back},
    {"browser_navigate_forward", "Go forward", "Go forward to the next page in the history",
     "{\"type\":\"object\",\"properties\":{}}", "", t_forward},
    {"browser_reload", "Reload the page", "Reload the current page",
     "{\"type\":\"object\",\"properties\":{}}", "", t_reload},
    {"browser_resize", "Resize browser window", "Resize the browser window (the page's viewport, in CSS pixels)",
     "{\"type\":\"object\",\"properties\":{\"width\":{\"type\":\"number\",\"description\":\"Width of the browser window\"},"
     "\"height\":{\"type\":\"number\",\"description\":\"Height of the browser window\"}},\"required\":[\"width\",\"height\"]}",
     "width# height#", t_resize},
    {"browser_console_messages", "Get console messages",
     "Returns the console messages of the page: what it logged, its uncaught errors and the browser's warnings about it",
     "{\"type\":\"object\",\"properties\":{\"level\":{\"type\":\"string\",\"enum\":[\"error\",\"warning\",\"info\",\"debug\"],"
     "\"description\":\"The least severe level to return; each level includes the more severe ones. Default: all\"},"
     "\"onlyErrors\":{\"type\":\"boolean\",\"description\":\"Only errors (as level error)\"}}}",
     "", t_console},
    {"browser_network_requests", "List network requests",
     "Returns the requests the page made since it was loaded: method, URL, status or failure",
     "{\"type\":\"object\",\"properties\":{\"includeStatic\":{\"type\":\"boolean\","
     "\"description\":\"Also the images, fonts, scripts and style sheets that loaded (failed ones are always listed). Default: false\"}}}",
     "", t_network},
    {"browser_snapshot", "Page snapshot",
     "The page as a compact outline: its elements with refs (@ref) to act on, its structure and its text",
     "{\"type\":\"object\",\"properties\":{\"target\":{\"type\":\"string\",\"description\":\"Only the part "
     "of the page under this element (@ref or a refgate target)\"},"
     "\"depth\":{\"type\":\"number\",\"description\":\"Limit the depth of the snapshot tree\"},"
     "\"boxes\":{\"type\":\"boolean\",\"description\":\"Include each element's bounding box as "
     "[box=x,y,width,height], CSS pixels of the viewport\"},"
     "\"filename\":{\"type\":\"string\",\"description\":\"Save the snapshot to this file on this machine "
     "(refgate-cli mcp only) instead of returning it\"}}}",
     "", t_snapshot},
    {"browser_find", "Find in page snapshot",
     "Search the page's outline for a text or a regular expression: the matching lines with a few lines "
     "around each, under their path from the document, with their refs. Cheaper than the whole "
     "snapshot when you look for one element or message",
     "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\","
     "\"description\":\"Text to look for, without regard to case. Give text or regex\"},"
     "\"regex\":{\"type\":\"string\",\"description\":\"A regular expression (POSIX extended, "
     "with \\\\d; /re/i for no case). Give text or regex\"}}}",
     "", t_find},
    {"browser_click", "Click", "Perform click on a web page",
     "{\"type\":\"object\",\"properties\":{" ELEMENT_PROP DIALOG_PROPS ",\"doubleClick\":{\"type\":\"boolean\"},"
     "\"button\":{\"type\":\"string\",\"enum\":[\"left\",\"right\",\"middle\"]},"
     "\"modifiers\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"enum\":[\"Alt\",\"Control\",\"ControlOrMeta\",\"Meta\",\"Shift\"]},"
     "\"description\":\"Modifier keys to press\"}},\"required\":[\"target\"]}",
     "target", t_click},
    {"browser_check", "Check", "Check a checkbox or radio button",
     "{\"type\":\"object\",\"properties\":{" ELEMENT_PROP DIALOG_PROPS "},\"required\":[\"target\"]}",
     "target", t_check},
    {"browser_uncheck", "Uncheck", "Uncheck a checkbox",
     "{\"type\":\"object\",\"properties\":{" ELEMENT_PROP DIALOG_PROPS "},\"required\":[\"target\"]}",
     "target", t_uncheck},
    {"browser_mouse_click_xy", "Click", "Click mouse button at a given position (CSS pixels of the viewport, as the screenshot shows them)",
     "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"number\",\"description\":\"X coordinate\"},"
     "\"y\":{\"type\":\"number\",\"description\":\"Y coordinate\"},"
     "\"button\":{\"type\":\"string\",\"enum\":[\"left\",\"right\",\"middle\"],\"description\":\"Button to click, defaults to left\"},"
     "\"clickCount\":{\"type\":\"number\",\"description\":\"Number of clicks (1 to 3), defaults to 1\"}},"
     "\"required\":[\"x\",\"y\"]}",
     "x# y#", t_mouse_click},
    {"browser_mouse_move_xy", "Move mouse", "Move mouse to a given position (CSS pixels of the viewport)",
     "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"number\",\"description\":\"X coordinate\"},"
     "\"y\":{\"type\":\"number\",\"description\":\"Y coordinate\"}},\"required\":[\"x\",\"y\"]}",
     "x# y#", t_mouse_move},
    {"browser_mouse_down", "Press mouse down", "Press a mouse button down where the mouse is",
     "{\"type\":\"object\",\"properties\":{\"button\":{\"type\":\"string\",\"enum\":[\"left\",\"right\",\"middle\"],"
     "\"description\":\"Button to press, defaults to left\"}}}",
     "", t_mouse_down},
    {"browser_mouse_up", "Press mouse up", "Release a mouse button where the mouse is",
     "{\"type\":\"object\",\"properties\":{\"button\":{\"type\":\"string\",\"enum\":[\"left\",\"right\",\"middle\"],"
     "\"description\":\"Button to release, defaults to left\"}}}",
     "", t_mouse_up},
    {"browser_mouse_wheel", "Scroll mouse wheel", "Scroll the mouse wheel where the mouse is",
     "{\"type\":\"object\",\"properties\":{\"deltaX\":{\"type\":\"number\",\"description\":\"X delta\"},"
     "\"deltaY\":{\"type\":\"number\",\"description\":\"Y delta\"}},\"required\":[\"deltaX\",\"deltaY\"]}",
     "deltaX# deltaY#", t_mouse_wheel},
    {"browser_mouse_drag_xy", "Drag mouse", "Drag left mouse button to a given position",
     "{\"type\":\"object\",\"properties\":{\"startX\":{\"type\":\"number\",\"description\":\"Start X coordinate\"},"
     "\"startY\":{\"type\":\"number\",\"description\":\"Start Y coordinate\"},"
     "\"endX\":{\"type\":\"number\",\"description\":\"End X coordinate\"},"
     "\"endY\":{\"type\":\"number\",\"description\":\"End Y coordinate\"}},"
     "\"required\":[\"startX\",\"startY\",\"endX\",\"endY\"]}",
     "startX# startY# endX# endY#", t_mouse_drag},
    {"browser_hover", "Hover mouse", "Hover over element on page",
     "{\"type\":\"object\",\"properties\":{" ELEMENT_PROP "},\"required\":[\"target\"]}",
     "target", t_hover},
    {"browser_drag", "Drag mouse", "Perform drag and drop between two elements",
     "{\"type\":\"object\",\"properties\":{"
     "\"startElement\":{\"type\":\"string\",\"description\":\"Human-readable source element description\"},"
     "\"startTarget\":{\"type\":\"string\",\"description\":\"The element to drag: " TARGET_DESC "\"},"
     "\"endElement\":{\"type\":\"string\",\"description\":\"Human-readable target element description\"},"
     "\"endTarget\":{\"type\":\"string\",\"description\":\"The element to drop on: " TARGET_DESC "\"}" DIALOG_PROPS "},"
     "\"required\":[\"startTarget\",\"endTarget\"]}",
     "startTarget endTarget", t_drag},
    {"browser_type", "Type text",
     "Type text into editable element: its text is replaced, key by key",
     "{\"type\":\"object\",\"properties\":{" ELEMENT_PROP DIALOG_PROPS ",\"text\":{\"type\":\"string\"},"
     "\"submit\":{\"type\":\"boolean\",\"description\":\"Press Enter after\"},"
     "\"slowly\":{\"type\":\"boolean\",\"description\":\"Accepted; typing is always key by key\"}},"
     "\"required\":[\"target\",\"text\"]}",
     "target text", t_type},
    {"browser_press_key", "Press a key", "Press a key on the keyboard",
     "{\"type\":\"object\",\"properties\":{\"key\":{\"type\":\"string\",\"description\":\"Name of the key to press or a character to generate, such as ArrowLeft, a or Control+a\"}" DIALOG_PROPS "},\"required\":[\"key\"]}",
     "key", t_press},
    {"browser_select_option", "Select option", "Select an option in a dropdown",
     "{\"type\":\"object\",\"properties\":{" ELEMENT_PROP DIALOG_PROPS ",\"values\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}},\"required\":[\"target\",\"values\"]}",
     "target values[]", t_select},
    {"browser_fill_form", "Fill form", "Fill multiple form fields",
     "{\"type\":\"object\",\"properties\":{\"fields\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
     "\"properties\":{\"name\":{\"type\":\"string\"},\"type\":{\"type\":\"string\",\"enum\":[\"textbox\",\"checkbox\",\"radio\",\"combobox\",\"slider\"]},"
     "\"target\":{\"type\":\"string\"},\"value\":{\"type\":\"string\"}},\"required\":[\"name\",\"type\",\"target\",\"value\"]}}},\"required\":[\"fields\"]}",
     "fields[]", t_fill_form},
    {"browser_take_screenshot", "Take a screenshot",
     "Take a screenshot of the page; act with browser_snapshot's refs",
     "{\"type\":\"object\",\"properties\":{" ELEMENT_PROP ",\"type\":{\"type\":\"string\",\"enum\":[\"png\",\"jpeg\"]},\"fullPage\":{\"type\":\"boolean\"}}}",
     "", t_screenshot},
    {"browser_wait_for", "Wait for", "Wait for text to appear or a time to pass",
     "{\"type\":\"object\",\"properties\":{\"time\":{\"type\":\"number\",\"description\":\"Seconds, at most 30\"},"
     "\"text\":{\"type\":\"string\"},\"textGone\":{\"type\":\"string\"}}}",
     "", t_wait},
    {"browser_evaluate", "Evaluate JavaScript",
     "Evaluate a JavaScript function on the page (tenants allowed to eval only)",
     "{\"type\":\"object\",\"properties\":{" ELEMENT_PROP DIALOG_PROPS ",\"function\":{\"type\":\"string\",\"description\":\"() => { /* code */ }\"}},\"required\":[\"function\"]}",
     "function", t_evaluate},
    {"browser_file_upload", "Upload files",
     "Upload one or more files into a file input (target, or the page's only one)",
     "{\"type\":\"object\",\"properties\":{\"paths\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
     "\"description\":\"The absolute paths to the files to upload (refgate-cli mcp reads them; not over HTTP)\"},"
     "\"files\":{\"type\":\"array\",\"description\":\"The files themselves, for agents whose files are not on refgate-cli's machine\","
     "\"items\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
     "\"data\":{\"type\":\"string\",\"description\":\"The file's bytes in base64\"},\"mime\":{\"type\":\"string\"}},"
     "\"required\":[\"name\",\"data\"]}}," ELEMENT_PROP "}}",
     "", t_file_upload},
    {"browser_tabs", "Manage tabs", "List, create, close, or select a browser tab",
     "{\"type\":\"object\",\"properties\":{\"action\":{\"type\":\"string\",\"enum\":[\"list\",\"new\",\"close\",\"select\"],"
     "\"description\":\"Operation to perform\"},\"index\":{\"type\":\"number\",\"description\":\"Tab index, used for close/select. If omitted for close, current tab is closed.\"},"
     "\"url\":{\"type\":\"string\",\"description\":\"new: the URL to open (refgate's; about:blank when omitted)\"}},\"required\":[\"action\"]}",
     "action", t_tabs},
    {"browser_close", "Close browser", "Close the page and its session",
     "{\"type\":\"object\",\"properties\":{}}", "", t_close},
    {"browser_storage_state", "Save storage state",
     "Save the cookies and localStorage of the session, to reuse them in a later one (Playwright's storageState shape)",
     "{\"type\":\"object\",\"properties\":{\"filename\":{\"type\":\"string\","
     "\"description\":\"A file on this machine to save it to (refgate-cli mcp only); without it the state is in the answer\"}}}",
     "", t_storage_state},
    {"browser_set_storage_state", "Restore storage state",
     "Start a new session from saved cookies and localStorage (the current session and its tabs close)",
     "{\"type\":\"object\",\"properties\":{\"filename\":{\"type\":\"string\","
     "\"description\":\"A file of browser_storage_state or Playwright's storageState on this machine (refgate-cli mcp only)\"},"
     "\"state\":{\"type\":\"object\",\"description\":\"The state itself, as browser_storage_state gave it\"}}}",
     "", t_set_storage_state},
    {"browser_cookie_list", "List cookies", "List all cookies (optionally filtered by domain/path)",
     "{\"type\":\"object\",\"properties\":{\"domain\":{\"type\":\"string\",\"description\":\"Filter cookies by domain\"},"
     "\"path\":{\"type\":\"string\",\"description\":\"Filter cookies by path\"}}}",
     "", t_cookie_list},
    {"browser_cookie_get", "Get cookie", "Get a specific cookie by name",
     "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"description\":\"Cookie name to get\"}},\"required\":[\"name\"]}",
     "name", t_cookie_get},
    {"browser_cookie_set", "Set cookie",
     "Set a cookie with optional flags (domain, path, expires, httpOnly, secure, sameSite); for the page's site by default",
     "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"description\":\"Cookie name\"},"
     "\"value\":{\"type\":\"string\",\"description\":\"Cookie value\"},"
     "\"domain\":{\"type\":\"string\",\"description\":\"Cookie domain\"},"
     "\"path\":{\"type\":\"string\",\"description\":\"Cookie path\"},"
     "\"expires\":{\"type\":\"number\",\"description\":\"Cookie expiration as Unix timestamp\"},"
     "\"httpOnly\":{\"type\":\"boolean\",\"description\":\"Whether the cookie is HTTP only\"},"
     "\"secure\":{\"type\":\"boolean\",\"description\":\"Whether the cookie is secure\"},"
     "\"sameSite\":{\"type\":\"string\",\"enum\":[\"Strict\",\"Lax\",\"None\"],\"description\":\"Cookie SameSite attribute\"}},"
     "\"required\":[\"name\",\"value\"]}",
     "name value", t_cookie_set},
    {"browser_cookie_delete", "Delete cookie", "Delete a specific cookie",
     "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"description\":\"Cookie name to delete\"}},\"required\":[\"name\"]}",
     "name", t_cookie_delete},
    {"browser_cookie_clear", "Clear cookies", "Clear all cookies",
     "{\"type\":\"object\",\"properties\":{}}", "", t_cookie_clear},
    {"browser_localstorage_list", "List localStorage", "List all localStorage key-value pairs",
     "{\"type\":\"object\",\"properties\":{}}", "", t_local_list},
    {"browser_localstorage_get", "Get localStorage item", "Get a localStorage item by key",
     "{\"type\":\"object\",\"properties\":{\"key\":{\"type\":\"string\",\"description\":\"Key to get\"}},\"required\":[\"key\"]}",
     "key", t_local_list},
    {"browser_localstorage_set", "Set localStorage item", "Set a localStorage item",
     "{\"type\":\"object\",\"properties\":{\"key\":{\"type\":\"string\",\"description\":\"Key to set\"}," 
     "\"value\":{\"type\":\"string\",\"description\":\"Value to set\"}},\"required\":[\"key\",\"value\"]}",
     "key value", t_local_set},
    {"browser_localstorage_delete", "Delete localStorage item", "Delete a localStorage item",
     "{\"type\":\"object\",\"properties\":{\"key\":{\"type\":\"string\",\"description\":\"Key to delete\"}},\"required\":[\"key\"]}",
     "key", t_local_delete},
    {"browser_localstorage_clear", "Clear localStorage", "Clear all localStorage",
     "{\"type\":\"object\",\"properties\":{}}", "", t_local_clear},
    {"browser_sessionstorage_list", "List sessionStorage", "List all sessionStorage key-value pairs",
     "{\"type\":\"object\",\"properties\":{}}", "", t_session_list},
    {"browser_sessionstorage_get", "Get sessionStorage item", "Get a sessionStorage item by key",
     "{\"type\":\"object\",\"properties\":{\"key\":{\"type\":\"string\",\"description\":\"Key to get\"}},\"required\":[\"key\"]}",
     "key", t_session_list},
    {"browser_sessionstorage_set", "Set sessionStorage item", "Set a sessionStorage item",
     "{\"type\":\"object\",\"properties\":{\"key\":{\"type\":\"string\",\"description\":\"Key to set\"}," 
     "\"value\":{\"type\":\"string\",\"description\":\"Value to set\"}},\"required\":[\"key\",\"value\"]}",
     "key value", t_session_set},
    {"browser_sessionstorage_delete", "Delete sessionStorage item", "Delete a sessionStorage item",
     "{\"type\":\"object\",\"properties\":{\"key\":{\"type\":\"string\",\"description\":\"Key to delete\"}},\"required\":[\"key\"]}",
     "key", t_session_delete},
    {"browser_sessionstorage_clear", "Clear sessionStorage", "Clear all sessionStorage",
     "{\"type\":\"object\",\"properties\":{}}", "", t_session_clear},
    {"browser_emulate_media", "Emulate media features",
     "Emulate CSS media features for the page, for example switch between the light and dark color scheme. "
     "Omitted parameters are left unchanged; null clears an override",
     "{\"type\":\"object\",\"properties\":{"
     "\"colorScheme\":{\"type\":[\"string\",\"null\"],\"enum\":[\"light\",\"dark\",null],\"description\":\"Emulates the prefers-color-scheme media feature\"},"
     "\"reducedMotion\":{\"type\":[\"string\",\"null\"],\"enum\":[\"reduce\",\"no-preference\",null],\"description\":\"Emulates the prefers-reduced-motion media feature\"},"
     "\"forcedColors\":{\"type\":[\"string\",\"null\"],\"enum\":[\"active\",\"none\",null],\"description\":\"Emulates the forced-colors media feature\"},"
     "\"contrast\":{\"type\":[\"string\",\"null\"],\"enum\":[\"more\",\"no-preference\",null],\"description\":\"Emulates the prefers-contrast media feature\"},"
     "\"media\":{\"type\":[\"string\",\"null\"],\"enum\":[\"screen\",\"print\",null],\"description\":\"Changes the CSS media type of the page\"}}}",
     "", t_emulate_media},
    {"browser_network_state_set", "Set network state",
     "Sets the browser network state to online or offline. When offline, all network requests will fail.",
     "{\"type\":\"object\",\"properties\":{\"state\":{\"type\":\"string\",\"enum\":[\"online\",\"offline\"],"
     "\"description\":\"Set to \\\"offline\\\" to simulate offline mode, \\\"online\\\" to restore network connectivity\"}},"
     "\"required\":[\"state\"]}",
     "state", t_network_state},
    {"browser_pdf_save", "Save as PDF", "Save the page as a PDF: to filename on this machine (refgate-cli mcp), or in the answer",
     "{\"type\":\"object\",\"properties\":{\"filename\":{\"type\":\"string\","
     "\"description\":\"A file on this machine to save it to (refgate-cli mcp only); without it the PDF is in the answer\"}}}",
     "", t_pdf_save},
    {"browser_park", "Park the session",
     "Park the session: the browser is let go, the page's state is kept and comes back at the next call",
     "{\"type\":\"object\",\"properties\":{}}", "", t_park},
};
// clang-format on

#define NTOOLS (sizeof tools / sizeof *tools)

/* ---- JSON-RPC -------------------------------------------------------------- */

/* A JSON-RPC error message for id (NULL: null). */
cJSON *mcp_error(const cJSON *id, int code, const char *message)
{
    cJSON *msg = cJSON_CreateObject();
    cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
    cJSON_AddItemToObject(msg, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
    cJSON *e = cJSON_AddObjectToObject(msg, "error");
    cJSON_AddNumberToObject(e, "code", code);
    cJSON_AddStringToObject(e, "message", message);
    return msg;
}

static cJSON *result_msg(const cJSON *id, cJSON *res)
{
    cJSON *msg = cJSON_CreateObject();
    cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
    cJSON_AddItemToObject(msg, "id", cJSON_Duplicate(id, 1));
    cJSON_AddItemToObject(msg, "result", res);
    return msg;
}

static cJSON *initialize(const cJSON *params)
{
    const char *asked = str_of(params, "protocolVersion"), *v = versions[0];
    for (size_t i = 0; asked && i < sizeof versions / sizeof *versions; i++)
        if (!strcmp(asked, versions[i]))
            v = versions[i];
    cJSON *res = cJSON_CreateObject();
    cJSON_AddStringToObject(res, "protocolVersion", v);
    cJSON *caps = cJSON_AddObjectToObject(res, "capabilities");
    cJSON_AddFalseToObject(cJSON_AddObjectToObject(caps, "tools"), "listChanged");
    cJSON *info = cJSON_AddObjectToObject(res, "serverInfo");
    cJSON_AddStringToObject(info, "name", "refgate");
    cJSON_AddStringToObject(info, "version", "1.1");
    cJSON_AddStringToObject(res, "instructions",
                            "Call browser_snapshot to see the page as an outline; act on "
                            "elements by their @ref. Actions answer with what changed.");
    return res;
}

/* A tool this session offers: browser_evaluate only to a tenant allowed to eval. */
static int offered(const mcp_session *m, const tool *t)
{
    return !(m->no_eval && t->fn == t_evaluate);
}

static cJSON *list_tools(const mcp_session *m)
{
    cJSON *res = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(res, "tools");
    for (size_t i = 0; i < NTOOLS; i++) {
        if (!offered(m, &tools[i]))
            continue;
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "name", tools[i].name);
        cJSON_AddStringToObject(t, "title", tools[i].title);
        cJSON_AddStringToObject(t, "description", tools[i].description);
        cJSON *schema = cJSON_Parse(tools[i].schema);
        if (!schema)
            abort(); /* the table above is wrong */
        cJSON_AddItemToObject(t, "inputSchema", schema);
        cJSON_AddItemToArray(arr, t);
    }
    return res;
}

/* The first required argument the call lacks or gives with the wrong type, or NULL. */
static const char *missing(const tool *t, const cJSON *args, char *buf, size_t len)
{
    const char *p = t->required;
    while (*p) {
        size_t n = strcspn(p, " ");
        int array = n > 2 && !strncmp(p + n - 2, "[]", 2);
        int number = n > 1 && p[n - 1] == '#';
        snprintf(buf, len, "%.*s", (int)(array ? n - 2 : number ? n - 1 : n), p);
        const cJSON *v = item(args, buf);
        if (!v || (array ? !cJSON_IsArray(v) : number ? !cJSON_IsNumber(v) : !cJSON_IsString(v)))
            return buf;
        p += n;
        while (*p == ' ')
            p++;
    }
    return NULL;
}

static cJSON *call_tool(mcp_session *m, const cJSON *id, const cJSON *params)
{
    const char *name = str_of(params, "name");
    const cJSON *args = item(params, "arguments");
    const tool *t = NULL;
    for (size_t i = 0; name && i < NTOOLS; i++)
        if (!strcmp(name, tools[i].name) && offered(m, &tools[i]))
            t = &tools[i];
    char msg[256], arg[64];
    if (!t) {
        snprintf(msg, sizeof msg, "unknown tool \"%.80s\"", name ? name : "");
        return mcp_error(id, MCP_BAD_PARAMS, msg);
    }
    if (args && !cJSON_IsObject(args))
        return mcp_error(id, MCP_BAD_PARAMS, "arguments must be an object");
    const char *miss = missing(t, args, arg, sizeof arg);
    if (miss) {
        snprintf(msg, sizeof msg, "%s needs the argument \"%s\" of its schema", t->name, miss);
        return mcp_error(id, MCP_BAD_PARAMS, msg);
    }
    result r = {cJSON_CreateArray(), 0, args};
    t->fn(m, args, &r);
    cJSON *res = cJSON_CreateObject();
    cJSON_AddItemToObject(res, "content", r.content);
    cJSON_AddBoolToObject(res, "isError", r.error);
    return result_msg(id, res);
}

cJSON *mcp_handle_msg(mcp_session *m, const cJSON *msg)
{
    if (!msg)
        return mcp_error(NULL, MCP_PARSE, "parse error: the message is not JSON");
    const cJSON *id = item(msg, "id");
    int has_id = id && (cJSON_IsString(id) || cJSON_IsNumber(id));
    const char *method = str_of(msg, "method"), *jv = str_of(msg, "jsonrpc");
    cJSON *reply = NULL;
    if (!cJSON_IsObject(msg) || !jv || strcmp(jv, "2.0") || (id && !has_id && !cJSON_IsNull(id))) {
        reply = mcp_error(has_id ? id : NULL, MCP_INVALID,
                          cJSON_IsArray(msg) ? "invalid request: batches are not supported"
                                             : "invalid request: not a JSON-RPC 2.0 message");
    } else if (!method || !has_id) {
        /* A response to a request of ours (this server sends none), or a
           notification (initialized, cancelled, ...): never answered. */
    } else if (!strcmp(method, "initialize")) {
        reply = result_msg(id, initialize(item(msg, "params")));
    } else if (!strcmp(method, "ping")) {
        reply = result_msg(id, cJSON_CreateObject());
    } else if (!strcmp(method, "tools/list")) {
        reply = result_msg(id, list_tools(m));
    } else if (!strcmp(method, "tools/call")) {
        reply = call_tool(m, id, item(msg, "params"));
    } else {
        char t[160];
        snprintf(t, sizeof t, "method not found: %.100s", method);
        reply = mcp_error(id, MCP_NO_METHOD, t);
    }
    return reply;
}

cJSON *mcp_handle(mcp_session *m, const char *text)
{
    cJSON *msg = cJSON_Parse(text);
    cJSON *reply = mcp_handle_msg(m, msg);
    cJSON_Delete(msg);
    return reply;
}
