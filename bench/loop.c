/*
 * loop.c - issue 20's agent loop on a React single-page app: the same page
 * and the same steps for three sides, in one process and one run.
 *
 *   rg    refgate through nginx: msgpack on a kept-alive connection, with
 *         the client bench/gateway.c uses (bench/client.c), on a stack
 *         started here (tests/support/stack.c: a private Redis, one worker
 *         with its Chromium, nginx)
 *   cli   refgate-cli (BUILD/refgate-cli), one process per command, pointed
 *         at the same stack with REFGATE_URL, REFGATE_KEY and REFGATE_SESSION
 *   ab    agent-browser's CLI (bench/peer/node_modules/agent-browser, pinned
 *         in bench/peer/package.json), one process per command, as its docs
 *         tell agents to use it: `snapshot -i` and `@eN` refs
 *   mcp   refgate's MCP server on stdio (`refgate-cli mcp`), one long-lived
 *         process, as an agent host runs it, on the same stack: the tool
 *         calls of bench/peer/mcp.mjs's `react` loop for Playwright's MCP
 *         server (browser_navigate, browser_snapshot, browser_type with
 *         submit, browser_click), so that the two MCP servers do the same
 *         work; fill and Enter are one call there, and press counts 0
 *
 * Playwright's MCP server is bench/peer/mcp.mjs (its `react` loop): an agent
 * talks to that server over stdio from one long-lived client, which is Node
 * there, as for the other MCP figures; here the client of refgate's is C.
 * A JSON-RPC line on a pipe costs microseconds on either side.
 *
 * Why a file of its own and not a section of bench/gateway.c: the two CLI
 * sides need processes spawned and timed, and agent-browser's daemon started
 * and stopped, none of which gateway.c has a use for, and gateway.c was
 * already over the 1,000-line limit. The msgpack client is not duplicated:
 * it moved from gateway.c to bench/client.c, which both link.
 *
 * The page: tests/fixtures/react/todo.html (React 18.3.1 and react-dom from
 * npm, tests/fixtures/react/install.sh), served from that directory by
 * tests/support/httpd.c, as test_outline_react.c serves it: every response
 * with Cache-Control: no-store, so no side's browser keeps React's scripts
 * in a cache between loops. bench/peer/common.mjs serves the same files
 * with the same headers to the MCP side.
 *
 * One loop, each step one command (one request, one process):
 *   navigate         the page (ab: `open URL`)
 *   observe          rg, cli: `observe`, the default full outline, with the
 *                    page's text; ab: `snapshot -i`
 *   fill             "Buy milk" into the new-todo box by its ref
 *   press            Enter (rg, cli: on the box's ref; ab: `press Enter`, at
 *                    the focus the fill left, as its docs show)
 *   observe_added    the new item must be in it (its text)
 *   click            the new item's checkbox by its ref
 *   observe_checked  the item's checkbox (found again as above: React
 *                    replaced its node) must show checked
 * Refs are parsed from each side's own snapshot text, as an agent reads it:
 * the line with `textbox "What needs to be done?"`, then the checkbox line
 * nearest the item's text. Every navigate starts a fresh page, so each loop
 * adds the one item it checks.
 *
 * Method: one warm-up loop per side (ab's after its daemon was started with
 * `open about:blank`), then `loops` rounds; each round runs one loop of every
 * side, the order rotating from round to round, so that a change of load on
 * the machine hits all sides alike. A loop's time is the sum of its steps'
 * client-side times; for a CLI, a step is from the spawn to the exit with
 * its output read (both CLIs are spawned by the same code here). A loop
 * whose check fails counts as failed; its time is still in the figures.
 *
 * agent-browser runs with HOME and AGENT_BROWSER_SOCKET_DIR in a scratch
 * directory, AGENT_BROWSER_EXECUTABLE_PATH=/usr/lib/chromium/chromium,
 * AGENT_BROWSER_ARGS=--no-sandbox, AGENT_BROWSER_NO_VERSION_CHECK=1 (no
 * request to Google) and AGENT_BROWSER_IDLE_TIMEOUT_MS=120000 (should this
 * bench die, the daemon quits after 2 idle minutes, not its default hour).
 * At the end `agent-browser close` stops its daemon and browser; whatever
 * of the daemon's process tree is still there 5 s later is killed by PID,
 * and the scratch directory is removed. The bench is a child subreaper, so
 * the daemon, which detaches from the CLI that started it, is its child and
 * is reaped here rather than left to init.
 *
 * Full run: 30 rounds. --quick: 3 rounds. Prints one JSON object on stdout;
 * progress on stderr (RG_BENCH_VERBOSE=1 also prints every snapshot).
 * Measures; asserts nothing.
 * Usage: loop [--quick] [--loops N] [--cli PATH] [--ab PATH]. Run from the
 * repository root.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/client.h"
#include "tests/support/support.h"

extern char **environ;

#define FIXTURES "tests/fixtures/react"
#define AB_BIN "bench/peer/node_modules/agent-browser/bin/agent-browser-linux-x64"
#define ITEM "Buy milk"
#define NEW_TODO "textbox \"What needs to be done?\""
#define MAX_LOOPS 1000
#define MAX_ENV 256
#define MAX_PROCS 256

enum { S_NAVIGATE, S_OBSERVE, S_FILL, S_PRESS, S_OBSERVE_ADDED, S_CLICK, S_OBSERVE_CHECKED, STEPS };
static const char *const step_names[STEPS] = {"navigate",      "observe", "fill",           "press",
                                              "observe_added", "click",   "observe_checked"};

enum { SIDE_RG, SIDE_CLI, SIDE_AB, SIDE_MCP, SIDES };
static const char *const side_names[SIDES] = {"rg", "cli", "ab", "mcp"};

static int verbose;

/* ---- one side ---- */

