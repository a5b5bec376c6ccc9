/*
 * test_nginx_conf.c - the nginx front, rendered from nginx/nginx.conf.in:
 *
 * - the local configuration exactly as `make run` renders it
 *   (scripts/run.sh --config-only) passes `nginx -t`, routes the session id
 *   through 200 buckets to (owner, backup) groups that the FastCGI and
 *   WebSocket sides share, and takes its body limit from REFGATE_MAX_BODY_BYTES;
 * - the docker configuration in nginx/docker/ is what the generator renders
 *   today (no hand edits, no drift) and passes `nginx -t` with the compose
 *   service names resolving (a private mount namespace with its own
 *   /etc/hosts, so the committed file itself is checked); the live view's
 *   page is not copied there: docker-compose.yml mounts nginx/view.html;
 * - the bodies of nginx's own errors are docs/protocol.md reply maps, in JSON and
 *   in msgpack;
 * - a real nginx in front of two fake workers (libfcgi, and a socket that
 *   answers WebSocket upgrades) keeps a session's HTTP commands and its
 *   WebSocket on one worker, moves them together to the other worker when
 *   theirs stops, passes Authorization and X-Request-Id, and answers 413,
 *   404 and 503 as reply maps in the client's format.
 *
 * Runs from the repository root; needs nginx (scripts/deps.sh installs it).
 * Every process it starts is stopped by PID.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcgiapp.h>
#include <msgpack.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "session/session.h"
#include "tests/support/net.h"
#include "tests/support/support.h"

static const char *const ERROR_CODES[] = {"bad_request", "not_found",   "payload_too_large",
                                          "internal",    "unavailable", "timeout"};
#define N_ERROR_CODES (sizeof ERROR_CODES / sizeof ERROR_CODES[0])

/* ---- small helpers ---------------------------------------------------------------- */

/* Each test's scratch directory; the teardown removes it, pass or fail. */
static char g_dir[64];

/* A fresh g_dir under /tmp that nginx's workers (nobody) may enter. */
static const char *make_tmpdir(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/refgate-test-nginx-XXXXXX");
    assert_non_null(mkdtemp(g_dir));
    assert_int_equal(chmod(g_dir, 0755), 0);
    return g_dir;
}

static void remove_tree(const char *dir)
{
    if (getenv("RG_KEEP_STACK"))
        fprintf(stderr, "test_nginx_conf: kept %s\n", dir);
    else if (rg_rmtree(dir) != 0)
        fprintf(stderr, "test_nginx_conf: could not remove %s\n", dir);
}

static void print_file(const char *path)
{
    char *s = support_slurp(path, NULL);
    if (s) {
        fprintf(stderr, "---- %s\n%s----\n", path, s);
        free(s);
    }
}

/*
 * Runs argv with env changes ("NAME=VALUE" sets, "NAME" unsets; NULL-terminated,
 * may be NULL), stdout and stderr into log. Returns the exit status, or -1.
 */
static int run(const char *const argv[], const char *const env[], const char *log)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        for (size_t i = 0; env && env[i]; i++) {
            const char *eq = strchr(env[i], '=');
            if (eq) {
                char name[128];
                snprintf(name, sizeof name, "%.*s", (int)(eq - env[i]), env[i]);
                setenv(name, eq + 1, 1);
            } else {
                unsetenv(env[i]);
            }
        }
        FILE *f = freopen(log, "w", stdout);
        if (!f || dup2(STDOUT_FILENO, STDERR_FILENO) < 0)
            _exit(126);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Like run(), and on a non-zero status prints the log before failing. */
static void run_ok(const char *const argv[], const char *const env[], const char *log)
{
    int st = run(argv, env, log);
    if (st != 0) {
        print_file(log);
        fail_msg("%s exited with %d", argv[0], st);
    }
}

/* The text of the block that starts at the line containing head, to its closing brace. */
static char *block(const char *conf, const char *head)
{
    const char *p = strstr(conf, head);
    if (!p)
        fail_msg("no \"%s\" in the configuration", head);
    const char *q = strchr(p, '{');
    assert_non_null(q);
    int depth = 0;
    const char *e = q;
    for (; *e; e++) {
        if (*e == '{')
            depth++;
        else if (*e == '}' && --depth == 0)
            break;
    }
    assert_int_equal(*e, '}');
    return strndup(p, (size_t)(e - p + 1));
}

static void assert_contains(const char *hay, const char *needle)
{
    if (!strstr(hay, needle))
        fail_msg("expected \"%s\" in:\n%s", needle, hay);
}

/*
 * The routing: split_clients sends the session key to one of 200 buckets of
 * 0.5%, each naming a route "wA_wB" (owner, backup); for every route there
 * is a FastCGI and a WebSocket group with worker A first and worker B as its
 * one backup, fcgi[i-1] and ws[i-1] being worker i's addresses. Every
 * worker owns some buckets.
 */
