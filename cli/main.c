/*
 * main.c - refgate-cli's entry point: the environment, the command line
 * (cmd.c, admin.c), one HTTP call of the gateway (http.c) and its reply
 * printed (out.c). Exit status: 0 success, 1 an error reply or a failure,
 * 2 a usage error.
 */
#define _GNU_SOURCE
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

#include "wire/wire.h"

static int usage_error(const char *msg)
{
    cli_error(stderr, "%s", msg);
    cli_print_usage(stderr);
    return CLI_EXIT_USAGE;
}

/* Sends the call and prints its reply; returns the exit status. */
static int run(const cli_global *g, const cli_call *c)
{
    char err[512];
    cli_url u;
    if (cli_url_parse(g->url, &u, err, sizeof err) < 0)
        return usage_error(err);
    if (!g->key)
        return usage_error("no API key: set REFGATE_KEY or pass --key K");
    /* upload names local files: their bytes go in the command. */
    if (c->body && !strcmp(c->name, "upload") && cli_load_upload(c->body, err, sizeof err) < 0) {
        cli_error(stderr, "%s", err);
        return CLI_EXIT_USAGE;
    }
    rg_buf body;
    rg_buf_init(&body);
    if (c->body && wire_mp_encode(c->body, &body) < 0) {
        rg_buf_destroy(&body);
        cli_error(stderr, "cannot encode the command");
        return CLI_EXIT_FAIL;
    }
    cli_http_req req = {c->method, c->path, g->key, NULL, c->body ? body.data : NULL, body.len};
    cli_http_resp resp;
    cli_http_resp_init(&resp);
    int rc = cli_http_do(&u, &req, g->timeout_ms, &resp, err, sizeof err);
    rg_buf_destroy(&body);
    cJSON *reply = NULL;
    if (!rc)
        rc = cli_reply_decode(&resp, &reply, err, sizeof err);
    if (rc) {
        cli_error(stderr, "%s", err);
        cli_http_resp_destroy(&resp);
        return CLI_EXIT_FAIL;
    }
    rc = cli_print_reply(c, g->json, reply, stdout, stderr);
    cJSON_Delete(reply);
    cli_http_resp_destroy(&resp);
    return rc;
}

/* Standard output must have reached its destination (a full disk, a closed pipe). */
static int finish(int status)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error(stderr, "writing to standard output failed");
        return status ? status : CLI_EXIT_FAIL;
    }
    return status;
}

int main(int argc, char **argv)
{
    /* The modules' info lines (a tenant created, ...) are for servers' logs. */
    setenv("REFGATE_LOG_LEVEL", "warn", 0);
    cli_global g;
    cli_global_init(&g);
    cli_global_from_env(&g);
    if (argc < 2)
        return usage_error("no command given");
    char err[512];
    cli_call call;
    int admin_at = 0;
    int kind = cli_parse(argc - 1, argv + 1, &g, &call, &admin_at, err, sizeof err);
    if (kind < 0)
        return usage_error(err);
    if (kind == CLI_CMD_HELP) {
        cli_print_help(stdout);
        return finish(CLI_EXIT_OK);
    }
    if (kind == CLI_CMD_MCP)
        return finish(cli_mcp_main(&g, argc - 1 - admin_at, argv + 1 + admin_at));
    if (kind == CLI_CMD_ADMIN) {
        cli_admin a;
        int rc = cli_admin_parse(argc - 1 - admin_at, argv + 1 + admin_at, &g, &a, err, sizeof err);
        if (rc == CLI_CMD_HELP) {
            cli_print_help(stdout);
            return finish(CLI_EXIT_OK);
        }
        return rc < 0 ? usage_error(err) : finish(cli_admin_run(&g, &a));
    }
    int status = run(&g, &call);
    cli_call_destroy(&call);
    return finish(status);
}
