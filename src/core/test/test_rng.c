/* test_rng.c — unit tests of the counter-based random streams (rng.h).
 *
 * Statistical tests use fixed seeds by default, so they are deterministic.
 * Set ATTNCHECK_TEST_SEED=<integer> to run them with another seed; every
 * failure message prints the seed in use.  Thresholds are chosen so that a
 * correct implementation fails with probability about 1e-6 or less per
 * check (Kolmogorov-Smirnov at alpha = 1e-6 with the asymptotic critical
 * value, chi-square p-values > 1e-6, moment checks within 6 standard errors,
 * tail counts within 5 standard errors).
 */
#include <config.h>

#include <check.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <Random123/philox.h>

#include "attncheck/rng.h"
#include "testutil.h"

static uint64_t g_seed = UINT64_C(20240521);

#define SEEDFMT " [seed %" PRIu64 "; rerun with ATTNCHECK_TEST_SEED=%" PRIu64 "]"
#define CHECKF(cond, fmt, ...) \
    ck_assert_msg((cond), fmt SEEDFMT, __VA_ARGS__, g_seed, g_seed)
#define CHECK(cond, msg) ck_assert_msg((cond), "%s" SEEDFMT, (msg), g_seed, g_seed)

/* Asymptotic Kolmogorov critical value: P(sqrt(n) D > c) ~ 2 exp(-2 c^2). */
static double ks_crit(size_t n, double alpha)
{
    return sqrt(-0.5 * log(alpha / 2.0)) / sqrt((double)n);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Kolmogorov-Smirnov statistic of x[0..n-1] (sorted in place) vs cdf. */
static double ks_stat(double *x, size_t n, double (*cdf)(double, const void *), const void *par)
{
    qsort(x, n, sizeof *x, cmp_double);
    double d = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double f = cdf(x[i], par);
        const double d1 = f - (double)i / (double)n;
        const double d2 = (double)(i + 1) / (double)n - f;
        if (d1 > d)
            d = d1;
        if (d2 > d)
            d = d2;
    }
    return d;
}

static double cdf_uniform(double x, const void *par)
{
    (void)par;
    return x < 0 ? 0 : x > 1 ? 1 : x;
}

static double cdf_normal(double x, const void *par)
{
    (void)par;
    return gsl_cdf_ugaussian_P(x);
}

static double cdf_gamma(double x, const void *par)
{
    return gsl_cdf_gamma_P(x, *(const double *)par, 1.0);
}

/* |X| conditional on |X| > t, X ~ N(0,1). */
static double cdf_normal_tail(double x, const void *par)
{
    const double t = *(const double *)par;
    return 1.0 - gsl_cdf_ugaussian_Q(x) / gsl_cdf_ugaussian_Q(t);
}

/* Beta(1, b) marginal of a flat Dirichlet. */
static double cdf_beta1(double x, const void *par)
{
    return 1.0 - pow(1.0 - x, *(const double *)par);
}

static double *xmalloc_d(size_t n)
{
    double *p = malloc(n * sizeof *p);
    ck_assert_msg(p != NULL, "out of memory");
    return p;
}

/* ---- stream layout and determinism -------------------------------------- */

START_TEST(test_kat_and_layout)
{
    /* Random123 known-answer vector: philox4x64-10, counter 0, key 0. */
    static const uint64_t kat[4] = {
        UINT64_C(0x16554d9eca36314c), UINT64_C(0xdb20fe9d672d0fdc),
        UINT64_C(0xd7e772cee186176b), UINT64_C(0x7e68b68aec7ba23b)};
    ac_rng r;
    ac_rng_init(&r, 0, 0, 0);
    for (int i = 0; i < 4; i++) {
        const uint64_t w = ac_rng_u64(&r);
        ck_assert_msg(w == kat[i], "word %d = %016" PRIx64 ", KAT %016" PRIx64, i, w, kat[i]);
    }

    /* Documented layout: key {seed, a}, counter {block, b, 0, 0}. */
    const uint64_t s = g_seed, a = UINT64_C(0x1234567890abcdef), b = 77;
    ac_rng_init(&r, s, a, b);
    const philox4x64_key_t key = {{s, a}};
    for (uint64_t blk = 0; blk < 40; blk++) {
        const philox4x64_ctr_t ctr = {{blk, b, 0, 0}};
        const philox4x64_ctr_t o = philox4x64_R(10, ctr, key);
        for (int i = 0; i < 4; i++) {
            const uint64_t w = ac_rng_u64(&r);
            CHECKF(w == o.v[i], "block %" PRIu64 " word %d differs from Philox4x64-10", blk, i);
        }
    }
}
END_TEST

