/*
 * cluster.c - a private Redis Cluster for tests: redis-server processes with
 * cluster-enabled on free loopback ports, joined by `redis-cli --cluster
 * create`, each stopped by its PID. Test code only.
 */
#define _GNU_SOURCE
#include "support.h"

#include "common/rg.h"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NODES_MAX 12

struct rediscluster {
    int n;
    int port[NODES_MAX];
    pid_t pid[NODES_MAX];
    char dir[128];
    char url[NODES_MAX * 24 + 32];
};

/*
 * The one way down for a cluster and for a sentinel setup: every process
 * still running stopped (SIGTERM, by PID, last started first) and waited
 * for, then the directory removed unless RG_KEEP_STACK keeps it for a look.
 */
static void stop_all(pid_t *pid, int n, const char *dir, const char *what)
{
    for (int i = n - 1; i >= 0; i--)
        if (pid[i] > 0) {
            kill(pid[i], SIGTERM);
            waitpid(pid[i], NULL, 0);
            pid[i] = 0;
        }
    if (getenv("RG_KEEP_STACK"))
        fprintf(stderr, "%s: kept %s\n", what, dir);
    else if (dir[0] && rg_rmtree(dir) != 0)
        fprintf(stderr, "%s: could not remove %s\n", what, dir);
}

static pid_t spawn_node(const rediscluster *c, int i)
{
    char port[16], dir[160], timeout[16];
    snprintf(port, sizeof port, "%d", c->port[i]);
    snprintf(dir, sizeof dir, "%s/n%d", c->dir, i);
    snprintf(timeout, sizeof timeout, "%d", 1000);
    mkdir(dir, 0700);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
    }
    const char *argv[] = {"redis-server", "--port", port, "--bind", "127.0.0.1", "--dir", dir,
                          "--logfile", "redis.log", "--save", "", "--appendonly", "no",
                          "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                          "--cluster-node-timeout", timeout,
                          /* A replica may always take over: the test kills masters. */
                          "--cluster-replica-validity-factor", "0", NULL};
    execvp("redis-server", (char *const *)argv);
    _exit(127);
}

/* Says why node i failed, with the end of its log, before its directory goes. */
static void node_failed(const rediscluster *c, int i, const char *why)
{
    char path[200], buf[2048];
    snprintf(path, sizeof path, "%s/n%d/redis.log", c->dir, i);
    const char *tail = support_file_tail(path, buf, sizeof buf);
    fprintf(stderr, "cluster: node %d (127.0.0.1:%d) %s; its log ends:\n%s\n", i, c->port[i], why,
            tail && *tail ? tail : "(empty or missing)");
}

redisContext *rediscluster_connect(const rediscluster *c, int i)
{
    struct timeval tv = {1, 0};
    redisContext *k = redisConnectWithTimeout("127.0.0.1", c->port[i], tv);
    if (!k || k->err) {
        if (k)
            redisFree(k);
        return NULL;
    }
    redisSetTimeout(k, tv);
    return k;
}

/* A field of CLUSTER INFO on node i ("cluster_state"), into out. */
static int info_field(const rediscluster *c, int i, const char *name, char *out, size_t len)
{
    redisContext *k = rediscluster_connect(c, i);
    redisReply *r = k ? redisCommand(k, "CLUSTER INFO") : NULL;
    int rc = -1;
    if (r && r->type == REDIS_REPLY_STRING) {
        const char *p = strstr(r->str, name);
        if (p && p[strlen(name)] == ':') {
            p += strlen(name) + 1;
            size_t n = strcspn(p, "\r\n");
            snprintf(out, len, "%.*s", (int)n, p);
            rc = 0;
        }
    }
    freeReplyObject(r);
    if (k)
        redisFree(k);
    return rc;
}

int rediscluster_wait_ok(const rediscluster *c, int timeout_ms)
{
    for (int waited = 0; waited < timeout_ms; waited += 50) {
        int ok = 1;
        for (int i = 0; i < c->n && ok; i++) {
            char state[16];
            if (c->pid[i] <= 0)
                continue;
            ok =
                info_field(c, i, "cluster_state", state, sizeof state) == 0 && !strcmp(state, "ok");
        }
        if (ok)
            return 0;
        usleep(50000);
    }
    return -1;
}

