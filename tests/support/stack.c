/*
 * stack.c - the whole of refgate for a test: a private redis-server, N
 * refgate-server workers and nginx with the configuration scripts/
 * nginx-conf.sh writes, on free loopback ports, in a fresh directory; every
 * process started here and stopped by its PID.
 */
#define _GNU_SOURCE
#include "stack.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net.h"
#include "support.h"
#include "tenant/tenant.h"

#define WORKERS_MAX 8

struct stack {
    char dir[128];
    redissrv *redis; /* NULL on a Redis the caller runs (stack_start_on) */
    char redis_url[512];
    int n;
    pid_t workers[WORKERS_MAX + 1];
    int in_nginx[WORKERS_MAX + 1]; /* worker i is in nginx's configuration */
    int fcgi_base, ws_base;
    pid_t nginx;
    int port;
    char key[2][TENANT_KEY_SIZE];
    const char *const *env;
};

/*
 * A base port with `n` free ports after it, below the ephemeral ports
 * (support_free_range): a port free when the stack starts must still be
 * free when a worker is added later (stack_add_worker).
 */
static int free_range(int n)
{
    return support_free_range(n, 0);
}

static pid_t spawn(const char *const *argv, const char *const *env, const char *log)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGTERM); /* nothing outlives a crashed test */
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0)
        dup2(null, 0);
    for (int i = 0; env && env[i]; i++)
        putenv((char *)env[i]);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
        dup2(fd, 2);
        dup2(fd, 1);
    }
    execvp(argv[0], (char *const *)argv);
    _exit(127);
}

static int healthy(int port)
{
    http_resp r;
    int ok = http_request(port, "GET", "/healthz", NULL, NULL, 0, &r) == 0 && r.status == 200;
    rg_buf_destroy(&r.body);
    return ok;
}

/* The server built with this binary: ../refgate-server from its directory
   (build/tests, build/asan/tests, build/bench), or REFGATE_SERVER_BIN. */
const char *stack_server_bin(void)
{
    static char path[512];
    const char *env = getenv("REFGATE_SERVER_BIN");
    if (env && *env)
        return env;
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
    if (n <= 0)
        return "build/refgate-server";
    path[n] = '\0';
    char *slash = strrchr(path, '/');
    if (slash)
        *slash = '\0';
    slash = strrchr(path, '/');
    if (slash)
        strcpy(slash, "/refgate-server");
    return path;
}

static pid_t start_worker(stack *s, int i)
{
    char id[32], fcgi[64], ws[64], run[192], log[192];
    snprintf(id, sizeof id, "REFGATE_WORKER_ID=w%d", i);
    char index[48], count[48];
    snprintf(index, sizeof index, "REFGATE_WORKER_INDEX=%d", i);
    snprintf(count, sizeof count, "REFGATE_WORKERS=%d", s->n);
    snprintf(fcgi, sizeof fcgi, "REFGATE_FCGI_LISTEN=127.0.0.1:%d", s->fcgi_base + i);
    snprintf(ws, sizeof ws, "REFGATE_WS_LISTEN=127.0.0.1:%d", s->ws_base + i);
    snprintf(run, sizeof run, "REFGATE_RUN_DIR=%s/worker-w%d", s->dir, i);
    snprintf(log, sizeof log, "%s/worker-w%d.log", s->dir, i);
    char redis[600];
    snprintf(redis, sizeof redis, "REFGATE_REDIS_URL=%s", s->redis_url);
    const char *env[32];
    int n = 0;
    env[n++] = id;
    env[n++] = index;
    env[n++] = count;
    env[n++] = fcgi;
    env[n++] = ws;
    env[n++] = run;
    env[n++] = redis;
    env[n++] = "REFGATE_BROWSERS=1";
    env[n++] = "REFGATE_SESSION_LEASE_MS=2000";
    for (int k = 0; s->env && s->env[k] && n < 31; k++)
        env[n++] = s->env[k];
    env[n] = NULL;
    const char *argv[] = {stack_server_bin(), NULL};
    return spawn(argv, env, log);
}

