/*
 * memory.c - what a browser costs the machine: the proportional set size
 * (PSS) of its process tree, read from /proc, and the machine's memory, for
 * the pool's memory budget (pool.c admits contexts by it).
 *
 * PSS counts each page a process maps divided by the number of processes
 * that map it, so the PSS of Chromium's processes added up is what they cost
 * together, shared libraries and shared memory counted once; RSS would count
 * the zygote's pages once per renderer. The tree is walked from the guard
 * through /proc/<pid>/task/<tid>/children, which holds a process's children
 * (Chromium, its zygote, renderers and utilities, and the crashpad handler
 * the guard adopted) without a scan of every process on the machine.
 *
 * Threading: none of its own; the pool's manager thread calls it without
 * the pool's lock held. Every read is bounded (POOL_MEM_PROCS_MAX
 * processes per tree, a line buffer per file).
 */
#define _GNU_SOURCE
#include "pool/pool_int.h"

#include "common/rg.h"
#include "pool/pool.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The value in kB of the line "<key>: <n> kB" of a /proc file, or -1. */
static int64_t proc_kb(const char *path, const char *key)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char line[256];
    size_t klen = strlen(key);
    int64_t v = -1;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, key, klen) && line[klen] == ':') {
            v = strtoll(line + klen + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

/* Adds the children of pid (every thread's) to v[*n..max); returns how many were added. */
static int add_children(pid_t pid, pid_t *v, int *n, int max)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    int added = 0;
    struct dirent *e;
    while ((e = readdir(d)) && *n < max) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        char cp[96];
        snprintf(cp, sizeof cp, "/proc/%d/task/%.16s/children", (int)pid, e->d_name);
        int fd = open(cp, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        char buf[4096];
        ssize_t len = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (len <= 0)
            continue;
        buf[len] = '\0';
        for (char *s = buf, *end; *n < max; s = end) {
            long c = strtol(s, &end, 10);
            if (end == s)
                break;
            if (c > 0)
                v[(*n)++] = (pid_t)c, added++;
        }
    }
    closedir(d);
    return added;
}

/* The state letter, start time and resident size of pid from
   /proc/<pid>/stat; 0, or -1. */
static int proc_stat(pid_t pid, char *state, unsigned long long *start, int64_t *rss_kb)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t len = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (len <= 0)
        return -1;
    buf[len] = '\0';
    /* The name, field 2, is in parentheses and may hold anything: the
       fields count from the last ')'. Then the state (field 3), a letter;
       starttime is field 22 and rss, in pages, field 24. */
    char *s = strrchr(buf, ')');
    if (!s || s[1] != ' ' || !s[2] || s[3] != ' ')
        return -1;
    *state = s[2];
    s += 4;
    unsigned long long f[25] = {0};
    for (int k = 4; k <= 24; k++) {
        char *end;
        f[k] = strtoull(s, &end, 10);
        if (end == s)
            return -1;
        s = end;
    }
    long page = sysconf(_SC_PAGESIZE);
    *start = f[22];
    *rss_kb = (int64_t)f[24] * (page > 0 ? page / 1024 : 4);
    return 0;
}

/* The cache's entry of the process pid that started at start, or NULL. */
static const struct pool_pss_entry *cached(const pool_pss_cache *c, pid_t pid,
                                           unsigned long long start)
{
    for (int i = 0; i < c->n; i++)
        if (c->e[i].pid == pid && c->e[i].start == start)
            return &c->e[i];
    return NULL;
}

/* The Pss line of /proc/<pid>/smaps_rollup in kB, or -1. */
static int64_t smaps_pss(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
    return proc_kb(path, "Pss");
}

