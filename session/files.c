/*
 * files.c - a live session's files: uploads written into its scratch
 * directory and set on a file input, and downloads, which land there for
 * tenants allowed to download and are refused for the others.
 *
 * The scratch directory is <pool_files_dir>/<sid>, mode 0700, with up/<n>/
 * for the files of upload n (their names as the client gave them, which is
 * the name the page sees) and dl/ where Chromium writes each download under
 * its id (Browser.setDownloadBehavior allowAndName, so no name from a page
 * ever becomes a path). It lives as long as the session's context: park,
 * close, a move to another worker or a dead browser remove it
 * (sess_files_clear from sess_release_local).
 *
 * Downloads are followed through the page session's Page.downloadWillBegin
 * and Page.downloadProgress, which Chromium sends to the page the download
 * started from (iframes included), so each session hears its own. Over the
 * session's quota a download is cancelled (Browser.cancelDownload) and
 * reported refused. Once RG_DOWNLOADS_MAX are listed and none is in
 * progress the context denies downloads, so later ones never reach the
 * disk; one that began before that is cancelled, and what it wrote
 * removed if it finished first.
 *
 * Threading: uploads, listings and reads are the holder's; the event
 * handler runs on the browser's reader thread and never blocks (its one
 * call, a cancel, is sent without waiting). The list, the counts and the
 * permission are guarded by the state's own mutex.
 */
#define _GNU_SOURCE
#include "session/sess_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct sess_files {
    pthread_mutex_t mu;
    int made;          /* the session's directory exists */
    size_t up_bytes;   /* bytes of this context's uploads */
    unsigned up_seq;   /* uploads so far: up/<n> */
    int dl_allowed;    /* set at lock-down for the context */
    int dl_denied;     /* the list is full and settled: the context now denies */
    sess_download *dl; /* RG_DOWNLOADS_MAX entries once the first download begins */
    size_t n_dl;
    size_t dl_begun;      /* downloads begun, listed or not (past the list's cap) */
    sess_download dl_last; /* the last of them, as it began */
};

struct sess_files *sess_files_new(void)
{
    struct sess_files *f = calloc(1, sizeof *f);
    if (f)
        pthread_mutex_init(&f->mu, NULL);
    return f;
}

void sess_files_free(struct sess_files *f)
{
    if (!f)
        return;
    pthread_mutex_destroy(&f->mu);
    free(f->dl);
    free(f);
}

const char *sess_dl_state_name(int state)
{
    return state == SESS_DL_DONE ? "done" : state == SESS_DL_REFUSED ? "refused" : "started";
}

/* ---- the directory ---- */

/* <pool_files_dir>/<sid>[/sub] into out; 0, or -1 when it does not fit or there is no pool dir. */
static int session_path(const sess *s, const char *sub, char *out, size_t len)
{
    const char *base = pool_files_dir(s->m->pool);
    if (!base || !*base)
        return -1;
    int n = snprintf(out, len, "%s/%s%s%s", base, s->id, sub ? "/" : "", sub ? sub : "");
    return n < 0 || (size_t)n >= len ? -1 : 0;
}


/* Makes dir with mode 0700 (an existing one is made 0700 too). 0 or -1 (errno). */
static int make_private_dir(const char *dir)
{
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return chmod(dir, 0700);
}

/* The session's directory and its subdirectory sub (may be NULL) into out. */
static int ensure_dir(sess *s, const char *sub, char *out, size_t len, char *err, size_t errlen)
{
    char top[PATH_MAX];
    if (session_path(s, NULL, top, sizeof top) < 0 || session_path(s, sub, out, len) < 0)
        return rg_errf(err, errlen, RG_EINTERNAL, "the session's scratch directory has no place");
    pthread_mutex_lock(&s->files->mu);
    s->files->made = 1; /* set first: a half-made directory is removed all the same */
    pthread_mutex_unlock(&s->files->mu);
    if (make_private_dir(top) < 0 || (sub && make_private_dir(out) < 0)) {
        int e = errno;
        rg_log(RG_LOG_ERROR, "session", "%s: cannot make %s: %s", s->id, out, strerror(e));
        return rg_errf(err, errlen, RG_EINTERNAL, "the session's scratch directory cannot be made");
    }
    return 0;
}

