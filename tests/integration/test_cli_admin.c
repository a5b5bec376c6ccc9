/*
 * test_cli_admin.c - the real refgate-cli binary (next to this test's
 * directory: ../refgate-cli) run with fork/exec against a private
 * redis-server: tenant create prints a key and nothing else, the key
 * authenticates, a duplicate is refused, show carries no key material, keys
 * are made and revoked, update, list and delete work, usage errors exit 2,
 * and an unreachable Redis is a clear failure. Each test starts from an
 * empty database; every run of the binary is bounded in time.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tenant/tenant.h"
#include "tests/support/fixture.h"

#define RUN_LIMIT_MS 30000

static fx_redis db;
static char cli_path[PATH_MAX];

struct run {
    int status; /* exit status, or -1 when it did not exit normally */
    char *out;  /* stdout, NUL-terminated */
    char *err;  /* stderr */
};

static void run_free(struct run *r)
{
    free(r->out);
    free(r->err);
}

/* Runs refgate-cli with the NULL-terminated words; env_extra is one
   "NAME=value" to set in the child (or NULL). */
static struct run run_cli_env(const char *env_extra, const char *first, ...)
{
    const char *argv[40] = {"refgate-cli"};
    int n = 1;
    va_list ap;
    va_start(ap, first);
    for (const char *w = first; w && n < 39; w = va_arg(ap, const char *))
        argv[n++] = w;
    va_end(ap);
    argv[n] = NULL;
    FILE *out = tmpfile(), *err = tmpfile();
    assert_non_null(out);
    assert_non_null(err);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fileno(out), 1);
        dup2(fileno(err), 2);
        unsetenv("REFGATE_REDIS_URL");
        unsetenv("REFGATE_KEY");
        unsetenv("REFGATE_SESSION");
        unsetenv("REFGATE_URL");
        if (env_extra)
            putenv((char *)env_extra);
        execv(cli_path, (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    int64_t end = rg_now_ms() + RUN_LIMIT_MS;
    while (waitpid(pid, &st, WNOHANG) == 0) {
        if (rg_now_ms() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            fail_msg("refgate-cli %s did not finish within %d ms", argv[1], RUN_LIMIT_MS);
        }
        rg_sleep_ms(5);
    }
    struct run r = {WIFEXITED(st) ? WEXITSTATUS(st) : -1, support_slurp_stream(out, NULL),
                    support_slurp_stream(err, NULL)};
    return r;
}

#define RUN(...) run_cli_env(NULL, __VA_ARGS__, (const char *)NULL)
#define ADMIN(...) RUN("--redis", redissrv_url(db.srv), "admin", __VA_ARGS__)

static int flush_db(void **state)
{
    (void)state;
    assert_int_equal(fx_redis_flush(&db), 0);
    return 0;
}

/* stdout must be exactly one line holding an API key; returns it (caller frees). */
static char *one_key(const struct run *r)
{
    if (r->status != 0)
        fail_msg("exit %d, stderr: %s", r->status, r->err);
    size_t n = strlen(r->out);
    assert_int_equal(n, TENANT_KEY_LEN + 1);
    assert_int_equal(r->out[n - 1], '\n');
    assert_memory_equal(r->out, "rgk_", 4);
    for (size_t i = 4; i < TENANT_KEY_LEN; i++)
        assert_non_null(
            strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", r->out[i]));
    return strndup(r->out, TENANT_KEY_LEN);
}

static int authenticate(const char *key, char tid[TENANT_NAME_MAX + 1])
{
    tenant_cache *c = tenant_cache_new(db.conn, 0, 4); /* nothing cached: Redis decides */
    tenant t;
    int rc = tenant_authenticate(c, key, &t);
    if (rc == 0 && tid)
        rg_strlcpy(tid, t.id, TENANT_NAME_MAX + 1);
    tenant_destroy(&t);
    tenant_cache_free(c);
    return rc;
}

static cJSON *show(const char *name)
{
    struct run r = ADMIN("tenant", "show", name);
    if (r.status != 0)
        fail_msg("show %s: exit %d, %s", name, r.status, r.err);
    cJSON *v = cJSON_Parse(r.out);
    assert_non_null(v);
    run_free(&r);
    return v;
}

static void test_create_prints_only_a_key(void **state)
{
    (void)state;
    struct run r = ADMIN("tenant", "create", "acme");
    char *key = one_key(&r);
    assert_string_equal(r.err, ""); /* quiet on success */
    char tid[TENANT_NAME_MAX + 1];
    assert_int_equal(authenticate(key, tid), 0);
    assert_string_equal(tid, "acme");
    run_free(&r);

    /* A second tenant with options; --json gives the key with its tenant. */
    r = ADMIN("tenant", "create", "beta", "--max-sessions", "3", "--max-concurrent", "2", "--rate",
              "1.5", "--allow-private", "--allow-eval", "--allow-downloads", "--allow-host",
              "*.example.com", "--deny-host", "10.0.0.0/8", "--user-agent", "Bot/1.0 (x)",
              "--locale", "fr-FR", "--json");
    assert_int_equal(r.status, 0);
    cJSON *j = cJSON_Parse(r.out);
    assert_string_equal(cJSON_GetObjectItem(j, "tenant")->valuestring, "beta");
    assert_int_equal(authenticate(cJSON_GetObjectItem(j, "key")->valuestring, tid), 0);
    assert_string_equal(tid, "beta");
    cJSON_Delete(j);
    run_free(&r);

    tenant t;
    assert_int_equal(tenant_get(db.conn, "beta", &t), 0);
    assert_int_equal(t.max_sessions, 3);
    assert_int_equal(t.max_concurrent, 2);
    assert_true(t.rate == 1.5);
    assert_int_equal(t.allow_private, 1);
    assert_int_equal(t.allow_eval, 1);
    assert_int_equal(t.allow_downloads, 1);
    assert_int_equal(t.n_allow, 1);
    assert_string_equal(t.allow_hosts[0], "*.example.com");
    assert_string_equal(t.deny_hosts[0], "10.0.0.0/8");
    assert_string_equal(t.user_agent, "Bot/1.0 (x)");
    assert_string_equal(t.locale, "fr-FR");
    tenant_destroy(&t);
    free(key);
}

static void test_duplicate_create_fails(void **state)
{
    (void)state;
    struct run r = ADMIN("tenant", "create", "dup");
    char *key = one_key(&r);
    run_free(&r);
    r = ADMIN("tenant", "create", "dup", "--rate", "9");
    assert_int_equal(r.status, 1);
    assert_string_equal(r.out, "");
    assert_non_null(strstr(r.err, "refgate-cli: conflict: "));
    assert_non_null(strstr(r.err, "dup"));
    run_free(&r);
    assert_int_equal(authenticate(key, NULL), 0); /* the first one is untouched */
    free(key);
}

static void test_show_has_no_key_material(void **state)
{
    (void)state;
    struct run r = ADMIN("tenant", "create", "shown", "--allow-host", "a.example");
    char *key = one_key(&r);
    run_free(&r);
    r = ADMIN("tenant", "show", "shown");
    assert_int_equal(r.status, 0);
    char hash[TENANT_HASH_SIZE];
    tenant_key_hash(key, hash);
    assert_null(strstr(r.out, "rgk_"));
    assert_null(strstr(r.out, key + 4));
    assert_null(strstr(r.out, hash));
    assert_null(strstr(r.out, hash + 48)); /* not even a piece of the digest */
    assert_int_equal(strchr(r.out, '\n') - r.out, (long)strlen(r.out) - 1); /* one line */
    cJSON *v = cJSON_Parse(r.out);
    assert_non_null(v);
    assert_string_equal(cJSON_GetObjectItem(v, "id")->valuestring, "shown");
    assert_int_equal(cJSON_GetObjectItem(v, "keys")->valueint, 1);
    assert_int_equal(cJSON_GetObjectItem(v, "max_sessions")->valueint, 100);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(v, "allow_eval")));
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(v, "allow_downloads")));
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(v, "allow_hosts"), 0)->valuestring,
                        "a.example");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(v, "user_agent")));
    assert_true(cJSON_GetObjectItem(v, "created_ms")->valuedouble > 1.6e12);
    cJSON_Delete(v);
    run_free(&r);

    r = ADMIN("tenant", "show", "nobody");
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "refgate-cli: not_found: "));
    run_free(&r);
    free(key);
}

