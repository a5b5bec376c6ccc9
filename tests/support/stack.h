/*
 * stack.h - the whole of refgate for a test or a benchmark: a private
 * redis-server, N refgate-server workers and nginx on free loopback ports,
 * started and stopped by the caller (stack.c). Test code only.
 */
#ifndef RG_TEST_STACK_H
#define RG_TEST_STACK_H

#include <stddef.h>
#include <sys/types.h>

#include "tenant/tenant.h"

typedef struct stack stack;

/**
 * Starts a private redis-server, `workers` refgate-server processes (from
 * build/, run from the repository root) with the environment entries in env
 * (NULL-terminated "NAME=value" list, may be NULL) added, and nginx with the
 * configuration of scripts/nginx-conf.sh, all on free loopback ports under
 * a fresh directory. Creates tenant "acme" (and "other") with keys. Waits
 * until /healthz answers 200 through nginx. NULL on failure (logs say why).
 */
stack *stack_start(int workers, const char *const *env);
/** The same on a Redis the caller runs (a cluster's redis+cluster:// URL): stack_redis is NULL. */
stack *stack_start_on(int workers, const char *const *env, const char *redis_url);
void stack_stop(stack *s);
/** The refgate-server built with this test binary (its build's), or REFGATE_SERVER_BIN. */
const char *stack_server_bin(void);
int stack_port(const stack *s);                   /* nginx */
const char *stack_key(const stack *s, int other); /* the API key of acme (0) or other (1) */
const char *stack_redis_url(const stack *s);
/** A client of the stack's Redis (rg_redis_free it), or NULL. */
struct rg_redis *stack_redis_client(const stack *s);
pid_t stack_worker_pid(const stack *s, int i); /* worker i, from 1 */
/** Sends sig to worker i and waits for it to exit; its exit status, or -1. */
int stack_kill_worker(stack *s, int i, int sig);
/** Starts worker i again (after a kill); 0 once it answers /healthz itself. */
int stack_restart_worker(stack *s, int i);
/** The FastCGI port of worker i (nginx's upstream for it). */
int stack_fcgi_port(const stack *s, int i);
/** The WebSocket port of worker i (nginx proxies /v1/sessions/{sid}/ws too). */
int stack_ws_port(const stack *s, int i);
const char *stack_dir(const stack *s);
/** The stack's redis-server: stop, restart or freeze it with redissrv_*. */
struct redissrv *stack_redis(stack *s);
/**
 * Starts worker n+1 (n the workers so far), adds it to nginx's upstreams
 * (the configuration rendered again) and reloads nginx by its PID, waiting
 * until the old nginx worker processes are gone. Its number, or -1.
 */
int stack_add_worker(stack *s);
/**
 * Takes worker i out of nginx's configuration (rendered again, nginx
 * reloaded as above), then stops it with SIGTERM (it parks its sessions).
 * 0 or -1.
 */
int stack_remove_worker(stack *s, int i);
/** nginx's master process (SIGHUP reloads its configuration). */
pid_t stack_nginx_pid(const stack *s);
/**
 * A sample's value in worker i's /metrics (asked over FastCGI: nginx has no
 * /metrics of all workers), e.g. "refgate_view_frames_total{result=\"sent\"}";
 * -1 when the worker did not answer or has no such sample.
 */
double stack_metric(const stack *s, int i, const char *name);
/** A process's resident memory (VmRSS) in kB, or -1. */
long proc_rss_kb(pid_t pid);

/**
 * Creates tenant t (its id is its name) in the Redis at redis_url, with one
 * API key into key (key_len >= TENANT_KEY_SIZE). 0, or < 0 with a sentence
 * in err.
 */
int stack_make_tenant(const char *redis_url, const tenant *t, char *key, size_t key_len, char *err,
                      size_t errlen);

#endif
