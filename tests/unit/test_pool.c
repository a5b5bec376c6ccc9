/*
 * test_pool.c - the pool's configuration that needs no browser: the sizes
 * REFGATE_MEMORY_MAX takes, the default budget's formula against the
 * machine's /proc/meminfo (and cgroup limit) read here, and what the environment sets (a bad
 * value keeps the default); and the memory sample's reads of a real process
 * tree (two processes this test forks), which walk only what moved.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pool/pool.h"
#include "pool/pool_int.h"
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

/*
 * The tree: a parent that reaps its child once it reads a byte on its
 * control pipe (the child is a zombie from its end until then), says so on
 * the child's answer pipe and then waits for the end of its control pipe, and a child
 * that, for each byte it reads, allocates and touches 8 MiB more and
 * answers with a byte; both exit at the end of their pipes. Returns the
 * parent's PID.
 */
static pid_t tree_start(int *parent_ctl, int *child_ctl, int *child_ack)
{
    int pc[2], cc[2], ca[2];
    assert_int_equal(pipe(pc), 0);
    assert_int_equal(pipe(cc), 0);
    assert_int_equal(pipe(ca), 0);
    pid_t a = fork();
    assert_true(a >= 0);
    if (a == 0) {
        close(pc[1]);
        close(cc[1]);
        close(ca[0]);
        pid_t b = fork();
        if (b == 0) {
            close(pc[0]);
            char c;
            while (read(cc[0], &c, 1) == 1) {
                char *m = malloc(8 << 20);
                if (m)
                    memset(m, 1, 8 << 20); /* resident, kept */
                if (write(ca[1], "k", 1) != 1)
                    _exit(1);
            }
            _exit(0);
        }
        close(cc[0]);
        char go;
        if (read(pc[0], &go, 1) != 1)
            _exit(1);
        if (b > 0)
            waitpid(b, NULL, 0);
        if (write(ca[1], "r", 1) != 1)
            _exit(1);
        close(ca[1]);
        char c;
        while (read(pc[0], &c, 1) == 1)
            ;
        _exit(0);
    }
    close(pc[0]);
    close(cc[0]);
    close(ca[1]);
    *parent_ctl = pc[1];
    *child_ctl = cc[1];
    *child_ack = ca[0];
    return a;
}

static int64_t tree_pss(pid_t root, pool_pss_cache *c, int *procs, int *walked)
{
    int64_t v = pool_tree_pss(root, c, procs, walked);
    printf("  pss %lld kB, %d processes, %d read\n", (long long)(v / 1024), *procs, *walked);
    return v;
}

/*
 * A sample reads smaps_rollup (a walk of the page tables) only for the
 * processes whose resident size moved, while the tree keeps its processes;
 * all of them when one came or went, and every POOL_PSS_FULL_EVERY samples.
 */
static void test_memory_sample_reads_only_what_moved(void **state)
{
    (void)state;
    int pctl, cctl, cack, procs = 0, walked = 0;
    pid_t root = tree_start(&pctl, &cctl, &cack);
    /* the child is there once the tree counts two processes */
    for (int i = 0; i < 200 && procs < 2; i++) {
        pool_tree_pss(root, NULL, &procs, &walked);
        if (procs < 2)
            usleep(10000);
    }
    assert_int_equal(procs, 2);
    assert_int_equal(walked, 2); /* without a cache, every process is read */

    pool_pss_cache *c = calloc(1, sizeof *c);
    assert_non_null(c);
    int64_t first = tree_pss(root, c, &procs, &walked);
    assert_true(first > 0);
    assert_int_equal(procs, 2);
    assert_int_equal(walked, 2);
    /* nothing moved: nothing read, the same figure */
    assert_true(tree_pss(root, c, &procs, &walked) == first);
    assert_int_equal(procs, 2);
    assert_int_equal(walked, 0);

    /* the child grows by 8 MiB: it alone is read, and the figure follows */
    char k;
    assert_int_equal(write(cctl, "g", 1), 1);
    assert_int_equal(read(cack, &k, 1), 1);
    int64_t grown = tree_pss(root, c, &procs, &walked);
    assert_int_equal(walked, 1);
    assert_true(grown - first >= 7 << 20);

    /* unchanged from here: one sample in POOL_PSS_FULL_EVERY reads both */
    int full = 0;
    for (int i = 0; i < POOL_PSS_FULL_EVERY; i++) {
        assert_true(tree_pss(root, c, &procs, &walked) > 0);
        assert_true(walked == 0 || walked == 2);
        full += walked == 2;
    }
    assert_int_equal(full, 1);

    /* the child ends and stays a zombie until its parent reaps it: it
       holds nothing, and the parent alone is not read again at every
       sample */
    close(cctl);
    for (int i = 0; i < 200 && procs != 1; i++) {
        tree_pss(root, c, &procs, &walked);
        if (procs != 1)
            usleep(10000);
    }
    assert_int_equal(procs, 1);
    /* While the child's memory is torn down, pages it shared with the parent
       become the parent's alone: the parent's PSS rises, and reading it again
       is right. On a slow machine (or under ASan) that takes several samples;
       wait until one sample finds nothing moved (2 s at most). */
    walked = -1;
    for (int i = 0; i < 200 && walked != 0; i++) {
        tree_pss(root, c, &procs, &walked);
        if (walked != 0)
            usleep(10000);
    }
    assert_int_equal(walked, 0);
    int64_t alone = 0;
    int walks = 0;
    for (int i = 0; i < POOL_PSS_FULL_EVERY; i++) {
        alone = tree_pss(root, c, &procs, &walked);
        assert_int_equal(procs, 1);
        walks += walked;
    }
    assert_true(walks <= 1); /* the periodic full sample at most */
    assert_true(alone < grown);
    /* reaped: the parent alone */
    assert_int_equal(write(pctl, "x", 1), 1);
    assert_int_equal(read(cack, &k, 1), 1);
    assert_int_equal(k, 'r');
    assert_true(tree_pss(root, c, &procs, &walked) > 0);
    assert_int_equal(procs, 1);

    close(cack);
    close(pctl);
    assert_int_equal(waitpid(root, NULL, 0), root);
    /* no tree: nothing to read */
    assert_true(pool_tree_pss(root, c, &procs, &walked) < 0);
    assert_int_equal(procs, 0);
    free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_default_budget),
        cmocka_unit_test(test_environment),
        cmocka_unit_test(test_memory_sample_reads_only_what_moved),
    };
    return FX_RUN("pool", tests, NULL, NULL);
}
