/*
 * view.c - the live view's tokens and ops (docs/protocol.md, "Live view").
 *
 * A view token lets a browser, which cannot set an Authorization header on
 * a WebSocket, open one session's WebSocket for a while:
 *
 *   v1.<expiry, unix seconds>.<control 0|1>.<base64url tenant>.<base64url mac>
 *
 * mac is HMAC-SHA256 under the server secret over
 * "refgate-view-v1\n<tenant>\n<sid>\n<expiry>\n<control>": the session is
 * not in the token but in the URL it is used with, so a token opens no
 * other session. The secret is 32 random bytes in Redis (rg:view:secret),
 * created once by whichever worker needs it first (SET NX) and read by
 * every other, so a token made on one worker works on all of them.
 *
 * Ops: session.view_token makes a token for the caller's session;
 * input (WebSocket only) dispatches a viewer's click, wheel or key to the
 * page with Input.dispatchMouseEvent and Input.dispatchKeyEvent.
 *
 * Threading: any thread. The secret is cached in the gateway under g->mu
 * once read.
 */
#define _GNU_SOURCE
#include "gateway/gw_int.h"

#include <hiredis/hiredis.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VIEW_SECRET_KEY "rg:view:secret"
#define VIEW_MAC_BYTES 32

/* ---- tokens ---- */

static void view_mac(const unsigned char *secret, size_t slen, const char *tid, const char *sid,
                     long long exp, int control, unsigned char mac[VIEW_MAC_BYTES])
{
    char msg[256];
    int n = snprintf(msg, sizeof msg, "refgate-view-v1\n%s\n%s\n%lld\n%d", tid, sid, exp,
                     control ? 1 : 0);
    unsigned int len = VIEW_MAC_BYTES;
    HMAC(EVP_sha256(), secret, (int)slen, (const unsigned char *)msg,
         (size_t)(n < (int)sizeof msg ? n : (int)sizeof msg - 1), mac, &len);
}

int gw_view_token_make(const unsigned char *secret, size_t slen, const char *tid, const char *sid,
                       long long exp, int control, char *out, size_t len)
{
    unsigned char mac[VIEW_MAC_BYTES];
    if (!tenant_name_valid(tid) || strlen(tid) >= SESS_TENANT_MAX || strlen(sid) >= SESS_ID_MAX)
        return RG_EBADREQ;
    view_mac(secret, slen, tid, sid, exp, control, mac);
    rg_buf b;
    rg_buf_init(&b);
    rg_buf_printf(&b, "v1.%lld.%d.", exp, control ? 1 : 0);
    rg_base64_append(&b, tid, strlen(tid), RG_B64_URL);
    rg_buf_puts(&b, ".");
    rg_base64_append(&b, mac, sizeof mac, RG_B64_URL);
    int rc = !b.failed && b.len < len ? 0 : RG_EINTERNAL;
    if (rc == 0)
        memcpy(out, b.data, b.len + 1);
    rg_buf_destroy(&b);
    return rc;
}

int gw_view_token_parse(const char *tok, size_t n, gw_view_claims *out)
{
    memset(out, 0, sizeof *out);
    if (n < 3 || n > GW_VIEW_TOKEN_MAX || memcmp(tok, "v1.", 3))
        return RG_EUNAUTH;
    const char *p = tok + 3, *end = tok + n;
    /* the expiry: 1 to 12 digits, no leading zero */
    const char *q = p;
    long long exp = 0;
    while (q < end && *q >= '0' && *q <= '9' && q - p < 12)
        exp = exp * 10 + (*q++ - '0');
    if (q == p || q >= end || *q != '.' || (*p == '0' && q - p > 1))
        return RG_EUNAUTH;
    p = q + 1;
    if (end - p < 2 || (p[0] != '0' && p[0] != '1') || p[1] != '.')
        return RG_EUNAUTH;
    out->control = p[0] == '1';
    p += 2;
    const char *dot = memchr(p, '.', (size_t)(end - p));
    if (!dot || dot == p)
        return RG_EUNAUTH;
    long tl = rg_base64_decode_to(p, (size_t)(dot - p), (unsigned char *)out->tenant,
                                  sizeof out->tenant - 1, RG_B64_URL);
    if (tl <= 0)
        return RG_EUNAUTH;
    out->tenant[tl] = '\0';
    if (memchr(out->tenant, '\0', (size_t)tl) || !tenant_name_valid(out->tenant))
        return RG_EUNAUTH;
    p = dot + 1;
    if (rg_base64_decode_to(p, (size_t)(end - p), out->mac, sizeof out->mac, RG_B64_URL) !=
        VIEW_MAC_BYTES)
        return RG_EUNAUTH;
    out->exp = exp;
    return 0;
}

