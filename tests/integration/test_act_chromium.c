/*
 * test_act_chromium.c - targets and actions in real Chromium: every target
 * kind, clicks that land exactly once, fill/type/press/select/check, a ref
 * whose element is gone (stale_ref, nothing clicked), self-healing by
 * data-testid, ambiguous and missing locators, disabled and covered
 * elements, shadow roots and iframes, inspect, screenshot, read and wait.
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
#include <unistd.h>

#include "pool/pool.h"
#include "registry/registry.h"
#include "tests/support/expect.h"
#include "tests/support/fixture.h"
#include "tests/support/page.h"
#include "tests/support/support.h"

static fx_browser chrome;

struct fx {
    pool_lease *l;
    reg_store *store;
    reg_page *pg;
    reg_page_handle h;
    reg_observation o;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    char url[256];
    assert_int_equal(pool_acquire(chrome.pool, 20000, &f->l, NULL), 0);
    f->h.conn = pool_lease_conn(f->l);
    f->h.session = pool_lease_session(f->l);
    f->h.world = NULL; /* each call finds refgate's world itself */
    assert_int_equal(page_navigate(f->h.conn, f->h.session,
                                   httpd_url(chrome.pages, "/actions.html", url, sizeof url)),
                     0);
    f->store = reg_store_mem_new();
    assert_int_equal(reg_page_new(f->store, "t:s:p", NULL, &f->pg), 0);
    assert_int_equal(reg_observe(f->pg, f->h, NULL, &f->o), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    reg_observation_free(&f->o);
    reg_page_free(f->pg);
    reg_store_free(f->store);
    pool_release(f->l);
    free(f);
    return 0;
}

static const char *js(struct fx *f, const char *expr)
{
    static char v[256];
    assert_int_equal(page_eval(f->h.conn, f->h.session, expr, v, sizeof v), 0);
    return v;
}

static int act(struct fx *f, reg_action *a, reg_action_result *r)
{
    char err[256];
    if (!a->timeout_ms)
        a->timeout_ms = 2000;
    int rc = reg_act(f->pg, f->h, a, r, err, sizeof err);
    if (getenv("RG_TEST_VERBOSE"))
        printf("op %d %s: %s %s\n", a->op, a->target ? a->target : "-",
               rc ? rg_err_code(rc) : "ok", err);
    return rc;
}

static void click_ok(struct fx *f, const char *target, const char *want_ref)
{
    reg_action a = {.op = REG_OP_CLICK, .target = target};
    reg_action_result r;
    assert_int_equal(act(f, &a, &r), 0);
    assert_true(r.has_point);
    if (want_ref)
        assert_string_equal(r.ref, want_ref);
    reg_action_result_free(&r);
}

/*
 * A page that replaces Array.prototype.push, getBoundingClientRect,
 * querySelectorAll, JSON and MutationObserver, and plants a forged
 * __refgate, in its own world: the observer runs in refgate's isolated world
 * (installed once for the page, as a session does it) and sees none of it.
 * The outline is right, a click by ref lands, and a fill is read back.
 */
static void test_hostile_page_globals(void **state)
{
    (void)state;
    pool_lease *l;
    char url[256];
    assert_int_equal(pool_acquire(chrome.pool, 20000, &l, NULL), 0);
    reg_page_handle h;
    reg_world *world;
    assert_int_equal(page_handle(l, &h, &world), 0);
    assert_int_equal(
        page_navigate(h.conn, h.session,
                      httpd_url(chrome.pages, "/hostile-globals.html", url, sizeof url)),
        0);
    reg_store *store = reg_store_mem_new();
    reg_page *pg;
    assert_int_equal(reg_page_new(store, "t:s:hostile", NULL, &pg), 0);
    reg_observation o;
    assert_int_equal(reg_observe(pg, h, NULL, &o), 0);
    if (getenv("RG_TEST_VERBOSE"))
        printf("%s\n", o.text);
    assert_non_null(strstr(o.text, "- heading \"Orders\" [level=1]\n"));
    assert_non_null(strstr(o.text, "- paragraph: clicks=0\n"));
    assert_non_null(strstr(o.text, "- button \"Place order\" [ref=@go]\n"));
    assert_non_null(strstr(o.text, "- textbox \"Note\" [ref=@note]\n"));
    assert_non_null(strstr(o.text, "- listitem: Second item\n"));
    const reg_node *go = NULL;
    for (size_t i = 0; i < o.n_nodes; i++)
        if (!strcmp(o.nodes[i].ref, "@go"))
            go = &o.nodes[i];
    assert_non_null(go);
    assert_true(go->bounds[0] >= 0 && go->bounds[1] >= 0 && go->bounds[2] > 1); /* real layout */
    reg_observation_free(&o);

    char err[256];
    reg_action a = {.op = REG_OP_CLICK, .target = "@go", .timeout_ms = 2000};
    reg_action_result r;
    assert_int_equal(reg_act(pg, h, &a, &r, err, sizeof err), 0);
    reg_action_result_free(&r);
    reg_action fa = {.op = REG_OP_FILL, .target = "@note", .value = "rush", .timeout_ms = 2000};
    assert_int_equal(reg_act(pg, h, &fa, &r, err, sizeof err), 0);
    reg_action_result_free(&r);
    reg_observe_opts dopts = {.diff = 1};
    assert_int_equal(reg_observe(pg, h, &dopts, &o), 0);
    assert_non_null(strstr(o.text, "+   - paragraph: clicks=1\n"));
    assert_non_null(strstr(o.text, "[value=\"rush\"] [ref=@note]"));
    reg_observation_free(&o);
    char v[64];
    assert_int_equal(page_eval(h.conn, h.session, "document.getElementById('note').value", v,
                               sizeof v),
                     0);
    assert_string_equal(v, "rush");

    reg_page_free(pg);
    reg_store_free(store);
    reg_world_free(world);
    pool_release(l);
}

