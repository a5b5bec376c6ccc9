/*
 * test_tabs.c - a session's tabs as a user meets them, through nginx, one
 * worker, real Redis and Chromium: a popup and a target=_blank link open
 * tabs (the opener stays active), the tab ops and the tab argument, the
 * limit (REFGATE_TABS_MAX=4 here: more popups are closed and reported on
 * the WebSocket), a popup aimed at an address the tenant's policy refuses
 * (nothing of it is fetched), refs that belong to their tab (stale_ref
 * naming the tab), a hostile page that opens a hundred popups, park and
 * restore with three tabs (ids, URLs, scroll, active tab, refs), and a
 * frame of another site, read and driven by ref like a tab's page.
 *
 * Nothing asserts on time: waits are bounded only so that a hang fails.
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

#include "wire/wire.h"
#include "tenant/tenant.h"
#include "tests/support/expect.h"
#include "tests/support/fixture.h"
#include "tests/support/net.h"

#define TABS_MAX 4

static fx_stack gw;

/* ---- helpers ---- */

static void page_url(const char *name, char *out, size_t len)
{
    char p[128];
    snprintf(p, sizeof p, "/%s", name);
    httpd_url(gw.pages, p, out, len);
}

static const cJSON *result(const cJSON *r)
{
    return cJSON_GetObjectItemCaseSensitive(r, "result");
}

/* A command as tenant hdr (NULL: acme) on sid; the reply (caller frees), status in *status. */
static cJSON *cmd_as(const char *hdr, const char *sid, const char *body, int *status)
{
    char path[96];
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    if (!hdr)
        return expect_post(&gw, 0, path, body, status);
    return expect_json(stack_port(gw.st), "POST", path, hdr, body, status);
}

static void ok_as(const char *hdr, const char *sid, const char *body)
{
    int status;
    cJSON *r = cmd_as(hdr, sid, body, &status);
    if (status != 200)
        fail_msg("%s -> %d %s", body, status, cJSON_PrintUnformatted(r));
    cJSON_Delete(r);
}

static void ok(const char *sid, const char *body)
{
    ok_as(NULL, sid, body);
}

/* A command that must fail with code; its error message (caller frees). */
static char *fails(const char *sid, const char *body, const char *code)
{
    int status;
    cJSON *r = cmd_as(NULL, sid, body, &status);
    if (status == 200 || strcmp(reply_code(r), code))
        fail_msg("%s -> %d %s, wanted %s", body, status, cJSON_PrintUnformatted(r), code);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "error"),
                                                      "message");
    char *msg = strdup(cJSON_IsString(m) ? m->valuestring : "");
    cJSON_Delete(r);
    return msg;
}

static void create_as(const char *hdr, const char *page, char *sid)
{
    char url[256], body[400];
    page_url(page, url, sizeof url);
    snprintf(body, sizeof body, "{\"args\":{\"url\":\"%s\"}}", url);
    int status;
    cJSON *r = hdr ? expect_json(stack_port(gw.st), "POST", "/v1/sessions", hdr, body, &status)
                   : expect_post(&gw, 0, "/v1/sessions", body, &status);
    if (status != 200)
        fail_msg("create -> %d %s", status, cJSON_PrintUnformatted(r));
    snprintf(sid, 64, "%s", reply_str(r, "session"));
    cJSON_Delete(r);
    ok_as(hdr, sid, "{\"op\":\"observe\"}");
}

static void close_as(const char *hdr, const char *sid)
{
    ok_as(hdr, sid, "{\"op\":\"session.close\"}");
}

/* The session's tabs reply (caller frees). */
static cJSON *tabs_of(const char *hdr, const char *sid)
{
    int status;
    cJSON *r = cmd_as(hdr, sid, "{\"op\":\"tabs\"}", &status);
    if (status != 200)
        fail_msg("tabs -> %d %s", status, cJSON_PrintUnformatted(r));
    return r;
}

static int n_tabs(const cJSON *r)
{
    return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(result(r), "tabs"));
}

/* The entry of tab id in a tabs reply, or NULL. */
static const cJSON *tab_entry(const cJSON *r, const char *id)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(result(r), "tabs"))
    {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, "tab");
        if (cJSON_IsString(v) && !strcmp(v->valuestring, id))
            return t;
    }
    return NULL;
}