void sess_files_clear(sess *s)
{
    struct sess_files *f = s->files;
    if (!f)
        return;
    pthread_mutex_lock(&f->mu);
    int made = f->made;
    f->made = 0;
    f->up_bytes = 0;
    f->n_dl = 0;
    f->dl_allowed = 0;
    f->dl_denied = 0;
    pthread_mutex_unlock(&f->mu);
    char top[PATH_MAX];
    if (made && session_path(s, NULL, top, sizeof top) == 0)
        rg_rmtree(top);
}

/* ---- names ---- */

/* Length of the UTF-8 sequence at p (n bytes left), 0 when it is not a valid one. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    unsigned char c = p[0];
    size_t len = c < 0x80             ? 1
                 : (c & 0xe0) == 0xc0 ? 2
                 : (c & 0xf0) == 0xe0 ? 3
                 : (c & 0xf8) == 0xf0 ? 4
                                      : 0;
    if (!len || len > n || (len == 2 && c < 0xc2) || c > 0xf4)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    /* Overlong three- and four-byte forms and surrogates. */
    if (len == 3 && ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f)))
        return 0;
    if (len == 4 && ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] > 0x8f)))
        return 0;
    return len;
}

int sess_file_name_check(const char *name, char *err, size_t errlen)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > RG_FILE_NAME_MAX)
        return rg_errf(err, errlen, RG_EBADREQ, "a file name has 1 to %d bytes", RG_FILE_NAME_MAX);
    if (!strcmp(name, ".") || !strcmp(name, ".."))
        return rg_errf(err, errlen, RG_EBADREQ, "a file name cannot be \"%s\"", name);
    const unsigned char *p = (const unsigned char *)name;
    for (size_t i = 0; i < n;) {
        if (p[i] == '/' || p[i] == '\\')
            return rg_errf(err, errlen, RG_EBADREQ,
                           "a file name is a name, not a path: no '/' or '\\' (\"%.60s\")", name);
        if (p[i] < 0x20 || p[i] == 0x7f)
            return rg_errf(err, errlen, RG_EBADREQ,
                           "a file name cannot hold control characters (byte %zu)", i);
        size_t k = utf8_len(p + i, n - i);
        if (!k)
            return rg_errf(err, errlen, RG_EBADREQ, "a file name must be UTF-8 (byte %zu)", i);
        i += k;
    }
    return 0;
}

/* A page's suggested name made safe to show: what sess_file_name_check refuses becomes '_'. */
static void name_from_page(const char *in, char *out, size_t len)
{
    const unsigned char *p = (const unsigned char *)(in ? in : "");
    size_t n = strlen((const char *)p), o = 0;
    for (size_t i = 0; i < n && o + 1 < len;) {
        size_t k = utf8_len(p + i, n - i);
        if (!k || (k == 1 && (p[i] < 0x20 || p[i] == 0x7f || p[i] == '/' || p[i] == '\\'))) {
            out[o++] = '_';
            i += k ? k : 1;
            continue;
        }
        if (o + k >= len)
            break;
        memcpy(out + o, p + i, k);
        o += k;
        i += k;
    }
    out[o] = '\0';
    if (!o || !strcmp(out, ".") || !strcmp(out, ".."))
        snprintf(out, len, "download");
}

