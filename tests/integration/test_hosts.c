/*
 * test_hosts.c - refgate on three "machines": network namespaces joined by
 * veth pairs. Host A and host B each run a worker (and a fixture server for
 * its browser's pages); host C runs nginx and Redis, and the test itself
 * (it enters C's namespace). Sessions are created through nginx; then A is
 * cut off with its link down:
 *
 *   - each of A's sessions is restored on B at its next command, its refs
 *     and its page's storage kept;
 *   - when A comes back, A finds its leases fenced off and drops its copies:
 *     a session is live on one worker only, and commands move A's sessions
 *     home again (B parks them, A restores them), nothing lost.
 *
 * Addresses: every address is a loopback one, 127.10.<host>.x, as the house
 * rule for tests asks. The kernel takes a 127/8 address off `lo` once the
 * namespace's `local 127.0.0.0/8` route is replaced by `local 127.0.0.1`,
 * and routes it on a veth with net.ipv4.conf.*.route_localnet=1.
 *
 *   A 127.10.1.2 (rg0) <-> (rga) 127.10.1.1 C 127.10.2.1 (rgb) <-> (rg0) 127.10.2.2 B
 *
 * The namespaces are named rgh<pid>a/b/c; the group teardown (also reached
 * after a failed assert), an atexit handler and SIGTERM/SIGINT delete exactly
 * those, and every process started here is stopped by its PID. Needs root
 * and ip(8): otherwise each test is skipped with a line saying why.
 *
 * Nothing asserts on time; each wait is bounded so a hang fails the test.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tenant/tenant.h"
#include "tests/support/fixture.h"
#include "tests/support/net.h"
#include "wire/wire.h"

/* Fixed ports: each namespace is new and empty, so nothing else holds them. */
#define NGINX_PORT 8080
#define REDIS_PORT 6379
#define PAGES_PORT 8081
#define FCGI_PORT 9000
#define WS_PORT 9001
#define LEASE_MS "2000"

enum { HOST_A, HOST_B, HOST_C };

static struct {
    const char *skip;         /* why the tests are skipped, or NULL */
    char ns[3][32];           /* rgh<pid>a, b, c */
    int made[3];              /* namespace created here */
    int home;                 /* the test's own network namespace (fd), -1 */
    char dir[96];             /* logs, run directories, nginx's files, the pages */
    pid_t redis, nginx, worker[2], pages[2];
    char key[TENANT_KEY_SIZE];
} H = {.home = -1};

static const char *const worker_ip[2] = {"127.10.1.2", "127.10.2.2"};
static const char *const c_ip[2] = {"127.10.1.1", "127.10.2.1"};

/* ---- processes and namespaces ---- */

/* Runs a command line (through sh), its output to the log; its exit status. */
static int sh(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[1400];
    snprintf(full, sizeof full, "(%s) >>'%s/setup.log' 2>&1", cmd, H.dir[0] ? H.dir : "/tmp");
    int rc = system(full);
    return rc == -1 ? -1 : WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Moves the calling process (or child) into namespace ns. 0 or -1. */
static int enter(const char *ns)
{
    char path[96];
    snprintf(path, sizeof path, "/var/run/netns/%s", ns);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = setns(fd, CLONE_NEWNET);
    close(fd);
    return rc;
}

/* Starts argv in namespace ns with env added, its output to log. The child's PID. */
static pid_t spawn_in(const char *ns, const char *const *argv, const char *const *env,
                      const char *log)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (enter(ns) < 0)
        _exit(126);
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0)
        dup2(null, 0);
    for (int i = 0; env && env[i]; i++)
        putenv((char *)env[i]);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
    }
    execvp(argv[0], (char *const *)argv);
    _exit(127);
}

/* A fixture server for host h's browser, on its 127.0.0.1:PAGES_PORT. */
static pid_t pages_in(int h)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    char docroot[128];
    snprintf(docroot, sizeof docroot, "%s/pages", H.dir);
    if (enter(H.ns[h]) < 0 || !httpd_start_port(docroot, PAGES_PORT))
        _exit(1);
    for (;;)
        pause(); /* until SIGTERM */
}

static void stop_pid(pid_t *pid)
{
    if (*pid > 0) {
        kill(*pid, SIGTERM);
        for (int i = 0; i < 100 && waitpid(*pid, NULL, WNOHANG) == 0; i++)
            rg_sleep_ms(100);
        if (waitpid(*pid, NULL, WNOHANG) == 0) {
            kill(*pid, SIGKILL);
            waitpid(*pid, NULL, 0);
        }
    }
    *pid = 0;
}

