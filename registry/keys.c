/*
 * keys.c - the keyboard, as a person uses it: press (a key with modifiers,
 * "Control+Shift+a") and type (a key per character on a US keyboard,
 * Input.insertText for the rest), through Input.dispatchKeyEvent on the
 * page's session. docs/protocol.md, "press" and "type".
 *
 * Threading: like reg_page, one thread at a time per page.
 */
#define _GNU_SOURCE
#include "registry/reg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_TIMEOUT_MS 10000

/* A key as DevTools wants it. */
struct key {
    const char *key, *code;
    int vk;
    const char *text;
};

static const struct key named_keys[] = {
    {"Enter", "Enter", 13, "\r"},      {"Tab", "Tab", 9, NULL},
    {"Backspace", "Backspace", 8, NULL}, {"Delete", "Delete", 46, NULL},
    {"Escape", "Escape", 27, NULL},    {"ArrowUp", "ArrowUp", 38, NULL},
    {"ArrowDown", "ArrowDown", 40, NULL}, {"ArrowLeft", "ArrowLeft", 37, NULL},
    {"ArrowRight", "ArrowRight", 39, NULL}, {"Home", "Home", 36, NULL},
    {"End", "End", 35, NULL},          {"PageUp", "PageUp", 33, NULL},
    {"PageDown", "PageDown", 34, NULL}, {"Space", "Space", 32, " "},
    {"Insert", "Insert", 45, NULL},    {"Shift", "ShiftLeft", 16, NULL},
    {"Control", "ControlLeft", 17, NULL}, {"Alt", "AltLeft", 18, NULL},
    {"Meta", "MetaLeft", 91, NULL},
};

/*
 * The US keyboard's key for a printable ASCII character c: its code
 * ("KeyA", "Digit1", "Minus") and Windows virtual key code; 0 when c has no
 * key there. A shifted symbol ('!', '{') is its base key's code, as a
 * keyboard sends it; the caller sends no Shift event, as Playwright does.
 */
static int ascii_key(char c, char code[16], int *vk)
{
    static const struct {
        char base, shifted;
        const char *code;
        int vk;
    } punct[] = {{'-', '_', "Minus", 189},       {'=', '+', "Equal", 187},
                 {'[', '{', "BracketLeft", 219}, {']', '}', "BracketRight", 221},
                 {'\\', '|', "Backslash", 220},  {';', ':', "Semicolon", 186},
                 {'\'', '"', "Quote", 222},      {',', '<', "Comma", 188},
                 {'.', '>', "Period", 190},      {'/', '?', "Slash", 191},
                 {'`', '~', "Backquote", 192}};
    static const char digit_shift[] = ")!@#$%^&*(";
    if (c >= 'a' && c <= 'z')
        c = (char)(c - 32);
    if (c >= 'A' && c <= 'Z') {
        snprintf(code, 16, "Key%c", c);
        *vk = c;
        return 1;
    }
    const char *d = c ? strchr(digit_shift, c) : NULL;
    if (d)
        c = (char)('0' + (d - digit_shift));
    if (c >= '0' && c <= '9') {
        snprintf(code, 16, "Digit%c", c);
        *vk = c;
        return 1;
    }
    if (c == ' ') {
        snprintf(code, 16, "Space");
        *vk = 32;
        return 1;
    }
    for (size_t i = 0; i < sizeof punct / sizeof punct[0]; i++)
        if (c == punct[i].base || c == punct[i].shifted) {
            snprintf(code, 16, "%s", punct[i].code);
            *vk = punct[i].vk;
            return 1;
        }
    return 0;
}

/*
 * One key event. wait: whether to wait for Chromium's answer. Events not
 * waited for are still delivered in order (one session's input goes through
 * one queue), and the answer to the last one, which is waited for, comes
 * only after everything before it was handled; so a press costs one round
 * trip, not two, and errors (a crashed page) still surface from the last.
 */
