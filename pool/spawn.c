/*
 * spawn.c - starting Chromium so that it can never outlive us, and keeping
 * the run directory clean across crashes.
 *
 * Process tree of one browser:
 *
 *   refgate (pool manager thread)
 *     └─ guard   PDEATHSIG = SIGTERM, child subreaper
 *          └─ chromium (browser), own process group, PDEATHSIG = SIGKILL
 *               └─ zygote, renderers, utility processes (same group)
 *
 * Chromium's children notice a dead browser only after about two seconds. The
 * guard closes that window: when the pool's process dies the kernel sends the
 * guard SIGTERM, and the guard kills Chromium's whole group at once; when
 * Chromium exits by itself the guard does the same, so no renderer is left
 * behind, and it reaps them all, so none is left a zombie either. The pool
 * stops a browser by sending its guard SIGTERM.
 * The guard is a fork of a multi-threaded process: between fork and exec it
 * uses only async-signal-safe calls.
 *
 * Chromium's crashpad handler daemonizes out of Chromium's process group
 * (setsid, double fork). As a child subreaper the guard inherits it, and kills
 * every child it has when it stops, so crashpad goes too. (Switching crashpad
 * off with --disable-crashpad-for-testing is no way out: in Chromium 156 the
 * network service then dies of an "FD ownership violation" and every
 * navigation fails with net::ERR_ABORTED.) HOME points into the browser's
 * scratch directory, where crash dumps and anything else written there go.
 */
#define _GNU_SOURCE
#include "pool/pool_int.h"

#include "common/rg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Flags every browser gets; --disable-features is merged with the caller's. */
static const char *const base_flags[] = {
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--in-process-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
    "--no-startup-window", /* no initial tab: its renderer costs start time and memory */
    /* WebRTC sends UDP (STUN, media) around any proxy: allow it only
       through the context's proxy, which carries no UDP, so a page cannot
       reach a service beside the gateway with datagrams. */
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    NULL,
};
/*
 * RenderDocument makes Chromium build a new frame in the renderer for every
 * cross-document navigation, same-site ones included (a WebView, a frame
 * swapped in, the old one detached): without it a same-site navigation
 * keeps its frame, as Chromium did before that feature. Measured with
 * bench/gateway --only navigate, three alternating rounds of 40
 * navigations each way: through the gateway, p50 33.8-37.2 ms with it and
 * 28.4-31.9 ms without on bench/pages/form.html, 33.4-37.5 and 29.0-31.7 ms
 * on the React todo page. Sites stay in their own processes either way.
 *
 * CacheControlNoStoreEnterBackForwardCache lets Chromium keep pages sent
 * with Cache-Control: no-store in its back/forward cache (an experiment it
 * runs through field trials); it is off here so that such a page is always
 * loaded again, as docs/protocol.md (back / forward) says. Once in a CI run
 * a no-store page came back from the cache (from_cache true); with the
 * feature turned on, the same steps do that in playwright-core.
 */
static const char base_disabled_features[] =
    "PreloadTopChromeWebUI,WebUIOmniboxPopup,WebUIOmniboxAimPopup,SpareRendererForSitePerProcess,"
    "AutofillServerCommunication,RenderDocument,CacheControlNoStoreEnterBackForwardCache";
static const char disable_features[] = "--disable-features=";

/* ---- argv and environment, built before fork ---- */

struct launch {
    char **argv;
    char **envp;
    char *features; /* the merged --disable-features=... */
    char *user_data;
    char *home_env;
};

static void launch_free(struct launch *l)
{
    free(l->argv);
    free(l->envp);
    free(l->features);
    free(l->user_data);
    free(l->home_env);
}