/* Deletes a namespace by name, with no shell and no allocation (also from a signal). */
static void netns_del(const char *ns)
{
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
        }
        execlp("ip", "ip", "netns", "del", ns, (char *)NULL);
        _exit(127);
    }
    if (pid > 0)
        waitpid(pid, NULL, 0);
}

/* Stops everything started here and deletes the namespaces made here. */
static void cleanup(void)
{
    stop_pid(&H.nginx);
    for (int i = 0; i < 2; i++)
        stop_pid(&H.worker[i]);
    for (int i = 0; i < 2; i++)
        stop_pid(&H.pages[i]);
    stop_pid(&H.redis);
    if (H.home >= 0) {
        setns(H.home, CLONE_NEWNET);
        close(H.home);
        H.home = -1;
    }
    for (int i = 0; i < 3; i++)
        if (H.made[i]) {
            netns_del(H.ns[i]);
            H.made[i] = 0;
        }
    if (H.dir[0] && !getenv("RG_KEEP_STACK")) {
        rg_rmtree(H.dir);
        H.dir[0] = '\0';
    } else if (H.dir[0]) {
        fprintf(stderr, "test_hosts: logs kept in %s\n", H.dir);
        H.dir[0] = '\0';
    }
}

static void on_signal(int sig)
{
    /* Only what is safe here: kill, fork and exec, waitpid. */
    pid_t pids[] = {H.nginx, H.worker[0], H.worker[1], H.pages[0], H.pages[1], H.redis};
    for (size_t i = 0; i < sizeof pids / sizeof *pids; i++)
        if (pids[i] > 0)
            kill(pids[i], SIGKILL);
    for (int i = 0; i < 3; i++)
        if (H.made[i])
            netns_del(H.ns[i]);
    _exit(128 + sig);
}

/* ---- the three hosts ---- */

static int make_network(void)
{
    for (int h = 0; h < 3; h++) {
        snprintf(H.ns[h], sizeof H.ns[h], "rgh%d%c", (int)getpid(), "abc"[h]);
        if (sh("ip netns add %s", H.ns[h]) != 0)
            return -1;
        H.made[h] = 1;
    }
    const char *a = H.ns[HOST_A], *b = H.ns[HOST_B], *c = H.ns[HOST_C];
    if (sh("ip link add rg0 netns %s type veth peer name rga netns %s", a, c) != 0 ||
        sh("ip link add rg0 netns %s type veth peer name rgb netns %s", b, c) != 0)
        return -1;
    /* In each: lo up, route_localnet, then 127/8 is no longer all local. */
    const char *ifs[3] = {"rg0", "rg0", "rga rgb"};
    for (int h = 0; h < 3; h++) {
        char sys[256] = "sysctl -qw net.ipv4.conf.all.route_localnet=1";
        char one[64];
        for (const char *p = ifs[h]; *p;) {
            int n = (int)strcspn(p, " ");
            snprintf(one, sizeof one, " net.ipv4.conf.%.*s.route_localnet=1", n, p);
            strncat(sys, one, sizeof sys - strlen(sys) - 1);
            p += n + (p[n] == ' ');
        }
        if (sh("ip -n %s link set lo up", H.ns[h]) != 0 ||
            sh("ip netns exec %s %s", H.ns[h], sys) != 0 ||
            sh("ip -n %s route del local 127.0.0.0/8 dev lo table local", H.ns[h]) != 0)
            return -1;
        sh("ip -n %s route add local 127.0.0.1 dev lo table local", H.ns[h]); /* may exist */
    }
    for (int w = 0; w < 2; w++) {
        const char *ns = H.ns[w], *cif = w == 0 ? "rga" : "rgb";
        if (sh("ip -n %s addr add %s/32 dev rg0", ns, worker_ip[w]) != 0 ||
            sh("ip -n %s addr add %s/32 dev %s", c, c_ip[w], cif) != 0 ||
            sh("ip -n %s link set rg0 up", ns) != 0 || sh("ip -n %s link set %s up", c, cif) != 0 ||
            sh("ip -n %s route add %s/32 dev rg0 src %s", ns, c_ip[w], worker_ip[w]) != 0 ||
            sh("ip -n %s route add %s/32 dev %s src %s", c, worker_ip[w], cif, c_ip[w]) != 0)
            return -1;
    }
    return 0;
}

