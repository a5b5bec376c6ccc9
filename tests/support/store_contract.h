/*
 * store_contract.h - the registry store contract (registry.h, reg_store_ops)
 * as cmocka checks, run against every store: the memory store in
 * tests/unit/test_registry.c, the Redis store in
 * tests/integration/test_store_redis.c. Test code only; include it from a
 * test file (it defines static functions).
 */
#ifndef RG_STORE_CONTRACT_H
#define RG_STORE_CONTRACT_H

#include <stdio.h>
#include <string.h>

#include "registry/registry.h"

static reg_entry contract_entry(const char *ref, int64_t seen, int order)
{
    reg_entry e = {0};
    snprintf(e.ref, sizeof e.ref, "%s", ref);
    e.ident.role = (char *)"button";
    e.ident.name = (char *)ref;
    e.ident.tag = (char *)"button";
    e.ident.parent_role = (char *)"form";
    e.last_seen_ms = seen;
    e.order = order;
    return e;
}

static int contract_has(reg_entry *v, size_t n, const char *ref)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].ref, ref))
            return 1;
    return 0;
}

static int contract_has_ref(char **refs, size_t n, const char *ref)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(refs[i], ref))
            return 1;
    return 0;
}

/* Upserts, stale cleanup, the cap, deep copies, separate pages, drop. */
static void store_contract(reg_store *s, const char *page, const char *other_page)
{
    reg_entry v[4] = {contract_entry("@a", 1000, 1), contract_entry("@b", 1000, 2),
                      contract_entry("@c", 1000, 3), contract_entry("@d", 1000, 4)};
    static const char *alts[] = {"[data-testid=\"a\"]", "role:button[name=\"@a\"]"};
    v[0].alt = (char **)alts;
    v[0].n_alt = 2;
    v[0].ident.testid = (char *)"a";
    v[0].bounds[2] = 120;
    reg_removed removed;
    assert_int_equal(s->ops->commit(s, page, v, 4, 1000, 60000, 10, &removed), 0);
    assert_int_equal(removed.n, 0);
    reg_entry w[2] = {contract_entry("@b", 50000, 1), contract_entry("@d", 50000, 2)};
    assert_int_equal(s->ops->commit(s, page, w, 2, 50000, 60000, 10, &removed), 0);
    assert_int_equal(removed.n, 0);
    reg_entry *got;
    size_t n;
    assert_int_equal(s->ops->load(s, page, &got, &n), 0);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(got[i].ident.role, "button"); /* a deep copy, every field */
        if (!strcmp(got[i].ref, "@a")) {
            assert_string_equal(got[i].ident.testid, "a");
            assert_int_equal(got[i].n_alt, 2);
            assert_string_equal(got[i].alt[1], "role:button[name=\"@a\"]");
            assert_int_equal(got[i].bounds[2], 120);
            assert_int_equal(got[i].last_seen_ms, 1000);
        }
    }
    reg_entries_free(got, n);
    /* Not seen for more than 60 s: @a and @c go at the next observation. */
    reg_entry x[1] = {contract_entry("@e", 70000, 1)};
    assert_int_equal(s->ops->commit(s, page, x, 1, 70000, 60000, 10, &removed), 0);
    assert_int_equal(removed.n, 2); /* and the commit says which */
    assert_true(contract_has_ref(removed.refs, removed.n, "@a"));
    assert_true(contract_has_ref(removed.refs, removed.n, "@c"));
    reg_removed_free(&removed);
    assert_int_equal(s->ops->load(s, page, &got, &n), 0);
    assert_int_equal(n, 3);
    assert_false(contract_has(got, n, "@a"));
    assert_false(contract_has(got, n, "@c"));
    assert_true(contract_has(got, n, "@b"));
    reg_entries_free(got, n);
    /* Over a cap of 2: the least recently seen go first (@b, @d before @e). */
    assert_int_equal(s->ops->commit(s, page, NULL, 0, 70001, 60000, 2, &removed), 0);
    assert_int_equal(removed.n, 1);
    assert_false(contract_has_ref(removed.refs, removed.n, "@e"));
    reg_removed_free(&removed);
    assert_int_equal(s->ops->load(s, page, &got, &n), 0);
    assert_int_equal(n, 2);
    assert_true(contract_has(got, n, "@e"));
    reg_entries_free(got, n);
    /* A drop removes its ref, however recently seen, and is reported; the
       upserts beside it stay, and the cap then has nothing to evict (a
       store that wrote the drop as an entry would evict the other). */
    const char *kept = "@e"; /* the most recently seen: a cap would keep it */
    assert_int_equal(s->ops->load(s, page, &got, &n), 0);
    assert_int_equal(n, 2);
    char other[REG_REF_MAX];
    snprintf(other, sizeof other, "%s", strcmp(got[0].ref, kept) ? got[0].ref : got[1].ref);
    reg_entries_free(got, n);
    reg_entry y[2] = {contract_entry("@f", 70002, 1), contract_entry(kept, 70002, 2)};
    y[1].drop = 1; /* seen now, as a store that wrote it would keep it */
    assert_int_equal(s->ops->commit(s, page, y, 2, 70002, 60000, 2, &removed), 0);
    assert_int_equal(removed.n, 1);
    assert_string_equal(removed.refs[0], kept);
    reg_removed_free(&removed);
    assert_int_equal(s->ops->load(s, page, &got, &n), 0);
    assert_int_equal(n, 2);
    assert_true(contract_has(got, n, "@f"));
    assert_true(contract_has(got, n, other)); /* older than @e, but not dropped */
    assert_false(contract_has(got, n, kept));
    reg_entries_free(got, n);
    /* Pages are separate; drop forgets one. */
    assert_int_equal(s->ops->load(s, other_page, &got, &n), 0);
    assert_int_equal(n, 0);
    reg_entries_free(got, n);
    assert_int_equal(s->ops->drop(s, page), 0);
    assert_int_equal(s->ops->load(s, page, &got, &n), 0);
    assert_int_equal(n, 0);
    reg_entries_free(got, n);
}

