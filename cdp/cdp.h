/*
 * cdp.h - a Chrome DevTools Protocol client over --remote-debugging-pipe.
 *
 * Chromium reads commands on its fd 3 and writes replies and events on its
 * fd 4; every message is one JSON text followed by a NUL byte. A cdp_conn
 * owns our ends of both pipes and one reader thread that frames incoming
 * bytes, matches replies to calls by id and hands events to subscribers.
 *
 * Threading: any thread may call cdp_call, cdp_call_async, cdp_subscribe and
 * cdp_unsubscribe at any time. Callbacks (async replies, events) run on the
 * connection's reader thread: they must not block, and must not call the
 * synchronous cdp_call on the same connection (it would wait for itself; it
 * is refused with RG_EINTERNAL).
 *
 * Errors: functions return 0 or a negative rg_err (common/rg.h). When the
 * browser's pipe closes or breaks, the connection takes a sticky error
 * (RG_ECRASHED, like a hiredis context): every pending call fails at once and
 * every later call fails without being sent. Its owner frees it.
 *
 * Flattened sessions: a call or event carries an optional session id (the
 * `sessionId` of Target.attachToTarget with flatten: true); NULL means the
 * browser target itself.
 */
#ifndef CDP_H
#define CDP_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/rg.h"

/* Defaults; cdp_config holds the values in use (the pool sets them). */
#define CDP_MAX_MESSAGE_BYTES (64u * 1024 * 1024)     /* one DevTools message */
#define CDP_MAX_WRITE_QUEUE_BYTES (16u * 1024 * 1024) /* unsent bytes per pipe */
#define CDP_DEFAULT_TIMEOUT_MS 30000
#define CDP_MAX_SUBSCRIBERS 1024 /* event subscriptions per connection (each tab of a
                                    session takes two) */

typedef struct cdp_conn cdp_conn;

typedef struct cdp_config {
    size_t max_message_bytes;     /* larger incoming messages are a protocol error */
    size_t max_write_queue_bytes; /* unsent bytes allowed before calls get RG_EBUSY */
    const char *name;             /* for log lines, copied */
} cdp_config;

/** Fills cfg with the defaults of common/rg.h. */
void cdp_config_default(cdp_config *cfg);

/**
 * Starts a connection that reads rfd (Chromium's fd 4) and writes wfd
 * (Chromium's fd 3). Takes ownership of both fds (closed by cdp_conn_free,
 * also on failure here) and makes them non-blocking. cfg may be NULL for the
 * defaults. On success *out is the connection, the caller owns it.
 */
int cdp_conn_new(int rfd, int wfd, const cdp_config *cfg, cdp_conn **out);

/**
 * Fails every pending call, stops the reader thread, closes the fds and frees
 * the connection. No other thread may use c once this starts; it must not be
 * called from a callback of c. NULL is accepted.
 */
void cdp_conn_free(cdp_conn *c);

/**
 * How long, in ms, c has had no call in flight: 0 while one waits for its
 * reply, else the time since the last one was answered (or failed, or timed
 * out). Events do not count. The pool makes its warm contexts in such a
 * quiet moment (pool.c, needs_spare).
 */
int64_t cdp_conn_quiet_ms(cdp_conn *c);

/**
 * The sticky error: 0 while the connection is usable, else the rg_err it
 * failed with; when buf is not NULL, the reason is copied into it.
 */
int cdp_conn_err(cdp_conn *c, char *buf, size_t len);

/**
 * Puts the connection into the failed state as though its pipe had closed:
 * pending calls fail with err, and so does every later call.
 */
void cdp_conn_fail(cdp_conn *c, int err, const char *why);

/**
 * Fails at once, with RG_ECRASHED and why, every pending call of the
 * flattened session sid: its target is gone (a browser-level event such as
 * Target.targetCrashed said so) and will never answer them. Later calls on
 * sid fail the same way at once (the last 32 sessions that went are
 * remembered). The connection does the same by itself on
 * Target.detachedFromTarget and Inspector.targetCrashed.
 */
void cdp_fail_session(cdp_conn *c, const char *sid, const char *why);

/* ---- calls ------------------------------------------------------------- */

/** What a call returned. Release with cdp_reply_free. */
typedef struct cdp_reply {
    cJSON *msg;          /* the whole reply message, owned */
    const cJSON *result; /* borrowed from msg: its "result" object on success */
    int cdp_code;        /* Chromium's error code when the call failed with RG_ECDP */
    char error[256];     /* why the call failed, a sentence for logs and people */
} cdp_reply;

void cdp_reply_free(cdp_reply *r);