struct side {
    int id;
    int ready; /* started; 0 leaves the side out */
    char error[256];
    /* rg */
    int fd;
    char sid[64];
    /* the CLIs */
    const char *bin;
    char **envp;
    /* mcp: the server's process and pipes, the next request id */
    pid_t pid;
    FILE *to, *from;
    int next_id;
    /* figures */
    int loops, ok, failed;
    double *total, *step[STEPS];
    /* rg: the worker's own time per step (the reply's ms), this loop's and every loop's */
    int cur_step;
    double cur_server[STEPS], *server[STEPS];
    size_t observe_bytes; /* the snapshot with the item in it */
};

/* A copy of the environment with extra "NAME=value" entries, which win. */
static char **env_with(const char *const *extra)
{
    char **e = calloc(MAX_ENV + 1, sizeof *e);
    int n = 0;
    for (int i = 0; extra[i] && n < MAX_ENV; i++)
        e[n++] = strdup(extra[i]);
    for (char **p = environ; *p && n < MAX_ENV; p++) {
        size_t k = strcspn(*p, "=");
        int shadowed = 0;
        for (int i = 0; extra[i]; i++)
            shadowed |= !strncmp(extra[i], *p, k) && extra[i][k] == '=';
        if (!shadowed)
            e[n++] = strdup(*p);
    }
    return e;
}

static void env_free(char **e)
{
    for (int i = 0; e && e[i]; i++)
        free(e[i]);
    free(e);
}

/*
 * Runs bin with args (NULL-terminated, without argv[0]) and envp, its stdout
 * into *out (caller frees), its stderr to ours. Returns the exit status, -1
 * when it could not run; *ms from the spawn to the exit with stdout read.
 */
