#ifndef GHD_TESTS_BENCH_STATS_H
#define GHD_TESTS_BENCH_STATS_H

#include <stdlib.h>

/* The device benchmarks report the median of their repetitions: one slow
 * repetition (a clock change, another process) moves it least. */
static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v in place. pre: n > 0. */
static __attribute__((unused)) double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
