/* fixture.c - the set-ups test programs share (fixture.h). */
#define _GNU_SOURCE
#include "fixture.h"

#include "registry/registry.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void fx_pool_config(pool_config *cfg, const char *tag, char *run_dir, size_t len)
{
    snprintf(run_dir, len, "/tmp/refgate-%s-%d", tag, (int)getpid());
    pool_config_default(cfg);
    pool_config_from_env(cfg);
    cfg->run_dir = run_dir;
    cfg->browsers = 1;
}

int fx_need_chromium(const char *who)
{
    if (access("/usr/lib/chromium/chromium", X_OK) == 0 || getenv("REFGATE_CHROMIUM"))
        return 0;
    fprintf(stderr, "%s: Chromium is not installed (make deps)\n", who);
    return -1;
}

int fx_browser_start(fx_browser *f, const char *who, const char *tag, const char *docroot)
{
    memset(f, 0, sizeof *f);
    pool_config cfg;
    fx_pool_config(&cfg, tag, f->run_dir, sizeof f->run_dir);
    f->pages = httpd_start(docroot);
    if (!f->pages || pool_new(&cfg, &f->pool) < 0) {
        fprintf(stderr, "%s: cannot start the fixture server or the pool\n", who);
        f->pool = NULL;
        fx_browser_stop(f);
        return -1;
    }
    return 0;
}

void fx_browser_stop(fx_browser *f)
{
    if (f->pool)
        pool_free(f->pool);
    if (f->pages)
        httpd_stop(f->pages);
    if (f->run_dir[0])
        rmdir(f->run_dir);
    memset(f, 0, sizeof *f);
}

int fx_redis_start(fx_redis *f, const char *who)
{
    memset(f, 0, sizeof *f);
    f->srv = redissrv_start(NULL);
    if (!f->srv) {
        fprintf(stderr, "%s: redis-server did not start (make deps)\n", who);
        return -1;
    }
    rg_redis_config cfg;
    rg_redis_config_default(&cfg);
    cfg.url = redissrv_url(f->srv);
    char err[160];
    if (rg_redis_new(&cfg, &f->conn, err, sizeof err) < 0) {
        fprintf(stderr, "%s: %s\n", who, err);
        f->conn = NULL;
        fx_redis_stop(f);
        return -1;
    }
    return 0;
}

int fx_redis_flush(fx_redis *f)
{
    redisContext *c = redissrv_connect(f->srv);
    if (!c)
        return -1;
    redisReply *rep = redisCommand(c, "FLUSHALL");
    int rc = rep ? 0 : -1;
    freeReplyObject(rep);
    redisFree(c);
    return rc;
}

void fx_redis_stop(fx_redis *f)
{
    if (f->conn)
        rg_redis_free(f->conn);
    if (f->srv)
        redissrv_free(f->srv);
    memset(f, 0, sizeof *f);
}

int fx_stack_start(fx_stack *f, const char *who, const char *docroot, int workers,
                   const char *const *env)
{
    memset(f, 0, sizeof *f);
    f->pages = httpd_start(docroot);
    f->st = f->pages ? stack_start(workers, env) : NULL;
    if (!f->st) {
        fprintf(stderr, "%s: cannot start the stack\n", who);
        fx_stack_stop(f);
        return -1;
    }
    for (int i = 0; i < 2; i++)
        snprintf(f->auth[i], sizeof f->auth[i], "Authorization: Bearer %s\r\n",
                 stack_key(f->st, i));
    snprintf(f->base_url, sizeof f->base_url, "http://127.0.0.1:%d", httpd_port(f->pages));
    return 0;
}

void fx_stack_stop(fx_stack *f)
{
    if (f->st)
        stack_stop(f->st);
    if (f->pages)
        httpd_stop(f->pages);
    memset(f, 0, sizeof *f);
}

/* ---- sessions ---- */

int fx_sessions_start(fx_sessions *f, const char *who, const char *tag)
{
    memset(f, 0, sizeof *f);
    snprintf(f->docroot, sizeof f->docroot, "/tmp/refgate-%s-docs-%d", tag, (int)getpid());
    if (mkdir(f->docroot, 0700) < 0) {
        fprintf(stderr, "%s: cannot make %s\n", who, f->docroot);
        return -1;
    }
    if (fx_redis_start(&f->db, who) < 0)
        return -1;
    if (fx_browser_start(&f->chrome, who, tag, f->docroot) < 0) {
        fx_redis_stop(&f->db);
        return -1;
    }
    char err[256];
    reg_redis_config sc;
    reg_redis_config_default(&sc);
    sc.conn = f->db.conn;
    if (!(f->store = reg_store_redis_new(&sc, err, sizeof err))) {
        fprintf(stderr, "%s: the registry's store: %s\n", who, err);
        fx_browser_stop(&f->chrome);
        fx_redis_stop(&f->db);
        return -1;
    }
    return 0;
}

int fx_sessions_page(fx_sessions *f, const char *name, const char *html)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", f->docroot, name);
    FILE *fp = fopen(path, "w");
    if (!fp)
        return -1;
    int ok = fputs(html, fp) >= 0;
    return fclose(fp) == 0 && ok ? 0 : -1;
}

void fx_sessions_stop(fx_sessions *f)
{
    reg_store_free(f->store);
    f->store = NULL;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", f->docroot, f->chrome.run_dir);
    fx_browser_stop(&f->chrome);
    fx_redis_stop(&f->db);
    if (f->docroot[0] && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", f->docroot);
}
