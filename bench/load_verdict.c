/*
 * load_verdict.c - the soak tool's verdict (load.h): the drivers' counts
 * merged, the criteria of docs/soak.md applied (untolerated errors, RSS and
 * descriptor growth, Chromium left over), then a table, the trace file,
 * one JSON line, and PASS, or FAIL with the reasons.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"
#include "tests/support/stats.h"

/* Pass criteria (docs/soak.md). */
#define RSS_GROWTH_MAX_PCT 5.0
/* At quiet points a worker's RSS moves by 1.1 to 1.4 MiB within a run
   (heap pages that hold a live chunk or two between trims, the sessions
   live on it) while its bytes in use stay flat; the quarter medians moved
   -128 to +536 KiB in soaks with flat bytes in use, and by +1.1 to +3.4 MiB
   in the soaks with the threads' malloc caches filling (docs/soak.md). With
   --quiet-every 0 the samples hold commands in flight, and move by MiB. */
#define RSS_SLACK_KIB 1024L
#define RSS_SLACK_BUSY_KIB (2L * 1024)
#define FD_SLACK 4
/* Idle Redis connections a worker keeps (IDLE_MAX in common/redis.c). */
#define REDIS_POOL_IDLE_MAX 32
#define TRANSIENT_SHARE_MAX 0.25

/* Tolerated: the reply calls it transient, and it is not `internal`, which
   the protocol calls transient but defines as a bug. */
static int tolerated(const struct err_row *r)
{
    return r->transient && strcmp(r->code, "internal") != 0;
}

/* The least-squares slope of worker w's RSS over the samples from `from` on, in KiB/min. */
static double rss_slope(const struct sample *s, int n, int w, int64_t from, int quiet)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (s[i].t_ms < from || s[i].mem[w][MEM_ALL] <= 0 || (quiet && !s[i].quiet))
            continue;
        double x = (double)(s[i].t_ms - from) / 60000.0, y = (double)s[i].mem[w][MEM_ALL];
        sx += x, sy += y, sxx += x * x, sxy += x * y;
        k++;
    }
    double den = k * sxx - sx * sx;
    return k >= 3 && den > 0 ? (k * sxy - sx * sy) / den : 0;
}

/* The median RSS (or one part of it) of worker w over the samples taken in
   [from, to): all of them (quiet 0) or the quiet points only (quiet 1). */
static long median_rss(const struct sample *s, int n, int w, int64_t from, int64_t to, int quiet,
                       enum mem_part part)
{
    long v[4096];
    int k = 0;
    for (int i = 0; i < n && k < 4096; i++)
        if (s[i].t_ms >= from && s[i].t_ms < to && s[i].mem[w][part] >= 0 &&
            s[i].mem[w][MEM_ALL] > 0 && (!quiet || s[i].quiet))
            v[k++] = s[i].mem[w][part];
    return stats_median_long(v, (size_t)k);
}

/* The medians of the first and of the last quarter of [t_start, t_end]. */
static void rss_quarters(const struct sample *s, int n, int w, int64_t t_start, int64_t t_end,
                         int quiet, enum mem_part part, long *first_q, long *last_q)
{
    int64_t quarter = (t_end - t_start) / 4;
    *first_q = median_rss(s, n, w, t_start, t_start + quarter, quiet, part);
    *last_q = median_rss(s, n, w, t_end - quarter, INT64_MAX, quiet, part);
}

static void json_str(const char *s)
{
    rg_buf b;
    rg_buf_init(&b);
    rg_buf_json_str(&b, s, strlen(s));
    fputs(b.data ? b.data : "\"\"", stdout);
    rg_buf_destroy(&b);
}

static char reasons[4096];
static int failing;

static void fail_reason(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail_reason(const char *fmt, ...)
{
    size_t used = strlen(reasons);
    if (used)
        used += (size_t)snprintf(reasons + used, sizeof reasons - used, "; ");
    if (used < sizeof reasons) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reasons + used, sizeof reasons - used, fmt, ap);
        va_end(ap);
    }
    failing = 1;
}