/* The media type of a file by its name's extension, as a browser guesses it. */
static const char *mime_of(const char *name)
{
    static const char *types[][2] = {
        {"txt", "text/plain"},
        {"csv", "text/csv"},
        {"html", "text/html"},
        {"htm", "text/html"},
        {"json", "application/json"},
        {"xml", "application/xml"},
        {"pdf", "application/pdf"},
        {"zip", "application/zip"},
        {"gz", "application/gzip"},
        {"png", "image/png"},
        {"jpg", "image/jpeg"},
        {"jpeg", "image/jpeg"},
        {"gif", "image/gif"},
        {"svg", "image/svg+xml"},
        {"webp", "image/webp"},
        {"js", "text/javascript"},
        {"css", "text/css"},
        {"md", "text/markdown"},
        {"xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
        {"docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
    };
    const char *dot = strrchr(name, '.');
    if (dot && dot != name)
        for (size_t i = 0; i < sizeof types / sizeof *types; i++)
            if (!strcasecmp(dot + 1, types[i][0]))
                return types[i][1];
    return "application/octet-stream";
}

/* ---- uploads ---- */

/* Writes len bytes of data to a new file path (mode 0600). 0 or -1 (errno). */
static int write_new(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            errno = e ? e : EIO;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return close(fd);
}

/* The checks of sess_upload that touch nothing: count, names, sizes. *total gets the bytes. */
static int upload_check(sess *s, const sess_file *files, size_t n, size_t *total, char *err,
                        size_t errlen)
{
    const sess_config *cfg = &s->m->cfg;
    *total = 0;
    if (n == 0 || n > RG_UPLOAD_FILES_MAX)
        return rg_errf(err, errlen, RG_EBADREQ, "an upload carries 1 to %d files",
                       RG_UPLOAD_FILES_MAX);
    for (size_t i = 0; i < n; i++) {
        int rc = sess_file_name_check(files[i].name, err, errlen);
        if (rc < 0)
            return rc;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(files[i].name, files[j].name))
                return rg_errf(err, errlen, RG_EBADREQ, "the file name \"%.60s\" is given twice",
                               files[i].name);
        if (files[i].len > cfg->upload_file_max)
            return rg_errf(err, errlen, RG_ETOOLARGE,
                           "the file \"%.60s\" has %zu bytes; a file may have at most %zu "
                           "(REFGATE_UPLOAD_FILE_MAX)",
                           files[i].name, files[i].len, cfg->upload_file_max);
        *total += files[i].len;
    }
    pthread_mutex_lock(&s->files->mu);
    size_t held = s->files->up_bytes;
    pthread_mutex_unlock(&s->files->mu);
    if (*total > cfg->upload_session_max || held > cfg->upload_session_max - *total)
        return rg_errf(err, errlen, RG_ETOOLARGE,
                       "the session holds %zu bytes of uploads and these files have %zu; a "
                       "session holds at most %zu (REFGATE_UPLOAD_SESSION_MAX) until it is parked "
                       "or closed",
                       held, *total, cfg->upload_session_max);
    return 0;
}

int sess_upload(sess *s, const reg_action *a, const sess_file *files, size_t n,
                reg_action_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    size_t total;
    int rc = upload_check(s, files, n, &total, err, errlen);
    if (rc < 0)
        return rc;
    if (!s->lease || !sess_registry(s))
        return rg_errf(err, errlen, RG_ECRASHED, "the session has no page");
    char sub[32], dir[PATH_MAX];
    pthread_mutex_lock(&s->files->mu);
    unsigned seq = ++s->files->up_seq;
    pthread_mutex_unlock(&s->files->mu);
    snprintf(sub, sizeof sub, "up");
    if ((rc = ensure_dir(s, sub, dir, sizeof dir, err, errlen)) < 0)
        return rc;
    snprintf(sub, sizeof sub, "up/%u", seq);
    if ((rc = ensure_dir(s, sub, dir, sizeof dir, err, errlen)) < 0)
        return rc;
    char **paths = calloc(n, sizeof *paths);
    if (!paths)
        return RG_ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (asprintf(&paths[i], "%s/%s", dir, files[i].name) < 0) {
            paths[i] = NULL;
            rc = RG_ENOMEM;
        } else if (write_new(paths[i], files[i].data, files[i].len) < 0) {
            rg_log(RG_LOG_ERROR, "session", "%s: cannot write an upload: %s", s->id,
                   strerror(errno));
            rc = rg_errf(err, errlen, RG_EINTERNAL, "the file could not be stored for the page");
        }
    }
    if (rc == 0) {
        reg_action b = *a;
        b.op = REG_OP_UPLOAD;
        b.files = (const char *const *)paths;
        b.n_files = n;
        rc = reg_act(sess_registry(s), sess_handle(s), &b, out, err, errlen);
    }
    if (rc < 0) {
        rg_rmtree(dir); /* nothing changed: the page did not get them */
    } else {
        pthread_mutex_lock(&s->files->mu);
        s->files->up_bytes += total;
        pthread_mutex_unlock(&s->files->mu);
    }
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
    return rc;
}

/* ---- downloads ---- */

