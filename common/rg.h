/*
 * rg.h - what every refgate module shares: the error enum that maps onto the
 * wire protocol's error codes, the limits shared across modules (units in
 * the names),
 * monotonic time, logging and a growable byte buffer.
 *
 * Threading: everything here is safe from any thread. rg_buf is not shared:
 * each buffer belongs to one thread at a time.
 *
 * Dependency direction: common/ depends on nothing of refgate; every module
 * may include it.
 */
#ifndef RG_H
#define RG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* ---- errors -------------------------------------------------------------
 * Functions return int: 0 on success, a negative rg_err on failure. Each
 * value maps onto one code of docs/protocol.md (rg_err_code) with its HTTP status
 * and kind. RG_ECDP and RG_EPROTO are internal detail that the gateway
 * reports as `internal` unless a layer above knows better.
 */
enum rg_err {
    RG_OK = 0,
    RG_EBADREQ = -1,        /* bad_request */
    RG_EUNAUTH = -2,        /* unauthorized */
    RG_EFORBIDDEN = -3,     /* forbidden */
    RG_EBLOCKEDURL = -4,    /* blocked_url */
    RG_ENOTFOUND = -5,      /* not_found */
    RG_ECONFLICT = -6,      /* conflict */
    RG_ETOOLARGE = -7,      /* payload_too_large */
    RG_EMEDIA = -8,         /* unsupported_media_type */
    RG_ESTALE = -9,         /* stale_ref */
    RG_ENOMATCH = -10,      /* no_match */
    RG_EAMBIGUOUS = -11,    /* ambiguous */
    RG_ENOTACTIONABLE = -12, /* not_actionable */
    RG_ENAVFAILED = -13,    /* navigation_failed */
    RG_ERATE = -14,         /* rate_limited */
    RG_EQUOTA = -15,        /* quota_exceeded */
    RG_ECRASHED = -16,      /* browser_crashed: the browser or its pipe is gone */
    RG_EPOOL = -17,         /* pool_exhausted */
    RG_EUNAVAIL = -18,      /* unavailable */
    RG_ETIMEOUT = -19,      /* timeout */
    RG_EINTERNAL = -20,     /* internal */
    RG_ECDP = -21,          /* Chromium answered a DevTools call with an error */
    RG_EPROTO = -22,        /* malformed or oversized DevTools message */
    RG_ENOMEM = -23,        /* an allocation sized by input failed */
    RG_EBUSY = -24,         /* a bounded queue is full (maps to unavailable) */
    RG_ERR_MIN = -24
};

/**
 * Formats a sentence into err (errlen bytes; err may be NULL) and returns
 * rc: the one way to fail with a reason (RG_EBADREQ to refuse input).
 */
int rg_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/** The protocol code for err ("bad_request", ...); "internal" for unknowns. */
const char *rg_err_code(int err);
/** The HTTP status the protocol gives err. */
int rg_err_http(int err);
/** 1 when the protocol calls err transient (sending again may succeed). */
int rg_err_transient(int err);

/* ---- limits ---------------------------------------------------------------
 * A tenant's limits, held across every worker through Redis (docs/protocol.md,
 * "Tenant limits"; gateway/limits.c and session/quota.c say how).
 */
#define RG_ADMIT_WAIT_MS 2000     /* a command waits this long for a concurrency slot */
#define RG_CONC_QUEUE_MAX 1024    /* commands of one tenant waiting for a slot, all workers */
#define RG_CONC_LEASE_MS 5000     /* a dead worker's slots come back this long after it died */
#define RG_CONC_SYNC_MS 50        /* a worker holding slots checks for waiters elsewhere */
#define RG_CONC_POLL_MS 10        /* a waiting command asks Redis whether it got a slot */
#define RG_CONC_LINGER_MS 20      /* an idle slot is kept this long for the tenant's next
                                     command on the same worker; REFGATE_CONC_LINGER_MS */
#define RG_QUOTA_GRACE_MS 15000   /* a create's quota reservation outlives its wait for a
                                     browser context by this much */

