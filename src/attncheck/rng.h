/* attncheck/rng.h — counter-based random streams (Philox4x64-10) and the
 * samplers built on them: uniform, normal (ziggurat), gamma, Dirichlet and
 * bounded integers.
 *
 * Streams
 * -------
 * A stream is named by three 64-bit numbers (seed, stream_a, stream_b).  Its
 * output is the sequence of 64-bit words
 *
 *     Philox4x64-10(counter = {b, stream_b, 0, 0}, key = {seed, stream_a})
 *
 * for block index b = 0, 1, 2, ..., each block giving its four words in order
 * v[0], v[1], v[2], v[3].  Philox4x64-10 is the counter-based generator of
 *
 *     J. K. Salmon, M. A. Moraes, R. O. Dror and D. E. Shaw, "Parallel random
 *     numbers: as easy as 1, 2, 3", Proc. SC'11 (2011),
 *     doi:10.1145/2063384.2063405 (Random123 library, <Random123/philox.h>),
 *
 * which passes TestU01's BigCrush for every key and counter pattern tested.
 * Each stream has 2^64 blocks (2^66 words).  Because every value depends only
 * on (seed, stream_a, stream_b) and its position in the stream, results never
 * depend on the number of threads or on how draws from different streams are
 * interleaved: parallel code gives each unit of work its own stream, e.g.
 * ac_rng_init(&r, seed, head, trial).  An ac_rng is a plain struct, may live
 * on the stack and may be copied (a copy continues the same sequence); it
 * must not be used by two threads at once.
 *
 * The samplers below consume words from the stream in a documented,
 * deterministic way, so the same (seed, stream ids) and the same sequence of
 * calls always give bit-identical results on the same platform (the ziggurat
 * tables are computed with exp/log/erfc, and the normal, gamma and Dirichlet
 * samplers call exp/log/pow in rarely taken branches, so with another libm
 * a rare draw may differ in the last bits).
 *
 * Normal variates: ziggurat
 * -------------------------
 * ac_rng_normal uses the ziggurat method of
 *
 *     G. Marsaglia and W. W. Tsang, "The ziggurat method for generating
 *     random variables", J. Statist. Software 5(8) (2000),
 *     doi:10.18637/jss.v005.i08,
 *
 * with 256 layers (tail start r = 3.6541528853610088, layer area v computed
 * from r as r f(r) + \int_r^\infty f, f(x) = exp(-x^2/2)), following the
 * improvements of
 *
 *     J. A. Doornik, "An improved ziggurat method to generate normal random
 *     samples", Technical report, Nuffield College, Oxford (2005):
 *
 * the layer index (bits 0..7), the sign (bit 8) and the abscissa (bits
 * 11..63, 53 bits) come from disjoint bits of one 64-bit word, so they are
 * independent, and the tail |x| > r is sampled exactly by the method of
 *
 *     G. Marsaglia, "Generating a variable from the tail of the normal
 *     distribution", Technometrics 6(1) 101-102 (1964)
 *
 * (x = r + a, a = -log(U1)/r, accepted when -2 log(U2) > a^2).  Wedge
 * and tail steps draw further words with ac_rng_uniform.  About 98.5% of
 * draws use a single word and no transcendental function.  The tables are
 * computed once per process by the first ac_rng_init (pthread_once, thread
 * safe) by the
 * recurrence x_1 = r, x_{i+1} = sqrt(-2 log(v/x_i + f(x_i))).  The sampler
 * is exact up to the rounding of the tables and of the arithmetic (relative
 * errors of order 1e-16 in the density).
 */
#ifndef ATTNCHECK_RNG_H
#define ATTNCHECK_RNG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Number of output words buffered (a whole number of Philox blocks).  The
 * buffer size never changes the values produced, only speed. */
#define AC_RNG_BUFWORDS 16

/* State of one stream.  Fields are private: use the functions below. */
typedef struct {
    uint64_t key[2];               /* {seed, stream_a} */
    uint64_t block;                /* counter word 0 of the next block to compute */
    uint64_t stream_b;             /* counter word 1 */
    unsigned pos;                  /* next unread word of buf; AC_RNG_BUFWORDS = empty */
    uint64_t buf[AC_RNG_BUFWORDS]; /* output words of blocks block-4 .. block-1 */
} ac_rng;

/* Initialise r to the start of stream (seed, stream_a, stream_b): Philox key
 * {seed, stream_a}, counter {block index, stream_b, 0, 0} with the block
 * index starting at 0 (see the top of this file).  Also builds the ziggurat
 * tables on first call (thread safe).  Every ac_rng must be initialised with
 * this function before use. */
void ac_rng_init(ac_rng *r, uint64_t seed, uint64_t stream_a, uint64_t stream_b);

/* Next 64-bit word of the stream (uniform on [0, 2^64)). */
uint64_t ac_rng_u64(ac_rng *r);

/* Uniform variate on the open interval (0,1): k 2^-53 with k uniform on
 * {1, ..., 2^53 - 1}, from the top 53 bits of one word (a word giving k = 0,
 * probability 2^-53, is skipped and the next word used).  Never exactly 0
 * or 1; the distribution is symmetric about 1/2. */
double ac_rng_uniform(ac_rng *r);

/* Standard normal variate N(0,1) by the 256-layer ziggurat (see above). */
double ac_rng_normal(ac_rng *r);

/* Fill x[0..n-1] with standard normal variates.  Gives exactly the values
 * of n successive calls of ac_rng_normal and leaves r in the same state, but
 * is faster (no call per value, tables loaded once). */
void ac_rng_normal_fill(ac_rng *r, double *x, size_t n);

