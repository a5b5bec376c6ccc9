/*
 * load.h - the soak tool's parts (bench/load.c) and what they share:
 *
 *   load.c          options, the stack, and the run's phases in order
 *   load_drive.c    driving: one thread per session, the loop a client runs
 *   load_sample.c   sampling: /proc, descriptors, Redis, quiet points
 *   load_verdict.c  the verdict: merged counts, the criteria, the report
 *
 * Threads: the drivers (load_drive.c) and the main thread, which samples.
 * They share only `g`: the stop time, two barriers and the pause of a quiet
 * point (g.mu, g.cv). Everything else a driver owns until it is joined.
 */
#ifndef RG_BENCH_LOAD_H
#define RG_BENCH_LOAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/rg.h"
#include "tests/support/stack.h"
#include "tests/support/support.h"

#define WORKERS_MAX 8
/* A quiet point waits at most this long for the drivers to finish their loop. */
#define QUIET_DRAIN_MS 120000

/* ---- what the drivers do (load_drive.c) ---- */

enum op {
    OP_CREATE,
    OP_OBSERVE,
    OP_CLICK,
    OP_FILL,
    OP_READ,
    OP_NAVIGATE,
    OP_OBSERVE_DIFF,
    OP_PARK,
    OP_RESTORE,
    OP_RESTORE_IMPLICIT,
    OP_CLOSE,
    OP_INFO,
    OP_N
};

extern const char *const op_names[OP_N];

/* Latencies of one op in ms, growable. */
struct lat {
    double *v;
    size_t n, cap;
};

/* Errors by code; transient is the reply's kind ("transient"). */
struct err_row {
    char code[48];
    int transient;
    long count;
};

struct errs {
    int n;
    struct err_row row[48];
};

struct driver {
    int index;
    pthread_t thread;
    int fd;
    char sid[64];
    char worker[32]; /* where the session closed last lived: its successor goes there */
    long misplaced;  /* successors that did not land there within PLACE_TRIES */
    int page;
    int lost; /* a pass ended early: the page may not be pages[page] */
    unsigned rng;
    long loops;
    long warmup_commands; /* commands sent before the measured load */
    long commands[OP_N];
    long failed[OP_N];
    struct lat lat[OP_N];
    struct errs errs;
};

