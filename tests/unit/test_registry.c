/*
 * test_registry.c - identity, refs, the weighted comparison, target parsing,
 * the memory store's stale cleanup and cap, the outline and its diff.
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

#include "registry/registry.h"
#include "tests/support/store_contract.h"

static reg_identity ident(const char *testid, const char *id, const char *aria, const char *role,
                          const char *name, const char *tag, const char *prole, int sib)
{
    reg_identity i = {(char *)testid, (char *)id,  (char *)aria, (char *)role,
                      (char *)name,   (char *)tag, (char *)prole, sib};
    return i;
}

static void test_normalize(void **state)
{
    (void)state;
    char out[REG_NORM_MAX + 1];
    assert_int_equal(reg_normalize("Submit-Btn!", out), 9);
    assert_string_equal(out, "submitbtn");
    assert_int_equal(reg_normalize("a.b:c[0] Very Long Identifier", out), 12);
    assert_string_equal(out, "abc0verylong");
    assert_int_equal(reg_normalize("\xc3\xa9t\xc3\xa9", out), 1); /* only ASCII a-z0-9 */
    assert_string_equal(out, "t");
    assert_int_equal(reg_normalize("", out), 0);
}

static void test_ref_order_of_signals(void **state)
{
    (void)state;
    char ref[REG_REF_MAX];
    reg_identity a = ident("submit-btn", "send", "Send it", "button", "Send", "button", "form", 0);
    reg_ref_base(&a, ref);
    assert_string_equal(ref, "@submitbtn");
    a.testid = NULL;
    reg_ref_base(&a, ref);
    assert_string_equal(ref, "@send");
    a.id = "---"; /* normalizes to nothing: the next signal */
    reg_ref_base(&a, ref);
    assert_string_equal(ref, "@sendit");
    a.aria_label = NULL;
    a.id = NULL;
    reg_ref_base(&a, ref);
    assert_int_equal(strlen(ref), 8);
    assert_memory_equal(ref, "@e", 2);
    for (int i = 2; i < 8; i++)
        assert_true((ref[i] >= '0' && ref[i] <= '9') || (ref[i] >= 'a' && ref[i] <= 'z'));
}

/* Refs persist in Redis and in clients: the hash must never change. */
static void test_hash_ref_is_pinned(void **state)
{
    (void)state;
    char ref[REG_REF_MAX], again[REG_REF_MAX], other[REG_REF_MAX];
    reg_identity a = ident(NULL, NULL, NULL, "link", "More information...", "a", "paragraph", 0);
    reg_ref_base(&a, ref);
    assert_string_equal(ref, "@ebrsjiv");
    reg_ref_base(&a, again);
    assert_string_equal(ref, again);
    a.sibling_index = 1;
    reg_ref_base(&a, other);
    assert_string_not_equal(ref, other);
    /* Field boundaries matter: moving a character between fields changes the hash. */
    reg_identity b = ident(NULL, NULL, NULL, "lin", "kMore information...", "a", "paragraph", 0);
    reg_ref_base(&b, other);
    assert_string_not_equal(ref, other);
}

static void test_identity_score(void **state)
{
    (void)state;
    reg_identity a = ident(NULL, NULL, NULL, "button", "Save", "button", "form", 2);
    reg_identity b = a;
    assert_true(reg_identity_score(&a, &b) == 1.0);
    b.sibling_index = 3; /* moved within its parent */
    assert_true(reg_identity_score(&a, &b) > 0.85 && reg_identity_score(&a, &b) < 0.86);
    b = ident(NULL, NULL, NULL, "link", "Delete", "a", "form", 2); /* another element */
    assert_true(reg_identity_score(&a, &b) < REG_SAME_SCORE);
    /* A shared test id weighs as much as role and a third of the rest. */
    reg_identity c = ident("save", NULL, NULL, "button", "Save", "button", "form", 2);
    reg_identity d = ident("save", NULL, NULL, "button", "Save changes", "button", "dialog", 0);
    assert_true(reg_identity_score(&c, &d) >= REG_SAME_SCORE);
    d.testid = "cancel";
    assert_true(reg_identity_score(&c, &d) < REG_SAME_SCORE);
}

