/* expect.c - checks that fail the running cmocka test (expect.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "expect.h"
#include "wire/wire.h"
#include "net.h"

const char *expect_ref(const reg_observation *o, const char *role, const char *name)
{
    for (size_t i = 0; i < o->n_nodes; i++)
        if (!strcmp(o->nodes[i].role, role) && o->nodes[i].name && !strcmp(o->nodes[i].name, name))
            return o->nodes[i].ref;
    fail_msg("no %s \"%s\" in:\n%s", role, name, o->text ? o->text : "(no outline)");
    return NULL;
}

cJSON *expect_json(int port, const char *method, const char *path, const char *hdr,
                   const char *body, int *status)
{
    http_resp r;
    if (http_request(port, method, path, hdr, body, body ? strlen(body) : 0, &r) < 0)
        fail_msg("%s %s: no answer", method, path);
    *status = r.status;
    cJSON *v = NULL;
    char err[128];
    const char *text = r.body.data ? r.body.data : "";
    if (wire_json_decode(text, r.body.len, &v, err, sizeof err) < 0)
        fail_msg("%s %s -> %d, not JSON (%s): %.300s", method, path, r.status, err, text);
    if (!strstr(r.content_type, "application/json"))
        fail_msg("%s %s -> %d as \"%s\", not application/json", method, path, r.status,
                 r.content_type);
    rg_buf_destroy(&r.body);
    return v;
}

cJSON *expect_post(const fx_stack *f, int who, const char *path, const char *body, int *status)
{
    char h[256];
    snprintf(h, sizeof h, "%sContent-Type: application/json\r\n", f->auth[who]);
    return expect_json(stack_port(f->st), "POST", path, h, body, status);
}

cJSON *expect_ok(const fx_stack *f, const char *sid, const char *body)
{
    char path[96];
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    int status;
    cJSON *r = expect_post(f, 0, path, body, &status);
    if (status != 200 || !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok"))) {
        char *s = cJSON_PrintUnformatted(r);
        fail_msg("%s -> %d %s", body, status, s);
    }
    return r;
}

const char *json_str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

const char *reply_str(const cJSON *reply, const char *k)
{
    return json_str(cJSON_GetObjectItemCaseSensitive(reply, "result"), k);
}

const char *reply_code(const cJSON *reply)
{
    const cJSON *c =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(reply, "error"), "code");
    return cJSON_IsString(c) ? c->valuestring : "";
}

void expect_tenant(const char *redis_url, const tenant *t, char *hdr, size_t len)
{
    char err[256], key[TENANT_KEY_SIZE];
    if (stack_make_tenant(redis_url, t, key, sizeof key, err, sizeof err) < 0)
        fail_msg("tenant %s: %s", t->name, err);
    snprintf(hdr, len, "Authorization: Bearer %s\r\nContent-Type: application/json\r\n", key);
}