static int run_cmd(const char *bin, const char *const *args, char **envp, char **out, double *ms)
{
    const char *argv[16];
    int n = 0;
    argv[n++] = bin;
    for (int i = 0; args[i] && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    *out = NULL;
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    pid_t pid;
    int64_t t0 = rg_now_us();
    int rc = posix_spawn(&pid, bin, &fa, NULL, (char *const *)argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    if (rc != 0) {
        close(p[0]);
        errno = rc;
        return -1;
    }
    rg_buf b;
    rg_buf_init(&b);
    char chunk[65536];
    ssize_t k;
    while ((k = read(p[0], chunk, sizeof chunk)) != 0) {
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            break;
        rg_buf_append(&b, chunk, (size_t)k);
    }
    close(p[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (ms)
        *ms = (double)(rg_now_us() - t0) / 1000.0;
    *out = strndup(b.data ? b.data : "", b.len);
    rg_buf_destroy(&b);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* ---- reading a snapshot as an agent would ---- */

/* The ref of one snapshot line (between "ref=" and the next ']' or ','), into out. */
static int ref_of_line(const char *line, const char *eol, char *out, size_t len)
{
    const char *r = strstr(line, "ref=");
    if (!r || r > eol)
        return -1;
    r += 4;
    size_t n = strcspn(r, "],\n");
    if (n == 0 || n >= len || r + n > eol)
        return -1;
    memcpy(out, r, n);
    out[n] = '\0';
    return 0;
}

/* The ref on the first line that contains what, into out; 0 or -1. */
static int ref_on(const char *text, const char *what, char *out, size_t len)
{
    const char *p = text ? strstr(text, what) : NULL;
    if (!p)
        return -1;
    const char *bol = p;
    while (bol > text && bol[-1] != '\n')
        bol--;
    const char *eol = strchr(p, '\n');
    return ref_of_line(bol, eol ? eol : p + strlen(p), out, len);
}

/*
 * The ref of the checkbox line nearest (in lines) to the first line that
 * holds item, into out: the item's own checkbox in a list where each item
 * is a checkbox and its text. 0, or -1 with no such text or no checkbox.
 */
static int checkbox_near(const char *text, const char *item, char *out, size_t len)
{
    const char *at = text ? strstr(text, item) : NULL;
    if (!at)
        return -1;
    int item_line = 0, best = INT_MAX, line = 0;
    for (const char *p = text; p < at; p++)
        item_line += *p == '\n';
    for (const char *bol = text; *bol; line++) {
        const char *eol = strchr(bol, '\n');
        if (!eol)
            eol = bol + strlen(bol);
        const char *c = strstr(bol, "checkbox");
        char ref[64];
        int dist = abs(line - item_line);
        if (c && c < eol && dist < best && ref_of_line(bol, eol, ref, sizeof ref) == 0) {
            best = dist;
            snprintf(out, len, "%s", ref);
        }
        bol = *eol ? eol + 1 : eol;
    }
    return best == INT_MAX ? -1 : 0;
}

/* 1 when the checkbox line with ref shows it checked, in either side's notation. */
static int shows_checked(const char *text, const char *ref)
{
    char needle[80];
    snprintf(needle, sizeof needle, "ref=%s", ref);
    const char *p = text ? strstr(text, needle) : NULL;
    if (!p)
        return 0;
    const char *bol = p;
    while (bol > text && bol[-1] != '\n')
        bol--;
    const char *eol = strchr(p, '\n');
    size_t n = eol ? (size_t)(eol - bol) : strlen(bol);
    char buf[512];
    snprintf(buf, sizeof buf, "%.*s", (int)(n < sizeof buf ? n : sizeof buf - 1), bol);
    /* refgate: "(checked)"; agent-browser: "checked=true" */
    return strstr(buf, "checkbox") && (strstr(buf, "(checked") || strstr(buf, "checked=true"));
}

/* ---- the steps, per side ---- */

/* refgate through nginx: op with args as "key", "value" pairs (NULL-ended); the text when asked. */
static int rg_step(struct side *s, const char *op, const char *const *kv, char **text, double *ms)
{
    cJSON *args, *m = gwc_op_new(op, &args), *rep = NULL;
    for (int i = 0; kv && kv[i]; i += 2)
        cJSON_AddStringToObject(args, kv[i], kv[i + 1]);
    int rc = gwc_call(gwc_auth, &s->fd, s->sid, m, &rep, NULL, ms);
    cJSON_Delete(m);
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(rep, "ms");
    s->cur_server[s->cur_step] = cJSON_IsNumber(in) ? in->valuedouble : 0;
    if (rc == 0 && text) {
        const char *t = gwc_result_str(rep, "text");
        *text = strdup(t ? t : "");
    }
    cJSON_Delete(rep);
    return rc;
}

/* A CLI side: one process; its stdout into *text (or dropped). 0 on exit status 0. */
static int cli_step(struct side *s, const char *const *args, char **text, double *ms)
{
    char *out = NULL;
    int rc = run_cmd(s->bin, args, s->envp, &out, ms);
    if (rc != 0)
        fprintf(stderr, "loop: %s %s: exit %d: %.300s\n", side_names[s->id], args[0], rc,
                out ? out : "");
    if (text)
        *text = out;
    else
        free(out);
    return rc == 0 ? 0 : -1;
}

/*
 * The MCP side: one tools/call of name with arguments (consumed); the
 * result's text parts into *text (or dropped). 0 when the tool succeeded.
 */
static int mcp_call(struct side *s, const char *name, cJSON *args, char **text, double *ms)
{
    cJSON *req = cJSON_CreateObject(), *params = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "jsonrpc", "2.0");
    cJSON_AddNumberToObject(req, "id", ++s->next_id);
    cJSON_AddStringToObject(req, "method", "tools/call");
    cJSON_AddStringToObject(params, "name", name);
    cJSON_AddItemToObject(params, "arguments", args ? args : cJSON_CreateObject());
    cJSON_AddItemToObject(req, "params", params);
    char *line = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    static char buf[4 << 20];
    int64_t t0 = rg_now_us();
    int sent = line && fprintf(s->to, "%s\n", line) > 0 && fflush(s->to) == 0;
    free(line);
    int got = sent && fgets(buf, sizeof buf, s->from) != NULL;
    if (ms)
        *ms = (double)(rg_now_us() - t0) / 1000.0;
    cJSON *rep = got ? cJSON_Parse(buf) : NULL;
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(rep, "result");
    int rc = res && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "isError")) ? 0 : -1;
    if (rc < 0)
        fprintf(stderr, "loop: mcp %s: %.300s\n", name, got ? buf : "no reply");
    if (text) {
        rg_buf t;
        rg_buf_init(&t);
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(res, "content"))
        {
            const cJSON *tx = cJSON_GetObjectItemCaseSensitive(c, "text");
            if (cJSON_IsString(tx))
                rg_buf_printf(&t, "%s%s", t.len ? "\n" : "", tx->valuestring);
        }
        rg_buf_puts(&t, "");
        *text = rg_buf_steal(&t);
    }
    cJSON_Delete(rep);
    return rc;
}

static cJSON *mcp_args(const char *k1, const char *v1, const char *k2, const char *v2)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, k1, v1);
    if (k2)
        cJSON_AddStringToObject(a, k2, v2);
    return a;
}

