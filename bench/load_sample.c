/*
 * load_sample.c - what the soak tool measures while the drivers run
 * (load.h): each worker's RSS by part and its descriptors from /proc, the
 * live sessions each worker owns from Redis, the Chromium processes below
 * the workers (and any that leave them), the workers' allocator through
 * their /metrics, and the quiet points that take a sample with no command
 * in flight. The main thread's alone, but for the pause it shares in `g`.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "load.h"
#include "tests/support/net.h"

#define DESCENDANTS_MAX 4096
#define SEEN_MAX 65536

struct pstat {
    char state;
    char comm[32];
    unsigned long long start; /* clock ticks after boot: with the PID, one process */
};

static int read_pstat(pid_t pid, struct pstat *p)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *lp = strchr(buf, '('), *rp = strrchr(buf, ')');
    if (!lp || !rp || rp < lp)
        return -1;
    snprintf(p->comm, sizeof p->comm, "%.*s", (int)(rp - lp - 1), lp + 1);
    if (sscanf(rp + 2,
               "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
               &p->state, &p->start) != 2)
        return -1;
    return 0;
}

const char *const mem_names[MEM_N] = {"rss",    "anon",  "file",   "heap", "arenas",
                                      "stacks", "other", "in_use", "free"};

#define ARENA_ALIGN (64ul << 20)
#define GUARD_MAX (64ul << 10)

static void smaps_read(pid_t pid, long *m)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/smaps", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    for (int k = MEM_HEAP; k <= MEM_OTHER; k++)
        m[k] = 0;
    unsigned long prev_end = 0, prev_len = 0;
    int prev_none = 0, kind = MEM_OTHER;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, inode;
        char perms[8], name[256] = "";
        long kib;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %lu %255s", &lo, &hi, perms, &inode, name) >= 4) {
            int rw = perms[0] == 'r' && perms[1] == 'w';
            if (!strcmp(name, "[heap]"))
                kind = MEM_HEAP;
            else if (!strcmp(name, "[stack]"))
                kind = MEM_STACKS;
            else if (inode || name[0])
                kind = MEM_OTHER;
            else if (rw && lo % ARENA_ALIGN == 0)
                kind = MEM_ARENAS;
            else if (rw && prev_none && prev_end == lo && prev_len <= GUARD_MAX)
                kind = MEM_STACKS;
            else
                kind = MEM_OTHER;
            prev_none = !strncmp(perms, "---", 3) && !inode && !name[0];
            prev_end = hi, prev_len = hi - lo;
        } else if (sscanf(line, "Anonymous: %ld kB", &kib) == 1) {
            m[kind] += kib;
        }
    }
    fclose(f);
}

/* The three parts /proc/PID/status has (all, anon, file); the rest -1. */
static void status_read(pid_t pid, long *m)
{
    char path[64], line[256];
    for (int k = 0; k < MEM_N; k++)
        m[k] = -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        sscanf(line, "VmRSS: %ld kB", &m[MEM_ALL]);
        sscanf(line, "RssAnon: %ld kB", &m[MEM_ANON]);
        if (sscanf(line, "RssFile: %ld kB", &m[MEM_FILE]) == 1)
            break;
    }
    fclose(f);
}

static void mem_read(pid_t pid, long *m)
{
    status_read(pid, m);
    if (m[MEM_ALL] >= 0)
        smaps_read(pid, m);
}

/* RSS alone, for the warm-up's settling: no smaps walk. */
static long vm_rss_kib(pid_t pid)
{
    long m[MEM_N];
    status_read(pid, m);
    return m[MEM_ALL];
}

/* The TCP sockets of this network namespace: inode, local and remote port, state. */
struct tcp_sock {
    unsigned long inode;
    int lport, rport, state;
};

static struct tcp_sock *tcp_socks;
static size_t n_tcp, cap_tcp;

#define TCP_LISTEN 0x0A
#define TCP_CLOSE_WAIT 0x08

