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

/* observe's find: snippets under their path, case and script folded, regexes guarded. */
static const char find_page[] = "- document \"Shop\"\n"
                                "  - main\n"
                                "    - heading \"Cart\" [level=1]\n"
                                "    - list\n"
                                "      - listitem\n"
                                "        - checkbox \"Done\" [ref=@a]\n"
                                "        - text: Buy milk\n"
                                "      - listitem\n"
                                "        - checkbox \"Done\" [ref=@b]\n"
                                "        - text: Walk the dog\n"
                                "      - listitem\n"
                                "        - checkbox \"Done\" [ref=@c]\n"
                                "        - text: Feed the CAT\n"
                                "    - paragraph: Total 42.00 EUR\n"
                                "  - contentinfo\n"
                                "    - text: Straße 5, Привет\n";

static char *find_in(const char *outline, const char *pattern, int regex, int context,
                     size_t *n)
{
    reg_find *f = NULL;
    char err[256] = "";
    assert_int_equal(reg_find_new(pattern, regex, &f, err, sizeof err), 0);
    char *t = NULL;
    assert_int_equal(reg_find_lines(f, outline, context, &t, n, err, sizeof err), 0);
    reg_find_free(f);
    assert_non_null(t);
    return t;
}

static int find_refused(const char *pattern, int regex, char *err, size_t errlen)
{
    reg_find *f = NULL;
    int rc = reg_find_new(pattern, regex, &f, err, errlen);
    assert_null(f);
    return rc;
}