/* The MCP side's step st: the tool calls of mcp.mjs's react loop. */
static int mcp_step(struct side *s, int st, const char *url, const char *ref, char **text,
                    double *ms)
{
    if (st == S_NAVIGATE)
        return mcp_call(s, "browser_navigate", mcp_args("url", url, NULL, NULL), NULL, ms);
    if (st == S_FILL) {
        cJSON *a = mcp_args("target", ref, "text", ITEM);
        cJSON_AddTrueToObject(a, "submit");
        return mcp_call(s, "browser_type", a, NULL, ms);
    }
    if (st == S_PRESS) { /* the Enter went with the type */
        *ms = 0;
        return 0;
    }
    if (st == S_CLICK)
        return mcp_call(s, "browser_click", mcp_args("target", ref, NULL, NULL), NULL, ms);
    return mcp_call(s, "browser_snapshot", NULL, text, ms);
}

/* One step of the loop on side s; ref is the target (as the snapshot spelled it). */
static int step(struct side *s, int st, const char *url, const char *ref, char **text, double *ms)
{
    char at[80];
    snprintf(at, sizeof at, "%s%s", s->id == SIDE_AB ? "@" : "", ref ? ref : "");
    s->cur_step = st;
    switch (s->id) {
    case SIDE_RG:
        if (st == S_NAVIGATE)
            return rg_step(s, "navigate", (const char *[]){"url", url, NULL}, NULL, ms);
        if (st == S_FILL)
            return rg_step(s, "fill", (const char *[]){"target", at, "value", ITEM, NULL}, NULL,
                           ms);
        if (st == S_PRESS)
            return rg_step(s, "press", (const char *[]){"target", at, "key", "Enter", NULL}, NULL,
                           ms);
        if (st == S_CLICK)
            return rg_step(s, "click", (const char *[]){"target", at, NULL}, NULL, ms);
        return rg_step(s, "observe", NULL, text, ms);
    case SIDE_MCP:
        return mcp_step(s, st, url, at, text, ms);
    case SIDE_CLI:
        if (st == S_NAVIGATE)
            return cli_step(s, (const char *[]){"navigate", url, NULL}, NULL, ms);
        if (st == S_FILL)
            return cli_step(s, (const char *[]){"fill", at, ITEM, NULL}, NULL, ms);
        if (st == S_PRESS)
            return cli_step(s, (const char *[]){"press", "Enter", "--target", at, NULL}, NULL, ms);
        if (st == S_CLICK)
            return cli_step(s, (const char *[]){"click", at, NULL}, NULL, ms);
        return cli_step(s, (const char *[]){"observe", NULL}, text, ms);
    default:
        if (st == S_NAVIGATE)
            return cli_step(s, (const char *[]){"open", url, NULL}, NULL, ms);
        if (st == S_FILL)
            return cli_step(s, (const char *[]){"fill", at, ITEM, NULL}, NULL, ms);
        if (st == S_PRESS)
            return cli_step(s, (const char *[]){"press", "Enter", NULL}, NULL, ms);
        if (st == S_CLICK)
            return cli_step(s, (const char *[]){"click", at, NULL}, NULL, ms);
        return cli_step(s, (const char *[]){"snapshot", "-i", NULL}, text, ms);
    }
}