static void check_routes(const char *conf, const char *const fcgi[], const char *const ws[],
                         size_t n)
{
    char *b = block(conf, "split_clients \"$rg_session\" $rg_route {");
    int buckets = 0, rest = 0, owns[16] = {0};
    for (char *line = strchr(b, '\n'); line; line = strchr(line + 1, '\n')) {
        char pct[16], route[32];
        if (sscanf(line + 1, " %15s %31[^;];", pct, route) != 2)
            continue;
        int o = 0, k = 0;
        if (sscanf(route, "w%d_w%d", &o, &k) != 2 && (n != 1 || sscanf(route, "w%d", &o) != 1))
            fail_msg("split_clients: a route \"%s\" that names no owner and backup", route);
        assert_true(o >= 1 && (size_t)o <= n && k >= 0 && (size_t)k <= n && o != k);
        /* The workers mint session ids for this very owner (session/route.c). */
        if (sess_route_owner(buckets, (int)n) + 1 != o)
            fail_msg("bucket %d: nginx sends it to w%d, session/route.c says w%d", buckets, o,
                     sess_route_owner(buckets, (int)n) + 1);
        owns[o]++;
        if (!strcmp(pct, "*"))
            rest++;
        else
            assert_string_equal(pct, "0.5%");
        buckets++;
        for (int proto = 0; proto < 2; proto++) {
            char head[64], line1[128], line2[128];
            const char *const *addr = proto ? ws : fcgi;
            snprintf(head, sizeof head, "upstream rg_%s_%s {", proto ? "ws" : "fcgi", route);
            char *g = block(conf, head);
            snprintf(line1, sizeof line1, "server %s max_fails=0;", addr[o - 1]);
            const char *p1 = strstr(g, line1);
            if (!p1)
                fail_msg("no \"%s\" in:\n%s", line1, g);
            if (k) {
                snprintf(line2, sizeof line2, "server %s max_fails=0 backup;", addr[k - 1]);
                const char *p2 = strstr(g, line2);
                if (!p2 || p2 < p1)
                    fail_msg("no \"%s\" after the owner in:\n%s", line2, g);
                assert_null(strstr(p2 + 1, "server "));
            }
            if (!proto)
                assert_contains(g, "keepalive ");
            assert_null(strstr(g, "hash"));
            free(g);
        }
    }
    assert_int_equal(buckets, 200);
    assert_int_equal(rest, 1);
    for (size_t i = 1; i <= n; i++)
        assert_true(owns[i] > 0);
    assert_null(strstr(conf, " consistent;")); /* see the template: it would split sessions */
    free(b);
}

/* What every rendering must say, local or docker. */
static void check_common(const char *conf)
{
    /* The session id from the path (or an MCP request's Mcp-Session-Id header) is the
       hash key; others spread by request id. */
    assert_contains(conf, "map \"$uri|$http_mcp_session_id\" $rg_sid {");
    assert_contains(conf, "\"~^/v1/sessions/([^/|]+)(/ws)?\\|\" $1;");
    assert_contains(conf, "\"~^/v1/mcp\\|([A-Za-z0-9_-]{1,64})$\" $1;");
    assert_contains(conf, "fastcgi_param HTTP_MCP_SESSION_ID $http_mcp_session_id if_not_empty;");
    char *mcp = block(conf, "location = /v1/mcp {");
    assert_contains(mcp, "fastcgi_pass rg_fcgi_$rg_route;");
    free(mcp);
    assert_contains(conf, "\"\" $request_id;");
    char *ws = block(conf, "location ~ ^/v1/sessions/[^/]+/ws$ {");
    assert_contains(ws, "proxy_pass http://rg_ws_$rg_route;");
    assert_contains(ws, "proxy_http_version 1.1;");
    assert_contains(ws, "proxy_set_header Upgrade $http_upgrade;");
    assert_contains(ws, "proxy_set_header Connection $rg_connection;");
    assert_contains(ws, "proxy_read_timeout 3600s;");
    free(ws);
    assert_contains(conf, "fastcgi_next_upstream error timeout;");
    assert_contains(conf, "fastcgi_keep_conn on;");
    assert_contains(conf, "fastcgi_param HTTP_X_REQUEST_ID $rg_request_id;");
    assert_contains(conf, "error_page 413 /_rg/error/payload_too_large.$rg_error_ext;");
    assert_null(strstr(conf, "@")); /* every placeholder filled in */
}

static int nginx_t(const char *prefix, const char *conf, const char *log)
{
    const char *argv[] = {"nginx", "-t", "-q", "-p", prefix, "-c", conf, "-e", "stderr", NULL};
    return run(argv, NULL, log);
}

/* ---- the local configuration, as make run renders it ------------------------------- */

static char *render_local(const char *run_dir, const char *const extra_env[], char *conf_path,
                          size_t len)
{
    char log[300], env_run[300];
    snprintf(log, sizeof log, "%s/render.log", run_dir);
    snprintf(env_run, sizeof env_run, "REFGATE_RUN_DIR=%s", run_dir);
    const char *env[16] = {env_run};
    size_t n = 1;
    for (size_t i = 0; extra_env && extra_env[i]; i++)
        env[n++] = extra_env[i];
    const char *argv[] = {"bash", "scripts/run.sh", "--config-only", NULL};
    run_ok(argv, env, log);
    snprintf(conf_path, len, "%s/nginx/nginx.conf", run_dir);
    char *conf = support_slurp(conf_path, NULL);
    assert_non_null(conf);
    return conf;
}

