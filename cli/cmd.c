/*
 * cmd.c - refgate-cli's command line: global options, the table of gateway
 * commands (each a protocol op with its positional arguments and flags), and
 * the translation of one command line into one call: HTTP method, path and
 * the command map {"op": ..., "args": {...}}. No I/O: the environment comes
 * in through cli_global (cli_global_from_env), so the unit test drives it all.
 */
#define _GNU_SOURCE
#include "cli/cli.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "wire/op.h"
#include "wire/wire.h"

enum vt {
    VT_STR,      /* a string */
    VT_INT,      /* an integer (int range) */
    VT_TRUE,     /* a switch: true when given */
    VT_FALSE,    /* a switch: false when given */
    VT_NONE,     /* a switch: {} when given (nothing of that kind) */
    VT_HEADER,   /* "Name: value", added to the map (the flag may come again) */
    VT_PLACE,    /* LAT,LON[,ACCURACY] -> {"latitude", "longitude", "accuracy"} */
    VT_VIEWPORT, /* WxH -> {"width": W, "height": H} */
    VT_OUTFILE,  /* not sent: the file the reply's data goes to */
    VT_JSONFILE, /* a file of JSON, sent as what it holds */
};

typedef struct flag_spec {
    const char *name;
    const char *alias; /* another spelling, or NULL */
    const char *key;   /* the args key */
    int vt;
} flag_spec;

#define MAX_POS 3
#define MAX_FLAGS 12

typedef struct cmd_spec {
    const char *name;         /* one word, or "session create" */
    int op;                   /* the protocol op (wire/op.h), or NONE (list, call) */
    const char *method;       /* NULL: POST with the command map; others carry no body */
    const char *pos[MAX_POS]; /* args keys of the positional words; "*k": all the rest, an
                                 array; "#k": an integer */
    int min_pos;
    int out; /* enum cli_out */
    flag_spec flags[MAX_FLAGS];
    const char *usage;
} cmd_spec;

/* "call" is in the table for its usage line; cli_parse treats it apart. A command
   needs a session unless its op creates one (wire/op.h's WIRE_F_CREATE). */
// clang-format off
#define NTH {"--nth", NULL, "nth", VT_INT}
#define TARGET {"--target", NULL, "target", VT_STR}
#define WAIT {"--wait", NULL, "wait", VT_STR}
#define DIALOG {"--dialog", NULL, "dialog", VT_STR}, {"--prompt-text", NULL, "prompt_text", VT_STR}
#define DIALOG_USAGE " [--dialog accept|dismiss] [--prompt-text T]"
#define NONE (-1)
#define NO_FLAGS {{NULL, NULL, NULL, 0}} /* complete, for clang's -Wmissing-field-initializers */