static int wait_port(const char *ip, int port, pid_t pid, int timeout_ms)
{
    for (int64_t end = rg_now_ms() + timeout_ms; rg_now_ms() < end; rg_sleep_ms(100)) {
        int fd = net_dial_at(ip, port);
        if (fd >= 0) {
            close(fd);
            return 0;
        }
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return -1;
    }
    return -1;
}

static pid_t start_worker(int w)
{
    char id[48], index[48], fcgi[64], ws[64], run[160], redis[64], log[160];
    snprintf(id, sizeof id, "REFGATE_WORKER_ID=w%d", w + 1);
    snprintf(index, sizeof index, "REFGATE_WORKER_INDEX=%d", w + 1);
    snprintf(fcgi, sizeof fcgi, "REFGATE_FCGI_LISTEN=%s:%d", worker_ip[w], FCGI_PORT);
    snprintf(ws, sizeof ws, "REFGATE_WS_LISTEN=%s:%d", worker_ip[w], WS_PORT);
    snprintf(run, sizeof run, "REFGATE_RUN_DIR=%s/worker-w%d", H.dir, w + 1);
    snprintf(redis, sizeof redis, "REFGATE_REDIS_URL=redis://%s:%d", c_ip[w], REDIS_PORT);
    snprintf(log, sizeof log, "%s/worker-w%d.log", H.dir, w + 1);
    const char *env[] = {id,    index, "REFGATE_WORKERS=2", fcgi, ws, run, redis,
                         "REFGATE_BROWSERS=1", "REFGATE_SESSION_LEASE_MS=" LEASE_MS,
                         /* every checkpoint takes the page's storage */
                         "REFGATE_CHECKPOINT_FULL_MS=0", NULL};
    const char *argv[] = {stack_server_bin(), NULL};
    return spawn_in(H.ns[w], argv, env, log);
}

static int start_front(void)
{
    char log[160], port[16], bind_[64];
    snprintf(log, sizeof log, "%s/redis.log", H.dir);
    snprintf(port, sizeof port, "%d", REDIS_PORT);
    /* Protected mode lets in 127.0.0.1 alone: the workers come from 127.10.x.2. */
    const char *rargv[] = {"redis-server", "--port", port, "--bind", "127.0.0.1", c_ip[0],
                           c_ip[1], "--protected-mode", "no", "--save", "", "--appendonly", "no",
                           NULL};
    H.redis = spawn_in(H.ns[HOST_C], rargv, NULL, log);
    if (H.redis <= 0 || wait_port("127.0.0.1", REDIS_PORT, H.redis, 10000) < 0)
        return -1;
    /* The docker form of the configuration: workers by address, on 9000 and 9001. */
    char conf_dir[128];
    snprintf(conf_dir, sizeof conf_dir, "%s/nginx", H.dir);
    snprintf(bind_, sizeof bind_, "127.0.0.1:%d", NGINX_PORT);
    if (sh("sh scripts/nginx-conf.sh --docker --workers 2 --host 127.10.%%d.2 --listen %s "
           "--state-dir %s --config-dir %s %s",
           bind_, conf_dir, conf_dir, conf_dir) != 0)
        return -1;
    char conf[160];
    snprintf(conf, sizeof conf, "%s/nginx.conf", conf_dir);
    snprintf(log, sizeof log, "%s/nginx.log", H.dir);
    const char *nargv[] = {"nginx", "-p", conf_dir, "-c", conf, NULL};
    H.nginx = spawn_in(H.ns[HOST_C], nargv, NULL, log);
    return H.nginx > 0 ? 0 : -1;
}

static int make_tenant(void)
{
    tenant t;
    tenant_init(&t);
    snprintf(t.name, sizeof t.name, "acme");
    t.allow_private = 1;
    t.rate = 100000;
    t.max_concurrent = 64;
    t.max_sessions = 1000;
    char url[64], err[256];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", REDIS_PORT);
    int rc = stack_make_tenant(url, &t, H.key, sizeof H.key, err, sizeof err);
    if (rc < 0)
        fprintf(stderr, "test_hosts: tenant: %s\n", err);
    tenant_destroy(&t);
    return rc;
}

/* The page: a button that counts its clicks in localStorage, which a
   checkpoint carries to the next host. */
