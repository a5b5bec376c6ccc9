/*
 * test_files.c - files as a user meets them, through nginx, one worker,
 * real Redis and Chromium: `upload` puts bytes into an <input type=file>
 * whose page reads them back with FileReader (and shows name, size and first
 * bytes, which `read` and `observe` see); the per-file and per-session
 * limits (413, nothing changed), bad names and wrong targets (400, nothing
 * changed); the session's scratch directory (0700, gone after park and
 * close); downloads refused for a tenant without --allow-downloads and
 * reported, allowed into the session's quota for one with it, `downloads`,
 * `download.get` returning the exact bytes, and the `download` event on the
 * WebSocket, and the cap on the downloads a session lists.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wire/wire.h"
#include "tenant/tenant.h"
#include "tests/support/expect.h"
#include "tests/support/fixture.h"
#include "tests/support/net.h"

#define FILE_MAX 65536
#define SESSION_MAX 100000
#define DOWNLOAD_MAX 150000
#define MID_BYTES 100000
#define BIG_BYTES 200000

static fx_stack st;
static char docroot[96];
static char dl_auth[256]; /* "Authorization: Bearer ...\r\n" of a tenant allowed to download */

static const char page_html[] =
    "<!doctype html><html><head><title>Files</title></head><body>\n"
    "<h1>Files</h1>\n"
    "<label for=one>Document</label><input type=file id=one>\n"
    "<label for=many>Attachments</label><input type=file id=many multiple>\n"
    "<label for=off>Locked</label><input type=file id=off disabled>\n"
    "<button id=send>Send</button>\n"
    "<p id=out>none</p>\n"
    "<p><a id=small href=/small.txt download>Get small</a>\n"
    "<a id=mid href=/mid.bin download>Get mid</a>\n"
    "<a id=big href=/big.bin download>Get big</a></p>\n"
    "<script>\n"
    "function hex(b){var s=[];for(var i=0;i<b.length&&i<6;i++)"
    "s.push((b[i]<16?'0':'')+b[i].toString(16));return s.join('')}\n"
    "function show(input){var fs=input.files,parts=[],left=fs.length;"
    "if(!left){out.textContent='none';return}"
    "Array.prototype.forEach.call(fs,function(f,i){var r=new FileReader();"
    "r.onload=function(){parts[i]=f.name+' '+f.size+' '+hex(new Uint8Array(r.result));"
    "if(--left===0)out.textContent=input.id+': '+parts.join('; ')};"
    "r.readAsArrayBuffer(f)})}\n"
    "one.addEventListener('change',function(){show(one)});\n"
    "many.addEventListener('change',function(){show(many)});\n"
    "</script></body></html>\n";

/* ---- helpers ---- */

static void write_doc(const char *name, const void *data, size_t len)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", docroot, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "test_files: cannot write %s\n", path);
        exit(1);
    }
}

/* The bytes of the fixture file mid.bin or big.bin: n bytes of a simple pattern. */
static unsigned char *pattern(size_t n, unsigned seed)
{
    unsigned char *b = malloc(n);
    uint32_t x = seed;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        b[i] = (unsigned char)(x >> 16);
    }
    return b;
}

/* One command in msgpack with the header lines auth (Authorization); the reply and status. */
static cJSON *mp_cmd(const char *auth, const char *sid, const cJSON *m, int *status)
{
    rg_buf b;
    rg_buf_init(&b);
    assert_int_equal(wire_mp_encode(m, &b), 0);
    char h[400], path[96];
    snprintf(h, sizeof h, "%sContent-Type: application/msgpack\r\n", auth);
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    http_resp r;
    assert_int_equal(http_request(stack_port(st.st), "POST", path, h, b.data, b.len, &r), 0);
    rg_buf_destroy(&b);
    *status = r.status;
    cJSON *v = NULL;
    char err[128];
    if (wire_mp_decode(r.body.data, r.body.len, &v, err, sizeof err) < 0)
        fail_msg("not msgpack (%d): %s", r.status, err);
    rg_buf_destroy(&r.body);
    return v;
}

/* A JSON command as auth; the reply and status. */
static cJSON *json_cmd(const char *auth, const char *sid, const char *body, int *status)
{
    char h[400], path[96];
    snprintf(h, sizeof h, "%sContent-Type: application/json\r\n", auth);
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    return expect_json(stack_port(st.st), "POST", path, h, body, status);
}

static cJSON *ok_json(const char *auth, const char *sid, const char *body)
{
    int status;
    cJSON *r = json_cmd(auth, sid, body, &status);
    if (status != 200 || !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok")))
        fail_msg("%s -> %d %s", body, status, cJSON_PrintUnformatted(r));
    return r;
}

static const cJSON *result(const cJSON *reply)
{
    return cJSON_GetObjectItemCaseSensitive(reply, "result");
}

/* A session of auth's tenant on files.html. */
static void create(const char *auth, char *sid)
{
    char body[256], url[160], h[400];
    httpd_url(st.pages, "/files.html", url, sizeof url);
    snprintf(body, sizeof body, "{\"args\":{\"url\":\"%s\"}}", url);
    snprintf(h, sizeof h, "%sContent-Type: application/json\r\n", auth);
    int status;
    cJSON *r = expect_json(stack_port(st.st), "POST", "/v1/sessions", h, body, &status);
    if (status != 200)
        fail_msg("create: %d %s", status, cJSON_PrintUnformatted(r));
    snprintf(sid, 64, "%s", reply_str(r, "session"));
    cJSON_Delete(r);
}

static void close_session(const char *auth, const char *sid)
{
    cJSON_Delete(ok_json(auth, sid, "{\"op\":\"session.close\"}"));
}

/* The text of #out as the page shows it. */
static void out_text(const char *auth, const char *sid, char *out, size_t len)
{
    cJSON *r = ok_json(auth, sid, "{\"op\":\"read\",\"args\":{\"target\":\"css:#out\"}}");
    snprintf(out, len, "%s", reply_str(r, "value"));
    cJSON_Delete(r);
}

/* Waits until #out shows text (the page's FileReader is asynchronous). */
static void wait_out(const char *auth, const char *sid, const char *text)
{
    char body[256];
    snprintf(body, sizeof body, "{\"op\":\"wait\",\"args\":{\"text\":\"%s\",\"timeout_ms\":10000}}",
             text);
    int status;
    cJSON *r = json_cmd(auth, sid, body, &status);
    if (status != 200) {
        char now[256];
        out_text(auth, sid, now, sizeof now);
        fail_msg("the page never showed \"%s\" (it shows \"%s\")", text, now);
    }
    cJSON_Delete(r);
}

/* An upload map: target and files as (name, bytes, len) triples. */
static cJSON *upload_cmd(const char *target, int n, const char *const *names,
                         const unsigned char *const *data, const size_t *lens)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "op", "upload");
    cJSON *a = cJSON_AddObjectToObject(m, "args");
    cJSON_AddStringToObject(a, "target", target);
    cJSON *files = cJSON_AddArrayToObject(a, "files");
    for (int i = 0; i < n; i++) {
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "name", names[i]);
        cJSON_AddItemToObject(f, "data", wire_bin_new(data[i], lens[i]));
        cJSON_AddStringToObject(f, "mime", "application/octet-stream");
        cJSON_AddItemToArray(files, f);
    }
    return m;
}