static void test_click_every_target_kind_once(void **state)
{
    struct fx *f = *state;
    const char *ref = expect_ref(&f->o, "button", "Count");
    click_ok(f, ref, ref);
    assert_string_equal(js(f, "String(window.clicks)"), "1");
    click_ok(f, "css:#counter", ref);
    click_ok(f, "role:button[name=\"Count\"]", ref);
    click_ok(f, "role:button[name~=\"oun\"]", ref);
    click_ok(f, "text:Count", ref);
    click_ok(f, "xpath://button[@id='counter']", ref);
    assert_string_equal(js(f, "String(window.clicks)"), "6"); /* each exactly once */
    assert_string_equal(js(f, "out.textContent"), "clicks=6");
    /* An element far below the fold is scrolled into view first. */
    click_ok(f, expect_ref(&f->o, "button", "Far below"), NULL);
    assert_string_equal(js(f, "String(window.far)"), "1");
}

/* Navigates f's page to the fixture at path and observes it afresh. */
static void load_page(struct fx *f, const char *path)
{
    char url[256];
    httpd_url(chrome.pages, path, url, sizeof url);
    assert_int_equal(page_navigate(f->h.conn, f->h.session, url), 0);
    reg_observation_free(&f->o);
    assert_int_equal(reg_observe(f->pg, f->h, NULL, &f->o), 0);
}

/*
 * type presses a key per character, so a field that listens only for
 * keydown sees what is typed; a character with no key on the keyboard is
 * inserted with input events only; a line break is Enter.
 */
static void test_type_sends_key_events(void **state)
{
    struct fx *f = *state;
    load_page(f, "/keys.html");
    reg_action_result r;
    reg_action t = {.op = REG_OP_TYPE, .target = "label:Search", .text = "Hi 5!"};
    assert_int_equal(act(f, &t, &r), 0);
    reg_action_result_free(&r);
    assert_string_equal(js(f, "s.value"), "Hi 5!");
    assert_string_equal(js(f, "hits.textContent"), "Hi 5!");
    assert_string_equal(js(f, "keylog.slice(0, 5).join('|')"),
                        "keydown H KeyH|keypress H KeyH|beforeinput H|input H|keyup H KeyH");
    assert_string_equal(js(f, "keylog.filter(e => e.startsWith('keydown')).join('|')"),
                        "keydown H KeyH|keydown i KeyI|keydown   Space|keydown 5 Digit5|"
                        "keydown ! Digit1");

    /* No key for it: inserted, with input events and no key events. */
    assert_string_equal(js(f, "keylog.length = 0, 'ok'"), "ok");
    t.text = "\xc3\xa9";
    t.target = NULL; /* into what has focus */
    assert_int_equal(act(f, &t, &r), 0);
    reg_action_result_free(&r);
    assert_string_equal(js(f, "s.value"), "Hi 5!\xc3\xa9");
    assert_string_equal(js(f, "keylog.join('|')"), "beforeinput \xc3\xa9|input \xc3\xa9");

    /* A line break is Enter: the form submits. */
    t.text = "\n";
    assert_int_equal(act(f, &t, &r), 0);
    reg_action_result_free(&r);
    assert_string_equal(js(f, "String(window.submitted)"), "1");
    assert_string_equal(js(f, "keylog.filter(e => e.startsWith('key')).join('|')"),
                        "keydown Enter Enter|keypress Enter Enter|keyup Enter Enter");

    /* Typing is bounded by timeout_ms: a text too long to type in time stops part way. */
    static char lots[20001];
    memset(lots, 'a', sizeof lots - 1);
    t.text = lots;
    t.timeout_ms = 300;
    char err[256];
    assert_int_equal(reg_act(f->pg, f->h, &t, &r, err, sizeof err), RG_ETIMEOUT);
    reg_action_result_free(&r);
    assert_non_null(strstr(err, "characters before timeout_ms ran out"));
    int typed = atoi(js(f, "String(s.value.length - 6)"));
    assert_true(typed > 0 && typed < 20000);
}

