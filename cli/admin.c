/*
 * admin.c - `refgate-cli admin ...`: tenants and API keys, straight to Redis
 * through the tenant module (no gateway involved). A new key is printed alone
 * on stdout and nowhere else; `show` prints the key count, never key material.
 */
#define _GNU_SOURCE
#include "cli/cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *words;
    int action;
    int takes_arg;   /* NAME or KEY_OR_HASH */
    int takes_flags; /* the tenant options */
} actions[] = {
    {"tenant create", CLI_ADMIN_TENANT_CREATE, 1, 1},
    {"tenant list", CLI_ADMIN_TENANT_LIST, 0, 0},
    {"tenant show", CLI_ADMIN_TENANT_SHOW, 1, 0},
    {"tenant update", CLI_ADMIN_TENANT_UPDATE, 1, 1},
    {"tenant delete", CLI_ADMIN_TENANT_DELETE, 1, 0},
    {"key create", CLI_ADMIN_KEY_CREATE, 1, 0},
    {"key revoke", CLI_ADMIN_KEY_REVOKE, 1, 0},
};

#define NACTIONS (sizeof actions / sizeof *actions)

/* ---- parsing -------------------------------------------------------------- */

static int opt_value(int argc, char **argv, int *i, const char **v, char *err, size_t errlen)
{
    const char *w = argv[*i], *eq = strchr(w, '=');
    if (eq) {
        *v = eq + 1;
        *i += 1;
        return 0;
    }
    if (*i + 1 >= argc)
        return rg_errf(err, errlen, RG_EBADREQ, "%s needs a value", w);
    *v = argv[*i + 1];
    *i += 2;
    return 0;
}

/* Is word w the option name, alone or as name=value? */
static int is(const char *w, const char *name)
{
    size_t n = strlen(name);
    return !strncmp(w, name, n) && (w[n] == '\0' || w[n] == '=');
}

static int int_opt(const char *flag, const char *v, int *out, char *err, size_t errlen)
{
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < 0 || x > TENANT_LIMIT_MAX)
        return rg_errf(err, errlen, RG_EBADREQ, "%s wants an integer from 0 to %d (got \"%.40s\")",
                       flag, TENANT_LIMIT_MAX, v);
    *out = (int)x;
    return 0;
}

static int add_host(const char **list, size_t *n, const char *h, char *err, size_t errlen)
{
    if (*n >= TENANT_HOSTS_MAX)
        return rg_errf(err, errlen, RG_EBADREQ, "at most %d hosts per list", TENANT_HOSTS_MAX);
    list[(*n)++] = h;
    return 0;
}

/* One tenant option at argv[*i]: 1 taken, 0 not one, RG_EBADREQ. */
static int tenant_opt(int argc, char **argv, int *i, cli_admin *a, char *err, size_t errlen)
{
    const char *w = argv[*i], *v = NULL;
    if (!strcmp(w, "--allow-private") || !strcmp(w, "--no-allow-private")) {
        a->has |= CLI_SET_PRIVATE;
        a->allow_private = w[2] != 'n';
    } else if (!strcmp(w, "--allow-eval") || !strcmp(w, "--no-allow-eval")) {
        a->has |= CLI_SET_EVAL;
        a->allow_eval = w[2] != 'n';
    } else if (!strcmp(w, "--allow-downloads") || !strcmp(w, "--no-allow-downloads")) {
        a->has |= CLI_SET_DOWNLOADS;
        a->allow_downloads = w[2] != 'n';
    } else if (!strcmp(w, "--no-allow-hosts")) {
        a->has |= CLI_SET_ALLOW;
        a->n_allow = 0;
    } else if (!strcmp(w, "--no-deny-hosts")) {
        a->has |= CLI_SET_DENY;
        a->n_deny = 0;
    } else {
        static const char *valued[] = {"--max-sessions", "--max-concurrent", "--rate",
                                       "--allow-host",   "--deny-host",      "--user-agent",
                                       "--locale"};
        size_t k = 0;
        while (k < sizeof valued / sizeof *valued && !is(w, valued[k]))
            k++;
        if (k == sizeof valued / sizeof *valued)
            return 0;
        if (opt_value(argc, argv, i, &v, err, errlen))
            return RG_EBADREQ;
        switch (k) {
        case 0:
            a->has |= CLI_SET_MAX_SESSIONS;
            return int_opt(valued[k], v, &a->max_sessions, err, errlen) ? RG_EBADREQ : 1;
        case 1:
            a->has |= CLI_SET_MAX_CONCURRENT;
            return int_opt(valued[k], v, &a->max_concurrent, err, errlen) ? RG_EBADREQ : 1;
        case 2: {
            char *end = NULL;
            a->rate = strtod(v, &end);
            a->has |= CLI_SET_RATE;
            if (end == v || *end || !isfinite(a->rate) || a->rate <= 0 || a->rate > TENANT_RATE_MAX)
                return rg_errf(err, errlen, RG_EBADREQ,
                               "--rate wants requests per second, above 0 and at most "
                               "%.0f (got \"%.40s\")",
                               TENANT_RATE_MAX, v);
            return 1;
        }
        case 3:
            a->has |= CLI_SET_ALLOW;
            return add_host(a->allow, &a->n_allow, v, err, errlen) ? RG_EBADREQ : 1;
        case 4:
            a->has |= CLI_SET_DENY;
            return add_host(a->deny, &a->n_deny, v, err, errlen) ? RG_EBADREQ : 1;
        case 5:
            a->has |= CLI_SET_UA;
            a->user_agent = v;
            return 1;
        default:
            a->has |= CLI_SET_LOCALE;
            a->locale = v;
            return 1;
        }
    }
    *i += 1; /* a switch */
    return 1;
}