/* Every sample, one line each: seconds since the first, then per worker RSS
   (KiB), fds, live sessions and the anonymous and file parts of the RSS. */
static void write_trace(const char *path, const struct sample *s, size_t n, int64_t t0)
{
    FILE *f = fopen(path, "we");
    if (!f) {
        fprintf(stderr, "load: cannot write %s: %s\n", path, strerror(errno));
        return;
    }
    fprintf(f, "t_s");
    for (int w = 1; w <= workers.n; w++)
        fprintf(f,
                "\t%s_rss_kib\t%s_fds\t%s_fds_nginx\t%s_fds_redis\t%s_close_wait\t%s_live"
                "\t%s_anon_kib\t%s_file_kib\t%s_heap_kib\t%s_arenas_kib\t%s_stacks_kib"
                "\t%s_other_kib\t%s_in_use_kib\t%s_free_kib",
                workers.name[w], workers.name[w], workers.name[w], workers.name[w], workers.name[w],
                workers.name[w], workers.name[w], workers.name[w], workers.name[w], workers.name[w],
                workers.name[w], workers.name[w], workers.name[w], workers.name[w]);
    fprintf(f, "\tchromium\tzombies\tquiet\n");
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%.1f", (double)(s[i].t_ms - t0) / 1000.0);
        for (int w = 1; w <= workers.n; w++)
            fprintf(f, "\t%ld\t%d\t%d\t%d\t%d\t%d\t%ld\t%ld\t%ld\t%ld\t%ld\t%ld\t%ld\t%ld",
                    s[i].mem[w][MEM_ALL], s[i].fd[w].total, s[i].fd[w].nginx, s[i].fd[w].redis,
                    s[i].fd[w].close_wait, s[i].live[w], s[i].mem[w][MEM_ANON],
                    s[i].mem[w][MEM_FILE], s[i].mem[w][MEM_HEAP], s[i].mem[w][MEM_ARENAS],
                    s[i].mem[w][MEM_STACKS], s[i].mem[w][MEM_OTHER], s[i].mem[w][MEM_IN_USE],
                    s[i].mem[w][MEM_FREE]);
        fprintf(f, "\t%d\t%d\t%d\n", s[i].chromium, s[i].zombies, s[i].quiet);
    }
    if (fclose(f) != 0)
        fprintf(stderr, "load: cannot write %s\n", path);
}

/* ---- merge ---- */

/* The drivers' counts, merged once they are joined. */
struct totals {
    struct lat all[OP_N];
    long commands[OP_N], failed[OP_N], total, total_failed, loops;
    long warmup_commands, misplaced;
    struct errs errs;
    double seconds;
    double p50[OP_N], p99[OP_N];
};

static void merge(struct run *r, struct totals *t)
{
    memset(t, 0, sizeof *t);
    for (int i = 0; i < r->sessions; i++) {
        const struct driver *d = &r->d[i];
        t->loops += d->loops;
        t->misplaced += d->misplaced;
        t->warmup_commands += d->warmup_commands;
        for (int o = 0; o < OP_N; o++) {
            t->commands[o] += d->commands[o];
            t->failed[o] += d->failed[o];
            for (size_t k = 0; k < d->lat[o].n; k++)
                lat_add(&t->all[o], d->lat[o].v[k]);
            free(d->lat[o].v);
        }
        for (int k = 0; k < d->errs.n; k++)
            errs_add(&t->errs, d->errs.row[k].code, d->errs.row[k].transient, d->errs.row[k].count);
    }
    for (int o = 0; o < OP_N; o++) {
        t->total += t->commands[o], t->total_failed += t->failed[o];
        t->p50[o] = stats_rank(t->all[o].v, t->all[o].n, 0.50);
        t->p99[o] = stats_rank(t->all[o].v, t->all[o].n, 0.99);
    }
    t->seconds = (double)(r->t_end - r->t_start) / 1000.0;
}

