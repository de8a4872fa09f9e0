/* rng_ars.c — the word stream of the block normals (attncheck/rng.h):
 * ARS-7, the AES-round counter-based generator of Random123, computed
 * with VAES (AVX-512, 4 blocks per instruction), with AES-NI (1 block), or
 * portably with table-driven AES rounds; the three give the same bits and
 * the choice is made once per process from the CPU (cpuid).
 *
 * Block q of stream (seed, a, b): counter {lo = q, hi = b}, key {lo = seed,
 * hi = a} (64-bit halves of the 128-bit AES state, little-endian), and
 *     v = ctr ^ k;  6 times: k += W, v = AESENC(v, k);  k += W,
 *     v = AESENCLAST(v, k)
 * with the Weyl increment W = {0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B}
 * added to each 64-bit half separately (Random123's ars1xm128i_R(7, .)).
 * Word 2q of the stream is the low half of v, word 2q+1 the high half.
 */
#include <config.h>

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ARS_X86 1
#else
#define ARS_X86 0
#endif

#include "attncheck/rng.h"
#include "core/rng_impl.h"

#define ARS_ROUNDS 7
#define WEYL_LO UINT64_C(0x9E3779B97F4A7C15) /* golden ratio */
#define WEYL_HI UINT64_C(0xBB67AE8584CAA73B) /* sqrt(3) - 1 */

/* ---- portable AES rounds (FIPS-197) ------------------------------------------ */

static uint8_t aes_sbox[256];
static uint32_t aes_te[256]; /* column {2S, S, S, 3S} of MixColumns(SubBytes(x)) */

static uint8_t gf_mul(uint8_t a, uint8_t b)
{
    uint8_t p = 0;
    while (b) {
        if (b & 1)
            p ^= a;
        a = (uint8_t)((a << 1) ^ ((a & 0x80) ? 0x1b : 0));
        b >>= 1;
    }
    return p;
}

static uint8_t rotl8(uint8_t x, int s)
{
    return (uint8_t)((x << s) | (x >> (8 - s)));
}

/* S(x) = A(x^-1) + 0x63 in GF(2^8) mod x^8 + x^4 + x^3 + x + 1 (0^-1 = 0). */
static void aes_build(void)
{
    for (int x = 0; x < 256; x++) {
        uint8_t inv = 0;
        for (int y = 1; y < 256 && x; y++)
            if (gf_mul((uint8_t)x, (uint8_t)y) == 1) {
                inv = (uint8_t)y;
                break;
            }
        uint8_t s = (uint8_t)(inv ^ rotl8(inv, 1) ^ rotl8(inv, 2) ^ rotl8(inv, 3) ^
                              rotl8(inv, 4) ^ 0x63);
        aes_sbox[x] = s;
        aes_te[x] = (uint32_t)gf_mul(s, 2) | (uint32_t)s << 8 | (uint32_t)s << 16 |
                    (uint32_t)gf_mul(s, 3) << 24;
    }
}

static inline uint32_t rotl32(uint32_t x, int s)
{
    return (x << s) | (x >> (32 - s));
}

static inline unsigned byte_of(const uint32_t c[4], int col, int row)
{
    return (c[col & 3] >> (8 * row)) & 0xffu;
}

/* AESENC (last = 0) or AESENCLAST (last = 1) on columns s (little-endian
 * words of the 16-byte state), round key k. */
static void aes_round(uint32_t s[4], const uint32_t k[4], int last)
{
    uint32_t t[4];
    for (int c = 0; c < 4; c++) {
        /* ShiftRows: row r of column c comes from column c + r */
        const unsigned a0 = byte_of(s, c, 0), a1 = byte_of(s, c + 1, 1),
                       a2 = byte_of(s, c + 2, 2), a3 = byte_of(s, c + 3, 3);
        if (last)
            t[c] = (uint32_t)aes_sbox[a0] | (uint32_t)aes_sbox[a1] << 8 |
                   (uint32_t)aes_sbox[a2] << 16 | (uint32_t)aes_sbox[a3] << 24;
        else
            t[c] = aes_te[a0] ^ rotl32(aes_te[a1], 8) ^ rotl32(aes_te[a2], 16) ^
                   rotl32(aes_te[a3], 24);
    }
    for (int c = 0; c < 4; c++)
        s[c] = t[c] ^ k[c];
}

