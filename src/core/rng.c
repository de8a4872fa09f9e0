/* rng.c — counter-based random streams and samplers (attncheck/rng.h).
 *
 * Word stream: Philox4x64-10 (Random123) with key {seed, stream_a} and
 * counter {block, stream_b, 0, 0}; AC_RNG_BUFWORDS words (several blocks,
 * computed together so their multiplications overlap in the pipeline) are
 * buffered in the state.  See the header for the algorithms and references.
 */
#include <config.h>

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <Random123/philox.h>

#include "attncheck/rng.h"
#include "core/rng_impl.h"


#if AC_RNG_BUFWORDS % 4 != 0
#error "AC_RNG_BUFWORDS must be a multiple of 4 (one Philox4x64 block)"
#endif

#if defined(__GNUC__)
#define AC_LIKELY(x) __builtin_expect(!!(x), 1)
#define AC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define AC_LIKELY(x) (x)
#define AC_UNLIKELY(x) (x)
#endif

/* ---- word stream ------------------------------------------------------- */

static void rng_refill(ac_rng *r)
{
    const philox4x64_key_t key = {{r->key[0], r->key[1]}};
    for (unsigned b = 0; b < AC_RNG_BUFWORDS / 4; b++) {
        const philox4x64_ctr_t ctr = {{r->block + b, r->stream_b, 0, 0}};
        const philox4x64_ctr_t out = philox4x64_R(10, ctr, key);
        r->buf[4 * b + 0] = out.v[0];
        r->buf[4 * b + 1] = out.v[1];
        r->buf[4 * b + 2] = out.v[2];
        r->buf[4 * b + 3] = out.v[3];
    }
    r->block += AC_RNG_BUFWORDS / 4;
    r->pos = 0;
}

static inline uint64_t rng_next(ac_rng *r)
{
    if (AC_UNLIKELY(r->pos >= AC_RNG_BUFWORDS))
        rng_refill(r);
    return r->buf[r->pos++];
}

/* ---- ziggurat tables ----------------------------------------------------- */

#define ZIG_N 256
/* Tail start of the 256-layer normal ziggurat (Marsaglia & Tsang 2000). */
#define ZIG_R 3.6541528853610088
#define ZIG_INV_R (1.0 / ZIG_R)

/* Layer i (0 <= i < ZIG_N) is the rectangle [0, x_i] x [f(x_i), f(x_{i+1})]
 * with f(x) = exp(-x^2/2), x_1 = r > x_2 > ... > x_ZIG_N = 0; layer 0 is the
 * base strip of width x_0 = v / f(r), which stands for the rectangle
 * [0, r] x [0, f(r)] plus the tail beyond r.  With m the 53-bit abscissa of
 * a word, x = m zig_w[i] = (m / 2^53) x_i and m < zig_k[i] iff x < x_{i+1}
 * (the part of the layer certainly under the curve). */
static uint64_t zig_k[ZIG_N];
static double zig_w[ZIG_N];
static double zig_f[ZIG_N + 1];
static pthread_once_t zig_once = PTHREAD_ONCE_INIT;

static void zig_build(void)
{
    const double r = ZIG_R;
    const double fr = exp(-0.5 * r * r);
    /* Area of each layer: r f(r) + \int_r^\infty f = r f(r) + sqrt(pi/2) erfc(r/sqrt 2). */
    const double v = r * fr + 1.2533141373155002512 * erfc(r * 0.70710678118654752440);
    double x[ZIG_N + 1];

    x[0] = v / fr;
    x[1] = r;
    for (int i = 1; i < ZIG_N - 1; i++)
        x[i + 1] = sqrt(-2.0 * log(v / x[i] + exp(-0.5 * x[i] * x[i])));
    x[ZIG_N] = 0.0;

    for (int i = 0; i < ZIG_N; i++) {
        zig_k[i] = (uint64_t)ldexp(x[i + 1] / x[i], 53);
        zig_w[i] = ldexp(x[i], -53);
    }
    for (int i = 0; i <= ZIG_N; i++)
        zig_f[i] = exp(-0.5 * x[i] * x[i]);
}

/* ---- public: streams and uniforms --------------------------------------- */

void ac_rng_init(ac_rng *r, uint64_t seed, uint64_t stream_a, uint64_t stream_b)
{
    pthread_once(&zig_once, zig_build);
    memset(r, 0, sizeof *r);
    r->key[0] = seed;
    r->key[1] = stream_a;
    r->block = 0;
    r->stream_b = stream_b;
    r->pos = AC_RNG_BUFWORDS; /* empty: first use computes blocks 0.. */
}

uint64_t ac_rng_u64(ac_rng *r)
{
    return rng_next(r);
}

double ac_rng_uniform(ac_rng *r)
{
    uint64_t m;
    do
        m = rng_next(r) >> 11;
    while (AC_UNLIKELY(m == 0));
    return (double)(int64_t)m * 0x1p-53;
}

/* ---- normal ------------------------------------------------------------- */

/* x with its sign bit flipped when bit 8 of u is set (branch free). */
static inline double zig_sign(double x, uint64_t u)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    b ^= (u & 0x100u) << 55;
    memcpy(&x, &b, sizeof b);
    return x;
}

