/*
 * support.h - helpers shared by refgate's tests and benchmarks: a loopback
 * HTTP server for fixture pages and process inspection through /proc.
 * Test code only; never linked into refgate itself.
 */
#ifndef RG_TEST_SUPPORT_H
#define RG_TEST_SUPPORT_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

typedef struct httpd httpd;

/**
 * Starts an HTTP/1.1 server on 127.0.0.1 at an ephemeral port, one thread per
 * connection. GET /<file> serves docroot/<file> when it exists (docroot may
 * be NULL); any other path gets a small HTML page titled with the path.
 * GET /slow never answers (for timeout tests); GET /redirect?to=URL answers
 * 302 to URL; GET /nocontent answers 204; GET /missing... answers 404 (a
 * resource that is not there); GET /late/PATH answers as GET /PATH, 300 ms
 * late; GET /echo-cookie answers a page showing the Cookie header it was
 * sent. A query of "cacheable" sends a
 * page with max-age=0 instead of no-store. Every response closes the
 * connection.
 */
httpd *httpd_start(const char *docroot);
/** The same on 127.0.0.1:port (0: any free port). */
httpd *httpd_start_port(const char *docroot, int port);
/** The same on [::1], any free port: a site apart from 127.0.0.1 and
    localhost (httpd_url's URLs are 127.0.0.1's: write its own). */
httpd *httpd_start_ipv6(const char *docroot);
/**
 * From now on /favicon.ico is 404, as on a server without a site icon
 * (before the first request). Not the default: with this server's icon
 * answered 404 (no-store), test_back_to_a_page_in_the_back_forward_cache's
 * page did not come back from the cache (a page from a server whose icon is
 * 404 but not no-store does).
 */
void httpd_no_icon(httpd *h);
int httpd_port(const httpd *h);
/** "http://127.0.0.1:<port>" + path, into buf. */
const char *httpd_url(const httpd *h, const char *path, char *buf, size_t len);
size_t httpd_requests(const httpd *h);
/** How many of the last 512 requests had a path (with its query) starting with prefix. */
size_t httpd_count(httpd *h, const char *prefix);
void httpd_stop(httpd *h);

/** Every descendant of root (children, grandchildren, ...); returns the count. */
int procs_descendants(pid_t root, pid_t *out, int max);
/** 1 when pid exists and is not a zombie. */
int procs_running(pid_t pid);
/** Proportional set size of pid in KiB, or -1. */
long procs_pss_kib(pid_t pid);
/** Number of running (non-zombie) processes whose command line contains needle. */
int procs_count_cmdline(const char *needle);
/** 1 when pid's command line (its arguments joined) contains needle. */
int procs_cmdline_has(pid_t pid, const char *needle);
/** The Chromium browser processes (not renderers or helpers) below root; the count. */
int procs_browsers(pid_t root, pid_t *out, int max);
/**
 * The variable name in the environment pid was started with (what execve
 * gave it, not later changes): 1 and its value in out, 0 when it is not set,
 * -1 when pid cannot be read.
 */
int procs_getenv(pid_t pid, const char *name, char *out, size_t len);

/** A TCP port on 127.0.0.1 that was free a moment ago (redis.c), or -1. */
int support_free_port(void);
/** 1 when 127.0.0.1:port can be bound now (redis.c). */
int support_port_free(int port);
/**
 * A base port with the n ports after it free on 127.0.0.1 (and each port +
 * also, when also > 0), all below the kernel's ephemeral range: an outgoing
 * connection cannot take one of them between this check and the server's
 * bind, as it can a port support_free_port found (redis.c). -1 if none.
 */
int support_free_range(int n, int also);

/* ---- whole files (file.c) ---- */

/**
 * The whole file at path, NUL-terminated (its length without the NUL into
 * *len when len is not NULL); the caller frees it. NULL when it cannot be
 * opened.
 */
char *support_slurp(const char *path, size_t *len);
/** The same from an open stream, read from its start; closes f. */
char *support_slurp_stream(FILE *f, size_t *len);
/**
 * The last len - 1 bytes of the file at path into buf, NUL-terminated; the
 * text from its first whole line when the file was longer. NULL (buf "")
 * when it cannot be opened.
 */