/* Waits (bounded) until the session has n tabs and tab `id`'s URL holds `url`; the reply. */
static cJSON *wait_tabs(const char *hdr, const char *sid, int n, const char *id, const char *url)
{
    cJSON *r = NULL;
    for (int i = 0; i < 100; i++) {
        cJSON_Delete(r);
        r = tabs_of(hdr, sid);
        const cJSON *t = id ? tab_entry(r, id) : NULL;
        if (n_tabs(r) == n && (!id || (t && strstr(json_str(t, "url"), url))))
            return r;
        rg_sleep_ms(100);
    }
    fail_msg("wanted %d tabs (%s at %s): %s", n, id ? id : "-", url ? url : "-",
             cJSON_PrintUnformatted(r));
    return r;
}

static int is_active(const cJSON *r, const char *id)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(tab_entry(r, id), "active"));
}

/* ---- tests ---- */

/* A popup opens tab t2 beside t1; commands reach it with the tab argument. */
static void test_popup_opens_a_tab(void **state)
{
    (void)state;
    char sid[64];
    create_as(NULL, "tabs-opener.html", sid);
    ok(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@popup\"}}");
    cJSON *r = wait_tabs(NULL, sid, 2, "t2", "tabs-child.html?n=1");
    /* The opener stays active; the popup knows who opened it. */
    assert_true(is_active(r, "t1"));
    assert_false(is_active(r, "t2"));
    assert_string_equal(json_str(tab_entry(r, "t2"), "opener"), "t1");
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(tab_entry(r, "t1"), "opener")));
    cJSON_Delete(r);
    /* The tab argument: observe and click on t2 while t1 stays active. */
    cJSON *o = expect_ok(&gw, sid, "{\"op\":\"observe\",\"args\":{\"tab\":\"t2\"}}");
    assert_non_null(strstr(reply_str(o, "text"), "Child button"));
    assert_null(strstr(reply_str(o, "text"), "Open a popup"));
    cJSON_Delete(o);
    ok(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@childbtn\",\"tab\":\"t2\"}}");
    o = expect_ok(&gw, sid, "{\"op\":\"read\",\"args\":{\"target\":\"@childbtn\",\"tab\":\"t2\"}}");
    char *txt = cJSON_PrintUnformatted(result(o));
    assert_non_null(strstr(txt, "Child clicked"));
    free(txt);
    cJSON_Delete(o);
    o = expect_ok(&gw, sid, "{\"op\":\"observe\"}");
    assert_non_null(strstr(reply_str(o, "text"), "Open a popup"));
    cJSON_Delete(o);
    /* tab.select makes t2 the session's page: session.info follows it. */
    o = expect_ok(&gw, sid, "{\"op\":\"tab.select\",\"args\":{\"tab\":\"t2\"}}");
    assert_string_equal(reply_str(o, "tab"), "t2");
    cJSON_Delete(o);
    o = expect_ok(&gw, sid, "{\"op\":\"session.info\"}");
    assert_non_null(strstr(reply_str(o, "url"), "tabs-child.html"));
    cJSON_Delete(o);
    o = expect_ok(&gw, sid, "{\"op\":\"observe\"}");
    assert_non_null(strstr(reply_str(o, "text"), "Child clicked"));
    cJSON_Delete(o);
    /* A tab that does not exist, a bad tab argument: bad_request, nothing changes. */
    free(fails(sid, "{\"op\":\"observe\",\"args\":{\"tab\":\"t9\"}}", "bad_request"));
    free(fails(sid, "{\"op\":\"observe\",\"args\":{\"tab\":7}}", "bad_request"));
    free(fails(sid, "{\"op\":\"tab.select\",\"args\":{\"tab\":\"t9\"}}", "bad_request"));
    /* Closing the active tab makes its opener active; the last one cannot go. */
    o = expect_ok(&gw, sid, "{\"op\":\"tab.close\",\"args\":{\"tab\":\"t2\"}}");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result(o), "closed")));
    cJSON_Delete(o);
    r = tabs_of(NULL, sid);
    assert_int_equal(n_tabs(r), 1);
    assert_true(is_active(r, "t1"));
    cJSON_Delete(r);
    char *msg = fails(sid, "{\"op\":\"tab.close\",\"args\":{\"tab\":\"t1\"}}", "bad_request");
    assert_non_null(strstr(msg, "last tab"));
    free(msg);
    o = expect_ok(&gw, sid, "{\"op\":\"observe\"}");
    assert_non_null(strstr(reply_str(o, "text"), "Open a popup"));
    cJSON_Delete(o);
    /* tab.new opens a tab and makes it active; ids are never reused. */
    char url[256], body[400];
    page_url("tabs-child.html?n=new", url, sizeof url);
    snprintf(body, sizeof body, "{\"op\":\"tab.new\",\"args\":{\"url\":\"%s\"}}", url);
    o = expect_ok(&gw, sid, body);
    assert_string_equal(reply_str(o, "tab"), "t3");
    cJSON_Delete(o);
    r = tabs_of(NULL, sid);
    assert_int_equal(n_tabs(r), 2);
    assert_true(is_active(r, "t3"));
    assert_non_null(strstr(json_str(tab_entry(r, "t3"), "url"), "n=new"));
    assert_string_equal(json_str(tab_entry(r, "t3"), "title"), "Child");
    cJSON_Delete(r);
    /* tab.new asks the URL policy like navigate. */
    free(fails(sid, "{\"op\":\"tab.new\",\"args\":{\"url\":\"file:///etc/passwd\"}}",
               "blocked_url"));
    close_as(NULL, sid);
}