/*
 * Typing into a field that holds text adds to its end, as after a click
 * past its last word, and Backspace takes the last character: before, the
 * caret was at the start ("XYHello world"). A field that has the focus
 * keeps its caret, and a field without one (email) takes the text anyway.
 */
static void test_type_adds_to_the_end(void **state)
{
    struct fx *f = *state;
    load_page(f, "/typing-caret.html");
    reg_action_result r;
    static const char *const into[] = {"label:Name", "label:Notes", "label:Message"};
    for (int k = 0; k < 3; k++) {
        reg_action t = {.op = REG_OP_TYPE, .target = into[k], .text = "XY"};
        assert_int_equal(act(f, &t, &r), 0);
        reg_action_result_free(&r);
    }
    assert_string_equal(js(f, "i.value"), "Hello worldXY");
    assert_string_equal(js(f, "JSON.stringify(t.value)"), "\"Line one\\nLine twoXY\"");
    assert_string_equal(js(f, "c.textContent"), "Hello worldXY");
    reg_action p = {.op = REG_OP_PRESS, .target = "label:Code", .key = "Backspace"};
    assert_int_equal(act(f, &p, &r), 0);
    reg_action_result_free(&r);
    assert_string_equal(js(f, "b.value"), "ab");
    /* focused, with the caret put at its start: typing goes there */
    assert_string_equal(js(f, "k.focus(), k.setSelectionRange(0, 0), 'ok'"), "ok");
    reg_action t = {.op = REG_OP_TYPE, .target = "label:Kept", .text = "XY"};
    assert_int_equal(act(f, &t, &r), 0);
    reg_action_result_free(&r);
    assert_string_equal(js(f, "k.value"), "XYabc");
    t.target = "label:Email";
    t.text = "d";
    assert_int_equal(act(f, &t, &r), 0);
    reg_action_result_free(&r);
    assert_string_equal(js(f, "String(m.value.length)"), "6");
}

static void test_fill_type_press_select_check(void **state)
{
    struct fx *f = *state;
    reg_action_result r;
    reg_action a = {.op = REG_OP_FILL, .target = "label:Query", .value = "hello world"};
    assert_int_equal(act(f, &a, &r), 0);
    assert_string_equal(r.ref, "@q");
    reg_action_result_free(&r);
    assert_string_equal(js(f, "q.value"), "hello world");
    assert_string_equal(js(f, "String(window.inputs > 0 && window.changes > 0)"), "true");

    /* A field the page takes away as it gets the focus: nothing is filled, and the answer
       is not_actionable (it may be there again), not bad_request and not a success. */
    js(f, "(function(){var i=document.createElement('input');i.id='fleeting';"
          "i.setAttribute('aria-label','Fleeting');i.addEventListener('focus',function(){"
          "i.remove()});document.body.appendChild(i);return 'ok'})()");
    reg_action gone = {.op = REG_OP_FILL, .target = "css:#fleeting", .value = "lost"};
    char gerr[256];
    gone.timeout_ms = 2000;
    assert_int_equal(reg_act(f->pg, f->h, &gone, &r, gerr, sizeof gerr), RG_ENOTACTIONABLE);
    assert_non_null(strstr(gerr, "no longer in the document"));
    assert_string_equal(js(f, "String(!document.getElementById('fleeting'))"), "true");

    reg_action t = {.op = REG_OP_TYPE, .target = "@q", .text = "!"};
    assert_int_equal(act(f, &t, &r), 0);
    reg_action_result_free(&r);
    assert_string_equal(js(f, "q.value"), "hello world!");

    reg_action p = {.op = REG_OP_PRESS, .target = "@q", .key = "Enter"};
    assert_int_equal(act(f, &p, &r), 0);
    reg_action_result_free(&r);
    assert_string_equal(js(f, "String(window.submitted)"), "1");
    p.key = "Control+a";
    assert_int_equal(act(f, &p, &r), 0);
    reg_action_result_free(&r);
    assert_string_equal(js(f, "String(q.selectionStart === 0 && q.selectionEnd === q.value.length)"),
                        "true");
    p.key = "Hyper+x";
    assert_int_equal(act(f, &p, &r), RG_EBADREQ);

    const char *vals[] = {"Green"};
    reg_action s = {.op = REG_OP_SELECT, .target = "@color", .values = vals, .n_values = 1};
    assert_int_equal(act(f, &s, &r), 0);
    assert_true(cJSON_IsArray(r.value));
    assert_string_equal(cJSON_GetArrayItem(r.value, 0)->valuestring, "g");
    reg_action_result_free(&r);
    assert_string_equal(js(f, "color.value"), "g");

    reg_action c = {.op = REG_OP_CHECK, .target = "@agree"};
    assert_int_equal(act(f, &c, &r), 0);
    assert_int_equal(r.checked, 1);
    reg_action_result_free(&r);
    assert_int_equal(act(f, &c, &r), 0); /* already checked: stays checked */
    reg_action_result_free(&r);
    assert_string_equal(js(f, "String(agree.checked)"), "true");
    c.op = REG_OP_UNCHECK;
    assert_int_equal(act(f, &c, &r), 0);
    assert_int_equal(r.checked, 0);
    reg_action_result_free(&r);
    assert_string_equal(js(f, "String(agree.checked)"), "false");
}