static void tcp_load(void)
{
    n_tcp = 0;
    const char *files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(files[i], "re");
        if (!f)
            continue;
        char line[512];
        while (fgets(line, sizeof line, f)) {
            /* sl local:port remote:port st queues timer retrnsmt uid timeout inode */
            char local[64];
            unsigned lport, rport, st;
            unsigned long inode;
            if (sscanf(line, " %*d: %63[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%x %x %*s %*s %*s %*s %*s %lu",
                       local, &lport, &rport, &st, &inode) != 5)
                continue;
            if (n_tcp == cap_tcp) {
                cap_tcp = cap_tcp ? cap_tcp * 2 : 256;
                tcp_socks = xrealloc(tcp_socks, cap_tcp * sizeof *tcp_socks);
            }
            tcp_socks[n_tcp++] = (struct tcp_sock){inode, (int)lport, (int)rport, (int)st};
        }
        fclose(f);
    }
}

static const struct tcp_sock *tcp_find(unsigned long inode)
{
    for (size_t i = 0; i < n_tcp; i++)
        if (tcp_socks[i].inode == inode)
            return &tcp_socks[i];
    return NULL;
}

/* The port after the last ':' of the authority of a redis:// URL, or -1. */
static int url_port(const char *url)
{
    const char *host = strstr(url, "://");
    host = host ? host + 3 : url;
    const char *at = strchr(host, '@');
    if (at)
        host = at + 1;
    size_t n = strcspn(host, "/");
    const char *colon = memrchr(host, ':', n);
    return colon ? atoi(colon + 1) : 6379;
}

/*
 * From pid's environment: the ports of REFGATE_FCGI_LISTEN and
 * REFGATE_WS_LISTEN, and of REFGATE_REDIS_URL (or REFGATE_REDIS_PORT, or
 * RG_REDIS_DEFAULT_PORT as the worker itself would pick).
 */
void worker_ports(pid_t pid, int ports[3])
{
    char path[64], env[65536];
    ports[0] = ports[1] = -1;
    ports[2] = RG_REDIS_DEFAULT_PORT;
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    size_t n = fread(env, 1, sizeof env - 1, f);
    fclose(f);
    env[n] = '\0';
    for (size_t off = 0; off < n; off += strlen(env + off) + 1) {
        const char *v = env + off;
        int k = !strncmp(v, "REFGATE_FCGI_LISTEN=", 20) ? 0
                : !strncmp(v, "REFGATE_WS_LISTEN=", 18) ? 1
                                                        : -1;
        const char *colon = k >= 0 ? strrchr(v, ':') : NULL;
        if (colon)
            ports[k] = atoi(colon + 1);
        if (!strncmp(v, "REFGATE_REDIS_PORT=", 19))
            ports[2] = atoi(v + 19);
    }
    /* The URL wins over the port, as in rg_redis_config_from_env. */
    for (size_t off = 0; off < n; off += strlen(env + off) + 1)
        if (!strncmp(env + off, "REFGATE_REDIS_URL=", 18) && env[off + 18])
            ports[2] = url_port(env + off + 18);
}

/* Scans pid's descriptors (after tcp_load); total -1 when pid is gone. */
static void fd_scan(pid_t pid, const int ports[3], struct fdscan *out)
{
    static const char *const prefix[] = {"socket:[", "pipe:", "anon_inode:", "/dev/", "/"};
    char path[64], link[320], target[PATH_MAX];
    memset(out, 0, sizeof *out);
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    if (!d) {
        out->total = -1;
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        out->total++;
        snprintf(link, sizeof link, "%s/%s", path, e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0) {
            out->kind[FD_OTHER]++;
            continue;
        }
        target[n] = '\0';
        int k = 0;
        while (k < FD_OTHER && strncmp(target, prefix[k], strlen(prefix[k])) != 0)
            k++;
        out->kind[k]++;
        if (k != FD_SOCKET)
            continue;
        const struct tcp_sock *t = tcp_find(strtoul(target + 8, NULL, 10));
        if (!t)
            continue;
        if (t->state == TCP_CLOSE_WAIT)
            out->close_wait++;
        else if (t->state != TCP_LISTEN && (t->lport == ports[0] || t->lport == ports[1]))
            out->nginx++;
        else if (t->state != TCP_LISTEN && t->rport == ports[2])
            out->redis++;
    }
    closedir(d);
}

