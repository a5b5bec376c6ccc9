/*
 * capacity.c - what parked sessions cost Redis and how fast one comes back
 * (issue 24, item 5; docs/scaling.md).
 *
 *   capacity [--redis single|cluster] [--sessions 100000] [--restores 300]
 *            [--live 8]
 *
 * 1. A Redis of its own: one redis-server, or a Redis Cluster of 3 masters
 *    (tests/support/cluster.c), and a stack of one worker on it (nginx,
 *    Chromium; tests/support/stack.c) beside a server of bench/pages.
 * 2. Template sessions, made the way users make them: one on each page of
 *    bench/pages, observed (refs in the registry), a cookie and a
 *    localStorage item set, then parked by stopping the worker (SIGTERM
 *    parks every session it holds). The worker is started again.
 * 3. Clones: every key of a template session (DUMP, with its TTL) restored
 *    under --sessions new session ids (each its own hash tag, so on a
 *    cluster they spread over the slots as real sessions do), and each id
 *    added to the tenant's listing, as session.create does.
 * 4. Redis's memory (INFO memory, used_memory, summed over the masters)
 *    before and after the clones: bytes a parked session costs.
 * 5. --restores clones chosen at random, each sent an observe through nginx
 *    (it restores the session: a new browser context, the page loaded, its
 *    cookies and storage put back, its refs): the time of that command,
 *    p50 and p99. Each is closed afterwards (untimed), so the pool stays
 *    small and no restore waits for a park.
 * 6. --live sessions held live at once, then the worker's /metrics after a
 *    memory sample: the browsers' PSS and what one more context costs, and
 *    from it the live sessions one GiB holds.
 *
 * Prints the figures as text and one JSON line. Measures; asserts nothing.
 */
#define _GNU_SOURCE
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/client.h"
#include "common/rg.h"
#include "tests/support/fixture.h"
#include "tests/support/stats.h"
#include "wire/wire.h"

#define TEMPLATES 4
#define KEYS_MAX 16
#define BATCH 50
/* The restoring command. A loaded machine is slow to restore: a longer
   timeout (within the client's 30 s) measures how slow, not a failure. */
#define OBSERVE "{\"op\":\"observe\",\"args\":{\"timeout_ms\":25000}}"

static const char *const pages[TEMPLATES] = {"form.html", "controls.html", "click.html",
                                             "floor.html"};
/* A session's keys after a park (docs/architecture.md, "Redis keys"). */
static const char *const suffixes[] = {"meta", "park", "regz:main", "reg:main", "seen:main", NULL};

static struct {
    int cluster, sessions, restores, live;
} opt = {0, 100000, 300, 8};

typedef struct key_dump {
    char suffix[32];
    char *data;
    size_t len;
    long long pttl; /* ms, 0: none */
} key_dump;

typedef struct template_session {
    char sid[64];
    key_dump keys[KEYS_MAX];
    int n;
} template_session;

static template_session tmpl[TEMPLATES];

static void usage(void)
{
    fprintf(stderr, "usage: capacity [--redis single|cluster] [--sessions N] [--restores N] "
                    "[--live N]\n");
    exit(2);
}

/* INFO memory's field name (an integer) summed over the masters; -1 if unknown. */
static long long info_sum(rg_redis *r, const char *name)
{
    int n = rg_redis_masters(r);
    long long sum = 0;
    for (int i = 0; i < n; i++) {
        redisContext *c = rg_redis_take_master(r, i);
        if (!c)
            return -1;
        redisReply *x = redisCommand(c, "INFO memory");
        const char *p = x && x->type == REDIS_REPLY_STRING ? strstr(x->str, name) : NULL;
        size_t nl = strlen(name);
        if (p && p[nl] == ':')
            sum += atoll(p + nl + 1);
        else
            sum = -1;
        freeReplyObject(x);
        rg_redis_give(r, c, 0);
        if (sum < 0)
            return -1;
    }
    return sum;
}

static long long dbsize(rg_redis *r)
{
    int n = rg_redis_masters(r);
    long long sum = 0;
    for (int i = 0; i < n; i++) {
        redisContext *c = rg_redis_take_master(r, i);
        redisReply *x = c ? redisCommand(c, "DBSIZE") : NULL;
        sum += x && x->type == REDIS_REPLY_INTEGER ? x->integer : 0;
        freeReplyObject(x);
        if (c)
            rg_redis_give(r, c, !x);
    }
    return sum;
}

/* A session id as refgate mints them: "s" and 27 of [a-z2-7], from seed. */
static void clone_id(unsigned long long seed, char out[64])
{
    static const char digits[] = "abcdefghijklmnopqrstuvwxyz234567";
    unsigned long long x = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    out[0] = 's';
    for (int i = 1; i <= 27; i++) {
        x ^= x >> 31;
        x *= 0xbf58476d1ce4e5b9ull;
        x ^= x >> 29;
        out[i] = digits[x & 31];
    }
    out[28] = '\0';
}