rediscluster *rediscluster_start(int masters, int replicas)
{
    rediscluster *c = calloc(1, sizeof *c);
    int n = masters * (1 + replicas);
    if (!c || masters < 3 || n > NODES_MAX) {
        free(c);
        return NULL;
    }
    snprintf(c->dir, sizeof c->dir, "/tmp/refgate-test-cluster-XXXXXX");
    if (!mkdtemp(c->dir)) {
        free(c);
        return NULL;
    }
    c->n = n;
    /* Cluster nodes also listen on port + 10000: both must be free, and
       below the ephemeral ports, which a busy machine's outgoing
       connections take (a node that cannot bind never answers). */
    int base = support_free_range(n, 10000);
    if (base < 0) {
        fprintf(stderr, "cluster: no %d free ports (and +10000) below the ephemeral range\n", n);
        rediscluster_free(c);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        c->port[i] = base + 1 + i;
    int at = snprintf(c->url, sizeof c->url, "redis+cluster://");
    for (int i = 0; i < masters; i++)
        at += snprintf(c->url + at, sizeof c->url - (size_t)at, "%s127.0.0.1:%d", i ? "," : "",
                       c->port[i]);
    for (int i = 0; i < n; i++)
        if ((c->pid[i] = spawn_node(c, i)) <= 0) {
            node_failed(c, i, "could not be started");
            goto fail;
        }
    for (int i = 0; i < n; i++) {
        int up = 0;
        for (int t = 0; t < 250 && !up; t++) {
            redisContext *k = rediscluster_connect(c, i);
            redisReply *r = k ? redisCommand(k, "PING") : NULL;
            up = r && r->type == REDIS_REPLY_STATUS;
            freeReplyObject(r);
            if (k)
                redisFree(k);
            if (!up)
                usleep(20000);
        }
        if (!up) {
            node_failed(c, i, "did not answer PING within 5 s");
            goto fail;
        }
    }
    char cmd[1024];
    int w = snprintf(cmd, sizeof cmd, "redis-cli --cluster create");
    for (int i = 0; i < n; i++)
        w += snprintf(cmd + w, sizeof cmd - (size_t)w, " 127.0.0.1:%d", c->port[i]);
    snprintf(cmd + w, sizeof cmd - (size_t)w,
             " --cluster-replicas %d --cluster-yes >'%s/create.log' 2>&1", replicas, c->dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "cluster: %s failed (see %s/create.log)\n", cmd, c->dir);
        goto fail;
    }
    if (rediscluster_wait_ok(c, 30000) < 0) {
        fprintf(stderr, "cluster: the cluster did not come up (see %s)\n", c->dir);
        goto fail;
    }
    /* Every replica has caught on to its master before a test kills one. */
    for (int waited = 0; replicas && waited < 30000; waited += 100) {
        int synced = 0;
        for (int i = 0; i < n; i++) {
            char role[16], link[16];
            redisContext *k = rediscluster_connect(c, i);
            redisReply *r = k ? redisCommand(k, "INFO replication") : NULL;
            if (r && r->type == REDIS_REPLY_STRING) {
                const char *p = strstr(r->str, "role:");
                const char *l = strstr(r->str, "master_link_status:");
                snprintf(role, sizeof role, "%.*s", p ? (int)strcspn(p + 5, "\r\n") : 0,
                         p ? p + 5 : "");
                snprintf(link, sizeof link, "%.*s", l ? (int)strcspn(l + 19, "\r\n") : 0,
                         l ? l + 19 : "");
                synced += !strcmp(role, "slave") && !strcmp(link, "up");
            }
            freeReplyObject(r);
            if (k)
                redisFree(k);
        }
        if (synced == masters * replicas)
            break;
        usleep(100000);
    }
    return c;
fail:
    rediscluster_free(c);
    return NULL;
}

const char *rediscluster_url(const rediscluster *c)
{
    return c->url;
}

int rediscluster_nodes(const rediscluster *c)
{
    return c->n;
}

int rediscluster_port(const rediscluster *c, int i)
{
    return i >= 0 && i < c->n ? c->port[i] : -1;
}

int rediscluster_node_of_port(const rediscluster *c, int port)
{
    for (int i = 0; i < c->n; i++)
        if (c->port[i] == port)
            return i;
    return -1;
}

int rediscluster_master_of(const rediscluster *c, int slot)
{
    for (int i = 0; i < c->n; i++) {
        if (c->pid[i] <= 0)
            continue;
        redisContext *k = rediscluster_connect(c, i);
        redisReply *r = k ? redisCommand(k, "CLUSTER SLOTS") : NULL;
        int port = -1;
        for (size_t e = 0; r && r->type == REDIS_REPLY_ARRAY && e < r->elements; e++) {
            redisReply *x = r->element[e];
            if (x->element[0]->integer <= slot && slot <= x->element[1]->integer)
                port = (int)x->element[2]->element[1]->integer;
        }
        freeReplyObject(r);
        if (k)
            redisFree(k);
        if (port > 0)
            return rediscluster_node_of_port(c, port);
    }
    return -1;
}

int rediscluster_node_id(const rediscluster *c, int i, char *out, size_t len)
{
    redisContext *k = rediscluster_connect(c, i);
    redisReply *r = k ? redisCommand(k, "CLUSTER MYID") : NULL;
    int rc = r && r->type == REDIS_REPLY_STRING ? 0 : -1;
    if (!rc)
        snprintf(out, len, "%s", r->str);
    freeReplyObject(r);
    if (k)
        redisFree(k);
    return rc;
}

void rediscluster_kill(rediscluster *c, int i)
{
    if (i < 0 || i >= c->n || c->pid[i] <= 0)
        return;
    kill(c->pid[i], SIGKILL);
    waitpid(c->pid[i], NULL, 0);
    c->pid[i] = 0;
}

void rediscluster_free(rediscluster *c)
{
    if (!c)
        return;
    stop_all(c->pid, c->n, c->dir, "cluster");
    free(c);
}