/* Words for the slow path: the next word of a source (an ac_rng, or the
 * per-position auxiliary stream of the block normals). */
typedef uint64_t (*zig_word_fn)(void *src);

static uint64_t zig_word_rng(void *src)
{
    return rng_next((ac_rng *)src);
}

/* Uniform on (0,1) from the words of src, exactly as ac_rng_uniform. */
static double zig_uniform(zig_word_fn next, void *src)
{
    uint64_t m;
    do
        m = next(src) >> 11;
    while (AC_UNLIKELY(m == 0));
    return (double)(int64_t)m * 0x1p-53;
}

/* Rest of the ziggurat after word u failed the fast test: wedge or tail,
 * then new words from src until acceptance. */
static double zig_slow_src(uint64_t u, zig_word_fn next, void *src)
{
    for (;;) {
        const unsigned i = (unsigned)(u & 0xffu);
        const uint64_t m = u >> 11;
        double x = (double)(int64_t)m * zig_w[i];

        if (m < zig_k[i])
            return zig_sign(x, u);
        if (i == 0) {
            /* Tail beyond r: Marsaglia (1964), exact. */
            double a, b;
            do {
                a = -log(zig_uniform(next, src)) * ZIG_INV_R;
                b = -log(zig_uniform(next, src));
            } while (b + b <= a * a);
            return zig_sign(ZIG_R + a, u);
        }
        /* Wedge: x in [x_{i+1}, x_i); accept if a uniform height in
         * [f(x_i), f(x_{i+1})] is under the curve. */
        if (zig_f[i] + zig_uniform(next, src) * (zig_f[i + 1] - zig_f[i]) < exp(-0.5 * x * x))
            return zig_sign(x, u);
        u = next(src);
    }
}

static double zig_slow(ac_rng *r, uint64_t u)
{
    return zig_slow_src(u, zig_word_rng, r);
}

static inline double zig_normal(ac_rng *r)
{
    const uint64_t u = rng_next(r);
    const unsigned i = (unsigned)(u & 0xffu);
    const uint64_t m = u >> 11;
    if (AC_LIKELY(m < zig_k[i]))
        return zig_sign((double)(int64_t)m * zig_w[i], u);
    return zig_slow(r, u);
}

double ac_rng_normal(ac_rng *r)
{
    return zig_normal(r);
}

void ac_rng_normal_fill(ac_rng *r, double *x, size_t n)
{
    size_t j = 0;
    while (j < n) {
        if (r->pos >= AC_RNG_BUFWORDS)
            rng_refill(r);
        /* Consume the buffered words in a tight loop; a word that needs the
         * slow path draws its extra words through r, exactly as
         * ac_rng_normal does. */
        while (j < n && r->pos < AC_RNG_BUFWORDS) {
            const uint64_t u = r->buf[r->pos++];
            const unsigned i = (unsigned)(u & 0xffu);
            const uint64_t m = u >> 11;
            if (AC_LIKELY(m < zig_k[i]))
                x[j++] = zig_sign((double)(int64_t)m * zig_w[i], u);
            else
                x[j++] = zig_slow(r, u);
        }
    }
}

/* ---- block normals: position-addressable, ARS-7 words --------------------- */

/* The extra words of the entry at position p (slow path only):
 * Philox4x64-10 with key {seed, a} and counter {j, b, p, 1}, j = 0, 1, ...
 * (the ac_rng streams have counter words 2 and 3 equal to 0, so these
 * streams are disjoint from them). */
typedef struct {
    philox4x64_key_t key;
    uint64_t b, p, j;
    unsigned pos;
    uint64_t buf[4];
} zig_aux;

static uint64_t zig_word_aux(void *src)
{
    zig_aux *x = src;
    if (x->pos >= 4) {
        const philox4x64_ctr_t ctr = {{x->j++, x->b, x->p, 1}};
        const philox4x64_ctr_t out = philox4x64_R(10, ctr, x->key);
        memcpy(x->buf, out.v, sizeof x->buf);
        x->pos = 0;
    }
    return x->buf[x->pos++];
}

static double zig_slow_at(uint64_t u, uint64_t seed, uint64_t a, uint64_t b, uint64_t p)
{
    zig_aux x = {{{seed, a}}, b, p, 0, 4, {0, 0, 0, 0}};
    return zig_slow_src(u, zig_word_aux, &x);
}

/* Normals of words w[0..n-1] at positions pos..  (A vectorised version
 * with AVX-512 gathers was measured no faster than this loop on AMD Zen 4,
 * so both the fast and the reference path use it; they differ in how the
 * words are computed.) */
static void zig_convert(double *x, const uint64_t *w, size_t n, uint64_t seed, uint64_t a,
                        uint64_t b, uint64_t pos)
{
    for (size_t k = 0; k < n; k++) {
        const uint64_t u = w[k];
        const unsigned i = (unsigned)(u & 0xffu);
        const uint64_t m = u >> 11;
        x[k] = AC_LIKELY(m < zig_k[i]) ? zig_sign((double)(int64_t)m * zig_w[i], u)
                                       : zig_slow_at(u, seed, a, b, pos + k);
    }
}

