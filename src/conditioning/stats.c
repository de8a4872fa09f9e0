/* stats.c — statistics of a run of Theorem 3.2 (paper 2): sample
 * statistics and quantiles of kappa, their certified enclosures for the
 * seeded sample (from the per-sample enclosures of certify.c), and the
 * spectrum against the Marchenko-Pastur law (doc/mathematics.md §5.6). */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <mpfr.h>

#include "core/ball.h"
#include "attncheck/interval.h"
#include "attncheck/rmt.h"
#include "cond_impl.h"

int cond_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double ac_cond_quantile_sorted(const double *x, size_t n, double p)
{
    if (n == 0)
        return NAN;
    double hpos = (double)(n - 1) * p;
    size_t j = (size_t)floor(hpos);
    if (j >= n - 1)
        return x[n - 1];
    double g = hpos - (double)j;
    if (g == 0 || x[j] == x[j + 1])
        return x[j];
    if (isinf(x[j + 1]))
        return INFINITY;
    return x[j] + g * (x[j + 1] - x[j]);
}

int ac_cond_stats_compute(ac_cond_stats *st, const double *kappa, const double *sigma1,
                          const double *sigmin, size_t n, ac_err *err)
{
    memset(st, 0, sizeof *st);
    st->n = n;
    if (n == 0) {
        st->mean = st->sd = st->se_mean = st->median = st->q05 = st->q95 = NAN;
        st->elog = st->sd_log = st->se_elog = st->min = st->max = NAN;
        st->mean_sigma1 = st->mean_sigmin = NAN;
        return AC_OK;
    }
    double *x = malloc(n * sizeof(double));
    if (!x)
        return ac_err_set(err, AC_EINTERNAL, "out of memory for statistics of %zu samples", n);
    memcpy(x, kappa, n * sizeof(double));
    qsort(x, n, sizeof(double), cond_cmp_double);
    st->min = x[0];
    st->max = x[n - 1];
    st->median = ac_cond_quantile_sorted(x, n, 0.5);
    st->q05 = ac_cond_quantile_sorted(x, n, 0.05);
    st->q95 = ac_cond_quantile_sorted(x, n, 0.95);
    double s = 0, sl = 0, s1 = 0, sm = 0;
    for (size_t i = 0; i < n; i++) {
        if (isinf(kappa[i]))
            st->n_inf++;
        s += kappa[i];
        sl += log(kappa[i]);
        if (sigma1)
            s1 += sigma1[i];
        if (sigmin)
            sm += sigmin[i];
    }
    st->mean = s / (double)n;
    st->elog = sl / (double)n;
    st->mean_sigma1 = sigma1 ? s1 / (double)n : NAN;
    st->mean_sigmin = sigmin ? sm / (double)n : NAN;
    double v = 0, vl = 0;
    for (size_t i = 0; i < n; i++) {
        v += (kappa[i] - st->mean) * (kappa[i] - st->mean);
        double dl = log(kappa[i]) - st->elog;
        vl += dl * dl;
    }
    st->sd = n > 1 ? sqrt(v / (double)(n - 1)) : NAN;
    st->sd_log = n > 1 ? sqrt(vl / (double)(n - 1)) : NAN;
    st->se_mean = st->sd / sqrt((double)n);
    st->se_elog = st->sd_log / sqrt((double)n);
    if (st->n_inf) {
        st->mean = st->elog = INFINITY;
        st->sd = st->sd_log = st->se_mean = st->se_elog = NAN;
    }
    free(x);
    return AC_OK;
}

/* ---- certified statistics ---------------------------------------------------- */

/* E log kappa over samples with kappa_i in [lo_i, hi_i]: MPFR logs rounded
 * outward, summed and divided with directed rounding. */