/* ---- Sentinel ---- */

struct redissentinel {
    int port[5]; /* master, replica, three sentinels */
    pid_t pid[5];
    char dir[128];
    char url[256];
};

static pid_t spawn_argv(const char *const *argv)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
    }
    execvp(argv[0], (char *const *)argv);
    _exit(127);
}

static redisContext *connect_port(int port)
{
    struct timeval tv = {1, 0};
    redisContext *k = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (!k || k->err) {
        if (k)
            redisFree(k);
        return NULL;
    }
    redisSetTimeout(k, tv);
    return k;
}

/* The integer or array length of one command's reply on port, or -1. */
static long long ask_port(int port, const char *cmd)
{
    redisContext *k = connect_port(port);
    redisReply *r = k ? redisCommand(k, cmd) : NULL;
    long long v = !r                                ? -1
                  : r->type == REDIS_REPLY_INTEGER  ? r->integer
                  : r->type == REDIS_REPLY_ARRAY    ? (long long)r->elements
                  : r->type == REDIS_REPLY_STATUS   ? 0
                                                    : -1;
    freeReplyObject(r);
    if (k)
        redisFree(k);
    return v;
}

redissentinel *redissentinel_start(void)
{
    redissentinel *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    snprintf(s->dir, sizeof s->dir, "/tmp/refgate-test-sentinel-XXXXXX");
    if (!mkdtemp(s->dir)) {
        free(s);
        return NULL;
    }
    /* below the ephemeral range: the five start one after another, and
       each one's outgoing connections could take a later one's port */
    int base = support_free_range(5, 0);
    for (int i = 0; i < 5; i++)
        s->port[i] = base > 0 ? base + 1 + i : -1;
    for (int i = 0; i < 2; i++) {
        char port[16], dir[160], master[16];
        snprintf(port, sizeof port, "%d", s->port[i]);
        snprintf(dir, sizeof dir, "%s/r%d", s->dir, i);
        snprintf(master, sizeof master, "%d", s->port[0]);
        mkdir(dir, 0700);
        const char *argv[] = {"redis-server", "--port", port, "--bind", "127.0.0.1", "--dir", dir,
                              "--logfile", "redis.log", "--save", "", "--appendonly", "no",
                              i ? "--replicaof" : NULL, "127.0.0.1", master, NULL};
        if ((s->pid[i] = spawn_argv(argv)) <= 0)
            goto fail;
    }
    for (int i = 2; i < 5; i++) {
        char conf[200];
        snprintf(conf, sizeof conf, "%s/sentinel%d.conf", s->dir, i);
        FILE *f = fopen(conf, "w");
        if (!f)
            goto fail;
        fprintf(f,
                "port %d\nbind 127.0.0.1\ndir %s\nlogfile sentinel%d.log\n"
                "sentinel monitor mymaster 127.0.0.1 %d 2\n"
                "sentinel down-after-milliseconds mymaster 1000\n"
                "sentinel failover-timeout mymaster 5000\n"
                "sentinel parallel-syncs mymaster 1\n",
                s->port[i], s->dir, i, s->port[0]);
        fclose(f);
        const char *argv[] = {"redis-server", conf, "--sentinel", NULL};
        if ((s->pid[i] = spawn_argv(argv)) <= 0)
            goto fail;
    }
    /* Up when the replica is in sync and each sentinel knows the other two
       and the replica. */
    int up = 0;
    for (int t = 0; t < 300 && !up; t++) {
        up = 1;
        for (int i = 2; i < 5 && up; i++)
            up = ask_port(s->port[i], "SENTINEL sentinels mymaster") == 2 &&
                 ask_port(s->port[i], "SENTINEL replicas mymaster") == 1;
        redisContext *k = up ? connect_port(s->port[1]) : NULL;
        redisReply *r = k ? redisCommand(k, "INFO replication") : NULL;
        up = up && r && r->type == REDIS_REPLY_STRING && strstr(r->str, "master_link_status:up");
        freeReplyObject(r);
        if (k)
            redisFree(k);
        if (!up)
            usleep(100000);
    }
    if (!up) {
        fprintf(stderr, "sentinel: the sentinels did not come up (see %s)\n", s->dir);
        goto fail;
    }
    snprintf(s->url, sizeof s->url,
             "redis+sentinel://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/mymaster", s->port[2],
             s->port[3], s->port[4]);
    return s;
fail:
    redissentinel_free(s);
    return NULL;
}

const char *redissentinel_url(const redissentinel *s)
{
    return s->url;
}

int redissentinel_port(const redissentinel *s, int i)
{
    return i >= 0 && i < 5 ? s->port[i] : -1;
}

void redissentinel_kill(redissentinel *s, int i)
{
    if (i < 0 || i >= 5 || s->pid[i] <= 0)
        return;
    kill(s->pid[i], SIGKILL);
    waitpid(s->pid[i], NULL, 0);
    s->pid[i] = 0;
}

void redissentinel_free(redissentinel *s)
{
    if (!s)
        return;
    stop_all(s->pid, 5, s->dir, "sentinel");
    free(s);
}