static const cmd_spec cmds[] = {
    {"session create", WIRE_OP_SESSION_CREATE, NULL, {NULL}, 0, CLI_OUT_SESSION,
     {{"--url", NULL, "url", VT_STR}, {"--viewport", NULL, "viewport", VT_VIEWPORT},
      {"--user-agent", NULL, "user_agent", VT_STR}, {"--locale", NULL, "locale", VT_STR},
      {"--timezone", NULL, "timezone", VT_STR}, {"--state", NULL, "state", VT_JSONFILE}},
     "session create [--url U] [--viewport WxH] [--user-agent UA] [--locale L] [--timezone TZ]\n"
     "          [--state FILE]   (FILE: what state printed, or Playwright's storageState)"},
    {"observe", WIRE_OP_OBSERVE, NULL, {NULL}, 0, CLI_OUT_OBSERVE,
     {{"--diff", NULL, "diff", VT_TRUE}, {"--format", NULL, "format", VT_STR},
      {"--viewport-only", NULL, "viewport_only", VT_TRUE}, {"--scope", NULL, "scope", VT_STR},
      {"--max-elements", NULL, "max_elements", VT_INT}, {"--mode", NULL, "mode", VT_STR},
      {"--depth", NULL, "depth", VT_INT}},
     "observe [--diff] [--mode full|interactive] [--depth N] [--format text|elements|both]\n"
     "          [--viewport-only] [--scope TARGET] [--max-elements N]"},
    {"find", WIRE_OP_OBSERVE, NULL, {"find"}, 1, CLI_OUT_OBSERVE,
     {{"--regex", NULL, "regex", VT_TRUE}, {"--context", NULL, "context", VT_INT},
      {"--mode", NULL, "mode", VT_STR}, {"--scope", NULL, "scope", VT_STR}},
     "find TEXT [--regex] [--context N] [--mode full|interactive] [--scope TARGET]\n"
     "          (the outline's lines that hold TEXT, each under its path, with N lines around)"},
    {"input", WIRE_OP_INPUT, NULL, {"type", "#x", "#y"}, 1, CLI_OUT_NONE,
     {{"--count", NULL, "count", VT_INT}, {"--button", NULL, "button", VT_STR},
      {"--dx", NULL, "dx", VT_INT}, {"--dy", NULL, "dy", VT_INT},
      {"--to-x", NULL, "to_x", VT_INT}, {"--to-y", NULL, "to_y", VT_INT}},
     "input click|move|drag|down|up|wheel [X Y] [--count N] [--button B] [--dx N --dy N]\n"
     "          [--to-x X --to-y Y]   (the mouse at page coordinates, as a screenshot of the\n"
     "          viewport shows them; down, up and wheel without X Y act where it is)"},
    {"click", WIRE_OP_CLICK, NULL, {"target"}, 1, CLI_OUT_REF,
     {NTH, {"--button", NULL, "button", VT_STR}, {"--count", NULL, "click_count", VT_INT}, DIALOG},
     "click TARGET [--nth N] [--button left|right|middle] [--count N]\n"
     "         " DIALOG_USAGE},
    {"fill", WIRE_OP_FILL, NULL, {"target", "value"}, 2, CLI_OUT_REF, {NTH, DIALOG},
     "fill TARGET VALUE [--nth N]" DIALOG_USAGE},
    {"type", WIRE_OP_TYPE, NULL, {"text"}, 1, CLI_OUT_REF,
     {TARGET, NTH, {"--delay-ms", NULL, "delay_ms", VT_INT}, DIALOG},
     "type TEXT [--target T] [--delay-ms N]" DIALOG_USAGE},
    {"press", WIRE_OP_PRESS, NULL, {"key"}, 1, CLI_OUT_NONE, {TARGET, NTH, DIALOG},
     "press KEY [--target T]" DIALOG_USAGE},
    {"select", WIRE_OP_SELECT, NULL, {"target", "*values"}, 2, CLI_OUT_SELECTED, {NTH, DIALOG},
     "select TARGET VALUE... [--nth N]" DIALOG_USAGE},
    {"check", WIRE_OP_CHECK, NULL, {"target"}, 1, CLI_OUT_CHECKED, {NTH}, "check TARGET"},
    {"uncheck", WIRE_OP_UNCHECK, NULL, {"target"}, 1, CLI_OUT_CHECKED, {NTH}, "uncheck TARGET"},
    {"hover", WIRE_OP_HOVER, NULL, {"target"}, 1, CLI_OUT_REF, {NTH}, "hover TARGET"},
    {"drag", WIRE_OP_DRAG, NULL, {"target", "to"}, 2, CLI_OUT_REF, {NTH, DIALOG},
     "drag TARGET TO [--nth N]   (drops the element TARGET names on the one TO names)"},
    {"focus", WIRE_OP_FOCUS, NULL, {"target"}, 1, CLI_OUT_REF, {NTH}, "focus TARGET"},
    {"scroll", WIRE_OP_SCROLL, NULL, {NULL}, 0, CLI_OUT_XY,
     {TARGET, NTH, {"--dx", NULL, "dx", VT_INT}, {"--dy", NULL, "dy", VT_INT},
      {"--to", NULL, "to", VT_STR}},
     "scroll [--target T] [--dx N] [--dy N] [--to top|bottom]"},
    {"navigate", WIRE_OP_NAVIGATE, NULL, {"url"}, 1, CLI_OUT_URL, {WAIT},
     "navigate URL [--wait load|domcontentloaded|none]"},
    {"back", WIRE_OP_BACK, NULL, {NULL}, 0, CLI_OUT_URL, {WAIT}, "back [--wait W]"},
    {"forward", WIRE_OP_FORWARD, NULL, {NULL}, 0, CLI_OUT_URL, {WAIT}, "forward [--wait W]"},
    {"reload", WIRE_OP_RELOAD, NULL, {NULL}, 0, CLI_OUT_URL, {WAIT}, "reload [--wait W]"},
    {"read", WIRE_OP_READ, NULL, {"target"}, 0, CLI_OUT_VALUE,
     {NTH, {"--what", NULL, "what", VT_STR}},
     "read [TARGET] [--what text|html|value|attributes]"},
    {"wait", WIRE_OP_WAIT, NULL, {NULL}, 0, CLI_OUT_NONE,
     {TARGET, NTH, {"--state", NULL, "state", VT_STR}, {"--text", NULL, "text", VT_STR},
      {"--url", NULL, "url", VT_STR}, {"--load", NULL, "load", VT_STR}},
     "wait [--target T --state visible|hidden|enabled|attached|detached] [--text T]\n"
     "          [--url U] [--load load|domcontentloaded|networkidle]"},
    {"inspect", WIRE_OP_INSPECT, NULL, {"target"}, 1, CLI_OUT_RESULT, {NTH},
     "inspect TARGET [--nth N]"},
    {"emulate", WIRE_OP_EMULATE, NULL, {NULL}, 0, CLI_OUT_RESULT,
     {{"--color-scheme", NULL, "color_scheme", VT_STR},
      {"--reduced-motion", NULL, "reduced_motion", VT_STR},
      {"--forced-colors", NULL, "forced_colors", VT_STR}, {"--contrast", NULL, "contrast", VT_STR},
      {"--media", NULL, "media", VT_STR}, {"--offline", NULL, "offline", VT_TRUE},
      {"--online", NULL, "offline", VT_FALSE}, {"--header", NULL, "headers", VT_HEADER},
      {"--no-headers", NULL, "headers", VT_NONE}, {"--geolocation", NULL, "geolocation", VT_PLACE},
      {"--no-geolocation", NULL, "geolocation", VT_NONE}},
     "emulate [--color-scheme light|dark] [--reduced-motion reduce|no-preference]\n"
     "          [--forced-colors active|none] [--contrast more|no-preference] [--media screen|print]\n"
     "          [--offline | --online] [--header 'Name: value' ... | --no-headers]\n"
     "          [--geolocation LAT,LON[,ACCURACY] | --no-geolocation]\n"
     "          (\"\" stops one; every tab, kept by restores)"},
    {"pdf", WIRE_OP_PDF, NULL, {NULL}, 0, CLI_OUT_FILE,
     {{"-o", "--output", NULL, VT_OUTFILE}, {"--landscape", NULL, "landscape", VT_TRUE},
      {"--paper", NULL, "paper", VT_STR}},
     "pdf -o FILE [--landscape] [--paper letter|a4]   (the page as the browser prints it)"},
    {"screenshot", WIRE_OP_SCREENSHOT, NULL, {NULL}, 0, CLI_OUT_FILE,
     {{"-o", "--output", NULL, VT_OUTFILE}, TARGET, NTH,
      {"--full-page", NULL, "full_page", VT_TRUE}, {"--format", NULL, "format", VT_STR},
      {"--quality", NULL, "quality", VT_INT}},
     "screenshot -o FILE [--target T] [--full-page] [--format png|jpeg] [--quality N]"},
    {"upload", WIRE_OP_UPLOAD, NULL, {"target", "*files"}, 2, CLI_OUT_REF, {NTH},
     "upload TARGET FILE... [--nth N]"},
    {"downloads", WIRE_OP_DOWNLOADS, NULL, {NULL}, 0, CLI_OUT_RESULT, NO_FLAGS, "downloads"},
    {"resize", WIRE_OP_RESIZE, NULL, {NULL}, 0, CLI_OUT_RESULT,
     {{"--width", NULL, "width", VT_INT}, {"--height", NULL, "height", VT_INT}},
     "resize --width W --height H   (the viewport of every tab, in CSS pixels)"},
    {"console", WIRE_OP_CONSOLE, NULL, {NULL}, 0, CLI_OUT_CONSOLE,
     {{"--since", NULL, "since", VT_INT}, {"--level", NULL, "level", VT_STR}},
     "console [--since N] [--level all|warning|error]"},
    {"network", WIRE_OP_NETWORK, NULL, {NULL}, 0, CLI_OUT_NETWORK,
     {{"--since", NULL, "since", VT_INT}, {"--filter", NULL, "filter", VT_STR},
      {"--static", NULL, "static", VT_TRUE}},
     "network [--since N] [--filter TEXT] [--static]"},
    {"download", WIRE_OP_DOWNLOAD_GET, NULL, {"id"}, 1, CLI_OUT_FILE,
     {{"-o", "--output", NULL, VT_OUTFILE}}, "download ID -o FILE"},
    {"eval", WIRE_OP_EVAL, NULL, {"expression"}, 1, CLI_OUT_VALUE,
     {{"--await", NULL, "await", VT_TRUE}, DIALOG},
     "eval EXPR [--await]" DIALOG_USAGE},
    {"park", WIRE_OP_SESSION_PARK, NULL, {NULL}, 0, CLI_OUT_STATE, NO_FLAGS, "park"},
    {"restore", WIRE_OP_SESSION_RESTORE, NULL, {NULL}, 0, CLI_OUT_STATE, NO_FLAGS, "restore"},
    {"close", WIRE_OP_SESSION_CLOSE, "DELETE", {NULL}, 0, CLI_OUT_NONE, NO_FLAGS, "close"},
    {"info", WIRE_OP_SESSION_INFO, NULL, {NULL}, 0, CLI_OUT_RESULT, NO_FLAGS, "info"},
    {"state", WIRE_OP_SESSION_STATE, NULL, {NULL}, 0, CLI_OUT_RESULT, NO_FLAGS,
     "state   (cookies and localStorage as JSON, for session create --state)"},
    {"cookies", WIRE_OP_COOKIES, NULL, {"*urls"}, 0, CLI_OUT_RESULT,
     {{"--name", NULL, "name", VT_STR}},
     "cookies [URL...] [--name N]   (all of the session's, or those sent to a URL)"},
    {"cookies set", WIRE_OP_COOKIES_SET, NULL, {"name", "value"}, 2, CLI_OUT_NONE,
     {{"--url", NULL, "url", VT_STR}, {"--domain", NULL, "domain", VT_STR},
      {"--path", NULL, "path", VT_STR}, {"--expires", NULL, "expires", VT_INT},
      {"--http-only", NULL, "http_only", VT_TRUE}, {"--secure", NULL, "secure", VT_TRUE},
      {"--same-site", NULL, "same_site", VT_STR}},
     "cookies set NAME VALUE [--url U | --domain D] [--path P] [--expires UNIX_S]\n"
     "          [--http-only] [--secure] [--same-site Strict|Lax|None]\n"
     "          (without --url or --domain: for the page's own site)"},
    {"cookies clear", WIRE_OP_COOKIES_CLEAR, NULL, {NULL}, 0, CLI_OUT_RESULT,
     {{"--name", NULL, "name", VT_STR}, {"--domain", NULL, "domain", VT_STR},
      {"--path", NULL, "path", VT_STR}},
     "cookies clear [--name N] [--domain D] [--path P]   (all, or those that match)"},
    {"storage", WIRE_OP_STORAGE, NULL, {"key"}, 0, CLI_OUT_RESULT,
     {{"--kind", NULL, "kind", VT_STR}},
     "storage [KEY] [--kind local|session]   (the page's localStorage, or one item)"},
    {"storage set", WIRE_OP_STORAGE_SET, NULL, {"key", "value"}, 2, CLI_OUT_NONE,
     {{"--kind", NULL, "kind", VT_STR}}, "storage set KEY VALUE [--kind local|session]"},
    {"storage clear", WIRE_OP_STORAGE_CLEAR, NULL, {"key"}, 0, CLI_OUT_RESULT,
     {{"--kind", NULL, "kind", VT_STR}},
     "storage clear [KEY] [--kind local|session]   (one item, or all)"},
    {"list", NONE, "GET", {NULL}, 0, CLI_OUT_RESULT,
     {{"--limit", NULL, "limit", VT_INT}, {"--after", NULL, "after", VT_STR}},
     "list [--limit N] [--after NEXT]   (a page; pass its next as --after for the next)"},
    {"call", NONE, NULL, {"op", "args"}, 1, CLI_OUT_REPLY, NO_FLAGS,
     "call OP ['JSON ARGS']"},
};
// clang-format on