START_TEST(test_determinism)
{
    ac_rng r1, r2;
    ac_rng_init(&r1, g_seed, 3, 4);
    ac_rng_init(&r2, g_seed, 3, 4);
    int bad = -1;
    for (int i = 0; i < 10000 && bad < 0; i++)
        if (ac_rng_u64(&r1) != ac_rng_u64(&r2))
            bad = i;
    CHECKF(bad < 0, "same stream differs at word %d", bad);
    /* Every sampler on the same stream gives the same values. */
    ac_rng_init(&r1, g_seed, 5, 6);
    ac_rng_init(&r2, g_seed, 5, 6);
    int bad_n = 0, bad_u = 0, bad_g = 0, bad_b = 0, bad_d = 0;
    for (int i = 0; i < 2000; i++) {
        const double al[3] = {0.3, 1.0, 4.0};
        double d1[3], d2[3];
        bad_n += ac_rng_normal(&r1) != ac_rng_normal(&r2);
        bad_u += ac_rng_uniform(&r1) != ac_rng_uniform(&r2);
        bad_g += ac_rng_gamma(&r1, 0.7) != ac_rng_gamma(&r2, 0.7);
        bad_b += ac_rng_below(&r1, 1000) != ac_rng_below(&r2, 1000);
        ac_rng_dirichlet(&r1, 3, al, d1);
        ac_rng_dirichlet(&r2, 3, al, d2);
        bad_d += memcmp(d1, d2, sizeof d1) != 0;
    }
    CHECKF(bad_n + bad_u + bad_g + bad_b + bad_d == 0,
           "samplers not deterministic: normal %d, uniform %d, gamma %d, below %d, dirichlet %d",
           bad_n, bad_u, bad_g, bad_b, bad_d);
    /* A copy of the state continues the same sequence. */
    r2 = r1;
    bad = 0;
    for (int i = 0; i < 100; i++)
        bad += ac_rng_normal(&r1) != ac_rng_normal(&r2);
    CHECK(bad == 0, "copied state diverges");
}
END_TEST

START_TEST(test_fill_equals_single)
{
    static const size_t sizes[] = {0, 1, 2, 3, 15, 16, 17, 31, 33, 100, 1000, 12345, 200000};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (unsigned skip = 0; skip < 6; skip += 5) {
            const size_t n = sizes[s];
            double *a = xmalloc_d(n + 1), *b = xmalloc_d(n + 1);
            ac_rng r1, r2;
            ac_rng_init(&r1, g_seed, 11, s);
            ac_rng_init(&r2, g_seed, 11, s);
            for (unsigned k = 0; k < skip; k++) {
                ac_rng_u64(&r1);
                ac_rng_u64(&r2);
            }
            ac_rng_normal_fill(&r1, a, n);
            for (size_t i = 0; i < n; i++)
                b[i] = ac_rng_normal(&r2);
            size_t bad = n;
            for (size_t i = 0; i < n && bad == n; i++)
                if (memcmp(&a[i], &b[i], sizeof(double)) != 0)
                    bad = i;
            CHECKF(bad == n, "fill(%zu)[%zu] = %.17g but single calls give %.17g", n, bad,
                   a[bad < n ? bad : 0], b[bad < n ? bad : 0]);
            CHECKF(ac_rng_u64(&r1) == ac_rng_u64(&r2), "state after fill(%zu) differs", n);
            free(a);
            free(b);
        }
    }
    /* Pieces of fills, interleaved with single calls, equal one sequence. */
    ac_rng r1, r2;
    ac_rng_init(&r1, g_seed, 12, 0);
    ac_rng_init(&r2, g_seed, 12, 0);
    double buf[64];
    int bad_rep = -1;
    for (int rep = 0; rep < 2000 && bad_rep < 0; rep++) {
        const size_t n = (size_t)(rep * 7 % 64);
        ac_rng_normal_fill(&r1, buf, n);
        for (size_t i = 0; i < n; i++)
            if (buf[i] != ac_rng_normal(&r2))
                bad_rep = rep;
        if (ac_rng_normal(&r1) != ac_rng_normal(&r2))
            bad_rep = rep;
    }
    CHECKF(bad_rep < 0, "piecewise fills and single calls differ at repetition %d", bad_rep);
}
END_TEST