/* Checks the option values on their own (on top of the defaults), so that a
   bad one is a usage error before Redis is asked. */
static int check_values(const cli_admin *a, char *err, size_t errlen)
{
    tenant t;
    tenant_init(&t);
    rg_strlcpy(t.name, "x", sizeof t.name);
    int rc = cli_admin_apply(a, &t);
    if (rc == 0)
        rc = tenant_validate(&t, err, errlen);
    tenant_destroy(&t);
    return rc ? RG_EBADREQ : 0;
}

static int find_action(const char **words, int n, cli_admin *a, char *err, size_t errlen)
{
    char joined[64] = "";
    if (n >= 2)
        snprintf(joined, sizeof joined, "%.20s %.20s", words[0], words[1]);
    for (size_t k = 0; k < NACTIONS; k++)
        if (!strcmp(actions[k].words, joined)) {
            a->action = actions[k].action;
            return (int)k;
        }
    return rg_errf(err, errlen, RG_EBADREQ,
                   "unknown admin command \"%s%s%s\" (admin tenant "
                   "create|list|show|update|delete, admin key create|revoke)",
                   n > 0 ? words[0] : "", n > 1 ? " " : "", n > 1 ? words[1] : "");
}

int cli_admin_parse(int argc, char **argv, cli_global *g, cli_admin *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    const char *words[3] = {NULL};
    int nwords = 0, rest = 0, flags_seen = 0;
    for (int i = 0; i < argc;) {
        const char *w = argv[i];
        int option = !rest && w[0] == '-' && w[1];
        if (option && (!strcmp(w, "--help") || !strcmp(w, "-h")))
            return CLI_CMD_HELP;
        if (option && !strcmp(w, "--")) {
            rest = 1;
            i++;
            continue;
        }
        if (!option) {
            if (nwords == 3)
                return rg_errf(err, errlen, RG_EBADREQ, "too many arguments for admin (\"%.40s\")",
                               w);
            words[nwords++] = argv[i++];
            continue;
        }
        int took = tenant_opt(argc, argv, &i, a, err, errlen);
        if (took > 0) {
            flags_seen = 1;
            continue;
        }
        if (took == 0)
            took = cli_global_flag(g, argc, argv, &i, err, errlen);
        if (took == 0)
            return rg_errf(err, errlen, RG_EBADREQ, "unknown option %.60s for admin", w);
        if (took < 0)
            return took;
    }
    int k = find_action(words, nwords, a, err, errlen);
    if (k < 0)
        return k;
    if (actions[k].takes_arg && nwords < 3)
        return rg_errf(err, errlen, RG_EBADREQ, "admin %s needs %s", actions[k].words,
                       a->action == CLI_ADMIN_KEY_REVOKE ? "a key or its SHA-256"
                                                         : "a tenant name");
    if (!actions[k].takes_arg && nwords > 2)
        return rg_errf(err, errlen, RG_EBADREQ, "admin %s takes no argument", actions[k].words);
    if (flags_seen && !actions[k].takes_flags)
        return rg_errf(err, errlen, RG_EBADREQ, "admin %s takes no tenant options",
                       actions[k].words);
    if (a->action == CLI_ADMIN_TENANT_UPDATE && !a->has)
        return rg_errf(err, errlen, RG_EBADREQ, "nothing to update: give at least one option");
    a->arg = words[2];
    if (a->action == CLI_ADMIN_TENANT_CREATE && !tenant_name_valid(a->arg))
        return rg_errf(err, errlen, RG_EBADREQ,
                       "\"%.70s\" is not a valid tenant name: 1 to %d characters of "
                       "a-z, 0-9, '_' and '-'",
                       a->arg, TENANT_NAME_MAX);
    return check_values(a, err, errlen);
}