/* One JSON command through nginx on *fd (gwc_call_json), saying what was not 200. */
static cJSON *call(int *fd, const char *sid, const char *body, int *ok, double *ms)
{
    int status = 0;
    cJSON *v = gwc_call_json(fd, sid, body, ok, &status, ms);
    if (status && status != 200) {
        char *txt = v ? cJSON_PrintUnformatted(v) : NULL;
        fprintf(stderr, "capacity: %s on %s: HTTP %d %.200s\n", body, sid, status, txt ? txt : "");
        free(txt);
    }
    return v;
}

/* The templates: made live, given state, then parked by stopping the worker. */
static int make_templates(fx_stack *fx)
{
    int fd = http_connect(stack_port(fx->st));
    for (int t = 0; t < TEMPLATES; t++) {
        char url[256];
        snprintf(url, sizeof url, "%s/%s", fx->base_url, pages[t]);
        if (gwc_create(url, tmpl[t].sid) < 0)
            return -1;
        int ok = 0;
        /* A loaded machine may time a first observe out: try again. */
        for (int tries = 0; tries < 3 && !ok; tries++)
            cJSON_Delete(call(&fd, tmpl[t].sid, OBSERVE, &ok, NULL));
        if (!ok)
            return -1;
        cJSON_Delete(call(&fd, tmpl[t].sid,
                          "{\"op\":\"eval\",\"args\":{\"expression\":\"document.cookie="
                          "'cart=3f9a1c; path=/'; localStorage.setItem('prefs',"
                          "JSON.stringify({theme:'dark',lang:'en',seen:[1,2,3,4,5]})); 1\"}}",
                          &ok, NULL));
        if (!ok)
            return -1;
    }
    close(fd);
    /* SIGTERM parks every session the worker holds. */
    if (stack_kill_worker(fx->st, 1, SIGTERM) != 0 || stack_restart_worker(fx->st, 1) != 0) {
        fprintf(stderr, "capacity: the worker did not stop and start again\n");
        return -1;
    }
    return 0;
}

static int dump_templates(rg_redis *r)
{
    for (int t = 0; t < TEMPLATES; t++) {
        for (int k = 0; suffixes[k]; k++) {
            char key[160];
            snprintf(key, sizeof key, "rg:{t:acme:s:%.63s}:%.32s", tmpl[t].sid, suffixes[k]);
            redisReply *d = rg_redis_command(r, "DUMP %s", key);
            if (!d)
                return -1;
            if (d->type == REDIS_REPLY_STRING && tmpl[t].n < KEYS_MAX) {
                key_dump *kd = &tmpl[t].keys[tmpl[t].n++];
                snprintf(kd->suffix, sizeof kd->suffix, "%s", suffixes[k]);
                kd->data = malloc(d->len);
                memcpy(kd->data, d->str, d->len);
                kd->len = d->len;
                redisReply *p = rg_redis_command(r, "PTTL %s", key);
                kd->pttl = p && p->type == REDIS_REPLY_INTEGER && p->integer > 0 ? p->integer : 0;
                freeReplyObject(p);
            }
            freeReplyObject(d);
        }
        redisReply *m = rg_redis_command(r, "HGET rg:{t:acme:s:%s}:meta state", tmpl[t].sid);
        const char *state = m && m->type == REDIS_REPLY_STRING ? m->str : "?";
        printf("  template %s (%s): %d keys, state %s:", tmpl[t].sid, pages[t], tmpl[t].n, state);
        for (int k = 0; k < tmpl[t].n; k++)
            printf(" %s %zu B", tmpl[t].keys[k].suffix, tmpl[t].keys[k].len);
        printf("\n");
        int parked = m && m->type == REDIS_REPLY_STRING && !strcmp(m->str, "parked");
        freeReplyObject(m);
        if (!parked) {
            fprintf(stderr, "capacity: template %s is not parked\n", tmpl[t].sid);
            return -1;
        }
    }
    return 0;
}