/* "socket 9 (nginx 3, redis 4, close_wait 0), pipe 6, ..." into out. */
void fd_describe(const struct fdscan *f, char *out, size_t len)
{
    static const char *const names[] = {"socket", "pipe", "anon", "dev", "file", "other"};
    size_t used = 0;
    out[0] = '\0';
    for (int k = 0; k < FD_KINDS && used < len; k++) {
        if (!f->kind[k])
            continue;
        used += (size_t)snprintf(out + used, len - used, "%s%s %d", used ? ", " : "", names[k],
                                 f->kind[k]);
        if (k == FD_SOCKET && used < len)
            used += (size_t)snprintf(out + used, len - used, " (nginx %d, redis %d, close_wait %d)",
                                     f->nginx, f->redis, f->close_wait);
    }
}

static int is_chromium(const struct pstat *p)
{
    return !strncmp(p->comm, "chrom", 5); /* chromium, chrome_crashpad */
}

/* Every Chromium process ever seen below a worker: checked for leftovers. */
static struct seen {
    pid_t pid;
    unsigned long long start;
} seen[SEEN_MAX];
int n_seen;

static void seen_add(pid_t pid, unsigned long long start)
{
    for (int i = n_seen - 1; i >= 0; i--)
        if (seen[i].pid == pid && seen[i].start == start)
            return;
    if (n_seen < SEEN_MAX)
        seen[n_seen++] = (struct seen){pid, start};
}

/* The descriptors the fd criterion counts: all but nginx's and Redis's connections. */
int fds_own(const struct sample *s, int w)
{
    return s->fd[w].total < 0 ? -1 : s->fd[w].total - s->fd[w].nginx - s->fd[w].redis;
}

struct workers workers;

/* Below the workers now: pids (unsorted) into out, up to max. */
static int below_workers(pid_t *out, int max)
{
    int n = 0;
    for (int i = 1; i <= workers.n && n < max; i++)
        if (workers.pid[i] > 0)
            n += procs_descendants(workers.pid[i], out + n, max - n);
    return n;
}

rg_redis *sample_redis; /* the stack's Redis, for live_sessions */

/* Live sessions per worker: the owner and state of every rg:*:meta, on
   every master (a scan sees one node's keys). */
static void live_sessions(int *live)
{
    for (int i = 1; i <= workers.n; i++)
        live[i] = -1;
    int masters = sample_redis ? rg_redis_masters(sample_redis) : -1;
    if (masters < 1)
        return;
    for (int i = 1; i <= workers.n; i++)
        live[i] = 0;
    int failed = 0;
    for (int m = 0; m < masters && !failed; m++) {
        redisContext *c = rg_redis_take_master(sample_redis, m);
        if (!c) {
            failed = 1;
            break;
        }
        char cursor[32] = "0";
        do {
            redisReply *r = redisCommand(c, "SCAN %s MATCH rg:*:meta COUNT 1000", cursor);
            if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
                failed = 1;
                freeReplyObject(r);
                break;
            }
            snprintf(cursor, sizeof cursor, "%s", r->element[0]->str ? r->element[0]->str : "0");
            for (size_t k = 0; k < r->element[1]->elements; k++) {
                redisReply *h =
                    redisCommand(c, "HMGET %s state owner", r->element[1]->element[k]->str);
                if (h && h->type == REDIS_REPLY_ARRAY && h->elements == 2 &&
                    h->element[0]->type == REDIS_REPLY_STRING &&
                    h->element[1]->type == REDIS_REPLY_STRING &&
                    !strcmp(h->element[0]->str, "live"))
                    for (int i = 1; i <= workers.n; i++)
                        if (!strcmp(h->element[1]->str, workers.name[i]))
                            live[i]++;
                failed |= !h;
                freeReplyObject(h);
            }
            freeReplyObject(r);
        } while (!failed && strcmp(cursor, "0"));
        rg_redis_give(sample_redis, c, failed);
    }
    if (failed)
        for (int i = 1; i <= workers.n; i++)
            live[i] = -1;
}

