/*
 * load.c - a load generator and soak test for the whole of refgate: many
 * sessions at once through nginx, each running the loop a real client runs
 * (create, observe, click a ref from that observation, fill a field, read it
 * back, navigate, observe with a diff, park, restore; now and then close the
 * session and create a new one), in msgpack on kept-alive connections. While
 * it runs it samples every worker's RSS and open descriptors and the Chromium
 * processes below the workers. At the end it prints a table, one JSON line,
 * and PASS, or FAIL with the reasons and exit status 1. The criteria and
 * their reasons are in docs/soak.md.
 *
 *   load [--sessions N] [--duration S] [--workers N] [--interval S]
 *        [--warmup-loops N] [--settle S] [--warmup-max S] [--close-one-in N]
 *        [--quiet-every S] [--quiet-wait S] [--trace FILE]
 *        [--port P [--key K] [--run-dir DIR]]
 *
 * Without --port it starts a stack of its own (tests/support/stack.c: Redis,
 * --workers refgate-server workers, nginx, all on free loopback ports) and
 * stops it at the end, which lets it check that no Chromium process outlives
 * the workers. With --port it drives a stack that is running already (`make
 * run`): the workers' PIDs come from DIR/worker-w*.pid (DIR: --run-dir, or
 * .run) and the API key from --key, $REFGATE_KEY or DIR/dev-key.
 *
 * The fixture pages (tests/fixtures) are served by tests/support/httpd.c on
 * 127.0.0.1; run it from the repository root.
 *
 * This file reads the options, starts (or finds) the stack and runs the
 * phases in order: warm-up, measured load with its samples and quiet
 * points, the check for leftovers, the stack stopped, the verdict. The
 * parts it uses, and the threads, are in load.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "load.h"

#define SESSIONS_MAX 256
/* How long processes may take to go after the end of the load or the stack. */
#define SETTLE_MS 10000

struct load_shared g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* ---- options ---------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: load [--sessions N] [--duration S] [--workers N] [--interval S]\n"
            "            [--warmup-loops N] [--settle S] [--warmup-max S]\n"
            "            [--close-one-in N] [--quiet-every S] [--quiet-wait S] [--trace FILE]\n"
            "            [--contexts N] [--think-ms MS] [--port P [--key K] [--run-dir DIR]]\n"
            "  --sessions N      sessions driven at once [8]\n"
            "  --duration S      seconds of measured load after the warm-up [60]\n"
            "  --workers N       workers of the stack started here [2]\n"
            "  --interval S      seconds between samples of /proc [2]\n"
            "  --warmup-loops N  loops each session runs before the measured load [2]\n"
            "  --settle S        then warm up until no worker's RSS rose for S s [60; 0: no]\n"
            "  --warmup-max S    but for at most S s in all [300]\n"
            "  --close-one-in N  a measured loop closes its session with odds 1/N [6]\n"
            "  --quiet-every S   pause the load for a quiet sample every S s [120; 0: never]\n"
            "  --quiet-wait S    how long a quiet point waits before its sample [12]\n"
            "  --trace FILE      write every sample of /proc to FILE (tab-separated)\n"
            "  --contexts N      oversubscribed: the stack started here gets N contexts a\n"
            "                    browser (one browser a worker), fewer than the sessions;\n"
            "                    pool_exhausted then fails the run, as does no park for room\n"
            "  --think-ms MS     pause 0.5 to 1.5 times MS before each command, as an agent\n"
            "                    thinks between commands [0]\n"
            "  --port P          drive the stack on 127.0.0.1:P instead of starting one\n"
            "  --key K           its API key [$REFGATE_KEY, or DIR/dev-key]\n"
            "  --run-dir DIR     its run directory, for worker-w*.pid and dev-key [.run]\n");
}

static int int_arg(const char *name, const char *v, int min, int max, int *out)
{
    char *end;
    errno = 0;
    long n = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || *end || n < min || n > max) {
        fprintf(stderr, "load: %s takes an integer from %d to %d\n", name, min, max);
        return -1;
    }
    *out = (int)n;
    return 0;
}

/* Reads the first line of path into buf without its newline; 0 or -1. */
static int read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    buf[strcspn(buf, "\r\n")] = '\0';
    return buf[0] ? 0 : -1;
}

