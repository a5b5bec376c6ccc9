/* file.c - whole files, or their ends, into memory, for tests and benchmarks (support.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "common/rg.h"
#include "support.h"

char *support_slurp_stream(FILE *f, size_t *len)
{
    rg_buf b;
    rg_buf_init(&b);
    char chunk[16384];
    size_t n;
    rewind(f);
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        rg_buf_append(&b, chunk, n);
    fclose(f);
    if (len)
        *len = b.len;
    rg_buf_puts(&b, ""); /* a NUL after the bytes, also for an empty file */
    return rg_buf_steal(&b);
}

char *support_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    return f ? support_slurp_stream(f, len) : NULL;
}

const char *support_file_tail(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = len > 1 ? fopen(path, "rb") : NULL;
    if (!f)
        return NULL;
    long from = 0;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        from = size > (long)len - 1 ? size - ((long)len - 1) : 0;
    }
    size_t n = fseek(f, from, SEEK_SET) == 0 ? fread(buf, 1, len - 1, f) : 0;
    fclose(f);
    buf[n] = '\0';
    const char *nl = from > 0 ? strchr(buf, '\n') : NULL;
    return nl ? nl + 1 : buf;
}
