/*
 * test_pool.c - the pool's configuration that needs no browser: the sizes
 * REFGATE_MEMORY_MAX takes, the default budget's formula against the
 * machine's /proc/meminfo (and cgroup limit) read here, and what the environment sets (a bad
 * value keeps the default).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool/pool.h"
#include "tests/support/fixture.h"

static void test_sizes(void **state)
{
    (void)state;
    int64_t v = -1;
    assert_int_equal(pool_parse_size("0", &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(pool_parse_size("1048576", &v), 0);
    assert_int_equal(v, 1048576);
    assert_int_equal(pool_parse_size("512K", &v), 0);
    assert_int_equal(v, 512 << 10);
    assert_int_equal(pool_parse_size("3G", &v), 0);
    assert_int_equal(v, 3LL << 30);
    const char *same[] = {"512M", "512m", "512MB", "512MiB"};
    for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
        v = -1;
        assert_int_equal(pool_parse_size(same[i], &v), 0);
        assert_int_equal(v, 512LL << 20);
    }
    const char *bad[] = {"", "M", "-1", "1.5G", "12X", "12MBs", "12 M", "99999999999999G", "0x10"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        v = 7;
        assert_int_equal(pool_parse_size(bad[i], &v), -1);
        assert_int_equal(v, 7); /* untouched */
    }
    assert_int_equal(pool_parse_size(NULL, &v), -1);
}

/* The machine's memory in bytes, read here, independently of the pool. */
static int64_t mem_total(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    assert_non_null(f);
    char line[256];
    long long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemTotal: %lld kB", &kb) == 1)
            break;
    fclose(f);
    assert_true(kb > 0);
    int64_t total = kb * 1024;
    /* A container's memory limit, when lower (cgroup v2, then v1). */
    const char *const limits[] = {"/sys/fs/cgroup/memory.max",
                                  "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
    for (size_t i = 0; i < 2; i++) {
        long long l = 0;
        FILE *c = fopen(limits[i], "r");
        if (c && fscanf(c, "%lld", &l) == 1 && l > 0 && l < total)
            total = l;
        if (c)
            fclose(c);
    }
    return total;
}

static void test_default_budget(void **state)
{
    (void)state;
    int64_t total = mem_total();
    for (int w = 1; w <= 8; w *= 2) {
        int64_t want = total / 2 / w;
        if (want < POOL_MEMORY_FLOOR)
            want = POOL_MEMORY_FLOOR;
        assert_int_equal(pool_memory_default(w), want);
    }
    assert_int_equal(pool_memory_default(0), pool_memory_default(1));
    /* A worker count no machine divides its memory by still gets the floor. */
    assert_int_equal(pool_memory_default(1 << 20) >= POOL_MEMORY_FLOOR, 1);
}

static void test_environment(void **state)
{
    (void)state;
    pool_config cfg;
    pool_config_default(&cfg);
    assert_int_equal(cfg.memory_max, 0); /* in C, no budget unless asked */
    assert_int_equal(cfg.memory_sample_ms, POOL_MEMORY_SAMPLE_MS);

    unsetenv("REFGATE_MEMORY_MAX");
    setenv("REFGATE_WORKERS", "4", 1);
    pool_config_from_env(&cfg);
    assert_int_equal(cfg.memory_max, pool_memory_default(4));

    setenv("REFGATE_MEMORY_MAX", "2G", 1);
    pool_config_from_env(&cfg);
    assert_int_equal(cfg.memory_max, 2LL << 30);

    setenv("REFGATE_MEMORY_MAX", "0", 1);
    pool_config_from_env(&cfg);
    assert_int_equal(cfg.memory_max, 0);

    setenv("REFGATE_MEMORY_MAX", "lots", 1); /* logged; the default kept */
    pool_config_from_env(&cfg);
    assert_int_equal(cfg.memory_max, pool_memory_default(4));

    setenv("REFGATE_MEMORY_SAMPLE_MS", "250", 1);
    pool_config_from_env(&cfg);
    assert_int_equal(cfg.memory_sample_ms, 250);
    unsetenv("REFGATE_MEMORY_MAX");
    unsetenv("REFGATE_MEMORY_SAMPLE_MS");
    unsetenv("REFGATE_WORKERS");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_default_budget),
        cmocka_unit_test(test_environment),
    };
    return FX_RUN("pool", tests, NULL, NULL);
}