/* A worker is up once its FastCGI port accepts (it listens after its pool started). */
static int worker_healthy(stack *s, int i)
{
    int fd = http_connect(s->fcgi_base + i);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

/*
 * The end of worker i's log on stderr: a worker that ends badly (an ASan
 * report, a crash, an error at exit) says why in the test's own output,
 * which is all CI keeps.
 */
static void print_log_tail(const stack *s, int i, const char *why)
{
    char path[192];
    static char buf[6144];
    snprintf(path, sizeof path, "%s/worker-w%d.log", s->dir, i);
    const char *tail = support_file_tail(path, buf, sizeof buf);
    if (!tail) {
        fprintf(stderr, "stack: worker w%d %s; no log at %s\n", i, why, path);
        return;
    }
    size_t n = strlen(tail);
    fprintf(stderr, "stack: worker w%d %s; the end of %s:\n%s%s-- end of w%d's log\n", i, why, path,
            tail, n && tail[n - 1] != '\n' ? "\n" : "", i);
}

/* 1 when nginx's error log says its port was taken; with print, the log's end to stderr. */
static int nginx_log(const stack *s, int print)
{
    char path[192];
    static char buf[4096];
    snprintf(path, sizeof path, "%s/nginx/error.log", s->dir);
    const char *tail = support_file_tail(path, buf, sizeof buf);
    if (print)
        fprintf(stderr, "stack: the end of %s:\n%s\n-- end of nginx's log\n", path,
                tail ? tail : "(none)");
    return tail && strstr(tail, "Address already in use");
}

static int wait_until(stack *s, int i, int timeout_ms)
{
    for (int64_t end = rg_now_ms() + timeout_ms; rg_now_ms() < end; rg_sleep_ms(50)) {
        if (i ? worker_healthy(s, i) : healthy(s->port))
            return 0;
        if (i && waitpid(s->workers[i], NULL, WNOHANG) == s->workers[i]) {
            s->workers[i] = 0;
            print_log_tail(s, i, "exited before it was healthy");
            return -1;
        }
        if (!i && s->nginx > 0 && waitpid(s->nginx, NULL, WNOHANG) == s->nginx) {
            s->nginx = 0; /* its master gave up: no use waiting */
            return -1;
        }
    }
    if (i)
        print_log_tail(s, i, "was not healthy in time");
    return -1;
}

struct rg_redis *stack_redis_client(const stack *s)
{
    rg_redis_config rc;
    rg_redis_config_default(&rc);
    rc.url = stack_redis_url(s);
    rg_redis *r;
    char err[128];
    return rg_redis_new(&rc, &r, err, sizeof err) < 0 ? NULL : r;
}

int stack_make_tenant(const char *redis_url, const tenant *t, char *key, size_t key_len, char *err,
                      size_t errlen)
{
    rg_redis_config rc;
    rg_redis_config_default(&rc);
    rc.url = redis_url;
    rg_redis *r;
    int rc2 = rg_redis_new(&rc, &r, err, errlen);
    if (rc2 < 0)
        return rc2;
    tenant spec;
    rc2 = tenant_copy(&spec, t);
    if (rc2 == 0) {
        snprintf(spec.id, sizeof spec.id, "%s", t->name);
        rc2 = tenant_create(r, &spec, key, key_len, err, errlen);
        tenant_destroy(&spec);
    } else {
        snprintf(err, errlen, "out of memory");
    }
    rg_redis_free(r);
    return rc2;
}

static int make_tenants(stack *s)
{
    const char *names[] = {"acme", "other"};
    int rc = 0;
    for (int i = 0; i < 2 && rc == 0; i++) {
        tenant t;
        tenant_init(&t);
        snprintf(t.name, sizeof t.name, "%s", names[i]);
        t.allow_private = 1;
        t.allow_eval = i == 0;
        /* Tests and benchmarks drive these hard; limits have tenants of their own. */
        t.rate = 100000;
        t.max_concurrent = 64;
        t.max_sessions = 1000;
        char err[256];
        rc = stack_make_tenant(s->redis_url, &t, s->key[i], sizeof s->key[i], err,
                               sizeof err);
        if (rc < 0)
            fprintf(stderr, "stack: tenant %s: %s\n", names[i], err);
        tenant_destroy(&t);
    }
    return rc;
}

/* Renders nginx's configuration for the workers in it (scripts/nginx-conf.sh). */
static int render_nginx(stack *s)
{
    char conf_dir[192], listen[64], fb[16], wb[16], ids[64] = "", cmd[700];
    snprintf(conf_dir, sizeof conf_dir, "%s/nginx", s->dir);
    snprintf(listen, sizeof listen, "127.0.0.1:%d", s->port);
    snprintf(fb, sizeof fb, "%d", s->fcgi_base);
    snprintf(wb, sizeof wb, "%d", s->ws_base);
    size_t at = 0;
    for (int i = 1; i <= s->n; i++)
        if (s->in_nginx[i])
            at += (size_t)snprintf(ids + at, sizeof ids - at, "%s%d", at ? "," : "", i);
    const char *max_body = getenv("REFGATE_MAX_BODY_BYTES");
    for (int i = 0; s->env && s->env[i]; i++)
        if (!strncmp(s->env[i], "REFGATE_MAX_BODY_BYTES=", 23))
            max_body = s->env[i] + 23;
    snprintf(cmd, sizeof cmd,
             "sh scripts/nginx-conf.sh --worker-ids %s --listen %s --fcgi-base %s --ws-base %s "
             "--max-body %s '%s' >>'%s/nginx-conf.log' 2>&1",
             ids, listen, fb, wb, max_body ? max_body : "1048576", conf_dir, s->dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "stack: %s failed\n", cmd);
        return -1;
    }
    return 0;
}