static void test_local_config(void **state)
{
    (void)state;
    char conf_path[300], prefix[300], log[300];
    const char *dir = make_tmpdir();
    const char *env[] = {"REFGATE_WORKERS=3",
                         "REFGATE_HTTP_PORT=18181",
                         "REFGATE_FCGI_BASE_PORT=19100",
                         "REFGATE_WS_BASE_PORT=19200",
                         "REFGATE_MAX_BODY_BYTES=2097152",
                         NULL};
    char *conf = render_local(dir, env, conf_path, sizeof conf_path);
    snprintf(prefix, sizeof prefix, "%s/nginx/", dir);
    snprintf(log, sizeof log, "%s/nginx-t.log", dir);
    if (nginx_t(prefix, conf_path, log) != 0) {
        print_file(log);
        fail_msg("nginx -t rejected %s", conf_path);
    }
    check_common(conf);
    const char *fcgi[] = {"127.0.0.1:19101", "127.0.0.1:19102", "127.0.0.1:19103"};
    const char *ws[] = {"127.0.0.1:19201", "127.0.0.1:19202", "127.0.0.1:19203"};
    check_routes(conf, fcgi, ws, 3);
    assert_contains(conf, "listen 127.0.0.1:18181;");
    assert_contains(conf, "client_max_body_size 2097152;");
    /* Everything of nginx's lives under the run directory. */
    char want[400];
    snprintf(want, sizeof want, "pid %s/nginx/nginx.pid;", dir);
    assert_contains(conf, want);
    snprintf(want, sizeof want, "client_body_temp_path %s/nginx/body;", dir);
    assert_contains(conf, want);
    snprintf(want, sizeof want, "access_log %s/nginx/access.log refgate;", dir);
    assert_contains(conf, want);
    free(conf);

    /* Without REFGATE_MAX_BODY_BYTES: the gateway's default, 1 MiB; two workers. */
    const char *env_default[] = {"REFGATE_MAX_BODY_BYTES", "REFGATE_WORKERS",
                                 "REFGATE_FCGI_BASE_PORT", "REFGATE_WS_BASE_PORT", NULL};
    conf = render_local(dir, env_default, conf_path, sizeof conf_path);
    assert_contains(conf, "client_max_body_size 1048576;");
    const char *fcgi2[] = {"127.0.0.1:9101", "127.0.0.1:9102"};
    const char *ws2[] = {"127.0.0.1:9201", "127.0.0.1:9202"};
    check_routes(conf, fcgi2, ws2, 2);
    free(conf);
}

/* ---- the docker configuration ---------------------------------------------------- */

static void assert_same_file(const char *a, const char *b)
{
    size_t la, lb;
    char *x = support_slurp(a, &la), *y = support_slurp(b, &lb);
    if (!x)
        fail_msg("%s is missing: render it with sh scripts/nginx-conf.sh --docker nginx/docker", a);
    assert_non_null(y);
    if (la != lb || memcmp(x, y, la) != 0)
        fail_msg("%s is not what the template renders today: run "
                 "sh scripts/nginx-conf.sh --docker nginx/docker",
                 a);
    free(x);
    free(y);
}

static void test_docker_config(void **state)
{
    (void)state;
    char out[200], log[300], a[300], b[300];
    const char *dir = make_tmpdir();
    snprintf(out, sizeof out, "%s/docker", dir);
    snprintf(log, sizeof log, "%s/render.log", dir);
    const char *argv[] = {"sh", "scripts/nginx-conf.sh", "--docker", out, NULL};
    run_ok(argv, NULL, log);

    /* The committed files are exactly today's rendering. */
    assert_same_file("nginx/docker/nginx.conf", (snprintf(b, sizeof b, "%s/nginx.conf", out), b));
    for (size_t i = 0; i < N_ERROR_CODES; i++) {
        for (int j = 0; j < 2; j++) {
            const char *ext = j ? "msgpack" : "json";
            snprintf(a, sizeof a, "nginx/docker/errors/%s.%s", ERROR_CODES[i], ext);
            snprintf(b, sizeof b, "%s/errors/%s.%s", out, ERROR_CODES[i], ext);
            assert_same_file(a, b);
        }
    }

    /* The live view's page is not copied: docker-compose.yml mounts the
       one source file where the configuration (whose CSP hashes its
       script, checked above with nginx.conf) serves it from. */
    assert_int_equal(access("nginx/docker/view.html", F_OK), -1);
    assert_int_equal(access((snprintf(b, sizeof b, "%s/view.html", out), b), F_OK), -1);
    char *compose = support_slurp("docker-compose.yml", NULL);
    assert_non_null(compose);
    assert_contains(compose, "- ./nginx/view.html:/etc/refgate-nginx/view.html:ro");
    free(compose);

    char *conf = support_slurp("nginx/docker/nginx.conf", NULL);
    assert_non_null(conf);
    check_common(conf);
    const char *fcgi[] = {"worker1:9000", "worker2:9000", "worker3:9000"};
    const char *ws[] = {"worker1:9001", "worker2:9001", "worker3:9001"};
    check_routes(conf, fcgi, ws, 3);
    assert_contains(conf, "listen 8080;");
    assert_contains(conf, "client_max_body_size 1048576;");
    assert_contains(conf, "alias /etc/refgate-nginx/errors/$rg_error.$rg_ext;");
    assert_contains(conf, "alias /etc/refgate-nginx/view.html;");
    assert_contains(conf, "script-src 'sha256-");
    free(conf);

    /*
     * nginx -t resolves worker1..worker3 as it would inside compose. In a
     * private mount namespace, /etc/hosts maps them to 127.0.0.1 and
     * /var/lib/nginx (the docker state directory) is a scratch directory,
     * so the committed file is checked as it is and this machine is left
     * alone. Without namespaces (not root), the same template rendered with
     * numeric hosts is checked instead, and the test says so.
     */
    char hosts[300], state_dir[300], script[2048];
    snprintf(hosts, sizeof hosts, "%s/hosts", dir);
    snprintf(state_dir, sizeof state_dir, "%s/state", dir);
    assert_int_equal(mkdir(state_dir, 0755), 0);
    FILE *f = fopen(hosts, "w");
    assert_non_null(f);
    fprintf(f, "127.0.0.1 localhost\n127.0.0.1 worker1 worker2 worker3\n");
    fclose(f);
    const char *probe[] = {"unshare", "--mount", "true", NULL};
    snprintf(log, sizeof log, "%s/nginx-t.log", dir);
    if (run(probe, NULL, log) == 0) {
        snprintf(script, sizeof script,
                 "mount --bind '%s' /etc/hosts && mkdir -p /var/lib/nginx && "
                 "mount --bind '%s' /var/lib/nginx && "
                 "exec nginx -t -q -p '%s/' -c \"$PWD/nginx/docker/nginx.conf\" -e stderr",
                 hosts, state_dir, dir);
        const char *ns[] = {"unshare", "--mount", "sh", "-c", script, NULL};
        if (run(ns, NULL, log) != 0) {
            print_file(log);
            fail_msg("nginx -t rejected nginx/docker/nginx.conf");
        }
    } else {
        fprintf(stderr, "test_nginx_conf: no mount namespace here (not root?): checking the "
                        "docker template with numeric hosts instead of nginx/docker/nginx.conf\n");
        char numeric[200], prefix[200];
        snprintf(numeric, sizeof numeric, "%s/numeric", dir);
        snprintf(prefix, sizeof prefix, "%s/", dir);
        const char *r[] = {"sh",         "scripts/nginx-conf.sh", "--docker", "--host",
                           "127.0.0.%d", "--state-dir",           state_dir,  numeric,
                           NULL};
        run_ok(r, NULL, log);
        snprintf(a, sizeof a, "%s/nginx.conf", numeric);
        if (nginx_t(prefix, a, log) != 0) {
            print_file(log);
            fail_msg("nginx -t rejected the docker template");
        }
    }
}

