/*
 * cli.h - the pieces of refgate-cli, shared by the files of cli/ (and its
 * unit test, which compiles them in). Nothing outside cli/ includes it.
 *
 *   http.c   URLs, HTTP/1.1 requests and an incremental response parser, the
 *            socket transport with timeouts
 *   cmd.c    command line -> global options and one gateway call (method,
 *            path, command map, how to print the reply)
 *   admin.c  `admin ...`: tenants and keys, straight to Redis through tenant/
 *   out.c    printing replies and errors, exit statuses
 *   mcp.c    `mcp`: an MCP server on stdio, its tools as gateway calls
 *   main.c   main: environment, running the call
 *
 * The program is single-threaded. Strings taken from argv are borrowed for
 * the life of the process; everything else says who owns it.
 */
#ifndef CLI_H
#define CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "common/rg.h"
#include "tenant/tenant.h"

#define CLI_PROG "refgate-cli"
#define CLI_DEFAULT_URL "http://127.0.0.1:8080"
#define CLI_DEFAULT_TIMEOUT_MS 30000
#define CLI_TIMEOUT_MS_MAX 3600000
/* The gateway spends up to timeout_ms on a command; its reply may take this
   much longer to arrive before the CLI gives up waiting. */
#define CLI_REPLY_GRACE_MS 5000
#define CLI_MAX_HEADER_BYTES (64 * 1024)
#define CLI_MAX_BODY_BYTES (256u * 1024 * 1024)
#define CLI_MAX_CHUNK_LINE 1024
#define CLI_PATH_MAX 1024

/* Exit statuses. */
enum { CLI_EXIT_OK = 0, CLI_EXIT_FAIL = 1, CLI_EXIT_USAGE = 2 };

/** "Not yet": the parser needs more bytes. */
#define CLI_AGAIN 1

/* ---- URLs (http.c) ------------------------------------------------------- */

/** A parsed http://host[:port][/prefix] URL. */
typedef struct cli_url {
    char host[256];      /* an IPv6 address without its brackets */
    char port[8];        /* "80" when the URL has none */
    char prefix[512];    /* "" or "/path" without a trailing slash */
    char authority[280]; /* the Host header: host or [v6], with :port when given */
} cli_url;

/**
 * Parses s. http only: https and other schemes, user info, a query or a
 * fragment are RG_EBADREQ with a sentence in err.
 */
int cli_url_parse(const char *s, cli_url *u, char *err, size_t errlen);

/* ---- requests ------------------------------------------------------------ */

typedef struct cli_http_req {
    const char *method; /* "GET", "POST", "DELETE" */
    const char *path;   /* below the URL's prefix, starting with '/' */
    const char *key;    /* API key for Authorization: Bearer; NULL for none */
    const char *ctype;  /* body's Content-Type; NULL for application/msgpack */
    const void *body;   /* NULL: no body (POST still sends Content-Length: 0) */
    size_t body_len;
} cli_http_req;

/**
 * Appends the whole HTTP/1.1 request (Connection: close) to out.
 * RG_EBADREQ when the key or path holds bytes that cannot go in a header or a
 * request line; RG_ENOMEM.
 */
int cli_http_format(const cli_url *u, const cli_http_req *r, rg_buf *out, char *err, size_t errlen);

/**
 * Appends s to out with every byte outside [A-Za-z0-9-._~] percent-encoded
 * (one path segment).
 */
int cli_path_escape(rg_buf *out, const char *s);

/* ---- responses ----------------------------------------------------------- */

typedef struct cli_http_resp {
    int status;
    char ctype[128];    /* media type in lower case, parameters cut; "" if none */
    long retry_after_s; /* Retry-After in seconds, -1 when absent */
    rg_buf body;        /* de-chunked; owned */
} cli_http_resp;

void cli_http_resp_init(cli_http_resp *r);
void cli_http_resp_destroy(cli_http_resp *r);