START_TEST(test_streams_differ)
{
    const uint64_t s = g_seed;
    const uint64_t ids[5][3] = {{s, 0, 0}, {s, 0, 1}, {s, 1, 0}, {s + 1, 0, 0}, {s, 1, 1}};
    uint64_t w[5][64];
    for (int k = 0; k < 5; k++) {
        ac_rng r;
        ac_rng_init(&r, ids[k][0], ids[k][1], ids[k][2]);
        for (int i = 0; i < 64; i++)
            w[k][i] = ac_rng_u64(&r);
    }
    for (int k = 0; k < 5; k++)
        for (int l = k + 1; l < 5; l++) {
            int same = 0;
            for (int i = 0; i < 64; i++)
                same += w[k][i] == w[l][i];
            CHECKF(same == 0, "streams %d and %d share %d of 64 words", k, l, same);
        }

    /* Interleaving draws of two streams changes nothing. */
    ac_rng a, b, a2, b2;
    ac_rng_init(&a, s, 7, 1);
    ac_rng_init(&b, s, 7, 2);
    ac_rng_init(&a2, s, 7, 1);
    ac_rng_init(&b2, s, 7, 2);
    double xa[500], xb[500];
    for (int i = 0; i < 500; i++) {
        xa[i] = ac_rng_normal(&a);
        xb[i] = ac_rng_gamma(&b, 0.5);
    }
    int bad_a = 0, bad_b = 0;
    for (int i = 0; i < 500; i++)
        bad_b += xb[i] != ac_rng_gamma(&b2, 0.5);
    for (int i = 0; i < 500; i++)
        bad_a += xa[i] != ac_rng_normal(&a2);
    CHECKF(bad_a == 0 && bad_b == 0, "interleaving changed %d draws of stream a, %d of stream b",
           bad_a, bad_b);
}
END_TEST

/* ---- uniform ------------------------------------------------------------ */

START_TEST(test_uniform)
{
    ac_rng r;
    ac_rng_init(&r, g_seed, 21, 0);
    const size_t n = 1000000;
    double sum = 0.0;
    size_t bad = n;
    double badu = 0.0, umin = 1.0, umax = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double u = ac_rng_uniform(&r);
        if (!(u > 0.0 && u < 1.0 && ldexp(u, 53) == floor(ldexp(u, 53))) && bad == n) {
            bad = i;
            badu = u;
        }
        umin = u < umin ? u : umin;
        umax = u > umax ? u : umax;
        sum += u;
    }
    CHECKF(bad == n, "uniform draw %zu = %.17g is not k 2^-53 in (0,1)", bad, badu);
    CHECKF(umin > 0.0 && umax < 1.0, "uniform range [%.17g, %.17g]", umin, umax);
    const double z = (sum / (double)n - 0.5) / sqrt(1.0 / 12.0 / (double)n);
    CHECKF(fabs(z) < 6.0, "uniform mean is %.2f standard errors from 1/2", z);

    const size_t m = 200000;
    double *x = xmalloc_d(m);
    for (size_t i = 0; i < m; i++)
        x[i] = ac_rng_uniform(&r);
    const double d = ks_stat(x, m, cdf_uniform, NULL), c = ks_crit(m, 1e-6);
    CHECKF(d < c, "uniform KS statistic %.3g exceeds critical value %.3g (alpha 1e-6)", d, c);
    free(x);
}
END_TEST

/* ---- normal ------------------------------------------------------------- */

/* The normal tests run twice (loop index _i): 0 = the ac_rng stream
 * (g_seed, id, 0) by ac_rng_normal_fill, 1 = the block normals (g_seed, id,
 * 0) by ac_rng_normal_block, from position 0 on. */
typedef struct {
    int block;
    ac_rng r;
    uint64_t id, pos;
} nsrc;

static void nsrc_init(nsrc *q, int block, uint64_t id)
{
    q->block = block;
    q->id = id;
    q->pos = 0;
    ac_rng_init(&q->r, g_seed, id, 0);
}

static void nsrc_fill(nsrc *q, double *x, size_t n)
{
    if (!q->block) {
        ac_rng_normal_fill(&q->r, x, n);
        return;
    }
    ac_rng_normal_block(x, n, g_seed, q->id, 0, q->pos);
    q->pos += n;
}