static void show(const struct side *s, const char *what, const char *text)
{
    if (verbose)
        fprintf(stderr, "loop: %s %s:\n%s\n", side_names[s->id], what, text ? text : "(none)");
}

/*
 * One loop on side s: the seven steps, their times into t. 0 when every
 * step succeeded, the item showed up and its checkbox ended checked.
 */
static int loop_once(struct side *s, const char *url, double *t, size_t *observe_bytes)
{
    char box[64], check[64];
    char *snap = NULL, *added = NULL, *done = NULL;
    int rc = -1;
    if (step(s, S_NAVIGATE, url, NULL, NULL, &t[S_NAVIGATE]) < 0 ||
        step(s, S_OBSERVE, url, NULL, &snap, &t[S_OBSERVE]) < 0)
        goto out;
    show(s, "observe", snap);
    if (ref_on(snap, NEW_TODO, box, sizeof box) < 0) {
        fprintf(stderr, "loop: %s: no ref for the new-todo box in: %.300s\n", side_names[s->id],
                snap);
        goto out;
    }
    if (step(s, S_FILL, url, box, NULL, &t[S_FILL]) < 0 ||
        step(s, S_PRESS, url, box, NULL, &t[S_PRESS]) < 0 ||
        step(s, S_OBSERVE_ADDED, url, NULL, &added, &t[S_OBSERVE_ADDED]) < 0)
        goto out;
    show(s, "observe_added", added);
    *observe_bytes = strlen(added);
    if (checkbox_near(added, ITEM, check, sizeof check) < 0) {
        fprintf(stderr, "loop: %s: no item or no checkbox in: %.300s\n", side_names[s->id], added);
        goto out;
    }
    if (step(s, S_CLICK, url, check, NULL, &t[S_CLICK]) < 0 ||
        step(s, S_OBSERVE_CHECKED, url, NULL, &done, &t[S_OBSERVE_CHECKED]) < 0)
        goto out;
    show(s, "observe_checked", done);
    /* The item's checkbox, read again: React replaced its node, and a side may give it a new ref.
     */
    rc = checkbox_near(done, ITEM, check, sizeof check) == 0 && shows_checked(done, check) ? 0 : -1;
    if (rc < 0)
        fprintf(stderr, "loop: %s: the item's checkbox is not checked in: %.300s\n",
                side_names[s->id], done);
out:
    free(snap);
    free(added);
    free(done);
    return rc;
}

/* Round i of the timed loops (i < 0: the warm-up) on side s. */
static void run_round(struct side *s, const char *url, int i)
{
    double t[STEPS] = {0};
    size_t ob = 0;
    int rc = loop_once(s, url, t, &ob);
    if (i < 0) {
        if (rc < 0)
            fprintf(stderr, "loop: %s: the warm-up loop failed\n", side_names[s->id]);
        return;
    }
    s->ok += rc == 0;
    s->failed += rc < 0;
    double sum = 0;
    for (int k = 0; k < STEPS; k++) {
        s->step[k][i] = t[k];
        s->server[k][i] = s->cur_server[k];
        sum += t[k];
    }
    s->total[i] = sum;
    if (ob)
        s->observe_bytes = ob;
    s->loops = i + 1;
}

/* ---- starting and stopping the sides ---- */

static int start_rg(struct side *s)
{
    s->fd = http_connect(stack_port(gwc_st));
    if (s->fd < 0 || gwc_create(NULL, s->sid) < 0) {
        snprintf(s->error, sizeof s->error, "no session");
        return -1;
    }
    return 0;
}

static int start_cli(struct side *s, const char *bin)
{
    char url[160], key[200], *sid = NULL;
    snprintf(url, sizeof url, "REFGATE_URL=http://127.0.0.1:%d", stack_port(gwc_st));
    snprintf(key, sizeof key, "REFGATE_KEY=%s", stack_key(gwc_st, 0));
    s->bin = bin;
    s->envp = env_with((const char *[]){url, key, NULL});
    /* The session as a user makes it: `refgate-cli session create` prints its id. */
    if (access(bin, X_OK) < 0 ||
        cli_step(s, (const char *[]){"session", "create", NULL}, &sid, NULL) < 0) {
        snprintf(s->error, sizeof s->error, "%.200s: cannot create a session", bin);
        free(sid);
        return -1;
    }
    sid[strcspn(sid, "\r\n")] = '\0';
    snprintf(s->sid, sizeof s->sid, "%s", sid);
    free(sid);
    char env_sid[96];
    snprintf(env_sid, sizeof env_sid, "REFGATE_SESSION=%s", s->sid);
    env_free(s->envp);
    s->envp = env_with((const char *[]){url, key, env_sid, NULL});
    return 0;
}