void take_sample(struct sample *s)
{
    static pid_t kids[DESCENDANTS_MAX];
    memset(s, 0, sizeof *s);
    s->t_ms = rg_now_ms();
    tcp_load();
    for (int i = 1; i <= workers.n; i++) {
        mem_read(workers.pid[i], s->mem[i]);
        fd_scan(workers.pid[i], workers.ports[i], &s->fd[i]);
    }
    live_sessions(s->live);
    int n = below_workers(kids, DESCENDANTS_MAX);
    for (int i = 0; i < n; i++) {
        struct pstat p;
        if (read_pstat(kids[i], &p) < 0)
            continue;
        if (p.state == 'Z') {
            s->zombies++;
        } else if (is_chromium(&p)) {
            s->chromium++;
            seen_add(kids[i], p.start);
        }
    }
}

/*
 * The allocator's bytes in use and free in each worker (its /metrics, asked
 * over FastCGI on the worker's own port, so that nginx does not pick the
 * worker), in KiB; left at -1 when a worker does not answer.
 */
void worker_heap(struct sample *s)
{
    for (int i = 0; i <= WORKERS_MAX; i++)
        s->room_parks[i] = s->restores[i] = -1;
    for (int i = 1; i <= workers.n; i++) {
        if (workers.ports[i][0] <= 0 || s->mem[i][MEM_ALL] < 0)
            continue;
        const char *params[] = {"REQUEST_METHOD=GET", "DOCUMENT_URI=/metrics", NULL};
        http_resp r;
        if (fcgi_request(workers.ports[i][0], params, NULL, 0, &r) == 0 && r.status == 200 &&
            r.body.data) {
            double used = metric_value(r.body.data, "refgate_heap_in_use_bytes");
            double spare = metric_value(r.body.data, "refgate_heap_free_bytes");
            s->mem[i][MEM_IN_USE] = used >= 0 ? (long)(used / 1024) : -1;
            s->mem[i][MEM_FREE] = spare >= 0 ? (long)(spare / 1024) : -1;
            static const char *const why[] = {"nothing", "edits", "fresh"};
            s->room_parks[i] = 0;
            for (int k = 0; k < 3; k++) {
                char name[96];
                snprintf(name, sizeof name, "refgate_sessions_evicted_total{loses=\"%s\"}",
                         why[k]);
                double v = metric_value(r.body.data, name);
                s->room_parks[i] = v >= 0 && s->room_parks[i] >= 0 ? s->room_parks[i] + v : -1;
            }
            s->restores[i] = metric_value(r.body.data, "refgate_sessions_restored_total");
        }
        rg_buf_destroy(&r.body);
    }
}

/*
 * A quiet point: lets each driver finish the loop it is in (for at most
 * QUIET_DRAIN_MS), waits wait_ms with no command in flight, which is longer
 * than the workers' heap trim period (REFGATE_MALLOC_TRIM_MS), takes a
 * sample and lets the drivers go on. The sample is marked quiet only when
 * every driver stopped. A worker's RSS then holds what it keeps (sessions,
 * pools, caches, and any leak), not the buffers of the commands in flight,
 * which move it by several MiB from one sample to the next. The time spent
 * here is added to the stop time, so the load still runs for --duration.
 */
void quiet_point(int sessions, int wait_ms, struct sample *out)
{
    int64_t t0 = rg_now_ms();
    pthread_mutex_lock(&g.mu);
    g.pause = 1;
    int drained;
    for (;;) {
        drained = g.paused >= sessions;
        if (drained || rg_now_ms() - t0 >= QUIET_DRAIN_MS)
            break;
        pthread_mutex_unlock(&g.mu);
        rg_sleep_ms(50);
        pthread_mutex_lock(&g.mu);
    }
    pthread_mutex_unlock(&g.mu);
    rg_sleep_ms(wait_ms);
    take_sample(out);
    worker_heap(out); /* after the sample: its request does not touch what was measured */
    out->quiet = drained;
    pthread_mutex_lock(&g.mu);
    g.pause = 0;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    atomic_fetch_add(&g.stop_ms, rg_now_ms() - t0);
}