/* ---- the error bodies ---------------------------------------------------------------- */

static const msgpack_object *map_get(const msgpack_object *m, const char *key)
{
    assert_int_equal(m->type, MSGPACK_OBJECT_MAP);
    for (uint32_t i = 0; i < m->via.map.size; i++) {
        const msgpack_object *k = &m->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(key) &&
            memcmp(k->via.str.ptr, key, k->via.str.size) == 0)
            return &m->via.map.ptr[i].val;
    }
    return NULL;
}

static int str_is(const msgpack_object *o, const char *s)
{
    return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size == strlen(s) &&
           memcmp(o->via.str.ptr, s, o->via.str.size) == 0;
}

/* A msgpack body is exactly one reply map { ok: false, error: { code, kind, message }, ms }. */
static void check_msgpack_reply(const char *data, size_t len, const char *code)
{
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    assert_int_equal(msgpack_unpack_next(&u, data, len, &off), MSGPACK_UNPACK_SUCCESS);
    assert_int_equal(off, len);
    const msgpack_object *ok = map_get(&u.data, "ok");
    assert_non_null(ok);
    assert_int_equal(ok->type, MSGPACK_OBJECT_BOOLEAN);
    assert_false(ok->via.boolean);
    const msgpack_object *ms = map_get(&u.data, "ms");
    assert_non_null(ms);
    assert_int_equal(ms->type, MSGPACK_OBJECT_FLOAT64);
    const msgpack_object *err = map_get(&u.data, "error");
    assert_non_null(err);
    assert_true(str_is(map_get(err, "code"), code));
    assert_true(str_is(map_get(err, "kind"), "permanent") ||
                str_is(map_get(err, "kind"), "transient"));
    const msgpack_object *msg = map_get(err, "message");
    assert_non_null(msg);
    assert_int_equal(msg->type, MSGPACK_OBJECT_STR);
    assert_true(msg->via.str.size > 10);
    const msgpack_object *retry = map_get(err, "retry_after_ms");
    if (strcmp(code, "unavailable") == 0) {
        assert_non_null(retry);
        assert_int_equal(retry->type, MSGPACK_OBJECT_POSITIVE_INTEGER);
        assert_true(retry->via.u64 > 0);
    }
    msgpack_unpacked_destroy(&u);
}

static void check_json_reply(const char *s, const char *code)
{
    char want[96];
    assert_true(strncmp(s, "{\"ok\":false,\"error\":{\"code\":\"", 29) == 0);
    snprintf(want, sizeof want, "\"code\":\"%s\"", code);
    assert_contains(s, want);
    assert_contains(s, "\"kind\":\"");
    assert_contains(s, "\"message\":\"");
    assert_contains(s, "\"ms\":0.0}");
}