static void parse_ok(const char *s, int kind, const char *value, const char *name, int sub)
{
    reg_target t;
    char err[128];
    int rc = reg_target_parse(s, strlen(s), &t, err, sizeof err);
    if (rc != 0)
        fail_msg("%s: %s", s, err);
    assert_int_equal(t.kind, kind);
    assert_string_equal(t.value, value);
    if (name)
        assert_string_equal(t.name, name);
    else
        assert_null(t.name);
    assert_int_equal(t.substring, sub);
    reg_target_destroy(&t);
}

static void test_target_grammar(void **state)
{
    (void)state;
    parse_ok("@submitbtn", REG_T_REF, "@submitbtn", NULL, 0);
    parse_ok("@close~2", REG_T_REF, "@close~2", NULL, 0);
    parse_ok("css:#email-field", REG_T_CSS, "#email-field", NULL, 0);
    parse_ok("xpath://form//button[2]", REG_T_XPATH, "//form//button[2]", NULL, 0);
    parse_ok("role:button", REG_T_ROLE, "button", NULL, 0);
    parse_ok("role:button[name=\"Next\"]", REG_T_ROLE, "button", "Next", 0);
    parse_ok("role:button[name~=\"Ne\"]", REG_T_ROLE, "button", "Ne", 1);
    parse_ok("role:link[name=\"say \\\"hi\\\" \\\\ bye\"]", REG_T_ROLE, "link", "say \"hi\" \\ bye",
             0);
    parse_ok("text:Learn more", REG_T_TEXT, "Learn more", NULL, 0);
    parse_ok("text~:Learn", REG_T_TEXT, "Learn", NULL, 1);
    parse_ok("label:Email address", REG_T_LABEL, "Email address", NULL, 0);
    parse_ok("placeholder:Search", REG_T_PLACEHOLDER, "Search", NULL, 0);
    parse_ok("testid:submit-btn", REG_T_TESTID, "submit-btn", NULL, 0);
    parse_ok("alt:Company logo", REG_T_ALT, "Company logo", NULL, 0);
    parse_ok("title:Close", REG_T_TITLE, "Close", NULL, 0);
}

static void parse_bad(const char *s, size_t n, const char *why)
{
    reg_target t;
    char err[256] = "";
    assert_int_equal(reg_target_parse(s, n, &t, err, sizeof err), RG_EBADREQ);
    assert_non_null(strstr(err, why));
    assert_null(t.value);
}

static void test_target_errors(void **state)
{
    (void)state;
    parse_bad("", 0, "empty");
    parse_bad("submit", 6, "unknown target");
    parse_bad("css:", 4, "nothing after");
    parse_bad("@", 1, "a ref is");
    parse_bad("@Submit", 7, "a ref is");
    parse_bad("@abcdefghijklm", 14, "a ref is");
    parse_bad("@close~", 7, "a ref is");
    parse_bad("@close~0", 8, "a ref is");
    parse_bad("@close~2x", 9, "a ref is");
    parse_bad("role:", 5, "nothing after");
    parse_bad("role:[name=\"x\"]", 15, "needs a role");
    parse_bad("role:button[label=\"x\"]", 22, "only [name=");
    parse_bad("role:button[name=\"x\"", 20, "quoted string");
    parse_bad("role:button[name=\"x\"]junk", 25, "quoted string");
    parse_bad("css:a\0b", 7, "NUL");
    char *big = malloc(5000);
    memset(big, 'a', 5000);
    memcpy(big, "css:", 4);
    parse_bad(big, 5000, "longer than");
    free(big);
}