static void test_gone_element_is_stale_and_nothing_is_clicked(void **state)
{
    struct fx *f = *state;
    char victim[REG_REF_MAX];
    snprintf(victim, sizeof victim, "%s", expect_ref(&f->o, "button", "Victim"));
    js(f, "replaceVictim(), 'ok'");
    reg_action a = {.op = REG_OP_CLICK, .target = victim};
    reg_action_result r;
    assert_int_equal(act(f, &a, &r), RG_ESTALE);
    assert_string_equal(rg_err_code(RG_ESTALE), "stale_ref");
    /* The look-alike that took its place was not clicked. */
    assert_string_equal(js(f, "String(window.victim || '')"), "");
    /* A ref nobody was given is stale too. */
    a.target = "@nosuchref";
    assert_int_equal(act(f, &a, &r), RG_ESTALE);
}

static void test_ref_heals_by_testid(void **state)
{
    struct fx *f = *state;
    const char *ref = expect_ref(&f->o, "button", "Heal me");
    assert_string_equal(ref, "@healme");
    js(f, "rerenderHeal(), 'ok'");
    reg_action a = {.op = REG_OP_CLICK, .target = "@healme"};
    reg_action_result r;
    assert_int_equal(act(f, &a, &r), 0);
    assert_true(r.healed);
    assert_string_equal(r.healed_from, "@healme");
    assert_string_equal(r.healed_via, "testid");
    reg_action_result_free(&r);
    assert_string_equal(js(f, "String(window.healed)"), "1");
    /* The heal is remembered: the next use goes straight to the new node. */
    assert_int_equal(act(f, &a, &r), 0);
    assert_false(r.healed);
    reg_action_result_free(&r);
    assert_string_equal(js(f, "String(window.healed)"), "2");
}

/*
 * A ref's element is checked in the action's own page call (its identity
 * compared with the registry's there), and only an exact match acts at
 * once. A node that changed its label is still the ref's by the usual
 * score, and is clicked once; a node that became another control is stale,
 * and nothing is clicked. fill and press report the page's refusals as a
 * call of their own would, and a refused press sends no key; fill waits for
 * a read-only field to become editable.
 */
