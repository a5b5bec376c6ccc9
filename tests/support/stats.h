/*
 * stats.h - the order statistics the benchmarks and the soak tool report:
 * sorting, nearest-rank quantiles and medians. One definition each, so two
 * programs that both say "p99" mean the same value. Test code only.
 */
#ifndef RG_TEST_STATS_H
#define RG_TEST_STATS_H

#include <stddef.h>

/** qsort comparators in ascending order. */
int stats_cmp_double(const void *a, const void *b);
int stats_cmp_long(const void *a, const void *b);
/** qsort comparator for an array of C strings (char *), by strcmp. */
int stats_cmp_str(const void *a, const void *b);

/** Sorts v ascending in place. */
void stats_sort(double *v, size_t n);
/**
 * The p-quantile (0..1) by nearest rank: v[floor(p * n)], the last one at
 * most. Sorts v in place; 0 for n = 0. With p = 0.5 it is the upper median.
 */
double stats_rank(double *v, size_t n, double p);
/**
 * The p-quantile (0..1) at the rounded position p * (n - 1): v[round(...)].
 * Sorts v in place; 0 for n = 0. (bench/floor's rule; its p50 equals
 * stats_rank's, its p99 is one place lower from 51 values on.)
 */
double stats_rank_round(double *v, size_t n, double p);
/** The upper median of longs, v[n / 2]; sorts v in place. -1 for n = 0. */
long stats_median_long(long *v, size_t n);
/** The median, the mean of the middle two for even n; v is left as it is. 0 for n = 0. */
double stats_median(const double *v, size_t n);
/** The least and the greatest of n values (n > 0). */
double stats_min(const double *v, size_t n);
double stats_max(const double *v, size_t n);

#endif
