/*
 * test_make_run.c - `make run` (scripts/run.sh) keeps serving when a worker
 * dies. The script runs here as a user runs it, on loopback ports of its
 * own and a run directory of its own, with two workers:
 *
 *  - a session is made and observed through nginx; the worker that holds it
 *    is killed with SIGKILL (by the PID in its pid file);
 *  - the next command on the session succeeds through nginx, with the ref
 *    the first observe handed out, on the other worker;
 *  - the script starts the killed worker again (a new PID in its pid file),
 *    and new sessions land on it again;
 *  - SIGTERM to the script stops everything it started: no pid file and no
 *    process of it is left.
 *
 * Then once more with REFGATE_REDIS_MODE=cluster: the script makes a Redis
 * Cluster of three masters, sessions made through nginx land on more than
 * one of them, and SIGTERM stops every node too.
 *
 * Nothing here is timed; each wait has a deadline.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <hiredis/hiredis.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/rg.h"
#include "tests/support/expect.h"
#include "tests/support/fixture.h"
#include "tests/support/net.h"

#define WORKERS 2
#define UP_WAIT_MS 120000  /* the first start installs nothing; a cold Chromium is slow */
#define BACK_WAIT_MS 30000 /* the first restart comes after 1 s */

static int cluster_mode; /* the second run: REFGATE_REDIS_MODE=cluster */
static char run_dir[256];
static pid_t run_pid = -1;
static int http_port, fcgi_base, ws_base, redis_port;
static httpd *pages;
static char auth[256];


static pid_t pid_in(const char *name)
{
    char path[400], buf[32] = "";
    snprintf(path, sizeof path, "%s/%s.pid", run_dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    if (!fgets(buf, sizeof buf, f))
        buf[0] = 0;
    fclose(f);
    long v = strtol(buf, NULL, 10);
    return v > 0 ? (pid_t)v : -1;
}

/* POSTs JSON through nginx; the parsed reply (caller frees), the status. */
static cJSON *call(const char *path, const char *body, int *status)
{
    return expect_json(http_port, "POST", path, auth, body, status);
}

static cJSON *ok_call(const char *path, const char *body)
{
    int st;
    cJSON *r = call(path, body, &st);
    if (st != 200) {
        char *s = cJSON_PrintUnformatted(r);
        fail_msg("%s %s -> %d %s", path, body, st, s);
    }
    return r;
}

/* The worker that holds sid, as session.info says ("w1", "w2"). */
static void worker_of(const char *sid, char *out, size_t len)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    cJSON *r = ok_call(path, "{\"op\":\"session.info\"}");
    snprintf(out, len, "%s", reply_str(r, "worker"));
    cJSON_Delete(r);
}

static void test_worker_killed_under_make_run(void **state)
{
    (void)state;
    char url[256], body[512], path[128], w[16];
    httpd_url(pages, "/actions.html", url, sizeof url);
    snprintf(body, sizeof body, "{\"op\":\"session.create\",\"args\":{\"url\":\"%s\"}}", url);
    cJSON *r = ok_call("/v1/sessions", body);
    char sid[64];
    snprintf(sid, sizeof sid, "%s", reply_str(r, "session"));
    cJSON_Delete(r);
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    r = ok_call(path, "{\"op\":\"observe\"}");
    const char *text = reply_str(r, "text");
    assert_non_null(strstr(text, "button \"Count\" [ref=@counter]"));
    cJSON_Delete(r);

    worker_of(sid, w, sizeof w);
    assert_true(!strcmp(w, "w1") || !strcmp(w, "w2"));
    char wname[32];
    snprintf(wname, sizeof wname, "worker-%s", w);
    pid_t killed = pid_in(wname);
    assert_true(killed > 0);
    assert_int_equal(kill(killed, SIGKILL), 0);

    /* The next command succeeds within a few seconds, with the ref of the
       first observe. A request that nginx had already written to the dead
       worker's kept-alive connection is not sent elsewhere (a POST may have
       acted): it gets 503 unavailable, transient, with retry_after_ms, and
       the client retries as that reply says, as a user's client does. */
    int st = 0, attempts = 0;
    int64_t deadline = rg_now_ms() + 15000;
    r = NULL;
    for (;;) {
        attempts++;
        r = call(path, "{\"op\":\"click\",\"args\":{\"target\":\"@counter\"}}", &st);
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(r, "error");
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(e, "kind");
        const cJSON *ra = cJSON_GetObjectItemCaseSensitive(e, "retry_after_ms");
        if (st == 200 || rg_now_ms() >= deadline || !cJSON_IsString(kind) ||
            strcmp(kind->valuestring, "transient") != 0)
            break;
        rg_sleep_ms(cJSON_IsNumber(ra) && ra->valuedouble < 5000 ? (int)ra->valuedouble : 1000);
        cJSON_Delete(r);
    }
    if (st != 200) {
        char *s = cJSON_PrintUnformatted(r);
        fail_msg("click after the kill, attempt %d -> %d %s", attempts, st, s);
    }
    printf("the click after the kill succeeded at attempt %d\n", attempts);
    assert_string_equal(reply_str(r, "ref"), "@counter");
    cJSON_Delete(r);
    char now[16];
    worker_of(sid, now, sizeof now);
    assert_string_not_equal(now, w);

    /* The killed worker is started again... */
    int64_t until = rg_now_ms() + BACK_WAIT_MS;
    pid_t again = -1;
    while (rg_now_ms() < until) {
        again = pid_in(wname);
        if (again > 0 && again != killed && procs_running(again))
            break;
        rg_sleep_ms(200);
    }
    assert_true(again > 0 && again != killed && procs_running(again));

    /* ...and new sessions land on it again (nginx retries past it while it
       starts, so some may land elsewhere first). */
    int landed = 0;
    until = rg_now_ms() + BACK_WAIT_MS;
    for (int i = 0; i < 40 && !landed && rg_now_ms() < until; i++) {
        r = call("/v1/sessions", "{\"op\":\"session.create\"}", &st);
        if (st == 200) {
            char s2[64], p2[128], w2[16];
            snprintf(s2, sizeof s2, "%s", reply_str(r, "session"));
            worker_of(s2, w2, sizeof w2);
            landed = !strcmp(w2, w);
            snprintf(p2, sizeof p2, "/v1/sessions/%s", s2);
            http_resp d;
            if (http_request(http_port, "DELETE", p2, auth, NULL, 0, &d) == 0)
                rg_buf_destroy(&d.body);
        } else {
            rg_sleep_ms(300);
        }
        cJSON_Delete(r);
    }
    assert_true(landed);
    http_resp d;
    if (http_request(http_port, "DELETE", path, auth, NULL, 0, &d) == 0)
        rg_buf_destroy(&d.body);
}

