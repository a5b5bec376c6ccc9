/*
 * test_session_chromium.c - sessions in Redis with real Chromium and a real
 * redis-server started here: park in one process and restore in another
 * (cookies, storage, URL, scroll, refs that still click the right element),
 * a DOM that changed while parked (kept, lost, stale_ref), a killed owner
 * whose session another process restores after its lease expires, a Redis
 * outage answered with unavailable and recovered from without a restart,
 * one Redis round trip per observe, idle parking and LRU parking when the
 * worker is full.
 *
 * The "other worker" is this binary run again as a child process
 * (--child park|hold REDIS_URL PAGE_URL) with its own pool and manager.
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pool/pool.h"
#include "registry/registry.h"
#include "session/session.h"
#include "tests/support/expect.h"
#include "tests/support/fixture.h"
#include "tests/support/page.h"
#include "tests/support/support.h"

#define TENANT "acme"

static fx_sessions fx; /* Redis, the pool beside the pages, the registry's store */
static sess_mgr *mgr;
static sess_config mgr_cfg;

/* ---- the fixture pages ---- */

/* Counter page: storage read while the page parses, a tall body to scroll. */
static const char counter_html[] =
    "<!doctype html><title>Counter</title>"
    "<p id=early></p><script>document.getElementById('early').textContent="
    "(localStorage.getItem('k')||'-')+'/'+(sessionStorage.getItem('sk')||'-')+'/'+"
    "(localStorage.getItem('__proto__')||'-')</script>"
    "<output id=n>0</output>"
    "<div><button onclick=\"n.textContent=+n.textContent-1\">Decrement</button>"
    "<button onclick=\"n.textContent=+n.textContent+1\">Increment</button></div>"
    "<div style=height:5000px></div>";

/* Before: save (testid), delete, cancel and help. After: delete gone,
   archive new, cancel moved into another container. */
static const char before_html[] =
    "<!doctype html><title>Editor</title><main>"
    "<div><button data-testid=save>Save</button><button>Delete</button></div>"
    "<section><button onclick=\"window.clicked='cancel'\">Cancel</button></section>"
    "<a href=#help>Help</a></main>";
static const char after_html[] =
    "<!doctype html><title>Editor</title><main>"
    "<div><button data-testid=save>Save</button><button>Archive</button></div>"
    "<section><p>moved</p><span><button onclick=\"window.clicked='cancel'\">Cancel</button>"
    "</span></section><a href=#help>Help</a></main>";

/* A button far below the fold, one that renames the page and moves its URL, one at the top. */
static const char ckpt_html[] =
    "<!doctype html><title>Before</title>"
    "<button onclick=\"document.title='Renamed';history.pushState(null,'','#renamed')\">"
    "Rename</button><button>Top</button>"
    "<div style=height:4000px></div><button>Down</button><div style=height:2000px></div>"
    "<input aria-label=Far><div style=height:2000px></div>";

static void write_page(const char *name, const char *html)
{
    assert_int_equal(fx_sessions_page(&fx, name, html), 0);
}

/* ---- helpers ---- */

static void eval_in(sess *s, const char *expr, char *out, size_t len)
{
    reg_page_handle h = sess_handle(s);
    assert_int_equal(page_eval(h.conn, h.session, expr, out, len), 0);
}

static void observe(sess *s, reg_observation *o)
{
    reg_observe_opts opts = {0};
    assert_int_equal(reg_observe(sess_registry(s), sess_handle(s), &opts, o), 0);
}

static int click(sess *s, const char *ref)
{
    reg_action a = {.op = REG_OP_CLICK, .target = ref, .timeout_ms = 3000};
    reg_action_result r = {0};
    char err[256];
    int rc = reg_act(sess_registry(s), sess_handle(s), &a, &r, err, sizeof err);
    reg_action_result_free(&r);
    return rc;
}

static void page_url(const char *name, char *out, size_t len)
{
    char path[128];
    snprintf(path, sizeof path, "/%s", name);
    httpd_url(fx.chrome.pages, path, out, len);
}

static sess *create(sess_mgr *m, const char *page)
{
    sess *s;
    char err[256], url[256];
    sess_options o = {.width = 1000, .height = 700};
    int rc = sess_create(m, TENANT, &o, 20000, &s, err, sizeof err);
    if (rc < 0)
        fail_msg("create: %s", err);
    if (page) {
        sess_nav nav;
        page_url(page, url, sizeof url);
        if ((rc = sess_navigate(s, url, "load", 20000, &nav, err, sizeof err)) < 0)
            fail_msg("navigate %s: %s (%s)", url, err, rg_err_code(rc));
        assert_int_equal(nav.status, 200);
        sess_nav_free(&nav);
    }
    return s;
}