int64_t pool_tree_pss(pid_t root, pool_pss_cache *cache, int *procs, int *walked)
{
    pid_t v[POOL_MEM_PROCS_MAX];
    int n = 0, read = 0, walks = 0;
    int64_t total = 0;
    if (procs)
        *procs = 0;
    if (walked)
        *walked = 0;
    if (root <= 0)
        return -1;
    v[n++] = root;
    /* Breadth first: v grows as each process's children are found. */
    for (int i = 0; i < n && n < POOL_MEM_PROCS_MAX; i++)
        add_children(v[i], v, &n, POOL_MEM_PROCS_MAX);

    /* This sample's processes, each with what the cache had of it (was),
       while the tree holds the same processes (same). Without a cache,
       every process is read. */
    struct pool_pss_entry cur[POOL_MEM_PROCS_MAX];
    const struct pool_pss_entry *was[POOL_MEM_PROCS_MAX];
    int m = 0, same = cache && cache->since_full < POOL_PSS_FULL_EVERY;
    for (int i = 0; i < n; i++) {
        unsigned long long st = 0;
        int64_t rss = 0;
        char state = 0;
        if (cache && proc_stat(v[i], &state, &st, &rss) < 0)
            continue; /* gone meanwhile */
        /* A zombie holds no memory and has no smaps: counted, it would make
           every sample a full walk until its parent reaps it. */
        if (state == 'Z' || state == 'X')
            continue;
        cur[m] = (struct pool_pss_entry){v[i], st, rss, -1};
        was[m] = cache ? cached(cache, v[i], st) : NULL;
        same = same && was[m];
        m++;
    }
    same = same && m == cache->n;
    int k = 0;
    for (int i = 0; i < m; i++) {
        const struct pool_pss_entry *w = same ? was[i] : NULL;
        int64_t moved = w ? cur[i].rss_kb - w->rss_kb : 0;
        if (moved < 0)
            moved = -moved;
        int64_t slack = w && w->rss_kb / 100 > 256 ? w->rss_kb / 100 : 256;
        if (w && moved <= slack) {
            /* kept with the resident size its PSS was read at: slow
               growth adds up until it passes the slack */
            cur[i] = *w;
        } else {
            cur[i].pss_kb = smaps_pss(cur[i].pid);
            walks++;
            if (cur[i].pss_kb < 0)
                continue; /* gone meanwhile, or a kernel without smaps_rollup */
        }
        total += cur[i].pss_kb * 1024;
        read++;
        cur[k++] = cur[i];
    }
    if (cache) {
        memcpy(cache->e, cur, (size_t)k * sizeof *cur);
        cache->n = k;
        cache->since_full = same ? cache->since_full + 1 : 0;
    }
    if (procs)
        *procs = read;
    if (walked)
        *walked = walks;
    return read ? total : -1;
}

/* The number a cgroup limit file holds, or -1 (absent, "max", or not a number). */
static int64_t cgroup_limit(const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char buf[64];
    int64_t v = -1;
    if (fgets(buf, sizeof buf, f)) {
        char *end;
        errno = 0;
        long long n = strtoll(buf, &end, 10);
        if (!errno && end != buf && n > 0)
            v = n;
    }
    fclose(f);
    return v;
}

int64_t pool_mem_total(void)
{
    int64_t kb = proc_kb("/proc/meminfo", "MemTotal");
    int64_t total = kb > 0 ? kb * 1024 : -1;
    /* In a container /proc/meminfo still shows the host: its memory limit,
       when lower, is what the worker really has (cgroup v2, then v1, whose
       "no limit" is a number near 2^63). */
    const char *const limits[] = {"/sys/fs/cgroup/memory.max",
                                  "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
    for (size_t i = 0; i < sizeof limits / sizeof *limits; i++) {
        int64_t l = cgroup_limit(limits[i]);
        if (l > 0 && (total < 0 || l < total))
            total = l;
    }
    return total;
}

int pool_parse_size(const char *s, int64_t *out)
{
    if (!s || !*s)
        return -1;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || v < 0)
        return -1;
    int shift = 0;
    switch (*end) {
    case '\0':
        break;
    case 'k':
    case 'K':
        shift = 10;
        break;
    case 'm':
    case 'M':
        shift = 20;
        break;
    case 'g':
    case 'G':
        shift = 30;
        break;
    default:
        return -1;
    }
    /* "512M", "512MB" and "512MiB" are the same. */
    const char *rest = *end ? end + 1 : end;
    if (*rest && strcmp(rest, "B") && strcmp(rest, "iB"))
        return -1;
    if (v > (INT64_MAX >> shift))
        return -1;
    *out = (int64_t)v << shift;
    return 0;
}
