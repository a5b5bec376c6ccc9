/*
 * mcp.c - `refgate-cli mcp`: refgate's MCP server (mcp/mcp.h) on stdio,
 * for agent hosts that launch a local process. One JSON-RPC message per
 * line on standard input, one reply per line on standard output; nothing
 * else is ever written to standard output.
 *
 * The tools' commands go to the gateway over HTTP, as the other commands of
 * refgate-cli do. The session is made on the first tool call that needs one
 * (or attached with --session SID) and, at the end of input, closed when
 * this process made it or parked when it was attached (--on-exit
 * park|close overrides). A line over MCP_MESSAGE_MAX is read through and
 * refused without being held in memory.
 *
 * Single-threaded: one request at a time, in order.
 */
#define _GNU_SOURCE
#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp/mcp.h"
#include "wire/wire.h"

typedef struct stdio_mcp {
    const cli_global *g;
    cli_url u;
    mcp_session s;
    const char *on_exit;
} stdio_mcp;

/* browser_file_upload's paths: the file on this machine, its bytes as bin. */
static cJSON *local_file(void *ud, const char *path, char *err, size_t errlen)
{
    (void)ud;
    return cli_upload_entry(path, err, errlen);
}

/* browser_storage_state's file: written whole, readable by its owner only
   (it holds the session's cookies). */
