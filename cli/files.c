/*
 * files.c - local files for the gateway: `upload` and the MCP tool
 * browser_file_upload name files by their paths on this machine; their
 * bytes travel in the command as msgpack bin, under the file's own name.
 */
#define _GNU_SOURCE
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "wire/wire.h"

cJSON *cli_upload_entry(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode)) {
        rg_errf(err, errlen, RG_EBADREQ, "cannot read %s: %s", path,
                f ? "not a regular file" : strerror(errno));
        if (f)
            fclose(f);
        return NULL;
    }
    if ((unsigned long long)st.st_size > CLI_UPLOAD_FILE_MAX) {
        fclose(f);
        rg_errf(err, errlen, RG_EBADREQ, "%s has %lld bytes; refgate-cli sends at most %llu", path,
                (long long)st.st_size, (unsigned long long)CLI_UPLOAD_FILE_MAX);
        return NULL;
    }
    size_t n = (size_t)st.st_size;
    unsigned char *b = malloc(n ? n : 1);
    size_t got = b ? fread(b, 1, n, f) : 0;
    int bad = !b || got != n || ferror(f);
    fclose(f);
    cJSON *data = bad ? NULL : wire_bin_new(b, n);
    free(b);
    if (!data) {
        rg_errf(err, errlen, RG_EBADREQ, "cannot read %s", path);
        return NULL;
    }
    const char *slash = strrchr(path, '/');
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", slash ? slash + 1 : path);
    cJSON_AddItemToObject(e, "data", data);
    return e;
}

int cli_load_upload(cJSON *body, char *err, size_t errlen)
{
    cJSON *files =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(body, "args"), "files");
    int n = cJSON_GetArraySize(files);
    for (int i = 0; i < n; i++) {
        cJSON *p = cJSON_GetArrayItem(files, i);
        if (!cJSON_IsString(p))
            continue;
        cJSON *e = cli_upload_entry(p->valuestring, err, errlen);
        if (!e)
            return RG_EBADREQ;
        cJSON_ReplaceItemInArray(files, i, e);
    }
    return 0;
}