/* Sessions made through nginx on the script's cluster spread over its masters. */
static void test_cluster_holds_the_sessions(void **state)
{
    (void)state;
    char url[256], body[512];
    httpd_url(pages, "/actions.html", url, sizeof url);
    snprintf(body, sizeof body, "{\"op\":\"session.create\",\"args\":{\"url\":\"%s\"}}", url);
    for (int i = 0; i < 6; i++)
        cJSON_Delete(ok_call("/v1/sessions", body));
    int holding = 0;
    for (int i = 0; i < 3; i++) {
        struct timeval tv = {2, 0};
        redisContext *c = redisConnectWithTimeout("127.0.0.1", redis_port + i, tv);
        assert_true(c && !c->err);
        redisReply *r = redisCommand(c, "EVAL %s 0", "return #redis.call('KEYS', 'rg:{t:dev:s:*}:meta')");
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_INTEGER);
        holding += r->integer > 0;
        freeReplyObject(r);
        redisFree(c);
    }
    assert_true(holding >= 2);
}

/* SIGTERM stops everything the script started, by the PIDs it recorded. */
static void test_sigterm_leaves_nothing(void **state)
{
    (void)state;
    pid_t recorded[WORKERS + 4];
    int n = 0;
    static const char *const single[] = {"redis", "nginx", "worker-w1", "worker-w2"};
    static const char *const cluster[] = {"redis-n0", "redis-n1", "redis-n2", "nginx",
                                          "worker-w1", "worker-w2"};
    const char *const *names = cluster_mode ? cluster : single;
    size_t count = cluster_mode ? 6 : 4;
    for (size_t i = 0; i < count; i++) {
        pid_t p = pid_in(names[i]);
        assert_true(p > 0);
        recorded[n++] = p;
    }
    assert_int_equal(kill(run_pid, SIGTERM), 0);
    int status = 0;
    int64_t until = rg_now_ms() + 90000;
    pid_t got = 0;
    while (rg_now_ms() < until && (got = waitpid(run_pid, &status, WNOHANG)) == 0)
        rg_sleep_ms(100);
    assert_int_equal(got, run_pid);
    run_pid = -1;
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int i = 0; i < n; i++)
        assert_false(procs_running(recorded[i]));
    for (size_t i = 0; i < count; i++)
        assert_int_equal(pid_in(names[i]), -1);
}