static void stop_cli(struct side *s)
{
    if (s->ready)
        cli_step(s, (const char *[]){"close", NULL}, NULL, NULL);
}

/* `refgate-cli mcp` on pipes of ours, initialized: it makes its session at the first call. */
static int start_mcp(struct side *s, const char *bin)
{
    char url[160], key[200];
    snprintf(url, sizeof url, "REFGATE_URL=http://127.0.0.1:%d", stack_port(gwc_st));
    snprintf(key, sizeof key, "REFGATE_KEY=%s", stack_key(gwc_st, 0));
    s->envp = env_with((const char *[]){url, key, NULL});
    int to[2], from[2];
    if (access(bin, X_OK) < 0 || pipe2(to, O_CLOEXEC) < 0 || pipe2(from, O_CLOEXEC) < 0) {
        snprintf(s->error, sizeof s->error, "%.200s: cannot start", bin);
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to[0], 0);
    posix_spawn_file_actions_adddup2(&fa, from[1], 1);
    char *argv[] = {(char *)bin, "mcp", NULL};
    int rc = posix_spawn(&s->pid, bin, &fa, NULL, argv, s->envp);
    posix_spawn_file_actions_destroy(&fa);
    close(to[0]);
    close(from[1]);
    s->to = fdopen(to[1], "w");
    s->from = fdopen(from[0], "r");
    char line[4096];
    if (rc != 0 || !s->to || !s->from ||
        fprintf(s->to, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
                       "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                       "\"clientInfo\":{\"name\":\"refgate-bench\",\"version\":\"0\"}}}\n"
                       "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n") < 0 ||
        fflush(s->to) != 0 || !fgets(line, sizeof line, s->from) || !strstr(line, "\"result\"")) {
        snprintf(s->error, sizeof s->error, "%.200s mcp: no answer to initialize", bin);
        return -1;
    }
    return 0;
}

/* The end of its input: the server closes the session it made and exits (killed after 10 s). */
static void stop_mcp(struct side *s)
{
    if (s->to)
        fclose(s->to);
    if (s->pid > 0) {
        int status;
        for (int i = 0; i < 100 && waitpid(s->pid, &status, WNOHANG) == 0; i++)
            rg_sleep_ms(100);
        if (waitpid(s->pid, &status, WNOHANG) == 0) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, &status, 0);
        }
    }
    if (s->from)
        fclose(s->from);
}

/* agent-browser's scratch directory: its HOME, TMPDIR and socket directory. */
static char ab_dir[96];
static pid_t ab_daemon;

static pid_t ab_daemon_pid(void)
{
    char path[160], buf[32] = "";
    snprintf(path, sizeof path, "%s/sock/default.pid", ab_dir);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    if (!fgets(buf, sizeof buf, f))
        buf[0] = '\0';
    fclose(f);
    return (pid_t)atoi(buf);
}

