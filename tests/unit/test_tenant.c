/*
 * test_tenant.c - a tenant's fields as tenant_name_valid and tenant_validate
 * judge them, without Redis: names, limits, rate, the permission flags,
 * host patterns, user agent and locale, each at and just past its bounds.
 * (test_tenant_redis checks that create and update refuse what fails here.)
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tenant/tenant.h"

/* A valid tenant named name: the defaults of a new one. */
static void valid_tenant(tenant *t, const char *name)
{
    tenant_init(t);
    snprintf(t->name, sizeof t->name, "%s", name);
}

/* t is refused with RG_EBADREQ and a message that names what is wrong. */
static void refused(const tenant *t, const char *names)
{
    char err[256] = "";
    assert_int_equal(tenant_validate(t, err, sizeof err), RG_EBADREQ);
    if (!strstr(err, names))
        fail_msg("the message \"%s\" does not name %s", err, names);
}

static void accepted(const tenant *t)
{
    char err[256] = "";
    if (tenant_validate(t, err, sizeof err) != 0)
        fail_msg("refused: %s", err);
}

static void test_names(void **state)
{
    (void)state;
    char longest[TENANT_NAME_MAX + 2];
    memset(longest, 'a', TENANT_NAME_MAX);
    longest[TENANT_NAME_MAX] = '\0';
    assert_true(tenant_name_valid("acme"));
    assert_true(tenant_name_valid("a"));
    assert_true(tenant_name_valid("acme-corp_2"));
    assert_true(tenant_name_valid("0-_"));
    assert_true(tenant_name_valid(longest));
    longest[TENANT_NAME_MAX] = 'a';
    longest[TENANT_NAME_MAX + 1] = '\0';
    assert_false(tenant_name_valid(longest));
    assert_false(tenant_name_valid(""));
    assert_false(tenant_name_valid(NULL));
    static const char *const bad[] = {"Acme", "acme corp", "acme.corp", "acme/x", "acme:1",
                                      "é",    "acme\n",    "rg:x",      "*"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (tenant_name_valid(bad[i]))
            fail_msg("\"%s\" passed as a name", bad[i]);
}

static void test_defaults_are_valid_and_the_name_is_checked(void **state)
{
    (void)state;
    tenant t;
    valid_tenant(&t, "acme");
    accepted(&t);
    assert_int_equal(tenant_validate(&t, NULL, 0), 0);
    snprintf(t.name, sizeof t.name, "Not A Name");
    refused(&t, "tenant name");
    assert_int_equal(tenant_validate(&t, NULL, 0), RG_EBADREQ); /* no message buffer */
    tenant_destroy(&t);
}

static void test_limits_and_rate_at_their_bounds(void **state)
{
    (void)state;
    tenant t;
    valid_tenant(&t, "acme");
    t.max_sessions = 0;
    t.max_concurrent = 0;
    accepted(&t);
    t.max_sessions = TENANT_LIMIT_MAX;
    t.max_concurrent = TENANT_LIMIT_MAX;
    accepted(&t);
    t.max_sessions = TENANT_LIMIT_MAX + 1;
    refused(&t, "max_sessions");
    t.max_sessions = -1;
    refused(&t, "max_sessions");
    t.max_sessions = 1;
    t.max_concurrent = TENANT_LIMIT_MAX + 1;
    refused(&t, "max_concurrent");
    t.max_concurrent = -1;
    refused(&t, "max_concurrent");
    t.max_concurrent = 1;

    t.rate = TENANT_RATE_MAX;
    accepted(&t);
    t.rate = 0.001;
    accepted(&t);
    static const double bad[] = {0, -1, TENANT_RATE_MAX * 1.5, NAN, INFINITY};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        t.rate = bad[i];
        refused(&t, "rate");
    }
    tenant_destroy(&t);
}

static void test_flags_are_zero_or_one(void **state)
{
    (void)state;
    tenant t;
    valid_tenant(&t, "acme");
    t.allow_private = 1;
    t.allow_eval = 1;
    accepted(&t);
    t.allow_private = 2;
    refused(&t, "allow_private");
    t.allow_private = 0;
    t.allow_eval = -1;
    refused(&t, "allow_eval");
    tenant_destroy(&t);
}