/* Uploads one file in msgpack; the reply's status and code into *status and code. */
static cJSON *upload_one(const char *sid, const char *target, const char *name,
                         const unsigned char *data, size_t len, int *status)
{
    const char *names[] = {name};
    const unsigned char *datas[] = {data};
    size_t lens[] = {len};
    cJSON *m = upload_cmd(target, 1, names, datas, lens);
    cJSON *r = mp_cmd(st.auth[0], sid, m, status);
    cJSON_Delete(m);
    return r;
}

/* The scratch directory of sid under the worker's run directory, or "" when there is none. */
static void scratch_dir(const char *sid, char *out, size_t len)
{
    char pat[256];
    snprintf(pat, sizeof pat, "%s/worker-w1/files-*/%s", stack_dir(st.st), sid);
    glob_t g;
    out[0] = '\0';
    if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc == 1)
        snprintf(out, len, "%s", g.gl_pathv[0]);
    globfree(&g);
}

/* Regular files below dir, counted (0 when dir is gone). */
static int files_below(const char *dir)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "find '%s' -type f 2>/dev/null | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (!p || fscanf(p, "%d", &n) != 1)
        n = -1;
    if (p)
        pclose(p);
    return n;
}

static void expect_error(const cJSON *r, int status, int want_status, const char *want_code,
                         const char *want_in_message)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(r, "error");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
    if (status != want_status || strcmp(reply_code(r), want_code) ||
        (want_in_message && (!cJSON_IsString(msg) || !strstr(msg->valuestring, want_in_message))))
        fail_msg("wanted %d %s (\"%s\"), got %d %s", want_status, want_code,
                 want_in_message ? want_in_message : "", status, cJSON_PrintUnformatted(r));
}

/* ---- uploads ---- */

static void test_upload_page_reads_the_bytes(void **state)
{
    (void)state;
    char sid[64];
    create(st.auth[0], sid);
    /* msgpack bin with a NUL and a 0xff: the page's FileReader sees exactly these bytes. */
    const unsigned char bytes[] = {'h', 'i', 0x00, 0xff, 0x10, 'z', 'q'};
    int status;
    cJSON *r = upload_one(sid, "label:Document", "report 1.bin", bytes, sizeof bytes, &status);
    if (status != 200)
        fail_msg("upload: %d %s", status, cJSON_PrintUnformatted(r));
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(result(r), "files")->valueint, 1);
    cJSON_Delete(r);
    wait_out(st.auth[0], sid, "one: report 1.bin 7 686900ff107a");
    /* The outline shows it too: an agent reads the page's answer from observe. */
    r = ok_json(st.auth[0], sid, "{\"op\":\"observe\"}");
    const char *outline = cJSON_GetObjectItemCaseSensitive(result(r), "text")->valuestring;
    if (!strstr(outline, "one: report 1.bin 7 686900ff107a"))
        fail_msg("not in the outline:\n%s", outline);
    cJSON_Delete(r);
    /* JSON has no bin: data is base64 there. Two files to the multiple input. */
    r = ok_json(st.auth[0], sid,
                "{\"op\":\"upload\",\"args\":{\"target\":\"css:#many\",\"files\":["
                "{\"name\":\"a.txt\",\"data\":\"aGVsbG8=\",\"mime\":\"text/plain\"},"
                "{\"name\":\"\\u00e9t\\u00e9.csv\",\"data\":\"\"}]}}");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(result(r), "files")->valueint, 2);
    cJSON_Delete(r);
    wait_out(st.auth[0], sid, "many: a.txt 5 68656c6c6f; \xc3\xa9t\xc3\xa9.csv 0 ");
    close_session(st.auth[0], sid);
}

