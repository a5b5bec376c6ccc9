/*
 * op.h - the protocol's ops (docs/protocol.md), one table: each op's name,
 * its arguments with their types, its flags, the gateway handler that runs
 * it and that handler's parameter (the registry op of an action). It is the
 * one list of ops: the gateway checks commands and runs them from it, its
 * metrics count by it, and refgate-cli builds its commands on it.
 *
 * Generic code reads the flags, never an op's name. WIRE_OPS is an X-macro
 * (redis generates its command table the same way): wire/op.c expands the
 * name, flag and argument columns into wire_ops[]; the gateway expands the
 * handler and parameter columns in its own scope (gateway/ops.c), so wire/
 * never names a symbol of a module above it.
 *
 * Threading: read-only data; any thread.
 */
#ifndef WIRE_OP_H
#define WIRE_OP_H

/* Argument types, as check_args in the gateway holds them. */
enum wire_arg_type {
    WIRE_STR = 1, /* a string (never bin) */
    WIRE_INT,     /* an integer a double holds exactly */
    WIRE_BOOL,
    WIRE_MAP,
    WIRE_STRS,       /* an array of strings */
    WIRE_MAPS,       /* an array of maps */
    WIRE_REQ = 0x100 /* or'ed in: the argument must be given */
};

/* What generic code needs to know of an op. */
enum wire_op_flag {
    WIRE_F_CREATE = 1,        /* POST /v1/sessions only (and its default op); makes a session */
    WIRE_F_WS_ONLY = 2,       /* on the WebSocket only */
    WIRE_F_NOT_IN_ACT = 4,    /* may not be an act step */
    WIRE_F_CHANGES = 8,       /* may change the page: snapshot event, checkpoint */
    WIRE_F_NAV = 16,          /* navigates: the navigation default timeout, a full checkpoint */
    WIRE_F_MOVES = 32,        /* changes the scroll position, not the page */
    WIRE_F_UNHELD = 64,       /* runs without holding the session (nothing restored) */
    WIRE_F_CLAIM = 128,       /* holds the session without restoring it */
    WIRE_F_PARKS = 256,       /* a parked session answers as it is, without a restore */
    WIRE_F_EVAL = 512,        /* needs the tenant's allow_eval */
    WIRE_F_SUBSCRIBES = 1024, /* its result's events are the connection's subscription */
    WIRE_F_VIEW = 2048,       /* a live view's token may send it (others need an API key) */
    WIRE_F_PAGE = 4096,       /* acts on a page: takes the optional tab argument */
};

#define WIRE_OP_ARGS_MAX 12

typedef struct wire_arg {
    const char *name;
    int type; /* enum wire_arg_type, WIRE_REQ or'ed in */
} wire_arg;

/* The arguments of ops that take a target. */
#define WIRE_TGT                                                                                   \
    {"target", WIRE_STR},                                                                          \
    {                                                                                              \
        "nth", WIRE_INT                                                                            \
    }
#define WIRE_TGT_REQ                                                                               \
    {"target", WIRE_STR | WIRE_REQ},                                                               \
    {                                                                                              \
        "nth", WIRE_INT                                                                            \
    }

/*
 * X(ID, name, flags, handler, param, args...): ID names WIRE_OP_<ID>;
 * handler is the gateway's op_<handler>; param is an expression in the
 * gateway's scope handed to the handler. Every op also takes timeout_ms, and
 * every op flagged WIRE_F_PAGE an optional tab (the tab it acts on).
 */