#define NCMDS (sizeof cmds / sizeof *cmds)

/* ---- global options ------------------------------------------------------ */

void cli_global_init(cli_global *g)
{
    memset(g, 0, sizeof *g);
    g->url = CLI_DEFAULT_URL;
    g->timeout_ms = CLI_DEFAULT_TIMEOUT_MS;
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

void cli_global_from_env(cli_global *g)
{
    if (env("REFGATE_URL"))
        g->url = env("REFGATE_URL");
    if (env("REFGATE_KEY"))
        g->key = env("REFGATE_KEY");
    if (env("REFGATE_SESSION"))
        g->session = env("REFGATE_SESSION");
}

/* Does word w spell the option name, alone or as name=value (*eq then points
   at the value)? */
static int spells(const char *w, const char *name, const char **eq)
{
    size_t n = strlen(name);
    if (strncmp(w, name, n))
        return 0;
    if (w[n] == '\0')
        *eq = NULL;
    else if (w[n] == '=' && name[1] == '-')
        *eq = w + n + 1;
    else
        return 0;
    return 1;
}

/* The option's value (after '=' or the next word); advances *i past both. */
static int take_value(int argc, char **argv, int *i, const char *eq, const char **out, char *err,
                      size_t errlen)
{
    if (eq) {
        *out = eq;
        *i += 1;
        return 0;
    }
    if (*i + 1 >= argc)
        return rg_errf(err, errlen, RG_EBADREQ, "%s needs a value", argv[*i]);
    *out = argv[*i + 1];
    *i += 2;
    return 0;
}

static int parse_int(const char *flag, const char *s, long min, long max, long *out, char *err,
                     size_t errlen)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        return rg_errf(err, errlen, RG_EBADREQ,
                       "%s wants an integer from %ld to %ld (got \"%.40s\")", flag, min, max, s);
    *out = v;
    return 0;
}

