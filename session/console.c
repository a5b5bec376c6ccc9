/*
 * console.c - what a live session's pages said: console messages, uncaught
 * exceptions and the browser's own warnings and errors about them (a
 * resource that failed to load, a blocked request), kept so that a client
 * that never subscribed to events can still ask what went wrong (the
 * `console` op).
 *
 * The log is a ring of the last SESS_CONSOLE_KEPT messages, each text
 * clipped at SESS_CONSOLE_TEXT_MAX bytes and its source URL at
 * SESS_CONSOLE_URL_MAX: a page that logs in a loop costs a bounded amount of
 * memory. Every message gets the next number of the session's count (seq,
 * from 1), which a client passes back as `since` to get only the messages
 * after it. The messages live with the session's context here, as
 * downloads do, and are cleared with it (sess_console_clear from
 * sess_release_local): a park, a move or a crash starts a new log. The
 * count lives as long as the session's entry on this worker; a worker that
 * makes a new entry (a move, or a park that dropped it) counts from 0
 * again, and a client's since past the count says so (reset). Not written
 * to Redis: a message is not worth a round trip of the page's every
 * console.log, and a restored page logs again what its load logs.
 *
 * Threading: the handlers run on the browser's reader thread and take only
 * the log's own mutex, never the manager's: a page that logs thousands of
 * lines a second holds up no other session. Listing is the holder's.
 */
#define _GNU_SOURCE
#include "session/sess_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sess_console {
    pthread_mutex_t mu;
    sess_console_msg *ring; /* SESS_CONSOLE_KEPT entries once the first message comes */
    uint64_t seq;           /* messages so far: the last one's seq */
    uint64_t base;          /* seq when the log was last cleared: kept are after it */
    uint64_t told;          /* seq when a reply last listed the new errors */
};

struct sess_console *sess_console_new(void)
{
    struct sess_console *c = calloc(1, sizeof *c);
    if (c)
        pthread_mutex_init(&c->mu, NULL);
    return c;
}

static void msg_clear(sess_console_msg *e)
{
    free(e->text);
    free(e->url);
    memset(e, 0, sizeof *e);
}

static void clear_locked(struct sess_console *c)
{
    if (c->ring)
        for (size_t i = 0; i < SESS_CONSOLE_KEPT; i++)
            msg_clear(&c->ring[i]);
    free(c->ring);
    c->ring = NULL;
    c->base = c->seq;
}

void sess_console_free(struct sess_console *c)
{
    if (!c)
        return;
    clear_locked(c);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void sess_console_clear(sess *s)
{
    struct sess_console *c = s->console;
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    clear_locked(c);
    pthread_mutex_unlock(&c->mu);
}

/* A copy of s cut at max bytes on a character boundary; NULL only without memory. */
static char *clipped(const char *s, size_t max)
{
    return strndup(s, rg_utf8_prefix(s, max));
}

static int jint(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valueint : -1;
}

/* Adds one message (reader thread). text, url: as the event gave them. */
static void add(sess *s, const char *tab, const char *type, const char *source, const char *text,
                const char *url, int line, const cJSON *ts)
{
    struct sess_console *c = s->console;
    if (!c)
        return;
    char *t = clipped(text, SESS_CONSOLE_TEXT_MAX), *u = clipped(url, SESS_CONSOLE_URL_MAX);
    pthread_mutex_lock(&c->mu);
    if (!c->ring)
        c->ring = calloc(SESS_CONSOLE_KEPT, sizeof *c->ring);
    if (!c->ring || !t || !u) {
        /* counted all the same, so that a client sees one is missing:
           the kept start after it */
        c->base = ++c->seq;
        pthread_mutex_unlock(&c->mu);
        free(t);
        free(u);
        return;
    }
    uint64_t q = ++c->seq;
    sess_console_msg *e = &c->ring[q % SESS_CONSOLE_KEPT];
    msg_clear(e);
    e->seq = q;
    e->text = t;
    e->url = u;
    e->line = line;
    e->ts_ms = cJSON_IsNumber(ts) ? (int64_t)ts->valuedouble : 0;
    snprintf(e->type, sizeof e->type, "%s", type);
    snprintf(e->source, sizeof e->source, "%s", source);
    snprintf(e->tab, sizeof e->tab, "%s", tab);
    pthread_mutex_unlock(&c->mu);
}

/* The first frame of a stack trace: where the message came from. */
static void top_frame(const cJSON *stack, const char **url, int *line)
{
    const cJSON *fr = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(stack, "callFrames"), 0);
    if (fr) {
        *url = sess_jstr(fr, "url");
        int l = jint(fr, "lineNumber");
        *line = l >= 0 ? l + 1 : 0;
    }
}