START_TEST(test_normal_moments)
{
    const size_t n = 1000000;
    double *x = xmalloc_d(n);
    nsrc q;
    nsrc_init(&q, _i, 31);
    nsrc_fill(&q, x, n);
    double mean = 0.0;
    for (size_t i = 0; i < n; i++)
        mean += x[i];
    mean /= (double)n;
    CHECKF(isfinite(mean), "normal draws are not finite (mean %g)", mean);
    double m2 = 0, m3 = 0, m4 = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = x[i] - mean, d2 = d * d;
        m2 += d2;
        m3 += d2 * d;
        m4 += d2 * d2;
    }
    m2 /= (double)n;
    m3 /= (double)n;
    m4 /= (double)n;
    const double dn = (double)n;
    const double z_mean = mean * sqrt(dn);
    const double z_var = (m2 - 1.0) / sqrt(2.0 / dn);
    const double z_skew = (m3 / pow(m2, 1.5)) / sqrt(6.0 / dn);
    const double z_kurt = (m4 / (m2 * m2) - 3.0) / sqrt(24.0 / dn);
    CHECKF(fabs(z_mean) < 6, "normal mean %.3g is %.2f s.e. from 0", mean, z_mean);
    CHECKF(fabs(z_var) < 6, "normal variance %.5f is %.2f s.e. from 1", m2, z_var);
    CHECKF(fabs(z_skew) < 6, "normal skewness is %.2f s.e. from 0", z_skew);
    CHECKF(fabs(z_kurt) < 6, "normal excess kurtosis is %.2f s.e. from 0", z_kurt);
    free(x);
}
END_TEST

START_TEST(test_normal_ks)
{
    const size_t n = 200000;
    double *x = xmalloc_d(n);
    nsrc q;
    nsrc_init(&q, _i, 32);
    /* Half by single calls (block: the reference twin), half by fill: both
     * paths are tested. */
    for (size_t i = 0; i < n / 2; i++)
        if (_i)
            ac_rng_normal_block_ref(x + i, 1, g_seed, 32, 0, i);
        else
            x[i] = ac_rng_normal(&q.r);
    q.pos = n / 2;
    nsrc_fill(&q, x + n / 2, n - n / 2);
    const double d = ks_stat(x, n, cdf_normal, NULL), c = ks_crit(n, 1e-6);
    CHECKF(d < c, "normal KS statistic %.3g exceeds critical value %.3g (n %zu, alpha 1e-6)", d, c, n);
    free(x);
}
END_TEST

/* Tails: 6.4e7 draws give ~16500 beyond the ziggurat's r, enough for the
 * KS test to tell the exact tail from, e.g., an unrejected exponential. */
START_TEST(test_normal_tails)
{
    const size_t n = 64000000, chunk = 1 << 16, maxtail = 40000;
    const double r0 = 3.6541528853610088; /* ziggurat tail start */
    double *x = xmalloc_d(chunk);
    double *tail = xmalloc_d(maxtail);
    size_t c35 = 0, c40 = 0, nt = 0;
    nsrc q;
    nsrc_init(&q, _i, 34);
    for (size_t done = 0; done < n; done += chunk) {
        nsrc_fill(&q, x, chunk);
        for (size_t i = 0; i < chunk; i++) {
            const double a = fabs(x[i]);
            if (a > 3.5) {
                c35++;
                c40 += a > 4.0;
                if (a > r0 && nt < maxtail)
                    tail[nt++] = a;
            }
        }
    }
    const double thr[2] = {3.5, 4.0};
    const size_t cnt[2] = {c35, c40};
    for (int k = 0; k < 2; k++) {
        const double p = 2.0 * gsl_cdf_ugaussian_Q(thr[k]);
        const double z = ((double)cnt[k] - (double)n * p) / sqrt((double)n * p * (1 - p));
        CHECKF(fabs(z) < 5, "fraction beyond |x| > %.1f: %zu of %zu, expected %.1f (%.2f s.e.)",
               thr[k], cnt[k], n, (double)n * p, z);
    }
    /* The exact tail algorithm: |x| given |x| > r, by KS and by its mean
     * E = phi(r)/Q(r) (within 6 s.e.). */
    CHECKF(nt > 10000 && nt < maxtail, "%zu tail draws", nt);
    double mean = 0, m2 = 0;
    for (size_t i = 0; i < nt; i++)
        mean += tail[i];
    mean /= (double)nt;
    for (size_t i = 0; i < nt; i++)
        m2 += (tail[i] - mean) * (tail[i] - mean);
    const double se = sqrt(m2 / (double)(nt - 1) / (double)nt);
    const double emean = gsl_ran_ugaussian_pdf(r0) / gsl_cdf_ugaussian_Q(r0);
    CHECKF(fabs(mean - emean) < 6 * se, "tail mean %.5f, expected %.5f (%.2f s.e.)", mean, emean,
           (mean - emean) / se);
    const double d = ks_stat(tail, nt, cdf_normal_tail, &r0), c = ks_crit(nt, 1e-6);
    CHECKF(d < c, "tail |x| > r: KS statistic %.3g exceeds %.3g (n %zu)", d, c, nt);
    free(x);
    free(tail);
}
END_TEST