static int start_nginx(stack *s)
{
    char conf_dir[192], conf[256], err[256];
    if (render_nginx(s) < 0)
        return -1;
    snprintf(conf_dir, sizeof conf_dir, "%s/nginx", s->dir);
    snprintf(conf, sizeof conf, "%s/nginx.conf", conf_dir);
    snprintf(err, sizeof err, "%s/error.log", conf_dir);
    char log[192];
    snprintf(log, sizeof log, "%s/nginx.log", s->dir);
    const char *argv[] = {"nginx", "-p", conf_dir, "-c", conf, "-e", err, NULL};
    s->nginx = spawn(argv, NULL, log);
    return s->nginx > 0 ? 0 : -1;
}

/*
 * Renders the configuration again and reloads nginx (SIGHUP to its master,
 * by PID); 0 once the master runs new worker processes and the old ones
 * (which may still hold connections under the old configuration) are gone.
 */
static int reload_nginx(stack *s)
{
    if (s->nginx <= 0 || render_nginx(s) < 0)
        return -1;
    pid_t before[32], now[32];
    int nb = procs_descendants(s->nginx, before, 32);
    if (kill(s->nginx, SIGHUP) != 0)
        return -1;
    for (int64_t end = rg_now_ms() + 30000; rg_now_ms() < end; rg_sleep_ms(50)) {
        int nn = procs_descendants(s->nginx, now, 32), old = 0, fresh = 0;
        for (int i = 0; i < nn; i++) {
            int was = 0;
            for (int j = 0; j < nb && !was; j++)
                was = now[i] == before[j];
            if (!procs_running(now[i]))
                continue;
            if (was)
                old++;
            else
                fresh++;
        }
        if (!old && fresh)
            return 0;
    }
    fprintf(stderr, "stack: nginx did not reload (see %s/nginx/error.log)\n", s->dir);
    return -1;
}

int stack_add_worker(stack *s)
{
    int i = s->n + 1;
    if (i > WORKERS_MAX)
        return -1;
    s->n = i;
    if ((s->workers[i] = start_worker(s, i)) <= 0 || wait_until(s, i, 60000) < 0) {
        fprintf(stderr, "stack: worker w%d did not start (see %s/worker-w%d.log)\n", i, s->dir, i);
        return -1;
    }
    s->in_nginx[i] = 1;
    return reload_nginx(s) == 0 ? i : -1;
}

int stack_remove_worker(stack *s, int i)
{
    if (i < 1 || i > s->n || !s->in_nginx[i])
        return -1;
    s->in_nginx[i] = 0;
    if (reload_nginx(s) < 0)
        return -1;
    return stack_kill_worker(s, i, SIGTERM) < 0 ? -1 : 0;
}

stack *stack_start(int workers, const char *const *env)
{
    return stack_start_on(workers, env, NULL);
}