static sess *open_s(sess_mgr *m, const char *sid, sess_restore_info *ri)
{
    sess *s;
    char err[256];
    int rc = sess_open(m, TENANT, sid, 20000, &s, ri, err, sizeof err);
    if (rc < 0)
        fail_msg("open %s: %s (%s)", sid, err, rg_err_code(rc));
    return s;
}

static void state_of(const char *sid, char *state)
{
    sess_info in;
    assert_int_equal(sess_get_info(mgr, TENANT, sid, &in), 0);
    strcpy(state, in.state);
    sess_info_free(&in);
}

/* One field of the session's meta in Redis (what a restore starts from), into out. */
static void meta_field(const char *sid, const char *field, char *out, size_t len)
{
    redisContext *c = rg_redis_take(fx.db.conn);
    assert_non_null(c);
    redisReply *r = redisCommand(c, "HGET rg:{t:%s:s:%s}:meta %s", TENANT, sid, field);
    assert_non_null(r);
    snprintf(out, len, "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    rg_redis_give(fx.db.conn, c, 0);
}

/* ---- the child worker ---- */

static int child_main(const char *mode, const char *redis_url, const char *url)
{
    char dir[256], err[256];
    snprintf(dir, sizeof dir, "/tmp/refgate-test-sess-child-%d", (int)getpid());
    pool_config pc;
    pool_config_default(&pc);
    pc.run_dir = dir;
    pc.browsers = 1;
    rg_redis_config rc;
    rg_redis_config_default(&rc);
    rc.url = redis_url;
    rg_redis *r;
    pool *p;
    if (pool_new(&pc, &p) < 0 || rg_redis_new(&rc, &r, err, sizeof err) < 0)
        return 2;
    reg_redis_config sc;
    reg_redis_config_default(&sc);
    sc.conn = r;
    reg_store *st = reg_store_redis_new(&sc, err, sizeof err);
    sess_config cfg;
    sess_config_default(&cfg);
    cfg.worker_id = "child";
    cfg.lease_ms = 1500;
    cfg.heartbeat_ms = 300;
    sess_mgr *m;
    if (!st || sess_mgr_new(&cfg, p, r, st, &m) < 0)
        return 3;
    sess *s;
    sess_nav nav;
    if (sess_create(m, TENANT, NULL, 20000, &s, err, sizeof err) < 0 ||
        sess_navigate(s, url, "load", 20000, &nav, err, sizeof err) < 0) {
        fprintf(stderr, "child: %s\n", err);
        return 4;
    }
    sess_nav_free(&nav);
    reg_page_handle h = sess_handle(s);
    page_eval(h.conn, h.session,
              "document.cookie='flavor=oat; max-age=3600';document.cookie='tab=1';"
              "localStorage.setItem('k','v1');sessionStorage.setItem('sk','sv');"
              "localStorage.setItem('__proto__','v2');"
              "window.scrollTo(0,1200);1",
              NULL, 0);
    reg_observation o;
    reg_observe_opts opts = {0};
    int orc = reg_observe(sess_registry(s), h, &opts, &o);
    if (orc < 0) {
        fprintf(stderr, "child: observe: %s\n", rg_err_code(orc));
        return 5;
    }
    char inc[REG_REF_MAX] = "", dec[REG_REF_MAX] = "";
    for (size_t i = 0; i < o.n_nodes; i++) {
        if (!strcmp(o.nodes[i].name, "Increment"))
            strcpy(inc, o.nodes[i].ref);
        if (!strcmp(o.nodes[i].name, "Decrement"))
            strcpy(dec, o.nodes[i].ref);
    }
    reg_observation_free(&o);
    printf("%s %s %s\n", sess_id(s), inc, dec);
    fflush(stdout);
    if (!strcmp(mode, "park")) {
        size_t bytes = 0;
        if (sess_park(s, &bytes, err, sizeof err) < 0)
            return 6;
        sess_done(s, 0);
        printf("parked %zu\n", bytes);
        fflush(stdout);
    } else {
        sess_done(s, 1); /* the checkpoint, with cookies and storage */
        printf("ready\n");
        fflush(stdout);
        for (;;)
            pause();
    }
    sess_mgr_free(m);
    reg_store_free(st);
    rg_redis_free(r);
    pool_free(p);
    return 0;
}

/* Runs the child; its first line into line1 (and the second into line2). */
static pid_t run_child(const char *mode, char *line1, size_t n1, char *line2, size_t n2)
{
    char url[256];
    page_url("counter.html", url, sizeof url);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl("/proc/self/exe", "test_session_chromium", "--child", mode, redissrv_url(fx.db.srv), url,
              (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    assert_non_null(f);
    assert_non_null(fgets(line1, (int)n1, f));
    assert_non_null(fgets(line2, (int)n2, f));
    fclose(f);
    return pid;
}

/* ---- tests ---- */

/*
 * A click (or a fill, with value) as the gateway runs it: the action, the
 * scroll it saw handed to the session, the light checkpoint. What the
 * checkpoint wrote must be the page's URL, title and scroll after it, even
 * though it need not ask the page.
 */
static void act_and_done(const char *sid, const char *ref, const char *value, char *scroll_y,
                         size_t len)
{
    sess *s = open_s(mgr, sid, NULL);
    reg_action a = {.op = value ? REG_OP_FILL : REG_OP_CLICK,
                    .target = ref,
                    .value = value,
                    .timeout_ms = 3000};
    reg_action_result r = {0};
    char err[256];
    assert_int_equal(reg_act(sess_registry(s), sess_handle(s), &a, &r, err, sizeof err), 0);
    assert_true(r.has_scroll);
    sess_note_scroll(s, 1, r.sx, r.sy);
    reg_action_result_free(&r);
    eval_in(s, "String(Math.round(scrollY))", scroll_y, len);
    sess_done(s, 0);
}

static void test_light_checkpoint_follows_the_page(void **state)
{
    (void)state;
    write_page("ckpt.html", ckpt_html);
    sess *s = create(mgr, "ckpt.html");
    char sid[64], rename[REG_REF_MAX], top[REG_REF_MAX], down[REG_REF_MAX], far[REG_REF_MAX];
    snprintf(sid, sizeof sid, "%s", sess_id(s));
    reg_observation o;
    observe(s, &o);
    snprintf(rename, sizeof rename, "%s", expect_ref(&o, "button", "Rename"));
    snprintf(top, sizeof top, "%s", expect_ref(&o, "button", "Top"));
    snprintf(down, sizeof down, "%s", expect_ref(&o, "button", "Down"));
    snprintf(far, sizeof far, "%s", expect_ref(&o, "textbox", "Far"));
    reg_observation_free(&o);
    sess_done(s, 0);
    char v[256], y[32];
    meta_field(sid, "title", v, sizeof v);
    assert_string_equal(v, "Before");

    /* The click scrolled the page to reach its target: the checkpoint has the new scroll. */
    act_and_done(sid, down, NULL, y, sizeof y);
    assert_true(atoi(y) > 1000);
    meta_field(sid, "sy", v, sizeof v);
    assert_string_equal(v, y);
    /* So did a fill, further down. */
    int before = atoi(y);
    act_and_done(sid, far, "deep", y, sizeof y);
    assert_true(atoi(y) > before + 1000);
    meta_field(sid, "sy", v, sizeof v);
    assert_string_equal(v, y);

    /* A click that renames the page and moves its URL, then one that changes neither:
       the checkpoint has the page's title, URL and scroll, not what it held before. */
    act_and_done(sid, rename, NULL, y, sizeof y);
    act_and_done(sid, top, NULL, y, sizeof y);
    meta_field(sid, "title", v, sizeof v);
    assert_string_equal(v, "Renamed");
    meta_field(sid, "url", v, sizeof v);
    assert_non_null(strstr(v, "/ckpt.html#renamed"));
    meta_field(sid, "sy", v, sizeof v);
    assert_string_equal(v, y);

    /* A command that scrolls without seeing it (as a key press or an eval
       does): once the session sits idle, the checkpoint has that scroll too. */
    s = open_s(mgr, sid, NULL);
    eval_in(s, "window.scrollTo(0, 777); String(Math.round(scrollY))", y, sizeof y);
    assert_string_equal(y, "777");
    sess_done(s, 0);
    for (int i = 0; i < 100; i++) {
        meta_field(sid, "sy", v, sizeof v);
        if (!strcmp(v, "777"))
            break;
        usleep(50 * 1000);
    }
    assert_string_equal(v, "777");

    s = open_s(mgr, sid, NULL);
    sess_close(s);
    sess_done(s, 0);
}

/* An observation is one Redis round trip, whatever the number of elements
   (no session is live meanwhile, so no heartbeat runs). */
static void test_one_round_trip_per_observe(void **state)
{
    (void)state;
    pool_lease *l;
    char url[256];
    assert_int_equal(pool_acquire(fx.chrome.pool, 20000, &l, NULL), 0);
    reg_page_handle h = {pool_lease_conn(l), pool_lease_session(l), NULL};
    page_url("counter.html", url, sizeof url);
    assert_int_equal(page_navigate(h.conn, h.session, url), 0);
    reg_page *pg;
    assert_int_equal(reg_page_new(fx.store, "{t:acme:s:rt}:main", &mgr_cfg.reg, &pg), 0);
    reg_observation o;
    reg_observe_opts opts = {0};
    assert_int_equal(reg_observe(pg, h, &opts, &o), 0); /* the first one also loads */
    reg_observation_free(&o);
    /* MONITOR shows what clients send ("[0 127.0.0.1:port] ...") apart from
       what scripts run inside Redis ("[0 lua] ..."). */
    redisContext *mon = redissrv_connect(fx.db.srv);
    assert_non_null(mon);
    redisReply *r = redisCommand(mon, "MONITOR");
    assert_non_null(r);
    freeReplyObject(r);
    assert_int_equal(page_eval(h.conn, h.session,
                               "for(var i=0;i<50;i++)document.body.insertAdjacentHTML("
                               "'beforeend','<button>More '+i+'</button>');1",
                               NULL, 0),
                     0);
    assert_int_equal(reg_observe(pg, h, &opts, &o), 0);
    assert_true(o.n_refs >= 52);
    reg_observation_free(&o);
    redisContext *c = redissrv_connect(fx.db.srv);
    r = redisCommand(c, "ECHO round-trips-end");
    freeReplyObject(r);
    redisFree(c);
    int from_clients = 0, in_scripts = 0;
    for (;;) {
        void *rep = NULL;
        assert_int_equal(redisGetReply(mon, &rep), REDIS_OK);
        r = rep;
        int end = r->type == REDIS_REPLY_STATUS && strstr(r->str, "round-trips-end");
        if (!end && r->type == REDIS_REPLY_STATUS) {
            if (strstr(r->str, " lua]"))
                in_scripts++;
            else
                from_clients++;
        }
        freeReplyObject(r);
        if (end)
            break;
    }
    redisFree(mon);
    assert_int_equal(from_clients, 1); /* one EVALSHA for 52 elements */
    assert_true(in_scripts >= 2);
    fx.store->ops->drop(fx.store, "{t:acme:s:rt}:main");
    reg_page_free(pg);
    pool_release(l);
}

static void test_park_in_one_process_restore_in_another(void **state)
{
    (void)state;
    char l1[256], l2[128], sid[64], inc[REG_REF_MAX], dec[REG_REF_MAX];
    pid_t pid = run_child("park", l1, sizeof l1, l2, sizeof l2);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char child_dir[64]; /* the child's pool leaves its (empty) run directory */
    snprintf(child_dir, sizeof child_dir, "/tmp/refgate-test-sess-child-%d", (int)pid);
    rmdir(child_dir);
    assert_int_equal(sscanf(l1, "%63s %31s %31s", sid, inc, dec), 3);
    assert_string_not_equal(inc, dec);
    size_t bytes = 0;
    assert_int_equal(sscanf(l2, "parked %zu", &bytes), 1);
    assert_true(bytes > 0);
    char st[16];
    state_of(sid, st);
    assert_string_equal(st, "parked");

    sess_restore_info ri;
    sess *s = open_s(mgr, sid, &ri);
    assert_true(ri.restored);
    assert_int_equal(ri.refs_lost, 0);
    assert_true(ri.refs_kept >= 2);
    char v[256], url[256];
    eval_in(s, "location.href", v, sizeof v);
    page_url("counter.html", url, sizeof url);
    assert_string_equal(v, url);
    eval_in(s, "document.cookie", v, sizeof v);
    assert_non_null(strstr(v, "flavor=oat"));
    assert_non_null(strstr(v, "tab=1"));
    /* Storage was back before the page's own script read it. */
    eval_in(s, "document.getElementById('early').textContent", v, sizeof v);
    assert_string_equal(v, "v1/sv/v2");
    eval_in(s, "String(scrollY)", v, sizeof v);
    assert_string_equal(v, "1200");
    /* The ref from before the park clicks Increment, not Decrement. */
    assert_int_equal(click(s, inc), 0);
    eval_in(s, "n.textContent", v, sizeof v);
    assert_string_equal(v, "1");
    sess_done(s, 0);
    state_of(sid, st);
    assert_string_equal(st, "live");
    s = open_s(mgr, sid, &ri);
    assert_false(ri.restored); /* live here now: no second restore */
    assert_int_equal(sess_close(s), 0);
    sess_done(s, 0);
    sess_info in;
    assert_int_equal(sess_get_info(mgr, TENANT, sid, &in), RG_ENOTFOUND);
}

static void test_dom_changed_while_parked(void **state)
{
    (void)state;
    write_page("editor.html", before_html);
    sess *s = create(mgr, "editor.html");
    reg_observation o;
    observe(s, &o);
    char save[REG_REF_MAX], del[REG_REF_MAX], cancel[REG_REF_MAX], help[REG_REF_MAX];
    snprintf(save, sizeof save, "%s", expect_ref(&o, "button", "Save"));
    snprintf(del, sizeof del, "%s", expect_ref(&o, "button", "Delete"));
    snprintf(cancel, sizeof cancel, "%s", expect_ref(&o, "button", "Cancel"));
    snprintf(help, sizeof help, "%s", expect_ref(&o, "link", "Help"));
    assert_int_equal(o.n_refs, 4);
    reg_observation_free(&o);
    char sid[64], err[256];
    strcpy(sid, sess_id(s));
    assert_int_equal(sess_park(s, NULL, err, sizeof err), 0);
    sess_done(s, 0);

    write_page("editor.html", after_html);
    sess_restore_info ri;
    s = open_s(mgr, sid, &ri);
    assert_true(ri.restored);
    assert_int_equal(ri.refs_kept, 3);
    assert_int_equal(ri.refs_lost, 1);
    assert_int_equal(click(s, del), RG_ESTALE);
    assert_int_equal(click(s, cancel), 0);
    char v[64];
    eval_in(s, "String(window.clicked)", v, sizeof v);
    assert_string_equal(v, "cancel");
    assert_int_equal(click(s, save), 0);
    assert_int_equal(click(s, help), 0);
    sess_close(s);
    sess_done(s, 0);
}

/*
 * An observe leaves an unchanged entry unwritten for a while (registry.c),
 * so the store's last-seen time lags the worker's. A park writes the
 * sightings first: the parked registry says when each ref was last seen,
 * which is when the worker that restores it starts counting towards stale.
 */
static void test_park_keeps_when_refs_were_seen(void **state)
{
    (void)state;
    write_page("editor.html", before_html);
    sess *s = create(mgr, "editor.html");
    reg_observation a, b;
    observe(s, &a);
    rg_sleep_ms(300);
    int64_t seen = rg_wall_ms();
    observe(s, &b);
    assert_int_equal(b.n_refs, 4);
    assert_int_equal(b.n_unwritten, 4); /* the store was not told of this sighting */
    reg_observation_free(&a);
    reg_observation_free(&b);
    char key[128], err[256];
    snprintf(key, sizeof key, "{t:%s:s:%s}:main", TENANT, sess_id(s));
    assert_int_equal(sess_park(s, NULL, err, sizeof err), 0);
    sess_done(s, 0);
    reg_entry *v;
    size_t n;
    assert_int_equal(fx.store->ops->load(fx.store, key, &v, &n), 0);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++)
        assert_true(v[i].last_seen_ms >= seen);
    reg_entries_free(v, n);
}

static void test_killed_owner_restores_from_checkpoint(void **state)
{
    (void)state;
    char l1[256], l2[128], sid[64], inc[REG_REF_MAX], dec[REG_REF_MAX];
    pid_t pid = run_child("hold", l1, sizeof l1, l2, sizeof l2);
    assert_string_equal(l2, "ready\n");
    assert_int_equal(sscanf(l1, "%63s %31s %31s", sid, inc, dec), 3);
    char st[16];
    state_of(sid, st);
    assert_string_equal(st, "live");
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/refgate-test-sess-child-%d", (int)pid);
    assert_true(procs_count_cmdline(dir) > 0);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    /* Restored here once the dead owner's lease runs out. */
    sess_restore_info ri;
    sess *s = open_s(mgr, sid, &ri);
    assert_true(ri.restored);
    assert_int_equal(ri.refs_lost, 0);
    char v[256];
    eval_in(s, "document.getElementById('early').textContent", v, sizeof v);
    assert_string_equal(v, "v1/sv/v2");
    eval_in(s, "String(scrollY)", v, sizeof v);
    assert_string_equal(v, "1200");
    assert_int_equal(click(s, dec), 0);
    eval_in(s, "n.textContent", v, sizeof v);
    assert_string_equal(v, "-1");
    sess_close(s);
    sess_done(s, 0);
    /* No Chromium of the dead process is left (its guard took them down). */
    int left = 1;
    for (int i = 0; i < 100 && (left = procs_count_cmdline(dir)) > 0; i++)
        usleep(100000);
    assert_int_equal(left, 0);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_redis_outage_is_unavailable_then_recovers(void **state)
{
    (void)state;
    sess *live = create(mgr, "counter.html");
    sess *gone = create(mgr, "counter.html");
    char live_id[64], parked_id[64], err[256];
    strcpy(live_id, sess_id(live));
    strcpy(parked_id, sess_id(gone));
    reg_observation o;
    observe(gone, &o);
    char inc[REG_REF_MAX];
    snprintf(inc, sizeof inc, "%s", expect_ref(&o, "button", "Increment"));
    reg_observation_free(&o);
    assert_int_equal(sess_park(gone, NULL, err, sizeof err), 0);
    sess_done(gone, 0);
    sess_done(live, 0);

    redissrv_stop(fx.db.srv);
    int64_t t0 = rg_now_ms();
    sess *s;
    sess_restore_info ri;
    assert_int_equal(sess_open(mgr, TENANT, parked_id, 5000, &s, &ri, err, sizeof err),
                     RG_EUNAVAIL);
    assert_non_null(strstr(err, "unavailable"));
    assert_int_equal(sess_create(mgr, TENANT, NULL, 5000, &s, err, sizeof err), RG_EUNAVAIL);
    s = open_s(mgr, live_id, &ri);
    reg_observe_opts opts = {0};
    assert_int_equal(reg_observe(sess_registry(s), sess_handle(s), &opts, &o), RG_EUNAVAIL);
    /* A park that cannot be written changes nothing: the session stays live here. */
    assert_int_equal(sess_park(s, NULL, err, sizeof err), RG_EUNAVAIL);
    sess_done(s, 0);
    /* Every failure came at once, not after a hang (a generous bound). */
    assert_true(rg_now_ms() - t0 < 20000);

    assert_int_equal(redissrv_restart(fx.db.srv), 0);
    s = open_s(mgr, live_id, &ri);
    assert_false(ri.restored);
    observe(s, &o);
    reg_observation_free(&o);
    sess_close(s);
    sess_done(s, 0);
    /* Nothing parked was lost. */
    s = open_s(mgr, parked_id, &ri);
    assert_true(ri.restored);
    assert_int_equal(ri.refs_lost, 0);
    assert_int_equal(click(s, inc), 0);
    char v[16];
    eval_in(s, "n.textContent", v, sizeof v);
    assert_string_equal(v, "1");
    sess_close(s);
    sess_done(s, 0);
}

/* A Redis that stops answering is a timeout, then unavailable: never a hang. */
static void test_frozen_redis_times_out(void **state)
{
    (void)state;
    sess *s = create(mgr, NULL);
    char sid[64];
    strcpy(sid, sess_id(s));
    sess_done(s, 0);
    redissrv_freeze(fx.db.srv, 1);
    sess_info in;
    int64_t t0 = rg_now_ms();
    int rc = sess_get_info(mgr, TENANT, sid, &in);
    int64_t took = rg_now_ms() - t0;
    redissrv_freeze(fx.db.srv, 0);
    assert_int_equal(rc, RG_EUNAVAIL);
    assert_true(took < 20000);
    assert_int_equal(sess_get_info(mgr, TENANT, sid, &in), 0);
    sess_info_free(&in);
    s = open_s(mgr, sid, NULL);
    sess_close(s);
    sess_done(s, 0);
}

static sess_mgr *small_mgr(const char *worker, int capacity, int64_t idle_ms)
{
    sess_config cfg;
    sess_config_default(&cfg);
    cfg.worker_id = worker;
    cfg.lease_ms = 1500;
    cfg.heartbeat_ms = 200;
    cfg.capacity = capacity;
    cfg.idle_park_ms = idle_ms;
    sess_mgr *m;
    assert_int_equal(sess_mgr_new(&cfg, fx.chrome.pool, fx.db.conn, fx.store, &m), 0);
    return m;
}

/*
 * Waits (up to 20 s) until the heartbeat has judged n pages of m in all. A
 * park for room takes an unjudged page after every judged one (victim.c), so
 * a test of the age order waits until the pages it compares are in one tier.
 */
static void judged_at_least(sess_mgr *m, uint64_t n)
{
    sess_stats ss = {0};
    for (int i = 0; i < 400 && ss.judged < n; i++) {
        usleep(i ? 50000 : 0);
        sess_get_stats(m, &ss);
    }
    assert_true(ss.judged >= n);
}

static void test_full_worker_parks_the_least_recently_used(void **state)
{
    (void)state;
    sess_mgr *m = small_mgr("small", 2, 0);
    sess *a = create(m, "counter.html");
    sess *b = create(m, "counter.html");
    char ida[64], idb[64], st[16];
    strcpy(ida, sess_id(a));
    strcpy(idb, sess_id(b));
    sess_done(a, 0);
    sess_done(b, 0);
    judged_at_least(m, 2);
    sess *c = create(m, "counter.html"); /* a is the least recently used */
    char idc[64];
    strcpy(idc, sess_id(c));
    sess_done(c, 0);
    judged_at_least(m, 3);
    state_of(ida, st);
    assert_string_equal(st, "parked");
    state_of(idb, st);
    assert_string_equal(st, "live");
    sess_stats ss;
    sess_get_stats(m, &ss);
    assert_int_equal(ss.live, 2);
    /* Coming back parks the next least recently used (b). */
    sess_restore_info ri;
    a = open_s(m, ida, &ri);
    assert_true(ri.restored);
    sess_done(a, 0);
    state_of(idb, st);
    assert_string_equal(st, "parked");
    const char *ids[] = {ida, idb, idc};
    for (int i = 0; i < 3; i++) {
        sess *s = open_s(m, ids[i], NULL);
        sess_close(s);
        sess_done(s, 0);
    }
    sess_mgr_free(m);
}

static void test_idle_sessions_park_themselves(void **state)
{
    (void)state;
    sess_mgr *m = small_mgr("idle", 8, 1000);
    sess *s = create(m, "counter.html");
    char sid[64], st[16] = "";
    strcpy(sid, sess_id(s));
    sess_done(s, 0);
    sess_stats ss = {0};
    /* Redis says parked before the worker has let go of the context: wait for both. */
    for (int i = 0; i < 100; i++) {
        state_of(sid, st);
        sess_get_stats(m, &ss);
        if (!strcmp(st, "parked") && ss.parked == 1)
            break;
        usleep(100000);
    }
    assert_string_equal(st, "parked");
    assert_int_equal(ss.live, 0);
    assert_int_equal(ss.parked, 1);
    s = open_s(m, sid, NULL);
    sess_close(s);
    sess_done(s, 0);
    sess_mgr_free(m);
}

/* A session held by another live worker: that worker is asked to park it,
   and the session comes back here with its refs. */
static void test_live_session_of_another_worker_moves_here(void **state)
{
    (void)state;
    sess_mgr *other = small_mgr("other", 8, 0);
    sess *s = create(other, "counter.html");
    reg_observation o;
    observe(s, &o);
    char inc[REG_REF_MAX], sid[64], st[16];
    snprintf(inc, sizeof inc, "%s", expect_ref(&o, "button", "Increment"));
    reg_observation_free(&o);
    strcpy(sid, sess_id(s));
    sess_done(s, 0);
    sess_info in;
    assert_int_equal(sess_get_info(mgr, TENANT, sid, &in), 0);
    assert_string_equal(in.worker, "other");
    sess_info_free(&in);
    sess_restore_info ri;
    s = open_s(mgr, sid, &ri);
    assert_true(ri.restored);
    assert_int_equal(ri.refs_lost, 0);
    assert_int_equal(click(s, inc), 0);
    char v[16];
    eval_in(s, "n.textContent", v, sizeof v);
    assert_string_equal(v, "1");
    sess_done(s, 0);
    assert_int_equal(sess_get_info(mgr, TENANT, sid, &in), 0);
    assert_string_equal(in.worker, "main");
    sess_info_free(&in);
    state_of(sid, st);
    assert_string_equal(st, "live");
    sess_stats ss = {0};
    for (int i = 0; i < 100 && ss.parked != 1; i++, usleep(20000))
        sess_get_stats(other, &ss); /* it lets go of the context just after the write */
    assert_int_equal(ss.parked, 1);
    assert_int_equal(ss.live, 0);
    s = open_s(mgr, sid, NULL);
    sess_close(s);
    sess_done(s, 0);
    sess_mgr_free(other);
}

/* Another tenant's session id is simply not found. */
/* Writes page name with html, navigates s to it (its URL into url), *nav the reply. */
static void navigate_to_new_page(sess *s, const char *name, const char *html, char *url,
                                 size_t len, sess_nav *nav)
{
    char err[256];
    write_page(name, html);
    page_url(name, url, len);
    int rc = sess_navigate(s, url, "load", 20000, nav, err, sizeof err);
    if (rc < 0)
        fail_msg("navigate to %s: %s (%s)", name, err, rg_err_code(rc));
}

/*
 * Where a navigation ends (URL, title, HTTP status) is read in refgate's
 * world at the load event, not in the page's own world after it: a page
 * that replaces JSON and the other globals of its world still gets its
 * navigation and its reload answered. (Read in the page's world, as before
 * 3 December, the page's JSON.stringify answered, and the navigation
 * failed.)
 */
static void test_navigation_reply_ignores_the_page_globals(void **state)
{
    (void)state;
    char *html = support_slurp("tests/fixtures/hostile-globals.html", NULL);
    assert_non_null(html);
    write_page("hostile-globals.html", html);
    free(html);
    sess *s = create(mgr, NULL);
    char url[256], err[256];
    page_url("hostile-globals.html", url, sizeof url);
    sess_nav nav;
    int rc = sess_navigate(s, url, "load", 20000, &nav, err, sizeof err);
    if (rc < 0)
        fail_msg("navigate: %s (%s)", err, rg_err_code(rc));
    assert_string_equal(nav.url, url);
    assert_string_equal(nav.title, "Hostile globals");
    assert_int_equal(nav.status, 200);
    sess_nav_free(&nav);
    rc = sess_history(s, 0, "load", 20000, &nav, err, sizeof err); /* a reload */
    if (rc < 0)
        fail_msg("reload: %s (%s)", err, rg_err_code(rc));
    assert_string_equal(nav.url, url);
    assert_string_equal(nav.title, "Hostile globals");
    sess_nav_free(&nav);
    /* A title the page's own load listener sets is in the reply, as when
       the page was asked after the load. */
    navigate_to_new_page(s, "load-title.html",
                         "<!doctype html><title>Before</title><p>x</p><script>"
                         "addEventListener('load', function () { document.title = 'After load'; });"
                         "</script>",
                         url, sizeof url, &nav);
    assert_string_equal(nav.title, "After load");
    sess_nav_free(&nav);
    /* A report over the world's cap (64 KiB) is not kept: the page is
       asked, and the reply is the same. */
    navigate_to_new_page(s, "long-title.html",
                         "<!doctype html><title>t</title><p>x</p><script>"
                         "document.title = 'L' + 'o'.repeat(69997) + 'ng';</script>",
                         url, sizeof url, &nav);
    assert_string_equal(nav.url, url);
    assert_int_equal(strlen(nav.title), 70000);
    assert_true(!strncmp(nav.title, "Loo", 3) && !strcmp(nav.title + 69998, "ng"));
    sess_nav_free(&nav);
    sess_close(s);
    sess_done(s, 0);
}

static void test_other_tenant_not_found(void **state)
{
    (void)state;
    sess *s = create(mgr, NULL);
    char sid[64], err[128];
    strcpy(sid, sess_id(s));
    sess_done(s, 0);
    sess *o;
    assert_int_equal(sess_open(mgr, "other", sid, 2000, &o, NULL, err, sizeof err),
                     RG_ENOTFOUND);
    assert_int_equal(sess_open(mgr, TENANT, "nosuch", 2000, &o, NULL, err, sizeof err),
                     RG_ENOTFOUND);
    assert_int_equal(sess_open(mgr, TENANT, "../x", 2000, &o, NULL, err, sizeof err),
                     RG_ENOTFOUND);
    s = open_s(mgr, sid, NULL);
    sess_close(s);
    sess_done(s, 0);
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "--child"))
        return child_main(argv[2], argv[3], argv[4]);
    if (fx_sessions_start(&fx, "test_session_chromium", "test-sess") < 0 ||
        fx_sessions_page(&fx, "counter.html", counter_html) < 0)
        return 1;
    sess_config_default(&mgr_cfg);
    mgr_cfg.worker_id = "main";
    mgr_cfg.lease_ms = 1500;
    mgr_cfg.heartbeat_ms = 300;
    mgr_cfg.idle_park_ms = 0;
    if (sess_mgr_new(&mgr_cfg, fx.chrome.pool, fx.db.conn, fx.store, &mgr) < 0) {
        fprintf(stderr, "test_session_chromium: no session manager\n");
        fx_sessions_stop(&fx);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_round_trip_per_observe),
        cmocka_unit_test(test_navigation_reply_ignores_the_page_globals),
        cmocka_unit_test(test_park_in_one_process_restore_in_another),
        cmocka_unit_test(test_dom_changed_while_parked),
        cmocka_unit_test(test_park_keeps_when_refs_were_seen),
        cmocka_unit_test(test_killed_owner_restores_from_checkpoint),
        cmocka_unit_test(test_redis_outage_is_unavailable_then_recovers),
        cmocka_unit_test(test_frozen_redis_times_out),
        cmocka_unit_test(test_full_worker_parks_the_least_recently_used),
        cmocka_unit_test(test_idle_sessions_park_themselves),
        cmocka_unit_test(test_live_session_of_another_worker_moves_here),
        cmocka_unit_test(test_other_tenant_not_found),
        cmocka_unit_test(test_light_checkpoint_follows_the_page),
    };
    int r = FX_RUN("session_chromium", tests, NULL, NULL);
    sess_mgr_free(mgr);
    fx_sessions_stop(&fx);
    return r;
}