/* Park keeps every entry's ref, identity, last seen and order; the next
   commit after the load goes on from there (cleanup and cap included). */
static void store_park_contract(reg_store *s, const char *page)
{
    reg_entry v[3] = {contract_entry("@a", 1000, 1), contract_entry("@b", 2000, 2),
                      contract_entry("@c", 3000, 3)};
    v[1].ident.testid = (char *)"bee";
    v[1].ident.sibling_index = 4;
    v[2].name_attr = (char *)"cee";
    assert_int_equal(s->ops->commit(s, page, v, 3, 3000, 60000, 10, NULL), 0);
    assert_int_equal(s->ops->park(s, page, 60000), 0);
    reg_entry *got;
    size_t n;
    assert_int_equal(s->ops->load(s, page, &got, &n), 0);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < n; i++) {
        int k = got[i].ref[1] - 'a';
        assert_true(k >= 0 && k < 3);
        assert_int_equal(got[i].last_seen_ms, v[k].last_seen_ms);
        assert_int_equal(got[i].order, v[k].order);
        assert_string_equal(got[i].ident.role, "button");
        assert_string_equal(got[i].ident.name, v[k].ident.name);
        assert_int_equal(got[i].ident.sibling_index, v[k].ident.sibling_index);
        assert_true(reg_identity_score(&got[i].ident, &v[k].ident) == 1.0);
        if (k == 2)
            assert_string_equal(got[i].name_attr, "cee");
    }
    reg_entries_free(got, n);
    /* A later observation: @a goes stale, @d joins. */
    reg_entry d = contract_entry("@d", 62000, 1);
    reg_removed rm = {0};
    assert_int_equal(s->ops->commit(s, page, &d, 1, 62000, 60000, 10, &rm), 0);
    assert_int_equal(rm.n, 1);
    assert_string_equal(rm.refs[0], "@a");
    reg_removed_free(&rm);
    assert_int_equal(s->ops->load(s, page, &got, &n), 0);
    assert_int_equal(n, 3);
    assert_true(contract_has(got, n, "@b") && contract_has(got, n, "@c") &&
                contract_has(got, n, "@d"));
    reg_entries_free(got, n);
    assert_int_equal(s->ops->drop(s, page), 0);
}

#endif