static void cert_elog(const double *lo, const double *hi, size_t n, double *elo, double *ehi)
{
    mpfr_t x, sl, sh;
    mpfr_init2(x, 64);
    mpfr_init2(sl, 128);
    mpfr_init2(sh, 128);
    mpfr_set_zero(sl, 1);
    mpfr_set_zero(sh, 1);
    for (size_t i = 0; i < n; i++) {
        mpfr_set_d(x, lo[i], MPFR_RNDN);
        mpfr_log(x, x, MPFR_RNDD);
        mpfr_add(sl, sl, x, MPFR_RNDD);
        mpfr_set_d(x, hi[i], MPFR_RNDN);
        mpfr_log(x, x, MPFR_RNDU);
        mpfr_add(sh, sh, x, MPFR_RNDU);
    }
    mpfr_div_ui(sl, sl, (unsigned long)n, MPFR_RNDD);
    mpfr_div_ui(sh, sh, (unsigned long)n, MPFR_RNDU);
    *elo = mpfr_get_d(sl, MPFR_RNDD);
    *ehi = mpfr_get_d(sh, MPFR_RNDU);
    mpfr_clear(x);
    mpfr_clear(sl);
    mpfr_clear(sh);
}

/* The median, 5% and 95% quantiles, enclosed.  Order statistics are
 * monotone in every sample, and so is the type-7 interpolation
 * (1 - g) x_j + g x_{j+1} (0 <= g < 1): evaluate it on the sorted lower and
 * upper ends (lo, hi are sorted here), rounding outward. */
static void cert_quantiles(ac_cond_certstats *c, double *lo, double *hi, size_t n)
{
    qsort(lo, n, sizeof(double), cond_cmp_double);
    qsort(hi, n, sizeof(double), cond_cmp_double);
    const double ps[3] = {0.5, 0.05, 0.95};
    double *qlo[3] = {&c->median_lo, &c->q05_lo, &c->q95_lo};
    double *qhi[3] = {&c->median_hi, &c->q05_hi, &c->q95_hi};
    for (int k = 0; k < 3; k++) {
        double hpos = (double)(n - 1) * ps[k];
        size_t j = (size_t)floor(hpos);
        if (j >= n - 1) {
            *qlo[k] = lo[n - 1];
            *qhi[k] = hi[n - 1];
            continue;
        }
        double g = hpos - (double)j;
        if (g == 0) {
            *qlo[k] = lo[j];
            *qhi[k] = hi[j];
            continue;
        }
        /* the statistic x_j + g (x_{j+1} - x_j) = (1 - g) x_j + g x_{j+1}
         * (g as computed, the rest exact); every x >= 1 > 0, so rounding
         * 1 - g down (up) and every product and sum down (up) bounds it */
        *qlo[k] = ac_add_dn(ac_mul_dn(ac_sub_dn(1.0, g), lo[j]), ac_mul_dn(g, lo[j + 1]));
        *qhi[k] = ac_add_up(ac_mul_up(ac_sub_up(1.0, g), hi[j]), ac_mul_up(g, hi[j + 1]));
    }
}

/* pred / stat - 1 for stat in [slo, shi] (> 0) and the prediction as
 * computed (a double), rounded outward; left as it is (NaN) when pred is not
 * finite or slo <= 0. */
static void rel_enclose(double pred, double slo, double shi, double *outlo, double *outhi)
{
    if (isfinite(pred) && slo > 0) {
        *outlo = ac_sub_dn(ac_div_dn(pred, shi), 1.0);
        *outhi = ac_sub_up(ac_div_up(pred, slo), 1.0);
    }
}

/* The relative errors of the predictions against the certified statistics:
 * first order and the TW point vs the mean, the TW median vs the median; at
 * D = N Edelman's median vs the median. */
static void cert_pred_errors(ac_cond_certstats *c, const ac_cond_result *r)
{
    if (r->D != r->N) {
        rel_enclose(r->pred.first_order, c->mean_lo, c->mean_hi, &c->err_first_order_lo,
                    &c->err_first_order_hi);
        rel_enclose(r->pred.tw_point, c->mean_lo, c->mean_hi, &c->err_tw_point_lo,
                    &c->err_tw_point_hi);
        rel_enclose(r->pred.tw_median, c->median_lo, c->median_hi, &c->err_tw_median_lo,
                    &c->err_tw_median_hi);
    } else {
        rel_enclose(r->pred.edelman_median, c->median_lo, c->median_hi,
                    &c->err_edelman_median_lo, &c->err_edelman_median_hi);
    }
}