/* ---- criteria ---- */

/* Each worker's RSS over the run, as the criteria read it. */
struct rss {
    int by_quiet; /* judged on the quiet points (--quiet-every), else on every sample */
    long q1[WORKERS_MAX + 1], q4[WORKERS_MAX + 1], b1[WORKERS_MAX + 1], b4[WORKERS_MAX + 1];
    long part1[WORKERS_MAX + 1][MEM_N], part4[WORKERS_MAX + 1][MEM_N]; /* q1, q4 by part */
    double growth[WORKERS_MAX + 1], slope[WORKERS_MAX + 1];
};

static void judge_errors(const struct run *r, const struct totals *t)
{
    long tolerated_n = 0;
    for (int k = 0; k < t->errs.n; k++) {
        const struct err_row *e = &t->errs.row[k];
        if (tolerated(e))
            tolerated_n += e->count;
        else
            fail_reason("%ld %s error%s (%s)", e->count, e->code, e->count == 1 ? "" : "s",
                        e->transient ? "transient, but a bug" : "not transient");
    }
    if (t->loops < r->sessions)
        fail_reason("only %ld complete loops for %d sessions", t->loops, r->sessions);
    if (t->total && (double)tolerated_n / (double)t->total > TRANSIENT_SHARE_MAX)
        fail_reason("%.0f%% of the commands failed with transient errors (at most %.0f%%)",
                    100.0 * (double)tolerated_n / (double)t->total, 100.0 * TRANSIENT_SHARE_MAX);
}

/* RSS is judged on the quiet points when there are any (--quiet-every),
   else on every sample; the medians of all samples are reported too. */
static void judge_worker(const struct run *r, int w, struct rss *m)
{
    const struct sample *s = r->samples, *first = &r->first, *last = &r->last;
    int n = (int)r->n_samples;
    rss_quarters(s, n, w, r->t_start, r->t_end, m->by_quiet, MEM_ALL, &m->q1[w], &m->q4[w]);
    rss_quarters(s, n, w, r->t_start, r->t_end, 0, MEM_ALL, &m->b1[w], &m->b4[w]);
    /* Which part grew: code first run late, or which allocator's pages. */
    for (int k = 0; k < MEM_N; k++)
        rss_quarters(s, n, w, r->t_start, r->t_end, m->by_quiet, (enum mem_part)k, &m->part1[w][k],
                     &m->part4[w][k]);
    long q1 = m->q1[w], q4 = m->q4[w];
    m->growth[w] = q1 > 0 && q4 > 0 ? 100.0 * (double)(q4 - q1) / (double)q1 : 0;
    m->slope[w] = rss_slope(s, n, w, r->t_start, m->by_quiet);
    if (q1 > 0 && q4 > 0 && m->growth[w] > RSS_GROWTH_MAX_PCT &&
        q4 - q1 > (m->by_quiet ? RSS_SLACK_KIB : RSS_SLACK_BUSY_KIB))
        fail_reason("%s RSS grew %.1f%% (%ld -> %ld KiB, medians of the %s in the first "
                    "and last quarter)",
                    workers.name[w], m->growth[w], q1, q4,
                    m->by_quiet ? "quiet points" : "samples");
    if (workers.pid[w] > 0 && (q1 < 0 || q4 < 0))
        fail_reason("%s: no %s in the first or the last quarter to judge RSS by", workers.name[w],
                    m->by_quiet ? "quiet point" : "sample");
    if (fds_own(first, w) >= 0 && fds_own(last, w) > fds_own(first, w) + FD_SLACK)
        fail_reason("%s open fds (connections to nginx and Redis left out) grew from %d to %d",
                    workers.name[w], fds_own(first, w), fds_own(last, w));
    if (last->fd[w].redis > REDIS_POOL_IDLE_MAX + FD_SLACK &&
        last->fd[w].redis > first->fd[w].redis + FD_SLACK)
        fail_reason("%s holds %d Redis connections while quiet (the pool keeps at most %d)",
                    workers.name[w], last->fd[w].redis, REDIS_POOL_IDLE_MAX);
    if (last->mem[w][MEM_ALL] < 0)
        fail_reason("%s (PID %d) is gone", workers.name[w], (int)workers.pid[w]);
}