/* Files of a session (session/files.c; the byte limits are REFGATE_* variables). */
#define RG_UPLOAD_FILES_MAX 32 /* files one upload may carry */
#define RG_FILE_NAME_MAX 255   /* bytes of an uploaded or downloaded file's name */
#define RG_DOWNLOADS_MAX 64    /* downloads a session lists; more are refused */

/* ---- time ---------------------------------------------------------------- */

/** Milliseconds of CLOCK_MONOTONIC. */
int64_t rg_now_ms(void);
/** Microseconds of CLOCK_MONOTONIC. */
int64_t rg_now_us(void);
/** Milliseconds since the Unix epoch (CLOCK_REALTIME), for stored timestamps. */
int64_t rg_wall_ms(void);
/**
 * The CLOCK_MONOTONIC time timeout_ms from now, for pthread_cond_timedwait
 * on a condition variable whose clock is CLOCK_MONOTONIC.
 */
struct timespec;
void rg_deadline(struct timespec *ts, int timeout_ms);

/** Sleep for ms milliseconds (restarts after signals). */
void rg_sleep_ms(int ms);

/* ---- strings ------------------------------------------------------------ */

/**
 * Copies src into dst (size bytes, always NUL-terminated when size > 0),
 * truncating; returns strlen(src) so a caller can tell it was cut.
 */
size_t rg_strlcpy(char *dst, const char *src, size_t size);

/**
 * The length of s's longest prefix of at most max bytes that does not end
 * inside a UTF-8 sequence: where to cut s to keep it valid text.
 */
size_t rg_utf8_prefix(const char *s, size_t max);

/* ---- files ---- */

/**
 * Removes a directory tree, never following a symlink out of it. Returns 0,
 * or -1 when the tree is not there or something in it could not be removed
 * (the rest is removed all the same).
 */
int rg_rmtree(const char *path);

/** The value of the hex digit c (either case), or -1 when c is not one. */
int rg_hex_value(int c);

struct msgpack_object;
/** 1 when k is a msgpack str equal to name: a map key of a stored record. */
int rg_mp_key_is(const struct msgpack_object *k, const char *name);

/* ---- base64 ------------------------------------------------------------- */

/* The URL-safe alphabet ('-' and '_') without '=' padding, decoded strictly:
   the bits past the last byte must be zero, so a value has one spelling
   (view tokens). Without it: the standard alphabet, padded when encoded,
   padding optional and those bits ignored when decoded. */
#define RG_B64_URL 1

/**
 * Decodes s (n bytes, no whitespace) into out (cap bytes): the decoded
 * length, or -1 for a character outside the alphabet, a length no encoding
 * has, leftover bits under RG_B64_URL, or no room. out NULL: only checks
 * and counts.
 */
long rg_base64_decode_to(const char *s, size_t n, unsigned char *out, size_t cap, int flags);

/**
 * Decodes standard base64 (padding optional, no whitespace) from s (n bytes).
 * Returns a new buffer the caller owns and its length in *out_len, or NULL
 * for malformed input or no memory.
 */
unsigned char *rg_base64_decode(const char *s, size_t n, size_t *out_len);

/* ---- environment ------------------------------------------------------- */

/**
 * Integer configuration from the environment: def when name is unset; when it
 * is set but not an integer in [min, max], a warning is logged and def used.
 */
long rg_env_long(const char *name, long def, long min, long max);

/* ---- logging -------------------------------------------------------------
 * One line per call to stderr: time, level, module, message. The level comes
 * from REFGATE_LOG_LEVEL (error, warn, info, debug; default info).
 */
enum rg_log_level { RG_LOG_ERROR = 0, RG_LOG_WARN, RG_LOG_INFO, RG_LOG_DEBUG };