static void test_ref_checked_in_the_action_call(void **state)
{
    (void)state;
    pool_lease *l;
    char url[256], err[256];
    assert_int_equal(pool_acquire(chrome.pool, 20000, &l, NULL), 0);
    reg_page_handle h;
    reg_world *world;
    assert_int_equal(page_handle(l, &h, &world), 0);
    assert_int_equal(page_navigate(h.conn, h.session,
                                   httpd_url(chrome.pages, "/act-identity.html", url, sizeof url)),
                     0);
    reg_store *store = reg_store_mem_new();
    reg_page *pg;
    assert_int_equal(reg_page_new(store, "t:s:ident", NULL, &pg), 0);
    reg_observation o;
    assert_int_equal(reg_observe(pg, h, NULL, &o), 0);
    char archive[REG_REF_MAX], other[REG_REF_MAX], ro[REG_REF_MAX], off[REG_REF_MAX],
        name[REG_REF_MAX];
    snprintf(archive, sizeof archive, "%s", expect_ref(&o, "button", "Archive"));
    snprintf(other, sizeof other, "%s", expect_ref(&o, "button", "Other"));
    snprintf(ro, sizeof ro, "%s", expect_ref(&o, "textbox", "Locked"));
    snprintf(off, sizeof off, "%s", expect_ref(&o, "textbox", "Off"));
    snprintf(name, sizeof name, "%s", expect_ref(&o, "textbox", "Name"));
    reg_observation_free(&o);
    char v[64];
#define PAGE(expr) (assert_int_equal(page_eval(h.conn, h.session, expr, v, sizeof v), 0), v)

    reg_action a = {.op = REG_OP_CLICK, .target = archive, .timeout_ms = 2000};
    reg_action_result r;
    assert_int_equal(reg_act(pg, h, &a, &r, err, sizeof err), 0);
    assert_string_equal(r.ref, archive);
    reg_action_result_free(&r);
    assert_string_equal(PAGE("String(window.archived)"), "1");

    /* A new label on the same node: still the ref's element, clicked once. */
    PAGE("morph('rename'), 'ok'");
    assert_int_equal(reg_act(pg, h, &a, &r, err, sizeof err), 0);
    assert_string_equal(r.ref, archive);
    assert_false(r.healed);
    reg_action_result_free(&r);
    assert_string_equal(PAGE("String(window.archived)"), "2");

    /* The node became another control: stale, and nothing is clicked. */
    PAGE("morph('other'), 'ok'");
    assert_int_equal(reg_act(pg, h, &a, &r, err, sizeof err), RG_ESTALE);
    reg_action_result_free(&r);
    assert_string_equal(PAGE("String(window.archived)"), "2");
    assert_string_equal(PAGE("String(window.others || 0)"), "0");

    /* fill: the page's refusal, as a call of its own gives it. */
    reg_action f = {.op = REG_OP_FILL, .target = other, .value = "x", .timeout_ms = 2000};
    assert_int_equal(reg_act(pg, h, &f, &r, err, sizeof err), RG_EBADREQ);
    assert_non_null(strstr(err, "not an <input>"));
    reg_action_result_free(&r);
    /* A read-only field is waited for, as Playwright's fill waits for it to
       become editable: not_actionable at the deadline, and filled once the
       page lets it be. */
    f.target = ro;
    f.timeout_ms = 300;
    assert_int_equal(reg_act(pg, h, &f, &r, err, sizeof err), RG_ENOTACTIONABLE);
    assert_non_null(strstr(err, "read-only"));
    reg_action_result_free(&r);
    assert_string_equal(PAGE("document.getElementById('ro').value"), "kept");
    PAGE("setTimeout(function(){document.getElementById('ro').readOnly=false},150),'ok'");
    f.value = "unlocked";
    f.timeout_ms = 3000;
    assert_int_equal(reg_act(pg, h, &f, &r, err, sizeof err), 0);
    reg_action_result_free(&r);
    assert_string_equal(PAGE("document.getElementById('ro').value"), "unlocked");
    f.timeout_ms = 2000;
    f.target = name;
    f.value = "Ada";
    assert_int_equal(reg_act(pg, h, &f, &r, err, sizeof err), 0);
    reg_action_result_free(&r);
    assert_string_equal(PAGE("document.getElementById('name').value"), "Ada");

    /* press: a disabled field is refused and gets no key; an enabled one gets it. */
    reg_action p = {.op = REG_OP_PRESS, .target = off, .key = "Shift+b", .timeout_ms = 300};
    assert_int_equal(reg_act(pg, h, &p, &r, err, sizeof err), RG_ENOTACTIONABLE);
    reg_action_result_free(&r);
    assert_string_equal(PAGE("String(window.keys || 0)"), "0");
    p.target = name;
    p.timeout_ms = 2000;
    assert_int_equal(reg_act(pg, h, &p, &r, err, sizeof err), 0);
    reg_action_result_free(&r);
    assert_string_equal(PAGE("document.getElementById('name').value"), "AdaB");
    /* Shift down, then b: two keydowns, in order, before the reply. */
    assert_string_equal(PAGE("String(window.keys)"), "2");
#undef PAGE

    reg_page_free(pg);
    reg_store_free(store);
    reg_world_free(world);
    pool_release(l);
}

static void test_ambiguous_nth_and_no_match(void **state)
{
    struct fx *f = *state;
    reg_action a = {.op = REG_OP_CLICK, .target = "css:button.same"};
    reg_action_result r;
    assert_int_equal(act(f, &a, &r), RG_EAMBIGUOUS);
    assert_string_equal(js(f, "String(window.same || '')"), "");
    a.has_nth = 1;
    a.nth = -1;
    assert_int_equal(act(f, &a, &r), 0);
    reg_action_result_free(&r);
    assert_string_equal(js(f, "window.same"), "second");
    reg_action m = {.op = REG_OP_CLICK, .target = "text:Nothing like this", .timeout_ms = 300};
    assert_int_equal(act(f, &m, &r), RG_ENOMATCH);
    reg_action bad = {.op = REG_OP_CLICK, .target = "css:button[[["};
    assert_int_equal(act(f, &bad, &r), RG_EBADREQ);
    reg_action unk = {.op = REG_OP_CLICK, .target = "button"};
    assert_int_equal(act(f, &unk, &r), RG_EBADREQ);
}

static void test_disabled_and_covered_are_not_actionable(void **state)
{
    struct fx *f = *state;
    reg_action a = {.op = REG_OP_CLICK, .target = "css:#off", .timeout_ms = 300};
    reg_action_result r;
    char err[256];
    assert_int_equal(reg_act(f->pg, f->h, &a, &r, err, sizeof err), RG_ENOTACTIONABLE);
    assert_non_null(strstr(err, "disabled"));
    a.target = "css:#covered";
    assert_int_equal(reg_act(f->pg, f->h, &a, &r, err, sizeof err), RG_ENOTACTIONABLE);
    assert_non_null(strstr(err, "covered"));
    assert_string_equal(js(f, "String(window.coveredClicks || 0)"), "0");
}