static void judge_leftovers(const struct run *r)
{
    int after = r->orphans_after > r->by_cmdline ? r->orphans_after : r->by_cmdline;
    if (r->orphans_run)
        fail_reason("%d Chromium process%s left their worker while it runs (e.g. PID %d)",
                    r->orphans_run, r->orphans_run == 1 ? "" : "es", (int)r->example_run);
    if (r->zombies_run || r->zombies_below)
        fail_reason("%d zombie%s below the workers after the load",
                    r->zombies_run + r->zombies_below,
                    r->zombies_run + r->zombies_below == 1 ? "" : "s");
    if (r->orphans_after > 0 || r->zombies_after > 0 || r->by_cmdline > 0)
        fail_reason("after the stack stopped: %d Chromium process%s still run%s, %d zombie%s "
                    "(e.g. PID %d)",
                    after, after == 1 ? "" : "es", after == 1 ? "s" : "", r->zombies_after,
                    r->zombies_after == 1 ? "" : "s", (int)r->example_after);
}

/* ---- the table ---- */

static void print_ops(const struct run *r, const struct totals *t)
{
    printf("refgate load: %d sessions, %.1f s measured after a %.0f s warm-up (%d loops each, "
           "then %s), %d workers (%s), %ld loops\n\n",
           r->sessions, t->seconds, r->warm_s, g.warmup_loops,
           r->settled ? "until RSS settled" : "RSS did not settle", workers.n,
           r->port ? "running stack" : "own stack", t->loops);
    printf("%-16s %9s %8s %10s %10s\n", "op", "commands", "errors", "p50 ms", "p99 ms");
    for (int o = 0; o < OP_N; o++)
        printf("%-16s %9ld %8ld %10.1f %10.1f\n", op_names[o], t->commands[o], t->failed[o],
               t->p50[o], t->p99[o]);
    printf("%-16s %9ld %8ld   (%ld in the warm-up; %.1f commands/s measured)\n\n", "total",
           t->total, t->total_failed, t->warmup_commands,
           t->seconds > 0 ? (double)(t->total - t->warmup_commands) / t->seconds : 0);
    printf("errors by code:");
    if (!t->errs.n)
        printf(" none");
    for (int k = 0; k < t->errs.n; k++)
        printf("%s %s %ld (%s)", k ? "," : "", t->errs.row[k].code, t->errs.row[k].count,
               tolerated(&t->errs.row[k]) ? "transient, tolerated" : "FAILS");
    printf("\n\n");
}