void sess_console_event(sess_tab *t, const char *method, const cJSON *params, const char *text)
{
    const char *url = "";
    int line = 0;
    if (!strcmp(method, "Runtime.consoleAPICalled")) {
        top_frame(cJSON_GetObjectItemCaseSensitive(params, "stackTrace"), &url, &line);
        add(t->s, t->id, sess_jstr(params, "type"), "console", text, url, line,
            cJSON_GetObjectItemCaseSensitive(params, "timestamp"));
    } else if (!strcmp(method, "Runtime.exceptionThrown")) {
        /* The exception's own description ("TypeError: ... at ..."), else
           what Chromium says of it ("Uncaught" and the thrown value). */
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(params, "exceptionDetails");
        const cJSON *ex = cJSON_GetObjectItemCaseSensitive(d, "exception");
        const char *desc = sess_jstr(ex, "description"), *how = sess_jstr(d, "text");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(ex, "value");
        if (!*desc && cJSON_IsString(v))
            desc = v->valuestring; /* throw "a string" */
        /* "Uncaught ReferenceError: ...", "Uncaught (in promise) Error: ...",
           as DevTools shows them */
        char buf[SESS_CONSOLE_TEXT_MAX + 1];
        snprintf(buf, sizeof buf, "%s%s%s", how, *how && *desc ? " " : "", desc);
        url = sess_jstr(d, "url");
        int l = jint(d, "lineNumber");
        line = l >= 0 ? l + 1 : 0;
        add(t->s, t->id, "exception", "exception", buf, url, line,
            cJSON_GetObjectItemCaseSensitive(params, "timestamp"));
    } else if (!strcmp(method, "Log.entryAdded")) {
        /* The browser's own: a resource that failed, a blocked request, a
           security warning. Its chatter (verbose, info) stays out. */
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(params, "entry");
        const char *level = sess_jstr(e, "level");
        if (strcmp(level, "error") && strcmp(level, "warning"))
            return;
        /* The browser asks every site for /favicon.ico by itself: its 404
           is not the page's error. */
        const char *u = sess_jstr(e, "url"), *path = strstr(u, "://");
        path = path ? strchr(path + 3, '/') : NULL;
        if (!strcmp(sess_jstr(e, "source"), "network") && path && !strncmp(path, "/favicon.ico", 12) &&
            (!path[12] || path[12] == '?'))
            return;
        int l = jint(e, "lineNumber");
        add(t->s, t->id, level, sess_jstr(e, "source"), sess_jstr(e, "text"), sess_jstr(e, "url"),
            l >= 0 ? l + 1 : 0, cJSON_GetObjectItemCaseSensitive(e, "timestamp"));
    }
}

/* The level a message type is at: 2 an error, 1 a warning, 0 the rest. */
static int level_of(const sess_console_msg *e)
{
    if (!strcmp(e->type, "error") || !strcmp(e->type, "exception") || !strcmp(e->type, "assert"))
        return 2;
    return !strcmp(e->type, "warning");
}

int sess_console_level(const char *name)
{
    if (!name || !strcmp(name, "all"))
        return 0;
    if (!strcmp(name, "warning"))
        return 1;
    if (!strcmp(name, "error"))
        return 2;
    return -1;
}

static int list_locked(struct sess_console *c, uint64_t since, int level, sess_console_list *out);

int sess_console(sess *s, uint64_t since, int level, sess_console_list *out)
{
    memset(out, 0, sizeof *out);
    struct sess_console *c = s->console;
    if (!c)
        return 0;
    pthread_mutex_lock(&c->mu);
    int rc = list_locked(c, since, level, out);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int sess_console_untold(sess *s, int level, sess_console_list *out)
{
    memset(out, 0, sizeof *out);
    struct sess_console *c = s->console;
    if (!c)
        return 0;
    pthread_mutex_lock(&c->mu);
    int rc = 0;
    if (c->seq != c->told) {
        rc = list_locked(c, c->told, level, out);
        c->told = c->seq;
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

void sess_log_window(uint64_t seq, uint64_t base, uint64_t kept, uint64_t since, uint64_t *from,
                     uint64_t *dropped, int *reset)
{
    *dropped = 0;
    *reset = 0;
    /* since past the count: a count of another worker's (the session moved,
       and this log started again), so all of this one */
    if (since > seq) {
        *reset = 1;
        since = 0;
    }
    *from = since + 1;
    /* lost: after since, but no longer kept (the cap, or a cleared log) */
    uint64_t kept_from = base + 1;
    if (seq >= kept && seq - kept + 1 > kept_from)
        kept_from = seq - kept + 1;
    if (*from < kept_from) {
        *dropped = kept_from - *from;
        *from = kept_from;
    }
}

static int list_locked(struct sess_console *c, uint64_t since, int level, sess_console_list *out)
{
    out->next = c->seq;
    uint64_t from;
    sess_log_window(c->seq, c->base, SESS_CONSOLE_KEPT, since, &from, &out->dropped, &out->reset);
    size_t cap = from <= c->seq ? (size_t)(c->seq - from + 1) : 0;
    if (cap) {
        out->msgs = calloc(cap, sizeof *out->msgs);
        if (!out->msgs)
            return RG_ENOMEM;
    }
    for (uint64_t q = from; q <= c->seq && cap; q++) {
        const sess_console_msg *e = &c->ring[q % SESS_CONSOLE_KEPT];
        if (e->seq != q || level_of(e) < level)
            continue;
        sess_console_msg *o = &out->msgs[out->n];
        *o = *e;
        o->text = strdup(e->text);
        o->url = strdup(e->url);
        if (!o->text || !o->url) {
            free(o->text);
            free(o->url);
            break;
        }
        out->n++;
    }
    return 0;
}

void sess_console_list_free(sess_console_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->msgs[i].text);
        free(l->msgs[i].url);
    }
    free(l->msgs);
    memset(l, 0, sizeof *l);
}
