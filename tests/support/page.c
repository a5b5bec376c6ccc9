/* page.c - DevTools helpers for tests and benchmarks: navigate, evaluate. */
#define _GNU_SOURCE
#include "page.h"

#include <stdio.h>
#include <string.h>

int page_eval(cdp_conn *c, const char *sid, const char *expr, char *out, size_t len)
{
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_puts(&q, "{\"returnByValue\":true,\"awaitPromise\":true,\"expression\":");
    rg_buf_json_str(&q, expr, strlen(expr));
    rg_buf_puts(&q, "}");
    cdp_reply r;
    int rc = cdp_call(c, sid, "Runtime.evaluate", q.data, 20000, &r);
    rg_buf_destroy(&q);
    if (rc == 0 && cJSON_GetObjectItem(r.result, "exceptionDetails"))
        rc = RG_EINTERNAL;
    if (rc == 0 && out) {
        const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(r.result, "result"), "value");
        if (cJSON_IsString(v))
            snprintf(out, len, "%s", v->valuestring);
        else if (cJSON_IsNumber(v))
            snprintf(out, len, "%g", v->valuedouble);
        else if (cJSON_IsBool(v))
            snprintf(out, len, "%s", cJSON_IsTrue(v) ? "true" : "false");
        else
            snprintf(out, len, "<%s>", v ? "other" : "none");
    }
    cdp_reply_free(&r);
    return rc;
}

void page_browser_product(cdp_conn *c, char *out, size_t len)
{
    snprintf(out, len, "unknown");
    cdp_reply r;
    if (cdp_call(c, NULL, "Browser.getVersion", NULL, 5000, &r) == 0) {
        const cJSON *pr = cJSON_GetObjectItem(r.result, "product");
        if (cJSON_IsString(pr))
            snprintf(out, len, "%s", pr->valuestring);
    }
    cdp_reply_free(&r);
}

int page_goto(cdp_conn *c, const char *sid, const char *url, int wait_ms, int *load_rc)
{
    *load_rc = RG_EINTERNAL;
    cdp_waiter *w;
    int rc = cdp_waiter_new(c, sid, "Page.loadEventFired", &w);
    if (rc < 0)
        return rc;
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_puts(&q, "{\"url\":");
    rg_buf_json_str(&q, url, strlen(url));
    rg_buf_puts(&q, "}");
    rc = cdp_call(c, sid, "Page.navigate", q.data, 20000, NULL);
    rg_buf_destroy(&q);
    if (rc == 0)
        *load_rc = cdp_waiter_wait(w, wait_ms, NULL);
    cdp_waiter_free(w);
    return rc;
}

int page_navigate(cdp_conn *c, const char *sid, const char *url)
{
    int rc = cdp_call(c, sid, "Page.enable", NULL, 10000, NULL);
    if (rc < 0)
        return rc;
    int load_rc;
    rc = page_goto(c, sid, url, 20000, &load_rc);
    return rc < 0 ? rc : load_rc;
}

int page_handle(pool_lease *l, reg_page_handle *h, reg_world **world)
{
    h->conn = pool_lease_conn(l);
    h->session = pool_lease_session(l);
    h->world = NULL;
    *world = NULL;
    if (cdp_call(h->conn, h->session, "Runtime.enable", NULL, 10000, NULL) < 0 ||
        reg_world_new(h->conn, h->session, 10000, world) < 0) {
        *world = NULL;
        return -1;
    }
    h->world = *world;
    return 0;
}