// clang-format off
#define WIRE_OPS(X)                                                                                \
    X(SESSION_CREATE, "session.create", WIRE_F_CREATE | WIRE_F_NOT_IN_ACT | WIRE_F_NAV,            \
      create, 0, {"viewport", WIRE_MAP}, {"user_agent", WIRE_STR}, {"locale", WIRE_STR},           \
      {"timezone", WIRE_STR}, {"url", WIRE_STR}, {"state", WIRE_MAP})                              \
    X(SESSION_INFO, "session.info", WIRE_F_NOT_IN_ACT | WIRE_F_UNHELD, info, 0, {NULL, 0})         \
    X(SESSION_PARK, "session.park", WIRE_F_NOT_IN_ACT | WIRE_F_PARKS, park, 0, {NULL, 0})          \
    X(SESSION_RESTORE, "session.restore", WIRE_F_NOT_IN_ACT, restore, 0, {NULL, 0})                \
    X(SESSION_CLOSE, "session.close", WIRE_F_NOT_IN_ACT | WIRE_F_CLAIM, close, 0, {NULL, 0})       \
    X(SESSION_STATE, "session.state", WIRE_F_NOT_IN_ACT, state, 0, {NULL, 0})                      \
    X(COOKIES, "cookies", 0, cookies, 0, {"urls", WIRE_STRS}, {"name", WIRE_STR})                  \
    X(COOKIES_SET, "cookies.set", 0, cookie_set, 0, {"name", WIRE_STR | WIRE_REQ},                 \
      {"value", WIRE_STR | WIRE_REQ}, {"url", WIRE_STR}, {"domain", WIRE_STR}, {"path", WIRE_STR}, \
      {"expires", WIRE_INT}, {"http_only", WIRE_BOOL}, {"secure", WIRE_BOOL},                      \
      {"same_site", WIRE_STR})                                                                     \
    X(COOKIES_CLEAR, "cookies.clear", 0, cookies_clear, 0, {"name", WIRE_STR},                     \
      {"domain", WIRE_STR}, {"path", WIRE_STR})                                                    \
    X(STORAGE, "storage", WIRE_F_PAGE, storage, 0, {"kind", WIRE_STR}, {"key", WIRE_STR})         \
    X(STORAGE_SET, "storage.set", WIRE_F_PAGE, storage, 1, {"kind", WIRE_STR},                     \
      {"key", WIRE_STR | WIRE_REQ}, {"value", WIRE_STR | WIRE_REQ})                                \
    X(STORAGE_CLEAR, "storage.clear", WIRE_F_PAGE, storage, 2, {"kind", WIRE_STR},                 \
      {"key", WIRE_STR})                                                                           \
    X(NAVIGATE, "navigate", WIRE_F_CHANGES | WIRE_F_NAV | WIRE_F_PAGE, navigate, 0,                              \
      {"url", WIRE_STR | WIRE_REQ}, {"wait", WIRE_STR})                                            \
    X(BACK, "back", WIRE_F_CHANGES | WIRE_F_NAV | WIRE_F_PAGE, history, -1, {"wait", WIRE_STR})                  \
    X(FORWARD, "forward", WIRE_F_CHANGES | WIRE_F_NAV | WIRE_F_PAGE, history, 1, {"wait", WIRE_STR})             \
    X(RELOAD, "reload", WIRE_F_CHANGES | WIRE_F_NAV | WIRE_F_PAGE, history, 0, {"wait", WIRE_STR})               \
    X(OBSERVE, "observe", 0 | WIRE_F_PAGE, observe, 0,                                                           \
      {"format", WIRE_STR}, {"diff", WIRE_BOOL}, {"scope", WIRE_STR},                              \
      {"max_elements", WIRE_INT}, {"viewport_only", WIRE_BOOL}, {"mode", WIRE_STR},                \
      {"depth", WIRE_INT}, {"find", WIRE_STR}, {"regex", WIRE_BOOL}, {"context", WIRE_INT})       \
    X(CLICK, "click", WIRE_F_CHANGES | WIRE_F_PAGE, action, REG_OP_CLICK,                                        \
      WIRE_TGT_REQ, {"button", WIRE_STR}, {"click_count", WIRE_INT}, {"modifiers", WIRE_STRS})     \
    X(FILL, "fill", WIRE_F_CHANGES | WIRE_F_PAGE, action, REG_OP_FILL,                                           \
      WIRE_TGT_REQ, {"value", WIRE_STR | WIRE_REQ})                                                \
    X(TYPE, "type", WIRE_F_CHANGES | WIRE_F_PAGE, action, REG_OP_TYPE,                                           \
      WIRE_TGT, {"text", WIRE_STR | WIRE_REQ}, {"delay_ms", WIRE_INT})                             \
    X(PRESS, "press", WIRE_F_CHANGES | WIRE_F_PAGE, action, REG_OP_PRESS,                                        \
      WIRE_TGT, {"key", WIRE_STR | WIRE_REQ})                                                      \
    X(SELECT, "select", WIRE_F_CHANGES | WIRE_F_PAGE, action, REG_OP_SELECT,                                     \
      WIRE_TGT_REQ, {"values", WIRE_STRS | WIRE_REQ})                                              \
    X(CHECK, "check", WIRE_F_CHANGES | WIRE_F_PAGE, action, REG_OP_CHECK, WIRE_TGT_REQ)                          \
    X(UNCHECK, "uncheck", WIRE_F_CHANGES | WIRE_F_PAGE, action, REG_OP_UNCHECK, WIRE_TGT_REQ)                    \
    X(HOVER, "hover", WIRE_F_CHANGES | WIRE_F_PAGE, action, REG_OP_HOVER, WIRE_TGT_REQ)                          \
    X(DRAG, "drag", WIRE_F_CHANGES | WIRE_F_PAGE, action, REG_OP_DRAG,                                           \
      WIRE_TGT_REQ, {"to", WIRE_STR | WIRE_REQ})                                                   \
    X(FOCUS, "focus", WIRE_F_CHANGES | WIRE_F_PAGE, action, REG_OP_FOCUS, WIRE_TGT_REQ)                          \
    X(SCROLL, "scroll", WIRE_F_MOVES | WIRE_F_PAGE, action, REG_OP_SCROLL,                                       \
      WIRE_TGT, {"dx", WIRE_INT}, {"dy", WIRE_INT}, {"to", WIRE_STR})                              \
    X(READ, "read", 0 | WIRE_F_PAGE, action, REG_OP_READ, WIRE_TGT, {"what", WIRE_STR})                          \
    X(SCREENSHOT, "screenshot", 0 | WIRE_F_PAGE, action, REG_OP_SCREENSHOT,                                      \
      WIRE_TGT, {"format", WIRE_STR}, {"quality", WIRE_INT}, {"full_page", WIRE_BOOL})             \
    X(WAIT, "wait", 0 | WIRE_F_PAGE, action, REG_OP_WAIT,                                                        \
      WIRE_TGT, {"state", WIRE_STR}, {"text", WIRE_STR}, {"url", WIRE_STR}, {"load", WIRE_STR})   \
    X(INSPECT, "inspect", 0 | WIRE_F_PAGE, action, REG_OP_INSPECT, WIRE_TGT_REQ)                                 \
    X(EVAL, "eval", WIRE_F_CHANGES | WIRE_F_EVAL | WIRE_F_PAGE, eval, 0,                                         \
      {"expression", WIRE_STR | WIRE_REQ}, {"await", WIRE_BOOL})                                   \
    X(ACT, "act", WIRE_F_NOT_IN_ACT | WIRE_F_CHANGES | WIRE_F_PAGE, act, 0,                                      \
      {"steps", WIRE_MAPS | WIRE_REQ}, {"stop_on_error", WIRE_BOOL})                               \
    X(UPLOAD, "upload", WIRE_F_CHANGES | WIRE_F_PAGE, upload, 0,                                                \
      WIRE_TGT_REQ, {"files", WIRE_MAPS | WIRE_REQ})                                               \
    X(DOWNLOADS, "downloads", 0, downloads, 0, {NULL, 0})                                          \
    X(CONSOLE, "console", 0, console, 0, {"since", WIRE_INT}, {"level", WIRE_STR})                 \
    X(NETWORK, "network", 0, network, 0, {"since", WIRE_INT}, {"filter", WIRE_STR},                \
      {"static", WIRE_BOOL})                                                                       \
    X(RESIZE, "resize", WIRE_F_CHANGES, resize, 0, {"width", WIRE_INT | WIRE_REQ},                 \
      {"height", WIRE_INT | WIRE_REQ})                                                             \
    X(EMULATE, "emulate", WIRE_F_CHANGES, emulate, 0, {"color_scheme", WIRE_STR},                  \
      {"reduced_motion", WIRE_STR}, {"forced_colors", WIRE_STR}, {"contrast", WIRE_STR},           \
      {"media", WIRE_STR}, {"offline", WIRE_BOOL}, {"headers", WIRE_MAP},                          \
      {"geolocation", WIRE_MAP})                                                                   \
    X(DOWNLOAD_GET, "download.get", 0, download_get, 0, {"id", WIRE_STR | WIRE_REQ})               \
    X(PDF, "pdf", WIRE_F_PAGE, pdf, 0, {"landscape", WIRE_BOOL}, {"background", WIRE_BOOL},       \
      {"paper", WIRE_STR})                                                                         \
    X(TABS, "tabs", 0, tabs, 0, {NULL, 0})                                                         \
    X(TAB_NEW, "tab.new", WIRE_F_CHANGES | WIRE_F_NAV, tab_new, 0, {"url", WIRE_STR | WIRE_REQ})   \
    X(TAB_SELECT, "tab.select", WIRE_F_CHANGES, tab_select, 0, {"tab", WIRE_STR | WIRE_REQ})       \
    X(TAB_CLOSE, "tab.close", WIRE_F_CHANGES, tab_close, 0, {"tab", WIRE_STR | WIRE_REQ})          \
    X(SUBSCRIBE, "subscribe",                                                                      \
      WIRE_F_WS_ONLY | WIRE_F_NOT_IN_ACT | WIRE_F_UNHELD | WIRE_F_SUBSCRIBES | WIRE_F_VIEW,        \
      subscribe, 0, {"events", WIRE_STRS | WIRE_REQ}, {"format", WIRE_STR},                        \
      {"quality", WIRE_INT}, {"max_width", WIRE_INT}, {"max_height", WIRE_INT},                    \
      {"max_fps", WIRE_INT})                                                                       \
    X(VIEW_TOKEN, "session.view_token", WIRE_F_NOT_IN_ACT | WIRE_F_UNHELD, view_token, 0,          \
      {"control", WIRE_BOOL}, {"ttl_s", WIRE_INT})                                                 \
    X(INPUT, "input", WIRE_F_NOT_IN_ACT | WIRE_F_CHANGES | WIRE_F_VIEW, input, 0,                  \
      {"type", WIRE_STR | WIRE_REQ}, {"x", WIRE_INT}, {"y", WIRE_INT}, {"button", WIRE_STR},       \
      {"count", WIRE_INT}, {"dx", WIRE_INT}, {"dy", WIRE_INT}, {"key", WIRE_STR},                  \
      {"text", WIRE_STR}, {"modifiers", WIRE_STRS}, {"to_x", WIRE_INT}, {"to_y", WIRE_INT})
// clang-format on

#define WIRE_OP_ID(ID, name, flags, handler, param, ...) WIRE_OP_##ID,
typedef enum wire_op_id { WIRE_OPS(WIRE_OP_ID) WIRE_OP_COUNT } wire_op_id;
#undef WIRE_OP_ID

typedef struct wire_op {
    const char *name;
    unsigned flags;                  /* enum wire_op_flag */
    wire_arg args[WIRE_OP_ARGS_MAX]; /* up to the first with a NULL name */
} wire_op;

/** The table, indexed by wire_op_id. */
extern const wire_op wire_ops[WIRE_OP_COUNT];

/** The id of the op named name, or -1 (also for NULL). */
int wire_op_find(const char *name);

/** The name of op id, or NULL when id is not one. */
const char *wire_op_name(int id);

/** The spec of argument name of op id, or NULL when the op does not take it. */
const wire_arg *wire_op_arg(int id, const char *name);

#endif