/* The Browser.setDownloadBehavior of s's context: allowAndName into dl (a
   path), or deny when dl is NULL. Chromium reports every download either way. */
static void behavior_query(sess *s, const char *dl, rg_buf *q)
{
    const char *ctx = pool_lease_context(s->lease);
    rg_buf_printf(q, "{\"behavior\":\"%s\",\"eventsEnabled\":true,\"browserContextId\":",
                  dl ? "allowAndName" : "deny");
    rg_buf_json_str(q, ctx, strlen(ctx));
    if (dl) {
        rg_buf_puts(q, ",\"downloadPath\":");
        rg_buf_json_str(q, dl, strlen(dl));
    }
    rg_buf_puts(q, "}");
}

int sess_files_lock_down(sess *s)
{
    int allowed = s->m->cfg.downloads_allowed &&
                  s->m->cfg.downloads_allowed(s->m->cfg.downloads_ud, s->tenant) == 1;
    char dl[PATH_MAX], err[128];
    if (allowed && ensure_dir(s, "dl", dl, sizeof dl, err, sizeof err) < 0)
        allowed = 0; /* refused, rather than written where it should not be */
    pthread_mutex_lock(&s->files->mu);
    s->files->dl_allowed = allowed;
    pthread_mutex_unlock(&s->files->mu);
    rg_buf q;
    rg_buf_init(&q);
    behavior_query(s, allowed ? dl : NULL, &q);
    int rc = q.failed ? RG_ENOMEM
                      : sess_browser_call(s, "Browser.setDownloadBehavior", q.data,
                                          SESS_CALL_TIMEOUT_MS, NULL);
    rg_buf_destroy(&q);
    return rc;
}

/*
 * The list is full: the browser is told to deny what comes next (sent
 * without waiting; reader thread). A download that begins before that
 * lands is cancelled, and removed if it finished first (dl_progress).
 */
static void deny_more(sess *s)
{
    rg_buf q;
    rg_buf_init(&q);
    behavior_query(s, NULL, &q);
    if (!q.failed)
        sess_browser_call_async(s, "Browser.setDownloadBehavior", q.data, 5000);
    rg_buf_destroy(&q);
}

static double jnum_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble : 0;
}

/* 1 when id is a download id as Chromium makes them (a GUID): safe as a file name. */
static int id_ok(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n >= sizeof((sess_download *)0)->id)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f') ||
              (id[i] >= 'A' && id[i] <= 'F') || id[i] == '-'))
            return 0;
    return 1;
}

static sess_download *find_dl(struct sess_files *f, const char *id)
{
    for (size_t i = 0; i < f->n_dl; i++)
        if (!strcmp(f->dl[i].id, id))
            return &f->dl[i];
    return NULL;
}

/* Bytes the session's downloads hold (finished and in progress), but skip. */
static size_t dl_held(const struct sess_files *f, const sess_download *skip)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n_dl; i++)
        if (&f->dl[i] != skip && f->dl[i].state != SESS_DL_REFUSED)
            n += f->dl[i].bytes;
    return n;
}

/* Asks the browser to stop download id (sent without waiting; reader thread). */
static void cancel_dl(sess *s, const char *id)
{
    const char *ctx = pool_lease_context(s->lease);
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_puts(&q, "{\"guid\":");
    rg_buf_json_str(&q, id, strlen(id));
    rg_buf_puts(&q, ",\"browserContextId\":");
    rg_buf_json_str(&q, ctx, strlen(ctx));
    rg_buf_puts(&q, "}");
    if (!q.failed)
        sess_browser_call_async(s, "Browser.cancelDownload", q.data, 5000);
    rg_buf_destroy(&q);
}

/* Removes what a refused download left in dl/ (mutex held; a quick unlink). */
static void unlink_dl(sess *s, const char *id)
{
    char path[PATH_MAX], sub[96];
    snprintf(sub, sizeof sub, "dl/%s", id);
    if (session_path(s, sub, path, sizeof path) == 0)
        unlink(path);
}

static cJSON *dl_event(const sess_download *d)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "id", d->id);
    cJSON_AddStringToObject(e, "name", d->name);
    cJSON_AddStringToObject(e, "state", sess_dl_state_name(d->state));
    cJSON_AddNumberToObject(e, "bytes", (double)d->bytes);
    return e;
}