/* A target=_blank link, clicked: a new tab on the link's URL. */
static void test_target_blank_link(void **state)
{
    (void)state;
    char sid[64];
    create_as(NULL, "tabs-opener.html", sid);
    ok(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@blank\"}}");
    cJSON *r = wait_tabs(NULL, sid, 2, "t2", "tabs-child.html?from=link");
    assert_true(is_active(r, "t1"));
    /* The title comes with the document, which may still be loading. */
    for (int i = 0; i < 100 && strcmp(json_str(tab_entry(r, "t2"), "title"), "Child"); i++) {
        rg_sleep_ms(100);
        cJSON_Delete(r);
        r = tabs_of(NULL, sid);
    }
    assert_string_equal(json_str(tab_entry(r, "t2"), "title"), "Child");
    /* A link's new tab knows its opener too (noopener hides it from the page only). */
    assert_string_equal(json_str(tab_entry(r, "t2"), "opener"), "t1");
    cJSON_Delete(r);
    cJSON *o = expect_ok(&gw, sid, "{\"op\":\"observe\",\"args\":{\"tab\":\"t2\"}}");
    assert_non_null(strstr(reply_str(o, "text"), "Child button"));
    cJSON_Delete(o);
    close_as(NULL, sid);
}

/*
 * A tab listed right after the click that opened it, before its page
 * answers (this one never does): it has the URL it is opening, not an empty
 * one, so an agent that lists the tabs can tell which is which.
 */
static void test_tab_listed_before_its_page_answers(void **state)
{
    (void)state;
    char sid[64];
    create_as(NULL, "tabs-opener.html", sid);
    ok(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@slowtab\"}}");
    cJSON *r = tabs_of(NULL, sid);
    char *txt = cJSON_PrintUnformatted(result(r));
    printf("  right after the click: %s\n", txt);
    free(txt);
    assert_int_equal(n_tabs(r), 2);
    assert_non_null(strstr(json_str(tab_entry(r, "t2"), "url"), "/slow?from=link"));
    assert_string_equal(json_str(tab_entry(r, "t2"), "opener"), "t1");
    assert_true(is_active(r, "t1"));
    cJSON_Delete(r);
    close_as(NULL, sid);
}