/* What the main thread and the drivers share (defined in load.c). */
struct load_shared {
    int port;
    char auth[192]; /* the Authorization header line */
    char post[256]; /* it and Content-Type: application/msgpack */
    httpd *pages;
    int warmup_loops;
    int settle_s;         /* the warm-up ends when no worker's RSS rose for this long */
    int warmup_max_s;     /* ... or after this long, settled or not */
    atomic_int warming;   /* 1 while the drivers are to keep warming up */
    atomic_int warm_done; /* drivers that ran their fixed warm-up loops */
    int close_one_in;     /* a loop closes its session with this odds */
    int think_ms;         /* a pause before each command, as an agent thinks (--think-ms) */
    atomic_llong stop_ms; /* drivers end at the first loop boundary after it */
    pthread_barrier_t warm, go;
    /* Quiet points: the main thread sets pause; each driver, at its next loop
       boundary, counts itself in paused and waits until pause is 0 again. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int pause, paused;
};
extern struct load_shared g;

void *xrealloc(void *p, size_t n);
void lat_add(struct lat *l, double ms);
void errs_add(struct errs *e, const char *code, int transient, long count);
/** Driver i before its thread starts: no connection, its first page, its own random seed. */
void driver_init(struct driver *d, int i);
/** The driver thread: warm-up, barriers, the measured loops (arg: its struct driver). */
void *drive(void *arg);
/** DELETE of session sid on the driver's connection; 0 when the reply says ok. */
int close_session(struct driver *d, const char *sid);

/* ---- sampling (load_sample.c) ---- */

/*
 * A process's resident memory, in KiB, by part. From /proc/PID/status: all
 * of it, its anonymous pages and its file pages (the binary and the
 * libraries, paged in as code paths first run). From /proc/PID/smaps, the
 * anonymous pages by the mapping that holds them: glibc's main heap
 * ([heap]), the arenas other threads allocate from (mappings that start on
 * a 64 MiB boundary, glibc's HEAP_MAX_SIZE), the thread stacks (read-write
 * right above a guard page of at most 64 KiB, and the main [stack]), and the
 * rest (mmapped blocks, the private pages of the libraries' data). -1 where
 * the process is gone. MEM_IN_USE and MEM_FREE are not RSS: the allocator's
 * bytes handed out and kept free, asked of the worker at quiet points only
 * (worker_heap).
 */
enum mem_part {
    MEM_ALL,
    MEM_ANON,
    MEM_FILE,
    MEM_HEAP,
    MEM_ARENAS,
    MEM_STACKS,
    MEM_OTHER,
    MEM_IN_USE,
    MEM_FREE,
    MEM_N
};
extern const char *const mem_names[MEM_N];

/*
 * A worker's descriptors. `nginx`: connections accepted on its FastCGI or
 * WebSocket port, which nginx opens and keeps alive (upstream keepalive, up
 * to 8 idle per nginx process for 30 s): how many there are is nginx's
 * choice, so the fd criterion leaves them out. `redis`: connections to
 * Redis, a pool that grows to the most commands that ever ran at once and
 * keeps up to REDIS_POOL_IDLE_MAX idle: judged against that cap instead.
 * `close_wait`: TCP sockets whose peer has closed and the worker has not.
 */
enum { FD_SOCKET, FD_PIPE, FD_ANON, FD_DEV, FD_FILE, FD_OTHER, FD_KINDS };

struct fdscan {
    int total, nginx, redis, close_wait;
    int kind[FD_KINDS];
};

struct sample {
    int64_t t_ms;
    long mem[WORKERS_MAX + 1][MEM_N]; /* RSS and its parts, KiB (mem_read) */
    int live[WORKERS_MAX + 1];        /* live sessions each worker owns, from Redis; -1: unknown */
    struct fdscan fd[WORKERS_MAX + 1];
    int chromium, zombies;
    int quiet; /* taken with no command in flight, after the workers' heap trim */
    /* From each worker's /metrics where worker_heap asked: sessions parked to
       make room (refgate_sessions_evicted_total, all reasons) and restored;
       -1: not asked. */
    double room_parks[WORKERS_MAX + 1], restores[WORKERS_MAX + 1];
};

/* The workers sampled, from 1 (load.c fills it in). */
extern struct workers {
    int n;
    pid_t pid[WORKERS_MAX + 1];
    char name[WORKERS_MAX + 1][16];
    int ports[WORKERS_MAX + 1][3]; /* FastCGI, WebSocket, Redis */
} workers;
/* Chromium processes ever seen below a worker (the leftover check's list). */
extern int n_seen;
/* The stack's Redis, for the live sessions per worker; NULL: unknown. */
extern rg_redis *sample_redis;

struct redis_info {
    long long keys, used_bytes;
};

/** The descriptors the fd criterion counts: all but nginx's and Redis's connections. */
int fds_own(const struct sample *s, int w);
/** "socket 9 (nginx 3, redis 4, close_wait 0), pipe 6, ..." into out. */
void fd_describe(const struct fdscan *f, char *out, size_t len);
/** The FastCGI, WebSocket and Redis ports pid was started with (its environment). */
void worker_ports(pid_t pid, int ports[3]);
void take_sample(struct sample *s);
/** The allocator's bytes in use and free of each worker (its /metrics), into s. */
void worker_heap(struct sample *s);
/** Pauses the drivers, waits wait_ms with nothing in flight, samples into out. */
void quiet_point(int sessions, int wait_ms, struct sample *out);
/** Warms up until no worker's RSS sets a new high for g.settle_s; 1 when settled. */
int warm_until_settled(int sessions, int interval, int64_t t0);
/** Chromium seen below a worker that left it (or outlived the stack), and zombies. */
void leftovers(int stack_gone, int *orphans, int *zombies, pid_t *example);
/** Keys and bytes in use of Redis r; -1 each when it does not answer. */
void redis_info(rg_redis *r, struct redis_info *out);

/* ---- one run, for the verdict (load_verdict.c) ---- */

struct run {
    /* the options */
    int sessions, duration, nworkers, interval, port, quiet_every, quiet_wait;
    int contexts; /* --contexts: REFGATE_CONTEXTS_PER_BROWSER of our stack; 0: its default */
    const char *key, *run_dir, *trace;
    /* the stack: our own (st), or the one on --port */
    stack *st;
    char stack_path[256];
    char needle[300]; /* on the command line of every Chromium process of our stack */
    char keybuf[128];
    int keep_stack;
    rg_redis *redis;
    /* what happened */
    struct driver *d;
    int settled;
    double warm_s;
    int quiet_ms;
    struct sample *samples;
    size_t n_samples, cap;
    struct sample first, last;
    struct redis_info r0, r1;
    int64_t t_start, t_end;
    int quiet_points, quiet_missed;
    int orphans_run, zombies_run, zombies_below;
    pid_t example_run;
    int orphans_after, zombies_after, by_cmdline; /* -1: not checked (--port) */
    pid_t example_after;
};

/** Merges the drivers' counts, judges, prints the report; 1 when the run fails. */
int verdict(struct run *r);

#endif