/* Starts agent-browser's daemon and browser with `open about:blank`; its version into ver. */
static int start_ab(struct side *s, const char *bin, char *ver, size_t vlen)
{
    char home[128], tmp[128], sock[128];
    snprintf(ab_dir, sizeof ab_dir, "/tmp/refgate-bench-loop-%d", (int)getpid());
    snprintf(home, sizeof home, "HOME=%s", ab_dir);
    snprintf(tmp, sizeof tmp, "TMPDIR=%s", ab_dir);
    snprintf(sock, sizeof sock, "AGENT_BROWSER_SOCKET_DIR=%s/sock", ab_dir);
    s->bin = bin;
    s->envp = env_with((const char *[]){
        home, tmp, sock, "AGENT_BROWSER_EXECUTABLE_PATH=/usr/lib/chromium/chromium",
        "AGENT_BROWSER_ARGS=--no-sandbox", "AGENT_BROWSER_NO_VERSION_CHECK=1",
        /* a backstop should this bench die: the daemon quits when idle */
        "AGENT_BROWSER_IDLE_TIMEOUT_MS=120000", NULL});
    if (access(bin, X_OK) < 0 || mkdir(ab_dir, 0700) < 0) {
        snprintf(s->error, sizeof s->error, "%.160s: not installed (bench/peer/install.sh)", bin);
        return -1;
    }
    char *out = NULL;
    if (cli_step(s, (const char *[]){"--version", NULL}, &out, NULL) == 0) {
        out[strcspn(out, "\r\n")] = '\0';
        snprintf(ver, vlen, "%s", out);
    }
    free(out);
    /* The daemon detaches from the CLI that starts it: it becomes our child, reaped at the end. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    int64_t t0 = rg_now_ms();
    if (cli_step(s, (const char *[]){"open", "about:blank", NULL}, NULL, NULL) < 0) {
        snprintf(s->error, sizeof s->error, "its daemon did not start");
        return -1;
    }
    ab_daemon = ab_daemon_pid();
    fprintf(stderr, "loop: %s: daemon %d up in %lld ms\n", ver, (int)ab_daemon,
            (long long)(rg_now_ms() - t0));
    return 0;
}

/*
 * Stops agent-browser: `close` (its daemon and browser exit), then whatever
 * of the daemon's process tree is left after 5 s is killed by PID; the
 * scratch directory goes. Returns how many processes had to be killed.
 */
static int stop_ab(struct side *s)
{
    static pid_t tree[MAX_PROCS];
    int n = 0, killed = 0;
    pid_t d = ab_daemon ? ab_daemon : ab_daemon_pid();
    if (d > 0 && procs_running(d)) {
        tree[n++] = d;
        n += procs_descendants(d, tree + 1, MAX_PROCS - 1);
    }
    if (s->envp)
        cli_step(s, (const char *[]){"close", NULL}, NULL, NULL);
    for (int w = 0; w < 50; w++) {
        int alive = 0;
        for (int i = 0; i < n; i++) {
            waitpid(tree[i], NULL, WNOHANG); /* ours since the subreaper bit: reaped */
            alive += procs_running(tree[i]);
        }
        if (!alive)
            break;
        rg_sleep_ms(100);
    }
    for (int i = 0; i < n; i++) {
        if (procs_running(tree[i])) {
            kill(tree[i], SIGKILL);
            killed++;
        }
    }
    for (int w = 0; killed && w < 20; w++) {
        int alive = 0;
        for (int i = 0; i < n; i++) {
            waitpid(tree[i], NULL, WNOHANG);
            alive += procs_running(tree[i]);
        }
        if (!alive)
            break;
        rg_sleep_ms(100);
    }
    if (ab_dir[0])
        rg_rmtree(ab_dir);
    if (killed)
        fprintf(stderr, "loop: agent-browser: %d processes still up after close, killed\n", killed);
    return killed;
}

/* ---- the figures ---- */

/* {"median","p90","min","max"} of n values as a JSON member; sorts v. */
static void print_mp(const char *key, double *v, int n)
{
    double p90 = gwc_pct(v, n, 0.9), med = gwc_pct(v, n, 0.5);
    printf("\"%s\":{\"median\":%.3f,\"p90\":%.3f,\"min\":%.3f,\"max\":%.3f}", key, med, p90,
           n ? v[0] : 0, n ? v[n - 1] : 0);
}

static void print_side(struct side *s)
{
    printf("\"%s\":{", side_names[s->id]);
    if (!s->ready) {
        printf("\"error\":\"%s\"}", s->error);
        return;
    }
    printf("\"loops\":%d,\"ok\":%d,\"failed\":%d,\"observe_bytes\":%zu,", s->loops, s->ok,
           s->failed, s->observe_bytes);
    print_mp("total_ms", s->total, s->loops);
    printf(",\"steps\":{");
    for (int k = 0; k < STEPS; k++) {
        printf("%s", k ? "," : "");
        print_mp(step_names[k], s->step[k], s->loops);
    }
    printf("}");
    if (s->id == SIDE_RG) {
        printf(",\"server_steps\":{");
        for (int k = 0; k < STEPS; k++) {
            printf("%s", k ? "," : "");
            print_mp(step_names[k], s->server[k], s->loops);
        }
        printf("}");
    }
    printf("}");
}

static void usage(void)
{
    fprintf(stderr, "usage: loop [--quick] [--loops N] [--cli PATH] [--ab PATH]\n");
    exit(2);
}

/* BUILD/refgate-cli beside BUILD/bench/loop, into out. */
static void default_cli(const char *argv0, char *out, size_t len)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", argv0);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    snprintf(out, len, "%.3000s/../refgate-cli", dir);
}