/**
 * Sends method with params (a JSON object text, or NULL for none) to the
 * target of session_id (NULL: the browser) and waits up to timeout_ms
 * (<= 0: the default of 30 s) for the reply.
 *
 * Returns 0 with reply->result set; RG_ECDP when Chromium answered with an
 * error (reply->cdp_code, reply->error); RG_ETIMEOUT; RG_ECRASHED (or the
 * connection's sticky error) when the pipe is gone; RG_EBUSY when the write
 * queue is full; RG_EPROTO when the reply was over the message cap. reply may
 * be NULL to wait without keeping the result. On every path where reply is
 * not NULL it must be released with cdp_reply_free.
 */
int cdp_call(cdp_conn *c, const char *session_id, const char *method, const char *params,
             int timeout_ms, cdp_reply *reply);

/**
 * Called once per async call with its outcome, on the reader thread. The
 * reply is borrowed for the duration of the callback; to keep the message,
 * take reply->msg and set it to NULL.
 */
typedef void (*cdp_reply_fn)(void *ud, int rc, cdp_reply *reply);

/**
 * Sends a call without waiting. fn (may be NULL: the reply is dropped) is
 * called exactly once with the reply, a timeout or the connection's failure,
 * unless this function returns an error, in which case it is never called.
 */
int cdp_call_async(cdp_conn *c, const char *session_id, const char *method, const char *params,
                   int timeout_ms, cdp_reply_fn fn, void *ud);

/* ---- events ------------------------------------------------------------ */

/**
 * An event: method and params (borrowed for the call). When the connection
 * fails, every subscriber is called once more with method and params NULL.
 */
typedef void (*cdp_event_fn)(void *ud, const char *session_id, const char *method,
                             const cJSON *params);

/**
 * Subscribes fn to events whose session is session_id (NULL: any session,
 * including the browser's) and whose method equals method, or starts with it
 * when it ends in '.' ("Page." for the whole domain); NULL for every method.
 * Returns a subscription id (> 0) or a negative rg_err (RG_EBUSY past
 * CDP_MAX_SUBSCRIBERS).
 */
int cdp_subscribe(cdp_conn *c, const char *session_id, const char *method, cdp_event_fn fn,
                  void *ud);

/**
 * Ends a subscription. When it returns, fn is not running and will not be
 * called again, except when called from that very callback.
 */
void cdp_unsubscribe(cdp_conn *c, int sub_id);

/**
 * A one-shot wait for an event. Create it before doing what causes the
 * event (so it cannot be missed), then wait.
 */
typedef struct cdp_waiter cdp_waiter;

int cdp_waiter_new(cdp_conn *c, const char *session_id, const char *method, cdp_waiter **out);
/**
 * Waits until the event has arrived (0; *params, when not NULL, is borrowed
 * until cdp_waiter_free), timeout_ms has passed (RG_ETIMEOUT) or the
 * connection failed (its sticky error).
 */
int cdp_waiter_wait(cdp_waiter *w, int timeout_ms, const cJSON **params);
void cdp_waiter_free(cdp_waiter *w);

/* ---- lower level, exposed for tests and fuzzers ------------------------ */

/**
 * Rewrites, inside JSON string literals of s[0..n), every \u0000 escape and
 * every escaped surrogate that is not part of a high-low pair to \ufffd, in
 * place (both are six bytes). cJSON truncates strings at \u0000 and rejects
 * lone surrogates; Chromium sends both. Returns how many escapes it rewrote.
 */
size_t cdp_json_sanitize(char *s, size_t n);

/**
 * NUL framing of the incoming byte stream. Bytes are read straight into the
 * frame buffer (cdp_frame_space, then cdp_frame_commit); every complete
 * message is handed to on_msg as a NUL-terminated string it may modify.
 * A message longer than max bytes is not buffered: on_oversize gets its first
 * bytes (enough to find its "id") and the rest is skipped up to its NUL.
 */
typedef struct cdp_frame {
    char *buf;
    size_t len, cap;
    size_t max;          /* message cap */
    int skipping;        /* inside an oversized message */
    size_t skipped;      /* bytes of it seen so far */
    char head[128];      /* its first bytes */
    size_t head_len;
} cdp_frame;

typedef void (*cdp_frame_msg_fn)(void *ud, char *msg, size_t len);
typedef void (*cdp_frame_oversize_fn)(void *ud, const char *head, size_t head_len, size_t total);

int cdp_frame_init(cdp_frame *f, size_t max);
void cdp_frame_destroy(cdp_frame *f);
/** The room the reader asks for per read; the frame keeps that much beyond its initial size. */
#define CDP_FRAME_READ_BYTES (256u * 1024)
/** Room to read into: at least want bytes (fewer only if the cap forbids). */
int cdp_frame_space(cdp_frame *f, size_t want, char **p, size_t *avail);
/** Accounts for n bytes read into the space and dispatches complete messages. */
void cdp_frame_commit(cdp_frame *f, size_t n, cdp_frame_msg_fn on_msg,
                      cdp_frame_oversize_fn on_oversize, void *ud);

#endif