int gw_view_token_verify(const unsigned char *secret, size_t slen, const char *tok, const char *sid,
                         long long now_s, gw_view_claims *out)
{
    int rc = gw_view_token_parse(tok, strlen(tok), out);
    if (rc < 0)
        return rc;
    unsigned char mac[VIEW_MAC_BYTES];
    view_mac(secret, slen, out->tenant, sid, out->exp, out->control, mac);
    if (CRYPTO_memcmp(mac, out->mac, sizeof mac) != 0)
        return RG_EUNAUTH;
    if (out->exp <= now_s)
        return RG_EUNAUTH;
    return 0;
}

/* The shared secret: cached, or read (made first when nobody has). */
int gw_view_secret(gw *g, unsigned char out[GW_VIEW_SECRET_BYTES])
{
    pthread_mutex_lock(&g->mu);
    int have = g->view_secret_ok;
    if (have)
        memcpy(out, g->view_secret, GW_VIEW_SECRET_BYTES);
    pthread_mutex_unlock(&g->mu);
    if (have)
        return 0;
    unsigned char fresh[GW_VIEW_SECRET_BYTES];
    char hex[2 * GW_VIEW_SECRET_BYTES + 1];
    if (RAND_bytes(fresh, sizeof fresh) != 1)
        return RG_EINTERNAL;
    for (size_t i = 0; i < sizeof fresh; i++)
        snprintf(hex + 2 * i, 3, "%02x", fresh[i]);
    OPENSSL_cleanse(fresh, sizeof fresh);
    /* Routed by the key's slot, as every command is (a cluster has no one server). */
    redisReply *r1 = rg_redis_command(g->redis, "SET %s %s NX", VIEW_SECRET_KEY, hex);
    redisReply *r2 = r1 ? rg_redis_command(g->redis, "GET %s", VIEW_SECRET_KEY) : NULL;
    OPENSSL_cleanse(hex, sizeof hex);
    int rc = RG_EUNAVAIL;
    if (r2 && r2->type == REDIS_REPLY_STRING && r2->len == 2 * GW_VIEW_SECRET_BYTES) {
        rc = 0;
        for (size_t i = 0; i < GW_VIEW_SECRET_BYTES && rc == 0; i++) {
            int hi = rg_hex_value((unsigned char)r2->str[2 * i]);
            int lo = rg_hex_value((unsigned char)r2->str[2 * i + 1]);
            if (hi < 0 || lo < 0)
                rc = RG_EINTERNAL;
            else
                out[i] = (unsigned char)(hi << 4 | lo);
        }
    }
    freeReplyObject(r1);
    freeReplyObject(r2);
    if (rc == 0) {
        pthread_mutex_lock(&g->mu);
        memcpy(g->view_secret, out, GW_VIEW_SECRET_BYTES);
        g->view_secret_ok = 1;
        pthread_mutex_unlock(&g->mu);
    }
    return rc;
}

/* ---- ops ---- */

int op_view_token(gw_cmd *c)
{
    int ttl = gw_arg_int(c, "ttl_s", GW_VIEW_TTL_DEFAULT_S);
    if (ttl < 1 || ttl > GW_VIEW_TTL_MAX_S)
        return gw_fail(c, RG_EBADREQ, "args.ttl_s must be from 1 to %d", GW_VIEW_TTL_MAX_S);
    int control = gw_arg_bool(c, "control");
    sess_info in;
    int rc = sess_get_info(c->g->sessions, c->who->tenant, c->sid, &in);
    if (rc == RG_ENOTFOUND)
        return gw_fail(c, rc, "no session %s", c->sid);
    if (rc < 0)
        return gw_fail(c, rc, "Redis is unavailable; try again");
    sess_info_free(&in);
    unsigned char secret[GW_VIEW_SECRET_BYTES];
    if ((rc = gw_view_secret(c->g, secret)) < 0)
        return gw_fail(c, rc, "Redis is unavailable; no token was made");
    long long exp = (long long)(rg_wall_ms() / 1000) + ttl;
    char tok[GW_VIEW_TOKEN_MAX + 1];
    rc = gw_view_token_make(secret, sizeof secret, c->who->tenant, c->sid, exp, control, tok,
                            sizeof tok);
    OPENSSL_cleanse(secret, sizeof secret);
    if (rc < 0)
        return gw_fail(c, RG_EINTERNAL, "the token could not be made");
    char url[GW_VIEW_TOKEN_MAX + 96];
    snprintf(url, sizeof url, "/v1/sessions/%s/view?token=%s", c->sid, tok);
    c->result = cJSON_CreateObject();
    cJSON_AddStringToObject(c->result, "token", tok);
    cJSON_AddStringToObject(c->result, "url", url);
    cJSON_AddBoolToObject(c->result, "control", control);
    cJSON_AddNumberToObject(c->result, "expires_ms", (double)exp * 1000.0);
    return 0;
}