/** State of one response being parsed: init before the first byte. */
typedef struct cli_http_parser {
    int state;
    size_t pos;             /* bytes of the input consumed */
    int64_t content_length; /* -1: none */
    uint64_t chunk_left;    /* bytes left in the current chunk */
} cli_http_parser;

void cli_http_parser_init(cli_http_parser *p);

/**
 * Parses the response in the first len bytes of in (all bytes received so far;
 * each call passes the same bytes again plus what arrived since). eof: the
 * peer closed, no more will come. Skips interim 1xx responses; the body is
 * delimited by chunked encoding, Content-Length, or the close.
 *
 * Returns 0 when resp holds the complete response, CLI_AGAIN when more bytes
 * are needed, or a negative error with a sentence in err: RG_EPROTO for a
 * malformed or truncated response (the connection closed early),
 * RG_ETOOLARGE past CLI_MAX_HEADER_BYTES or CLI_MAX_BODY_BYTES, RG_ENOMEM.
 */
int cli_http_parse(cli_http_parser *p, const char *in, size_t len, int eof, cli_http_resp *resp,
                   char *err, size_t errlen);

/* ---- transport ----------------------------------------------------------- */

/**
 * Sends req (len bytes) on the connected stream socket fd (made non-blocking
 * here; the caller still owns and closes it) and reads one response into
 * resp, all before deadline_ms (rg_now_ms). If the peer stops reading and
 * closes (for example after refusing a large body), a reply it sent anyway is
 * still read. RG_ETIMEOUT, RG_EUNAVAIL (connection error), or the errors of
 * cli_http_parse; a sentence in err.
 */
int cli_http_exchange(int fd, const void *req, size_t len, int64_t deadline_ms, cli_http_resp *resp,
                      char *err, size_t errlen);

/**
 * Connects to u's host and port (every address getaddrinfo gives, in order)
 * within timeout_ms each. 0 with *fd, RG_EUNAVAIL or RG_ETIMEOUT with a
 * sentence in err. Name resolution is bounded by the resolver's own timeouts.
 */
int cli_http_connect(const cli_url *u, int timeout_ms, int *fd, char *err, size_t errlen);

/**
 * One request and its response: connect (timeout_ms), send and read (timeout_ms
 * + CLI_REPLY_GRACE_MS from sending).
 */
int cli_http_do(const cli_url *u, const cli_http_req *r, int timeout_ms, cli_http_resp *resp,
                char *err, size_t errlen);

/**
 * Decodes a reply body by its Content-Type: application/msgpack (wire_mp_decode)
 * or application/json (wire_json_decode). *out is the caller's. RG_EMEDIA for
 * another type, RG_EBADREQ for a body that does not decode (sentence in err).
 */
int cli_reply_decode(const cli_http_resp *resp, cJSON **out, char *err, size_t errlen);

/* ---- the command line (cmd.c) -------------------------------------------- */

/** Options that every command takes; flags override the environment. */
typedef struct cli_global {
    const char *url;     /* --url / REFGATE_URL [CLI_DEFAULT_URL] */
    const char *key;     /* --key / REFGATE_KEY */
    const char *session; /* -s, --session / REFGATE_SESSION */
    const char *redis;   /* --redis (admin); REFGATE_REDIS_URL is read by common/ */
    int json;            /* --json: print the whole reply */
    int timeout_ms;      /* --timeout-ms [CLI_DEFAULT_TIMEOUT_MS] */
    int timeout_given;   /* --timeout-ms was given: also sent as args.timeout_ms */
} cli_global;