static void print_workers(const struct run *r, const struct totals *t, const struct rss *m)
{
    const struct sample *first = &r->first, *last = &r->last;
    printf("%-6s %8s %11s %11s %11s %11s %8s %10s %11s %11s %9s %7s %7s %s\n", "worker", "pid",
           "rss start", "rss end", "rss q1 med", "rss q4 med", "growth", "KiB/min", "busy q1",
           "busy q4", "fds start", "fds end", "fds max", "sessions");
    for (int w = 1; w <= workers.n; w++) {
        int fmax = 0;
        for (size_t i = 0; i < r->n_samples; i++)
            fmax = fds_own(&r->samples[i], w) > fmax ? fds_own(&r->samples[i], w) : fmax;
        printf("%-6s %8d %7.1f MiB %7.1f MiB %7.1f MiB %7.1f MiB %7.1f%% %10.1f %7.1f MiB "
               "%7.1f MiB %9d %7d %7d %4d -> %d\n",
               workers.name[w], (int)workers.pid[w], first->mem[w][MEM_ALL] / 1024.0,
               last->mem[w][MEM_ALL] / 1024.0, m->q1[w] / 1024.0, m->q4[w] / 1024.0, m->growth[w],
               m->slope[w], m->b1[w] / 1024.0, m->b4[w] / 1024.0, fds_own(first, w),
               fds_own(last, w), fmax, first->live[w], last->live[w]);
    }
    if (workers.n)
        printf("(rss q1/q4 med, growth, KiB/min: %s; busy q1/q4: medians of all samples, with "
               "the commands in flight; %d quiet points, %d found a driver still busy after "
               "%d s)\n",
               m->by_quiet ? "over the quiet points" : "over all samples", r->quiet_points,
               r->quiet_missed, QUIET_DRAIN_MS / 1000);
    for (int w = 1; w <= workers.n; w++) {
        static const char *const lead[MEM_N] = {
            "", "", ", ", "; anon in ", ", ", ", ", ", ", "; allocator's bytes ", ", "};
        printf("%s rss q1 -> q4 med by part, KiB: ", workers.name[w]);
        for (int k = MEM_ANON; k < MEM_N; k++)
            if (m->part1[w][k] >= 0 && m->part4[w][k] >= 0)
                printf("%s%s %ld -> %ld (%+ld)", lead[k], mem_names[k], m->part1[w][k],
                       m->part4[w][k], m->part4[w][k] - m->part1[w][k]);
            else
                printf("%s%s unknown", lead[k], mem_names[k]);
        printf("\n");
    }
    if (workers.n)
        printf("(anon: heap, arenas, thread stacks and the rest, by mapping from smaps; file: "
               "the binary and the libraries; the allocator's bytes in use and free from the "
               "worker's /metrics at the quiet points)\n");
    if (workers.n)
        printf("(fds: open descriptors without the connections from nginx and to Redis; "
               "sessions: live sessions the worker owns at the first and the final sample; %ld "
               "new session%s did not land on the worker of the one %s replaced)\n",
               t->misplaced, t->misplaced == 1 ? "" : "s", t->misplaced == 1 ? "it" : "they");
    for (int w = 1; w <= workers.n; w++) {
        char a[200], b[200];
        fd_describe(&first->fd[w], a, sizeof a);
        fd_describe(&last->fd[w], b, sizeof b);
        printf("%s fds at start: %s\n%s fds at end:   %s\n", workers.name[w], a, workers.name[w],
               b);
    }
    if (!workers.n)
        printf("(no worker PIDs: not sampled)\n");
}

static void print_processes(const struct run *r)
{
    int zmax = 0;
    for (size_t i = 0; i < r->n_samples; i++)
        zmax = r->samples[i].zombies > zmax ? r->samples[i].zombies : zmax;
    printf("\nchromium below the workers: %d at start, %d at end (%d seen in %zu samples); "
           "zombies: %d at start, %d at end, at most %d in a sample\n",
           r->first.chromium, r->last.chromium, n_seen, r->n_samples, r->first.zombies,
           r->last.zombies, zmax);
    printf("leftovers while running: %d orphaned, %d zombies\n", r->orphans_run,
           r->zombies_run + r->zombies_below);
    if (r->orphans_after >= 0)
        printf("after the stack stopped: %d Chromium still running (%d by command line), "
               "%d zombies\n",
               r->orphans_after, r->by_cmdline, r->zombies_after);
    else
        printf("after the stack stopped: not checked (the stack on --port keeps running)\n");
    if (r->r0.keys >= 0 && r->r1.keys >= 0)
        printf("redis: %lld keys, %.1f MiB at start; %lld keys, %.1f MiB at end\n", r->r0.keys,
               r->r0.used_bytes / 1048576.0, r->r1.keys, r->r1.used_bytes / 1048576.0);
}

/* ---- one JSON line ---- */