/* The workers of a running stack: DIR/worker-w1.pid, worker-w2.pid, ... */
static void workers_from_run_dir(const char *dir)
{
    for (int i = 1; i <= WORKERS_MAX; i++) {
        char path[PATH_MAX], line[32];
        snprintf(path, sizeof path, "%s/worker-w%d.pid", dir, i);
        if (read_line(path, line, sizeof line) < 0)
            break;
        pid_t pid = (pid_t)atol(line);
        if (pid <= 0 || !procs_running(pid))
            break;
        workers.pid[i] = pid;
        snprintf(workers.name[i], sizeof workers.name[i], "w%d", i);
        workers.n = i;
    }
}

/* The options into r; 0, or the exit status (2) after a message. */
static int parse_args(int argc, char **argv, struct run *r)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "--sessions"))
            rc = int_arg(a, v, 1, SESSIONS_MAX, &r->sessions);
        else if (!strcmp(a, "--duration"))
            rc = int_arg(a, v, 4, 7 * 24 * 3600, &r->duration);
        else if (!strcmp(a, "--workers"))
            rc = int_arg(a, v, 1, WORKERS_MAX, &r->nworkers);
        else if (!strcmp(a, "--interval"))
            rc = int_arg(a, v, 1, 600, &r->interval);
        else if (!strcmp(a, "--warmup-loops"))
            rc = int_arg(a, v, 0, 1000, &g.warmup_loops);
        else if (!strcmp(a, "--settle"))
            rc = int_arg(a, v, 0, 24 * 3600, &g.settle_s);
        else if (!strcmp(a, "--warmup-max"))
            rc = int_arg(a, v, 0, 7 * 24 * 3600, &g.warmup_max_s);
        else if (!strcmp(a, "--close-one-in"))
            rc = int_arg(a, v, 0, 1000000, &g.close_one_in);
        else if (!strcmp(a, "--quiet-every"))
            rc = int_arg(a, v, 0, 24 * 3600, &r->quiet_every);
        else if (!strcmp(a, "--quiet-wait"))
            rc = int_arg(a, v, 0, 600, &r->quiet_wait);
        else if (!strcmp(a, "--think-ms"))
            rc = int_arg(a, v, 0, 600000, &g.think_ms);
        else if (!strcmp(a, "--contexts"))
            rc = int_arg(a, v, 1, 1000, &r->contexts);
        else if (!strcmp(a, "--port"))
            rc = int_arg(a, v, 1, 65535, &r->port);
        else if (!strcmp(a, "--key") && v)
            r->key = v;
        else if (!strcmp(a, "--run-dir") && v)
            r->run_dir = v;
        else if (!strcmp(a, "--trace") && v)
            r->trace = v;
        else {
            usage();
            return 2;
        }
        if (rc < 0)
            return 2;
        i++;
    }
    return 0;
}

/* Our own stack: Redis, the workers and nginx, with its workers to sample. 0 or -1. */
static int own_stack(struct run *r, rg_redis_config *rc)
{
    static char contexts[64];
    const char *env[] = {"REFGATE_LOG_LEVEL=warn", NULL, NULL};
    if (r->contexts > 0) {
        snprintf(contexts, sizeof contexts, "REFGATE_CONTEXTS_PER_BROWSER=%d", r->contexts);
        env[1] = contexts;
        fprintf(stderr, "load: oversubscribed: %d sessions on %d live contexts\n", r->sessions,
                r->contexts * r->nworkers);
    }
    fprintf(stderr, "load: starting Redis, %d workers and nginx...\n", r->nworkers);
    r->st = stack_start(r->nworkers, env);
    if (!r->st) {
        fprintf(stderr, "load: cannot start the stack\n");
        return -1;
    }
    g.port = stack_port(r->st);
    r->key = stack_key(r->st, 0);
    workers.n = r->nworkers;
    for (int i = 1; i <= r->nworkers; i++) {
        workers.pid[i] = stack_worker_pid(r->st, i);
        snprintf(workers.name[i], sizeof workers.name[i], "w%d", i);
    }
    snprintf(r->stack_path, sizeof r->stack_path, "%s", stack_dir(r->st));
    snprintf(r->needle, sizeof r->needle, "%s/worker-w", r->stack_path);
    rc->url = stack_redis_url(r->st);
    return 0;
}