static void test_keys_create_and_revoke(void **state)
{
    (void)state;
    struct run r = ADMIN("tenant", "create", "keyed");
    char *k1 = one_key(&r);
    run_free(&r);
    r = ADMIN("key", "create", "keyed");
    char *k2 = one_key(&r);
    run_free(&r);
    r = ADMIN("key", "create", "keyed");
    char *k3 = one_key(&r);
    run_free(&r);
    assert_string_not_equal(k1, k2);
    assert_int_equal(authenticate(k2, NULL), 0);
    cJSON *v = show("keyed");
    assert_int_equal(cJSON_GetObjectItem(v, "keys")->valueint, 3);
    cJSON_Delete(v);

    /* Revoke one by the key itself, one by its digest. */
    r = ADMIN("key", "revoke", k2);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "");
    run_free(&r);
    char hash[TENANT_HASH_SIZE];
    tenant_key_hash(k3, hash);
    r = ADMIN("key", "revoke", hash);
    assert_int_equal(r.status, 0);
    run_free(&r);
    assert_int_equal(authenticate(k2, NULL), RG_EUNAUTH);
    assert_int_equal(authenticate(k3, NULL), RG_EUNAUTH);
    assert_int_equal(authenticate(k1, NULL), 0);
    v = show("keyed");
    assert_int_equal(cJSON_GetObjectItem(v, "keys")->valueint, 1);
    cJSON_Delete(v);

    r = ADMIN("key", "revoke", k2);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "not_found"));
    run_free(&r);
    r = ADMIN("key", "create", "ghost");
    assert_int_equal(r.status, 1);
    assert_string_equal(r.out, "");
    assert_non_null(strstr(r.err, "not_found"));
    run_free(&r);
    free(k1);
    free(k2);
    free(k3);
}