static void print_json_worker(const struct run *r, const struct rss *m, int w)
{
    const struct sample *first = &r->first, *last = &r->last;
    printf("%s{\"id\":\"%s\",\"pid\":%d,\"rss_start_kib\":%ld,\"rss_end_kib\":%ld,"
           "\"rss_q1_median_kib\":%ld,\"rss_q4_median_kib\":%ld,\"rss_growth_pct\":%.2f,"
           "\"rss_slope_kib_per_min\":%.1f,\"rss_busy_q1_median_kib\":%ld,"
           "\"rss_busy_q4_median_kib\":%ld,\"rss_anon_q1_median_kib\":%ld,"
           "\"rss_anon_q4_median_kib\":%ld,\"rss_file_q1_median_kib\":%ld,"
           "\"rss_file_q4_median_kib\":%ld,\"rss_heap_q1_median_kib\":%ld,"
           "\"rss_heap_q4_median_kib\":%ld,\"rss_arenas_q1_median_kib\":%ld,"
           "\"rss_arenas_q4_median_kib\":%ld,\"rss_stacks_q1_median_kib\":%ld,"
           "\"rss_stacks_q4_median_kib\":%ld,\"rss_other_q1_median_kib\":%ld,"
           "\"rss_other_q4_median_kib\":%ld,\"heap_in_use_q1_median_kib\":%ld,"
           "\"heap_in_use_q4_median_kib\":%ld,\"heap_free_q1_median_kib\":%ld,"
           "\"heap_free_q4_median_kib\":%ld,\"fds_start\":%d,\"fds_end\":%d,"
           "\"fds_nginx_start\":%d,\"fds_nginx_end\":%d,\"fds_redis_start\":%d,"
           "\"fds_redis_end\":%d,\"close_wait_end\":%d,\"sessions_start\":%d,"
           "\"sessions_end\":%d}",
           w > 1 ? "," : "", workers.name[w], (int)workers.pid[w], first->mem[w][MEM_ALL],
           last->mem[w][MEM_ALL], m->q1[w], m->q4[w], m->growth[w], m->slope[w], m->b1[w], m->b4[w],
           m->part1[w][MEM_ANON], m->part4[w][MEM_ANON], m->part1[w][MEM_FILE],
           m->part4[w][MEM_FILE], m->part1[w][MEM_HEAP], m->part4[w][MEM_HEAP],
           m->part1[w][MEM_ARENAS], m->part4[w][MEM_ARENAS], m->part1[w][MEM_STACKS],
           m->part4[w][MEM_STACKS], m->part1[w][MEM_OTHER], m->part4[w][MEM_OTHER],
           m->part1[w][MEM_IN_USE], m->part4[w][MEM_IN_USE], m->part1[w][MEM_FREE],
           m->part4[w][MEM_FREE], fds_own(first, w), fds_own(last, w), first->fd[w].nginx,
           last->fd[w].nginx, first->fd[w].redis, last->fd[w].redis, last->fd[w].close_wait,
           first->live[w], last->live[w]);
}