/* The stack on --port: its key and, from its run directory, its workers. 0 or -1. */
static int running_stack(struct run *r, rg_redis_config *rc)
{
    char probe[PATH_MAX];
    g.port = r->port;
    if (!r->key)
        r->key = getenv("REFGATE_KEY");
    snprintf(probe, sizeof probe, "%s/dev-key", r->run_dir);
    if ((!r->key || !*r->key) && read_line(probe, r->keybuf, sizeof r->keybuf) == 0)
        r->key = r->keybuf;
    if (!r->key || !*r->key || strlen(r->key) > 128 || strpbrk(r->key, "\r\n")) {
        fprintf(stderr, "load: no API key: give --key, set REFGATE_KEY, or keep %s\n", probe);
        return -1;
    }
    workers_from_run_dir(r->run_dir);
    if (!workers.n)
        fprintf(stderr,
                "load: no running workers in %s/worker-w*.pid: processes are not "
                "sampled and their criteria are skipped\n",
                r->run_dir);
    rg_redis_config_from_env(rc);
    return 0;
}

/* The fixture server, the stack, the headers and the Redis to sample. 0, or 2 after a message. */
static int start(struct run *r)
{
    if (access("tests/fixtures/form.html", R_OK) != 0) {
        fprintf(stderr, "load: run me from the repository root (no tests/fixtures/form.html)\n");
        return 2;
    }
    g.pages = httpd_start("tests/fixtures");
    if (!g.pages) {
        fprintf(stderr, "load: cannot start the fixture server\n");
        return 2;
    }
    r->keep_stack = getenv("RG_KEEP_STACK") != NULL;
    rg_redis_config rc;
    rg_redis_config_default(&rc);
    if ((r->port ? running_stack(r, &rc) : own_stack(r, &rc)) < 0) {
        httpd_stop(g.pages);
        return 2;
    }
    snprintf(g.auth, sizeof g.auth, "Authorization: Bearer %.128s\r\n", r->key);
    snprintf(g.post, sizeof g.post, "%sContent-Type: application/msgpack\r\n", g.auth);
    for (int w = 1; w <= workers.n; w++)
        worker_ports(workers.pid[w], workers.ports[w]);
    char rerr[256];
    if (rg_redis_new(&rc, &r->redis, rerr, sizeof rerr) < 0)
        r->redis = NULL;
    sample_redis = r->redis;
    return 0;
}

/* The drivers started: their fixed warm-up loops, then until the workers' RSS settles. */
static void warm_up(struct run *r)
{
    r->d = calloc((size_t)r->sessions, sizeof *r->d);
    pthread_barrier_init(&g.warm, NULL, (unsigned)r->sessions + 1);
    pthread_barrier_init(&g.go, NULL, (unsigned)r->sessions + 1);
    atomic_store(&g.stop_ms, INT64_MAX);
    atomic_store(&g.warming, 1);
    int64_t t_warm = rg_now_ms();
    for (int i = 0; i < r->sessions; i++) {
        driver_init(&r->d[i], i);
        pthread_create(&r->d[i].thread, NULL, drive, &r->d[i]);
    }
    fprintf(stderr, "load: %d sessions, %d warm-up loops each, then until RSS settles (%d s)...\n",
            r->sessions, g.warmup_loops, g.settle_s);
    r->settled = warm_until_settled(r->sessions, r->interval, t_warm);
    atomic_store(&g.warming, 0);
    pthread_barrier_wait(&g.warm);
    r->warm_s = (double)(rg_now_ms() - t_warm) / 1000.0;
    fprintf(stderr, "load: warm-up took %.0f s (%s)\n", r->warm_s,
            r->settled ? "RSS settled" : "RSS did not settle; capped by --warmup-max");
}

/* A sample at the first and at the last point: quiet when there are quiet points. */
static void end_sample(struct run *r, struct sample *s)
{
    take_sample(s);
    worker_heap(s);
    s->quiet = r->quiet_every > 0;
}

