/*
 * test_redis_sentinel.c - refgate on Redis Sentinel: a master, its replica
 * and three sentinels (redis-server --sentinel) on loopback ports, each
 * stopped by its PID. The master is killed with SIGKILL: the client follows
 * the sentinels' +switch-master to the promoted replica before any command
 * fails, the registry's pages and a parked page are all there, and the whole
 * stack restores a session parked before the failover.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "registry/registry.h"
#include "tests/support/expect.h"
#include "tests/support/fixture.h"
#include "tests/support/stack.h"
#include "tests/support/support.h"

static redissentinel *sn;

static reg_entry entry(const char *ref, int64_t seen, int order)
{
    reg_entry e = {0};
    snprintf(e.ref, sizeof e.ref, "%s", ref);
    e.ident.role = (char *)"button";
    e.ident.name = (char *)ref;
    e.ident.tag = (char *)"button";
    e.last_seen_ms = seen;
    e.order = order;
    return e;
}

static rg_redis *client(void)
{
    rg_redis_config cfg;
    rg_redis_config_default(&cfg);
    cfg.url = redissentinel_url(sn);
    rg_redis *r;
    char err[256];
    if (rg_redis_new(&cfg, &r, err, sizeof err) < 0)
        fail_msg("%s", err);
    return r;
}

static void test_url_names_a_master(void **state)
{
    (void)state;
    rg_redis_config cfg;
    rg_redis_config_default(&cfg);
    rg_redis *r;
    char err[256];
    cfg.url = "redis+sentinel://127.0.0.1:1";
    assert_int_equal(rg_redis_new(&cfg, &r, err, sizeof err), RG_EBADREQ);
    assert_non_null(strstr(err, "redis+sentinel://"));
    cfg.url = "redis+sentinel://127.0.0.1:1/";
    assert_int_equal(rg_redis_new(&cfg, &r, err, sizeof err), RG_EBADREQ);
    /* A name no sentinel knows: unavailable, at once. */
    char url[128];
    snprintf(url, sizeof url, "redis+sentinel://127.0.0.1:%d/nosuchmaster",
             redissentinel_port(sn, 2));
    cfg.url = url;
    assert_int_equal(rg_redis_new(&cfg, &r, err, sizeof err), 0);
    assert_null(rg_redis_command(r, "GET x"));
    rg_redis_free(r);
}