static void split4(uint32_t c[4], uint64_t lo, uint64_t hi)
{
    c[0] = (uint32_t)lo;
    c[1] = (uint32_t)(lo >> 32);
    c[2] = (uint32_t)hi;
    c[3] = (uint32_t)(hi >> 32);
}

static void ars_soft(uint64_t *w, size_t nblk, uint64_t seed, uint64_t a, uint64_t b,
                     uint64_t q0)
{
    uint32_t rk[ARS_ROUNDS + 1][4];
    uint64_t klo = seed, khi = a;
    for (int r = 0; r <= ARS_ROUNDS; r++) {
        split4(rk[r], klo, khi);
        klo += WEYL_LO;
        khi += WEYL_HI;
    }
    for (size_t j = 0; j < nblk; j++) {
        uint32_t s[4];
        split4(s, q0 + j, b);
        for (int c = 0; c < 4; c++)
            s[c] ^= rk[0][c];
        for (int r = 1; r < ARS_ROUNDS; r++)
            aes_round(s, rk[r], 0);
        aes_round(s, rk[ARS_ROUNDS], 1);
        w[2 * j] = (uint64_t)s[0] | (uint64_t)s[1] << 32;
        w[2 * j + 1] = (uint64_t)s[2] | (uint64_t)s[3] << 32;
    }
}

/* ---- AES-NI and VAES ------------------------------------------------------------ */

#if ARS_X86
__attribute__((target("sse2,aes"))) static void ars_aesni(uint64_t *w, size_t nblk,
                                                           uint64_t seed, uint64_t a,
                                                           uint64_t b, uint64_t q0)
{
    __m128i rk[ARS_ROUNDS + 1];
    const __m128i weyl = _mm_set_epi64x((long long)WEYL_HI, (long long)WEYL_LO);
    rk[0] = _mm_set_epi64x((long long)a, (long long)seed);
    for (int r = 1; r <= ARS_ROUNDS; r++)
        rk[r] = _mm_add_epi64(rk[r - 1], weyl);
    size_t j = 0;
    for (; j + 4 <= nblk; j += 4) {
        __m128i v[4];
        for (int i = 0; i < 4; i++)
            v[i] = _mm_xor_si128(_mm_set_epi64x((long long)b, (long long)(q0 + j + i)), rk[0]);
        for (int r = 1; r < ARS_ROUNDS; r++)
            for (int i = 0; i < 4; i++)
                v[i] = _mm_aesenc_si128(v[i], rk[r]);
        for (int i = 0; i < 4; i++)
            _mm_storeu_si128((__m128i *)(void *)(w + 2 * (j + i)),
                             _mm_aesenclast_si128(v[i], rk[ARS_ROUNDS]));
    }
    for (; j < nblk; j++) {
        __m128i v = _mm_xor_si128(_mm_set_epi64x((long long)b, (long long)(q0 + j)), rk[0]);
        for (int r = 1; r < ARS_ROUNDS; r++)
            v = _mm_aesenc_si128(v, rk[r]);
        _mm_storeu_si128((__m128i *)(void *)(w + 2 * j), _mm_aesenclast_si128(v, rk[ARS_ROUNDS]));
    }
}

