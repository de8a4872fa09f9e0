/* core/fnv.h — the FNV-1a checksum, 64 bits (Fowler, Noll, Vo), over
 * bytes; doubles are hashed as their little-endian IEEE bytes, so a
 * checksum is the same on every machine.  Used by checkpoints
 * (doc/mathematics.md §6.4) and condition shards (attncheck-merge(1)).
 * Internal to the library. */
#ifndef AC_CORE_FNV_H
#define AC_CORE_FNV_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FNV_INIT 0xcbf29ce484222325ull

static inline uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static inline uint64_t fnv_doubles(uint64_t h, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t u;
        memcpy(&u, &x[i], sizeof u);
        unsigned char b[8];
        for (int k = 0; k < 8; k++)
            b[k] = (unsigned char)(u >> (8 * k));
        h = fnv1a(h, b, 8);
    }
    return h;
}

#endif /* AC_CORE_FNV_H */