static void test_error_bodies(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_ERROR_CODES; i++) {
        char path[200];
        size_t len;
        snprintf(path, sizeof path, "nginx/docker/errors/%s.msgpack", ERROR_CODES[i]);
        char *mp = support_slurp(path, &len);
        assert_non_null(mp);
        check_msgpack_reply(mp, len, ERROR_CODES[i]);
        free(mp);
        snprintf(path, sizeof path, "nginx/docker/errors/%s.json", ERROR_CODES[i]);
        char *js = support_slurp(path, NULL);
        assert_non_null(js);
        check_json_reply(js, ERROR_CODES[i]);
        free(js);
    }
}

/* ---- a live nginx in front of fake workers ------------------------------------------- */

/*
 * A fake worker: FastCGI through libfcgi (a few threads on the one socket,
 * as the gateway's, each holding the connection nginx keeps alive: nginx
 * keeps some per upstream group, and a worker is in the groups it owns and
 * in those it backs up) answering "worker=<id>" and the parameters it got;
 * and a WebSocket port that answers an upgrade with 101 and X-Worker: <id>.
 * fake_stop() closes both, as a worker that died.
 */
#define FAKE_THREADS 4

typedef struct fake fake;

typedef struct fake_thread {
    fake *f;
    FCGX_Request req;
    pthread_t t;
} fake_thread;

struct fake {
    char id[8];
    int fcgi_fd, ws_fd;
    fake_thread fcgi[FAKE_THREADS];
    pthread_t ws_thread;
    int running;
};