/* 16 blocks per step in four 512-bit registers (4 AES blocks each). */
__attribute__((target("avx512f,vaes,aes"))) static void ars_vaes(uint64_t *w, size_t nblk,
                                                                   uint64_t seed, uint64_t a,
                                                                   uint64_t b, uint64_t q0)
{
    __m512i rk[ARS_ROUNDS + 1];
    const __m128i weyl = _mm_set_epi64x((long long)WEYL_HI, (long long)WEYL_LO);
    __m128i k = _mm_set_epi64x((long long)a, (long long)seed);
    for (int r = 0; r <= ARS_ROUNDS; r++) {
        rk[r] = _mm512_broadcast_i32x4(k);
        k = _mm_add_epi64(k, weyl);
    }
    const long long bb = (long long)b;
    __m512i ctr = _mm512_set_epi64(bb, (long long)(q0 + 3), bb, (long long)(q0 + 2), bb,
                                   (long long)(q0 + 1), bb, (long long)q0);
    const __m512i inc = _mm512_set_epi64(0, 4, 0, 4, 0, 4, 0, 4);
    size_t j = 0;
    for (; j + 16 <= nblk; j += 16) {
        __m512i v[4];
        for (int i = 0; i < 4; i++) {
            v[i] = _mm512_xor_si512(ctr, rk[0]);
            ctr = _mm512_add_epi64(ctr, inc);
        }
        for (int r = 1; r < ARS_ROUNDS; r++)
            for (int i = 0; i < 4; i++)
                v[i] = _mm512_aesenc_epi128(v[i], rk[r]);
        for (int i = 0; i < 4; i++)
            _mm512_storeu_si512((void *)(w + 2 * (j + 4 * i)),
                                _mm512_aesenclast_epi128(v[i], rk[ARS_ROUNDS]));
    }
    if (j < nblk)
        ars_aesni(w + 2 * j, nblk - j, seed, a, b, q0 + j);
}
#endif

/* ---- dispatch ----------------------------------------------------------------------- */

typedef void (*ars_fn)(uint64_t *, size_t, uint64_t, uint64_t, uint64_t, uint64_t);
static ars_fn ars_fast = ars_soft;
static int ars_kind = AC_RNG_ARS_SOFT;
static pthread_once_t ars_once = PTHREAD_ONCE_INIT;

static void ars_init(void)
{
    aes_build();
#if ARS_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("aes")) {
        ars_fast = ars_aesni;
        ars_kind = AC_RNG_ARS_AESNI;
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vaes")) {
            ars_fast = ars_vaes;
            ars_kind = AC_RNG_ARS_VAES;
        }
    }
#endif
}

int ac_rng_ars_kind(void)
{
    pthread_once(&ars_once, ars_init);
    return ars_kind;
}

/* Words pos .. pos+n-1 with the block function f. */
static void ars_words(ars_fn f, uint64_t *w, size_t n, uint64_t seed, uint64_t a, uint64_t b,
                      uint64_t pos)
{
    if (n == 0)
        return;
    if (pos & 1) { /* the high word of block pos/2 */
        uint64_t two[2];
        f(two, 1, seed, a, b, pos >> 1);
        *w++ = two[1];
        n--;
        pos++;
    }
    f(w, n / 2, seed, a, b, pos >> 1);
    if (n & 1) {
        uint64_t two[2];
        f(two, 1, seed, a, b, (pos + n - 1) >> 1);
        w[n - 1] = two[0];
    }
}

void rng_ars_words(int ref, uint64_t *w, size_t n, uint64_t seed, uint64_t a, uint64_t b,
                   uint64_t pos)
{
    pthread_once(&ars_once, ars_init);
    ars_words(ref ? ars_soft : ars_fast, w, n, seed, a, b, pos);
}

void ac_rng_ars_words(uint64_t *w, size_t n, uint64_t seed, uint64_t stream_a,
                      uint64_t stream_b, uint64_t pos)
{
    rng_ars_words(0, w, n, seed, stream_a, stream_b, pos);
}

void ac_rng_ars_words_ref(uint64_t *w, size_t n, uint64_t seed, uint64_t stream_a,
                          uint64_t stream_b, uint64_t pos)
{
    rng_ars_words(1, w, n, seed, stream_a, stream_b, pos);
}