static void test_upload_refusals_change_nothing(void **state)
{
    (void)state;
    char sid[64], text[256], dir[256];
    create(st.auth[0], sid);
    unsigned char *big = pattern(FILE_MAX + 1, 7);
    int status;
    /* One byte over the per-file limit: 413, nothing reaches the page or the disk. */
    cJSON *r = upload_one(sid, "css:#one", "big.bin", big, FILE_MAX + 1, &status);
    expect_error(r, status, 413, "payload_too_large", "REFGATE_UPLOAD_FILE_MAX");
    cJSON_Delete(r);
    out_text(st.auth[0], sid, text, sizeof text);
    assert_string_equal(text, "none");
    scratch_dir(sid, dir, sizeof dir);
    assert_int_equal(dir[0] ? files_below(dir) : 0, 0);
    /* Under it, accepted; then the session's total would pass its limit: 413. */
    r = upload_one(sid, "css:#one", "first.bin", big, 60000, &status);
    assert_int_equal(status, 200);
    cJSON_Delete(r);
    wait_out(st.auth[0], sid, "one: first.bin 60000");
    r = upload_one(sid, "css:#one", "second.bin", big, SESSION_MAX - 60000 + 1, &status);
    expect_error(r, status, 413, "payload_too_large", "REFGATE_UPLOAD_SESSION_MAX");
    cJSON_Delete(r);
    out_text(st.auth[0], sid, text, sizeof text);
    assert_non_null(strstr(text, "one: first.bin 60000"));
    /* Names that are paths or hold control characters: bad_request. */
    static const char *bad_names[] = {"../x", "a/b", "..", ".", "a\\b", "tab\there", "bell\a", ""};
    for (size_t i = 0; i < sizeof bad_names / sizeof *bad_names; i++) {
        r = upload_one(sid, "css:#one", bad_names[i], (const unsigned char *)"x", 1, &status);
        expect_error(r, status, 400, "bad_request", NULL);
        cJSON_Delete(r);
    }
    /* A NUL inside a name (msgpack can carry one; the decoder refuses it). */
    static const unsigned char nul_name[] = {
        0x82, 0xa2, 'o',  'p',  0xa6, 'u',  'p', 'l', 'o', 'a',  'd',  0xa4, 'a', 'r', 'g',
        's',  0x82, 0xa6, 't',  'a',  'r',  'g', 'e', 't', 0xa8, 'c',  's',  's', ':', '#',
        'o',  'n',  'e',  0xa5, 'f',  'i',  'l', 'e', 's', 0x91, 0x82, 0xa4, 'n', 'a', 'm',
        'e',  0xa3, 'a',  0x00, 'b',  0xa4, 'd', 'a', 't', 'a',  0xc4, 0x01, 'x'};
    char h[300], path[96];
    snprintf(h, sizeof h, "%sContent-Type: application/msgpack\r\n", st.auth[0]);
    snprintf(path, sizeof path, "/v1/sessions/%s", sid);
    http_resp hr;
    assert_int_equal(
        http_request(stack_port(st.st), "POST", path, h, nul_name, sizeof nul_name, &hr), 0);
    assert_int_equal(hr.status, 400);
    rg_buf_destroy(&hr.body);
    /* Not a file input, two files for a single input, a disabled one, not base64. */
    r = upload_one(sid, "css:#send", "x.txt", (const unsigned char *)"x", 1, &status);
    expect_error(r, status, 400, "bad_request", "not an <input type=file>");
    cJSON_Delete(r);
    r = json_cmd(st.auth[0], sid,
                 "{\"op\":\"upload\",\"args\":{\"target\":\"css:#one\",\"files\":["
                 "{\"name\":\"a\",\"data\":\"YQ==\"},{\"name\":\"b\",\"data\":\"Yg==\"}]}}",
                 &status);
    expect_error(r, status, 400, "bad_request", "multiple");
    cJSON_Delete(r);
    r = json_cmd(st.auth[0], sid,
                 "{\"op\":\"upload\",\"args\":{\"target\":\"css:#many\",\"files\":["
                 "{\"name\":\"a\",\"data\":\"YQ==\"},{\"name\":\"a\",\"data\":\"Yg==\"}]}}",
                 &status);
    expect_error(r, status, 400, "bad_request", "twice");
    cJSON_Delete(r);
    r = upload_one(sid, "css:#off", "x.txt", (const unsigned char *)"x", 1, &status);
    expect_error(r, status, 422, "not_actionable", "disabled");
    cJSON_Delete(r);
    r = json_cmd(st.auth[0], sid,
                 "{\"op\":\"upload\",\"args\":{\"target\":\"css:#one\",\"files\":["
                 "{\"name\":\"a\",\"data\":\"not base64!\"}]}}",
                 &status);
    expect_error(r, status, 400, "bad_request", "base64");
    cJSON_Delete(r);
    r = json_cmd(st.auth[0], sid,
                 "{\"op\":\"upload\",\"args\":{\"target\":\"css:#one\",\"files\":[]}}", &status);
    expect_error(r, status, 400, "bad_request", NULL);
    cJSON_Delete(r);
    /* Another tenant's session id is not_found for the file ops. */
    static const char *theirs[] = {
        "{\"op\":\"upload\",\"args\":{\"target\":\"css:#one\",\"files\":[{\"name\":\"a\","
        "\"data\":\"YQ==\"}]}}",
        "{\"op\":\"downloads\"}", "{\"op\":\"download.get\",\"args\":{\"id\":\"abc\"}}"};
    for (size_t i = 0; i < sizeof theirs / sizeof *theirs; i++) {
        r = json_cmd(st.auth[1], sid, theirs[i], &status);
        expect_error(r, status, 404, "not_found", NULL);
        cJSON_Delete(r);
    }
    /* After all that, the page still holds the first file and the disk only it. */
    out_text(st.auth[0], sid, text, sizeof text);
    assert_non_null(strstr(text, "one: first.bin 60000"));
    scratch_dir(sid, dir, sizeof dir);
    assert_int_equal(files_below(dir), 1);
    free(big);
    close_session(st.auth[0], sid);
}

static void test_scratch_dir_private_and_removed(void **state)
{
    (void)state;
    char sid[64], dir[256], parent[256];
    create(st.auth[0], sid);
    int status;
    cJSON *r = upload_one(sid, "css:#one", "kept.txt", (const unsigned char *)"abc", 3, &status);
    assert_int_equal(status, 200);
    cJSON_Delete(r);
    scratch_dir(sid, dir, sizeof dir);
    assert_true(dir[0]);
    struct stat sb;
    assert_int_equal(stat(dir, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);
    snprintf(parent, sizeof parent, "%s", dir);
    *strrchr(parent, '/') = '\0';
    assert_int_equal(stat(parent, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);
    assert_int_equal(files_below(dir), 1);
    /* Park: the context and its files go. */
    cJSON_Delete(ok_json(st.auth[0], sid, "{\"op\":\"session.park\"}"));
    assert_int_equal(stat(dir, &sb), -1);
    /* Restored by the next command, without the files (the page is new). */
    char text[256];
    out_text(st.auth[0], sid, text, sizeof text);
    assert_string_equal(text, "none");
    r = upload_one(sid, "css:#one", "again.txt", (const unsigned char *)"abcd", 4, &status);
    assert_int_equal(status, 200);
    cJSON_Delete(r);
    wait_out(st.auth[0], sid, "one: again.txt 4");
    assert_int_equal(stat(dir, &sb), 0);
    close_session(st.auth[0], sid);
    assert_int_equal(stat(dir, &sb), -1);
}

/* ---- refgate-cli and MCP ---- */

static cJSON *downloads_settled(const char *auth, const char *sid, int want);

/* BUILD/refgate-cli, beside this test's BUILD/tests/. */
static void find_cli(char *cli, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", cli, len - 32);
    assert_true(n > 0);
    cli[n] = '\0';
    for (int i = 0; i < 2; i++)
        *strrchr(cli, '/') = '\0';
    strcat(cli, "/refgate-cli");
}

/* Runs a shell command; its standard output (caller frees) and exit status. */
static char *run_cmd(const char *cmd, int *status)
{
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    rg_buf b;
    rg_buf_init(&b);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, p)) > 0)
        rg_buf_append(&b, chunk, n);
    int ws = pclose(p);
    *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    rg_buf_append(&b, "", 1);
    return rg_buf_steal(&b);
}