static void test_modal_dialog_and_inert(void **state)
{
    struct fx *f = *state;
    char url[256], err[256];
    assert_int_equal(page_navigate(f->h.conn, f->h.session,
                                   httpd_url(chrome.pages, "/act-modal.html", url, sizeof url)),
                     0);
    reg_action a = {.op = REG_OP_CLICK, .target = "css:#behind", .timeout_ms = 300};
    reg_action_result r;
    /* Behind a modal dialog: covered by it, never clicked. */
    assert_int_equal(reg_act(f->pg, f->h, &a, &r, err, sizeof err), RG_ENOTACTIONABLE);
    assert_non_null(strstr(err, "dialog"));
    a.target = "css:#inertbtn";
    assert_int_equal(reg_act(f->pg, f->h, &a, &r, err, sizeof err), RG_ENOTACTIONABLE);
    a.target = "css:#inside";
    assert_int_equal(reg_act(f->pg, f->h, &a, &r, err, sizeof err), 0);
    reg_action_result_free(&r);

    /* With the default timeout too, the answer names the modal and says
       what to do: no wait for the timeout (act.c's MODAL_WAIT_MS). The
       keyboard's actions and a frame's content are behind it as well. */
    static const char *const behind[] = {"css:#behind", "text:In the frame"};
    for (int k = 0; k < 2; k++) {
        reg_action c = {.op = REG_OP_CLICK, .target = behind[k], .timeout_ms = 5000};
        assert_int_equal(reg_act(f->pg, f->h, &c, &r, err, sizeof err), RG_ENOTACTIONABLE);
        assert_non_null(strstr(err, "behind the modal dialog dialog#dlg"));
        assert_non_null(strstr(err, "press Escape"));
    }
    reg_action fa = {.op = REG_OP_FILL, .target = "css:#field", .value = "x", .timeout_ms = 5000};
    assert_int_equal(reg_act(f->pg, f->h, &fa, &r, err, sizeof err), RG_ENOTACTIONABLE);
    assert_non_null(strstr(err, "behind the modal dialog"));
    assert_string_equal(js(f, "document.getElementById('field').value"), "");
    assert_string_equal(js(f, "String(window.clicksBehind || 0) + String(window.framed || 0)"), "00");

    /* A dialog the page closes a moment after the click began lets it through. */
    js(f, "String(window.closeSoon())");
    a.target = "css:#behind";
    a.timeout_ms = 5000;
    if (reg_act(f->pg, f->h, &a, &r, err, sizeof err) != 0)
        fail_msg("click after the dialog closed: %s", err);
    reg_action_result_free(&r);
    assert_string_equal(js(f, "String(window.clicksBehind)"), "1");

    /* A web component's modal dialog, in its shadow root: the same, and
       what its slot shows from the light DOM is in it, so it clicks. */
    assert_int_equal(page_navigate(f->h.conn, f->h.session,
                                   httpd_url(chrome.pages, "/act-shadow-modal.html", url,
                                             sizeof url)),
                     0);
    a.target = "css:#behind";
    assert_int_equal(reg_act(f->pg, f->h, &a, &r, err, sizeof err), RG_ENOTACTIONABLE);
    assert_non_null(strstr(err, "behind the modal dialog dialog#inner"));
    a.target = "css:#slotted";
    if (reg_act(f->pg, f->h, &a, &r, err, sizeof err) != 0)
        fail_msg("click in the shadow dialog: %s", err);
    reg_action_result_free(&r);
    assert_string_equal(js(f, "String(window.slotted) + String(window.clicksBehind || 0)"), "10");
}

/*
 * drag: an HTML5 drag and drop (draggable cards between columns, with
 * dataTransfer), one to a drop zone that is out of view until the page
 * scrolls, and a drag made of pointer events (a knob that follows the
 * pointer while the button is held); the page logs what it saw. A drop
 * target that matches nothing, or none at all, fails with nothing done.
 */