static void test_failover_is_followed(void **state)
{
    (void)state;
    rg_redis *conn = client();
    char where[64], want[64];
    redisReply *rep = rg_redis_command(conn, "PING");
    assert_non_null(rep);
    freeReplyObject(rep);
    assert_int_equal(rg_redis_current(conn, where, sizeof where), 0);
    snprintf(want, sizeof want, "127.0.0.1:%d", redissentinel_port(sn, 0));
    assert_string_equal(where, want);

    /* The whole stack, on the sentinels' master. */
    fx_stack f;
    memset(&f, 0, sizeof f);
    f.pages = httpd_start("tests/fixtures");
    assert_non_null(f.pages);
    f.st = stack_start_on(2, NULL, redissentinel_url(sn));
    if (!f.st)
        fail_msg("the stack did not start on %s", redissentinel_url(sn));
    for (int i = 0; i < 2; i++)
        snprintf(f.auth[i], sizeof f.auth[i], "Authorization: Bearer %s\r\n", stack_key(f.st, i));
    char url[256], body[512];
    httpd_url(f.pages, "/actions.html", url, sizeof url);
    snprintf(body, sizeof body, "{\"op\":\"session.create\",\"args\":{\"url\":\"%s\"}}", url);
    int status;
    cJSON *r = expect_post(&f, 0, "/v1/sessions", body, &status);
    if (status != 200)
        fail_msg("create: %d %s", status, cJSON_PrintUnformatted(r));
    char sid[64];
    snprintf(sid, sizeof sid, "%s", reply_str(r, "session"));
    cJSON_Delete(r);
    cJSON_Delete(expect_ok(&f, sid, "{\"op\":\"observe\"}"));
    cJSON_Delete(expect_ok(&f, sid, "{\"op\":\"click\",\"args\":{\"target\":\"@counter\"}}"));
    r = expect_ok(&f, sid, "{\"op\":\"session.park\"}");
    assert_string_equal(reply_str(r, "state"), "parked");
    cJSON_Delete(r);

    /* Registry pages, one of them parked, written through the client. */
    char err[256];
    reg_redis_config sc;
    reg_redis_config_default(&sc);
    sc.conn = conn;
    reg_store *s = reg_store_redis_new(&sc, err, sizeof err);
    assert_non_null(s);
    int64_t now = rg_wall_ms();
    for (int i = 0; i < 20; i++) {
        char page[64];
        snprintf(page, sizeof page, "{t:sen:s:%d}:main", i);
        reg_entry e[2] = {entry("@a", now, 1), entry("@b", now, 2)};
        assert_int_equal(s->ops->commit(s, page, e, 2, now, 3600000, 10, NULL), 0);
    }
    assert_int_equal(s->ops->park(s, "{t:sen:s:0}:main", 3600000), 0);
    /* Everything written has reached the replica (replication is asynchronous). */
    redisContext *c = rg_redis_take(conn);
    assert_non_null(c);
    rep = redisCommand(c, "WAIT 1 5000");
    assert_non_null(rep);
    assert_int_equal(rep->integer, 1);
    freeReplyObject(rep);
    rg_redis_give(conn, c, 0);

    redissentinel_kill(sn, 0);
    /* Without a command, the client learns the new master from +switch-master. */
    snprintf(want, sizeof want, "127.0.0.1:%d", redissentinel_port(sn, 1));
    for (int i = 0; i < 300; i++) {
        rg_redis_current(conn, where, sizeof where);
        if (!strcmp(where, want))
            break;
        usleep(100000);
    }
    assert_string_equal(where, want);
    for (int i = 0; i < 20; i++) {
        char page[64];
        snprintf(page, sizeof page, "{t:sen:s:%d}:main", i);
        reg_entry *v;
        size_t n;
        assert_int_equal(s->ops->load(s, page, &v, &n), 0);
        assert_int_equal(n, 2);
        reg_entries_free(v, n);
        reg_entry e = entry("@c", now, 3);
        assert_int_equal(s->ops->commit(s, page, &e, 1, now, 3600000, 10, NULL), 0);
    }
    reg_store_free(s);

    /* The workers follow too: the session parked before the failover restores. */
    char path[96];
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    for (int i = 0; i < 100; i++) {
        r = expect_post(&f, 0, path, "{\"op\":\"session.info\"}", &status);
        cJSON_Delete(r);
        if (status == 200)
            break;
        usleep(100000);
    }
    assert_int_equal(status, 200);
    r = expect_ok(&f, sid, "{\"op\":\"session.restore\"}");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(
                         cJSON_GetObjectItemCaseSensitive(r, "result"), "refs_lost")
                         ->valueint,
                     0);
    cJSON_Delete(r);
    cJSON_Delete(expect_ok(&f, sid, "{\"op\":\"click\",\"args\":{\"target\":\"@counter\"}}"));
    r = expect_ok(&f, sid, "{\"op\":\"read\",\"args\":{\"target\":\"css:#out\"}}");
    assert_string_equal(reply_str(r, "value"), "clicks=1");
    cJSON_Delete(r);
    stack_stop(f.st);
    httpd_stop(f.pages);
    rg_redis_free(conn);
}

int main(void)
{
    sn = redissentinel_start();
    if (!sn) {
        fprintf(stderr, "test_redis_sentinel: the sentinels did not start\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_names_a_master),
        cmocka_unit_test(test_failover_is_followed),
    };
    int rc = FX_RUN("redis_sentinel", tests, NULL, NULL);
    redissentinel_free(sn);
    return rc;
}