static int launch_build(struct launch *l, const char *chromium, const char *dir,
                        const char *const *extra)
{
    memset(l, 0, sizeof *l);
    size_t n_extra = 0;
    rg_buf feat;
    rg_buf_init(&feat);
    rg_buf_puts(&feat, disable_features);
    rg_buf_puts(&feat, base_disabled_features);
    for (; extra && extra[n_extra]; n_extra++) {
        const char *a = extra[n_extra];
        if (!strncmp(a, disable_features, sizeof disable_features - 1) &&
            a[sizeof disable_features - 1]) {
            rg_buf_puts(&feat, ",");
            rg_buf_puts(&feat, a + sizeof disable_features - 1);
        }
    }
    if (feat.failed) {
        rg_buf_destroy(&feat);
        return RG_ENOMEM;
    }
    l->features = rg_buf_steal(&feat);

    size_t n_base = sizeof base_flags / sizeof base_flags[0] - 1;
    l->argv = calloc(n_base + n_extra + 4, sizeof *l->argv);
    if (asprintf(&l->user_data, "--user-data-dir=%s/profile", dir) < 0)
        l->user_data = NULL;
    if (asprintf(&l->home_env, "HOME=%s/home", dir) < 0)
        l->home_env = NULL;
    size_t n_env = 0;
    while (environ[n_env])
        n_env++;
    l->envp = calloc(n_env + 2, sizeof *l->envp);
    if (!l->argv || !l->user_data || !l->home_env || !l->envp) {
        launch_free(l);
        return RG_ENOMEM;
    }
    size_t i = 0;
    l->argv[i++] = (char *)chromium;
    for (size_t k = 0; k < n_base; k++)
        l->argv[i++] = (char *)base_flags[k];
    l->argv[i++] = l->features;
    l->argv[i++] = l->user_data;
    for (size_t k = 0; k < n_extra; k++)
        if (strncmp(extra[k], disable_features, sizeof disable_features - 1))
            l->argv[i++] = (char *)extra[k];
    l->argv[i] = NULL;

    size_t j = 0;
    for (size_t k = 0; k < n_env; k++)
        if (strncmp(environ[k], "HOME=", 5))
            l->envp[j++] = environ[k];
    l->envp[j++] = l->home_env;
    l->envp[j] = NULL;
    return 0;
}

/* ---- the guard (async-signal-safe code only) ---- */

static volatile sig_atomic_t guard_child; /* Chromium's pid, also its group */
static volatile sig_atomic_t guard_term;

/*
 * Kills Chromium's group and every direct child of the guard: as subreaper
 * it has inherited the daemons (crashpad) that left that group. Reads
 * /proc/self/task/<pid>/children with open/read only (async-signal-safe).
 */
static void guard_kill_all(void)
{
    if (guard_child > 0)
        kill(-guard_child, SIGKILL);
    char path[64] = "/proc/self/task/";
    size_t n = strlen(path);
    char digits[16];
    int nd = 0;
    for (unsigned v = (unsigned)getpid(); v; v /= 10)
        digits[nd++] = (char)('0' + v % 10);
    while (nd)
        path[n++] = digits[--nd];
    memcpy(path + n, "/children", sizeof "/children");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[4096];
    ssize_t len = read(fd, buf, sizeof buf - 1);
    close(fd);
    long pid = 0;
    for (ssize_t i = 0; i < len; i++) {
        if (buf[i] >= '0' && buf[i] <= '9') {
            pid = pid * 10 + (buf[i] - '0');
        } else {
            if (pid > 1)
                kill((pid_t)pid, SIGKILL);
            pid = 0;
        }
    }
    if (pid > 1)
        kill((pid_t)pid, SIGKILL);
}

static void guard_on_term(int sig)
{
    (void)sig;
    guard_term = 1;
    guard_kill_all();
}

static void close_from(int lo)
{
    if (close_range((unsigned)lo, ~0U, 0) == 0)
        return;
    for (int fd = lo; fd < 65536; fd++)
        close(fd);
}

/*
 * Closes every descriptor from 3 up but the n in keep. The guard is a fork
 * of the worker: without this it would hold the worker's listening sockets
 * (FastCGI, WebSocket) and Redis connections for as long as it lives, and a
 * worker started again after a crash could not bind its ports while the
 * dead one's guards were still taking Chromium down.
 */
static void keep_only(int *keep, int n)
{
    for (int i = 1; i < n; i++) /* a few numbers: insertion sort */
        for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
            int t = keep[j];
            keep[j] = keep[j - 1];
            keep[j - 1] = t;
        }
    int lo = 3;
    for (int i = 0; i < n; i++) {
        if (keep[i] < lo)
            continue;
        for (int fd = lo; fd < keep[i]; fd++)
            close(fd);
        lo = keep[i] + 1;
    }
    close_from(lo);
}