/* Past REFGATE_TABS_MAX a popup is closed before it runs, and reported. */
static void test_tab_limit(void **state)
{
    (void)state;
    char sid[64], path[96];
    create_as(NULL, "tabs-opener.html", sid);
    snprintf(path, sizeof path, "/v1/sessions/%s/ws", sid);
    int status;
    wsc *w = wsc_open(stack_port(gw.st), path, gw.auth[0], &status);
    if (!w)
        fail_msg("WebSocket: HTTP %d", status);
    const char *sub = "{\"id\":1,\"op\":\"subscribe\",\"args\":{\"events\":[\"tab\"]}}";
    assert_int_equal(wsc_send(w, sub, strlen(sub), 1), 0);
    rg_buf in;
    rg_buf_init(&in);
    assert_int_equal(wsc_recv(w, &in, 10000), 1);
    assert_non_null(strstr(in.data, "\"ok\":true"));
    /* Six clicks, one popup each: three fit beside t1, three are closed. */
    const char *act = "{\"id\":2,\"op\":\"act\",\"args\":{\"steps\":["
                      "{\"op\":\"click\",\"args\":{\"target\":\"@popup\"}},"
                      "{\"op\":\"click\",\"args\":{\"target\":\"@popup\"}},"
                      "{\"op\":\"click\",\"args\":{\"target\":\"@popup\"}},"
                      "{\"op\":\"click\",\"args\":{\"target\":\"@popup\"}},"
                      "{\"op\":\"click\",\"args\":{\"target\":\"@popup\"}},"
                      "{\"op\":\"click\",\"args\":{\"target\":\"@popup\"}}]}}";
    assert_int_equal(wsc_send(w, act, strlen(act), 1), 0);
    int opened = 0, refused = 0, replied = 0;
    for (int i = 0; i < 40 && !(replied && opened + refused >= 6); i++) {
        rg_buf_reset(&in);
        if (wsc_recv(w, &in, 10000) < 0)
            break;
        cJSON *v = cJSON_Parse(in.data);
        const cJSON *ev = cJSON_GetObjectItemCaseSensitive(v, "event");
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(v, "data");
        if (cJSON_IsString(ev) && !strcmp(ev->valuestring, "tab")) {
            if (!strcmp(json_str(d, "state"), "opened")) {
                opened++;
                assert_string_equal(json_str(d, "opener"), "t1");
                assert_non_null(strstr(json_str(d, "url"), "tabs-child.html"));
            } else if (!strcmp(json_str(d, "state"), "closed") &&
                       !strcmp(json_str(d, "reason"), "limit")) {
                refused++;
            }
        } else if (cJSON_GetObjectItemCaseSensitive(v, "id")) {
            replied = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "ok"));
        }
        cJSON_Delete(v);
    }
    rg_buf_destroy(&in);
    wsc_close(w);
    assert_true(replied);
    assert_int_equal(opened, TABS_MAX - 1);
    assert_int_equal(refused, 6 - (TABS_MAX - 1));
    cJSON *r = tabs_of(NULL, sid);
    assert_int_equal(n_tabs(r), TABS_MAX);
    cJSON_Delete(r);
    /* tab.new past the limit is refused too. */
    char url[256], body[400];
    page_url("tabs-child.html", url, sizeof url);
    snprintf(body, sizeof body, "{\"op\":\"tab.new\",\"args\":{\"url\":\"%s\"}}", url);
    char *msg = fails(sid, body, "bad_request");
    assert_non_null(strstr(msg, "REFGATE_TABS_MAX"));
    free(msg);
    close_as(NULL, sid);
}

/* A page that opens a hundred popups: the limit holds, the worker and the
   browser answer, and the worker keeps no renderer per popup. */
static void test_hundred_popups_stay_cheap(void **state)
{
    (void)state;
    char sid[64], other[64];
    create_as(NULL, "tabs-opener.html", sid);
    create_as(NULL, "actions.html", other);
    pid_t all[512];
    int before = procs_descendants(stack_worker_pid(gw.st, 1), all, 512);
    rg_buf steps;
    rg_buf_init(&steps);
    rg_buf_puts(&steps, "{\"op\":\"act\",\"args\":{\"timeout_ms\":90000,\"steps\":[");
    for (int i = 0; i < 100; i++)
        rg_buf_printf(&steps, "%s{\"op\":\"click\",\"args\":{\"target\":\"@popup\"}}",
                      i ? "," : "");
    rg_buf_puts(&steps, "]}}");
    cJSON *o = expect_ok(&gw, sid, steps.data);
    rg_buf_destroy(&steps);
    /* Every click went through (each opened a popup or had it closed). */
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(result(o), "results");
    assert_int_equal(cJSON_GetArraySize(res), 100);
    const cJSON *st;
    cJSON_ArrayForEach(st, res)
    {
        assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "ok")));
    }
    cJSON_Delete(o);
    /* The page's own counter says a hundred were asked for. */
    o = expect_ok(&gw, sid, "{\"op\":\"eval\",\"args\":{\"expression\":\"window.opened\"}}");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(result(o), "value")->valueint, 100);
    cJSON_Delete(o);
    cJSON *r = tabs_of(NULL, sid);
    assert_int_equal(n_tabs(r), TABS_MAX);
    cJSON_Delete(r);
    /* The other session, on the same worker and browser pool, still works. */
    ok(other, "{\"op\":\"click\",\"args\":{\"target\":\"@counter\"}}");
    o = expect_ok(&gw, sid, "{\"op\":\"observe\"}");
    assert_non_null(strstr(reply_str(o, "text"), "Open a popup"));
    cJSON_Delete(o);
    int after = procs_descendants(stack_worker_pid(gw.st, 1), all, 512);
    if (after > before + TABS_MAX)
        fail_msg("%d processes under the worker before, %d after", before, after);
    close_as(NULL, sid);
    close_as(NULL, other);
}