/* DevTools' bit for a button: left 1, right 2, middle 4. */
static int button_bit(const char *button)
{
    return !strcmp(button, "left") ? 1 : !strcmp(button, "right") ? 2 : !strcmp(button, "middle") ? 4
                                                                                                : 0;
}

/*
 * One Input.dispatchMouseEvent on the held page. Its buttons are those held
 * down once it happened, as the page's event.buttons reports them: a press
 * adds its button, a release takes it away, and the session's pointer
 * remembers them for the moves and releases to come.
 */
static int mouse(gw_cmd *c, const char *type, double x, double y, const char *button, int count,
                 int modifiers, double dx, double dy)
{
    int held = sess_pointer_of(c->s)->buttons;
    if (!strcmp(type, "mousePressed"))
        held |= button_bit(button);
    else if (!strcmp(type, "mouseReleased"))
        held &= ~button_bit(button);
    char q[360];
    snprintf(q, sizeof q,
             "{\"type\":\"%s\",\"x\":%.2f,\"y\":%.2f,\"button\":\"%s\",\"buttons\":%d,"
             "\"clickCount\":%d,\"modifiers\":%d,\"deltaX\":%.2f,\"deltaY\":%.2f}",
             type, x, y, button, held, count, modifiers, dx, dy);
    reg_page_handle h = sess_handle(c->s);
    int rc = cdp_call(h.conn, h.session, "Input.dispatchMouseEvent", q, c->timeout_ms, NULL);
    if (rc < 0)
        return gw_fail(c, rc, "the page did not take the %s (%s)", type, rg_err_code(rc));
    sess_pointer_of(c->s)->buttons = held;
    return 0;
}

/* The mouse moved to (x, y), dragging the buttons held down; the session remembers it. */
static int move_to(gw_cmd *c, int x, int y, int mods)
{
    sess_pointer *p = sess_pointer_of(c->s);
    const char *held = p->buttons & 1 ? "left" : p->buttons & 2 ? "right" : p->buttons & 4 ? "middle"
                                                                                          : "none";
    if (mouse(c, "mouseMoved", x, y, held, 0, mods, 0, 0) < 0)
        return -1;
    p->x = x;
    p->y = y;
    return 0;
}

/* drag: from (x, y) to (to_x, to_y) with the button down, in a few steps, as a hand does. */
static int drag(gw_cmd *c, int x, int y, int tx, int ty, const char *button, int mods)
{
    enum { STEPS = 5 };
    if (move_to(c, x, y, mods) < 0 || mouse(c, "mousePressed", x, y, button, 1, mods, 0, 0) < 0)
        return -1;
    for (int k = 1; k <= STEPS; k++)
        if (move_to(c, x + (tx - x) * k / STEPS, y + (ty - y) * k / STEPS, mods) < 0)
            return -1;
    return mouse(c, "mouseReleased", tx, ty, button, 1, mods, 0, 0);
}

/* DevTools' modifier bits: Alt 1, Control 2, Meta 4, Shift 8. */
static int modifier_bits(gw_cmd *c)
{
    const cJSON *mods = cJSON_GetObjectItemCaseSensitive(c->args, "modifiers");
    static const char *names[] = {"Alt", "Control", "Meta", "Shift"};
    int bits = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, mods)
    {
        int known = 0;
        for (int i = 0; i < 4; i++)
            if (!strcmp(e->valuestring, names[i])) {
                bits |= 1 << i;
                known = 1;
            }
        if (!known)
            return gw_fail(c, RG_EBADREQ, "args.modifiers takes Alt, Control, Meta and Shift");
    }
    return bits;
}