static void test_update_list_delete(void **state)
{
    (void)state;
    struct run r = ADMIN("tenant", "create", "zed", "--allow-eval", "--allow-downloads",
                         "--allow-host", "a.com");
    char *key = one_key(&r);
    run_free(&r);
    r = ADMIN("tenant", "create", "alpha");
    free(one_key(&r));
    run_free(&r);

    r = ADMIN("tenant", "update", "zed", "--no-allow-eval", "--no-allow-downloads",
              "--max-concurrent", "4", "--allow-host", "b.com", "--allow-host", "c.com", "--locale",
              "en-GB");
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "");
    run_free(&r);
    cJSON *v = show("zed");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(v, "allow_eval")));
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(v, "allow_downloads")));
    assert_int_equal(cJSON_GetObjectItem(v, "max_concurrent")->valueint, 4);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(v, "allow_hosts")), 2);
    assert_string_equal(cJSON_GetObjectItem(v, "locale")->valuestring, "en-GB");
    assert_int_equal(cJSON_GetObjectItem(v, "max_sessions")->valueint, 100); /* untouched */
    cJSON_Delete(v);
    r = ADMIN("tenant", "update", "nobody", "--rate", "2");
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "not_found"));
    run_free(&r);

    r = ADMIN("tenant", "list");
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "alpha\nzed\n");
    run_free(&r);

    r = ADMIN("tenant", "delete", "zed");
    assert_int_equal(r.status, 0);
    run_free(&r);
    assert_int_equal(authenticate(key, NULL), RG_EUNAUTH);
    r = ADMIN("tenant", "list", "--json");
    assert_string_equal(r.out, "[\"alpha\"]\n");
    run_free(&r);
    r = ADMIN("tenant", "delete", "zed");
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "not_found"));
    run_free(&r);
    free(key);
}

static void expect_usage(struct run r, const char *says)
{
    if (r.status != 2 || !strstr(r.err, says) || !strstr(r.err, "usage: "))
        fail_msg("exit %d, stderr \"%s\" (want 2 and \"%s\")", r.status, r.err, says);
    assert_string_equal(r.out, "");
    run_free(&r);
}

