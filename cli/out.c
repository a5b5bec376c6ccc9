/*
 * out.c - what refgate-cli prints: error lines, JSON documents, and each
 * command's friendly form of a reply (cli_print_reply). Writes only to the
 * FILE pointers it is given (and to a screenshot's output file), so the unit
 * test can capture everything.
 */
#define _GNU_SOURCE
#include "cli/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "wire/wire.h"

void cli_error(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(CLI_PROG ": ", f);
    vfprintf(f, fmt, ap);
    fputc('\n', f);
    va_end(ap);
}

int cli_print_json(FILE *f, const cJSON *v)
{
    rg_buf b;
    rg_buf_init(&b);
    int rc = wire_json_encode(v, &b);
    if (rc == 0) {
        rg_buf_puts(&b, "\n");
        rc = b.failed || fwrite(b.data, 1, b.len, f) != b.len ? -1 : 0;
    }
    if (rc)
        cli_error(stderr, "cannot print the reply as JSON");
    rg_buf_destroy(&b);
    return rc ? -1 : 0;
}

static const cJSON *item(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* "refgate-cli: code: message (retry after N ms) details: {...}" */
static void print_reply_error(FILE *errf, const cJSON *e)
{
    const cJSON *code = item(e, "code"), *msg = item(e, "message");
    const cJSON *retry = item(e, "retry_after_ms"), *details = item(e, "details");
    if (!cJSON_IsString(code)) {
        cli_error(errf, "the gateway answered ok: false without an error code");
        return;
    }
    rg_buf b;
    rg_buf_init(&b);
    rg_buf_printf(&b, "%s: %s", code->valuestring,
                  cJSON_IsString(msg) ? msg->valuestring : "(no message)");
    if (cJSON_IsNumber(retry))
        rg_buf_printf(&b, " (retry after %.0f ms)", retry->valuedouble);
    if (details && !cJSON_IsNull(details)) {
        rg_buf_puts(&b, " details: ");
        wire_json_encode(details, &b);
    }
    cli_error(errf, "%s", b.failed ? code->valuestring : b.data);
    rg_buf_destroy(&b);
}

/* A string raw, anything else (null included) as JSON; a newline after either. */
static int print_value(FILE *out, const cJSON *v)
{
    if (cJSON_IsString(v))
        return fprintf(out, "%s\n", v->valuestring) < 0 ? -1 : 0;
    if (!v) {
        fputs("null\n", out);
        return 0;
    }
    return cli_print_json(out, v);
}

static int print_string_field(FILE *out, FILE *errf, const cJSON *res, const char *key,
                              int required)
{
    const cJSON *v = item(res, key);
    if (cJSON_IsString(v))
        return fprintf(out, "%s\n", v->valuestring) < 0 ? -1 : 0;
    if (required)
        cli_error(errf, "the reply has no result.%s", key);
    return required ? -1 : 0;
}

static void print_number(FILE *out, double d)
{
    if (d > -1e15 && d < 1e15 && d == (double)(long long)d) /* no libm in this link */
        fprintf(out, "%.0f", d);
    else
        fprintf(out, "%g", d);
}

/* Text, or the elements as one JSON document. */
static int print_observe(const cli_call *c, FILE *out, FILE *errf, const cJSON *res)
{
    if (c->observe_elements) {
        const cJSON *el = item(res, "elements");
        if (!el) {
            cli_error(errf, "the reply has no result.elements");
            return -1;
        }
        return cli_print_json(out, el);
    }
    const cJSON *text = item(res, "text");
    if (!cJSON_IsString(text)) {
        cli_error(errf, "the reply has no result.text");
        return -1;
    }
    size_t n = strlen(text->valuestring);
    const cJSON *matches = item(res, "matches"); /* find */
    if (cJSON_IsNumber(matches) && matches->valuedouble == 0)
        fputs("no match\n", errf);
    fputs(text->valuestring, out);
    if (n && text->valuestring[n - 1] != '\n')
        fputc('\n', out);
    return 0;
}

static int write_all(const char *path, FILE *out, const unsigned char *p, size_t n, FILE *errf)
{
    int to_stdout = !strcmp(path, "-");
    FILE *f = to_stdout ? out : fopen(path, "wb");
    if (!f) {
        cli_error(errf, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    int bad = fwrite(p, 1, n, f) != n;
    if (to_stdout)
        bad |= fflush(f) != 0;
    else
        bad |= fclose(f) != 0;
    if (bad)
        cli_error(errf, "writing %s failed: %s", path, strerror(errno));
    return bad ? -1 : 0;
}

/* result.data (msgpack bin, or base64 text in a JSON reply) into the file. */
static int print_file(const cli_call *c, FILE *out, FILE *errf, const cJSON *res)
{
    const cJSON *data = item(res, "data");
    if (!cJSON_IsString(data)) {
        cli_error(errf, "the reply has no result.data");
        return -1;
    }
    size_t n = 0;
    unsigned char *bytes = rg_base64_decode(data->valuestring, strlen(data->valuestring), &n);
    if (!bytes) {
        cli_error(errf, "the reply's result.data is not binary data (base64)");
        return -1;
    }
    int rc = write_all(c->out_file, out, bytes, n, errf);
    free(bytes);
    return rc;
}

/* The console's messages, one line each (a message's own line breaks kept,
   as a terminal shows a stack), then the count to pass as --since. */
static int print_console(FILE *out, const cJSON *res)
{
    const cJSON *m;
    cJSON_ArrayForEach(m, item(res, "messages"))
    {
        const cJSON *t = item(m, "type"), *x = item(m, "text"), *u = item(m, "url"),
                    *l = item(m, "line");
        fprintf(out, "[%s] %s", cJSON_IsString(t) ? t->valuestring : "?",
                cJSON_IsString(x) ? x->valuestring : "");
        if (cJSON_IsString(u) && cJSON_IsNumber(l))
            fprintf(out, " (%s:%d)", u->valuestring, l->valueint);
        else if (cJSON_IsString(u))
            fprintf(out, " (%s)", u->valuestring);
        fputc('\n', out);
    }
    const cJSON *d = item(res, "dropped"), *n = item(res, "next");
    if (cJSON_IsNumber(d))
        fprintf(out, "(%.0f earlier messages are no longer kept)\n", d->valuedouble);
    if (cJSON_IsNumber(n))
        fprintf(out, "next %.0f\n", n->valuedouble);
    return ferror(out) ? -1 : 0;
}

/* The requests, one line each, as Playwright's MCP server lists them, then
   the count to pass as --since. */
static int print_network(FILE *out, const cJSON *res)
{
    const cJSON *q;
    cJSON_ArrayForEach(q, item(res, "requests"))
    {
        const cJSON *m = item(q, "method"), *u = item(q, "url"), *st = item(q, "status"),
                    *stt = item(q, "status_text"), *f = item(q, "failure"),
                    *b = item(q, "blocked");
        fprintf(out, "[%s] %s", cJSON_IsString(m) ? m->valuestring : "?",
                cJSON_IsString(u) ? u->valuestring : "");
        if (cJSON_IsString(f) && cJSON_IsString(b))
            fprintf(out, " => %s (the URL policy refused it: %s)", f->valuestring, b->valuestring);
        else if (cJSON_IsString(f))
            fprintf(out, " => %s", f->valuestring);
        else if (cJSON_IsNumber(st))
            fprintf(out, " => [%d]%s%s", st->valueint,
                    cJSON_IsString(stt) && *stt->valuestring ? " " : "",
                    cJSON_IsString(stt) ? stt->valuestring : "");
        else
            fputs(" => (pending)", out);
        fputc('\n', out);
    }
    const cJSON *d = item(res, "dropped"), *n = item(res, "next");
    if (cJSON_IsNumber(d))
        fprintf(out, "(%.0f earlier requests are no longer kept)\n", d->valuedouble);
    if (cJSON_IsNumber(n))
        fprintf(out, "next %.0f\n", n->valuedouble);
    return ferror(out) ? -1 : 0;
}

static int print_result(const cli_call *c, FILE *out, FILE *errf, const cJSON *res)
{
    const cJSON *v;
    switch (c->out) {
    case CLI_OUT_SESSION:
        return print_string_field(out, errf, res, "session", 1);
    case CLI_OUT_OBSERVE:
        return print_observe(c, out, errf, res);
    case CLI_OUT_REF:
        return print_string_field(out, errf, res, "ref", 0);
    case CLI_OUT_URL:
        return print_string_field(out, errf, res, "url", 0);
    case CLI_OUT_STATE:
        return print_string_field(out, errf, res, "state", 0);
    case CLI_OUT_CHECKED:
        v = item(res, "checked");
        if (cJSON_IsBool(v))
            fputs(cJSON_IsTrue(v) ? "true\n" : "false\n", out);
        return 0;
    case CLI_OUT_SELECTED:
        v = item(res, "selected");
        return v ? cli_print_json(out, v) : 0;
    case CLI_OUT_XY: {
        const cJSON *x = item(res, "x"), *y = item(res, "y");
        if (cJSON_IsNumber(x) && cJSON_IsNumber(y)) {
            print_number(out, x->valuedouble);
            fputc(' ', out);
            print_number(out, y->valuedouble);
            fputc('\n', out);
        }
        return 0;
    }
    case CLI_OUT_VALUE:
        return print_value(out, item(res, "value"));
    case CLI_OUT_RESULT:
        return res ? cli_print_json(out, res) : fputs("{}\n", out) < 0 ? -1 : 0;
    case CLI_OUT_FILE:
        return print_file(c, out, errf, res);
    case CLI_OUT_CONSOLE:
        return print_console(out, res);
    case CLI_OUT_NETWORK:
        return print_network(out, res);
    default:
        return 0;
    }
}

int cli_print_reply(const cli_call *c, int json, const cJSON *reply, FILE *out, FILE *errf)
{
    const cJSON *ok = item(reply, "ok");
    if (!cJSON_IsObject(reply) || !cJSON_IsBool(ok)) {
        cli_error(errf, "the gateway's reply is not a refgate reply (it has no \"ok\")");
        return CLI_EXIT_FAIL;
    }
    int whole = json || c->out == CLI_OUT_REPLY;
    if (whole && cli_print_json(out, reply) < 0)
        return CLI_EXIT_FAIL;
    if (cJSON_IsFalse(ok)) {
        print_reply_error(errf, item(reply, "error"));
        return CLI_EXIT_FAIL;
    }
    if (whole && c->out == CLI_OUT_FILE) /* -o was asked for: the file is written too */
        return print_file(c, out, errf, item(reply, "result")) < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
    if (whole)
        return CLI_EXIT_OK;
    /* the dialogs the command made the page open, on stderr: stdout stays the answer */
    const cJSON *d;
    cJSON_ArrayForEach(d, item(item(reply, "result"), "dialogs"))
    {
        const cJSON *t = item(d, "type"), *m = item(d, "message");
        fprintf(errf, "refgate-cli: %s dialog \"%s\" %s\n",
                cJSON_IsString(t) ? t->valuestring : "a",
                cJSON_IsString(m) ? m->valuestring : "",
                cJSON_IsTrue(item(d, "accepted")) ? "accepted" : "dismissed (--dialog accept accepts it)");
    }
    /* and the page's errors that no earlier reply named (refgate-cli console has them all) */
    cJSON_ArrayForEach(d, item(item(reply, "result"), "errors"))
    {
        const cJSON *t = item(d, "type"), *x = item(d, "text");
        fprintf(errf, "refgate-cli: page %s: %s\n", cJSON_IsString(t) ? t->valuestring : "error",
                cJSON_IsString(x) ? x->valuestring : "");
    }
    return print_result(c, out, errf, item(reply, "result")) < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
