/*
 * net.h - loopback HTTP, FastCGI and WebSocket clients for the gateway's
 * tests and benchmarks (the whole stack they talk to is stack.h). Test code
 * only.
 */
#ifndef RG_TEST_NET_H
#define RG_TEST_NET_H

#include <stddef.h>
#include <sys/types.h>

#include "common/rg.h"

/* ---- HTTP/1.1 (net.c) ---- */

/** A TCP connection to 127.0.0.1:port (TCP_NODELAY, close-on-exec), or -1. */
int net_dial(int port);
/** The same to ip:port (ip a dotted IPv4 address: the tests keep to 127.0.0.0/8), or -1. */
int net_dial_at(const char *ip, int port);
/**
 * The value of header name (any case) in a response head ("HTTP/1.1 ...\r\n"
 * and header lines), without leading spaces, into out; out, or NULL when the
 * head has no such header.
 */
const char *http_header_value(const char *head, const char *name, char *out, size_t len);

typedef struct http_resp {
    int status;
    char content_type[128];
    int retry_after;         /* -1 when absent */
    int closed;              /* the server sent Connection: close: dial again */
    rg_buf body;
} http_resp;

/**
 * One request to 127.0.0.1:port with Connection: close; headers are extra
 * "Name: value\r\n" lines (may be NULL). 0, or -1 when the connection or
 * the response failed (30 s timeout). Free resp->body with rg_buf_destroy.
 */
int http_request(int port, const char *method, const char *path, const char *headers,
                 const void *body, size_t len, http_resp *resp);
/** A persistent connection for many requests (keep-alive), or -1. */
int http_connect(int port);
/**
 * A request on a kept-alive connection fd (Connection: keep-alive). When
 * resp->closed is set the server ends the connection after this reply (as
 * nginx does after keepalive_requests): close fd and connect again.
 */
int http_request_on(int fd, const char *method, const char *path, const char *headers,
                    const void *body, size_t len, http_resp *resp);

/** The value of an unlabelled metric in Prometheus text (/metrics), or -1 when absent. */
double metric_value(const char *text, const char *name);

/* ---- FastCGI (net.c), to talk to a worker without nginx in between ---- */

/**
 * One FastCGI responder request to 127.0.0.1:port: params is a
 * NULL-terminated list of "NAME=value" entries (nothing is added: leave out
 * CONTENT_LENGTH to send a body without one), body goes as FCGI_STDIN in
 * records of up to 65,535 bytes. The reply's Status, Content-Type and
 * Retry-After headers fill resp, the rest is its body. 0, or -1 when the
 * connection or the reply failed (30 s timeout).
 */
int fcgi_request(int port, const char *const *params, const void *body, size_t len,
                 http_resp *resp);
/** The same to ip:port (a worker on another test "host", tests/integration/test_hosts.c). */
int fcgi_request_at(const char *ip, int port, const char *const *params, const void *body,
                    size_t len, http_resp *resp);
/**
 * The same request with a body of len zero bytes, streamed, that stops at
 * the first write the worker no longer takes (a closed connection, or none
 * for 30 s); *sent is the body bytes written before. Then reads the reply as
 * fcgi_request does: 0 when one came.
 */
int fcgi_flood(int port, const char *const *params, size_t len, size_t *sent, http_resp *resp);

/* ---- WebSocket client (net.c) ---- */

typedef struct wsc wsc;

/** Opens ws://127.0.0.1:port/path with headers; NULL with the HTTP status in *status. */
wsc *wsc_open(int port, const char *path, const char *headers, int *status);
/** Sends one frame (binary, or text when text is set). */
int wsc_send(wsc *w, const void *data, size_t len, int text);
/**
 * Receives one data frame within timeout_ms into out (appended). Returns the
 * opcode (1 text, 2 binary), 8 when the server closed (its close frame's
 * payload appended: a 2-byte status code, then the reason's text), -1 on
 * timeout/error.
 * Pings met on the way are answered, as every WebSocket client does (the
 * gateway sends the next screencast frame only once the ping behind the
 * last one is answered).
 */
int wsc_recv(wsc *w, rg_buf *out, int timeout_ms);
void wsc_close(wsc *w);

#endif