static void test_drag_and_drop(void **state)
{
    struct fx *f = *state;
    char url[256], err[256];
    assert_int_equal(page_navigate(f->h.conn, f->h.session,
                                   httpd_url(chrome.pages, "/drag.html", url, sizeof url)),
                     0);
    reg_observation o;
    assert_int_equal(reg_observe(f->pg, f->h, NULL, &o), 0);
    assert_non_null(strstr(o.text, "- generic [ref=@c1]: Write the report\n")); /* draggable: a ref */
    /* the empty column is listed: the page named it, and it is where to drop */
    assert_non_null(strstr(o.text, "- region \"Done\"\n"));
    reg_observation_free(&o);
    static const char *const drags[][2] = {
        {"@c1", "role:region[name=\"Done\"]"}, {"@knob", "role:region[name=\"Slot\"]"}, {"@c2", "css:#far"}};
    for (int k = 0; k < 3; k++) {
        reg_action a = {.op = REG_OP_DRAG, .target = drags[k][0], .to = drags[k][1],
                        .timeout_ms = 5000};
        reg_action_result r;
        if (reg_act(f->pg, f->h, &a, &r, err, sizeof err) != 0)
            fail_msg("drag %s to %s: %s", drags[k][0], drags[k][1], err);
        assert_true(r.has_point);
        reg_action_result_free(&r);
    }
    assert_string_equal(js(f, "document.getElementById('log').textContent"),
                        "log: dragstart c1 drop done dragend c1 knob in slot dragstart c2 drop far "
                        "dragend c2");
    assert_string_equal(js(f, "document.getElementById('done').textContent.trim()"),
                        "Write the report");

    reg_action bad = {.op = REG_OP_DRAG, .target = "@c1", .to = "text:No such zone",
                      .timeout_ms = 300};
    reg_action_result r;
    assert_int_equal(reg_act(f->pg, f->h, &bad, &r, err, sizeof err), RG_ENOMATCH);
    assert_non_null(strstr(err, "the drop target (args.to)"));
    bad.to = "css:#hiddenzone"; /* there, but never visible */
    assert_int_equal(reg_act(f->pg, f->h, &bad, &r, err, sizeof err), RG_ENOTACTIONABLE);
    assert_non_null(strstr(err, "the drop target (args.to): the element is not actionable: hidden"));
    bad.to = NULL;
    assert_int_equal(reg_act(f->pg, f->h, &bad, &r, err, sizeof err), RG_EBADREQ);
    assert_non_null(strstr(err, "drag needs args.to"));
    /* nothing was pressed or dragged by the refused ones */
    assert_string_equal(js(f, "document.getElementById('log').textContent"),
                        "log: dragstart c1 drop done dragend c1 knob in slot dragstart c2 drop far "
                        "dragend c2");
}

static void test_moving_element_is_unstable(void **state)
{
    struct fx *f = *state;
    char url[256], err[256];
    assert_int_equal(page_navigate(f->h.conn, f->h.session,
                                   httpd_url(chrome.pages, "/act-moving.html", url, sizeof url)),
                     0);
    reg_action a = {.op = REG_OP_CLICK, .target = "css:#moving", .timeout_ms = 400};
    reg_action_result r;
    assert_int_equal(reg_act(f->pg, f->h, &a, &r, err, sizeof err), RG_ENOTACTIONABLE);
    assert_non_null(strstr(err, "unstable"));
    assert_string_equal(js(f, "String(window.moved || 0)"), "0");
    /* A still element on a page with an animation elsewhere: the slow path. */
    a.target = "css:#still";
    a.timeout_ms = 2000;
    assert_int_equal(reg_act(f->pg, f->h, &a, &r, err, sizeof err), 0);
    reg_action_result_free(&r);
    assert_string_equal(js(f, "String(window.still)"), "1");
}

/*
 * Out of view, on a page with no CSS animation: the element is scrolled to,
 * and its box compared with itself a frame later, after the page's scroll
 * listeners ran. One that inserts a banner above the button moves it: the
 * click waits for the box to hold and lands on the button, not on the
 * banner where the button was.
 */
static void test_scrolled_to_then_checked_a_frame_later(void **state)
{
    struct fx *f = *state;
    char url[256], err[256];
    assert_int_equal(page_navigate(f->h.conn, f->h.session,
                                   httpd_url(chrome.pages, "/act-scrolled.html", url, sizeof url)),
                     0);
    reg_action a = {.op = REG_OP_CLICK, .target = "css:#still", .timeout_ms = 2000};
    reg_action_result r;
    assert_int_equal(reg_act(f->pg, f->h, &a, &r, err, sizeof err), 0);
    reg_action_result_free(&r);
    assert_string_equal(js(f, "String(!!document.getElementById('banner'))"), "true");
    assert_string_equal(
        js(f, "String(window.stillClicked || 0) + ' ' + String(window.offerClicked || 0)"), "1 0");
}

static void test_shadow_and_iframe_click_and_fill(void **state)
{
    struct fx *f = *state;
    click_ok(f, expect_ref(&f->o, "button", "Deep"), "@deep");
    assert_string_equal(js(f, "String(window.deep)"), "1");
    reg_action a = {.op = REG_OP_FILL, .target = "@deepfield", .value = "in shadow"};
    reg_action_result r;
    assert_int_equal(act(f, &a, &r), 0);
    reg_action_result_free(&r);
    assert_string_equal(js(f, "host.shadowRoot.querySelector('input').value"), "in shadow");
    /* A page with a same-origin iframe. */
    char url[256];
    assert_int_equal(page_navigate(f->h.conn, f->h.session,
                                   httpd_url(chrome.pages, "/shadow.html", url, sizeof url)),
                     0);
    for (int i = 0; i < 100; i++) {
        if (!strcmp(js(f, "String(!!inner.contentDocument.querySelector('button'))"), "true"))
            break;
        rg_sleep_ms(50);
    }
    reg_observation_free(&f->o);
    assert_int_equal(reg_observe(f->pg, f->h, NULL, &f->o), 0);
    click_ok(f, "@framebtn", "@framebtn");
    assert_string_equal(js(f, "String(window.frameClicks)"), "1");
    a.target = "@framefield";
    a.value = "in frame";
    assert_int_equal(act(f, &a, &r), 0);
    reg_action_result_free(&r);
    assert_string_equal(js(f, "inner.contentDocument.querySelector('input').value"), "in frame");
}

