#ifndef GHD_TESTS_GPU_REPORT_H
#define GHD_TESTS_GPU_REPORT_H

#include <stdarg.h>
#include <stdio.h>

/* The GPU suites print one PASS/FAIL line per comparison (run_device.sh
 * collects them) and count both; main() returns failures ? 1 : 0. */
struct gpu_tally {
    int passes;
    int failures;
};

static void gpu_report(struct gpu_tally *t, int ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), unused));
static void gpu_report(struct gpu_tally *t, int ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s  ", ok ? "PASS" : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
    if (ok)
        t->passes++;
    else
        t->failures++;
}

#endif