static void test_bad_flags_exit_2(void **state)
{
    (void)state;
    expect_usage(ADMIN("tenant", "create", "x", "--bogus"), "unknown option --bogus");
    expect_usage(ADMIN("tenant", "create", "x", "--max-sessions", "lots"), "integer");
    expect_usage(ADMIN("tenant", "create", "x", "--rate", "-1"), "--rate");
    expect_usage(ADMIN("tenant", "create", "Not Valid"), "not a valid tenant name");
    expect_usage(ADMIN("tenant", "create"), "tenant name");
    expect_usage(ADMIN("tenant", "update", "x"), "nothing to update");
    expect_usage(ADMIN("tenant", "show", "x", "--allow-eval"), "no tenant options");
    expect_usage(ADMIN("frob", "nicate"), "unknown admin command");
    expect_usage(RUN("frobnicate"), "unknown command");
    expect_usage(RUN("--timeout-ms", "soon", "list"), "--timeout-ms");
    expect_usage(RUN("--key", "k", "click", "@a"), "needs a session");
    expect_usage(RUN("-s", "s1", "observe"), "no API key");
    expect_usage(RUN("--url", "https://gw", "--key", "k", "list"), "https");
    expect_usage(RUN(NULL), "no command");
    /* Nothing was written by any of them. */
    char **v;
    size_t n;
    assert_int_equal(tenant_list(db.conn, &v, &n), 0);
    assert_int_equal(n, 0);
}

static void test_help(void **state)
{
    (void)state;
    struct run r = RUN("--help");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "admin tenant create NAME"));
    assert_non_null(strstr(r.out, "screenshot -o FILE"));
    assert_non_null(strstr(r.out, "https is not"));
    assert_string_equal(r.err, "");
    run_free(&r);
}

static void test_redis_from_env_and_unreachable(void **state)
{
    (void)state;
    static char env[160];
    snprintf(env, sizeof env, "REFGATE_REDIS_URL=%s", redissrv_url(db.srv));
    struct run r = run_cli_env(env, "admin", "tenant", "create", "fromenv", (const char *)NULL);
    char *key = one_key(&r);
    run_free(&r);
    assert_int_equal(authenticate(key, NULL), 0);
    free(key);

    /* Nothing listens on port 1: a failure with the reason, not a hang. */
    r = RUN("--redis", "redis://127.0.0.1:1", "admin", "tenant", "list");
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "refgate-cli: unavailable: "));
    assert_non_null(strstr(r.err, "127.0.0.1:1"));
    run_free(&r);
    r = RUN("--redis", "redis://host:notaport", "admin", "tenant", "list");
    assert_int_equal(r.status, 2);
    run_free(&r);
}

/* A session command with nothing listening: exit 1 with the reason. */
static void test_gateway_unreachable(void **state)
{
    (void)state;
    struct run r = RUN("--url", "http://127.0.0.1:1", "--key", "rgk_x", "-s", "s1", "observe",
                       "--timeout-ms", "2000");
    assert_int_equal(r.status, 1);
    assert_string_equal(r.out, "");
    assert_non_null(strstr(r.err, "cannot connect to 127.0.0.1:1"));
    run_free(&r);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 1;
    self[n] = '\0';
    snprintf(cli_path, sizeof cli_path, "%s/../refgate-cli", dirname(self));
    if (access(cli_path, X_OK) != 0) {
        fprintf(stderr, "test_cli_admin: %s is missing (make)\n", cli_path);
        return 1;
    }
    if (fx_redis_start(&db, "test_cli_admin") < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_create_prints_only_a_key, flush_db),
        cmocka_unit_test_setup(test_duplicate_create_fails, flush_db),
        cmocka_unit_test_setup(test_show_has_no_key_material, flush_db),
        cmocka_unit_test_setup(test_keys_create_and_revoke, flush_db),
        cmocka_unit_test_setup(test_update_list_delete, flush_db),
        cmocka_unit_test_setup(test_bad_flags_exit_2, flush_db),
        cmocka_unit_test_setup(test_help, flush_db),
        cmocka_unit_test_setup(test_redis_from_env_and_unreachable, flush_db),
        cmocka_unit_test_setup(test_gateway_unreachable, flush_db),
    };
    int rc = FX_RUN("cli_admin", tests, NULL, NULL);
    fx_redis_stop(&db);
    return rc;
}