/* A popup aimed at an address the tenant's policy refuses: a tab, but
   nothing of it reaches the address. Without the rule it is fetched. */
static void test_refused_popup_target(void **state)
{
    (void)state;
    char hdr[256], sid[64];
    tenant t;
    tenant_init(&t);
    snprintf(t.name, sizeof t.name, "tabstrict");
    t.rate = 1000;
    t.max_sessions = 10;
    t.allow_private = 1;
    /* Only 127.0.0.1: "localhost" is refused (it also means ::1). */
    assert_int_equal(tenant_add_host(&t, 0, "127.0.0.1"), 0);
    expect_tenant(stack_redis_url(gw.st), &t, hdr, sizeof hdr);
    tenant_destroy(&t);
    create_as(hdr, "tabs-opener.html", sid);
    size_t fetched = httpd_count(gw.pages, "/refused-popup.html");
    ok_as(hdr, sid, "{\"op\":\"click\",\"args\":{\"target\":\"@refused\"}}");
    cJSON *r = wait_tabs(hdr, sid, 2, "t2", "refused-popup.html");
    cJSON_Delete(r);
    /* Give the popup time to have fetched, had it been let through. */
    ok_as(hdr, sid, "{\"op\":\"wait\",\"args\":{\"tab\":\"t2\",\"state\":\"attached\","
                    "\"target\":\"css:body\",\"timeout_ms\":3000}}");
    rg_sleep_ms(500);
    assert_int_equal(httpd_count(gw.pages, "/refused-popup.html"), fetched);
    close_as(hdr, sid);
    /* The same click for a tenant that may reach localhost fetches it. */
    create_as(NULL, "tabs-opener.html", sid);
    ok(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@refused\"}}");
    for (int i = 0; i < 100 && httpd_count(gw.pages, "/refused-popup.html") == fetched; i++)
        rg_sleep_ms(50);
    assert_true(httpd_count(gw.pages, "/refused-popup.html") > fetched);
    close_as(NULL, sid);
}

/* Refs belong to their tab: one used on another tab is stale_ref naming its tab. */
static void test_refs_per_tab(void **state)
{
    (void)state;
    char sid[64];
    create_as(NULL, "tabs-opener.html", sid);
    ok(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@popup\"}}");
    cJSON_Delete(wait_tabs(NULL, sid, 2, "t2", "tabs-child.html"));
    ok(sid, "{\"op\":\"observe\",\"args\":{\"tab\":\"t2\"}}");
    char *msg = fails(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@childbtn\"}}", "stale_ref");
    assert_non_null(strstr(msg, "tab t2"));
    free(msg);
    msg = fails(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@popup\",\"tab\":\"t2\"}}",
                "stale_ref");
    assert_non_null(strstr(msg, "tab t1"));
    free(msg);
    /* A ref no tab has is stale as before, without a tab to point at. */
    msg = fails(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@nosuchref\"}}", "stale_ref");
    assert_null(strstr(msg, "tab t"));
    free(msg);
    /* Each works on its own tab. */
    ok(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@childbtn\",\"tab\":\"t2\"}}");
    ok(sid, "{\"op\":\"hover\",\"args\":{\"target\":\"@popup\"}}");
    close_as(NULL, sid);
}

/* The outline's text of an observe (caller frees), args a JSON object's members or "". */
static char *outline_of(const char *sid, const char *args)
{
    char body[256];
    snprintf(body, sizeof body, "{\"op\":\"observe\",\"args\":{%s}}", args);
    cJSON *r = expect_ok(&gw, sid, body);
    char *t = strdup(reply_str(r, "text"));
    cJSON_Delete(r);
    return t;
}

/* The outline (as outline_of) once it has text, or the last one after
   tries observes 100 ms apart: a frame of another site loads after its page. */
static char *outline_with(const char *sid, const char *args, const char *text, int tries)
{
    char *t = NULL;
    for (int i = 0; i < tries; i++) {
        free(t);
        t = outline_of(sid, args);
        if (strstr(t, text))
            break;
        rg_sleep_ms(100);
    }
    return t;
}