/* Chi-square on 400 equiprobable bins (catches errors in groups of layers). */
START_TEST(test_normal_bins)
{
    const size_t n = 4000000, nbins = 400;
    double *x = xmalloc_d(n);
    size_t *bins = calloc(nbins, sizeof *bins);
    ck_assert_msg(bins != NULL, "out of memory");
    nsrc q;
    nsrc_init(&q, _i, 33);
    nsrc_fill(&q, x, n);

    for (size_t i = 0; i < n; i++) {
        size_t b = (size_t)(gsl_cdf_ugaussian_P(x[i]) * (double)nbins);
        if (b >= nbins)
            b = nbins - 1;
        bins[b]++;
    }
    const double e = (double)n / (double)nbins;
    double chi2 = 0.0;
    for (size_t b = 0; b < nbins; b++)
        chi2 += ((double)bins[b] - e) * ((double)bins[b] - e) / e;
    const double pval = gsl_cdf_chisq_Q(chi2, (double)(nbins - 1));
    CHECKF(pval > 1e-6, "normal chi-square %.1f on %zu bins, p = %.3g", chi2, nbins - 1, pval);
    free(x);
    free(bins);
}
END_TEST

/* ---- gamma -------------------------------------------------------------- */

START_TEST(test_gamma)
{
    static const double shapes[] = {0.1, 0.5, 1.0, 2.5, 10.0, 100.0};
    const size_t n = 50000;
    double *x = xmalloc_d(n);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const double a = shapes[s];
        ac_rng r;
        ac_rng_init(&r, g_seed, 41, s);
        double sum = 0.0;
        size_t bad = n;
        for (size_t i = 0; i < n; i++) {
            x[i] = ac_rng_gamma(&r, a);
            if (!(x[i] >= 0.0 && isfinite(x[i])) && bad == n)
                bad = i;
            sum += x[i];
        }
        CHECKF(bad == n, "gamma(%g) draw %zu = %g", a, bad, bad < n ? x[bad] : 0.0);
        const double z = (sum / (double)n - a) / sqrt(a / (double)n);
        CHECKF(fabs(z) < 6, "gamma(%g) mean %.5g is %.2f s.e. from %g", a, sum / (double)n, z, a);
        const double d = ks_stat(x, n, cdf_gamma, &a), c = ks_crit(n, 1e-6);
        CHECKF(d < c, "gamma(%g) KS statistic %.3g exceeds %.3g (n %zu, alpha 1e-6)", a, d, c, n);
    }
    free(x);

    ac_rng q, q0;
    ac_rng_init(&q, g_seed, 42, 0);
    ac_rng_init(&q0, g_seed, 42, 0);
    CHECK(isnan(ac_rng_gamma(&q, 0.0)), "gamma(0) is not NaN");
    CHECK(isnan(ac_rng_gamma(&q, -1.0)), "gamma(-1) is not NaN");
    CHECK(isnan(ac_rng_gamma(&q, NAN)), "gamma(NaN) is not NaN");
    CHECK(isnan(ac_rng_gamma(&q, INFINITY)), "gamma(inf) is not NaN");
    CHECK(ac_rng_u64(&q) == ac_rng_u64(&q0), "invalid gamma shape consumed words");
}
END_TEST

/* ---- Dirichlet ---------------------------------------------------------- */

