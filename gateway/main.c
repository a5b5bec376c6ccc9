/*
 * main.c - refgate-server: one worker. Configuration from REFGATE_*
 * variables (README.md). Signals are blocked in every thread and taken by
 * one with sigwait: SIGTERM or SIGINT stops taking work, lets running
 * commands finish, parks every live session so another worker can restore
 * it, closes the browsers and exits 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gateway/gateway.h"

static gw *the_gw;

/*
 * Gives the heap's free pages back to the system every trim_ms. A worker's
 * heap holds a few MiB in use, but between commands that build large
 * replies (observations of big pages, packed parked state) and long-lived
 * small allocations placed among them, glibc keeps twice that as free
 * memory it cannot hand back from the top: a soak saw 8 to 10 MiB in use in
 * 20 to 21 MiB of heap, and RSS creeping up with it. malloc_trim(0) returns
 * every free page, wherever it is in the heap.
 */
static void *trim_main(void *arg)
{
    long ms = *(long *)arg;
    for (;;) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        malloc_trim(0);
    }
    return NULL;
}

/*
 * glibc gives each thread a cache of the chunks it frees (tcache): up to
 * seven of each size up to 1 KiB, about 240 KiB a thread at most, held until
 * the thread exits and counted as in use. A worker's long-lived threads (16
 * FastCGI threads, a DevTools reader per browser, the heartbeat, the URL
 * checkers) fill theirs slowly, as each one frees sizes it does not ask for
 * again: gdb at a soak's quiet points found 1.0 MiB in the thread caches at
 * the first and 2.4 MiB fourteen minutes later, while the rest of the memory
 * in use stayed between 2.5 and 3.2 MiB; soaks saw the worker's RSS rise
 * with them for forty minutes (docs/soak.md). Off, a freed chunk goes back
 * to its arena, where malloc_trim and the next thread can use it; in soaks
 * of 30 and 45 minutes the bytes in use stayed flat, and the worker's CPU
 * per command did not change.
 *
 * Only GLIBC_TUNABLES sets the cache, and glibc reads it when a program
 * starts. So the worker adds glibc.malloc.tcache_count to it and executes
 * itself again, once; the second start puts the caller's GLIBC_TUNABLES
 * back, so that Chromium starts with the environment the worker was given.
 * A tcache_count already in GLIBC_TUNABLES is the operator's and is left
 * alone, as is REFGATE_MALLOC_TCACHE=7, glibc's own default.
 */
#define TUNED_ENV "REFGATE_GLIBC_TUNABLES_WAS" /* "=" + the caller's value, or "" */

static void malloc_cache_setup(char **argv)
{
    const char *was = getenv(TUNED_ENV);
    if (was) {
        if (*was == '=')
            setenv("GLIBC_TUNABLES", was + 1, 1);
        else
            unsetenv("GLIBC_TUNABLES");
        unsetenv(TUNED_ENV);
        return;
    }
    const char *t = getenv("GLIBC_TUNABLES");
    long n = rg_env_long("REFGATE_MALLOC_TCACHE", 0, 0, 65535);
    if (n == 7 || (t && strstr(t, "glibc.malloc.tcache_count=")))
        return;
    char *val = NULL, *keep = NULL;
    if (asprintf(&val, "%s%sglibc.malloc.tcache_count=%ld", t ? t : "", t && *t ? ":" : "", n) < 0)
        val = NULL;
    if (asprintf(&keep, "%s%s", t ? "=" : "", t ? t : "") < 0)
        keep = NULL;
    /* By its own path: a process started from /proc/self/exe is named "exe"
       in ps and top. The link says " (deleted)" when the file was replaced. */
    char self[PATH_MAX];
    ssize_t n_self = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n_self > 0 ? n_self : 0] = '\0';
    if (n_self <= 0 || access(self, X_OK) != 0)
        snprintf(self, sizeof self, "/proc/self/exe");
    if (val && keep && setenv(TUNED_ENV, keep, 1) == 0 && setenv("GLIBC_TUNABLES", val, 1) == 0)
        execv(self, argv);
    /* Not executed again: run with glibc's cache, and the caller's environment. */
    int e = errno;
    if (keep && *keep == '=')
        setenv("GLIBC_TUNABLES", keep + 1, 1);
    else if (keep)
        unsetenv("GLIBC_TUNABLES");
    unsetenv(TUNED_ENV);
    rg_log(RG_LOG_WARN, "gateway", "cannot restart with glibc.malloc.tcache_count=%ld: %s", n,
           strerror(e));
    free(val);
    free(keep);
}

static void *signal_main(void *arg)
{
    sigset_t *set = arg;
    int sig = 0;
    sigwait(set, &sig);
    rg_log(RG_LOG_INFO, "gateway", "signal %d: finishing running commands, then parking", sig);
    gw_stop(the_gw);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: refgate-server\n"
               "A refgate worker: FastCGI on REFGATE_FCGI_LISTEN, WebSocket on "
               "REFGATE_WS_LISTEN,\nstate in Redis at REFGATE_REDIS_URL. See README.md for every "
               "REFGATE_* setting.\n");
        return 0;
    }
    malloc_cache_setup(argv);
    /* A worker runs many short-lived threads (a proxy connection, a DNS
       lookup) beside its long-lived ones; glibc gives threads up to eight
       malloc arenas per core and keeps what is freed in each, so the
       worker's memory crept up under a soak (about 1.7 MiB a minute with
       the default, a third of that with one arena). Two arenas keep the
       threads from queueing on one lock. */
    mallopt(M_ARENA_MAX, (int)rg_env_long("REFGATE_MALLOC_ARENAS", 2, 1, 64));
    /* A fixed threshold: glibc raises its default one after the first large
       block is freed, and from then on large buffers come from the heap and
       fragment it. At 256 KiB and above they are mapped and unmapped. */
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    static sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    static long trim_ms; /* after the mask: this thread must not take the signals */
    trim_ms = rg_env_long("REFGATE_MALLOC_TRIM_MS", 10000, 0, 3600000);
    pthread_t trim;
    if (trim_ms > 0 && pthread_create(&trim, NULL, trim_main, &trim_ms) == 0)
        pthread_detach(trim);
    gw_config cfg;
    gw_config_default(&cfg);
    gw_config_from_env(&cfg);
    char err[256] = "";
    if (gw_new(&cfg, &the_gw, err, sizeof err) < 0) {
        fprintf(stderr, "refgate-server: %s\n", err);
        return 1;
    }
    pthread_t sig;
    pthread_create(&sig, NULL, signal_main, &set);
    int rc = gw_serve(the_gw);
    if (rc < 0) {
        fprintf(stderr, "refgate-server: cannot serve on %s\n", cfg.fcgi_listen);
        pthread_kill(sig, SIGTERM);
    }
    pthread_join(sig, NULL);
    gw_free(the_gw);
    rg_log(RG_LOG_INFO, "gateway", "stopped");
    return rc < 0 ? 1 : 0;
}