const char *support_file_tail(const char *path, char *buf, size_t len);

/* ---- a private redis-server (redis.c) ---- */

typedef struct redissrv redissrv;

/**
 * Starts redis-server on 127.0.0.1 at a free port with its files in a fresh
 * directory under /tmp (append-only file on, so a stop and start keeps the
 * data), with requirepass when password is not NULL, and waits until it
 * answers. NULL when it did not start.
 */
redissrv *redissrv_start(const char *password);
int redissrv_port(const redissrv *r);
/** "redis://[:password@]127.0.0.1:<port>" */
const char *redissrv_url(const redissrv *r);
/** Stops the server (SIGTERM, by PID) and waits for it; the data stays. */
void redissrv_stop(redissrv *r);
/** Starts it again on the same port and directory; 0 once it answers. */
int redissrv_restart(redissrv *r);
/** Freezes (SIGSTOP) or thaws (SIGCONT) the server: a Redis that stops answering. */
void redissrv_freeze(redissrv *r, int frozen);
/** Stops it and removes its directory. */
void redissrv_free(redissrv *r);
/** A direct hiredis connection (authenticated), or NULL. Test code frees it. */
struct redisContext *redissrv_connect(const redissrv *r);
/** Waits (up to 10 s) until master reports one replica online: 0, or -1. */
int redissrv_replica_online(const redissrv *master);

/* ---- a private Redis Cluster (cluster.c) ---- */

typedef struct rediscluster rediscluster;

/**
 * Starts masters * (1 + replicas) redis-server processes with cluster-enabled
 * (node timeout 1 s, so a failover takes a few seconds) on free loopback
 * ports under a fresh directory, joins them with `redis-cli --cluster
 * create` and waits until every node says cluster_state:ok and every replica
 * is in sync. masters >= 3. NULL when it did not come up.
 */
rediscluster *rediscluster_start(int masters, int replicas);
/** "redis+cluster://127.0.0.1:<port>,..." naming the first masters as seeds. */
const char *rediscluster_url(const rediscluster *c);
int rediscluster_nodes(const rediscluster *c);
int rediscluster_port(const rediscluster *c, int i);
int rediscluster_node_of_port(const rediscluster *c, int port);
/** The node that serves slot now (asked of a live node), or -1. */
int rediscluster_master_of(const rediscluster *c, int slot);
/** Node i's cluster id into out. 0 or -1. */
int rediscluster_node_id(const rediscluster *c, int i, char *out, size_t len);
/** 0 once every live node says cluster_state:ok, -1 after timeout_ms. */
int rediscluster_wait_ok(const rediscluster *c, int timeout_ms);
/** SIGKILL of node i, by PID (it stays dead). */
void rediscluster_kill(rediscluster *c, int i);
/** Stops every node (SIGTERM, by PID) and removes the directory. */
void rediscluster_free(rediscluster *c);
/** A direct hiredis connection to node i (no redirections followed), or NULL. */
struct redisContext *rediscluster_connect(const rediscluster *c, int i);

/* ---- a private Redis Sentinel setup (cluster.c) ---- */

typedef struct redissentinel redissentinel;

/**
 * Starts a master (node 0), its replica (1) and three sentinels (2, 3, 4;
 * redis-server --sentinel, quorum 2, down after 1 s) on free loopback
 * ports, and waits until the replica is in sync and every sentinel knows the
 * others and the replica. NULL when it did not come up.
 */
redissentinel *redissentinel_start(void);
/** "redis+sentinel://127.0.0.1:<s1>,...,/mymaster" */
const char *redissentinel_url(const redissentinel *s);
int redissentinel_port(const redissentinel *s, int i);
/** SIGKILL of process i, by PID. */
void redissentinel_kill(redissentinel *s, int i);
/** Stops every process (SIGTERM, by PID) and removes the directory. */
void redissentinel_free(redissentinel *s);

#endif