stack *stack_start_on(int workers, const char *const *env, const char *redis_url)
{
    stack *s = calloc(1, sizeof *s);
    if (!s || workers < 1 || workers > WORKERS_MAX) {
        free(s);
        return NULL;
    }
    snprintf(s->dir, sizeof s->dir, "/tmp/refgate-test-stack-XXXXXX");
    if (!mkdtemp(s->dir)) {
        free(s);
        return NULL;
    }
    chmod(s->dir, 0755); /* nginx's workers run as nobody */
    s->n = workers;
    s->env = env;
    /* Room for workers added later (stack_add_worker). */
    s->fcgi_base = free_range(WORKERS_MAX);
    s->ws_base = free_range(WORKERS_MAX + 10) + 10;
    /* nginx's port, past those and below the ephemeral range too: the
       workers start first, for seconds, and an outgoing connection of
       theirs (or of anything else on the machine) could take a port the
       kernel had just handed out; one took nginx's in a CI run. */
    int top = free_range(WORKERS_MAX + 21);
    s->port = top + WORKERS_MAX + 21;
    if (s->fcgi_base < 0 || s->ws_base < 10 || top < 0)
        goto fail; /* no room below the ephemeral range */
    if (redis_url)
        snprintf(s->redis_url, sizeof s->redis_url, "%s", redis_url);
    else if ((s->redis = redissrv_start(NULL)))
        snprintf(s->redis_url, sizeof s->redis_url, "%s", redissrv_url(s->redis));
    else
        goto fail;
    if (make_tenants(s) < 0)
        goto fail;
    for (int i = 1; i <= workers; i++) {
        s->in_nginx[i] = 1;
        if ((s->workers[i] = start_worker(s, i)) <= 0)
            goto fail;
    }
    for (int i = 1; i <= workers; i++)
        if (wait_until(s, i, 60000) < 0) {
            fprintf(stderr, "stack: worker w%d did not start (see %s/worker-w%d.log)\n", i,
                    s->dir, i);
            goto fail;
        }
    for (int tries = 0;; tries++) {
        if (start_nginx(s) == 0 && wait_until(s, 0, 20000) == 0)
            break;
        /* Taken after all (a port may be in use without a listener, which
           the check cannot see): another, below the ephemeral range. */
        int other = tries < 3 && s->nginx == 0 && nginx_log(s, 0)
                        ? support_free_range(1 + tries, 0) /* each try a base of its own */
                        : -1;
        if (other > 0) {
            fprintf(stderr, "stack: nginx's port %d was taken; another\n", s->port);
            s->port = other + 1 + tries; /* checked free with those below it */
            continue;
        }
        fprintf(stderr, "stack: nginx did not start on port %d\n", s->port);
        nginx_log(s, 1);
        goto fail;
    }
    return s;
fail:
    stack_stop(s);
    return NULL;
}

int stack_kill_worker(stack *s, int i, int sig)
{
    if (i < 1 || i > s->n || s->workers[i] <= 0)
        return -1;
    kill(s->workers[i], sig);
    int status = 0;
    pid_t r = waitpid(s->workers[i], &status, 0);
    s->workers[i] = 0;
    int code = r > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    /* SIGTERM asks for a clean exit; a kill that means to crash it does not */
    if (sig == SIGTERM && code != 0) {
        char why[64];
        if (r > 0 && WIFSIGNALED(status))
            snprintf(why, sizeof why, "was ended by signal %d", WTERMSIG(status));
        else
            snprintf(why, sizeof why, "exited with %d", code);
        print_log_tail(s, i, why);
    }
    return code;
}

int stack_restart_worker(stack *s, int i)
{
    if (i < 1 || i > s->n || s->workers[i] > 0)
        return -1;
    char log[192];
    snprintf(log, sizeof log, "%s/worker-w%d.log", s->dir, i);
    if (truncate(log, 0) != 0)
        fprintf(stderr, "stack: could not truncate %s\n", log);
    if ((s->workers[i] = start_worker(s, i)) <= 0)
        return -1;
    return wait_until(s, i, 60000);
}

void stack_stop(stack *s)
{
    if (!s)
        return;
    if (s->nginx > 0) {
        kill(s->nginx, SIGTERM);
        waitpid(s->nginx, NULL, 0);
    }
    for (int i = 1; i <= s->n; i++)
        if (s->workers[i] > 0)
            stack_kill_worker(s, i, SIGTERM);
    redissrv_free(s->redis);
    if (!getenv("RG_KEEP_STACK") && rg_rmtree(s->dir) != 0)
        fprintf(stderr, "stack: could not remove %s\n", s->dir);
    free(s);
}

int stack_port(const stack *s)
{
    return s->port;
}

const char *stack_key(const stack *s, int other)
{
    return s->key[other ? 1 : 0];
}

const char *stack_redis_url(const stack *s)
{
    return s->redis_url;
}

pid_t stack_worker_pid(const stack *s, int i)
{
    return i >= 1 && i <= s->n ? s->workers[i] : 0;
}

int stack_fcgi_port(const stack *s, int i)
{
    return s->fcgi_base + i;
}

int stack_ws_port(const stack *s, int i)
{
    return s->ws_base + i;
}

const char *stack_dir(const stack *s)
{
    return s->dir;
}

struct redissrv *stack_redis(stack *s)
{
    return s->redis;
}

pid_t stack_nginx_pid(const stack *s)
{
    return s->nginx;
}

double stack_metric(const stack *s, int i, const char *name)
{
    const char *params[] = {"REQUEST_METHOD=GET", "SCRIPT_NAME=/metrics", "DOCUMENT_URI=/metrics",
                            "REQUEST_URI=/metrics", NULL};
    http_resp r;
    if (fcgi_request(stack_fcgi_port(s, i), params, NULL, 0, &r) < 0)
        return -1;
    rg_buf_puts(&r.body, "");
    double v = r.body.data ? metric_value(r.body.data, name) : -1;
    rg_buf_destroy(&r.body);
    return v;
}

long proc_rss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            kb = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kb;
}