int cli_global_flag(cli_global *g, int argc, char **argv, int *i, char *err, size_t errlen)
{
    const char *w = argv[*i], *eq = NULL, *v = NULL;
    const char **dst = NULL;
    if (spells(w, "--url", &eq))
        dst = &g->url;
    else if (spells(w, "--key", &eq))
        dst = &g->key;
    else if (spells(w, "-s", &eq) || spells(w, "--session", &eq))
        dst = &g->session;
    else if (spells(w, "--redis", &eq))
        dst = &g->redis;
    if (dst)
        return take_value(argc, argv, i, eq, dst, err, errlen) ? RG_EBADREQ : 1;
    if (!strcmp(w, "--json")) {
        g->json = 1;
        *i += 1;
        return 1;
    }
    if (spells(w, "--timeout-ms", &eq)) {
        long ms;
        if (take_value(argc, argv, i, eq, &v, err, errlen) ||
            parse_int("--timeout-ms", v, 1, CLI_TIMEOUT_MS_MAX, &ms, err, errlen))
            return RG_EBADREQ;
        g->timeout_ms = (int)ms;
        g->timeout_given = 1;
        return 1;
    }
    return 0;
}

/* ---- command flags -------------------------------------------------------- */

/* Sets args[key] = v, replacing an earlier value (the last flag wins). */
static void set_arg(cJSON *args, const char *key, cJSON *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(args, key);
    cJSON_AddItemToObject(args, key, v);
}

static int viewport(const char *s, cJSON **out, char *err, size_t errlen)
{
    char *x = NULL, *end = NULL;
    long w = strtol(s, &x, 10), h = 0;
    if (x != s && (*x == 'x' || *x == 'X'))
        h = strtol(x + 1, &end, 10);
    if (x == s || !end || end == x + 1 || *end || w < 1 || h < 1 || w > 100000 || h > 100000)
        return rg_errf(err, errlen, RG_EBADREQ, "--viewport wants WIDTHxHEIGHT, such as 1280x800");
    *out = cJSON_CreateObject();
    cJSON_AddNumberToObject(*out, "width", (double)w);
    cJSON_AddNumberToObject(*out, "height", (double)h);
    return 0;
}

