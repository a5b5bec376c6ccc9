/* procs.c - process inspection through /proc for tests and benchmarks. */
#define _GNU_SOURCE
#include "support.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Reads state and ppid from /proc/<pid>/stat. Returns 0 or -1. */
static int stat_of(pid_t pid, char *state, pid_t *ppid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *rp = strrchr(buf, ')'); /* comm may contain spaces and parentheses */
    int pp;
    if (!rp || sscanf(rp + 1, " %c %d", state, &pp) != 2)
        return -1;
    *ppid = pp;
    return 0;
}

int procs_descendants(pid_t root, pid_t *out, int max)
{
    enum { MAXP = 32768 };
    pid_t *pids = malloc(sizeof(pid_t) * MAXP), *par = malloc(sizeof(pid_t) * MAXP);
    int n = 0, found = 0;
    DIR *d = opendir("/proc");
    if (!d || !pids || !par)
        goto out;
    struct dirent *e;
    while ((e = readdir(d)) && n < MAXP) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        char st;
        pid_t pp;
        if (*end || pid <= 0 || stat_of((pid_t)pid, &st, &pp) < 0)
            continue;
        pids[n] = (pid_t)pid;
        par[n++] = pp;
    }
    /* Breadth-first: out doubles as the queue. */
    pid_t queue_root = root;
    int head = -1;
    for (;;) {
        pid_t parent = head < 0 ? queue_root : out[head];
        for (int i = 0; i < n && found < max; i++)
            if (par[i] == parent)
                out[found++] = pids[i];
        if (++head >= found)
            break;
    }
out:
    if (d)
        closedir(d);
    free(pids);
    free(par);
    return found;
}

int procs_running(pid_t pid)
{
    char st;
    pid_t pp;
    return stat_of(pid, &st, &pp) == 0 && st != 'Z' && st != 'X';
}

long procs_pss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Pss: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

int procs_count_cmdline(const char *needle)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    int count = 0;
    struct dirent *e;
    char path[64], cmd[8192];
    size_t nl = strlen(needle);
    while ((e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0 || pid == getpid())
            continue;
        snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t n = read(fd, cmd, sizeof cmd);
        close(fd);
        if (n <= 0)
            continue;
        if (memmem(cmd, (size_t)n, needle, nl) && procs_running((pid_t)pid))
            count++;
    }
    closedir(d);
    return count;
}

/* Reads /proc/<pid>/<what> (NUL-separated strings) into buf; its length, or -1. */
static ssize_t proc_strings(pid_t pid, const char *what, char *buf, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, what);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = 0;
    ssize_t r;
    while (n < size - 1 && (r = read(fd, buf + n, size - 1 - n)) > 0)
        n += (size_t)r;
    close(fd);
    buf[n] = '\0';
    return (ssize_t)n;
}

int procs_cmdline_has(pid_t pid, const char *needle)
{
    char buf[8192];
    ssize_t n = proc_strings(pid, "cmdline", buf, sizeof buf);
    return n > 0 && memmem(buf, (size_t)n, needle, strlen(needle)) != NULL;
}

int procs_getenv(pid_t pid, const char *name, char *out, size_t len)
{
    enum { ENV_MAX = 256 * 1024 };
    char *buf = malloc(ENV_MAX);
    ssize_t n = buf ? proc_strings(pid, "environ", buf, ENV_MAX) : -1;
    int found = n < 0 ? -1 : 0;
    size_t nl = strlen(name);
    for (ssize_t i = 0; found == 0 && i < n; i += (ssize_t)strlen(buf + i) + 1) {
        if (!strncmp(buf + i, name, nl) && buf[i + (ssize_t)nl] == '=') {
            snprintf(out, len, "%s", buf + i + nl + 1);
            found = 1;
        }
    }
    free(buf);
    return found;
}

int procs_browsers(pid_t root, pid_t *out, int max)
{
    pid_t all[512];
    int n = procs_descendants(root, all, 512), k = 0;
    for (int i = 0; i < n && k < max; i++)
        if (procs_cmdline_has(all[i], "--remote-debugging-pipe") &&
            !procs_cmdline_has(all[i], "--type="))
            out[k++] = all[i];
    return k;
}