static void test_mem_store_contract(void **state)
{
    (void)state;
    reg_store *s = reg_store_mem_new();
    store_contract(s, "{t:acme:s:1}:p", "{t:acme:s:1}:q");
    store_park_contract(s, "{t:acme:s:1}:parked");
    reg_store_free(s);
}

static void test_outline_format(void **state)
{
    (void)state;
    reg_node nodes[3] = {0};
    nodes[0] = (reg_node){.depth = 0, .role = "heading", .name = "Example Domain", .level = 1,
                          .ref = ""};
    nodes[1] = (reg_node){.depth = 0, .role = "textbox", .name = "Email \"work\"",
                          .states = REG_S_FOCUSED | REG_S_REQUIRED, .ref = "@emailinput"};
    nodes[2] = (reg_node){.depth = 1, .role = "button", .name = "Submit",
                          .states = REG_S_DISABLED, .ref = "@submitbtn"};
    reg_observation o = {.title = "Example Domain", .nodes = nodes, .n_nodes = 3};
    char *t = reg_outline(&o);
    assert_string_equal(t, "- document \"Example Domain\"\n"
                           "  - heading \"Example Domain\" [level=1]\n"
                           "  - textbox \"Email \\\"work\\\"\" (focused, required) [ref=@emailinput]\n"
                           "    - button \"Submit\" (disabled) [ref=@submitbtn]\n");
    free(t);
}

static void test_outline_summarizes_long_dropdowns(void **state)
{
    (void)state;
    reg_node nodes[32] = {0};
    char names[30][16];
    nodes[0] = (reg_node){.depth = 0, .role = "combobox", .name = "Year", .interactive = 1,
                          .ref = "@year"};
    for (int i = 0; i < 30; i++) {
        snprintf(names[i], sizeof names[i], "%d", 1990 + i);
        nodes[1 + i] = (reg_node){.depth = 1, .role = "option", .name = names[i], .ref = "",
                                  .states = i == 20 ? REG_S_SELECTED : 0};
    }
    nodes[31] = (reg_node){.depth = 0, .role = "button", .name = "Go", .interactive = 1,
                           .ref = "@go"};
    reg_observation o = {.title = "T", .nodes = nodes, .n_nodes = 32};
    char *t = reg_outline(&o);
    assert_non_null(strstr(t, "    - option \"1994\"\n"));
    assert_null(strstr(t, "\"1995\""));
    assert_non_null(strstr(t, "    - option \"2010\" (selected)\n")); /* the selected one stays */
    assert_non_null(strstr(t, "    - ... 24 more options\n"));
    assert_non_null(strstr(t, "  - button \"Go\" [ref=@go]\n"));
    free(t);
    /* Ten options or fewer are listed in full. */
    o.n_nodes = 11;
    t = reg_outline(&o);
    assert_non_null(strstr(t, "\"1999\""));
    assert_null(strstr(t, "more options"));
    free(t);
}

static void test_text_diff(void **state)
{
    (void)state;
    char *d = reg_text_diff("a\nb\nc\nb\n", "a\nb\nd\n");
    assert_string_equal(d, "- c\n- b\n+ d\n");
    free(d);
    d = reg_text_diff("same\n", "same\n");
    assert_string_equal(d, "");
    free(d);
    d = reg_text_diff("", "x\n");
    assert_string_equal(d, "+ x\n");
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normalize),
        cmocka_unit_test(test_ref_order_of_signals),
        cmocka_unit_test(test_hash_ref_is_pinned),
        cmocka_unit_test(test_identity_score),
        cmocka_unit_test(test_target_grammar),
        cmocka_unit_test(test_target_errors),
        cmocka_unit_test(test_mem_store_contract),
        cmocka_unit_test(test_outline_format),
        cmocka_unit_test(test_outline_summarizes_long_dropdowns),
        cmocka_unit_test(test_text_diff),
    };
    return cmocka_run_group_tests_name("registry", tests, NULL, NULL);
}