/* --header "Name: value": added to args[key], a map (earlier --header flags kept). */
static int header_flag(cJSON *args, const char *key, const char *s, char *err, size_t errlen)
{
    const char *colon = strchr(s, ':');
    if (!colon || colon == s)
        return rg_errf(err, errlen, RG_EBADREQ, "--header wants 'Name: value'");
    cJSON *map = cJSON_GetObjectItemCaseSensitive(args, key);
    if (!cJSON_IsObject(map) || !cJSON_GetArraySize(map)) {
        map = cJSON_CreateObject();
        set_arg(args, key, map);
    }
    char *name = strndup(s, (size_t)(colon - s));
    const char *value = colon + 1 + strspn(colon + 1, " \t");
    if (!name)
        return rg_errf(err, errlen, RG_ENOMEM, "out of memory");
    cJSON_DeleteItemFromObjectCaseSensitive(map, name);
    cJSON_AddStringToObject(map, name, value);
    free(name);
    return 0;
}

/* LAT,LON[,ACCURACY] as {"latitude", "longitude", "accuracy"}; the gateway checks ranges. */
static int place(const char *s, cJSON **out, char *err, size_t errlen)
{
    double v[3];
    int end = 0;
    int n = sscanf(s, "%lf,%lf%n,%lf%n", &v[0], &v[1], &end, &v[2], &end);
    if (n < 2 || s[end])
        return rg_errf(err, errlen, RG_EBADREQ,
                       "--geolocation wants LAT,LON or LAT,LON,ACCURACY, such as 52.52,13.40");
    *out = cJSON_CreateObject();
    cJSON_AddNumberToObject(*out, "latitude", v[0]);
    cJSON_AddNumberToObject(*out, "longitude", v[1]);
    if (n == 3)
        cJSON_AddNumberToObject(*out, "accuracy", v[2]);
    return 0;
}

#define JSON_FILE_MAX (16 << 20)

int cli_json_file(const char *path, cJSON **out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rbe");
    if (!f)
        return rg_errf(err, errlen, RG_EBADREQ, "cannot read %s: %s", path, strerror(errno));
    char *buf = malloc(JSON_FILE_MAX + 1);
    size_t n = buf ? fread(buf, 1, JSON_FILE_MAX + 1, f) : 0;
    int bad = ferror(f);
    fclose(f);
    if (!buf)
        return rg_errf(err, errlen, RG_ENOMEM, "out of memory");
    if (bad || n > JSON_FILE_MAX) {
        free(buf);
        return rg_errf(err, errlen, RG_EBADREQ, "%s: %s", path,
                       bad ? "read error" : "larger than 16 MiB");
    }
    buf[n] = '\0';
    *out = cJSON_ParseWithLength(buf, n);
    free(buf);
    return *out ? 0 : rg_errf(err, errlen, RG_EBADREQ, "%s does not hold JSON", path);
}

/* The value of flag f, as the item that goes into args. */
static int flag_item(const flag_spec *f, const char *v, cJSON **out, char *err, size_t errlen)
{
    long n;
    switch (f->vt) {
    case VT_INT:
        if (parse_int(f->name, v, INT_MIN, INT_MAX, &n, err, errlen))
            return RG_EBADREQ;
        *out = cJSON_CreateNumber((double)n);
        return 0;
    case VT_VIEWPORT:
        return viewport(v, out, err, errlen);
    case VT_PLACE:
        return place(v, out, err, errlen);
    case VT_JSONFILE:
        return cli_json_file(v, out, err, errlen);
    default:
        *out = cJSON_CreateString(v);
        return 0;
    }
}

/* Tries argv[*i] as one of spec's flags: 1 taken, 0 not one, RG_EBADREQ. */
static int command_flag(const cmd_spec *spec, int argc, char **argv, int *i, cJSON *args,
                        cli_call *c, char *err, size_t errlen)
{
    const char *w = argv[*i], *eq = NULL, *v = NULL;
    for (const flag_spec *f = spec->flags; f < spec->flags + MAX_FLAGS && f->name; f++) {
        if (!spells(w, f->name, &eq) && !(f->alias && spells(w, f->alias, &eq)))
            continue;
        if (f->vt == VT_TRUE || f->vt == VT_FALSE || f->vt == VT_NONE) {
            if (eq)
                return rg_errf(err, errlen, RG_EBADREQ, "%s takes no value", f->name);
            set_arg(args, f->key,
                    f->vt == VT_NONE ? cJSON_CreateObject() : cJSON_CreateBool(f->vt == VT_TRUE));
            *i += 1;
            return 1;
        }
        if (take_value(argc, argv, i, eq, &v, err, errlen))
            return RG_EBADREQ;
        if (f->vt == VT_OUTFILE) {
            c->out_file = v;
            return 1;
        }
        if (f->vt == VT_HEADER)
            return header_flag(args, f->key, v, err, errlen) ? RG_EBADREQ : 1;
        cJSON *item = NULL;
        if (flag_item(f, v, &item, err, errlen))
            return RG_EBADREQ;
        set_arg(args, f->key, item);
        return 1;
    }
    return 0;
}

/* ---- commands ------------------------------------------------------------- */