static void print_json(const struct run *r, const struct totals *t, const struct rss *m)
{
    printf("{\"load\":{\"sessions\":%d,\"seconds\":%.1f,\"warmup_s\":%.1f,\"settled\":%s,"
           "\"warmup_loops\":%d,\"workers\":%d,\"quiet_every_s\":%d,\"quiet_points\":%d,"
           "\"quiet_missed\":%d,"
           "\"own_stack\":%s,\"loops\":%ld,\"commands\":%ld,\"warmup_commands\":%ld,"
           "\"failed\":%ld,\"errors\":{",
           r->sessions, t->seconds, r->warm_s, r->settled ? "true" : "false", g.warmup_loops,
           workers.n, r->quiet_every, r->quiet_points, r->quiet_missed, r->port ? "false" : "true",
           t->loops, t->total, t->warmup_commands, t->total_failed);
    for (int k = 0; k < t->errs.n; k++) {
        printf("%s", k ? "," : "");
        json_str(t->errs.row[k].code);
        printf(":{\"count\":%ld,\"transient\":%s,\"tolerated\":%s}", t->errs.row[k].count,
               t->errs.row[k].transient ? "true" : "false",
               tolerated(&t->errs.row[k]) ? "true" : "false");
    }
    printf("},\"ops\":{");
    for (int o = 0; o < OP_N; o++) {
        printf("%s", o ? "," : "");
        json_str(op_names[o]);
        printf(":{\"commands\":%ld,\"errors\":%ld,\"p50_ms\":%.3f,\"p99_ms\":%.3f}", t->commands[o],
               t->failed[o], t->p50[o], t->p99[o]);
    }
    printf("},\"workers_detail\":[");
    for (int w = 1; w <= workers.n; w++)
        print_json_worker(r, m, w);
    printf("],\"chromium_start\":%d,\"chromium_end\":%d,\"zombies_start\":%d,\"zombies_end\":%d,"
           "\"orphans_running\":%d,\"after_stop\":",
           r->first.chromium, r->last.chromium, r->first.zombies, r->last.zombies, r->orphans_run);
    if (r->orphans_after >= 0)
        printf("{\"chromium_left\":%d,\"chromium_left_by_cmdline\":%d,\"zombies\":%d}",
               r->orphans_after, r->by_cmdline, r->zombies_after);
    else
        printf("null");
    printf(",\"redis_keys_start\":%lld,\"redis_keys_end\":%lld,\"pass\":%s,\"reasons\":",
           r->r0.keys, r->r1.keys, failing ? "false" : "true");
    json_str(reasons);
    printf("}}\n");
}

/*
 * Oversubscribed (--contexts): a worker that is full parks a session to make
 * room for the next, so no command may be refused with pool_exhausted; and
 * the run must have parked sessions for room, or it did not test that.
 */
static void judge_oversub(const struct run *r, const struct totals *t)
{
    if (r->contexts <= 0)
        return;
    long exhausted = 0;
    for (int k = 0; k < t->errs.n; k++)
        if (!strcmp(t->errs.row[k].code, "pool_exhausted"))
            exhausted += t->errs.row[k].count;
    double parks = 0, restores = 0;
    int known = 1;
    for (int w = 1; w <= workers.n; w++) {
        if (r->last.room_parks[w] < 0 || r->last.restores[w] < 0)
            known = 0;
        else
            parks += r->last.room_parks[w], restores += r->last.restores[w];
    }
    printf("oversubscribed: %d sessions on %d live contexts; parked for room %.0f, restored "
           "%.0f%s\n",
           r->sessions, r->contexts * r->nworkers, parks, restores,
           known ? "" : " (some worker's /metrics did not answer)");
    if (exhausted)
        fail_reason("%ld pool_exhausted with more sessions than contexts (a full worker parks "
                    "a session for room instead)",
                    exhausted);
    if (known && parks <= 0)
        fail_reason("no session was parked for room: the run was not oversubscribed");
    if (!known)
        fail_reason("the parks for room could not be read from every worker's /metrics");
}

int verdict(struct run *r)
{
    struct totals t;
    struct rss m;
    merge(r, &t);
    judge_errors(r, &t);
    judge_oversub(r, &t);
    m.by_quiet = r->quiet_every > 0;
    for (int w = 1; w <= workers.n; w++)
        judge_worker(r, w, &m);
    judge_leftovers(r);

    print_ops(r, &t);
    print_workers(r, &t, &m);
    print_processes(r);
    printf("\n%s%s%s\n", failing ? "FAIL: " : "PASS", failing ? reasons : "",
           failing ? "" : ": no untolerated error, RSS and fds flat, no Chromium left over");
    if (r->stack_path[0]) {
        if (failing || r->keep_stack) {
            printf("stack logs kept in %s\n", r->stack_path);
        } else if (rg_rmtree(r->stack_path) != 0) {
            fprintf(stderr, "load: could not remove %s\n", r->stack_path);
        }
    }
    if (r->trace)
        write_trace(r->trace, r->samples, r->n_samples, r->t_start);
    print_json(r, &t, &m);
    for (int o = 0; o < OP_N; o++)
        free(t.all[o].v);
    return failing;
}