START_TEST(test_dirichlet)
{
    enum { K = 5 };
    static const double alpha[K] = {0.1, 0.5, 1.0, 2.0, 7.0};
    const size_t n = 100000;
    double a0 = 0;
    for (int i = 0; i < K; i++)
        a0 += alpha[i];
    double sum[K] = {0};
    ac_rng r;
    ac_rng_init(&r, g_seed, 51, 0);
    long double worst = 0;
    size_t out_of_range = 0;
    for (size_t t = 0; t < n; t++) {
        double out[K];
        long double s = 0;
        ac_rng_dirichlet(&r, K, alpha, out);
        for (int i = 0; i < K; i++) {
            out_of_range += !(out[i] >= 0.0 && out[i] <= 1.0);
            s += out[i];
            sum[i] += out[i];
        }
        if (fabsl(s - 1.0L) > worst)
            worst = fabsl(s - 1.0L);
    }
    CHECKF(out_of_range == 0, "%zu dirichlet components outside [0,1]", out_of_range);
    CHECKF(worst <= K * 0x1p-53 * 1.001, "dirichlet |sum - 1| = %.3Lg exceeds k u = %.3g", worst,
           K * 0x1p-53);
    for (int i = 0; i < K; i++) {
        const double m = alpha[i] / a0;
        const double var = alpha[i] * (a0 - alpha[i]) / (a0 * a0 * (a0 + 1.0));
        const double z = (sum[i] / (double)n - m) / sqrt(var / (double)n);
        CHECKF(fabs(z) < 6, "dirichlet mean %d = %.5f, expected %.5f (%.2f s.e.)", i, sum[i] / (double)n, m, z);
    }

    /* alpha == NULL: flat; the first marginal is Beta(1, k-1). */
    const size_t m = 50000;
    double *x = xmalloc_d(m);
    const double bpar = 3.0;
    for (size_t t = 0; t < m; t++) {
        double out[4];
        ac_rng_dirichlet(&r, 4, NULL, out);
        x[t] = out[0];
    }
    const double d = ks_stat(x, m, cdf_beta1, &bpar), c = ks_crit(m, 1e-6);
    CHECKF(d < c, "flat dirichlet marginal KS %.3g exceeds %.3g", d, c);
    free(x);

    /* Tiny alphas: gammas underflow, the log-space normalisation copes. */
    static const double tiny[3] = {1e-3, 1e-3, 1e-3};
    static const double tinier[2] = {1e-300, 1e-300};
    size_t bad_tiny = 0, bad_tinier = 0;
    for (int t = 0; t < 1000; t++) {
        double out[3];
        ac_rng_dirichlet(&r, 3, tiny, out);
        long double s = 0;
        for (int i = 0; i < 3; i++) {
            bad_tiny += !(out[i] >= 0.0 && out[i] <= 1.0);
            s += out[i];
        }
        bad_tiny += fabsl(s - 1.0L) > 3 * 0x1p-53 * 1.001;
        ac_rng_dirichlet(&r, 2, tinier, out);
        bad_tinier += !(out[0] >= 0.0 && out[1] >= 0.0 && out[0] + out[1] == 1.0);
    }
    CHECKF(bad_tiny == 0, "alpha 1e-3: %zu bad components or sums", bad_tiny);
    CHECKF(bad_tinier == 0, "alpha 1e-300: %zu bad points", bad_tinier);
    /* Invalid alpha: NaN.  k = 0: nothing written. */
    const double bad[2] = {1.0, -1.0};
    double out[2] = {5.0, 5.0};
    ac_rng_dirichlet(&r, 2, bad, out);
    CHECK(isnan(out[0]) && isnan(out[1]), "invalid alpha does not give NaN");
    out[0] = 5.0;
    ac_rng_dirichlet(&r, 0, NULL, out);
    CHECK(out[0] == 5.0, "k = 0 wrote output");
}
END_TEST

/* ---- bounded integers --------------------------------------------------- */

