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
 * Gives the heap's free pages back to the system every trim_ms: glibc keeps
 * free memory it cannot return from the top of the heap, and RSS crept up
 * with it under a soak (docs/soak.md, "What the soaks changed").
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
 * glibc's per-thread caches of freed chunks (tcache) are off unless
 * REFGATE_MALLOC_TCACHE says otherwise: the long-lived threads' caches held
 * freed memory for the life of the worker (docs/soak.md).
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
    /* Two arenas: the short-lived threads (proxy connections, DNS lookups)
       each kept freed memory in an arena of their own (docs/soak.md); two
       keep the threads from queueing on one lock. */
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