/* The ref on the outline's line that has needle, into ref. */
static void ref_on_line(const char *text, const char *needle, char ref[32])
{
    const char *l = strstr(text, needle);
    if (!l)
        fail_msg("no line with %s in:\n%s", needle, text);
    const char *r = strstr(l, "[ref=@");
    const char *eol = strchr(l, '\n');
    if (!r || (eol && r > eol))
        fail_msg("no ref on the line of %s in:\n%s", needle, text);
    size_t n = strcspn(r + 5, "]");
    snprintf(ref, 32, "%.*s", (int)(n < 31 ? n : 31), r + 5);
}

/*
 * A checkout whose card form is a frame of another site (localhost in a page
 * of 127.0.0.1: a renderer process of its own), through the gateway as an
 * agent meets it: the frame's content is in the outline under its line,
 * with refs; fill, type and click by those refs land in the frame; a click's
 * point is in the page's viewport; elements name the frame; and after a
 * park, the next worker acts on the same refs without an observe first.
 */
static void test_a_frame_of_another_site(void **state)
{
    (void)state;
    char sid[64], card[32], pay[32], body[256];
    create_as(NULL, "xsite.html", sid);
    char *t = outline_with(sid, "", "Your card was declined", 100);
    assert_non_null(strstr(t, "  - Iframe \"Card payment\" [url=\"http://localhost:"));
    assert_non_null(strstr(t, "\n    - alert: Your card was declined.\n"));
    ref_on_line(t, "- textbox \"Card number\"", card);
    ref_on_line(t, "- button \"Pay 42.00\"", pay);
    free(t);
    snprintf(body, sizeof body, "{\"op\":\"fill\",\"args\":{\"target\":\"%s\",\"value\":\"4242\"}}",
             card);
    ok(sid, body);
    snprintf(body, sizeof body, "{\"op\":\"type\",\"args\":{\"target\":\"%s\",\"text\":\" 7777\"}}",
             card);
    ok(sid, body);
    snprintf(body, sizeof body, "{\"op\":\"click\",\"args\":{\"target\":\"%s\"}}", pay);
    cJSON *r = expect_ok(&gw, sid, body);
    /* the point is in the page's viewport: below the page's heading and
       paragraph, where the frame is, not at the top of the frame's own */
    const cJSON *y = cJSON_GetObjectItemCaseSensitive(result(r), "y");
    assert_true(cJSON_IsNumber(y) && y->valuedouble > 100);
    cJSON_Delete(r);
    /* what the frame said and asked for is in the session's logs, as the
       page's own is: its console warning, and its POST, which got a 404 */
    int said = 0, asked = 0;
    for (int i = 0; i < 50 && !(said && asked); i++) {
        if (i)
            rg_sleep_ms(100);
        r = expect_ok(&gw, sid, "{\"op\":\"console\"}");
        const cJSON *m;
        cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(result(r), "messages"))
        {
            said |= !strcmp(json_str(m, "text"), "card charged in the frame") &&
                    !strcmp(json_str(m, "type"), "warning");
        }
        cJSON_Delete(r);
        r = expect_ok(&gw, sid, "{\"op\":\"network\",\"args\":{\"filter\":\"/missing/pay\"}}");
        cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(result(r), "requests"))
        {
            const cJSON *st = cJSON_GetObjectItemCaseSensitive(m, "status");
            asked |= !strcmp(json_str(m, "method"), "POST") && cJSON_IsNumber(st) &&
                     st->valueint == 404 && !strcmp(json_str(m, "tab"), "t1");
        }
        cJSON_Delete(r);
    }
    assert_true(said);
    assert_true(asked);
    t = outline_of(sid, "\"diff\":true");
    assert_non_null(strstr(t, "+     - alert: Paid with card ending 7777"));
    assert_non_null(strstr(t, "[value=\"4242 7777\"]"));
    free(t);
    r = expect_ok(&gw, sid, "{\"op\":\"observe\",\"args\":{\"format\":\"elements\"}}");
    int in_frame = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(result(r), "elements"))
    {
        if (!strcmp(json_str(e, "ref"), pay)) {
            assert_string_equal(json_str(e, "frame"), "x0");
            in_frame = 1;
        }
    }
    assert_true(in_frame);
    cJSON_Delete(r);
    /* a dialog the frame opens is answered as the command says */
    char rm[32];
    t = outline_of(sid, "");
    ref_on_line(t, "- button \"Remove card\"", rm);
    free(t);
    snprintf(body, sizeof body,
             "{\"op\":\"click\",\"args\":{\"target\":\"%s\",\"dialog\":\"accept\"}}", rm);
    ok(sid, body);
    t = outline_of(sid, "");
    assert_non_null(strstr(t, "- alert: Card removed\n"));
    free(t);
    /* parked: the next command restores it, with what was typed in the
       frame, and the frame's refs still act */
    cJSON_Delete(expect_ok(&gw, sid, "{\"op\":\"session.park\"}"));
    t = outline_of(sid, "");
    if (!strstr(t, "[value=\"4242 7777\"]"))
        fail_msg("the frame's field was not restored:\n%s", t);
    free(t);
    snprintf(body, sizeof body,
             "{\"op\":\"fill\",\"args\":{\"target\":\"%s\",\"value\":\"5555 1234\"}}", card);
    for (int i = 0; i < 50; i++) { /* the restored page's frame loads after it */
        int status;
        cJSON *f = cmd_as(NULL, sid, body, &status);
        cJSON_Delete(f);
        if (status == 200)
            break;
        rg_sleep_ms(100);
    }
    snprintf(body, sizeof body, "{\"op\":\"click\",\"args\":{\"target\":\"%s\"}}", pay);
    ok(sid, body);
    t = outline_of(sid, "");
    assert_non_null(strstr(t, "- alert: Paid with card ending 1234\n"));
    free(t);
    close_as(NULL, sid);
}