static int key_event(reg_page_handle h, const char *type, const char *key, const char *code,
                     int vk, const char *text, unsigned mods, int wait)
{
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_printf(&q, "{\"type\":\"%s\",\"modifiers\":%u,\"windowsVirtualKeyCode\":%d,\"key\":",
                  type, mods, vk);
    rg_buf_json_str(&q, key, strlen(key));
    rg_buf_puts(&q, ",\"code\":");
    rg_buf_json_str(&q, code, strlen(code));
    if (text) {
        rg_buf_puts(&q, ",\"text\":");
        rg_buf_json_str(&q, text, strlen(text));
    }
    rg_buf_puts(&q, "}");
    int rc = q.failed ? RG_ENOMEM
             : wait ? cdp_call(h.conn, h.session, "Input.dispatchKeyEvent", q.data, KEY_TIMEOUT_MS,
                               NULL)
                    : cdp_call_async(h.conn, h.session, "Input.dispatchKeyEvent", q.data,
                                     KEY_TIMEOUT_MS, NULL, NULL);
    rg_buf_destroy(&q);
    return rc;
}

/* "Control+Shift+a": modifiers and one key. Returns RG_EBADREQ for unknown names. */
int reg_press(reg_page_handle h, const char *spec, char *err, size_t errlen)
{
    char buf[64];
    if (!spec || !*spec || strlen(spec) >= sizeof buf) {
        snprintf(err, errlen, "press needs a key such as Enter or Control+a");
        return RG_EBADREQ;
    }
    snprintf(buf, sizeof buf, "%s", spec);
    unsigned mods = 0;
    char *keyname = buf;
    for (char *plus; (plus = strchr(keyname, '+')) && plus[1];) {
        *plus = '\0';
        if (!strcmp(keyname, "Control"))
            mods |= REG_MOD_CTRL;
        else if (!strcmp(keyname, "Shift"))
            mods |= REG_MOD_SHIFT;
        else if (!strcmp(keyname, "Alt"))
            mods |= REG_MOD_ALT;
        else if (!strcmp(keyname, "Meta") || !strcmp(keyname, "ControlOrMeta"))
            mods |= !strcmp(keyname, "Meta") ? REG_MOD_META : REG_MOD_CTRL;
        else {
            snprintf(err, errlen, "unknown modifier \"%s\" (Control, Shift, Alt, Meta)", keyname);
            return RG_EBADREQ;
        }
        keyname = plus + 1;
    }
    struct key k = {0};
    char code[16], text[8];
    for (size_t i = 0; i < sizeof named_keys / sizeof named_keys[0]; i++)
        if (!strcmp(keyname, named_keys[i].key))
            k = named_keys[i];
    if (!k.key && keyname[0] == 'F' && keyname[1] >= '1' && keyname[1] <= '9') {
        int f = atoi(keyname + 1);
        if (f >= 1 && f <= 12)
            k = (struct key){keyname, keyname, 111 + f, NULL};
    }
    if (!k.key && strlen(keyname) == 1 && keyname[0] > 32 && keyname[0] < 127) {
        char c = keyname[0];
        char up = (char)(c >= 'a' && c <= 'z' ? c - 32 : c);
        int vk = 0;
        if (!ascii_key(c, code, &vk))
            code[0] = '\0';
        snprintf(text, sizeof text, "%c", (mods & REG_MOD_SHIFT) && c >= 'a' && c <= 'z' ? up : c);
        k = (struct key){keyname, code, vk, text};
    }
    if (!k.key) {
        snprintf(err, errlen, "unknown key \"%s\"", keyname);
        return RG_EBADREQ;
    }
    /* With Control, Alt or Meta held a key produces no text (a shortcut). */
    const char *t = mods & (REG_MOD_CTRL | REG_MOD_ALT | REG_MOD_META) ? NULL : k.text;
    static const struct {
        unsigned bit;
        const char *key, *code;
        int vk;
    } modkeys[] = {{REG_MOD_CTRL, "Control", "ControlLeft", 17},
                   {REG_MOD_SHIFT, "Shift", "ShiftLeft", 16},
                   {REG_MOD_ALT, "Alt", "AltLeft", 18},
                   {REG_MOD_META, "Meta", "MetaLeft", 91}};
    int rc = 0;
    unsigned held = 0;
    for (size_t i = 0; rc == 0 && i < 4; i++)
        if (mods & modkeys[i].bit) {
            held |= modkeys[i].bit;
            rc = key_event(h, "rawKeyDown", modkeys[i].key, modkeys[i].code, modkeys[i].vk, NULL,
                           held, 0);
        }
    if (rc == 0)
        rc = key_event(h, t ? "keyDown" : "rawKeyDown", k.key, k.code, k.vk, t, mods, 0);
    if (rc == 0)
        rc = key_event(h, "keyUp", k.key, k.code, k.vk, NULL, mods, !mods);
    for (int i = 3; rc == 0 && i >= 0; i--)
        if (mods & modkeys[i].bit) {
            held &= ~modkeys[i].bit;
            /* the last modifier released is the event waited for */
            rc = key_event(h, "keyUp", modkeys[i].key, modkeys[i].code, modkeys[i].vk, NULL, held,
                           !held);
        }
    return rc;
}