void rg_log(int level, const char *module, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int rg_log_enabled(int level);

/* ---- byte buffer ---------------------------------------------------------
 * A growable buffer, always NUL-terminated after len bytes. Append functions
 * return 0 or RG_ENOMEM; after a failure the buffer keeps what it had and
 * its `failed` flag is set, so a builder can append many pieces and check
 * once at the end.
 */
typedef struct rg_buf {
    char *data;
    size_t len;
    size_t cap;
    int failed;
} rg_buf;

void rg_buf_init(rg_buf *b);
void rg_buf_destroy(rg_buf *b);
void rg_buf_reset(rg_buf *b);
int rg_buf_reserve(rg_buf *b, size_t extra);
int rg_buf_append(rg_buf *b, const void *p, size_t n);
int rg_buf_puts(rg_buf *b, const char *s);
int rg_buf_printf(rg_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/**
 * Appends s (n bytes, any content) as a JSON string literal with quotes,
 * escaping quotes, backslashes and control characters. Invalid UTF-8 is
 * copied as is; the DevTools side replaces it with U+FFFD.
 */
int rg_buf_json_str(rg_buf *b, const char *s, size_t n);
/** The same for the C string s, or JSON null when s is NULL. */
int rg_buf_json_str_or_null(rg_buf *b, const char *s);
/** Appends the base64 of in (n bytes) to b (RG_B64_URL or 0, above): 0, or RG_ENOMEM. */
int rg_base64_append(rg_buf *b, const void *in, size_t n, int flags);
/** Takes the data out of the buffer: the caller owns it; b is left empty. */
char *rg_buf_steal(rg_buf *b);

/* ---- Redis connections (common/redis.c) ----------------------------------
 * One Redis server or a Redis Cluster, shared by the threads of one process.
 * Commands go through rg_redis_command, rg_redis_argv, rg_redis_eval or a
 * pipeline, which find the command's keys and route it by their slot: on a
 * cluster to the master that holds the slot (following MOVED and ASK, and
 * retrying TRYAGAIN, CLUSTERDOWN and an unreachable node for at most the
 * command timeout). All keys of one command must lie in one slot (one hash
 * tag): a command whose keys do not is refused with an error reply and
 * logged, in either mode, so the tests on one server catch it.
 *
 * Each node has a small set of hiredis contexts: a thread takes one for one
 * round trip and gives it back. Timeouts are set after every connect; a
 * context that saw an error is freed, never reused (hiredis errors are
 * sticky). While Redis is down a command fails after the connect timeout:
 * callers answer RG_EUNAVAIL, never hang.
 */
struct redisContext;
struct redisReply;

typedef struct rg_redis rg_redis;

typedef struct rg_redis_config {
    /* REFGATE_REDIS_URL: redis://[[user]:password@]host[:port][/db] or
       redis+cluster://[[user]:password@]host:port[,host:port...] or
       redis+sentinel://[[user]:password@]host:port[,host:port...]/name[/db] */
    const char *url;
    int connect_timeout_ms; /* [500] */
    int command_timeout_ms; /* REFGATE_REDIS_TIMEOUT_MS [1000]; also the bound on cluster retries */
} rg_redis_config;

/** The private Redis of `make run`: 127.0.0.1, REFGATE_REDIS_PORT or 6390. */
#define RG_REDIS_DEFAULT_PORT 6390
/** Cluster nodes one client keeps track of (masters and the ones it was redirected to). */
#define RG_REDIS_NODES_MAX 64

void rg_redis_config_default(rg_redis_config *cfg);
/** Takes REFGATE_REDIS_URL (or REFGATE_REDIS_PORT) and REFGATE_REDIS_TIMEOUT_MS when set. */
void rg_redis_config_from_env(rg_redis_config *cfg);

/**
 * Parses the URL and prepares the connections; it does not need Redis to be
 * up (the first command finds out, and on a cluster learns the slot map).
 * RG_EBADREQ with a sentence in err for a URL it cannot read. The caller
 * owns *out.
 */
int rg_redis_new(const rg_redis_config *cfg, rg_redis **out, char *err, size_t errlen);
void rg_redis_free(rg_redis *r);

/** "host:port" (or "host:port,... (cluster)") for messages. */
const char *rg_redis_where(const rg_redis *r);
/** 1 for a redis+cluster:// URL. */
int rg_redis_is_cluster(const rg_redis *r);
/** "host:port" of the server a keyless command goes to now (the master the
    sentinels named, the server, a cluster's first master): 0, or -1 with ""
    when not known yet. Asks nobody. */
int rg_redis_current(rg_redis *r, char *out, size_t len);

/** The cluster slot of a key: CRC16 of its hash tag (or of the key) mod 16384. */
int rg_redis_slot(const char *key, size_t len);

/**
 * One command, formatted as redisCommand does, routed by its keys. Returns
 * the reply (caller frees with freeReplyObject): Redis's own, or an error
 * reply made here for a command that cannot be routed (keys in different
 * slots, a command this client has no key table for, or on a cluster a
 * command on one node's keyspace such as SCAN or FLUSHALL). NULL when Redis
 * could not be reached, the reply did not come in time, or the cluster did
 * not take the command within the bound: transient, RG_EUNAVAIL.
 */
struct redisReply *rg_redis_command(rg_redis *r, const char *fmt, ...);
/** The same with arguments (lens may be NULL for C strings). */
struct redisReply *rg_redis_argv(rg_redis *r, int argc, const char **argv, const size_t *lens);

/** A Lua script run with EVALSHA, falling back to EVAL on NOSCRIPT (per node). */
typedef struct rg_redis_script {
    const char *src;
    char sha[41];     /* filled on first use (SCRIPT LOAD) */
} rg_redis_script;

/**
 * Runs script with nkeys keys followed by the other arguments (args and
 * lens hold nkeys + nargs items; lens may be NULL for C strings), routed by
 * its keys, which must share one slot; a script must touch no other key.
 * The reply as rg_redis_command's.
 */
struct redisReply *rg_redis_eval(rg_redis *r, rg_redis_script *s, int nkeys, int nargs,
                                 const char *const *args, const size_t *lens);

/**
 * rg_redis_eval, then WAIT replicas timeout_ms on the same connection in the
 * same round trip: *acked gets how many replicas acknowledged the script's
 * writes (and what the connection wrote before), or -1 when that is not known
 * (the script was redirected to another node or refused there, and ran the
 * plain way). The wait makes the reply come up to timeout_ms later; keep it
 * below the command timeout.
 */
struct redisReply *rg_redis_eval_wait(rg_redis *r, rg_redis_script *s, int nkeys, int nargs,
                                      const char *const *args, const size_t *lens, int replicas,
                                      int timeout_ms, int *acked);

/**
 * A pipeline: commands queued with rg_redis_pipe_add, sent with
 * rg_redis_pipe_run in order, consecutive ones for one node in one round
 * trip. Each command's keys must share a slot; different commands may lie
 * in different slots. One thread at a time; the caller owns it.
 */
typedef struct rg_redis_pipe rg_redis_pipe;
rg_redis_pipe *rg_redis_pipe_new(rg_redis *r);
void rg_redis_pipe_free(rg_redis_pipe *p);
/** Queues one command (redisCommand's format). 0, or RG_ENOMEM (run then fails). */
int rg_redis_pipe_add(rg_redis_pipe *p, const char *fmt, ...);
int rg_redis_pipe_size(const rg_redis_pipe *p);
/**
 * Runs the queued commands; out (rg_redis_pipe_size items) receives their
 * replies, the caller's to free. 0 when every command got a reply; -1 when
 * some did not (those are NULL): treat as transient.
 */
int rg_redis_pipe_run(rg_redis_pipe *p, struct redisReply **out);

/**
 * Raw connections, for what is per node: SCAN, INFO, DBSIZE, FLUSHALL.
 * rg_redis_masters says how many masters there are (1 for one server; on a
 * cluster it asks for the slot map; -1 when it cannot). rg_redis_take_master
 * gives a context to master i (NULL when unreachable), rg_redis_take to the
 * server or the first master; each goes back with rg_redis_give (failed: the
 * last command got no reply; such a context is freed).
 */
int rg_redis_masters(rg_redis *r);
struct redisContext *rg_redis_take_master(rg_redis *r, int i);
struct redisContext *rg_redis_take(rg_redis *r);
void rg_redis_give(rg_redis *r, struct redisContext *c, int failed);

#endif