static void test_cli_upload_and_download(void **state)
{
    (void)state;
    char cli[512], sid[64], local[128], cmd[1600], env[400];
    find_cli(cli, sizeof cli);
    create(dl_auth, sid);
    snprintf(local, sizeof local, "%s/local-\xc3\xa9.bin", docroot);
    unsigned char *bytes = pattern(3000, 11);
    write_doc("local-\xc3\xa9.bin", bytes, 3000);
    const char *key = strstr(dl_auth, "Bearer ") + 7;
    snprintf(env, sizeof env, "REFGATE_URL=http://127.0.0.1:%d REFGATE_KEY=%.*s REFGATE_SESSION=%s",
             stack_port(st.st), (int)strcspn(key, "\r"), key, sid);
    /* upload reads the local file and sends its bytes under its own name. */
    snprintf(cmd, sizeof cmd, "%s '%s' upload css:#one '%s' 2>&1", env, cli, local);
    int status;
    char *out = run_cmd(cmd, &status);
    if (status != 0)
        fail_msg("%s -> %d: %s", cmd, status, out);
    free(out);
    char want[96];
    snprintf(want, sizeof want, "one: local-\xc3\xa9.bin 3000 %02x%02x%02x%02x%02x%02x", bytes[0],
             bytes[1], bytes[2], bytes[3], bytes[4], bytes[5]);
    wait_out(dl_auth, sid, want);
    /* A file that is not there: a clear error, nothing sent. */
    snprintf(cmd, sizeof cmd, "%s '%s' upload css:#one /nonexistent/x.bin 2>&1", env, cli);
    out = run_cmd(cmd, &status);
    assert_int_not_equal(status, 0);
    assert_non_null(strstr(out, "/nonexistent/x.bin"));
    free(out);
    /* download writes the file's bytes, listed by downloads. */
    cJSON_Delete(ok_json(dl_auth, sid, "{\"op\":\"click\",\"args\":{\"target\":\"css:#small\"}}"));
    cJSON *r = downloads_settled(dl_auth, sid, 1);
    const cJSON *d =
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(result(r), "downloads"), 0);
    char saved[160];
    snprintf(saved, sizeof saved, "%s/saved.txt", docroot);
    snprintf(cmd, sizeof cmd, "%s '%s' download '%s' -o '%s' 2>&1", env, cli, json_str(d, "id"),
             saved);
    cJSON_Delete(r);
    out = run_cmd(cmd, &status);
    if (status != 0)
        fail_msg("%s -> %d: %s", cmd, status, out);
    free(out);
    size_t n = 0;
    char *got = support_slurp(saved, &n);
    assert_non_null(got);
    assert_int_equal(n, 17);
    assert_memory_equal(got, "small \x00\x01\x02\xff file\n", 17);
    free(got);
    /* browser_file_upload on stdio: Playwright's paths, read here. */
    char lines[1400];
    snprintf(
        lines, sizeof lines,
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
        "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
        "\"browser_file_upload\",\"arguments\":{\"paths\":[\"%s\"],\"target\":\"css:#many\"}}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
        "\"browser_wait_for\",\"arguments\":{\"text\":\"many: local-\xc3\xa9.bin 3000\"}}}\n",
        local);
    char lines_path[160];
    snprintf(lines_path, sizeof lines_path, "%s/mcp-lines.txt", docroot);
    write_doc("mcp-lines.txt", lines, strlen(lines));
    snprintf(cmd, sizeof cmd, "%s '%s' mcp --session %s --on-exit close < '%s' 2>&1", env, cli, sid,
             lines_path);
    out = run_cmd(cmd, &status);
    assert_int_equal(status, 0);
    /* Three answers, none an error: the upload, then the page's own text. */
    if (strstr(out, "\"isError\":true") || !strstr(out, "\"id\":3") ||
        !strstr(out, "Uploaded 1 file."))
        fail_msg("MCP on stdio answered:\n%s", out);
    free(out);
    free(bytes);
}


/* A PDF of the page, from a reply's base64 data; its length in *n. */
static unsigned char *pdf_of(const cJSON *reply, size_t *n)
{
    const char *b64 = json_str(result(reply), "data");
    assert_non_null(b64);
    unsigned char *pdf = rg_base64_decode(b64, strlen(b64), n);
    assert_non_null(pdf);
    assert_true(*n > 500);
    if (memcmp(pdf, "%PDF-", 5) || !memmem(pdf + *n - 32, 32, "%%EOF", 5))
        fail_msg("not a whole PDF: %zu bytes starting %.8s", *n, (const char *)pdf);
    assert_int_equal((size_t)cJSON_GetNumberValue(
                         cJSON_GetObjectItemCaseSensitive(result(reply), "bytes")),
                     *n);
    return pdf;
}

/*
 * The page as a PDF, as the browser prints it: a whole document on the paper
 * and in the orientation asked for, also through refgate-cli; a bad argument
 * is refused.
 */