/*
 * The warm-up after the fixed loops: samples RSS every interval and ends once
 * no worker's RSS has set a new high (by more than 1%, or 256 KiB) for
 * settle_s, or when warmup_max_s have passed since t0. A worker filling its
 * allocator's arenas and its pools settles; a leak keeps setting highs, runs
 * into the cap, and then fails the measured criterion. 1 when settled.
 */
int warm_until_settled(int sessions, int interval, int64_t t0)
{
    long peak[WORKERS_MAX + 1] = {0};
    int64_t rise[WORKERS_MAX + 1] = {0}, tracking = 0;
    int64_t cap_ms = t0 + (int64_t)g.warmup_max_s * 1000;
    for (;;) {
        int64_t now = rg_now_ms();
        if (atomic_load(&g.warm_done) == sessions) {
            if (!tracking)
                tracking = now;
            int settled = 1;
            for (int w = 1; w <= workers.n; w++) {
                long r = vm_rss_kib(workers.pid[w]);
                long step = peak[w] / 100 > 256 ? peak[w] / 100 : 256;
                if (r > peak[w] + step || !rise[w]) {
                    if (r > peak[w])
                        peak[w] = r;
                    rise[w] = now;
                }
                if (now - rise[w] < (int64_t)g.settle_s * 1000)
                    settled = 0;
            }
            if (settled || g.settle_s == 0)
                return 1;
        }
        if (now >= cap_ms && tracking)
            return 0;
        rg_sleep_ms(interval * 1000);
    }
}

/*
 * Chromium processes seen below a worker that still run (same PID, same start
 * time) but are no longer below any worker: orphans. Zombies among them are
 * counted apart. When the stack is gone, every one still there is left over.
 */
void leftovers(int stack_gone, int *orphans, int *zombies, pid_t *example)
{
    static pid_t kids[DESCENDANTS_MAX];
    int n = stack_gone ? 0 : below_workers(kids, DESCENDANTS_MAX);
    *orphans = *zombies = 0;
    *example = 0;
    for (int i = 0; i < n_seen; i++) {
        struct pstat p;
        if (read_pstat(seen[i].pid, &p) < 0 || p.start != seen[i].start)
            continue;
        int below = 0;
        for (int k = 0; k < n && !below; k++)
            below = kids[k] == seen[i].pid;
        if (below)
            continue;
        if (p.state == 'Z')
            ++*zombies;
        else
            ++*orphans;
        *example = seen[i].pid;
    }
}

/* ---- Redis (informational) ------------------------------------------------ */

void redis_info(rg_redis *r, struct redis_info *out)
{
    out->keys = out->used_bytes = -1;
    int masters = r ? rg_redis_masters(r) : -1;
    long long keys = 0, bytes = 0;
    int failed = masters < 1;
    /* Summed over the masters of a cluster. */
    for (int i = 0; i < masters && !failed; i++) {
        redisContext *c = rg_redis_take_master(r, i);
        if (!c) {
            failed = 1;
            break;
        }
        redisReply *rep = redisCommand(c, "DBSIZE");
        if (rep && rep->type == REDIS_REPLY_INTEGER)
            keys += rep->integer;
        failed |= !rep || rep->type != REDIS_REPLY_INTEGER;
        freeReplyObject(rep);
        rep = failed ? NULL : redisCommand(c, "INFO memory");
        const char *m =
            rep && rep->type == REDIS_REPLY_STRING ? strstr(rep->str, "used_memory:") : NULL;
        if (m)
            bytes += atoll(m + 12);
        failed |= !m;
        freeReplyObject(rep);
        rg_redis_give(r, c, !rep);
    }
    if (!failed) {
        out->keys = keys;
        out->used_bytes = bytes;
    }
}
