/* redis.c - a private redis-server for tests and benchmarks, stopped by PID. */
#define _GNU_SOURCE
#include "support.h"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct redissrv {
    int port;
    pid_t pid;
    char password[64];
    char dir[128];
    char url[160];
};

int support_port_free(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

int support_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &l) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* The lowest of the kernel's ephemeral ports, which outgoing connections take. */
static int ephemeral_low(void)
{
    int lo = 32768, hi = 60999;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f) {
        if (fscanf(f, "%d %d", &lo, &hi) != 2)
            lo = 32768;
        fclose(f);
    }
    return lo;
}

int support_free_range(int n, int also)
{
    int lo = 10000, span = ephemeral_low() - n - 1 - also - lo;
    if (span < 1000) {
        lo = 20000; /* an odd ephemeral range: anywhere, as before */
        span = 30000;
    }
    for (int tries = 0; tries < 50; tries++) {
        int base = lo + (int)(((unsigned)getpid() * 7919u + (unsigned)tries * 104729u) % (unsigned)span);
        int ok = base + n + also < 65536;
        for (int i = 1; i <= n && ok; i++)
            ok = support_port_free(base + i) && (!also || support_port_free(base + i + also));
        if (ok)
            return base;
    }
    return -1;
}

redisContext *redissrv_connect(const redissrv *r)
{
    struct timeval tv = {1, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
    if (!c || c->err) {
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    if (r->password[0]) {
        redisReply *rep = redisCommand(c, "AUTH %s", r->password);
        freeReplyObject(rep);
    }
    return c;
}

static int spawn(redissrv *r)
{
    char port[16];
    snprintf(port, sizeof port, "%d", r->port);
    r->pid = fork();
    if (r->pid < 0)
        return -1;
    if (r->pid == 0) {
        /* It dies with the test, and never holds the test's output open. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
        }
        const char *argv[20];
        int a = 0;
        argv[a++] = "redis-server";
        argv[a++] = "--port";
        argv[a++] = port;
        argv[a++] = "--bind";
        argv[a++] = "127.0.0.1";
        argv[a++] = "--save";
        argv[a++] = "";
        argv[a++] = "--appendonly";
        argv[a++] = "yes";
        argv[a++] = "--dir";
        argv[a++] = r->dir;
        argv[a++] = "--logfile";
        argv[a++] = "redis.log";
        if (r->password[0]) {
            argv[a++] = "--requirepass";
            argv[a++] = r->password;
        }
        argv[a] = NULL;
        execvp("redis-server", (char *const *)argv);
        _exit(127);
    }
    for (int i = 0; i < 250; i++) {
        redisContext *c = redissrv_connect(r);
        if (c) {
            redisReply *rep = redisCommand(c, "PING");
            int ok = rep && rep->type == REDIS_REPLY_STATUS;
            freeReplyObject(rep);
            redisFree(c);
            if (ok)
                return 0;
        }
        usleep(20000);
    }
    return -1;
}

redissrv *redissrv_start(const char *password)
{
    redissrv *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    snprintf(r->dir, sizeof r->dir, "/tmp/refgate-test-redis-XXXXXX");
    r->port = support_free_port();
    if (!mkdtemp(r->dir) || r->port <= 0) {
        free(r);
        return NULL;
    }
    if (password)
        snprintf(r->password, sizeof r->password, "%s", password);
    snprintf(r->url, sizeof r->url, "redis://%s%s%s127.0.0.1:%d", password ? ":" : "",
             password ? password : "", password ? "@" : "", r->port);
    if (spawn(r) < 0) {
        redissrv_free(r);
        return NULL;
    }
    return r;
}

int redissrv_port(const redissrv *r)
{
    return r->port;
}

const char *redissrv_url(const redissrv *r)
{
    return r->url;
}

void redissrv_stop(redissrv *r)
{
    if (r->pid > 0) {
        kill(r->pid, SIGCONT);
        kill(r->pid, SIGTERM);
        waitpid(r->pid, NULL, 0);
        r->pid = 0;
    }
}

int redissrv_restart(redissrv *r)
{
    redissrv_stop(r);
    return spawn(r);
}

void redissrv_freeze(redissrv *r, int frozen)
{
    if (r->pid > 0)
        kill(r->pid, frozen ? SIGSTOP : SIGCONT);
}

void redissrv_free(redissrv *r)
{
    if (!r)
        return;
    redissrv_stop(r);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "redissrv: could not remove %s\n", r->dir);
    free(r);
}

int redissrv_replica_online(const redissrv *master)
{
    for (int i = 0; i < 500; i++) {
        redisContext *c = redissrv_connect(master);
        redisReply *r = c ? redisCommand(c, "INFO replication") : NULL;
        int ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "connected_slaves:1") &&
                 strstr(r->str, "state=online");
        freeReplyObject(r);
        if (c)
            redisFree(c);
        if (ok)
            return 0;
        usleep(20000);
    }
    return -1;
}