int cli_admin_apply(const cli_admin *a, tenant *t)
{
    int rc = 0;
    if (a->has & CLI_SET_MAX_SESSIONS)
        t->max_sessions = a->max_sessions;
    if (a->has & CLI_SET_MAX_CONCURRENT)
        t->max_concurrent = a->max_concurrent;
    if (a->has & CLI_SET_RATE)
        t->rate = a->rate;
    if (a->has & CLI_SET_PRIVATE)
        t->allow_private = a->allow_private;
    if (a->has & CLI_SET_EVAL)
        t->allow_eval = a->allow_eval;
    if (a->has & CLI_SET_DOWNLOADS)
        t->allow_downloads = a->allow_downloads;
    if (a->has & CLI_SET_UA)
        rc = tenant_set_str(&t->user_agent, a->user_agent);
    if (!rc && (a->has & CLI_SET_LOCALE))
        rc = tenant_set_str(&t->locale, a->locale);
    if (a->has & CLI_SET_ALLOW)
        tenant_clear_hosts(t, 0);
    for (size_t i = 0; !rc && (a->has & CLI_SET_ALLOW) && i < a->n_allow; i++)
        rc = tenant_add_host(t, 0, a->allow[i]);
    if (a->has & CLI_SET_DENY)
        tenant_clear_hosts(t, 1);
    for (size_t i = 0; !rc && (a->has & CLI_SET_DENY) && i < a->n_deny; i++)
        rc = tenant_add_host(t, 1, a->deny[i]);
    return rc;
}

/* ---- running ------------------------------------------------------------- */

/* An error from the tenant module as "refgate-cli: code: sentence"; exit 1.
   msg: the module's sentence, or empty for one made here. */
static int report(rg_redis *r, int rc, const cli_admin *a, const char *msg)
{
    char buf[300];
    if (msg && *msg)
        rg_strlcpy(buf, msg, sizeof buf);
    else if (rc == RG_ENOTFOUND && a->action == CLI_ADMIN_KEY_REVOKE)
        rg_strlcpy(buf, "no such key (give the key itself or its SHA-256 in hex)", sizeof buf);
    else if (rc == RG_ENOTFOUND)
        snprintf(buf, sizeof buf, "no tenant named \"%.70s\"", a->arg);
    else if (rc == RG_EUNAVAIL)
        snprintf(buf, sizeof buf,
                 "Redis at %s did not answer (or answered with an error); nothing was changed",
                 rg_redis_where(r));
    else
        rg_strlcpy(buf, "the operation failed", sizeof buf);
    cli_error(stderr, "%s: %s", rg_err_code(rc), buf);
    return CLI_EXIT_FAIL;
}

/* The new key alone, or with --json {"tenant": ..., "key": ...}. */
static int print_key(const cli_global *g, const char *tid, const char *key)
{
    if (!g->json)
        return printf("%s\n", key) < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "tenant", tid);
    cJSON_AddStringToObject(o, "key", key);
    int rc = cli_print_json(stdout, o);
    cJSON_Delete(o);
    return rc ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

static cJSON *hosts_array(char **v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
    return a;
}