/** How a successful reply is printed when --json is not given. */
enum cli_out {
    CLI_OUT_NONE,     /* nothing */
    CLI_OUT_SESSION,  /* result.session */
    CLI_OUT_OBSERVE,  /* result.text, or result.elements as JSON */
    CLI_OUT_REF,      /* result.ref when there is one */
    CLI_OUT_CHECKED,  /* result.checked: true/false */
    CLI_OUT_SELECTED, /* result.selected as JSON */
    CLI_OUT_XY,       /* "x y" */
    CLI_OUT_URL,      /* result.url */
    CLI_OUT_VALUE,    /* result.value: a string raw, anything else as JSON */
    CLI_OUT_RESULT,   /* result as JSON */
    CLI_OUT_STATE,    /* result.state */
    CLI_OUT_FILE,     /* result.data (binary) written to out_file */
    CLI_OUT_REPLY,    /* the whole reply as JSON (call) */
    CLI_OUT_CONSOLE,  /* result.messages, one line each: "[type] text (url:line)" */
    CLI_OUT_NETWORK,  /* result.requests, one line each: "METHOD URL => STATUS" */
};

/** One call of the gateway, built from the command line. */
typedef struct cli_call {
    const char *name;        /* the command as typed ("click", "session create") */
    const char *method;      /* "POST", "GET", "DELETE" */
    char path[CLI_PATH_MAX]; /* "/v1/sessions[/<escaped sid>]" */
    cJSON *body;             /* the command map, owned; NULL for GET and DELETE */
    int out;                 /* enum cli_out */
    const char *out_file;    /* screenshot -o; "-" is stdout */
    int observe_elements;    /* observe --format elements|both */
} cli_call;

/** What cli_parse found. */
enum { CLI_CMD_GATEWAY = 0, CLI_CMD_ADMIN = 1, CLI_CMD_HELP = 2, CLI_CMD_MCP = 3 };

/** Defaults, then REFGATE_URL, REFGATE_KEY, REFGATE_SESSION when set and not empty. */
void cli_global_init(cli_global *g);
void cli_global_from_env(cli_global *g);

/**
 * Tries argv[*i] as a global option (--url, --key, -s/--session, --redis,
 * --json, --timeout-ms, each value as the next word or after '='). Returns 1
 * and advances *i past it (and its value), 0 when it is not one, or
 * RG_EBADREQ with a sentence in err.
 */
int cli_global_flag(cli_global *g, int argc, char **argv, int *i, char *err, size_t errlen);

/**
 * Parses the words after the program name. Global options may come anywhere,
 * except that after the command word the command's own options win (so
 * `session create --url U` is the page to open and `wait --url U` a URL to
 * wait for). `--` makes every later word positional.
 *
 * Returns CLI_CMD_HELP (--help, -h, help), CLI_CMD_ADMIN with *admin_at the
 * index of the word after "admin" (the rest is cli_admin_parse's), or
 * CLI_CMD_GATEWAY with c filled (release with cli_call_destroy). A usage
 * error is RG_EBADREQ with a sentence in err (c then holds nothing).
 */
int cli_parse(int argc, char **argv, cli_global *g, cli_call *c, int *admin_at, char *err,
              size_t errlen);
/**
 * Checks the command table against the protocol's (wire/op.h): every args
 * key a command sends is an argument of its op. 0, or RG_EINTERNAL naming
 * the first that is not in err.
 */
int cli_check_commands(char *err, size_t errlen);
void cli_call_destroy(cli_call *c);

/** The full help text. */
void cli_print_help(FILE *f);
/** The one-line usage shown with usage errors. */
void cli_print_usage(FILE *f);

/* ---- admin (admin.c) ----------------------------------------------------- */

enum cli_admin_action {
    CLI_ADMIN_TENANT_CREATE,
    CLI_ADMIN_TENANT_LIST,
    CLI_ADMIN_TENANT_SHOW,
    CLI_ADMIN_TENANT_UPDATE,
    CLI_ADMIN_TENANT_DELETE,
    CLI_ADMIN_KEY_CREATE,
    CLI_ADMIN_KEY_REVOKE,
};