/* Moves fd to a number >= 10 so that dup2 onto 3 and 4 cannot clobber it. */
static int lift(int fd)
{
    return fcntl(fd, F_DUPFD, 10);
}

static void exec_chromium(const struct launch *l, int in_r, int out_w, int log_fd, int null_fd)
{
    int a = lift(in_r), b = lift(out_w), lg = lift(log_fd), nl = lift(null_fd);
    if (a < 0 || b < 0 || lg < 0 || nl < 0)
        _exit(126);
    if (dup2(nl, 0) < 0 || dup2(lg, 1) < 0 || dup2(lg, 2) < 0 || dup2(a, 3) < 0 ||
        dup2(b, 4) < 0)
        _exit(126);
    close_from(5);
    execve(l->argv[0], l->argv, l->envp);
    _exit(127);
}

/*
 * The guard: a child subreaper, so that Chromium's orphaned children come to
 * it and are reaped rather than left as zombies. Chromium runs in a process
 * group of its own (pgid = its pid); the guard kills that group when the pool
 * dies (SIGTERM by parent-death signal), when the pool asks (SIGTERM), or when
 * Chromium exits; then it reaps every descendant and exits.
 */
static void run_guard(const struct launch *l, pid_t owner, int in_r, int out_w, int log_fd,
                      int null_fd)
{
    int keep[] = {in_r, out_w, log_fd, null_fd};
    keep_only(keep, 4);
    setpgid(0, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    /* Ignored signals stay ignored across exec: give Chromium the defaults. */
    sa.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            sigaction(s, &sa, NULL);
    sa.sa_handler = guard_on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != owner)
        _exit(1);

    pid_t guard = getpid();
    pid_t c = fork();
    if (c == 0) {
        setpgid(0, 0);
        sa.sa_handler = SIG_DFL;
        sigaction(SIGTERM, &sa, NULL);
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != guard)
            _exit(125);
        exec_chromium(l, in_r, out_w, log_fd, null_fd);
    }
    /* The guard keeps no fd: Chromium's pipe must close when Chromium dies. */
    close_from(0);
    if (c < 0)
        _exit(1);
    setpgid(c, c); /* before any kill of the group, whichever process runs first */
    guard_child = c;
    if (guard_term)
        guard_kill_all();
    for (;;) {
        int st;
        pid_t r = waitpid(-1, &st, 0);
        if (r == c)
            guard_kill_all(); /* Chromium is gone: its renderers and crashpad go too */
        else if (r < 0 && errno == ECHILD)
            _exit(0);
    }
}

int spawn_browser(const char *chromium, const char *dir, const char *const *extra, pid_t *guard,
                  int *rfd, int *wfd)
{
    struct launch l;
    int rc = launch_build(&l, chromium, dir, extra);
    if (rc < 0)
        return rc;
    int to_chrome[2] = {-1, -1}, from_chrome[2] = {-1, -1};
    int log_fd = -1, null_fd = -1;
    char path[PATH_MAX];

    rc = RG_EINTERNAL;
    snprintf(path, sizeof path, "%s/home", dir);
    if (mkdir(path, 0700) < 0 && errno != EEXIST)
        goto out;
    snprintf(path, sizeof path, "%s/chromium.log", dir);
    log_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (log_fd < 0 || null_fd < 0 || pipe2(to_chrome, O_CLOEXEC) < 0 ||
        pipe2(from_chrome, O_CLOEXEC) < 0)
        goto out;

    pid_t owner = getpid();
    pid_t pid = fork();
    if (pid < 0)
        goto out;
    if (pid == 0)
        run_guard(&l, owner, to_chrome[0], from_chrome[1], log_fd, null_fd);
    *guard = pid;
    *wfd = to_chrome[1];
    *rfd = from_chrome[0];
    to_chrome[1] = from_chrome[0] = -1;
    rc = 0;
out:
    if (rc < 0)
        rg_log(RG_LOG_ERROR, "pool", "cannot start %s: %s", chromium, strerror(errno));
    int fds[] = {to_chrome[0], to_chrome[1], from_chrome[0], from_chrome[1], log_fd, null_fd};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    launch_free(&l);
    return rc;
}