int op_input(gw_cmd *c)
{
    if (c->who->viewer && !c->who->control)
        return gw_fail(c, RG_EFORBIDDEN, "this view token is read-only: it cannot send input");
    const char *type = gw_arg_str(c, "type");
    int mods = modifier_bits(c);
    if (mods < 0)
        return c->rc;
    /* The mouse: click, move and drag need a place; wheel, down and up act
       where the mouse is unless given one. */
    int mouse_op = !strcmp(type, "click") || !strcmp(type, "move") || !strcmp(type, "drag") ||
                   !strcmp(type, "wheel") || !strcmp(type, "down") || !strcmp(type, "up");
    int placed = gw_has_arg(c, "x") || gw_has_arg(c, "y");
    int needs_place = !strcmp(type, "click") || !strcmp(type, "move") || !strcmp(type, "drag");
    sess_pointer *p = sess_pointer_of(c->s);
    int x = gw_arg_int(c, "x", p->x), y = gw_arg_int(c, "y", p->y);
    if (mouse_op && (needs_place || placed) &&
        (!gw_has_arg(c, "x") || !gw_has_arg(c, "y") || x < 0 || y < 0 || x > 100000 || y > 100000))
        return gw_fail(c, RG_EBADREQ, "args.x and args.y must be page coordinates from 0");
    const char *button = gw_arg_str(c, "button") ? gw_arg_str(c, "button") : "left";
    if (mouse_op && strcmp(button, "left") && strcmp(button, "right") && strcmp(button, "middle"))
        return gw_fail(c, RG_EBADREQ, "args.button must be left, right or middle");
    if (!strcmp(type, "click")) {
        int count = gw_arg_int(c, "count", 1);
        if (count < 1 || count > 3)
            return gw_fail(c, RG_EBADREQ, "args.count must be 1, 2 or 3");
        if (move_to(c, x, y, mods) < 0)
            return c->rc;
        /* a double click is two presses and releases, the second with clickCount 2 */
        for (int k = 1; k <= count; k++)
            if (mouse(c, "mousePressed", x, y, button, k, mods, 0, 0) < 0 ||
                mouse(c, "mouseReleased", x, y, button, k, mods, 0, 0) < 0)
                return c->rc;
    } else if (!strcmp(type, "move")) {
        if (move_to(c, x, y, mods) < 0)
            return c->rc;
    } else if (!strcmp(type, "drag")) {
        int tx = gw_arg_int(c, "to_x", -1), ty = gw_arg_int(c, "to_y", -1);
        if (tx < 0 || ty < 0 || tx > 100000 || ty > 100000)
            return gw_fail(c, RG_EBADREQ, "a drag needs args.to_x and args.to_y, page "
                                          "coordinates from 0");
        if (drag(c, x, y, tx, ty, button, mods) < 0)
            return c->rc;
        sess_note_scroll(c->s, 0, 0, 0);
    } else if (!strcmp(type, "down") || !strcmp(type, "up")) {
        if (placed && (x != p->x || y != p->y) && move_to(c, x, y, mods) < 0)
            return c->rc;
        const char *what = !strcmp(type, "down") ? "mousePressed" : "mouseReleased";
        if (mouse(c, what, x, y, button, 1, mods, 0, 0) < 0)
            return c->rc;
    } else if (!strcmp(type, "wheel")) {
        int dx = gw_arg_int(c, "dx", 0), dy = gw_arg_int(c, "dy", 0);
        if (dx < -100000 || dx > 100000 || dy < -100000 || dy > 100000)
            return gw_fail(c, RG_EBADREQ, "args.dx and args.dy must be within 100000");
        if (mouse(c, "mouseWheel", x, y, "none", 0, mods, dx, dy) < 0)
            return c->rc;
        sess_note_scroll(c->s, 0, 0, 0);
    } else if (!strcmp(type, "key") || !strcmp(type, "text")) {
        /* The keyboard as press and type know it (registry/keys.c), on the focused element. */
        reg_action a = {0};
        a.op = !strcmp(type, "key") ? REG_OP_PRESS : REG_OP_TYPE;
        a.key = gw_arg_str(c, "key");
        a.text = gw_arg_str(c, "text");
        a.timeout_ms = c->timeout_ms;
        if (a.op == REG_OP_PRESS && (!a.key || !*a.key))
            return gw_fail(c, RG_EBADREQ, "input of type key needs args.key");
        if (a.op == REG_OP_TYPE && (!a.text || !*a.text || strlen(a.text) > 64))
            return gw_fail(c, RG_EBADREQ, "input of type text needs args.text (1 to 64 bytes)");
        reg_action_result r = {0};
        int rc = reg_act(sess_registry(c->s), sess_handle(c->s), &a, &r, c->err, sizeof c->err);
        reg_action_result_free(&r);
        if (rc < 0)
            return c->rc = rc;
        sess_note_scroll(c->s, 0, 0, 0);
    } else {
        return gw_fail(c, RG_EBADREQ,
                       "args.type must be click, move, drag, down, up, wheel, key or text");
    }
    c->result = cJSON_CreateObject();
    cJSON_AddStringToObject(c->result, "type", type);
    return 0;
}
