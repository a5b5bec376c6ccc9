/*
 * fcgi.c - FastCGI with libfcgi: N threads each in FCGX_Accept_r on the one
 * listening socket (no accept mutex: Linux does not need one, and with
 * nginx keep-alive connections it deadlocks). Headers are formatted with
 * snprintf (FCGX_FPrintF ignores %zu). Stopping shuts the listening socket
 * and the idle kept-alive connections so that every thread wakes up, while
 * requests being served run to their end.
 */
#define _GNU_SOURCE
#include "gateway/gw_int.h"

#include <fcgiapp.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define DRAIN_MAX (64u << 20) /* input read and dropped past the body limit */

struct fthread {
    gw *g;
    pthread_t t;
    FCGX_Request req;
    int busy;
};

static struct fthread *threads;
static int n_threads;

static const char *reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Status";
    }
}

#define BODY_FIRST 4096u /* first buffer when CONTENT_LENGTH is missing */

/*
 * Reads the body: at most max bytes kept; the rest is read and dropped.
 * The buffer is sized from CONTENT_LENGTH (nginx always sends it) and grows
 * by doubling only when the body runs past it, so a 300-byte command costs
 * 300 bytes, not the body limit: a malloc of the limit (1 MiB) per request
 * made glibc raise its mmap threshold past it and keep such blocks in every
 * thread's arena, where the pages they touched stayed resident.
 */
static char *read_body(FCGX_Request *r, size_t max, size_t *len, int *too_large, int *cut)
{
    const char *cl = FCGX_GetParam("CONTENT_LENGTH", r->envp);
    long want = cl ? strtol(cl, NULL, 10) : 0;
    *len = 0;
    *cut = 0;
    *too_large = want > 0 && (size_t)want > max;
    size_t first = BODY_FIRST < max ? BODY_FIRST : max;
    /* A body declared too large keeps only its head (the reply's format
       looks at whether there was one); the rest is drained. */
    size_t cap = want > 0 && !*too_large ? (size_t)want : first;
    size_t limit = *too_large ? cap : max;
    char *buf = malloc(cap + 1);
    if (!buf)
        return NULL;
    size_t total = 0, drained = 0;
    char sink[8192];
    for (;;) {
        if (total == cap && cap < limit) {
            size_t grown = cap * 2 < limit ? cap * 2 : limit;
            char *nb = realloc(buf, grown + 1);
            if (!nb) {
                free(buf);
                return NULL;
            }
            buf = nb, cap = grown;
        }
        int room = total < cap ? (int)(cap - total) : 0;
        int n = FCGX_GetStr(room ? buf + total : sink, room ? room : (int)sizeof sink, r->in);
        if (n <= 0)
            break;
        if (room) {
            total += (size_t)n;
            if (want > 0 && !*too_large && total >= (size_t)want)
                break;
        } else {
            *too_large = 1;
            drained += (size_t)n;
            if (drained > DRAIN_MAX) {
                *cut = 1;
                break;
            }
        }
    }
    buf[total] = '\0';
    *len = total;
    return buf;
}

/*
 * Ends r's connection with a reset, its unread input and all. libfcgi's own
 * close shuts the write side and then reads until the client stops sending,
 * which a client that never stops turns into a thread held for good (a
 * 256 MiB body sent straight to a worker was read to its end). The
 * descriptor is put on /dev/null rather than closed, so that its number
 * stays taken until libfcgi closes it; libfcgi's shutdown of it then fails
 * and it skips its reading.
 */
static void cut_connection(FCGX_Request *r)
{
    struct linger l = {.l_onoff = 1, .l_linger = 0};
    setsockopt(r->ipcFd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nul >= 0) {
        dup3(nul, r->ipcFd, O_CLOEXEC); /* closes the socket: the reset goes out */
        close(nul);
    }
}

