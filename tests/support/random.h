#ifndef GHD_TESTS_SUPPORT_RANDOM_H
#define GHD_TESTS_SUPPORT_RANDOM_H

/* Random data for every suite: one generator (xorshift64, a seed the test
 * chooses, so a failure repeats) and the typed fill that the unit and GPU
 * kernel tests draw their inputs from. */
#include <stddef.h>
#include <stdint.h>

#include "kernels/dtype.h"

/* A state for `seed` (any value, 0 included). */
uint64_t support_rand_seed(uint64_t seed);
/* The next value of the generator whose state is *state (not 0). */
uint64_t support_rand_next(uint64_t *state);
/* Uniform in [lo, hi). */
double support_rand_uniform(uint64_t *state, double lo, double hi);
/* n random bytes into p, one draw each. */
void support_rand_bytes(uint64_t *state, unsigned char *p, size_t n);
/* n elements of type t into p that make good kernel inputs: floats
 * uniform in [lo, hi), f16 and bf16 rounded from such floats, integers
 * over all their bits (u8 too). Two draws per element, whatever its type. */
void support_rand_fill(uint64_t *state, enum ghd_dtype t, void *p, size_t n, double lo,
                       double hi);

#endif
