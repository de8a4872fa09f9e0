/* rng_impl.h — internal to src/core/rng*.c: the ARS word generator of the
 * block normals (rng_ars.c), used by rng.c. */
#ifndef ATTNCHECK_CORE_RNG_IMPL_H
#define ATTNCHECK_CORE_RNG_IMPL_H

#include <stddef.h>
#include <stdint.h>

/* Words pos .. pos+n-1 of the ARS-7 stream (seed, a, b) into w: the
 * portable table-driven AES rounds when ref != 0, else the fastest
 * instructions this CPU has (same bits). */
void rng_ars_words(int ref, uint64_t *w, size_t n, uint64_t seed, uint64_t a, uint64_t b,
                   uint64_t pos);

#endif