static void test_pdf_of_the_page(void **state)
{
    (void)state;
    char sid[64];
    create(st.auth[0], sid);
    size_t n = 0;
    cJSON *r = ok_json(st.auth[0], sid, "{\"op\":\"pdf\"}");
    unsigned char *pdf = pdf_of(r, &n);
    /* letter, upright: 8.5 x 11 inches, in points */
    assert_non_null(memmem(pdf, n, "/MediaBox [0 0 612 792]", 23));
    free(pdf);
    cJSON_Delete(r);
    r = ok_json(st.auth[0], sid, "{\"op\":\"pdf\",\"args\":{\"landscape\":true,\"paper\":\"a4\"}}");
    pdf = pdf_of(r, &n);
    /* a4 on its side: 297 x 210 mm */
    assert_non_null(memmem(pdf, n, "/MediaBox [0 0 841.9", 20));
    assert_null(memmem(pdf, n, "/MediaBox [0 0 612 792]", 23));
    free(pdf);
    cJSON_Delete(r);
    int status;
    r = json_cmd(st.auth[0], sid, "{\"op\":\"pdf\",\"args\":{\"paper\":\"a5\"}}", &status);
    assert_int_equal(status, 400);
    assert_string_equal(reply_code(r), "bad_request");
    cJSON_Delete(r);
    r = json_cmd(st.auth[0], sid, "{\"op\":\"pdf\",\"args\":{\"landscape\":\"yes\"}}", &status);
    assert_int_equal(status, 400);
    cJSON_Delete(r);
    /* refgate-cli pdf -o FILE */
    char cli[512], cmd[1200], saved[160];
    find_cli(cli, sizeof cli);
    const char *key = strstr(st.auth[0], "Bearer ") + 7;
    snprintf(saved, sizeof saved, "%s/page.pdf", docroot);
    snprintf(cmd, sizeof cmd,
             "REFGATE_URL=http://127.0.0.1:%d REFGATE_KEY=%.*s '%s' -s %s pdf -o '%s' 2>&1",
             stack_port(st.st), (int)strcspn(key, "\r"), key, cli, sid, saved);
    char *out = run_cmd(cmd, &status);
    if (status != 0)
        fail_msg("%s -> %d: %s", cmd, status, out);
    free(out);
    char *got = support_slurp(saved, &n);
    assert_non_null(got);
    assert_true(n > 500 && !memcmp(got, "%PDF-", 5));
    free(got);
    /* timeout_ms bounds the printing; a PDF that is late is refused, and the next is whole */
    r = json_cmd(st.auth[0], sid, "{\"op\":\"pdf\",\"args\":{\"timeout_ms\":1}}", &status);
    const char *why = json_str(cJSON_GetObjectItemCaseSensitive(r, "error"), "message");
    if (status != 504 || strcmp(reply_code(r), "timeout") || !why || !strstr(why, "within 1 ms"))
        fail_msg("a PDF past its timeout_ms: %d %s", status, cJSON_PrintUnformatted(r));
    cJSON_Delete(r);
    r = ok_json(st.auth[0], sid, "{\"op\":\"pdf\"}");
    free(pdf_of(r, &n));
    cJSON_Delete(r);
    /* a page whose PDF passes the 32 MiB cap (three canvases of random pixels, which no
       compression shrinks): refused, and the session goes on */
    static const char noise[] =
        "<!doctype html><title>Noise</title><body style=margin:0>"
        "<canvas width=2000 height=2000></canvas><canvas width=2000 height=2000></canvas>"
        "<canvas width=2000 height=2000></canvas><script>"
        "for (const c of document.querySelectorAll('canvas')) {"
        " const x = c.getContext('2d'), d = x.createImageData(2000, 2000);"
        " for (let i = 0; i < d.data.length; i += 65536)"
        "  crypto.getRandomValues(d.data.subarray(i, i + 65536));"
        " for (let i = 3; i < d.data.length; i += 4) d.data[i] = 255;"
        " x.putImageData(d, 0, 0); }"
        "document.title = 'Noise ready';</script>";
    write_doc("noise.html", noise, strlen(noise));
    char url[200], body[400];
    httpd_url(st.pages, "/noise.html", url, sizeof url);
    snprintf(body, sizeof body, "{\"op\":\"navigate\",\"args\":{\"url\":\"%s\"}}", url);
    cJSON_Delete(ok_json(st.auth[0], sid, body));
    r = json_cmd(st.auth[0], sid, "{\"op\":\"pdf\"}", &status);
    why = json_str(cJSON_GetObjectItemCaseSensitive(r, "error"), "message");
    if (status != 413 || strcmp(reply_code(r), "payload_too_large") || !why ||
        !strstr(why, "over 32 MiB"))
        fail_msg("a PDF over the cap: %d %s", status, cJSON_PrintUnformatted(r));
    cJSON_Delete(r);
    r = ok_json(st.auth[0], sid, "{\"op\":\"observe\"}");
    cJSON_Delete(r);
    close_session(st.auth[0], sid);
}