static void test_host_patterns(void **state)
{
    (void)state;
    tenant t;
    valid_tenant(&t, "acme");
    static const char *const good[] = {"example.com", "*.example.com", "10.0.0.0/8",
                                       "[::1]",       "localhost",     "A-b_c.EXAMPLE"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        assert_int_equal(tenant_add_host(&t, (int)(i % 2), good[i]), 0);
    accepted(&t);

    char longest[TENANT_HOST_MAX_LEN + 2];
    memset(longest, 'h', sizeof longest - 1);
    longest[TENANT_HOST_MAX_LEN] = '\0';
    assert_int_equal(tenant_add_host(&t, 0, longest), 0);
    accepted(&t);
    tenant_clear_hosts(&t, 0);
    longest[TENANT_HOST_MAX_LEN] = 'h';
    longest[TENANT_HOST_MAX_LEN + 1] = '\0';
    assert_int_equal(tenant_add_host(&t, 0, longest), 0);
    refused(&t, "allowed host");
    tenant_clear_hosts(&t, 0);

    static const char *const bad[] = {"", "exa mple.com", "example.com\n", "http://x?y", "ex@mple"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(tenant_add_host(&t, 1, bad[i]), 0);
        refused(&t, "denied host");
        tenant_clear_hosts(&t, 1);
    }

    for (int i = 0; i < TENANT_HOSTS_MAX; i++)
        assert_int_equal(tenant_add_host(&t, 0, "example.com"), 0);
    accepted(&t);
    assert_int_equal(tenant_add_host(&t, 0, "example.com"), 0);
    refused(&t, "allowed");
    tenant_destroy(&t);
}

static void test_user_agent_and_locale(void **state)
{
    (void)state;
    tenant t;
    valid_tenant(&t, "acme");
    char ua[TENANT_UA_MAX_LEN + 2];
    memset(ua, 'u', sizeof ua - 1);
    ua[TENANT_UA_MAX_LEN] = '\0';
    assert_int_equal(tenant_set_str(&t.user_agent, ua), 0);
    accepted(&t);
    ua[TENANT_UA_MAX_LEN] = 'u';
    ua[TENANT_UA_MAX_LEN + 1] = '\0';
    assert_int_equal(tenant_set_str(&t.user_agent, ua), 0);
    refused(&t, "user agent");
    assert_int_equal(tenant_set_str(&t.user_agent, "Mozilla/5.0 (X11; Linux x86_64) Ünïcode"), 0);
    accepted(&t);
    assert_int_equal(tenant_set_str(&t.user_agent, "bad\tagent"), 0);
    refused(&t, "user agent");
    assert_int_equal(tenant_set_str(&t.user_agent, NULL), 0);

    static const char *const good[] = {"en-US", "de", "zh_Hant_TW", "es-419"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        assert_int_equal(tenant_set_str(&t.locale, good[i]), 0);
        accepted(&t);
    }
    char loc[TENANT_LOCALE_MAX_LEN + 2];
    memset(loc, 'x', sizeof loc - 1);
    loc[TENANT_LOCALE_MAX_LEN + 1] = '\0';
    static const char *const bad[] = {"en US", "en.US", "en-US;q=1", "fr\x7f"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(tenant_set_str(&t.locale, bad[i]), 0);
        refused(&t, "locale");
    }
    assert_int_equal(tenant_set_str(&t.locale, loc), 0);
    refused(&t, "locale");
    tenant_destroy(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_defaults_are_valid_and_the_name_is_checked),
        cmocka_unit_test(test_limits_and_rate_at_their_bounds),
        cmocka_unit_test(test_flags_are_zero_or_one),
        cmocka_unit_test(test_host_patterns),
        cmocka_unit_test(test_user_agent_and_locale),
    };
    return cmocka_run_group_tests_name("tenant", tests, NULL, NULL);
}