/* The command named by the word(s) at argv[*i]; advances *i past them. */
static const cmd_spec *find_command(int argc, char **argv, int *i, char *err, size_t errlen)
{
    const char *w = argv[*i];
    if (!strcmp(w, "session")) {
        if (*i + 1 < argc && !strcmp(argv[*i + 1], "create")) {
            *i += 2;
            return &cmds[0];
        }
        rg_errf(err, errlen, RG_EBADREQ, "unknown command \"session %s\" (there is session create)",
                *i + 1 < argc ? argv[*i + 1] : "");
        return NULL;
    }
    /* Two words ("cookies set") before one ("cookies"). */
    const char *next = *i + 1 < argc ? argv[*i + 1] : "";
    for (size_t k = 1; k < NCMDS; k++) {
        size_t n = strlen(w);
        if (!strncmp(cmds[k].name, w, n) && cmds[k].name[n] == ' ' &&
            !strcmp(cmds[k].name + n + 1, next)) {
            *i += 2;
            return &cmds[k];
        }
    }
    for (size_t k = 1; k < NCMDS; k++) {
        if (!strcmp(cmds[k].name, w)) {
            *i += 1;
            return &cmds[k];
        }
    }
    rg_errf(err, errlen, RG_EBADREQ, "unknown command \"%.60s\"", w);
    return NULL;
}

/* Puts the positional words into args as the spec says. */
static int positional(const cmd_spec *spec, const char **pos, int npos, cJSON *args, char *err,
                      size_t errlen)
{
    int max = 0;
    while (max < MAX_POS && spec->pos[max])
        max++;
    int variadic = max && spec->pos[max - 1][0] == '*';
    if (npos < spec->min_pos)
        return rg_errf(err, errlen, RG_EBADREQ, "%s is missing an argument: %s %s", spec->name,
                       CLI_PROG, spec->usage);
    if (npos > max && !variadic)
        return rg_errf(err, errlen, RG_EBADREQ, "too many arguments for %s (\"%.40s\"): %s %s",
                       spec->name, pos[max], CLI_PROG, spec->usage);
    for (int k = 0; k < npos && k < max; k++) {
        if (spec->pos[k][0] == '#') {
            long v;
            if (parse_int(spec->pos[k] + 1, pos[k], 0, INT_MAX, &v, err, errlen) < 0)
                return RG_EBADREQ;
            set_arg(args, spec->pos[k] + 1, cJSON_CreateNumber((double)v));
            continue;
        }
        if (spec->pos[k][0] != '*') {
            set_arg(args, spec->pos[k], cJSON_CreateString(pos[k]));
            continue;
        }
        cJSON *a = cJSON_CreateArray();
        for (int j = k; j < npos; j++)
            cJSON_AddItemToArray(a, cJSON_CreateString(pos[j]));
        set_arg(args, spec->pos[k] + 1, a);
        break;
    }
    return 0;
}

/* b (destroyed) as c->path; what: what made it too long. */
static int set_path(cli_call *c, rg_buf *b, const char *what, char *err, size_t errlen)
{
    int rc = 0;
    if (b->failed || b->len >= sizeof c->path)
        rc = rg_errf(err, errlen, RG_EBADREQ, "%s is too long", what);
    else
        memcpy(c->path, b->data, b->len + 1);
    rg_buf_destroy(b);
    return rc;
}

/* "/v1/sessions" and, with sid, "/<escaped sid>". */
static int make_path(cli_call *c, const char *sid, char *err, size_t errlen)
{
    rg_buf b;
    rg_buf_init(&b);
    rg_buf_puts(&b, "/v1/sessions");
    if (sid) {
        rg_buf_puts(&b, "/");
        cli_path_escape(&b, sid);
    }
    return set_path(c, &b, "the session id", err, errlen);
}

/* args (strings and integers) as c->path's query string. */
static int add_query(cli_call *c, const cJSON *args, char *err, size_t errlen)
{
    rg_buf b;
    rg_buf_init(&b);
    rg_buf_puts(&b, c->path);
    const cJSON *a;
    char sep = '?';
    cJSON_ArrayForEach(a, args)
    {
        rg_buf_printf(&b, "%c%s=", sep, a->string);
        sep = '&';
        if (cJSON_IsString(a))
            cli_path_escape(&b, a->valuestring);
        else
            rg_buf_printf(&b, "%.0f", a->valuedouble);
    }
    return set_path(c, &b, "the query", err, errlen);
}

/* call OP ['JSON']: the op and its args as given. */
static int call_command(const char **pos, int npos, cJSON **args, const char **op, char *err,
                        size_t errlen)
{
    if (npos < 1 || npos > 2)
        return rg_errf(err, errlen, RG_EBADREQ,
                       "call wants an op and at most one JSON argument: %s call OP "
                       "'{\"key\": value}'",
                       CLI_PROG);
    *op = pos[0];
    if (npos == 1)
        return 0;
    char jerr[200];
    cJSON *v = NULL;
    if (wire_json_decode(pos[1], strlen(pos[1]), &v, jerr, sizeof jerr) < 0)
        return rg_errf(err, errlen, RG_EBADREQ, "call's arguments are not valid JSON: %s", jerr);
    if (!cJSON_IsObject(v)) {
        cJSON_Delete(v);
        return rg_errf(err, errlen, RG_EBADREQ,
                       "call's arguments must be a JSON object, such as '{}'");
    }
    cJSON_Delete(*args);
    *args = v;
    return 0;
}