static void test_mcp_over_http_takes_bytes_not_paths(void **state)
{
    (void)state;
    char sid[64], h[400];
    create(st.auth[0], sid);
    snprintf(h, sizeof h, "%sContent-Type: application/json\r\nMcp-Session-Id: %s\r\n", st.auth[0],
             sid);
    /* Paths are files on the agent's machine: refused with what to do instead. */
    const char *paths =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{"
        "\"name\":\"browser_file_upload\",\"arguments\":{\"paths\":[\"/etc/hostname\"]}}}";
    int status;
    cJSON *r = expect_json(stack_port(st.st), "POST", "/v1/mcp", h, paths, &status);
    assert_int_equal(status, 200);
    char *txt = cJSON_PrintUnformatted(r);
    if (!strstr(txt, "\"isError\":true") || !strstr(txt, "cannot read over HTTP"))
        fail_msg("paths over HTTP: %s", txt);
    free(txt);
    cJSON_Delete(r);
    char text[256];
    out_text(st.auth[0], sid, text, sizeof text);
    assert_string_equal(text, "none");
    /* files carry the bytes ("mcp!" in base64) into the input the target names. */
    const char *files =
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{"
        "\"name\":\"browser_file_upload\",\"arguments\":{\"target\":\"label:Document\","
        "\"files\":[{\"name\":\"m.txt\",\"data\":\"bWNwIQ==\"}]}}}";
    r = expect_json(stack_port(st.st), "POST", "/v1/mcp", h, files, &status);
    assert_int_equal(status, 200);
    txt = cJSON_PrintUnformatted(r);
    if (strstr(txt, "\"isError\":true") || !strstr(txt, "Uploaded 1 file."))
        fail_msg("files over HTTP: %s", txt);
    free(txt);
    cJSON_Delete(r);
    wait_out(st.auth[0], sid, "one: m.txt 4 6d637021");
    /* Without a target, the page's only file input; here there are three: ambiguous. */
    const char *anon = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{"
                       "\"name\":\"browser_file_upload\",\"arguments\":{"
                       "\"files\":[{\"name\":\"m.txt\",\"data\":\"bWNwIQ==\"}]}}}";
    r = expect_json(stack_port(st.st), "POST", "/v1/mcp", h, anon, &status);
    txt = cJSON_PrintUnformatted(r);
    if (!strstr(txt, "\"isError\":true") || !strstr(txt, "ambiguous"))
        fail_msg("no target over HTTP: %s", txt);
    free(txt);
    cJSON_Delete(r);
    close_session(st.auth[0], sid);
}

/* ---- downloads ---- */

/* The downloads listing of sid; waits (bounded) until none is in progress. */
static cJSON *downloads_settled(const char *auth, const char *sid, int want)
{
    for (int i = 0; i < 100; i++) {
        cJSON *r = ok_json(auth, sid, "{\"op\":\"downloads\"}");
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(result(r), "downloads");
        int started = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, arr)
        {
            const cJSON *s = cJSON_GetObjectItemCaseSensitive(e, "state");
            started += cJSON_IsString(s) && !strcmp(s->valuestring, "started");
        }
        if (cJSON_GetArraySize(arr) >= want && !started)
            return r;
        cJSON_Delete(r);
        usleep(100 * 1000);
    }
    /* The counts first: a long listing is cut short in CI's summary. */
    cJSON *last = ok_json(auth, sid, "{\"op\":\"downloads\"}");
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(result(last), "downloads");
    int n[4] = {0, 0, 0, 0}; /* started, done, refused, other */
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "state"));
        n[!v                      ? 3
          : !strcmp(v, "started") ? 0
          : !strcmp(v, "done")    ? 1
          : !strcmp(v, "refused") ? 2
                                  : 3]++;
    }
    fail_msg("the downloads did not settle at %d entries within 10 s: %d listed, %d started, "
             "%d done, %d refused, %d other: %s",
             want, cJSON_GetArraySize(arr), n[0], n[1], n[2], n[3], cJSON_PrintUnformatted(last));
    return NULL;
}

static int ws_download_event(wsc *w, const char *name, const char *state);

/* A subscriber of sid's download events, on the WebSocket as auth. */
static wsc *download_subscriber(const char *auth, const char *sid)
{
    char path[96];
    snprintf(path, sizeof path, "/v1/sessions/%s/ws", sid);
    int status;
    wsc *w = wsc_open(stack_port(st.st), path, auth, &status);
    if (!w)
        fail_msg("WebSocket: HTTP %d", status);
    const char *sub = "{\"id\":1,\"op\":\"subscribe\",\"args\":{\"events\":[\"download\"]}}";
    assert_int_equal(wsc_send(w, sub, strlen(sub), 1), 0);
    rg_buf in;
    rg_buf_init(&in);
    assert_int_equal(wsc_recv(w, &in, 10000), 1);
    assert_non_null(strstr(in.data, "\"ok\":true"));
    rg_buf_destroy(&in);
    return w;
}

static void test_downloads_refused_without_the_flag(void **state)
{
    (void)state;
    char sid[64], dir[256];
    create(st.auth[0], sid);
    wsc *w = download_subscriber(st.auth[0], sid);
    cJSON_Delete(
        ok_json(st.auth[0], sid, "{\"op\":\"click\",\"args\":{\"target\":\"css:#small\"}}"));
    /* Reported as it happens, and listed. */
    assert_true(ws_download_event(w, "small.txt", "refused"));
    wsc_close(w);
    cJSON *r = downloads_settled(st.auth[0], sid, 1);
    const cJSON *d =
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(result(r), "downloads"), 0);
    assert_string_equal(json_str(d, "name"), "small.txt");
    assert_string_equal(json_str(d, "state"), "refused");
    char body[200];
    snprintf(body, sizeof body, "{\"op\":\"download.get\",\"args\":{\"id\":\"%s\"}}",
             json_str(d, "id"));
    int status;
    cJSON *g = json_cmd(st.auth[0], sid, body, &status);
    expect_error(g, status, 404, "not_found", "refused");
    cJSON_Delete(g);
    cJSON_Delete(r);
    /* Nothing landed anywhere. */
    scratch_dir(sid, dir, sizeof dir);
    assert_int_equal(dir[0] ? files_below(dir) : 0, 0);
    g = json_cmd(st.auth[0], sid, "{\"op\":\"download.get\",\"args\":{\"id\":\"nope\"}}", &status);
    expect_error(g, status, 404, "not_found", NULL);
    cJSON_Delete(g);
    close_session(st.auth[0], sid);
}

/* Reads WebSocket frames until a download event with this name and state; 1 when seen. */
static int ws_download_event(wsc *w, const char *name, const char *state)
{
    rg_buf in;
    rg_buf_init(&in);
    int seen = 0;
    for (int i = 0; i < 20 && !seen; i++) {
        rg_buf_reset(&in);
        if (wsc_recv(w, &in, 10000) < 0)
            break;
        cJSON *v = NULL;
        char err[64];
        if (wire_json_decode(in.data, in.len, &v, err, sizeof err) < 0)
            continue;
        const cJSON *ev = cJSON_GetObjectItemCaseSensitive(v, "event");
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(v, "data");
        seen = cJSON_IsString(ev) && !strcmp(ev->valuestring, "download") &&
               !strcmp(json_str(d, "name"), name) && !strcmp(json_str(d, "state"), state);
        cJSON_Delete(v);
    }
    rg_buf_destroy(&in);
    return seen;
}