START_TEST(test_below)
{
    ac_rng r, r0;
    ac_rng_init(&r, g_seed, 61, 0);
    ac_rng_init(&r0, g_seed, 61, 0);
    CHECK(ac_rng_below(&r, 0) == 0, "below(0) != 0");
    CHECK(ac_rng_u64(&r) == ac_rng_u64(&r0), "below(0) consumed a word");
    int nonzero = 0;
    for (int i = 0; i < 1000; i++)
        nonzero += ac_rng_below(&r, 1) != 0;
    CHECK(nonzero == 0, "below(1) != 0");

    static const uint64_t ns[] = {2, 3, 7, 10, 1000};
    const size_t draws = 1000000;
    size_t *cnt = calloc(1000, sizeof *cnt);
    ck_assert_msg(cnt != NULL, "out of memory");
    for (size_t s = 0; s < sizeof ns / sizeof ns[0]; s++) {
        const uint64_t nn = ns[s];
        memset(cnt, 0, 1000 * sizeof *cnt);
        size_t over = 0;
        for (size_t i = 0; i < draws; i++) {
            const uint64_t v = ac_rng_below(&r, nn);
            if (v < nn)
                cnt[v]++;
            else
                over++;
        }
        CHECKF(over == 0, "below(%" PRIu64 ") gave %zu values >= n", nn, over);
        const double e = (double)draws / (double)nn;
        double chi2 = 0;
        for (uint64_t k = 0; k < nn; k++)
            chi2 += ((double)cnt[k] - e) * ((double)cnt[k] - e) / e;
        const double p = gsl_cdf_chisq_Q(chi2, (double)(nn - 1));
        CHECKF(p > 1e-6, "below(%" PRIu64 ") chi-square %.1f, p = %.3g", nn, chi2, p);
    }

    /* Large n, where about half the words are rejected (2^63 + 1) or the
     * range is a non-power-of-two multiple of 2^62 (3 * 2^62). */
    const uint64_t big[2] = {(UINT64_C(1) << 63) + 1, UINT64_C(3) << 62};
    const unsigned shift[2] = {60, 62};
    const unsigned nb[2] = {8, 3};
    for (int s = 0; s < 2; s++) {
        size_t c[9] = {0};
        const size_t m = 400000;
        size_t over = 0;
        for (size_t i = 0; i < m; i++) {
            const uint64_t v = ac_rng_below(&r, big[s]);
            if (v < big[s])
                c[v >> shift[s]]++;
            else
                over++;
        }
        CHECKF(over == 0, "below(%" PRIu64 ") gave %zu values >= n", big[s], over);
        /* 2^63 itself (bin 8) has probability ~1e-19: ignore it. */
        const double e = (double)m / nb[s];
        double chi2 = 0;
        for (unsigned k = 0; k < nb[s]; k++)
            chi2 += ((double)c[k] - e) * ((double)c[k] - e) / e;
        const double p = gsl_cdf_chisq_Q(chi2, (double)(nb[s] - 1));
        CHECKF(p > 1e-6, "below(%" PRIu64 ") top-bit chi-square %.1f, p = %.3g", big[s], chi2, p);
    }
    /* Residues mod 3 of below(3 * 2^62) are exactly uniform; a multiply-
     * shift without the rejection step gives residue 0 probability 1/2. */
    size_t res[3] = {0};
    const size_t m3 = 300000;
    for (size_t i = 0; i < m3; i++)
        res[ac_rng_below(&r, UINT64_C(3) << 62) % 3]++;
    double chi2 = 0;
    for (int k = 0; k < 3; k++)
        chi2 += ((double)res[k] - m3 / 3.0) * ((double)res[k] - m3 / 3.0) / (m3 / 3.0);
    const double p3 = gsl_cdf_chisq_Q(chi2, 2.0);
    CHECKF(p3 > 1e-6, "below(3*2^62) residues mod 3: %zu %zu %zu, p = %.3g", res[0], res[1], res[2], p3);
    free(cnt);
}
END_TEST

static Suite *rng_suite(void)
{
    Suite *s = suite_create("rng");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_kat_and_layout);
    tcase_add_test(tc, test_determinism);
    tcase_add_test(tc, test_fill_equals_single);
    tcase_add_test(tc, test_streams_differ);
    tcase_add_test(tc, test_uniform);
    tcase_add_loop_test(tc, test_normal_moments, 0, 2);
    tcase_add_loop_test(tc, test_normal_ks, 0, 2);
    tcase_add_loop_test(tc, test_normal_tails, 0, 2);
    tcase_add_loop_test(tc, test_normal_bins, 0, 2);
    tcase_add_test(tc, test_gamma);
    tcase_add_test(tc, test_dirichlet);
    tcase_add_test(tc, test_below);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!test_seed_from_env("test_rng", &g_seed))
        return 2;
    test_seed_value = g_seed; /* printed by test_run_suite on failure */
    return test_run_suite(rng_suite());
}