static int insert_text(reg_page_handle h, const char *text)
{
    rg_buf q;
    rg_buf_init(&q);
    rg_buf_puts(&q, "{\"text\":");
    rg_buf_json_str(&q, text, strlen(text));
    rg_buf_puts(&q, "}");
    int rc = q.failed ? RG_ENOMEM
                      : cdp_call(h.conn, h.session, "Input.insertText", q.data, KEY_TIMEOUT_MS,
                                 NULL);
    rg_buf_destroy(&q);
    return rc;
}

/*
 * One character as a person types it: a character with a key on the US
 * keyboard is that key pressed and released (keydown, keypress, the input,
 * keyup); a line break is Enter and a tab is Tab. Any other code point
 * (accents, other scripts, emoji) has no key: it is inserted as an input
 * method would, with beforeinput and input but no key events.
 */
static int type_char(reg_page_handle h, const char *one)
{
    char code[16], key[2] = {one[0], 0};
    int vk = 0;
    const char *text = key;
    if (one[1] == '\0' && (one[0] == '\n' || one[0] == '\r')) {
        snprintf(code, sizeof code, "Enter");
        snprintf(key, sizeof key, "%s", "");
        vk = 13;
        text = "\r";
    } else if (one[1] == '\0' && one[0] == '\t') {
        snprintf(code, sizeof code, "Tab");
        vk = 9;
        text = NULL;
    } else if (one[1] != '\0' || !ascii_key(one[0], code, &vk)) {
        return insert_text(h, one);
    }
    const char *name = vk == 13 ? "Enter" : vk == 9 ? "Tab" : key;
    int rc = key_event(h, text ? "keyDown" : "rawKeyDown", name, code, vk, text, 0, 0);
    if (rc == 0)
        rc = key_event(h, "keyUp", name, code, vk, NULL, 0, 1);
    return rc;
}

/* type: one code point at a time, delay_ms between them, until the deadline. */
int reg_type_text(reg_page_handle h, const char *text, int delay_ms, int64_t deadline,
                  char *err, size_t errlen)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t typed = 0;
    while (*p) {
        if (rg_now_ms() >= deadline) {
            snprintf(err, errlen, "typed %zu characters before timeout_ms ran out", typed);
            return RG_ETIMEOUT;
        }
        size_t n = *p < 0x80 ? 1 : *p < 0xE0 ? 2 : *p < 0xF0 ? 3 : 4;
        char one[8] = {0};
        for (size_t i = 0; i < n && p[i]; i++)
            one[i] = (char)p[i];
        int rc = type_char(h, one);
        if (rc < 0)
            return rc;
        typed++;
        p += strlen(one);
        if (*p && delay_ms > 0)
            rg_sleep_ms(delay_ms);
    }
    return 0;
}
