/*
 * main.c - refgate-server: one worker. Configuration from REFGATE_*
 * variables (README.md). Signals are blocked in every thread and taken by
 * one with sigwait: SIGTERM or SIGINT stops taking work, lets running
 * commands finish, parks every live session so another worker can restore
 * it, closes the browsers and exits 0.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