static void test_downloads_allowed_exact_bytes_and_quota(void **state)
{
    (void)state;
    char sid[64], dir[256];
    int status;
    create(dl_auth, sid);
    wsc *w = download_subscriber(dl_auth, sid);

    /* A small text file: started, then done, listed, and its exact bytes back. */
    const char *click = "{\"id\":2,\"op\":\"click\",\"args\":{\"target\":\"css:#small\"}}";
    assert_int_equal(wsc_send(w, click, strlen(click), 1), 0);
    assert_true(ws_download_event(w, "small.txt", "started"));
    assert_true(ws_download_event(w, "small.txt", "done"));
    cJSON *r = downloads_settled(dl_auth, sid, 1);
    const cJSON *d =
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(result(r), "downloads"), 0);
    assert_string_equal(json_str(d, "state"), "done");
    assert_string_equal(json_str(d, "mime"), "text/plain");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(d, "bytes")->valueint, 17);
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "op", "download.get");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(m, "args"), "id", json_str(d, "id"));
    cJSON *g = mp_cmd(dl_auth, sid, m, &status);
    assert_int_equal(status, 200);
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(result(g), "data");
    assert_true(wire_is_bin(data));
    size_t n = 0;
    unsigned char *got = rg_base64_decode(data->valuestring, strlen(data->valuestring), &n);
    assert_int_equal(n, 17);
    assert_memory_equal(got, "small \x00\x01\x02\xff file\n", 17);
    assert_string_equal(reply_str(g, "name"), "small.txt");
    free(got);
    cJSON_Delete(g);
    cJSON_Delete(m);
    cJSON_Delete(r);

    /* 100,000 bytes: under the quota, exact. */
    cJSON_Delete(ok_json(dl_auth, sid, "{\"op\":\"click\",\"args\":{\"target\":\"css:#mid\"}}"));
    assert_true(ws_download_event(w, "mid.bin", "done"));
    r = downloads_settled(dl_auth, sid, 2);
    d = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(result(r), "downloads"), 1);
    assert_string_equal(json_str(d, "state"), "done");
    m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "op", "download.get");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(m, "args"), "id", json_str(d, "id"));
    g = mp_cmd(dl_auth, sid, m, &status);
    assert_int_equal(status, 200);
    data = cJSON_GetObjectItemCaseSensitive(result(g), "data");
    got = rg_base64_decode(data->valuestring, strlen(data->valuestring), &n);
    unsigned char *want = pattern(MID_BYTES, 3);
    assert_int_equal(n, MID_BYTES);
    assert_memory_equal(got, want, MID_BYTES);
    free(got);
    free(want);
    cJSON_Delete(g);
    cJSON_Delete(m);
    cJSON_Delete(r);
    scratch_dir(sid, dir, sizeof dir);
    assert_int_equal(files_below(dir), 2);

    /* The same again would hold 200,017 bytes: over the 150,000 quota, refused. */
    cJSON_Delete(ok_json(dl_auth, sid, "{\"op\":\"click\",\"args\":{\"target\":\"css:#mid\"}}"));
    assert_true(ws_download_event(w, "mid.bin", "refused"));
    r = downloads_settled(dl_auth, sid, 3);
    d = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(result(r), "downloads"), 2);
    assert_string_equal(json_str(d, "state"), "refused");
    cJSON_Delete(r);
    /* Refused files leave nothing behind (bounded wait: the browser ends its write). */
    int left = 0;
    for (int i = 0; i < 50 && (left = files_below(dir)) != 2; i++)
        usleep(100 * 1000);
    assert_int_equal(left, 2);
    wsc_close(w);

    /* Park: the downloads go with the context. */
    cJSON_Delete(ok_json(dl_auth, sid, "{\"op\":\"session.park\"}"));
    struct stat sb;
    assert_int_equal(stat(dir, &sb), -1);
    r = ok_json(dl_auth, sid, "{\"op\":\"downloads\"}");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(result(r), "downloads")),
                     0);
    cJSON_Delete(r);
    /* Restored, the tenant still downloads; a file larger than the whole quota is refused. */
    cJSON_Delete(ok_json(dl_auth, sid, "{\"op\":\"click\",\"args\":{\"target\":\"css:#big\"}}"));
    r = downloads_settled(dl_auth, sid, 1);
    d = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(result(r), "downloads"), 0);
    assert_string_equal(json_str(d, "name"), "big.bin");
    assert_string_equal(json_str(d, "state"), "refused");
    cJSON_Delete(r);
    close_session(dl_auth, sid);
    assert_int_equal(stat(dir, &sb), -1);
}

/*
 * Clicks the download link #small and waits (bounded) until the page
 * server saw its request. Chromium now and then ignores one of many quick
 * synthesized clicks on the same download link (about 1 in 700 here on a
 * loaded machine: the click is answered, the server sees no request, and
 * the next click works); such a click is made again, at most twice. A
 * request that arrives is never retried, so a download the session loses
 * still fails the test.
 */
static void click_for_download(const char *auth, const char *sid, const char *path)
{
    size_t before = httpd_count(st.pages, path);
    for (int attempt = 0; attempt < 3; attempt++) {
        cJSON_Delete(ok_json(auth, sid, "{\"op\":\"click\",\"args\":{\"target\":\"css:#small\"}}"));
        for (int i = 0; i < 30; i++) {
            if (httpd_count(st.pages, path) > before)
                return;
            usleep(100 * 1000);
        }
        fprintf(stderr, "test_files: a click on the download link made no request; again\n");
    }
    fail_msg("three clicks on the download link made no request for %s", path);
}

/*
 * A navigation to a file (a type Chromium does not show) downloads it and
 * leaves the page where it was. The reply says so, with the download's id,
 * instead of Chromium's bare net::ERR_ABORTED, which an agent could only
 * retry; for a tenant that may not download, it says the download was
 * refused.
 */