/* The call for spec with its parsed words. Takes ownership of args. */
static int build(const cmd_spec *spec, const char **pos, int npos, cJSON *args, const cli_global *g,
                 cli_call *c, char *err, size_t errlen)
{
    const char *op = wire_op_name(spec->op);
    int rc = 0, is_call = !strcmp(spec->name, "call");
    if (is_call)
        rc = call_command(pos, npos, &args, &op, err, errlen);
    else
        rc = positional(spec, pos, npos, args, err, errlen);
    int id = is_call ? wire_op_find(op) : spec->op;
    int needs_session = id >= 0 ? !(wire_ops[id].flags & WIRE_F_CREATE) : is_call;
    if (!rc && needs_session && !g->session)
        rc = rg_errf(err, errlen, RG_EBADREQ,
                     "%s needs a session: pass -s SID or set REFGATE_SESSION", spec->name);
    if (!rc && spec->out == CLI_OUT_FILE && !c->out_file)
        rc = rg_errf(err, errlen, RG_EBADREQ, "%s needs -o FILE (or -o - for standard output)",
                     spec->name);
    if (!rc)
        rc = make_path(c, needs_session ? g->session : NULL, err, errlen);
    if (rc) {
        cJSON_Delete(args);
        return rc;
    }
    c->name = spec->name;
    c->out = spec->out;
    c->method = spec->method ? spec->method : "POST";
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(args, "format");
    c->observe_elements = spec->out == CLI_OUT_OBSERVE && cJSON_IsString(fmt) &&
                          strcmp(fmt->valuestring, "text") != 0;
    if (!op || spec->method) { /* GET and DELETE carry no body: a GET's flags are its query */
        rc = !strcmp(c->method, "GET") ? add_query(c, args, err, errlen) : 0;
        cJSON_Delete(args);
        return rc;
    }
    if (g->timeout_given)
        set_arg(args, "timeout_ms", cJSON_CreateNumber(g->timeout_ms));
    c->body = cJSON_CreateObject();
    cJSON_AddStringToObject(c->body, "op", op);
    if (is_call ? npos == 2 || g->timeout_given : cJSON_GetArraySize(args) > 0)
        cJSON_AddItemToObject(c->body, "args", args);
    else
        cJSON_Delete(args);
    return 0;
}

void cli_call_destroy(cli_call *c)
{
    cJSON_Delete(c->body);
    memset(c, 0, sizeof *c);
}

int cli_parse(int argc, char **argv, cli_global *g, cli_call *c, int *admin_at, char *err,
              size_t errlen)
{
    memset(c, 0, sizeof *c);
    *admin_at = -1;
    const cmd_spec *spec = NULL;
    const char **pos = calloc((size_t)argc + 1, sizeof *pos);
    cJSON *args = cJSON_CreateObject();
    int npos = 0, rest = 0, rc = 0;
    if (!pos || !args)
        abort(); /* small fixed allocations */
    for (int i = 0; i < argc && !rc;) {
        const char *w = argv[i];
        /* "-" and negative numbers ("fill @age -5") are arguments, not options. */
        int option = !rest && w[0] == '-' && w[1] && !(w[1] >= '0' && w[1] <= '9');
        if (option && (!strcmp(w, "--help") || !strcmp(w, "-h"))) {
            rc = CLI_CMD_HELP;
        } else if (option && !strcmp(w, "--")) {
            rest = 1;
            i++;
        } else if (option) {
            int took = spec ? command_flag(spec, argc, argv, &i, args, c, err, errlen) : 0;
            if (took == 0)
                took = cli_global_flag(g, argc, argv, &i, err, errlen);
            if (took == 0)
                took = rg_errf(err, errlen, RG_EBADREQ, "unknown option %.60s%s%s", w,
                               spec ? " for " : "", spec ? spec->name : "");
            rc = took < 0 ? took : 0;
        } else if (spec) {
            pos[npos++] = argv[i++];
        } else if (!strcmp(w, "help")) {
            rc = CLI_CMD_HELP;
        } else if (!strcmp(w, "admin") || !strcmp(w, "mcp")) {
            *admin_at = i + 1; /* the subcommand's own words start here */
            rc = !strcmp(w, "admin") ? CLI_CMD_ADMIN : CLI_CMD_MCP;
        } else if (!(spec = find_command(argc, argv, &i, err, errlen))) {
            rc = RG_EBADREQ;
        }
    }
    if (!rc && !spec)
        rc = rg_errf(err, errlen, RG_EBADREQ, "no command given");
    if (!rc)
        rc = build(spec, pos, npos, args, g, c, err, errlen);
    else
        cJSON_Delete(args);
    free(pos);
    if (rc < 0)
        cli_call_destroy(c);
    return rc;
}

/* The args every page op takes besides its table's (docs/protocol.md, §3). */
static int page_arg(const char *key)
{
    return !strcmp(key, "tab") || !strcmp(key, "dialog") || !strcmp(key, "prompt_text");
}