/*
 * A popup whose frame of another site loaded before any command used the
 * popup: the popup's world, made at that first command, hears of the frame
 * attached before it (sess_xframes_to_world), and the frame's content is in
 * the popup's outline.
 */
static void test_a_popup_with_a_frame_of_another_site(void **state)
{
    (void)state;
    char sid[64];
    create_as(NULL, "tabs-opener.html", sid);
    size_t frames = httpd_count(gw.pages, "/xsite-card.html");
    ok(sid, "{\"op\":\"click\",\"args\":{\"target\":\"css:#checkout\"}}");
    cJSON_Delete(wait_tabs(NULL, sid, 2, "t2", "xsite.html"));
    /* the frame's document came, before any command used t2 */
    for (int i = 0; i < 100 && httpd_count(gw.pages, "/xsite-card.html") == frames; i++)
        rg_sleep_ms(100);
    assert_true(httpd_count(gw.pages, "/xsite-card.html") > frames);
    /* its process may still be starting */
    char *t = outline_with(sid, "\"tab\":\"t2\"", "Your card was declined", 50);
    if (!strstr(t, "\n    - alert: Your card was declined.\n"))
        fail_msg("the popup's frame is not in its outline:\n%s", t);
    free(t);
    close_as(NULL, sid);
}

/* Park and restore keep every tab: ids, URLs, scroll, refs and the active one. */
static void test_park_and_restore_three_tabs(void **state)
{
    (void)state;
    char sid[64], url[256], body[400];
    cJSON *o;
    create_as(NULL, "tabs-opener.html", sid);
    ok(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@popup\"}}");
    cJSON_Delete(wait_tabs(NULL, sid, 2, "t2", "tabs-child.html?n=1"));
    page_url("tabs-child.html?n=third", url, sizeof url);
    snprintf(body, sizeof body, "{\"op\":\"tab.new\",\"args\":{\"url\":\"%s\"}}", url);
    cJSON_Delete(expect_ok(&gw, sid, body)); /* t3, now active */
    ok(sid, "{\"op\":\"observe\",\"args\":{\"tab\":\"t2\"}}");
    ok(sid, "{\"op\":\"observe\"}");
    ok(sid, "{\"op\":\"scroll\",\"args\":{\"dy\":1200}}");
    o = expect_ok(&gw, sid, "{\"op\":\"eval\",\"args\":{\"expression\":\"scrollY\"}}");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(result(o), "value")->valueint, 1200);
    cJSON_Delete(o);
    ok(sid, "{\"op\":\"tab.select\",\"args\":{\"tab\":\"t2\"}}");
    o = expect_ok(&gw, sid, "{\"op\":\"session.park\"}");
    assert_string_equal(reply_str(o, "state"), "parked");
    cJSON_Delete(o);
    o = expect_ok(&gw, sid, "{\"op\":\"session.info\"}");
    assert_string_equal(reply_str(o, "state"), "parked");
    cJSON_Delete(o);
    /* The next command restores all three. */
    cJSON *r = tabs_of(NULL, sid);
    assert_int_equal(n_tabs(r), 3);
    assert_non_null(strstr(json_str(tab_entry(r, "t1"), "url"), "tabs-opener.html"));
    assert_non_null(strstr(json_str(tab_entry(r, "t2"), "url"), "tabs-child.html?n=1"));
    assert_non_null(strstr(json_str(tab_entry(r, "t3"), "url"), "tabs-child.html?n=third"));
    assert_true(is_active(r, "t2"));
    assert_false(is_active(r, "t1"));
    assert_false(is_active(r, "t3"));
    cJSON_Delete(r);
    /* t3 came back at its scroll position. */
    o = expect_ok(&gw, sid,
                  "{\"op\":\"eval\",\"args\":{\"expression\":\"scrollY\",\"tab\":\"t3\"}}");
    double y = cJSON_GetObjectItemCaseSensitive(result(o), "value")->valuedouble;
    if (y < 1000)
        fail_msg("tab t3 restored at scrollY %.0f, parked at 1200", y);
    cJSON_Delete(o);
    /* Refs observed before the park still work on their tabs, without a new observe. */
    ok(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@childbtn\"}}");
    ok(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@childbtn\",\"tab\":\"t3\"}}");
    ok(sid, "{\"op\":\"hover\",\"args\":{\"target\":\"@popup\",\"tab\":\"t1\"}}");
    /* The next tab is t4: ids are not reused after a restore either. */
    page_url("tabs-child.html?n=fourth", url, sizeof url);
    snprintf(body, sizeof body, "{\"op\":\"tab.new\",\"args\":{\"url\":\"%s\"}}", url);
    o = expect_ok(&gw, sid, body);
    assert_string_equal(reply_str(o, "tab"), "t4");
    cJSON_Delete(o);
    close_as(NULL, sid);
}