/* The first sample, the measured load with its samples and quiet points, the last sample. */
static void measure(struct run *r)
{
    /* Every driver waits at the barrier: the first sample is a quiet point. */
    r->quiet_ms = r->quiet_every > 0 ? r->quiet_wait * 1000 : 1000; /* 1 s: the last checkpoints */
    rg_sleep_ms(r->quiet_ms);
    r->cap = (size_t)(r->duration / r->interval) + 64;
    r->samples = calloc(r->cap, sizeof *r->samples);
    end_sample(r, &r->first);
    r->samples[r->n_samples++] = r->first;
    redis_info(r->redis, &r->r0);
    r->t_start = r->first.t_ms;
    atomic_store(&g.stop_ms, r->t_start + (int64_t)r->duration * 1000);
    fprintf(stderr, "load: measured load for %d s...\n", r->duration);
    pthread_barrier_wait(&g.go);
    int64_t next_quiet =
        r->quiet_every > 0 ? r->t_start + (int64_t)r->quiet_every * 1000 : INT64_MAX;
    r->quiet_points = r->first.quiet;
    for (;;) {
        int64_t now = rg_now_ms(), stop = atomic_load(&g.stop_ms);
        if (now >= stop)
            break;
        int64_t at = r->samples[r->n_samples - 1].t_ms + (int64_t)r->interval * 1000;
        at = at < next_quiet ? at : next_quiet;
        at = at < stop ? at : stop;
        if (at > now)
            rg_sleep_ms((int)(at - now));
        if (rg_now_ms() >= stop)
            break;
        if (r->n_samples == r->cap) {
            r->cap *= 2;
            r->samples = xrealloc(r->samples, r->cap * sizeof *r->samples);
        }
        if (rg_now_ms() < next_quiet) {
            take_sample(&r->samples[r->n_samples++]);
            continue;
        }
        quiet_point(r->sessions, r->quiet_ms, &r->samples[r->n_samples]);
        r->quiet_points += r->samples[r->n_samples].quiet;
        r->quiet_missed += !r->samples[r->n_samples].quiet;
        r->n_samples++;
        next_quiet = rg_now_ms() + (int64_t)r->quiet_every * 1000;
    }
    /* Drivers finish the loop they are in. */
    for (int i = 0; i < r->sessions; i++)
        pthread_join(r->d[i].thread, NULL);
    r->t_end = rg_now_ms();
    rg_sleep_ms(r->quiet_ms);
    end_sample(r, &r->last);
    r->quiet_points += r->last.quiet;
    if (r->n_samples == r->cap)
        r->samples = xrealloc(r->samples, ++r->cap * sizeof *r->samples);
    r->samples[r->n_samples++] = r->last;
    redis_info(r->redis, &r->r1);
}

/* Leftovers while the stack runs, the sessions closed, our own stack stopped and checked. */
static void wind_down(struct run *r)
{
    /* Leftovers while the stack runs: Chromium that left its worker's tree, zombies. */
    r->zombies_below = r->last.zombies;
    for (int64_t until = rg_now_ms() + SETTLE_MS;;) {
        leftovers(0, &r->orphans_run, &r->zombies_run, &r->example_run);
        struct sample now;
        take_sample(&now);
        r->zombies_below = now.zombies;
        if ((!r->orphans_run && !r->zombies_run && !r->zombies_below) || rg_now_ms() >= until)
            break;
        rg_sleep_ms(500);
    }

    /* Close what is left, so that a running stack is as we found it. */
    for (int i = 0; i < r->sessions; i++)
        if (r->d[i].sid[0]) {
            r->d[i].fd = -1;
            close_session(&r->d[i], r->d[i].sid);
            if (r->d[i].fd >= 0)
                close(r->d[i].fd);
        }

    /* Our own stack: stop it; nothing of Chromium may outlive it. */
    r->orphans_after = r->zombies_after = r->by_cmdline = -1;
    if (r->st) {
        setenv("RG_KEEP_STACK", "1", 1); /* its logs stay when the run fails */
        stack_stop(r->st);
        r->st = NULL;
        for (int64_t until = rg_now_ms() + SETTLE_MS;;) {
            leftovers(1, &r->orphans_after, &r->zombies_after, &r->example_after);
            r->by_cmdline = procs_count_cmdline(r->needle);
            if ((!r->orphans_after && !r->zombies_after && !r->by_cmdline) || rg_now_ms() >= until)
                break;
            rg_sleep_ms(200);
        }
    }
    sample_redis = NULL;
    rg_redis_free(r->redis);
    r->redis = NULL;
    httpd_stop(g.pages);
}

int main(int argc, char **argv)
{
    static struct run r = {.sessions = 8,
                           .duration = 60,
                           .nworkers = 2,
                           .interval = 2,
                           .quiet_every = 120,
                           .quiet_wait = 12,
                           .run_dir = ".run"};
    g.warmup_loops = 2;
    g.settle_s = 60;
    g.warmup_max_s = 300;
    g.close_one_in = 6;
    int rc = parse_args(argc, argv, &r);
    if (rc == 0)
        rc = start(&r);
    if (rc != 0)
        return rc;
    warm_up(&r);
    measure(&r);
    wind_down(&r);
    int failing = verdict(&r);
    free(r.samples);
    free(r.d);
    return failing ? 1 : 0;
}