static int listen_on(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    assert_true(fd >= 0);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 64) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int free_port(void)
{
    int fd = listen_on(0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    socklen_t l = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* Listens on base+1..base+n for some base; fds[i] is base+1+i. Returns base. */
static int listen_range(int n, int fds[])
{
    unsigned seed = (unsigned)getpid() ^ (unsigned)time(NULL);
    for (int attempt = 0; attempt < 200; attempt++) {
        int base = 20000 + (int)(rand_r(&seed) % 30000);
        int i;
        for (i = 0; i < n; i++) {
            fds[i] = listen_on(base + 1 + i);
            if (fds[i] < 0)
                break;
        }
        if (i == n)
            return base;
        while (i-- > 0)
            close(fds[i]);
    }
    fail_msg("no free range of %d ports", n);
    return -1;
}

static const char *param(fake_thread *t, const char *name)
{
    const char *v = FCGX_GetParam(name, t->req.envp);
    return v ? v : "";
}

static void *fcgi_main(void *arg)
{
    fake_thread *t = arg;
    fake *f = t->f;
    while (FCGX_Accept_r(&t->req) == 0) {
        char buf[4096];
        long got = 0;
        int k;
        while ((k = FCGX_GetStr(buf, sizeof buf, t->req.in)) > 0)
            got += k;
        char out[2048];
        int n = snprintf(out, sizeof out,
                         "Status: 200 OK\r\nContent-Type: text/plain\r\n\r\n"
                         "worker=%s\nmethod=%s\nuri=%s\ndocument_uri=%s\nauth=%s\nrid=%s\n"
                         "accept=%s\ncontent_type=%s\nbytes=%ld\n",
                         f->id, param(t, "REQUEST_METHOD"), param(t, "REQUEST_URI"),
                         param(t, "DOCUMENT_URI"), param(t, "HTTP_AUTHORIZATION"),
                         param(t, "HTTP_X_REQUEST_ID"), param(t, "HTTP_ACCEPT"),
                         param(t, "CONTENT_TYPE"), got);
        FCGX_PutStr(out, n, t->req.out);
        FCGX_Finish_r(&t->req);
    }
    return NULL;
}

/* The value of header name in an HTTP head (case-insensitive), into out. */
static int header(const char *head, const char *name, char *out, size_t len)
{
    size_t nl = strlen(name);
    for (const char *p = strstr(head, "\r\n"); p; p = strstr(p + 2, "\r\n")) {
        const char *h = p + 2;
        if (strncasecmp(h, name, nl) == 0 && h[nl] == ':') {
            h += nl + 1;
            while (*h == ' ')
                h++;
            size_t n = strcspn(h, "\r\n");
            snprintf(out, len, "%.*s", (int)n, h);
            return 1;
        }
    }
    return 0;
}

static void *ws_main(void *arg)
{
    fake *f = arg;
    for (;;) {
        int c = accept(f->ws_fd, NULL, NULL);
        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            break;
        }
        struct timeval tv = {5, 0};
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        char req[8192];
        size_t have = 0;
        ssize_t n;
        while (have < sizeof req - 1 && (n = read(c, req + have, sizeof req - 1 - have)) > 0) {
            have += (size_t)n;
            req[have] = '\0';
            if (strstr(req, "\r\n\r\n"))
                break;
        }
        req[have] = '\0';
        char upgrade[64] = "", connection[64] = "", rid[160] = "", auth[160] = "";
        header(req, "Upgrade", upgrade, sizeof upgrade);
        header(req, "Connection", connection, sizeof connection);
        header(req, "X-Request-Id", rid, sizeof rid);
        header(req, "Authorization", auth, sizeof auth);
        char resp[1024];
        int len;
        if (strcasecmp(upgrade, "websocket") == 0 && strcasecmp(connection, "upgrade") == 0)
            len = snprintf(resp, sizeof resp,
                           "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                           "Connection: Upgrade\r\nX-Worker: %s\r\nX-Got-Request-Id: %s\r\n"
                           "X-Got-Authorization: %s\r\n\r\n",
                           f->id, rid, auth);
        else
            len = snprintf(resp, sizeof resp,
                           "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nX-Worker: %s\r\n"
                           "Connection: close\r\n\r\n",
                           f->id);
        if (write(c, resp, (size_t)len) < 0) {
            /* nginx went away: nothing to tell */
        }
        close(c);
    }
    return NULL;
}

static void fake_start(fake *f, const char *id, int fcgi_fd, int ws_fd)
{
    memset(f, 0, sizeof *f);
    snprintf(f->id, sizeof f->id, "%s", id);
    f->fcgi_fd = fcgi_fd;
    f->ws_fd = ws_fd;
    for (int i = 0; i < FAKE_THREADS; i++) {
        f->fcgi[i].f = f;
        assert_int_equal(FCGX_InitRequest(&f->fcgi[i].req, fcgi_fd, 0), 0);
        assert_int_equal(pthread_create(&f->fcgi[i].t, NULL, fcgi_main, &f->fcgi[i]), 0);
    }
    assert_int_equal(pthread_create(&f->ws_thread, NULL, ws_main, f), 0);
    f->running = 1;
}

/* Closes both ports and the kept FastCGI connections: the worker is gone. */
static void fake_stop(fake *f)
{
    if (!f->running)
        return;
    f->running = 0;
    shutdown(f->fcgi_fd, SHUT_RDWR);
    shutdown(f->ws_fd, SHUT_RDWR);
    for (int i = 0; i < FAKE_THREADS; i++) {
        int c = f->fcgi[i].req.ipcFd;
        if (c >= 0)
            shutdown(c, SHUT_RDWR);
    }
    for (int i = 0; i < FAKE_THREADS; i++)
        pthread_join(f->fcgi[i].t, NULL);
    pthread_join(f->ws_thread, NULL);
    for (int i = 0; i < FAKE_THREADS; i++)
        FCGX_Free(&f->fcgi[i].req, 1);
    close(f->fcgi_fd);
    close(f->ws_fd);
}

/* The live test's processes and threads, for the teardown to stop. */
static fake g_workers[2];
static pid_t g_nginx;

/*
 * Stops what a test started, pass or fail (a failed assertion leaves the
 * test function at once): nginx by its PID, the fake workers, the scratch
 * directory.
 */
static int teardown(void **state)
{
    (void)state;
    if (g_nginx > 0) {
        kill(g_nginx, SIGTERM);
        waitpid(g_nginx, NULL, 0);
        g_nginx = 0;
    }
    fake_stop(&g_workers[0]);
    fake_stop(&g_workers[1]);
    if (g_dir[0]) {
        remove_tree(g_dir);
        g_dir[0] = '\0';
    }
    return 0;
}

typedef struct reply {
    int status;
    char head[4096];
    char *body; /* malloc'd, NUL-terminated */
    size_t body_len;
} reply;

/*
 * One HTTP/1.1 request to nginx on 127.0.0.1:port (Connection: close), the
 * response read to EOF. extra_headers is "Name: value\r\n..." or "". A
 * body nginx refuses early may be cut short: the reply is what counts.
 */
static void http(int port, const char *method, const char *path, const char *extra_headers,
                 const char *body, size_t body_len, reply *r)
{
    memset(r, 0, sizeof *r);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    char head[2048];
    int n = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s", method, path,
                     extra_headers);
    if (body)
        n += snprintf(head + n, sizeof head - (size_t)n, "Content-Length: %zu\r\n", body_len);
    n += snprintf(head + n, sizeof head - (size_t)n, "Connection: close\r\n\r\n");
    assert_int_equal(send(fd, head, (size_t)n, MSG_NOSIGNAL), n);
    for (size_t off = 0; body && off < body_len;) {
        ssize_t k = send(fd, body + off, body_len - off, MSG_NOSIGNAL);
        if (k <= 0)
            break; /* refused early (413): read the reply */
        off += (size_t)k;
    }
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap + 1);
    assert_non_null(buf);
    ssize_t k;
    while ((k = recv(fd, buf + len, cap - len, 0)) > 0) {
        len += (size_t)k;
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
            assert_non_null(buf);
        }
    }
    close(fd);
    buf[len] = '\0';
    char *end = strstr(buf, "\r\n\r\n");
    if (!end || sscanf(buf, "HTTP/1.%*d %d", &r->status) != 1)
        fail_msg("%s %s: no HTTP response (%zu bytes)", method, path, len);
    snprintf(r->head, sizeof r->head, "%.*s", (int)(end - buf + 2), buf);
    r->body_len = len - (size_t)(end + 4 - buf);
    r->body = malloc(r->body_len + 1);
    assert_non_null(r->body);
    memcpy(r->body, end + 4, r->body_len);
    r->body[r->body_len] = '\0';
    free(buf);
}

static void reply_free(reply *r)
{
    free(r->body);
    r->body = NULL;
}