/* Clones from..to-1 in one pipeline: 0, or -1 when a reply was missing or an error. */
static int clone_batch(rg_redis *r, int from, int to, long long now)
{
    rg_redis_pipe *p = rg_redis_pipe_new(r);
    if (!p)
        return -1;
    for (int i = from; i < to; i++) {
        char sid[64], key[160];
        clone_id((unsigned long long)i, sid);
        const template_session *t = &tmpl[i % TEMPLATES];
        for (int k = 0; k < t->n; k++) {
            snprintf(key, sizeof key, "rg:{t:acme:s:%.63s}:%.31s", sid, t->keys[k].suffix);
            rg_redis_pipe_add(p, "RESTORE %s %lld %b REPLACE", key, t->keys[k].pttl,
                              t->keys[k].data, t->keys[k].len);
        }
        rg_redis_pipe_add(p, "ZADD rg:t:acme:sessions %lld %s", now, sid);
    }
    int n = rg_redis_pipe_size(p);
    redisReply **out = calloc((size_t)n, sizeof *out);
    int rc = out ? rg_redis_pipe_run(p, out) : -1;
    for (int j = 0; out && j < n; j++) {
        if (rc == 0 && out[j] && out[j]->type == REDIS_REPLY_ERROR) {
            fprintf(stderr, "capacity: %s\n", out[j]->str);
            rc = -1;
        }
        freeReplyObject(out[j]);
    }
    free(out);
    rg_redis_pipe_free(p);
    return rc;
}

/*
 * Clone i is template i % TEMPLATES under a new id: its keys, and its entry
 * in the listing. A batch whose replies did not all come (a loaded machine,
 * REFGATE_REDIS_TIMEOUT_MS) is sent again: RESTORE ... REPLACE and ZADD
 * come to the same state.
 */
static int clone_all(rg_redis *r)
{
    long long now = (long long)rg_now_ms();
    for (int from = 0; from < opt.sessions; from += BATCH) {
        int to = from + BATCH < opt.sessions ? from + BATCH : opt.sessions, rc = -1;
        for (int tries = 0; tries < 5 && rc != 0; tries++)
            rc = clone_batch(r, from, to, now);
        if (rc != 0) {
            fprintf(stderr, "capacity: cloning sessions %d..%d failed 5 times\n", from, to - 1);
            return -1;
        }
    }
    return 0;
}