static void test_inspect_read_screenshot_wait(void **state)
{
    struct fx *f = *state;
    reg_action a = {.op = REG_OP_INSPECT, .target = "css:#out"};
    reg_action_result r;
    assert_int_equal(act(f, &a, &r), 0);
    assert_string_equal(r.ref, "@out"); /* registered on inspect */
    assert_string_equal(cJSON_GetObjectItem(r.value, "tag")->valuestring, "p");
    reg_action_result_free(&r);
    reg_action rd = {.op = REG_OP_READ, .target = "@out"};
    assert_int_equal(act(f, &rd, &r), 0); /* the new ref works */
    assert_string_equal(r.value->valuestring, "clicks=0");
    reg_action_result_free(&r);
    reg_action sh = {.op = REG_OP_SCREENSHOT, .target = "@counter"};
    assert_int_equal(act(f, &sh, &r), 0);
    assert_true(r.data_len > 8);
    assert_memory_equal(r.data, "\x89PNG\r\n\x1a\n", 8);
    assert_true(r.width > 0 && r.height > 0);
    reg_action_result_free(&r);
    reg_action w = {.op = REG_OP_WAIT, .text = "Loaded later", .timeout_ms = 5000};
    assert_int_equal(act(f, &w, &r), 0);
    reg_action_result_free(&r);
    reg_action never = {.op = REG_OP_WAIT, .text = "Never shows", .timeout_ms = 200};
    assert_int_equal(act(f, &never, &r), RG_ETIMEOUT);
    /* a text that goes (a "Loading..." line): state hidden waits until it is gone */
    reg_action went = {.op = REG_OP_WAIT, .text = "Loaded later", .state = "hidden",
                       .timeout_ms = 200};
    assert_int_equal(act(f, &went, &r), RG_ETIMEOUT); /* still there */
    js(f, "setTimeout(() => [...document.querySelectorAll('p')]"
          ".find((p) => p.textContent === 'Loaded later').remove(), 300), 'ok'");
    went.timeout_ms = 5000;
    assert_int_equal(act(f, &went, &r), 0);
    reg_action_result_free(&r);
    /* it answered once the text had gone, not at once */
    assert_string_equal(js(f, "String(document.body.innerText.includes('Loaded later'))"), "false");
    went.state = "enabled";
    assert_int_equal(act(f, &went, &r), RG_EBADREQ);
    /* a url has no state to wait for: said so, not "visible or hidden" */
    reg_action url_gone = {.op = REG_OP_WAIT, .url = "/nowhere", .state = "hidden",
                           .timeout_ms = 200};
    char why[256];
    assert_int_equal(reg_act(f->pg, f->h, &url_gone, &r, why, sizeof why), RG_EBADREQ);
    assert_non_null(strstr(why, "url takes no state"));
    reg_action gone = {.op = REG_OP_WAIT, .target = "css:#off", .state = "hidden",
                       .timeout_ms = 200};
    assert_int_equal(act(f, &gone, &r), RG_ETIMEOUT);
    js(f, "off.remove(), 'ok'");
    gone.state = "detached";
    gone.timeout_ms = 2000;
    assert_int_equal(act(f, &gone, &r), 0);
}

int main(void)
{
    if (fx_browser_start(&chrome, "test_act_chromium", "test-act", "tests/fixtures") < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostile_page_globals),
        cmocka_unit_test_setup_teardown(test_click_every_target_kind_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fill_type_press_select_check, setup, teardown),
        cmocka_unit_test_setup_teardown(test_type_sends_key_events, setup, teardown),
        cmocka_unit_test_setup_teardown(test_type_adds_to_the_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gone_element_is_stale_and_nothing_is_clicked, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_ref_heals_by_testid, setup, teardown),
        cmocka_unit_test(test_ref_checked_in_the_action_call),
        cmocka_unit_test_setup_teardown(test_ambiguous_nth_and_no_match, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disabled_and_covered_are_not_actionable, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_modal_dialog_and_inert, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drag_and_drop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_moving_element_is_unstable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scrolled_to_then_checked_a_frame_later, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shadow_and_iframe_click_and_fill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inspect_read_screenshot_wait, setup, teardown),
    };
    int rc = FX_RUN("act_chromium", tests, NULL, NULL);
    fx_browser_stop(&chrome);
    return rc;
}
