/* file.c - whole files into memory, for tests and benchmarks (support.h). */
#define _GNU_SOURCE
#include <stdio.h>

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