/* "key=value" lines of a fake worker's reply: the value of key. */
static void field(const reply *r, const char *key, char *out, size_t len)
{
    char pat[64];
    snprintf(pat, sizeof pat, "%s=", key);
    const char *p = r->body;
    while (p && strncmp(p, pat, strlen(pat)) != 0) {
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    if (!p)
        fail_msg("no %s in the reply:\n%s", key, r->body);
    p += strlen(pat);
    snprintf(out, len, "%.*s", (int)strcspn(p, "\n"), p);
}

/* POST /v1/sessions/<sid>: the worker that answered. */
static void command_worker(int port, const char *sid, char *worker, size_t len)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    reply r;
    http(port, "POST", path, "Content-Type: application/msgpack\r\n", "\x80", 1, &r);
    if (r.status != 200)
        fail_msg("POST %s: %d\n%s", path, r.status, r.body);
    field(&r, "worker", worker, len);
    reply_free(&r);
}

/* GET /v1/sessions/<sid>/ws as an upgrade: the worker that answered 101. */
static void ws_worker(int port, const char *sid, char *worker, size_t len)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/sessions/%s/ws", sid);
    reply r;
    http(port, "GET", path,
         "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer wskey\r\n",
         NULL, 0, &r);
    if (r.status != 101)
        fail_msg("GET %s: %d\n%s", path, r.status, r.head);
    assert_true(header(r.head, "X-Worker", worker, len));
    char got[160];
    assert_true(header(r.head, "X-Got-Authorization", got, sizeof got));
    assert_string_equal(got, "Bearer wskey");
    assert_true(header(r.head, "X-Got-Request-Id", got, sizeof got));
    assert_int_equal(strlen(got), 32); /* generated: none was sent */
    reply_free(&r);
}

static int is_hex32(const char *s)
{
    if (strlen(s) != 32)
        return 0;
    for (; *s; s++)
        if (!isxdigit((unsigned char)*s))
            return 0;
    return 1;
}