/* Page.downloadWillBegin: the entry, or a refusal; *ev the event to send. */
static void dl_begin(sess *s, const cJSON *params, cJSON **ev)
{
    struct sess_files *f = s->files;
    sess_download d = {0};
    const char *id = sess_jstr(params, "guid");
    if (!id_ok(id))
        return;
    snprintf(d.id, sizeof d.id, "%s", id);
    name_from_page(sess_jstr(params, "suggestedFilename"), d.name, sizeof d.name);
    snprintf(d.mime, sizeof d.mime, "%s", mime_of(d.name));
    d.state = SESS_DL_STARTED;
    pthread_mutex_lock(&f->mu);
    if (!f->dl)
        f->dl = calloc(RG_DOWNLOADS_MAX, sizeof *f->dl);
    int room = f->dl && f->n_dl < RG_DOWNLOADS_MAX;
    if (!f->dl_allowed || !room)
        d.state = SESS_DL_REFUSED; /* denied by the browser already, or cancelled below */
    if (room && !find_dl(f, d.id))
        f->dl[f->n_dl++] = d;
    f->dl_begun++;
    f->dl_last = d;
    int cancel = f->dl_allowed && !room;
    pthread_mutex_unlock(&f->mu);
    if (cancel)
        cancel_dl(s, d.id);
    rg_log(RG_LOG_INFO, "session", "%s: download %s %s", s->id, d.id,
           d.state == SESS_DL_REFUSED ? "refused" : "started");
    *ev = dl_event(&d);
}

/*
 * 1 once (mutex held) when the list is full and none of it is in progress:
 * the context is then told to deny. Not sooner: a deny that lands while a
 * listed download has not chosen its file yet cancels that one too.
 */
static int settled_full(struct sess_files *f)
{
    if (f->dl_denied || !f->dl_allowed || f->n_dl < RG_DOWNLOADS_MAX)
        return 0;
    for (size_t i = 0; i < f->n_dl; i++)
        if (f->dl[i].state == SESS_DL_STARTED)
            return 0;
    f->dl_denied = 1;
    return 1;
}

/* Page.downloadProgress: bytes, the quota, the end; *ev the event to send. */
static void dl_progress(sess *s, const cJSON *params, cJSON **ev)
{
    struct sess_files *f = s->files;
    const char *st = sess_jstr(params, "state");
    size_t got = (size_t)jnum_of(params, "receivedBytes");
    size_t total = (size_t)jnum_of(params, "totalBytes");
    int cancel = 0;
    pthread_mutex_lock(&f->mu);
    const char *id = sess_jstr(params, "guid");
    sess_download *d = find_dl(f, id);
    if (!d && f->dl_allowed && !strcmp(st, "completed") && id_ok(id)) {
        /* One refused past the list's cap that ended before its cancel
           landed: what it wrote goes. */
        unlink_dl(s, id);
        pthread_mutex_unlock(&f->mu);
        rg_log(RG_LOG_INFO, "session", "%s: download %s removed: it ended after its refusal",
               s->id, id);
        return;
    }
    if (!d || d->state != SESS_DL_STARTED) {
        pthread_mutex_unlock(&f->mu);
        return;
    }
    d->bytes = got;
    size_t max = s->m->cfg.download_session_max, others = dl_held(f, d);
    size_t need = total > got ? total : got;
    if (others > max || need > max - others) {
        /* Over the quota: stopped now, its bytes gone. */
        cancel = strcmp(st, "completed") != 0 && strcmp(st, "canceled") != 0;
        d->state = SESS_DL_REFUSED;
        unlink_dl(s, d->id);
        rg_log(RG_LOG_INFO, "session", "%s: download %s refused: %zu bytes over the quota of %zu",
               s->id, d->id, need, max);
    } else if (!strcmp(st, "completed")) {
        d->state = SESS_DL_DONE;
    } else if (!strcmp(st, "canceled")) {
        d->state = SESS_DL_REFUSED;
        unlink_dl(s, d->id);
        rg_log(RG_LOG_INFO, "session", "%s: download %s cancelled by the browser", s->id, d->id);
    }
    sess_download copy = *d;
    int deny = settled_full(f);
    pthread_mutex_unlock(&f->mu);
    if (cancel)
        cancel_dl(s, copy.id);
    if (deny)
        deny_more(s);
    if (copy.state != SESS_DL_STARTED)
        *ev = dl_event(&copy);
}