static void test_navigating_to_a_file_downloads_it(void **state)
{
    (void)state;
    const char *auths[] = {dl_auth, st.auth[0]};
    for (int k = 0; k < 2; k++) {
        char sid[64], url[160], body[300];
        create(auths[k], sid);
        httpd_url(st.pages, "/mid.bin", url, sizeof url);
        snprintf(body, sizeof body, "{\"op\":\"navigate\",\"args\":{\"url\":\"%s\"}}", url);
        int status;
        cJSON *r = json_cmd(auths[k], sid, body, &status);
        expect_error(r, status, 422, "navigation_failed", "started a file download");
        char msg[600];
        snprintf(msg, sizeof msg, "%s",
                 json_str(cJSON_GetObjectItemCaseSensitive(r, "error"), "message"));
        assert_non_null(strstr(msg, "\"mid.bin\""));
        assert_non_null(strstr(msg, k == 0 ? "download.get" : "refused"));
        cJSON_Delete(r);
        cJSON *l = downloads_settled(auths[k], sid, 1);
        const cJSON *d =
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(result(l), "downloads"), 0);
        assert_string_equal(json_str(d, "name"), "mid.bin");
        assert_string_equal(json_str(d, "state"), k == 0 ? "done" : "refused");
        assert_non_null(strstr(msg, json_str(d, "id")));
        cJSON_Delete(l);
        r = ok_json(auths[k], sid, "{\"op\":\"observe\"}");
        assert_non_null(strstr(reply_str(r, "url"), "/files.html"));
        cJSON_Delete(r);
        close_session(auths[k], sid);
    }
}

/* A session lists RG_DOWNLOADS_MAX downloads; the next one is refused as it
   begins, reported, and neither listed nor written. */
static void test_downloads_past_the_list_cap_refused(void **state)
{
    (void)state;
    char sid[64], dir[256];
    create(dl_auth, sid);
    cJSON *r = NULL;
    for (int i = 0; i < RG_DOWNLOADS_MAX; i++) {
        click_for_download(dl_auth, sid, "/small.txt");
        cJSON_Delete(r);
        r = downloads_settled(dl_auth, sid, i + 1);
    }
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(result(r), "downloads"), *e;
    assert_int_equal(cJSON_GetArraySize(arr), RG_DOWNLOADS_MAX);
    cJSON_ArrayForEach(e, arr)
        assert_string_equal(json_str(e, "state"), "done");
    cJSON_Delete(r);
    scratch_dir(sid, dir, sizeof dir);
    assert_int_equal(files_below(dir), RG_DOWNLOADS_MAX);

    wsc *w = download_subscriber(dl_auth, sid);
    cJSON_Delete(ok_json(dl_auth, sid, "{\"op\":\"click\",\"args\":{\"target\":\"css:#small\"}}"));
    assert_true(ws_download_event(w, "small.txt", "refused"));
    wsc_close(w);
    r = ok_json(dl_auth, sid, "{\"op\":\"downloads\"}");
    arr = cJSON_GetObjectItemCaseSensitive(result(r), "downloads");
    assert_int_equal(cJSON_GetArraySize(arr), RG_DOWNLOADS_MAX);
    cJSON_ArrayForEach(e, arr)
        assert_string_equal(json_str(e, "state"), "done");
    cJSON_Delete(r);
    /* A navigation to a file past the cap: refused, not listed, and said so. */
    char url[160], body[300];
    httpd_url(st.pages, "/mid.bin", url, sizeof url);
    snprintf(body, sizeof body, "{\"op\":\"navigate\",\"args\":{\"url\":\"%s\"}}", url);
    int status;
    r = json_cmd(dl_auth, sid, body, &status);
    expect_error(r, status, 422, "navigation_failed", "started a file download");
    const char *msg = json_str(cJSON_GetObjectItemCaseSensitive(r, "error"), "message");
    assert_non_null(strstr(msg, "\"mid.bin\") is refused"));
    cJSON_Delete(r);
    /* The browser was told to cancel: nothing more lands (bounded wait for its write). */
    int n = 0;
    for (int i = 0; i < 20 && (n = files_below(dir)) == RG_DOWNLOADS_MAX; i++)
        usleep(100 * 1000);
    assert_int_equal(n, RG_DOWNLOADS_MAX);
    close_session(dl_auth, sid);
}

int main(void)
{
    snprintf(docroot, sizeof docroot, "/tmp/refgate-files-docs-%d", (int)getpid());
    if (mkdir(docroot, 0700) < 0) {
        fprintf(stderr, "test_files: cannot make %s\n", docroot);
        return 1;
    }
    write_doc("files.html", page_html, strlen(page_html));
    write_doc("small.txt", "small \x00\x01\x02\xff file\n", 17);
    unsigned char *mid = pattern(MID_BYTES, 3), *big = pattern(BIG_BYTES, 5);
    write_doc("mid.bin", mid, MID_BYTES);
    write_doc("big.bin", big, BIG_BYTES);
    free(mid);
    free(big);
    static const char *env[] = {"REFGATE_UPLOAD_FILE_MAX=65536",
                                "REFGATE_UPLOAD_SESSION_MAX=100000",
                                "REFGATE_DOWNLOAD_SESSION_MAX=150000", NULL};
    int rc = 1;
    if (fx_stack_start(&st, "test_files", docroot, 1, env) == 0) {
        tenant t;
        tenant_init(&t);
        snprintf(t.name, sizeof t.name, "dler");
        t.allow_private = 1;
        t.allow_downloads = 1;
        char err[256], key[TENANT_KEY_SIZE];
        if (stack_make_tenant(stack_redis_url(st.st), &t, key, sizeof key, err, sizeof err) < 0) {
            fprintf(stderr, "test_files: tenant: %s\n", err);
        } else {
            snprintf(dl_auth, sizeof dl_auth, "Authorization: Bearer %s\r\n", key);
            const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_upload_page_reads_the_bytes),
                cmocka_unit_test(test_pdf_of_the_page),
                cmocka_unit_test(test_upload_refusals_change_nothing),
                cmocka_unit_test(test_scratch_dir_private_and_removed),
                cmocka_unit_test(test_downloads_refused_without_the_flag),
                cmocka_unit_test(test_downloads_allowed_exact_bytes_and_quota),
                cmocka_unit_test(test_downloads_past_the_list_cap_refused),
                cmocka_unit_test(test_navigating_to_a_file_downloads_it),
                cmocka_unit_test(test_cli_upload_and_download),
                cmocka_unit_test(test_mcp_over_http_takes_bytes_not_paths),
            };
            rc = FX_RUN("files", tests, NULL, NULL);
        }
        tenant_destroy(&t);
        fx_stack_stop(&st);
    }
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", docroot);
    if (system(cmd) != 0)
        fprintf(stderr, "test_files: cannot remove %s\n", docroot);
    return rc;
}
