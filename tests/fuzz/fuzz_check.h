#ifndef GHD_TESTS_FUZZ_CHECK_H
#define GHD_TESTS_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

/* An invariant of a harness: a failure names it and aborts, which libFuzzer
 * reports as a crash and keeps the input. */
#define CHECK(c)                                                                \
    do {                                                                        \
        if (!(c)) {                                                             \
            fprintf(stderr, "invariant failed: %s (line %d)\n", #c, __LINE__);  \
            abort();                                                            \
        }                                                                       \
    } while (0)

#endif