void sess_files_on_event(sess *s, const char *method, const cJSON *params)
{
    cJSON *ev = NULL;
    if (!s->files)
        return;
    if (!strcmp(method, "Page.downloadWillBegin"))
        dl_begin(s, params, &ev);
    else if (!strcmp(method, "Page.downloadProgress"))
        dl_progress(s, params, &ev);
    if (!ev)
        return;
    sess_mgr *m = s->m;
    if (m->cfg.on_event)
        m->cfg.on_event(m->cfg.event_ud, s->tenant, s->id, "download", ev);
    else
        cJSON_Delete(ev);
}

int sess_downloads(sess *s, sess_download **out, size_t *n)
{
    struct sess_files *f = s->files;
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&f->mu);
    if (f->n_dl) {
        *out = malloc(f->n_dl * sizeof **out);
        if (*out) {
            memcpy(*out, f->dl, f->n_dl * sizeof **out);
            *n = f->n_dl;
        }
    }
    int rc = f->n_dl && !*out ? RG_ENOMEM : 0;
    pthread_mutex_unlock(&f->mu);
    return rc;
}

size_t sess_downloads_begun(sess *s, sess_download *last)
{
    struct sess_files *f = s->files;
    pthread_mutex_lock(&f->mu);
    size_t n = f->dl_begun;
    if (last)
        *last = f->dl_last;
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* Reads the whole file at path, at most max bytes, into *data. 0 or -1. */
static int read_all(const char *path, size_t max, unsigned char **data, size_t *len)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > max) {
        close(fd);
        return -1;
    }
    size_t n = (size_t)st.st_size, got = 0;
    unsigned char *b = malloc(n ? n : 1);
    while (b && got < n) {
        ssize_t r = read(fd, b + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!b || got != n) {
        free(b);
        return -1;
    }
    *data = b;
    *len = n;
    return 0;
}

int sess_download_read(sess *s, const char *id, sess_download *d, unsigned char **data, size_t *len,
                       char *err, size_t errlen)
{
    struct sess_files *f = s->files;
    *data = NULL;
    *len = 0;
    pthread_mutex_lock(&f->mu);
    sess_download *e = id_ok(id) ? find_dl(f, id) : NULL;
    if (e)
        *d = *e;
    pthread_mutex_unlock(&f->mu);
    if (!e)
        return rg_errf(err, errlen, RG_ENOTFOUND,
                       "no download %.64s in this session (downloads are kept until it is "
                       "parked or closed)",
                       id);
    if (d->state == SESS_DL_REFUSED)
        return rg_errf(err, errlen, RG_ENOTFOUND, "download %s was refused: it has no bytes",
                       d->id);
    if (d->state == SESS_DL_STARTED)
        return rg_errf(err, errlen, RG_ECONFLICT,
                       "download %s is still in progress (%zu bytes so far): ask again", d->id,
                       d->bytes);
    char sub[96], path[PATH_MAX];
    snprintf(sub, sizeof sub, "dl/%s", d->id);
    if (session_path(s, sub, path, sizeof path) < 0 ||
        read_all(path, s->m->cfg.download_session_max, data, len) < 0)
        return rg_errf(err, errlen, RG_EINTERNAL, "download %s could not be read", d->id);
    d->bytes = *len;
    return 0;
}

/* ---- the page as a PDF ---- */

/*
 * Page.printToPDF hands back a stream, read here a chunk at a time: one
 * DevTools message stays small whatever the document, and past SESS_PDF_MAX
 * the stream is closed and the op refused, so a page of a million rows costs
 * the browser's time but never the pipe or the worker's memory.
 */
#define SESS_PDF_CHUNK (1 << 20)

