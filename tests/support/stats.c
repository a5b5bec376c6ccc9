/* stats.c - order statistics for the benchmarks and the soak tool (stats.h). */
#include "stats.h"

#include <stdlib.h>
#include <string.h>

int stats_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int stats_cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

int stats_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void stats_sort(double *v, size_t n)
{
    if (n)
        qsort(v, n, sizeof *v, stats_cmp_double);
}

double stats_rank(double *v, size_t n, double p)
{
    if (!n)
        return 0;
    stats_sort(v, n);
    size_t k = (size_t)(p * (double)n);
    return v[k < n ? k : n - 1];
}

double stats_rank_round(double *v, size_t n, double p)
{
    if (!n)
        return 0;
    stats_sort(v, n);
    size_t k = (size_t)(p * (double)(n - 1) + 0.5);
    return v[k < n ? k : n - 1];
}

long stats_median_long(long *v, size_t n)
{
    if (!n)
        return -1;
    qsort(v, n, sizeof *v, stats_cmp_long);
    return v[n / 2];
}

double stats_median(const double *v, size_t n)
{
    if (!n)
        return 0;
    double *s = malloc(n * sizeof *s);
    if (!s)
        abort(); /* a benchmark that cannot hold its samples has nothing to report */
    memcpy(s, v, n * sizeof *s);
    stats_sort(s, n);
    double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    free(s);
    return m;
}

double stats_min(const double *v, size_t n)
{
    double m = v[0];
    for (size_t i = 1; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}

double stats_max(const double *v, size_t n)
{
    double m = v[0];
    for (size_t i = 1; i < n; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}