int cli_check_commands(char *err, size_t errlen)
{
    for (size_t k = 0; k < NCMDS; k++) {
        const cmd_spec *c = &cmds[k];
        for (int i = 0; c->op >= 0 && i < MAX_POS && c->pos[i]; i++) {
            const char *key = c->pos[i] + (c->pos[i][0] == '*' || c->pos[i][0] == '#');
            if (!wire_op_arg(c->op, key))
                return rg_errf(err, errlen, RG_EINTERNAL, "%s sends %s, which %s does not take",
                               c->name, key, wire_op_name(c->op));
        }
        for (int i = 0; c->op >= 0 && i < MAX_FLAGS && c->flags[i].name; i++)
            if (c->flags[i].key && !wire_op_arg(c->op, c->flags[i].key) &&
                !(page_arg(c->flags[i].key) && (wire_ops[c->op].flags & WIRE_F_PAGE)))
                return rg_errf(err, errlen, RG_EINTERNAL, "%s sends %s, which %s does not take",
                               c->name, c->flags[i].key, wire_op_name(c->op));
    }
    return 0;
}

/* ---- help ----------------------------------------------------------------- */

void cli_print_usage(FILE *f)
{
    fprintf(f,
            "usage: %s [--url U] [--key K] [-s SID] [--json] [--timeout-ms N] COMMAND "
            "[ARGS...]\n"
            "       %s admin tenant|key ...   (%s --help for all commands)\n",
            CLI_PROG, CLI_PROG, CLI_PROG);
}

void cli_print_help(FILE *f)
{
    fprintf(f, "%s - a command-line client of the refgate gateway\n\n", CLI_PROG);
    cli_print_usage(f);
    fputs("\nGlobal options (flags override the environment):\n"
          "  --url U          gateway URL, http://host:port[/prefix]; REFGATE_URL\n"
          "                   [" CLI_DEFAULT_URL "]. Plain http only: https is not\n"
          "                   supported (use a local tunnel to a TLS front)\n"
          "  --key K          API key; REFGATE_KEY (prefer the variable: flags show in ps)\n"
          "  -s, --session SID  the session to act on; REFGATE_SESSION\n"
          "  --json           print the whole reply as one line of JSON\n"
          "  --timeout-ms N   also sent as args.timeout_ms; the CLI waits N ms to connect\n"
          "                   and N + 5000 ms for the reply [30000]\n"
          "  --redis URL      admin: redis://[:password@]host[:port][/db]; REFGATE_REDIS_URL\n"
          "                   [redis://127.0.0.1:6390]\n"
          "  --               every later word is an argument, even if it starts with '-'\n"
          "Global options may come anywhere; after the command word the command's own\n"
          "options win (session create --url is the page to open, wait --url a URL to\n"
          "wait for).\n\nSession commands (TARGET: @ref, css:..., role:..., text:..., "
          "label:...):\n",
          f);
    for (size_t k = 0; k < NCMDS; k++)
        fprintf(f, "  %s\n", cmds[k].usage);
    fputs("\nOutput: session create prints the session id; observe the text outline (with\n"
          "--format elements|both the elements as JSON); click, fill, type, hover, focus,\n"
          "drag the element's ref; read and eval the value (strings raw, others as JSON);\n"
          "inspect, info and list JSON; screenshot writes the image to FILE (- for stdout),\n"
          "download the downloaded file; upload reads each local FILE and sends its bytes;\n"
          "console one line per message, \"[type] text (url:line)\", then \"next N\" for\n"
          "--since; network one line per request, \"METHOD URL => STATUS\" (or the\n"
          "failure), then \"next N\"; call prints the whole reply as JSON. The dialogs (confirm, prompt) a\n"
          "command made the page open are named on stderr; they are dismissed unless\n"
          "--dialog accept. So are the page's errors no earlier reply named.\n"
          "\nMCP server (for agent hosts; JSON-RPC on stdin and stdout):\n"
          "  mcp [--session SID] [--on-exit park|close]   tools as the Playwright MCP server\n"
          "        names them; a session is made at the first call (or SID attached),\n"
          "        then closed at exit (an attached one parked) unless --on-exit says\n"
          "\nAdmin commands (straight to Redis; no gateway needed):\n"
          "  admin tenant create NAME [--max-sessions N] [--max-concurrent N] [--rate N]\n"
          "        [--allow-private] [--allow-eval] [--allow-downloads] [--allow-host H]...\n"
          "        [--deny-host H]... [--user-agent UA] [--locale L]\n"
          "                                                prints the new API key alone\n"
          "  admin tenant list                             one tenant per line\n"
          "  admin tenant show NAME                        JSON, with the key count only\n"
          "  admin tenant update NAME [the create options, --no-allow-private,\n"
          "        --no-allow-eval, --no-allow-downloads, --no-allow-hosts, --no-deny-hosts]\n"
          "        (--allow-host and --deny-host replace the whole list; an empty\n"
          "        --user-agent or --locale clears it)\n"
          "  admin tenant delete NAME                      the tenant and all its keys\n"
          "  admin key create NAME                         prints the new API key alone\n"
          "  admin key revoke KEY_OR_SHA256\n"
          "\nExit status: 0 success; 1 an error reply or failure (\"refgate-cli: code:\n"
          "message\" on stderr); 2 a usage error.\n",
          f);
}