/* Bits of cli_admin.has: which tenant fields the command line sets. */
enum {
    CLI_SET_MAX_SESSIONS = 1 << 0,
    CLI_SET_MAX_CONCURRENT = 1 << 1,
    CLI_SET_RATE = 1 << 2,
    CLI_SET_PRIVATE = 1 << 3,
    CLI_SET_EVAL = 1 << 4,
    CLI_SET_UA = 1 << 5,
    CLI_SET_LOCALE = 1 << 6,
    CLI_SET_ALLOW = 1 << 7, /* the allow list is replaced by allow[] */
    CLI_SET_DENY = 1 << 8,
    CLI_SET_DOWNLOADS = 1 << 9,
};

/** An admin command line. Strings are borrowed from argv. */
typedef struct cli_admin {
    int action;      /* enum cli_admin_action */
    const char *arg; /* NAME, or KEY_OR_HASH for key revoke */
    unsigned has;
    int max_sessions, max_concurrent;
    double rate;
    int allow_private, allow_eval, allow_downloads;
    const char *user_agent, *locale; /* "" clears */
    const char *allow[TENANT_HOSTS_MAX];
    size_t n_allow;
    const char *deny[TENANT_HOSTS_MAX];
    size_t n_deny;
} cli_admin;

/**
 * Parses the words after "admin" (global options accepted among them) into a.
 * 0, or RG_EBADREQ with a sentence in err.
 */
int cli_admin_parse(int argc, char **argv, cli_global *g, cli_admin *a, char *err, size_t errlen);

/** Applies the fields a sets to t. 0 or RG_ENOMEM. */
int cli_admin_apply(const cli_admin *a, tenant *t);

/** Runs a against Redis, printing as documented; returns the exit status. */
int cli_admin_run(const cli_global *g, const cli_admin *a);

/* ---- messages and printing (out.c) ---------------------------------------- */

/** "refgate-cli: " + the message and a newline, on f. */
void cli_error(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Prints v as one line of compact JSON on f. 0, or -1 (message on stderr). */
int cli_print_json(FILE *f, const cJSON *v);

/* ---- local files (files.c) ---- */

#define CLI_UPLOAD_FILE_MAX (1ull << 30) /* bytes of one local file refgate-cli sends */

/**
 * The upload entry {name, data} of the local file at path: its base name and
 * its bytes as a bin item. NULL with a sentence in err when it cannot be
 * read (or is not a regular file).
 */
cJSON *cli_upload_entry(const char *path, char *err, size_t errlen);
/** The JSON the file at path holds (at most 16 MiB) into *out: 0, or RG_EBADREQ with a
    sentence in err (session create --state, MCP's browser_set_storage_state). */
int cli_json_file(const char *path, cJSON **out, char *err, size_t errlen);
/**
 * In the command map body, replaces each string of args.files (a local
 * path, as `upload TARGET FILE...` puts it) by its upload entry. 0, or
 * RG_EBADREQ with a sentence in err.
 */
int cli_load_upload(cJSON *body, char *err, size_t errlen);

/**
 * Prints a decoded reply for call c: with json (or CLI_OUT_REPLY) the whole
 * reply on out; else for {"ok":true} what c->out says (a screenshot goes to
 * c->out_file, with json too); for {"ok":false} "refgate-cli: <code>: <message>" (and the
 * retry hint and details) on errf. Returns the exit status: 0, or
 * CLI_EXIT_FAIL for an error reply, a reply that is not a refgate reply, or a
 * failure to print or write.
 */
int cli_print_reply(const cli_call *c, int json, const cJSON *reply, FILE *out, FILE *errf);

/* ---- mcp (mcp.c) ---------------------------------------------------------- */

/**
 * `refgate-cli mcp [--session SID] [--on-exit park|close]`: serves MCP on
 * stdin and stdout until the end of input. argv holds the words after
 * "mcp". Returns the exit status.
 */
int cli_mcp_main(const cli_global *g, int argc, char **argv);

#endif