static int save_file(void *ud, const char *path, const void *data, size_t n, char *err,
                     size_t errlen)
{
    (void)ud;
    const char *text = data;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t done = 0;
    while (fd >= 0 && done < n) {
        ssize_t w = write(fd, text + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    int ok = fd >= 0 && done == n;
    int saved = errno;
    if (fd >= 0 && close(fd) < 0)
        ok = 0;
    if (!ok)
        snprintf(err, errlen, "cannot write %.300s: %s", path, strerror(saved ? saved : EIO));
    return ok ? 0 : -1;
}

/* browser_set_storage_state's file. */
static cJSON *load_json(void *ud, const char *path, char *err, size_t errlen)
{
    (void)ud;
    cJSON *v = NULL;
    return cli_json_file(path, &v, err, errlen) < 0 ? NULL : v;
}

/* The HTTP backend: one command on the session, or its DELETE (close). */
static int gw_call(void *ud, const char *sid, const char *method, const char *op, cJSON *args,
                   cJSON **reply, char *err, size_t errlen)
{
    stdio_mcp *m = ud;
    *reply = NULL;
    rg_buf path, body;
    rg_buf_init(&path);
    rg_buf_init(&body);
    rg_buf_puts(&path, "/v1/sessions");
    if (sid && sid[0]) {
        rg_buf_puts(&path, "/");
        cli_path_escape(&path, sid);
    }
    cJSON *cmd = NULL;
    if (op) {
        cmd = cJSON_CreateObject();
        cJSON_AddStringToObject(cmd, "op", op);
        cJSON_AddItemToObject(cmd, "args", args ? args : cJSON_CreateObject());
        args = NULL;
    }
    cJSON_Delete(args);
    int rc = path.failed ? RG_ENOMEM : 0;
    if (!rc && cmd && wire_mp_encode(cmd, &body) < 0)
        rc = RG_ENOMEM;
    cJSON_Delete(cmd);
    cli_http_resp resp;
    cli_http_resp_init(&resp);
    if (!rc) {
        cli_http_req req = {method, path.data, m->g->key, NULL, op ? body.data : NULL,
                            op ? body.len : 0};
        rc = cli_http_do(&m->u, &req, m->g->timeout_ms, &resp, err, errlen);
    }
    if (!rc)
        rc = cli_reply_decode(&resp, reply, err, errlen);
    if (rc == RG_ENOMEM)
        snprintf(err, errlen, "out of memory");
    cli_http_resp_destroy(&resp);
    rg_buf_destroy(&path);
    rg_buf_destroy(&body);
    return rc;
}

static void send_msg(cJSON *msg)
{
    char *s = msg ? cJSON_PrintUnformatted(msg) : NULL;
    if (s) {
        fputs(s, stdout);
        fputc('\n', stdout);
        fflush(stdout);
        free(s);
    }
    cJSON_Delete(msg);
}

/*
 * The next line of f into b (without its end of line, NUL-terminated). A
 * line over MCP_MESSAGE_MAX is read to its end and dropped, with *too_long
 * set: memory stays bounded whatever comes in. 0 at the end of input.
 */
static int read_line(FILE *f, rg_buf *b, int *too_long)
{
    b->len = 0;
    b->failed = 0;
    char chunk[65536];
    for (;;) {
        if (!fgets(chunk, sizeof chunk, f)) { /* the end: a last line without its newline */
            if (b->len == 0 && !*too_long)
                return 0;
            rg_buf_puts(b, "");
            return 1;
        }
        size_t n = strlen(chunk);
        int end = n > 0 && chunk[n - 1] == '\n';
        if (!*too_long) {
            rg_buf_append(b, chunk, n - (size_t)end);
            if (b->len > MCP_MESSAGE_MAX) {
                *too_long = 1;
                rg_buf_destroy(b);
                rg_buf_init(b);
            }
        }
        if (end) {
            if (b->len > 0 && b->data[b->len - 1] == '\r')
                b->len--;
            rg_buf_puts(b, ""); /* the NUL */
            return 1;
        }
    }
}

/* At the end of input: the session closed or parked, as --on-exit says. */
static void leave(stdio_mcp *m)
{
    if (!m->s.sid[0])
        return;
    const char *how = m->on_exit ? m->on_exit : m->s.made ? "close" : "park";
    char err[512];
    cJSON *reply = NULL;
    int rc = !strcmp(how, "close")
                 ? gw_call(m, m->s.sid, "DELETE", NULL, NULL, &reply, err, sizeof err)
                 : gw_call(m, m->s.sid, "POST", "session.park", NULL, &reply, err, sizeof err);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(reply, "error");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
    if (rc < 0)
        cli_error(stderr, "could not %s session %s: %s", how, m->s.sid, err);
    else if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok")))
        cli_error(stderr, "could not %s session %s: %s", how, m->s.sid,
                  cJSON_IsString(msg) ? msg->valuestring : "error");
    cJSON_Delete(reply);
}

int cli_mcp_main(const cli_global *g, int argc, char **argv)
{
    stdio_mcp m = {.g = g,
                   .s = {.call = gw_call,
                         .local_file = local_file,
                         .save_file = save_file,
                         .load_json = load_json}};
    m.s.ud = &m;
    char err[512];
    if (g->session)
        snprintf(m.s.sid, sizeof m.s.sid, "%s", g->session);
    for (int i = 0; i < argc; i++) {
        if ((!strcmp(argv[i], "--session") || !strcmp(argv[i], "-s")) && i + 1 < argc) {
            snprintf(m.s.sid, sizeof m.s.sid, "%s", argv[++i]);
        } else if (!strcmp(argv[i], "--on-exit") && i + 1 < argc &&
                   (!strcmp(argv[i + 1], "park") || !strcmp(argv[i + 1], "close"))) {
            m.on_exit = argv[++i];
        } else {
            cli_error(stderr, "mcp: unknown option %.60s (--session SID, --on-exit park|close)",
                      argv[i]);
            return CLI_EXIT_USAGE;
        }
    }
    if (cli_url_parse(g->url, &m.u, err, sizeof err) < 0 || !g->key) {
        cli_error(stderr, "%s", g->key ? err : "no API key: set REFGATE_KEY or pass --key K");
        return CLI_EXIT_USAGE;
    }
    rg_buf line;
    rg_buf_init(&line);
    int more = 1;
    while (more) {
        int too_long = 0;
        more = read_line(stdin, &line, &too_long);
        if (too_long)
            send_msg(mcp_error(NULL, MCP_INVALID, "invalid request: the message is over 8 MiB"));
        else if (line.failed)
            send_msg(mcp_error(NULL, MCP_INVALID, "invalid request: out of memory for it"));
        else if (line.len > 0)
            send_msg(mcp_handle(&m.s, line.data));
    }
    rg_buf_destroy(&line);
    leave(&m);
    return CLI_EXIT_OK;
}