static void serve_one(gw *g, FCGX_Request *r)
{
    size_t len;
    int too_large, cut;
    char *body = read_body(r, g->cfg.max_body, &len, &too_large, &cut);
    const char *uri = FCGX_GetParam("DOCUMENT_URI", r->envp);
    if (!uri)
        uri = FCGX_GetParam("SCRIPT_NAME", r->envp);
    char path[1024];
    const char *ru = FCGX_GetParam("REQUEST_URI", r->envp);
    snprintf(path, sizeof path, "%s", uri ? uri : ru ? ru : "/");
    char *q = strchr(path, '?');
    if (q)
        *q = '\0';
    gw_http_req req = {.method = FCGX_GetParam("REQUEST_METHOD", r->envp),
                       .path = path,
                       .content_type = FCGX_GetParam("CONTENT_TYPE", r->envp),
                       .accept = FCGX_GetParam("HTTP_ACCEPT", r->envp),
                       .authorization = FCGX_GetParam("HTTP_AUTHORIZATION", r->envp),
                       .request_id = FCGX_GetParam("HTTP_X_REQUEST_ID", r->envp),
                       .mcp_session = FCGX_GetParam("HTTP_MCP_SESSION_ID", r->envp),
                       .query = FCGX_GetParam("QUERY_STRING", r->envp),
                       .body = body,
                       .body_len = body ? len : 0,
                       .body_too_large = too_large};
    if (req.content_type && !*req.content_type)
        req.content_type = NULL;
    gw_http_resp resp;
    gw_handle_http(g, &req, &resp);
    char head[512];
    int n = snprintf(head, sizeof head, "Status: %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n",
                     resp.status, reason(resp.status), resp.content_type, resp.body.len);
    if (resp.retry_after_s > 0)
        n += snprintf(head + n, sizeof head - (size_t)n, "Retry-After: %d\r\n", resp.retry_after_s);
    if (resp.mcp_session[0])
        n += snprintf(head + n, sizeof head - (size_t)n, "Mcp-Session-Id: %s\r\n",
                      resp.mcp_session);
    if (req.request_id && strlen(req.request_id) < 128 && !strpbrk(req.request_id, "\r\n"))
        n += snprintf(head + n, sizeof head - (size_t)n, "X-Request-Id: %s\r\n", req.request_id);
    snprintf(head + n, sizeof head - (size_t)n, "\r\n");
    FCGX_PutS(head, r->out);
    if (resp.body.len)
        FCGX_PutStr(resp.body.data, (int)resp.body.len, r->out);
    FCGX_FFlush(r->out); /* the reply leaves now; the checkpoint follows */
    if (cut) { /* the reply's end records first: libfcgi writes them on close */
        FCGX_FClose(r->err);
        FCGX_FClose(r->out);
        cut_connection(r);
    }
    rg_buf_destroy(&resp.body);
    free(body);
    gw_after_run(g, &resp.after);
}

static void *thread_main(void *arg)
{
    struct fthread *t = arg;
    gw *g = t->g;
    for (;;) {
        pthread_mutex_lock(&g->mu);
        int stop = g->stopping;
        t->busy = 0;
        pthread_mutex_unlock(&g->mu);
        if (stop || FCGX_Accept_r(&t->req) < 0)
            break;
        pthread_mutex_lock(&g->mu);
        t->busy = 1;
        pthread_mutex_unlock(&g->mu);
        serve_one(g, &t->req);
        FCGX_Finish_r(&t->req);
    }
    FCGX_Free(&t->req, 1);
    return NULL;
}

int gw_serve(gw *g)
{
    if (FCGX_Init() != 0)
        return RG_EINTERNAL;
    g->listen_fd = FCGX_OpenSocket(g->cfg.fcgi_listen, 256);
    if (g->listen_fd < 0) {
        rg_log(RG_LOG_ERROR, "gateway", "cannot listen on %s", g->cfg.fcgi_listen);
        return RG_EUNAVAIL;
    }
    n_threads = g->cfg.threads;
    threads = calloc((size_t)n_threads, sizeof *threads);
    if (!threads)
        return RG_ENOMEM;
    for (int i = 0; i < n_threads; i++) {
        threads[i].g = g;
        FCGX_InitRequest(&threads[i].req, g->listen_fd, 0);
        if (pthread_create(&threads[i].t, NULL, thread_main, &threads[i]) != 0) {
            n_threads = i;
            break;
        }
    }
    rg_log(RG_LOG_INFO, "gateway", "worker %s serving FastCGI on %s with %d threads", g->worker,
           g->cfg.fcgi_listen, n_threads);
    for (int i = 0; i < n_threads; i++)
        pthread_join(threads[i].t, NULL);
    /* Under the lock gw_stop walks the threads and shuts the socket with:
       the signal thread may still be in that walk when the last of them
       has exited (a use after free that ASan caught at a SIGTERM). */
    pthread_mutex_lock(&g->mu);
    free(threads);
    threads = NULL;
    close(g->listen_fd); /* nor shut a number reused by then */
    g->listen_fd = -1;
    pthread_mutex_unlock(&g->mu);
    return 0;
}

void gw_stop(gw *g)
{
    pthread_mutex_lock(&g->mu);
    g->stopping = 1;
    FCGX_ShutdownPending();
    if (g->listen_fd >= 0)
        shutdown(g->listen_fd, SHUT_RDWR);
    /* Threads waiting on a kept-alive connection wake when it is shut;
       threads serving a request finish it first. */
    for (int i = 0; threads && i < n_threads; i++)
        if (!threads[i].busy && threads[i].req.ipcFd >= 0)
            shutdown(threads[i].req.ipcFd, SHUT_RDWR);
    pthread_mutex_unlock(&g->mu);
}