int sess_pdf(sess *s, int landscape, int background, const char *paper, int timeout_ms,
             unsigned char **out, size_t *len, char *err, size_t errlen)
{
    *out = NULL;
    *len = 0;
    /* inches, as DevTools measures paper */
    double pw = 8.5, ph = 11;
    if (paper && !strcmp(paper, "a4")) {
        pw = 8.27;
        ph = 11.69;
    } else if (paper && strcmp(paper, "letter")) {
        return rg_errf(err, errlen, RG_EBADREQ, "args.paper must be letter or a4");
    }
    char q[256];
    snprintf(q, sizeof q,
             "{\"landscape\":%s,\"printBackground\":%s,\"paperWidth\":%.2f,\"paperHeight\":%.2f,"
             "\"transferMode\":\"ReturnAsStream\"}",
             landscape ? "true" : "false", background ? "true" : "false", pw, ph);
    cdp_reply r;
    int64_t deadline = rg_now_ms() + timeout_ms;
    int rc = sess_call(s, "Page.printToPDF", q, timeout_ms, &r);
    const cJSON *hv = rc == 0 ? cJSON_GetObjectItemCaseSensitive(r.result, "stream") : NULL;
    char handle[128] = "";
    if (cJSON_IsString(hv) && strlen(hv->valuestring) < sizeof handle)
        snprintf(handle, sizeof handle, "%s", hv->valuestring);
    if (rc == RG_ETIMEOUT) {
        rg_errf(err, errlen, rc, "the page was not printed within %d ms (timeout_ms)", timeout_ms);
        cdp_reply_free(&r);
        return rc;
    }
    if (rc < 0) {
        rg_errf(err, errlen, rc, "the page could not be printed (%s)",
                r.error[0] ? r.error : rg_err_code(rc));
        cdp_reply_free(&r);
        return rc;
    }
    cdp_reply_free(&r);
    if (!handle[0])
        return rg_errf(err, errlen, RG_EINTERNAL, "the browser gave no PDF stream");
    rg_buf pdf;
    rg_buf_init(&pdf);
    for (int eof = 0; !eof && rc == 0;) {
        int64_t left = deadline - rg_now_ms();
        if (left <= 0) {
            rc = rg_errf(err, errlen, RG_ETIMEOUT,
                         "the PDF did not arrive within %d ms (timeout_ms)", timeout_ms);
            break;
        }
        snprintf(q, sizeof q, "{\"handle\":\"%s\",\"size\":%d}", handle, SESS_PDF_CHUNK);
        rc = sess_call(s, "IO.read", q, (int)left, &r);
        if (rc == RG_ETIMEOUT) {
            rg_errf(err, errlen, rc, "the PDF did not arrive within %d ms (timeout_ms)",
                    timeout_ms);
            cdp_reply_free(&r);
            break;
        }
        if (rc < 0) {
            rg_errf(err, errlen, rc, "the PDF could not be read (%s)",
                    r.error[0] ? r.error : rg_err_code(rc));
            cdp_reply_free(&r);
            break;
        }
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(r.result, "data");
        const char *chunk = cJSON_IsString(d) ? d->valuestring : "";
        eof = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r.result, "eof"));
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r.result, "base64Encoded"))) {
            size_t n = 0;
            unsigned char *bytes = rg_base64_decode(chunk, strlen(chunk), &n);
            if (!bytes && *chunk)
                rc = rg_errf(err, errlen, RG_EINTERNAL, "the browser sent a PDF chunk that is "
                                                        "not base64");
            else
                rg_buf_append(&pdf, bytes, n);
            free(bytes);
        } else {
            rg_buf_append(&pdf, chunk, strlen(chunk));
        }
        cdp_reply_free(&r);
        if (rc == 0 && pdf.len > SESS_PDF_MAX)
            rc = rg_errf(err, errlen, RG_ETOOLARGE, "the PDF is over %d MiB: print less of the "
                                                    "page",
                         SESS_PDF_MAX >> 20);
        if (rc == 0 && pdf.failed)
            rc = RG_ENOMEM;
    }
    snprintf(q, sizeof q, "{\"handle\":\"%s\"}", handle);
    sess_call_async(s, "IO.close", q, SESS_CALL_TIMEOUT_MS);
    if (rc < 0) {
        rg_buf_destroy(&pdf);
        return rc;
    }
    *len = pdf.len;
    *out = (unsigned char *)rg_buf_steal(&pdf);
    return 0;
}