/* 1 when port is one of the block group_setup took for the stack. */
static int in_block(int block, int port)
{
    return port > block && port <= block + 2 + 2 * WORKERS;
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(run_dir, sizeof run_dir, "/tmp/refgate-makerun-%d%s", (int)getpid(),
             cluster_mode ? "-cluster" : "");
    mkdir(run_dir, 0755);
    /* The stack's ports, bound seconds later by run.sh, in one block below
       the kernel's ephemeral range: nginx's, Redis's (unless a cluster's,
       below), then the workers' FastCGI and WebSocket ports. A port the
       kernel hands out (support_free_port) can be taken meanwhile by any
       outgoing connection; one taken so failed a test stack's nginx in CI. */
    int block = support_free_range(2 + 2 * WORKERS, 0);
    if (block <= 0)
        return -1;
    http_port = block + 1;
    redis_port = block + 2;
    fcgi_base = block + 2;          /* its workers: + 1 .. + WORKERS */
    ws_base = block + 2 + WORKERS;  /* the same */
    /* A cluster takes the port, the next two, and each one's bus port (+10000),
       chosen here and bound seconds later by the script: all six below the
       kernel's ephemeral range (32768 and up), so no outgoing connection of
       the busy machine can take one meanwhile (the likeliest cause of one CI
       failure: run.sh exited early, the cluster's ports taken). */
    for (int tries = 0; cluster_mode && tries < 200; tries++) {
        redis_port = 12000 + (int)((getpid() * 7919u + (unsigned)tries * 104729u) % 10000u);
        int ok = 1;
        for (int i = 0; ok && i < 3; i++)
            ok = support_port_free(redis_port + i) && support_port_free(redis_port + 10000 + i) &&
                 !in_block(block, redis_port + i) && !in_block(block, redis_port + 10000 + i);
        if (ok)
            break;
        redis_port = -1;
    }
    if (redis_port <= 0)
        return -1;
    pages = httpd_start("tests/fixtures");
    if (!pages)
        return -1;
    char out[400];
    snprintf(out, sizeof out, "%s/run.out", run_dir);
    const char *server = stack_server_bin();
    char cli[512];
    snprintf(cli, sizeof cli, "%s", server);
    char *slash = strrchr(cli, '/');
    if (slash)
        snprintf(slash + 1, sizeof cli - (size_t)(slash + 1 - cli), "refgate-cli");
    run_pid = fork();
    if (run_pid < 0)
        return -1;
    if (run_pid == 0) {
        char v[7][600];
        snprintf(v[0], sizeof v[0], "%s", run_dir);
        snprintf(v[1], sizeof v[1], "%d", http_port);
        snprintf(v[2], sizeof v[2], "%d", fcgi_base);
        snprintf(v[3], sizeof v[3], "%d", ws_base);
        snprintf(v[4], sizeof v[4], "%d", redis_port);
        setenv("REFGATE_RUN_DIR", v[0], 1);
        setenv("REFGATE_HTTP_PORT", v[1], 1);
        setenv("REFGATE_FCGI_BASE_PORT", v[2], 1);
        setenv("REFGATE_WS_BASE_PORT", v[3], 1);
        setenv("REFGATE_REDIS_PORT", v[4], 1);
        setenv("REFGATE_REDIS_MODE", cluster_mode ? "cluster" : "single", 1);
        setenv("REFGATE_WORKERS", "2", 1);
        setenv("REFGATE_SERVER_BIN", server, 1);
        setenv("REFGATE_CLI_BIN", cli, 1);
        unsetenv("REFGATE_REDIS_URL");
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        setsid(); /* as from a terminal of its own: our signals are ours */
        execlp("bash", "bash", "scripts/run.sh", (char *)NULL);
        _exit(127);
    }
    /* Up when the development key is written (the script's last step). */
    char key_path[400];
    snprintf(key_path, sizeof key_path, "%s/dev-key", run_dir);
    int64_t until = rg_now_ms() + UP_WAIT_MS;
    while (rg_now_ms() < until) {
        FILE *f = fopen(key_path, "r");
        if (f) {
            char key[200] = "";
            int got = fgets(key, sizeof key, f) != NULL;
            fclose(f);
            key[strcspn(key, "\r\n")] = 0;
            if (got && *key) {
                snprintf(auth, sizeof auth,
                         "Authorization: Bearer %s\r\nContent-Type: application/json\r\n", key);
                return 0;
            }
        }
        int status;
        if (waitpid(run_pid, &status, WNOHANG) == run_pid) {
            fprintf(stderr, "test_make_run: scripts/run.sh exited early; see %s\n", out);
            run_pid = -1;
            return -1;
        }
        rg_sleep_ms(250);
    }
    fprintf(stderr, "test_make_run: no dev key within %d ms; see %s\n", UP_WAIT_MS, out);
    return -1;
}

static int group_teardown(void **state)
{
    (void)state;
    if (run_pid > 0) {
        kill(run_pid, SIGTERM);
        int status;
        int64_t until = rg_now_ms() + 90000;
        while (rg_now_ms() < until && waitpid(run_pid, &status, WNOHANG) == 0)
            rg_sleep_ms(100);
    }
    if (pages)
        httpd_stop(pages);
    /* the run directory this test made: logs, Redis data, nginx's files */
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", run_dir);
    if (run_dir[0] && system(cmd) != 0)
        fprintf(stderr, "test_make_run: could not remove %s\n", run_dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worker_killed_under_make_run),
        cmocka_unit_test(test_sigterm_leaves_nothing),
    };
    int rc = FX_RUN("make_run", tests, group_setup, group_teardown);
    const struct CMUnitTest cluster_tests[] = {
        cmocka_unit_test(test_cluster_holds_the_sessions),
        cmocka_unit_test(test_sigterm_leaves_nothing),
    };
    cluster_mode = 1;
    pages = NULL;
    run_pid = -1;
    return FX_RUN("make_run_cluster", cluster_tests, group_setup, group_teardown) || rc;
}