static int write_pages(void)
{
    char path[160];
    snprintf(path, sizeof path, "%s/pages", H.dir);
    if (mkdir(path, 0755) < 0)
        return -1;
    snprintf(path, sizeof path, "%s/pages/tally.html", H.dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs("<!doctype html><html><head><title>Tally</title></head><body>\n"
          "<button id=\"add\" onclick=\"localStorage.setItem('n', "
          "String(+(localStorage.getItem('n') || 0) + 1)); show()\">Add</button>\n"
          "<p id=\"out\"></p>\n"
          "<script>function show() { document.getElementById('out').textContent = "
          "'n=' + (localStorage.getItem('n') || 0); } show();</script>\n"
          "</body></html>\n",
          f);
    return fclose(f);
}

static int nginx_healthy(void)
{
    http_resp r;
    int ok = http_request(NGINX_PORT, "GET", "/healthz", NULL, NULL, 0, &r) == 0 &&
             r.status == 200;
    rg_buf_destroy(&r.body);
    return ok;
}

static int group_setup(void **state)
{
    (void)state;
    if (geteuid() != 0)
        H.skip = "needs root (network namespaces)";
    else if (system("command -v ip >/dev/null 2>&1") != 0)
        H.skip = "needs ip(8) (iproute2)";
    else if (fx_need_chromium("test_hosts") < 0)
        H.skip = "needs Chromium";
    if (H.skip) {
        fprintf(stderr, "test_hosts: skipped: %s\n", H.skip);
        return 0;
    }
    snprintf(H.dir, sizeof H.dir, "/tmp/refgate-test-hosts-XXXXXX");
    if (!mkdtemp(H.dir)) {
        H.dir[0] = '\0';
        return -1;
    }
    chmod(H.dir, 0755); /* nginx's workers run as nobody */
    atexit(cleanup);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    H.home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    const char *why = NULL;
    if (write_pages() < 0)
        why = "cannot write the pages";
    else if (H.home < 0 || make_network() < 0)
        why = "cannot build the network";
    else if (enter(H.ns[HOST_C]) < 0) /* the test runs on host C, beside nginx */
        why = "cannot enter host C";
    if (!why && start_front() < 0)
        why = "cannot start Redis or nginx";
    for (int w = 0; w < 2 && !why; w++)
        if ((H.pages[w] = pages_in(w)) <= 0 || (H.worker[w] = start_worker(w)) <= 0)
            why = "cannot start a host";
    if (!why && make_tenant() < 0)
        why = "cannot make the tenant";
    for (int w = 0; w < 2 && !why; w++)
        if (wait_port(worker_ip[w], FCGI_PORT, H.worker[w], 60000) < 0)
            why = "a worker did not start";
    for (int64_t end = rg_now_ms() + 20000; !why && !nginx_healthy(); rg_sleep_ms(100))
        if (rg_now_ms() >= end)
            why = "nginx did not answer /healthz";
    if (why) {
        fprintf(stderr, "test_hosts: %s (see %s/setup.log and the logs beside it)\n", why,
                H.dir);
        setenv("RG_KEEP_STACK", "1", 1);
        cleanup();
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    cleanup();
    return 0;
}

/* ---- calls through nginx ---- */

typedef struct reply {
    int status;
    cJSON *body;
} reply;

static reply post(const char *path, const char *body)
{
    char h[300];
    snprintf(h, sizeof h, "Authorization: Bearer %s\r\nContent-Type: application/json\r\n",
             H.key);
    http_resp r;
    reply out = {.status = -1, .body = NULL};
    if (http_request(NGINX_PORT, "POST", path, h, body, strlen(body), &r) < 0) {
        rg_buf_destroy(&r.body);
        return out;
    }
    out.status = r.status;
    char err[128];
    if (wire_json_decode(r.body.data ? r.body.data : "", r.body.len, &out.body, err,
                         sizeof err) < 0)
        out.body = NULL;
    rg_buf_destroy(&r.body);
    return out;
}

static const cJSON *result_of(const reply *r)
{
    return cJSON_GetObjectItemCaseSensitive(r->body, "result");
}

static const char *str_of(const reply *r, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(result_of(r), k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* A command that must succeed; the reply is the caller's. */
static reply ok(const char *sid, const char *body)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    reply r = post(path, body);
    if (r.status != 200)
        fail_msg("%s %s -> %d %s", sid, body, r.status,
                 r.body ? cJSON_PrintUnformatted(r.body) : "");
    return r;
}

static void drop(reply *r)
{
    cJSON_Delete(r->body);
    r->body = NULL;
}

/* Which worker holds sid now (1 or 2), from session.info. */
static int owner_of(const char *sid)
{
    reply r = ok(sid, "{\"op\":\"session.info\"}");
    int w = atoi(str_of(&r, "worker") + 1);
    drop(&r);
    return w;
}

static void tally_is(const char *sid, const char *want)
{
    reply r = ok(sid, "{\"op\":\"read\",\"args\":{\"target\":\"css:#out\"}}");
    if (strcmp(str_of(&r, "value"), want))
        fail_msg("%s reads %s, wanted %s", sid, str_of(&r, "value"), want);
    drop(&r);
}

/* Clicks the button by the ref the session's first observation gave. */
static void add(const char *sid, const char *ref)
{
    char body[200];
    snprintf(body, sizeof body, "{\"op\":\"click\",\"args\":{\"target\":\"%.31s\"}}", ref);
    reply r = ok(sid, body);
    drop(&r);
}

/* A metric of worker w (0 or 1), asked of it directly over FastCGI; -1 when absent. */
static double metric_of(int w, const char *name)
{
    const char *params[] = {"REQUEST_METHOD=GET", "SCRIPT_NAME=/metrics", "DOCUMENT_URI=/metrics",
                            "REQUEST_URI=/metrics", NULL};
    http_resp r;
    double v = -1;
    if (fcgi_request_at(worker_ip[w], FCGI_PORT, params, NULL, 0, &r) == 0) {
        rg_buf_puts(&r.body, "");
        v = metric_value(r.body.data, name);
    }
    rg_buf_destroy(&r.body);
    return v;
}

static int live_becomes(int w, double want, int timeout_ms)
{
    for (int64_t end = rg_now_ms() + timeout_ms; rg_now_ms() < end; rg_sleep_ms(100))
        if (metric_of(w, "refgate_sessions_live") == want)
            return 0;
    return -1;
}

static void link_of_a(int up)
{
    const char *c = H.ns[HOST_C];
    assert_int_equal(sh("ip -n %s link set rga %s", c, up ? "up" : "down"), 0);
    if (up) /* the route went with the link */
        assert_int_equal(
            sh("ip -n %s route replace %s/32 dev rga src %s", c, worker_ip[0], c_ip[0]), 0);
}

/*
 * Reloads nginx and waits until its old workers are gone. nginx keeps idle
 * connections to each worker (upstream keepalive); one to a host that was
 * cut off takes a request, which then waits fastcgi_read_timeout (120 s)
 * before nginx gives up on it. Dropping a host from service goes with a
 * reload (docs/scaling.md), which closes them.
 */
static void reload_nginx(void)
{
    pid_t old[16];
    int n = procs_descendants(H.nginx, old, 16);
    assert_int_equal(kill(H.nginx, SIGHUP), 0);
    int64_t end = rg_now_ms() + 20000;
    for (int i = 0; i < n; i++)
        while (procs_running(old[i]) && rg_now_ms() < end)
            rg_sleep_ms(50);
    for (int i = 0; i < n; i++)
        if (procs_running(old[i]))
            fail_msg("nginx's worker %d did not leave after the reload", (int)old[i]);
}

/* ---- the test ---- */

/*
 * Sessions kept until A has two and B one. nginx hashes each create by its
 * request id, and 94 of its 200 buckets are w1's (scripts/nginx-conf.sh), so
 * where a session lands is a coin toss. A session past KEEP_MAX on its host
 * is closed again, so up to CREATES_MAX creates can be spent on the tosses
 * while the sessions kept stay few: B must hold them all once A is cut off,
 * and it has one browser's contexts (POOL_CONTEXTS_PER_BROWSER, 16). With 64
 * creates, falling short is about a 1e-16 chance; with a cap of 16 sessions
 * and none closed it was about 1 in 1,700, and it happened in CI.
 */
#define KEEP_MAX 3
#define SESSIONS_MAX (2 * KEEP_MAX)
#define CREATES_MAX 64

static void close_session(const char *sid)
{
    char h[300], path[128];
    snprintf(h, sizeof h, "Authorization: Bearer %s\r\n", H.key);
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    http_resp r;
    int rc = http_request(NGINX_PORT, "DELETE", path, h, NULL, 0, &r);
    int status = r.status;
    rg_buf_destroy(&r.body);
    if (rc < 0 || status != 200)
        fail_msg("closing %s -> %d", sid, rc < 0 ? -1 : status);
}

/* What each worker was doing, for a failure that depends on both. */
static void show_workers(void)
{
    for (int w = 0; w < 2; w++) {
        char path[160], tail[2048];
        snprintf(path, sizeof path, "%s/worker-w%d.log", H.dir, w + 1);
        support_file_tail(path, tail, sizeof tail);
        fprintf(stderr, "test_hosts: worker w%d %s; its log ends:\n%s\n", w + 1,
                procs_running(H.worker[w]) ? "runs" : "has exited", tail);
    }
}

static void test_host_cut_off_and_back(void **state)
{
    (void)state;
    if (H.skip)
        skip();
    char sid[SESSIONS_MAX][64], ref[SESSIONS_MAX][32];
    int owner[SESSIONS_MAX], n = 0, on[3] = {0, 0, 0}, creates = 0;
    char body[300];
    snprintf(body, sizeof body, "{\"args\":{\"url\":\"http://127.0.0.1:%d/tally.html\"}}",
             PAGES_PORT);
    /* Sessions through nginx until each host has some. */
    while (creates < CREATES_MAX && (n < 4 || on[1] < 2 || on[2] < 1)) {
        reply r = post("/v1/sessions", body);
        creates++;
        if (r.status != 200)
            fail_msg("create -> %d %s", r.status, r.body ? cJSON_PrintUnformatted(r.body) : "");
        snprintf(sid[n], sizeof sid[n], "%s", str_of(&r, "session"));
        drop(&r);
        owner[n] = owner_of(sid[n]);
        assert_true(owner[n] == 1 || owner[n] == 2);
        if (on[owner[n]] == KEEP_MAX) {
            close_session(sid[n]);
            continue;
        }
        r = ok(sid[n], "{\"op\":\"observe\",\"args\":{\"format\":\"elements\"}}");
        const cJSON *e;
        ref[n][0] = '\0';
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(result_of(&r), "elements"))
        {
            const cJSON *na = cJSON_GetObjectItemCaseSensitive(e, "name");
            if (cJSON_IsString(na) && !strcmp(na->valuestring, "Add"))
                snprintf(ref[n], sizeof ref[n], "%s",
                         cJSON_GetObjectItemCaseSensitive(e, "ref")->valuestring);
        }
        drop(&r);
        assert_true(ref[n][0]);
        add(sid[n], ref[n]);
        tally_is(sid[n], "n=1");
        on[owner[n]]++;
        n++;
    }
    if (on[1] < 2 || on[2] < 1) {
        show_workers();
        fail_msg("after %d creates, w1 holds %d sessions and w2 %d", creates, on[1], on[2]);
    }

    /* Host A is cut off. Each of its sessions comes back on B at its next
       command (once A's lease lapses), by the ref from before, with the
       count its storage kept. */
    link_of_a(0);
    reload_nginx();
    for (int i = 0; i < n; i++) {
        add(sid[i], ref[i]);
        tally_is(sid[i], "n=2");
        assert_int_equal(owner_of(sid[i]), 2);
    }
    assert_int_equal(metric_of(1, "refgate_sessions_live"), n);

    /* A comes back: its leases were claimed by B (new fence tokens), so it
       drops its copies instead of writing them. Live on one worker only. */
    link_of_a(1);
    if (live_becomes(0, 0, 20000) < 0)
        fail_msg("host A still holds %g sessions after coming back",
                 metric_of(0, "refgate_sessions_live"));
    assert_true(metric_of(0, "refgate_sessions_fenced_total") >= on[1]);
    assert_int_equal(metric_of(1, "refgate_sessions_live"), n);

    /* nginx sends A's sessions home again: B parks each for A, nothing lost. */
    for (int i = 0; i < n; i++) {
        add(sid[i], ref[i]);
        tally_is(sid[i], "n=3");
        assert_int_equal(owner_of(sid[i]), owner[i]);
    }
    assert_int_equal(live_becomes(0, on[1], 20000), 0);
    assert_int_equal(live_becomes(1, on[2], 20000), 0);
    for (int i = 0; i < n; i++) {
        reply r = ok(sid[i], "{\"op\":\"session.close\"}");
        drop(&r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_cut_off_and_back),
    };
    return FX_RUN("hosts", tests, group_setup, group_teardown);
}