static int start_sides(struct side *sides, const char *cli, const char *ab, char *ab_ver,
                       size_t vlen)
{
    for (int i = 0; i < SIDES; i++) {
        struct side *s = &sides[i];
        s->id = i;
        s->fd = -1;
        int rc = i == SIDE_RG    ? start_rg(s)
                 : i == SIDE_CLI ? start_cli(s, cli)
                 : i == SIDE_MCP ? start_mcp(s, cli)
                                 : start_ab(s, ab, ab_ver, vlen);
        s->ready = rc == 0;
        if (rc < 0)
            fprintf(stderr, "loop: %s left out: %s\n", side_names[i], s->error);
    }
    return sides[SIDE_RG].ready ? 0 : -1;
}

int main(int argc, char **argv)
{
    int loops = 30, quick = 0;
    char cli[PATH_MAX];
    const char *ab = AB_BIN;
    default_cli(argv[0], cli, sizeof cli);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            loops = 3, quick = 1;
        else if (!strcmp(argv[i], "--loops") && i + 1 < argc)
            loops = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cli") && i + 1 < argc)
            snprintf(cli, sizeof cli, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--ab") && i + 1 < argc)
            ab = argv[++i];
        else
            usage();
    }
    if (loops < 1 || loops > MAX_LOOPS)
        usage();
    verbose = getenv("RG_BENCH_VERBOSE") != NULL;
    signal(SIGPIPE, SIG_IGN);

    httpd *pages = httpd_start(FIXTURES);
    stack *st = pages ? stack_start(1, (const char *[]){"REFGATE_LOG_LEVEL=warn", NULL}) : NULL;
    if (!st) {
        fprintf(stderr, "loop: cannot start the stack\n");
        return 1;
    }
    gwc_init(st, "loop");
    char url[256], ab_ver[64] = "unknown";
    httpd_url(pages, "/todo.html", url, sizeof url);

    static struct side sides[SIDES];
    int rc = start_sides(sides, cli, ab, ab_ver, sizeof ab_ver);
    for (int i = 0; i < SIDES && rc == 0; i++) {
        struct side *s = &sides[i];
        s->total = calloc((size_t)loops, sizeof *s->total);
        for (int k = 0; k < STEPS; k++) {
            s->step[k] = calloc((size_t)loops, sizeof *s->step[k]);
            s->server[k] = calloc((size_t)loops, sizeof *s->server[k]);
        }
        if (s->ready)
            run_round(s, url, -1);
    }
    int64_t t0 = rg_now_ms();
    for (int r = 0; r < loops && rc == 0; r++) {
        for (int j = 0; j < SIDES; j++) {
            struct side *s = &sides[(r + j) % SIDES];
            if (s->ready)
                run_round(s, url, r);
        }
    }
    if (rc == 0)
        fprintf(stderr, "loop: %d rounds in %lld ms\n", loops, (long long)(rg_now_ms() - t0));

    int killed = stop_ab(&sides[SIDE_AB]);
    stop_cli(&sides[SIDE_CLI]);
    stop_mcp(&sides[SIDE_MCP]);
    if (sides[SIDE_RG].ready)
        gwc_close_session(sides[SIDE_RG].sid);
    if (rc == 0) {
        printf("{\"page\":\"%s/todo.html\",\"item\":\"%s\",\"rounds\":%d,\"quick\":%s,"
               "\"agent_browser\":\"%s\",\"agent_browser_killed\":%d,\"sides\":{",
               FIXTURES, ITEM, loops, quick ? "true" : "false", ab_ver, killed);
        for (int i = 0; i < SIDES; i++) {
            printf("%s", i ? "," : "");
            print_side(&sides[i]);
        }
        printf("}}\n");
    } else {
        fprintf(stderr, "loop: stopped early; the stack's logs are in %s\n", stack_dir(st));
    }
    for (int i = 0; i < SIDES; i++) {
        if (sides[i].fd >= 0)
            close(sides[i].fd);
        env_free(sides[i].envp);
        free(sides[i].total);
        for (int k = 0; k < STEPS; k++) {
            free(sides[i].step[k]);
            free(sides[i].server[k]);
        }
    }
    stack_stop(st);
    httpd_stop(pages);
    return rc == 0 ? 0 : 1;
}