static cJSON *str_or_null(const char *s)
{
    return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static int show(rg_redis *r, const cli_admin *a)
{
    tenant t;
    size_t keys = 0;
    int rc = tenant_get(r, a->arg, &t);
    if (!rc)
        rc = tenant_key_count(r, a->arg, &keys);
    if (rc) {
        tenant_destroy(&t);
        return report(r, rc, a, NULL);
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", t.id);
    cJSON_AddStringToObject(o, "name", t.name);
    cJSON_AddNumberToObject(o, "created_ms", (double)t.created_ms);
    cJSON_AddNumberToObject(o, "max_sessions", t.max_sessions);
    cJSON_AddNumberToObject(o, "max_concurrent", t.max_concurrent);
    cJSON_AddNumberToObject(o, "rate", t.rate);
    cJSON_AddBoolToObject(o, "allow_private", t.allow_private);
    cJSON_AddBoolToObject(o, "allow_eval", t.allow_eval);
    cJSON_AddBoolToObject(o, "allow_downloads", t.allow_downloads);
    cJSON_AddItemToObject(o, "allow_hosts", hosts_array(t.allow_hosts, t.n_allow));
    cJSON_AddItemToObject(o, "deny_hosts", hosts_array(t.deny_hosts, t.n_deny));
    cJSON_AddItemToObject(o, "user_agent", str_or_null(t.user_agent));
    cJSON_AddItemToObject(o, "locale", str_or_null(t.locale));
    cJSON_AddNumberToObject(o, "keys", (double)keys);
    rc = cli_print_json(stdout, o);
    cJSON_Delete(o);
    tenant_destroy(&t);
    return rc ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

static int list(rg_redis *r, const cli_global *g, const cli_admin *a)
{
    char **v;
    size_t n;
    int rc = tenant_list(r, &v, &n);
    if (rc)
        return report(r, rc, a, NULL);
    if (g->json) {
        cJSON *arr = hosts_array(v, n);
        rc = cli_print_json(stdout, arr);
        cJSON_Delete(arr);
    }
    for (size_t i = 0; !g->json && i < n; i++)
        printf("%s\n", v[i]);
    tenant_list_free(v, n);
    return rc ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

static int create(rg_redis *r, const cli_global *g, const cli_admin *a)
{
    tenant t;
    tenant_init(&t);
    rg_strlcpy(t.name, a->arg, sizeof t.name);
    char key[TENANT_KEY_SIZE], err[256] = "";
    int rc = cli_admin_apply(a, &t);
    if (!rc)
        rc = tenant_create(r, &t, key, sizeof key, err, sizeof err);
    tenant_destroy(&t);
    if (rc)
        return report(r, rc, a, err);
    rc = print_key(g, a->arg, key);
    explicit_bzero(key, sizeof key);
    return rc;
}

static int update(rg_redis *r, const cli_admin *a)
{
    tenant t;
    char err[256] = "";
    int rc = tenant_get(r, a->arg, &t);
    if (!rc)
        rc = cli_admin_apply(a, &t);
    if (!rc)
        rc = tenant_update(r, &t, err, sizeof err);
    tenant_destroy(&t);
    return rc ? report(r, rc, a, err) : CLI_EXIT_OK;
}

static int key_create(rg_redis *r, const cli_global *g, const cli_admin *a)
{
    char key[TENANT_KEY_SIZE];
    int rc = tenant_key_create(r, a->arg, key, sizeof key);
    if (rc)
        return report(r, rc, a, NULL);
    rc = print_key(g, a->arg, key);
    explicit_bzero(key, sizeof key);
    return rc;
}

int cli_admin_run(const cli_global *g, const cli_admin *a)
{
    rg_redis_config cfg;
    rg_redis_config_default(&cfg);
    rg_redis_config_from_env(&cfg);
    if (g->redis)
        cfg.url = g->redis;
    rg_redis *r = NULL;
    char err[256];
    if (rg_redis_new(&cfg, &r, err, sizeof err) < 0) {
        cli_error(stderr, "%s", err);
        return CLI_EXIT_USAGE;
    }
    size_t moved;
    tenant_upgrade(r, &moved); /* tenants from before the tagged keys; a failure shows below */
    int rc;
    switch (a->action) {
    case CLI_ADMIN_TENANT_CREATE:
        rc = create(r, g, a);
        break;
    case CLI_ADMIN_TENANT_LIST:
        rc = list(r, g, a);
        break;
    case CLI_ADMIN_TENANT_SHOW:
        rc = show(r, a);
        break;
    case CLI_ADMIN_TENANT_UPDATE:
        rc = update(r, a);
        break;
    case CLI_ADMIN_TENANT_DELETE:
        rc = tenant_delete(r, a->arg);
        rc = rc ? report(r, rc, a, NULL) : CLI_EXIT_OK;
        break;
    case CLI_ADMIN_KEY_CREATE:
        rc = key_create(r, g, a);
        break;
    default:
        rc = tenant_key_revoke(r, a->arg);
        rc = rc ? report(r, rc, a, NULL) : CLI_EXIT_OK;
        break;
    }
    rg_redis_free(r);
    return rc;
}