#define BLOCK_CHUNK 256 /* words per step, on the stack (2 KiB) */

void ac_rng_normal_block(double *x, size_t n, uint64_t seed, uint64_t stream_a,
                         uint64_t stream_b, uint64_t pos)
{
    uint64_t w[BLOCK_CHUNK];
    pthread_once(&zig_once, zig_build);
    for (size_t k = 0; k < n; k += BLOCK_CHUNK) {
        const size_t c = n - k < BLOCK_CHUNK ? n - k : BLOCK_CHUNK;
        rng_ars_words(0, w, c, seed, stream_a, stream_b, pos + k);
        zig_convert(x + k, w, c, seed, stream_a, stream_b, pos + k);
    }
}

/* The reference twin: portable AES, each entry from its own word. */
void ac_rng_normal_block_ref(double *x, size_t n, uint64_t seed, uint64_t stream_a,
                             uint64_t stream_b, uint64_t pos)
{
    pthread_once(&zig_once, zig_build);
    for (size_t k = 0; k < n; k++) {
        uint64_t u;
        rng_ars_words(1, &u, 1, seed, stream_a, stream_b, pos + k);
        zig_convert(x + k, &u, 1, seed, stream_a, stream_b, pos + k);
    }
}

/* ---- gamma and Dirichlet ------------------------------------------------ */

/* Marsaglia & Tsang (2000) for shape a >= 1. */
static double gamma_ge1(ac_rng *r, double a)
{
    const double d = a - 1.0 / 3.0;
    const double c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x, v;
        do {
            x = zig_normal(r);
            v = 1.0 + c * x;
        } while (v <= 0.0);
        v = v * v * v;
        const double u = ac_rng_uniform(r);
        const double x2 = x * x;
        if (u < 1.0 - 0.0331 * x2 * x2)
            return d * v;
        if (log(u) < 0.5 * x2 + d * (1.0 - v + log(v)))
            return d * v;
    }
}

static int shape_ok(double a)
{
    return a > 0.0 && a < INFINITY;
}

double ac_rng_gamma(ac_rng *r, double shape)
{
    if (!shape_ok(shape))
        return NAN;
    if (shape >= 1.0)
        return gamma_ge1(r, shape);
    /* Boost: Gamma(a) = Gamma(a+1) U^(1/a). */
    const double u = ac_rng_uniform(r);
    return gamma_ge1(r, shape + 1.0) * pow(u, 1.0 / shape);
}

/* log of the Gamma(a) variate ac_rng_gamma would return, from the same
 * words, without underflow. */
static double log_gamma_variate(ac_rng *r, double a)
{
    if (a >= 1.0)
        return log(gamma_ge1(r, a));
    const double u = ac_rng_uniform(r);
    return log(gamma_ge1(r, a + 1.0)) + log(u) / a;
}

void ac_rng_dirichlet(ac_rng *r, size_t k, const double *alpha, double *out)
{
    if (k == 0)
        return;
    if (alpha) {
        for (size_t i = 0; i < k; i++)
            if (!shape_ok(alpha[i])) {
                for (size_t j = 0; j < k; j++)
                    out[j] = NAN;
                return;
            }
    }
    double lmax = -INFINITY;
    for (size_t i = 0; i < k; i++) {
        out[i] = log_gamma_variate(r, alpha ? alpha[i] : 1.0);
        if (out[i] > lmax)
            lmax = out[i];
    }
    /* The largest term becomes exactly 1, so s >= 1 and nothing overflows.
     * (If every log is -inf — alphas below ~1e-306 — all terms count as 1.) */
    double s = 0.0;
    for (size_t i = 0; i < k; i++) {
        out[i] = (out[i] == lmax) ? 1.0 : exp(out[i] - lmax);
        s += out[i];
    }
    for (size_t i = 0; i < k; i++)
        out[i] /= s;
}

/* ---- bounded integers --------------------------------------------------- */

/* 64 x 64 -> 128-bit product: returns the high word, stores the low one. */
static inline uint64_t mul_hilo(uint64_t a, uint64_t b, uint64_t *lo)
{
#if defined(__SIZEOF_INT128__)
    __extension__ typedef unsigned __int128 u128;
    const u128 p = (u128)a * b;
    *lo = (uint64_t)p;
    return (uint64_t)(p >> 64);
#else
    const uint64_t a0 = a & 0xffffffffu, a1 = a >> 32;
    const uint64_t b0 = b & 0xffffffffu, b1 = b >> 32;
    const uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    const uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    *lo = (mid << 32) | (p00 & 0xffffffffu);
    return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
#endif
}

uint64_t ac_rng_below(ac_rng *r, uint64_t n)
{
    if (n == 0)
        return 0;
    uint64_t lo;
    uint64_t hi = mul_hilo(rng_next(r), n, &lo);
    if (lo < n) {
        const uint64_t t = (0 - n) % n; /* 2^64 mod n */
        while (lo < t)
            hi = mul_hilo(rng_next(r), n, &lo);
    }
    return hi;
}