/* Gamma(shape, 1) variate (density x^(a-1) e^-x / Gamma(a), mean and
 * variance a) by
 *
 *     G. Marsaglia and W. W. Tsang, "A simple method for generating gamma
 *     variables", ACM Trans. Math. Software 26(3) 363-372 (2000),
 *     doi:10.1145/358407.358414:
 *
 * for a >= 1, d = a - 1/3, c = 1/sqrt(9d), repeat x ~ N(0,1), v = (1+cx)^3
 * until v > 0 and (u < 1 - 0.0331 x^4 or log u < x^2/2 + d(1 - v + log v)),
 * return d v (acceptance rate >= 0.95).  For 0 < a < 1 it draws U first,
 * then G ~ Gamma(a+1), and returns G U^(1/a) (as the paper suggests); for
 * very small a the result may underflow to 0 (when the true value is below
 * DBL_TRUE_MIN).  Returns NaN, consuming nothing, unless shape is finite and
 * > 0. */
double ac_rng_gamma(ac_rng *r, double shape);

/* Dirichlet(alpha_1, ..., alpha_k) variate in out[0..k-1]: independent
 * G_i ~ Gamma(alpha_i, 1), drawn in order with the same words as
 * ac_rng_gamma, normalised to out_i = G_i / sum_j G_j.  The computation is
 * done in logarithms (log G_i, then exp(log G_i - max) / sum), so small
 * alphas whose gammas underflow still give a valid point of the simplex.
 * out_i >= 0 and |sum_i out_i - 1| <= k u (u = 2^-53, to first order).
 * alpha == NULL means all alpha_i = 1 (uniform on the simplex).  If an alpha_i
 * is not finite and > 0, out is filled with NaN.  k == 0 does nothing. */
void ac_rng_dirichlet(ac_rng *r, size_t k, const double *alpha, double *out);

/* Uniform integer on {0, ..., n-1}, exactly unbiased, by the multiply-and-
 * reject method of
 *
 *     D. Lemire, "Fast random integer generation in an interval", ACM Trans.
 *     Model. Comput. Simul. 29(1) 3 (2019), doi:10.1145/3230636:
 *
 * the result is the high word of w n for a word w, redrawn while the low
 * word is below t = 2^64 mod n, so every value has probability exactly 1/n;
 * the expected number of words is 1/(1 - t/2^64) < 2 (about 1 + n/2^64 for
 * small n).  n == 0 returns 0 and consumes nothing. */
uint64_t ac_rng_below(ac_rng *r, uint64_t n);

/* ---- block normals (position-addressable) ------------------------------------
 *
 * A second, faster family of normal streams for large blocks of i.i.d.
 * N(0,1) entries (the blocks of `attncheck condition`).  Entry p (p = 0, 1,
 * 2, ...) of the block stream (seed, stream_a, stream_b) depends only on
 * (seed, stream_a, stream_b, p), so a block may be drawn in pieces, in any
 * order, by any number of threads, with the same values.
 *
 * Words: ARS-7 of Salmon et al. (SC'11, the paper above; Random123's
 * ars1xm128i_R(7, ctr, key)), a counter-based generator made of AES rounds
 * with a Weyl key schedule, which passes TestU01's BigCrush (ARS-5 already
 * does; 7 rounds is Random123's default, for a safety margin).  Block q has
 * counter {q, stream_b} and key {seed, stream_a} (64-bit halves of the
 * 128-bit state, low half first, little-endian bytes); its low half is word
 * 2q, its high half word 2q+1.  The words are computed with VAES (AVX-512),
 * AES-NI or portable table-driven AES rounds, whichever the CPU has; all
 * three give the same bits (src/core/test/test_rng_block.c checks them
 * against each other, against Random123's ars.h where the compiler provides
 * AES-NI, and tests/ars_oracle.py against an independent FIPS-197
 * implementation).
 *
 * Normals: entry p is the 256-layer ziggurat above applied to word p, with
 * the same tables, fast test, wedge and exact tail.  The rare entries
 * (about 1.5%) that need further words take them from their own auxiliary
 * stream: Philox4x64-10 with key {seed, stream_a} and counter {j, stream_b,
 * p, 1}, j = 0, 1, ... (disjoint from every ac_rng stream, whose counter
 * words 2 and 3 are 0).  The distribution is therefore exactly that of
 * ac_rng_normal (up to the same rounding); the values differ from the
 * ac_rng streams.  Positions must satisfy pos + n <= 2^64. */

/* x[k] = entry pos + k of the block stream (seed, stream_a, stream_b), k <
 * n.  Fast path (vector instructions when the CPU has them). */
void ac_rng_normal_block(double *x, size_t n, uint64_t seed, uint64_t stream_a,
                         uint64_t stream_b, uint64_t pos);

/* The same values computed by the portable scalar code (the reference
 * twin: table-driven AES, one entry at a time). */
void ac_rng_normal_block_ref(double *x, size_t n, uint64_t seed, uint64_t stream_a,
                             uint64_t stream_b, uint64_t pos);

/* Words pos .. pos+n-1 of the ARS-7 stream (seed, stream_a, stream_b):
 * fastest instructions (_ars_words) or portable code (_ars_words_ref). */
void ac_rng_ars_words(uint64_t *w, size_t n, uint64_t seed, uint64_t stream_a,
                      uint64_t stream_b, uint64_t pos);
void ac_rng_ars_words_ref(uint64_t *w, size_t n, uint64_t seed, uint64_t stream_a,
                          uint64_t stream_b, uint64_t pos);

/* Which instructions ac_rng_ars_words uses on this CPU (for reports). */
enum { AC_RNG_ARS_SOFT = 0, AC_RNG_ARS_AESNI = 1, AC_RNG_ARS_VAES = 2 };
int ac_rng_ars_kind(void);

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_RNG_H */