static void test_live_front(void **state)
{
    (void)state;
    char conf_path[300], prefix[300], log[300];
    const char *dir = make_tmpdir();
    FCGX_Init();

    int fcgi_fds[2], ws_fds[2];
    int fcgi_base = listen_range(2, fcgi_fds);
    int ws_base = listen_range(2, ws_fds);
    int port = free_port();
    fake *w = g_workers;
    fake_start(&w[0], "w1", fcgi_fds[0], ws_fds[0]);
    fake_start(&w[1], "w2", fcgi_fds[1], ws_fds[1]);

    enum { LIMIT = 4096 };
    char e_port[64], e_fcgi[64], e_ws[64], e_body[64];
    snprintf(e_port, sizeof e_port, "REFGATE_HTTP_PORT=%d", port);
    snprintf(e_fcgi, sizeof e_fcgi, "REFGATE_FCGI_BASE_PORT=%d", fcgi_base);
    snprintf(e_ws, sizeof e_ws, "REFGATE_WS_BASE_PORT=%d", ws_base);
    snprintf(e_body, sizeof e_body, "REFGATE_MAX_BODY_BYTES=%d", LIMIT);
    const char *env[] = {"REFGATE_WORKERS=2", e_port, e_fcgi, e_ws, e_body, NULL};
    free(render_local(dir, env, conf_path, sizeof conf_path));

    snprintf(prefix, sizeof prefix, "%s/nginx/", dir);
    snprintf(log, sizeof log, "%s/nginx/error.log", dir);
    pid_t nginx = fork();
    assert_true(nginx >= 0);
    if (nginx == 0) {
        /* Its output to the log: a pipe it inherited would outlive the test. */
        FILE *f = freopen(log, "a", stdout);
        if (!f || dup2(STDOUT_FILENO, STDERR_FILENO) < 0)
            _exit(126);
        execlp("nginx", "nginx", "-p", prefix, "-c", conf_path, "-e", log, (char *)NULL);
        _exit(127);
    }
    g_nginx = nginx;
    int up = 0;
    for (int i = 0; i < 200 && !up; i++) {
        int fd = net_dial(port);
        up = fd >= 0;
        if (up)
            close(fd);
        if (!up) {
            assert_int_equal(waitpid(nginx, NULL, WNOHANG), 0); /* still running */
            usleep(25000);
        }
    }
    if (!up)
        print_file(log);
    assert_true(up);

    reply r;
    char v[160], v2[160];

    /* /healthz reaches a worker, without a key. */
    http(port, "GET", "/healthz", "", NULL, 0, &r);
    assert_int_equal(r.status, 200);
    field(&r, "uri", v, sizeof v);
    assert_string_equal(v, "/healthz");
    reply_free(&r);

    /* A session's commands stay on one worker, and its WebSocket goes to that
       worker too; sessions spread over both. */
    char sid_on[2][32] = {"", ""};
    int count[2] = {0, 0};
    for (int i = 0; i < 24; i++) {
        char sid[32];
        snprintf(sid, sizeof sid, "s%08x", (unsigned)(i * 2654435761u));
        command_worker(port, sid, v, sizeof v);
        for (int j = 0; j < 3; j++) {
            command_worker(port, sid, v2, sizeof v2);
            assert_string_equal(v, v2);
        }
        ws_worker(port, sid, v2, sizeof v2);
        assert_string_equal(v, v2);
        int k = strcmp(v, "w1") == 0 ? 0 : 1;
        count[k]++;
        snprintf(sid_on[k], sizeof sid_on[k], "%s", sid);
    }
    assert_true(count[0] > 0 && count[1] > 0);

    /* What the gateway reads arrives: the key, the request id, the URI. */
    http(port, "POST", "/v1/sessions?x=1",
         "Authorization: Bearer k-123\r\nX-Request-Id: req-42.a\r\n"
         "Accept: application/msgpack\r\nContent-Type: application/msgpack\r\n",
         "\x80", 1, &r);
    assert_int_equal(r.status, 200);
    field(&r, "auth", v, sizeof v);
    assert_string_equal(v, "Bearer k-123");
    field(&r, "rid", v, sizeof v);
    assert_string_equal(v, "req-42.a");
    field(&r, "uri", v, sizeof v);
    assert_string_equal(v, "/v1/sessions?x=1");
    field(&r, "document_uri", v, sizeof v);
    assert_string_equal(v, "/v1/sessions");
    field(&r, "accept", v, sizeof v);
    assert_string_equal(v, "application/msgpack");
    field(&r, "content_type", v, sizeof v);
    assert_string_equal(v, "application/msgpack");
    reply_free(&r);
    /* No request id, or one unfit for logs: nginx makes one. */
    http(port, "GET", "/v1/sessions", "X-Request-Id: a\"b{c}\r\n", NULL, 0, &r);
    assert_int_equal(r.status, 200);
    field(&r, "rid", v, sizeof v);
    assert_true(is_hex32(v));
    field(&r, "auth", v, sizeof v);
    assert_string_equal(v, "");
    reply_free(&r);

    /* The body limit: exactly REFGATE_MAX_BODY_BYTES passes; one more is a 413
       reply map in the client's format, before any worker sees it. */
    char *big = malloc(LIMIT + 1);
    assert_non_null(big);
    memset(big, 'x', LIMIT + 1);
    http(port, "POST", "/v1/sessions/limit", "Content-Type: application/msgpack\r\n", big, LIMIT,
         &r);
    assert_int_equal(r.status, 200);
    field(&r, "bytes", v, sizeof v);
    assert_int_equal(atoi(v), LIMIT);
    reply_free(&r);
    http(port, "POST", "/v1/sessions/limit", "Content-Type: application/msgpack\r\n", big,
         LIMIT + 1, &r);
    assert_int_equal(r.status, 413);
    assert_true(header(r.head, "Content-Type", v, sizeof v));
    assert_string_equal(v, "application/msgpack");
    assert_true(header(r.head, "X-Request-Id", v, sizeof v));
    check_msgpack_reply(r.body, r.body_len, "payload_too_large");
    reply_free(&r);
    http(port, "POST", "/v1/sessions", "Content-Type: application/json\r\n", big, LIMIT + 1, &r);
    assert_int_equal(r.status, 413);
    assert_true(header(r.head, "Content-Type", v, sizeof v));
    assert_string_equal(v, "application/json");
    check_json_reply(r.body, "payload_too_large");
    assert_contains(r.body, "4096 bytes");
    reply_free(&r);
    free(big);

    /* Unknown paths: a not_found reply map; the favicon: 204. */
    http(port, "GET", "/v2/sessions", "Accept: application/json\r\n", NULL, 0, &r);
    assert_int_equal(r.status, 404);
    check_json_reply(r.body, "not_found");
    reply_free(&r);
    http(port, "GET", "/v1/sessions/abc/other", "", NULL, 0, &r);
    assert_int_equal(r.status, 404);
    check_msgpack_reply(r.body, r.body_len, "not_found");
    reply_free(&r);
    http(port, "GET", "/favicon.ico", "", NULL, 0, &r);
    assert_int_equal(r.status, 204);
    reply_free(&r);

    /* w1 dies: its sessions move to w2, commands and WebSocket alike; w2's stay. */
    fake_stop(&w[0]);
    for (int j = 0; j < 3; j++) {
        command_worker(port, sid_on[0], v, sizeof v);
        assert_string_equal(v, "w2");
        ws_worker(port, sid_on[0], v, sizeof v);
        assert_string_equal(v, "w2");
        command_worker(port, sid_on[1], v, sizeof v);
        assert_string_equal(v, "w2");
    }

    /* No worker at all: 503 unavailable with Retry-After, as a reply map. */
    fake_stop(&w[1]);
    http(port, "POST", "/v1/sessions/x", "Content-Type: application/json\r\n", "{}", 2, &r);
    assert_int_equal(r.status, 503);
    assert_true(header(r.head, "Retry-After", v, sizeof v));
    assert_string_equal(v, "1");
    check_json_reply(r.body, "unavailable");
    reply_free(&r);
    http(port, "GET", "/v1/sessions/x/ws", "Upgrade: websocket\r\nConnection: Upgrade\r\n", NULL, 0,
         &r);
    assert_int_equal(r.status, 503);
    check_msgpack_reply(r.body, r.body_len, "unavailable");
    reply_free(&r);

    kill(nginx, SIGTERM);
    int st;
    assert_int_equal(waitpid(nginx, &st, 0), nginx);
    g_nginx = 0;
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
    if (access("scripts/nginx-conf.sh", R_OK) != 0) {
        fprintf(stderr, "test_nginx_conf: run me from the repository root\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_local_config, teardown),
        cmocka_unit_test_teardown(test_docker_config, teardown),
        cmocka_unit_test(test_error_bodies),
        cmocka_unit_test_teardown(test_live_front, teardown),
    };
    return cmocka_run_group_tests_name("nginx_conf", tests, NULL, NULL);
}