/* ---- directories ---- */


int mkdirs(const char *dir)
{
    char buf[PATH_MAX];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, dir, n + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0700) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, 0700) < 0 && errno != EEXIST)
        return -1;
    return 0;
}

int owner_lock(const char *run_dir, const char *tag)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/owner-%s.lock", run_dir, tag);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* 1 when the owner <tag> is gone (its lock file is absent or free). */
static int owner_gone(const char *run_dir, const char *tag)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/owner-%s.lock", run_dir, tag);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT;
    int gone = flock(fd, LOCK_EX | LOCK_NB) == 0;
    close(fd);
    return gone;
}

/* Kills (by PID) every process whose command line names dir as its profile. */
static void kill_users_of(const char *dir)
{
    char needle[PATH_MAX + 32];
    snprintf(needle, sizeof needle, "--user-data-dir=%s/profile", dir);
    DIR *d = opendir("/proc");
    if (!d)
        return;
    struct dirent *e;
    char path[64], cmd[8192];
    while ((e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 1)
            continue;
        snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t n = read(fd, cmd, sizeof cmd - 1);
        close(fd);
        if (n <= 0)
            continue;
        for (ssize_t i = 0; i < n; i++) {
            if (cmd[i] == '\0' && !strcmp(cmd + i + 1, needle)) {
                rg_log(RG_LOG_WARN, "pool", "killing leftover browser process %ld of %s", pid,
                       dir);
                kill((pid_t)pid, SIGKILL);
                break;
            }
        }
    }
    closedir(d);
}

int sweep_run_dir(const char *run_dir)
{
    DIR *d = opendir(run_dir);
    if (!d)
        return 0;
    int removed = 0;
    struct dirent *e;
    char path[PATH_MAX], tag[64];
    while ((e = readdir(d))) {
        /* chromium-<pid>-<pool>-<seq> and files-<pid>-<pool>: the owner tag is <pid>-<pool>. */
        unsigned long pid, pn, seq;
        int n = 0;
        if (sscanf(e->d_name, "chromium-%lu-%lu-%lu", &pid, &pn, &seq) != 3 &&
            !(sscanf(e->d_name, "files-%lu-%lu%n", &pid, &pn, &n) == 2 && !e->d_name[n]))
            continue;
        snprintf(tag, sizeof tag, "%lu-%lu", pid, pn);
        if (!owner_gone(run_dir, tag))
            continue;
        snprintf(path, sizeof path, "%s/%s", run_dir, e->d_name);
        kill_users_of(path);
        if (rg_rmtree(path) == 0)
            removed++;
    }
    rewinddir(d);
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, "owner-", 6) || n < 12 || strcmp(e->d_name + n - 5, ".lock"))
            continue;
        snprintf(tag, sizeof tag, "%.*s", (int)(n - 11), e->d_name + 6);
        if (owner_gone(run_dir, tag)) {
            snprintf(path, sizeof path, "%s/%s", run_dir, e->d_name);
            unlink(path);
        }
    }
    closedir(d);
    if (removed)
        rg_log(RG_LOG_INFO, "pool", "removed %d browser directories left by a dead process",
               removed);
    return removed;
}

void log_tail(const char *module, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[1536];
    off_t end = lseek(fd, 0, SEEK_END);
    off_t from = end > (off_t)sizeof buf - 1 ? end - (off_t)sizeof buf + 1 : 0;
    ssize_t n = pread(fd, buf, sizeof buf - 1, from);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    char *line = buf;
    if (from > 0) { /* start at a line boundary */
        char *nl = strchr(buf, '\n');
        line = nl ? nl + 1 : buf;
    }
    for (char *save = NULL, *s = strtok_r(line, "\n", &save); s; s = strtok_r(NULL, "\n", &save))
        rg_log(RG_LOG_ERROR, module, "chromium: %s", s);
}