/* A worker killed with -9: the next command restores every tab from the
   last checkpoint, which a tab opening or a tab op made a full one. */
static void test_tabs_survive_a_killed_worker(void **state)
{
    (void)state;
    char sid[64];
    create_as(NULL, "tabs-opener.html", sid);
    ok(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@blank\"}}");
    cJSON_Delete(wait_tabs(NULL, sid, 2, "t2", "tabs-child.html?from=link"));
    ok(sid, "{\"op\":\"tab.select\",\"args\":{\"tab\":\"t2\"}}");
    ok(sid, "{\"op\":\"observe\"}");
    stack_kill_worker(gw.st, 1, SIGKILL);
    assert_int_equal(stack_restart_worker(gw.st, 1), 0);
    cJSON *r = tabs_of(NULL, sid); /* waits out the dead worker's lease */
    assert_int_equal(n_tabs(r), 2);
    assert_true(is_active(r, "t2"));
    assert_non_null(strstr(json_str(tab_entry(r, "t1"), "url"), "tabs-opener.html"));
    assert_non_null(strstr(json_str(tab_entry(r, "t2"), "url"), "from=link"));
    cJSON_Delete(r);
    ok(sid, "{\"op\":\"click\",\"args\":{\"target\":\"@childbtn\"}}");
    close_as(NULL, sid);
}

int main(void)
{
    static const char *const env[] = {"REFGATE_TABS_MAX=4", NULL};
    if (fx_stack_start(&gw, "test_tabs", "tests/fixtures", 1, env) < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_popup_opens_a_tab),
        cmocka_unit_test(test_target_blank_link),
        cmocka_unit_test(test_tab_listed_before_its_page_answers),
        cmocka_unit_test(test_tab_limit),
        cmocka_unit_test(test_hundred_popups_stay_cheap),
        cmocka_unit_test(test_refused_popup_target),
        cmocka_unit_test(test_refs_per_tab),
        cmocka_unit_test(test_park_and_restore_three_tabs),
        cmocka_unit_test(test_a_frame_of_another_site),
        cmocka_unit_test(test_a_popup_with_a_frame_of_another_site),
        cmocka_unit_test(test_tabs_survive_a_killed_worker),
    };
    int rc = FX_RUN("tabs", tests, NULL, NULL);
    fx_stack_stop(&gw);
    return rc;
}