/* A value of /metrics of the worker (one worker: nginx's only one). */
static double metric(const char *name)
{
    http_resp h;
    double v = -1;
    if (http_request(stack_port(gwc_st), "GET", "/metrics", NULL, NULL, 0, &h) == 0 &&
        h.status == 200)
        v = metric_value(h.body.data, name);
    rg_buf_destroy(&h.body);
    return v;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            usage();
        if (!strcmp(a, "--redis") && (!strcmp(v, "single") || !strcmp(v, "cluster")))
            opt.cluster = !strcmp(v, "cluster");
        else if (!strcmp(a, "--sessions"))
            opt.sessions = atoi(v);
        else if (!strcmp(a, "--restores"))
            opt.restores = atoi(v);
        else if (!strcmp(a, "--live"))
            opt.live = atoi(v);
        else
            usage();
        i++;
    }
    if (opt.sessions < 1 || opt.sessions > 10000000 || opt.restores < 1 ||
        opt.restores > opt.sessions || opt.live < 1 || opt.live > 64)
        usage();
    if (access("bench/pages", R_OK) != 0) {
        fprintf(stderr, "capacity: run me from the repository root\n");
        return 1;
    }

    redissrv *single = NULL;
    rediscluster *cluster = NULL;
    const char *url;
    if (opt.cluster) {
        cluster = rediscluster_start(3, 0);
        url = cluster ? rediscluster_url(cluster) : NULL;
    } else {
        single = redissrv_start(NULL);
        url = single ? redissrv_url(single) : NULL;
    }
    if (!url) {
        fprintf(stderr, "capacity: Redis did not start\n");
        return 1;
    }
    int rc = 1;
    fx_stack fx;
    memset(&fx, 0, sizeof fx);
    rg_redis *r = NULL;
    fx.pages = httpd_start("bench/pages");
    fx.st = fx.pages ? stack_start_on(1, NULL, url) : NULL;
    if (!fx.st) {
        fprintf(stderr, "capacity: the stack did not start\n");
        goto out;
    }
    snprintf(fx.base_url, sizeof fx.base_url, "http://127.0.0.1:%d", httpd_port(fx.pages));
    gwc_init(fx.st, "capacity");
    rg_redis_config rcfg;
    rg_redis_config_default(&rcfg);
    rcfg.url = url;
    char err[256];
    if (rg_redis_new(&rcfg, &r, err, sizeof err) < 0) {
        fprintf(stderr, "capacity: %s\n", err);
        goto out;
    }

    printf("capacity: %s Redis (%d master%s), %d parked sessions, %d restores\n",
           opt.cluster ? "cluster" : "single", rg_redis_masters(r),
           rg_redis_masters(r) > 1 ? "s" : "", opt.sessions, opt.restores);
    if (make_templates(&fx) < 0 || dump_templates(r) < 0)
        goto out;
    long long mem0 = info_sum(r, "used_memory"), keys0 = dbsize(r);
    int64_t t0 = rg_now_ms();
    if (clone_all(r) < 0)
        goto out;
    double fill_s = (double)(rg_now_ms() - t0) / 1000.0;
    long long mem1 = info_sum(r, "used_memory"), keys1 = dbsize(r);
    long long rss1 = info_sum(r, "used_memory_rss");
    double per = (double)(mem1 - mem0) / opt.sessions;
    printf("  filled in %.1f s: keys %lld -> %lld\n", fill_s, keys0, keys1);
    printf("  used_memory %.1f MiB -> %.1f MiB (rss %.1f MiB): %.0f bytes a parked session\n",
           mem0 / 1048576.0, mem1 / 1048576.0, rss1 / 1048576.0, per);

    /* Restores of random clones. */
    double *lat = calloc((size_t)opt.restores, sizeof *lat);
    int n_lat = 0, failed = 0, not_restored = 0;
    long refs_kept = 0;
    unsigned seed = 12345;
    int fd = http_connect(stack_port(fx.st));
    for (int k = 0; k < opt.restores; k++) {
        gwc_renew_conn(&fd, k);
        char sid[64];
        clone_id((unsigned long long)(rand_r(&seed) % (unsigned)opt.sessions), sid);
        int ok;
        double ms;
        cJSON *v = call(&fd, sid, OBSERVE, &ok, &ms);
        if (ok) {
            lat[n_lat++] = ms;
            const cJSON *how = cJSON_GetObjectItemCaseSensitive(v, "restored");
            const cJSON *kept = cJSON_GetObjectItemCaseSensitive(how, "refs_kept");
            if (!how)
                not_restored++;
            else if (cJSON_IsNumber(kept))
                refs_kept += (long)kept->valuedouble;
        } else {
            failed++;
        }
        cJSON_Delete(v);
        gwc_close_session(sid);
    }
    double p50 = gwc_pct(lat, n_lat, 0.5), p99 = gwc_pct(lat, n_lat, 0.99);
    printf("  restore of a random parked session (observe through nginx): p50 %.0f ms  "
           "p99 %.0f ms  (%d timed, %d failed, %d replies without restored; %ld refs kept)\n",
           p50, p99, n_lat, failed, not_restored, refs_kept);

    /* Live sessions and the pool's PSS. */
    char live[64][64];
    int n_live = 0;
    for (int k = 0; k < opt.live; k++) {
        clone_id((unsigned long long)(opt.sessions - 1 - k), live[n_live]);
        int ok;
        cJSON_Delete(call(&fd, live[n_live], OBSERVE, &ok, NULL));
        if (ok)
            n_live++;
    }
    /* Two samples later (REFGATE_MEMORY_SAMPLE_MS, 1 s): the figures include them all. */
    rg_sleep_ms(2500);
    double pss = metric("refgate_pool_memory_pss_bytes");
    double per_ctx = metric("refgate_pool_memory_per_context_bytes");
    double ctx = metric("refgate_pool_contexts_in_use");
    double per_gib = per_ctx > 0 ? 1073741824.0 / per_ctx : 0;
    printf("  %d live: the browser's PSS %.1f MiB with %.0f contexts, %.1f MiB a context: "
           "%.0f live sessions a GiB (past the browser's own)\n",
           n_live, pss / 1048576.0, ctx, per_ctx / 1048576.0, per_gib);
    for (int k = 0; k < n_live; k++)
        gwc_close_session(live[k]);
    close(fd);

    printf("{\"redis\":\"%s\",\"masters\":%d,\"sessions\":%d,\"fill_s\":%.1f,"
           "\"used_memory_before\":%lld,\"used_memory_after\":%lld,\"used_memory_rss\":%lld,"
           "\"bytes_per_session\":%.0f,\"restores\":%d,\"restore_failed\":%d,"
           "\"restore_p50_ms\":%.1f,\"restore_p99_ms\":%.1f,\"live\":%d,\"pss_bytes\":%.0f,"
           "\"per_context_bytes\":%.0f,\"live_per_gib\":%.0f}\n",
           opt.cluster ? "cluster" : "single", rg_redis_masters(r), opt.sessions, fill_s, mem0,
           mem1, rss1, per, n_lat, failed, p50, p99, n_live, pss, per_ctx, per_gib);
    free(lat);
    rc = 0;
out:
    for (int t = 0; t < TEMPLATES; t++)
        for (int k = 0; k < tmpl[t].n; k++)
            free(tmpl[t].keys[k].data);
    rg_redis_free(r);
    fx_stack_stop(&fx);
    rediscluster_free(cluster);
    redissrv_free(single);
    return rc;
}