/* Certified statistics from the per-sample enclosures. */
int cond_cert_stats(ac_cond_result *r, ac_err *err)
{
    size_t n = r->trials;
    ac_cond_certstats *c = &r->cst;
    memset(c, 0, sizeof *c);
    double *lo = malloc(n * sizeof(double)), *hi = malloc(n * sizeof(double));
    if (!lo || !hi) {
        free(lo);
        free(hi);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    c->valid = 1;
    for (size_t i = 0; i < n; i++) {
        lo[i] = r->samples[i].kappa_lo;
        hi[i] = r->samples[i].kappa_hi;
        if (!(lo[i] >= 1) || !isfinite(hi[i]))
            c->valid = 0;
    }
    double nan = NAN;
    c->err_first_order_lo = c->err_first_order_hi = nan;
    c->err_tw_point_lo = c->err_tw_point_hi = nan;
    c->err_tw_median_lo = c->err_tw_median_hi = nan;
    c->err_edelman_median_lo = c->err_edelman_median_hi = nan;
    if (c->valid) {
        double a, b;
        ac_sum_enclose(lo, n, 1, &a, &b);
        c->mean_lo = ac_div_dn(a, (double)n);
        ac_sum_enclose(hi, n, 1, &a, &b);
        c->mean_hi = ac_div_up(b, (double)n);
        cert_elog(lo, hi, n, &c->elog_lo, &c->elog_hi);
        cert_quantiles(c, lo, hi, n);
        cert_pred_errors(c, r);
    }
    free(lo);
    free(hi);
    return AC_OK;
}

/* --------------------------------------------------------------------------------------------- */

int cond_spectrum_stats(ac_cond_result *r, ac_err *err)
{
    size_t n = r->trials * r->m;
    double y = (double)r->N / (double)r->D;
    double atom = y > 1 ? 1.0 - 1.0 / y : 0.0;
    double *x = malloc(n * sizeof(double));
    size_t B = r->bins;
    r->hist_lo = malloc(B * sizeof(double));
    r->hist_hi = malloc(B * sizeof(double));
    r->hist_density = calloc(B, sizeof(double));
    r->hist_mp = malloc(B * sizeof(double));
    if (!x || !r->hist_lo || !r->hist_hi || !r->hist_density || !r->hist_mp) {
        free(x);
        return ac_err_set(err, AC_EINTERNAL, "out of memory for the spectrum");
    }
    memcpy(x, r->eig, n * sizeof(double));
    qsort(x, n, sizeof(double), cond_cmp_double);
    /* KS distance to the continuous part of MP (conditioned on x > 0) */
    double ks = 0;
    for (size_t i = 0; i < n; i++) {
        double F = (ac_mp_cdf(x[i], y) - atom) / (1 - atom);
        double a = fabs((double)i / (double)n - F), b = fabs((double)(i + 1) / (double)n - F);
        if (a > ks)
            ks = a;
        if (b > ks)
            ks = b;
    }
    r->ks = ks;
    double lm, lp;
    ac_mp_edges(y, &lm, &lp);
    double a = fmin(x[0], lm), b = fmax(x[n - 1], lp);
    if (!(b > a))
        b = a + 1;
    double wd = (b - a) / (double)B;
    for (size_t k = 0; k < B; k++) {
        r->hist_lo[k] = a + wd * (double)k;
        r->hist_hi[k] = a + wd * (double)(k + 1);
        /* mean MP density of the continuous part over the bin */
        r->hist_mp[k] = (ac_mp_cdf(r->hist_hi[k], y) - ac_mp_cdf(r->hist_lo[k], y) -
                         (r->hist_lo[k] < 0 && r->hist_hi[k] >= 0 ? atom : 0)) /
                        ((1 - atom) * wd);
    }
    for (size_t i = 0; i < n; i++) {
        size_t k = (size_t)((x[i] - a) / wd);
        if (k >= B)
            k = B - 1;
        r->hist_density[k] += 1.0;
    }
    for (size_t k = 0; k < B; k++)
        r->hist_density[k] /= (double)n * wd;
    free(x);
    return AC_OK;
}

