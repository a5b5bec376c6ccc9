/*
 * pool_int.h - private to pool/: starting a browser under its guard, and the
 * scratch directory housekeeping. Not for use outside this directory.
 */
#ifndef POOL_INT_H
#define POOL_INT_H

#include <stdint.h>
#include <sys/types.h>

/**
 * Starts Chromium under a guard process (*guard): SIGTERM to the guard kills
 * Chromium's process group at once, and the guard exits once all of it is
 * reaped. dir must exist; the profile, HOME and log go
 * inside it. *rfd reads Chromium's fd 4, *wfd writes its fd 3 (both
 * close-on-exec, blocking; the caller owns them). Call only from a thread
 * that lives as long as the browser: the guard's parent-death signal is tied
 * to the calling thread.
 */
int spawn_browser(const char *chromium, const char *dir, const char *const *extra, pid_t *guard,
                  int *rfd, int *wfd);

/** Creates dir and its parents with mode 0700 where missing. Returns 0 or -1. */
int mkdirs(const char *dir);

/**
 * Takes the owner lock of one pool: <run_dir>/owner-<tag>.lock, held (flock)
 * for the pool's life. Returns the fd or -1.
 */
int owner_lock(const char *run_dir, const char *tag);

/**
 * Removes what owners that no longer hold their lock left in run_dir: their
 * browser directories, any process still using one of them (killed by PID),
 * and their lock files. Returns how many directories it removed.
 */
int sweep_run_dir(const char *run_dir);

/** Logs the last lines of a Chromium log, for a browser that failed to start. */
void log_tail(const char *module, const char *path);

/* ---- memory.c ---- */

/* Processes of one browser's tree read at most per sample (Chromium, its
   zygote, utilities and one or more renderers per context). */
#define POOL_MEM_PROCS_MAX 512

/* A sample walks every process again at least this often (in samples). */
#define POOL_PSS_FULL_EVERY 10

/*
 * What the last samples of one tree read of each process: its PSS, and the
 * resident size and start time it had then. Reading smaps_rollup walks a
 * process's page tables (10 to 40 ms of CPU for a Chromium process of 100
 * to 250 MB, measured under load on 3 December), where its resident size
 * and start time cost one small read of /proc/<pid>/stat.
 */
typedef struct pool_pss_cache {
    int n;
    int since_full;  /* samples since every process was read */
    struct pool_pss_entry {
        pid_t pid;
        unsigned long long start; /* clock ticks after boot: a reused PID differs */
        int64_t rss_kb, pss_kb;
    } e[POOL_MEM_PROCS_MAX];
} pool_pss_cache;

/**
 * The PSS in bytes of root and every descendant of it (at most
 * POOL_MEM_PROCS_MAX processes), from /proc/<pid>/smaps_rollup; *procs (when
 * not NULL) gets how many were counted, *walked how many smaps_rollup files
 * were read. -1 when none could be read.
 *
 * With a cache (the previous samples of the same tree), a process whose
 * resident size moved by at most 1% (or 256 kB, whichever is more) since
 * its smaps_rollup was last read counts with the PSS read then, while the
 * tree holds the same processes. A process that came or went changes how
 * the shared pages are divided, so every process is read then, and every
 * POOL_PSS_FULL_EVERY samples anyway.
 */
int64_t pool_tree_pss(pid_t root, pool_pss_cache *cache, int *procs, int *walked);

/**
 * The memory the machine gives this process, in bytes: MemTotal of
 * /proc/meminfo, or the cgroup's memory limit (v2 memory.max, v1
 * memory.limit_in_bytes, as mounted under /sys/fs/cgroup) when lower; -1.
 */
int64_t pool_mem_total(void);

#endif