static void test_find_in_outline(void **state)
{
    (void)state;
    size_t n = 0;
    char *t = find_in(find_page, "MILK", 0, 1, &n);
    assert_int_equal(n, 1);
    assert_string_equal(t, "- document \"Shop\"\n"
                           "  - main\n"
                           "    ...\n"
                           "    - list\n"
                           "      - listitem\n"
                           "        - checkbox \"Done\" [ref=@a]\n"
                           "        - text: Buy milk\n"
                           "      - listitem\n");
    free(t);
    /* two matches far apart: two snippets, each under its own path */
    t = find_in(find_page, "^ *- text: (Buy|Feed)", 1, 0, &n);
    assert_int_equal(n, 2);
    assert_string_equal(t, "- document \"Shop\"\n"
                           "  - main\n"
                           "    ...\n"
                           "    - list\n"
                           "      - listitem\n"
                           "        ...\n"
                           "        - text: Buy milk\n"
                           "\n"
                           "- document \"Shop\"\n"
                           "  - main\n"
                           "    ...\n"
                           "    - list\n"
                           "      ...\n"
                           "      - listitem\n"
                           "        ...\n"
                           "        - text: Feed the CAT\n");
    free(t);
    /* neighbours' windows join into one snippet */
    t = find_in(find_page, "checkbox", 0, 1, &n);
    assert_int_equal(n, 3);
    assert_null(strstr(t, "\n\n"));
    assert_non_null(strstr(t, "[ref=@a]") && strstr(t, "[ref=@c]") ? t : NULL);
    free(t);
    /* case folds for other scripts too; JavaScript's \d and /re/i */
    t = find_in(find_page, "STRAẞE 5, ПРИВЕТ", 0, 0, &n);
    assert_int_equal(n, 1);
    assert_string_equal(t,
                        "- document \"Shop\"\n  ...\n  - contentinfo\n    - text: Straße 5, Привет\n");
    free(t);
    t = find_in(find_page, "/total \\d+\\.\\d{2} eur/i", 1, 0, &n);
    assert_int_equal(n, 1);
    assert_non_null(strstr(t, "- paragraph: Total 42.00 EUR\n"));
    free(t);
    t = find_in(find_page, "total [\\d.]+ EUR", 1, 0, &n);
    assert_int_equal(n, 0); /* case matters without /i */
    assert_string_equal(t, "");
    free(t);
    t = find_in(find_page, "no such words", 0, 3, &n);
    assert_int_equal(n, 0);
    assert_string_equal(t, "");
    free(t);

    /* refusals */
    char err[256];
    assert_int_equal(find_refused("", 0, err, sizeof err), RG_EBADREQ);
    char big[1002];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(find_refused(big, 0, err, sizeof err), RG_EBADREQ);
    assert_int_equal(find_refused("(a)\\1", 1, err, sizeof err), RG_EBADREQ);
    assert_non_null(strstr(err, "back-references"));
    assert_int_equal(find_refused("((a{100}){100}){100}", 1, err, sizeof err), RG_EBADREQ);
    assert_non_null(strstr(err, "repetition"));
    assert_int_equal(find_refused("x{99999}", 1, err, sizeof err), RG_EBADREQ);
    /* quantifiers on quantifiers: glibc copies x for each '+' of x+++... and
       takes minutes to compile a few of them (both found by fuzz_find) */
    assert_int_equal(find_refused("x+++++++++++++++++++++++++++++++++++++++++", 1, err, sizeof err),
                     RG_EBADREQ);
    assert_int_equal(find_refused(":+^2+?++*++++- tex", 1, err, sizeof err), RG_EBADREQ);
    assert_non_null(strstr(err, "quantifier right after another"));
    assert_int_equal(find_refused("a*{2}", 1, err, sizeof err), RG_EBADREQ);
    /* but JavaScript's lazy quantifiers are taken (whether a line matches is the same),
       and POSIX classes in brackets */
    t = find_in(find_page, "Buy.+?milk|Walk.*?dog|Feed the CA??T", 1, 0, &n);
    assert_int_equal(n, 3);
    free(t);
    t = find_in(find_page, "[[:alpha:]]+ [\\d]{2}\\.\\d+", 1, 0, &n);
    assert_int_equal(n, 1);
    free(t);
    assert_int_equal(find_refused("[unclosed", 1, err, sizeof err), RG_EBADREQ);
    assert_non_null(strstr(err, "not a valid regular expression"));
    /* counts that stay small are fine */
    t = find_in(find_page, "(Do(ne){1,2}){2}|dog{1,3}", 1, 0, &n);
    assert_int_equal(n, 1);
    free(t);
    /* JavaScript's groups that capture nothing; lookarounds are refused */
    t = find_in(find_page, "(?:Buy|Walk) (?:milk|the dog)$", 1, 0, &n);
    assert_int_equal(n, 2);
    free(t);
    assert_int_equal(find_refused("a(?=b)", 1, err, sizeof err), RG_EBADREQ);

    /* a page where the word is everywhere: 100 snippets, and a line for the rest */
    rg_buf b;
    rg_buf_init(&b);
    rg_buf_puts(&b, "- document\n");
    for (int i = 0; i < 150; i++)
        rg_buf_printf(&b, "  - text: hit %d\n  - separator\n", i);
    t = find_in(b.data, "hit", 0, 0, &n);
    assert_int_equal(n, 150);
    assert_non_null(strstr(t, "hit 99\n"));
    assert_null(strstr(t, "hit 100\n"));
    assert_non_null(strstr(t, "... 50 more snippets not shown"));
    free(t);
    rg_buf_destroy(&b);

    /* a regex glibc is slow on, over a long outline: refused after its budget, not hours later */
    rg_buf_init(&b);
    for (int i = 0; i < 20000; i++)
        rg_buf_printf(&b, "      - listitem \"item %d aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"\n", i);
    reg_find *f = NULL;
    assert_int_equal(reg_find_new("(.*a){200}b", 1, &f, err, sizeof err), 0);
    t = NULL;
    assert_int_equal(reg_find_lines(f, b.data, 3, &t, &n, err, sizeof err), RG_EBADREQ);
    assert_null(t);
    assert_non_null(strstr(err, "simplify it"));
    reg_find_free(f);
    rg_buf_destroy(&b);
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
        cmocka_unit_test(test_find_in_outline),
    };
    return cmocka_run_group_tests_name("registry", tests, NULL, NULL);
}
