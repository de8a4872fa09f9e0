/* dist_lower.c — certified lower bounds on dist = inf over heads of size dk of
 * max|Softmax((Wk X)'(Wq X)/sqrt(dk)) - P| (doc/mathematics.md §3.6).  Each
 * bound holds for every head; the largest becomes dist_lo:
 *   - column sums: a softmax column sums to 1, so dist >= |1 - s_j| / n
 *     (s_j summed exactly);
 *   - a zero column x_j forces a uniform softmax column j:
 *     dist >= max_i |P_ij - 1/n| (exact when it is the worst column);
 *   - equal columns x_j = x_k force equal softmax columns and rows j, k:
 *     dist >= max |P_ij - P_ik| / 2 and max |P_jl - P_kl| / 2;
 *   - the log-domain obstructions m (rho, sigma_{dk+1}) entry by entry:
 *     the largest t with ||(-log(1 - t/P_ij))_ij||_F < m;
 *   - the rank obstruction on submatrices of P whose entries are large:
 *     sigma_{k+1}(K_I log P_IJ), k = min(dk, rank X);
 *   - d = 1: the branch and bound of dist_d1.c.
 * Every comparison that the bound rests on is made with directed rounding
 * (MPFR, or the one-ulp steps of interval.h), ranks and singular values in
 * Arb with the Weyl enclosure (doc/mathematics.md §2.5); above n = 256 the
 * submatrix bound and the entrywise sums use the verified double logarithm
 * of criterion_stage0.c instead (stage 0, §3.4 and §3.6).
 *
 * Dimension letters: d model width, n tokens, dk head size, r = rank X.
 * Buffers are row-major: X d x n, P n x n.
 */
#include <config.h>

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpfr.h>

#include "attncheck/interval.h"
#include "attncheck/json.h"
#include "attncheck/linalg.h"
#include "attncheck/theorem1.h"
#include "core/ac_arb.h"
#include "core/ball.h"
#include "core/sum_exact.h"
#include "theorem1/t1_dist.h"
#include "theorem1/t1_impl.h"
#include "theorem1/t1_stage0.h"

/* The best bound so far and its name. */
typedef struct {
    double lo;
    char method[160];
    int stage; /* the stage of the certified quantity the bound rests on */
    long prec;
    double tol;          /* C(tol)'s tolerance */
    int rstage;          /* the lowest stage of a bound > tol (AC_STAGE_NONE: none) */
    long rprec;
    char rmethod[128];
} lb_best;

/* Stages ordered by cost: double, the ball stages, exact last. */
static int stage_rank(int s)
{
    return s == AC_STAGE_EXACT ? 1000 : s;
}

static void lb_offer(lb_best *b, double v, int stage, long prec, const char *fmt, ...)
{
    va_list ap;
    if (v > b->tol && (b->rstage == AC_STAGE_NONE || stage_rank(stage) < stage_rank(b->rstage))) {
        b->rstage = stage;
        b->rprec = prec;
        va_start(ap, fmt);
        vsnprintf(b->rmethod, sizeof b->rmethod, fmt, ap);
        va_end(ap);
    }
    if (!(v > b->lo))
        return;
    b->lo = v;
    b->stage = stage;
    b->prec = prec;
    va_start(ap, fmt);
    vsnprintf(b->method, sizeof b->method, fmt, ap);
    va_end(ap);
}

/* ---- exact structure ------------------------------------------------------ */

/* The keys query j sees: n without a mask. */
static size_t visible_keys(const unsigned char *om, size_t n, size_t j)
{
    size_t m = 0;
    if (!om)
        return n;
    for (size_t i = 0; i < n; i++)
        m += om[i * n + j] != 0;
    return m;
}

/* max_j |1 - sum_i P_ij| / m_j, rounded down, m_j the keys query j sees (a
 * softmax column sums to 1 over them); the sums exact (core/sum_exact.h:
 * the deviation is rounded toward zero once), so that a column one ulp off
 * 1 still gives a bound > 0 unless dev / m_j underflows. */
double ac_t1_lb_colsum(const ac_mat *P, const unsigned char *om, size_t *col)
{
    size_t n = P->rows;
    double best = 0;
    for (size_t j = 0; j < n; j++) {
        double dev = ac_sum_dev_rz(P->data + j, n, n, 1.0);
        double b = dev > 0 ? ac_div_dn(dev, (double)visible_keys(om, n, j)) : 0;
        if (b > best) {
            best = b;
            *col = j;
        }
    }
    return best;
}

/* A lower bound on |p - 1/n|. */
static double dev_from_uniform(double p, size_t n)
{
    double qlo = ac_div_dn(1.0, (double)n), qhi = ac_div_up(1.0, (double)n);
    if (p > qhi)
        return ac_sub_dn(p, qhi);
    if (p < qlo)
        return ac_sub_dn(qlo, p);
    return 0;
}

/* Zero columns of X: the logits X'AX have column j = X'A x_j = 0 for every
 * head, so softmax column j is uniform (on the m_j keys query j sees). */
double ac_t1_lb_zero_cols(const ac_mat *X, const ac_mat *P, const unsigned char *om, size_t *col)
{
    size_t d = X->rows, n = X->cols;
    double best = 0;
    for (size_t j = 0; j < n; j++) {
        int zero = 1;
        for (size_t i = 0; i < d && zero; i++)
            zero = AC_MAT(X, i, j) == 0.0;
        if (!zero)
            continue;
        size_t m = visible_keys(om, n, j);
        for (size_t i = 0; i < n; i++) {
            if (om && !om[i * n + j])
                continue;
            double b = dev_from_uniform(AC_MAT(P, i, j), m);
            if (b > best) {
                best = b;
                *col = j;
            }
        }
    }
    return best;
}

/* Columns of X sorted by a hash of their values (-0 read as 0), so that
 * equal columns are adjacent. */
typedef struct {
    uint64_t h;
    size_t j;
} col_hash;

static int cmp_hash(const void *a, const void *b)
{
    const col_hash *x = a, *y = b;
    if (x->h != y->h)
        return x->h < y->h ? -1 : 1;
    return x->j < y->j ? -1 : (x->j > y->j);
}

static int cols_equal(const ac_mat *X, size_t j, size_t k)
{
    for (size_t i = 0; i < X->rows; i++)
        if (AC_MAT(X, i, j) != AC_MAT(X, i, k))
            return 0;
    return 1;
}

/* A lower bound on |a - b|: whichever rounded-down difference is positive. */
static double absdiff_dn(double a, double b)
{
    return fmax(ac_sub_dn(a, b), ac_sub_dn(b, a));
}

/* half of max_i |P_ij - P_ik| and of max_l |P_jl - P_kl|, rounded down.
 * With a mask: rows j, k only on the queries l that see both keys (equal
 * logits under one softmax), columns j, k only when both queries see the
 * same keys (equal softmax columns). */
static double pair_bound(const ac_mat *P, const unsigned char *om, size_t j, size_t k)
{
    size_t n = P->rows;
    double m = 0;
    int same = 1;
    for (size_t i = 0; i < n && om && same; i++)
        same = (om[i * n + j] != 0) == (om[i * n + k] != 0);
    for (size_t i = 0; i < n; i++) {
        if (same)
            m = fmax(m, absdiff_dn(AC_MAT(P, i, j), AC_MAT(P, i, k)));
        if (!om || (om[j * n + i] && om[k * n + i]))
            m = fmax(m, absdiff_dn(AC_MAT(P, j, i), AC_MAT(P, k, i)));
    }
    return ac_mul_dn(m, 0.5);
}

/* Equal columns x_j = x_k: logit columns j, k and logit rows j, k are equal
 * for every head, so softmax columns j, k and rows j, k are equal. */
double ac_t1_lb_equal_cols(const ac_mat *X, const ac_mat *P, const unsigned char *om, size_t *cj,
                           size_t *ck)
{
    size_t d = X->rows, n = X->cols;
    double best = 0;
    col_hash *hs = malloc(n * sizeof *hs);
    if (!hs)
        return 0;
    for (size_t j = 0; j < n; j++) {
        uint64_t h = 1469598103934665603ull;
        for (size_t i = 0; i < d; i++) {
            double v = AC_MAT(X, i, j) + 0.0; /* -0 + 0 = +0 */
            uint64_t b;
            memcpy(&b, &v, sizeof b);
            h = (h ^ b) * 1099511628211ull;
        }
        hs[j].h = h;
        hs[j].j = j;
    }
    qsort(hs, n, sizeof *hs, cmp_hash);
    for (size_t s = 0; s < n; s++)
        for (size_t t = s + 1; t < n && hs[t].h == hs[s].h; t++) {
            if (!cols_equal(X, hs[s].j, hs[t].j))
                continue;
            double b = pair_bound(P, om, hs[s].j, hs[t].j);
            if (b > best) {
                best = b;
                *cj = hs[s].j;
                *ck = hs[t].j;
            }
        }
    free(hs);
    return best;
}

/* ---- the log-domain obstructions, entry by entry -------------------------- */

/* Upper bound on sqrt(sum_e phi(t / p_e)^2), phi(s) = -log(1 - s), in MPFR
 * with directed rounding; +inf if some t / p_e >= 1. */
static double phi_fro_up(const double *p, size_t cnt, double t)
{
    mpfr_t q, s, acc;
    mpfr_inits2(64, q, s, acc, (mpfr_ptr)0);
    mpfr_set_zero(acc, 1);
    double res = INFINITY;
    for (size_t e = 0; e < cnt; e++) {
        mpfr_set_d(q, t, MPFR_RNDU);
        mpfr_div_d(q, q, p[e], MPFR_RNDU); /* q >= t/p */
        if (mpfr_cmp_ui(q, 1) >= 0)
            goto out;
        mpfr_ui_sub(s, 1, q, MPFR_RNDD); /* s <= 1 - t/p */
        mpfr_log(s, s, MPFR_RNDD);       /* s <= log(1 - t/p) < 0 */
        mpfr_sqr(s, s, MPFR_RNDU);       /* s >= phi^2 */
        mpfr_add(acc, acc, s, MPFR_RNDU);
    }
    mpfr_sqrt(acc, acc, MPFR_RNDU);
    res = mpfr_get_d(acc, MPFR_RNDU);
out:
    mpfr_clears(q, s, acc, (mpfr_ptr)0);
    return res;
}

/* phi_fro_up in double for large counts (the MPFR version costs n^2
 * logarithms at 64 bits): s_e = 1 - t/p_e rounded down, -log s_e >= phi
 * bounded by the verified logarithm (criterion_stage0.c), squares and sums rounded
 * up.  +inf if some t / p_e >= 1 or the logarithm cannot be verified. */
static double phi_fro_up_d(const double *p, size_t cnt, double t)
{
    double *sv = malloc(cnt * sizeof(double)), *lo = malloc(cnt * sizeof(double));
    double *hi = malloc(cnt * sizeof(double)), acc = 0, res = INFINITY;
    int ok = sv && lo && hi;
    for (size_t e = 0; e < cnt && ok; e++) {
        sv[e] = ac_sub_dn(1.0, ac_div_up(t, p[e]));
        ok = sv[e] > 0;
    }
    if (ok && ac_t1_log_enclose(sv, cnt, lo, hi)) {
        for (size_t e = 0; e < cnt; e++) {
            double f = lo[e] < 0 ? -lo[e] : 0; /* phi_e <= -log(s_e) <= -lo */
            acc = ac_add_up(acc, ac_mul_up(f, f));
        }
        res = ac_sqrt_up(acc);
    }
    free(sv);
    free(lo);
    free(hi);
    return res;
}

/* Above this count of entries t_certified bounds phi in double. */
#define PHI_MPFR_MAX (256 * 256)

double ac_t1_phi_fro_up(const double *p, size_t cnt, double t, int in_double)
{
    return in_double ? phi_fro_up_d(p, cnt, t) : phi_fro_up(p, cnt, t);
}

static double phi_fro_approx(const double *p, size_t cnt, double t)
{
    double s = 0;
    for (size_t e = 0; e < cnt; e++) {
        if (t >= p[e])
            return INFINITY;
        double v = log1p(-t / p[e]);
        s += v * v;
    }
    return sqrt(s);
}

/* phi_fro_approx(p, cnt, t) < m, the same answer sooner: the sum only
 * grows (a rounded sum of nonnegative terms is monotone, and so is the
 * rounded sqrt), so once sqrt of a partial sum is >= m the answer is no. */
static int phi_fro_approx_below(const double *p, size_t cnt, double t, double m)
{
    double s = 0;
    for (size_t e = 0; e < cnt; e++) {
        if (t >= p[e])
            return 0;
        double v = log1p(-t / p[e]);
        s += v * v;
        if ((e & 255) == 255 && !(sqrt(s) < m))
            return 0;
    }
    return sqrt(s) < m;
}

/* The bisection's 64 steps, stopped at their fixed point: once mid equals
 * an end that a step has set, every later step sets that end again (the
 * test is deterministic) and lo no longer changes. */
static double min_entry(const double *p, size_t cnt)
{
    double pmin = INFINITY;
    for (size_t e = 0; e < cnt; e++)
        pmin = fmin(pmin, p[e]);
    return pmin;
}

double ac_t1_t_estimate(const double *p, size_t cnt, double m)
{
    if (!(m > 0) || cnt == 0)
        return 0;
    double lo = 0, hi = min_entry(p, cnt);
    int lo_set = 0, hi_set = 0;
    for (int it = 0; it < 64; it++) {
        double mid = 0.5 * (lo + hi);
        if ((mid == lo && lo_set) || (mid == hi && hi_set))
            break;
        if (phi_fro_approx_below(p, cnt, mid, m))
            lo = mid, lo_set = 1;
        else
            hi = mid, hi_set = 1;
    }
    return lo;
}

double ac_t1_t_estimate_ref(const double *p, size_t cnt, double m)
{
    if (!(m > 0) || cnt == 0)
        return 0;
    double lo = 0, hi = min_entry(p, cnt);
    for (int it = 0; it < 64; it++) {
        double mid = 0.5 * (lo + hi);
        if (phi_fro_approx(p, cnt, mid) < m)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Enclosure [*lo, *hi] of phi(x) = -log(1 - x) = sum_k x^k / k for x in
 * [xl, xh], 0 < xl <= xh <= 1/4, by the series with directed rounding: the
 * terms are positive (a partial sum is a lower bound), and after term k
 * the rest is <= (x^k / k)(x + x^2 + ...) <= (x^k / k) / 3. */
static void phi_series(double xl, double xh, double *lo, double *hi)
{
    double pl = xl, ph = xh, sl = xl, sh = xh, th = xh;
    for (int k = 2; k < 64 && th > 0x1p-60 * sh; k++) {
        pl = ac_mul_dn(pl, xl);
        ph = ac_mul_up(ph, xh);
        th = ac_div_up(ph, (double)k);
        sl = ac_add_dn(sl, ac_div_dn(pl, (double)k));
        sh = ac_add_up(sh, th);
    }
    *lo = sl > 0 ? sl : 0;
    *hi = ac_add_up(sh, th);
}

/* The answer of phi_fro_up(p, cnt, t) < m settled in double where it can
 * be: 1 yes, 0 no, -1 not settled (MPFR is asked then).  Let x_e = t / p_e
 * <= 1/4 and V = sqrt(sum_e phi(x_e)^2) exactly.  MPFR's value U (64 bits,
 * each step rounded away from V, then up to double) has V <= U, and step by
 * step -- q_e <= x_e (1 + 2^-63), 1 - q_e rounded down by a relative 2^-63,
 * so |log s_e| <= phi(x_e) + (q_e - x_e) / (1 - q_e) + 2^-62 <= phi(x_e)
 * (1 + 2^-62) + 2^-62 with x_e <= phi(x_e), the logarithm, the square, the
 * cnt additions and the square root each by a relative 2^-63, the double
 * by 2^-52 --
 *     U <= sqrt(sum_e a_e^2) (1 + (cnt + 8) 2^-62 + 2^-51),
 *     a_e = phi_hi(x_e) (1 + 2^-60) + 2^-61.
 * A lower bound on V >= m settles no; that upper bound on U < m, yes. */
int ac_t1_phi_fro_up_settle(const double *p, size_t cnt, double t, double m)
{
    double sl = 0, sh = 0;
    for (size_t e = 0; e < cnt; e++) {
        double xh = ac_div_up(t, p[e]), xl = ac_div_dn(t, p[e]), fl, fh;
        if (!(xh <= 0.25) || !(xl > 0))
            return -1;
        phi_series(xl, xh, &fl, &fh);
        double a = ac_add_up(ac_mul_up(fh, 1 + 0x1p-60), 0x1p-61);
        sh = ac_add_up(sh, ac_mul_up(a, a));
        sl = ac_add_dn(sl, ac_mul_dn(fl, fl));
    }
    double g = ac_add_up(1.0, ac_add_up(ac_mul_up((double)cnt + 8, 0x1p-62), 0x1p-51));
    if (ac_mul_up(ac_sqrt_up(sh), g) < m)
        return 1;
    if (ac_sqrt_dn(sl) >= m)
        return 0;
    return -1;
}

/* The largest t found with sqrt(sum_e phi(t/p_e)^2) < m certified: no head
 * with max|S - P| <= t exists when m lower-bounds a log-domain obstruction
 * whose distance is at most ||log S - log P||_F restricted to these entries
 * (doc/mathematics.md §3.6).  0 if none is certified.  Each candidate t is
 * tried with the bound in double first (a verified logarithm, one pass) and
 * with MPFR's only when that one does not certify and the count is small
 * enough: either bound certifies, and the MPFR one is the tighter, so the t
 * returned is the one MPFR alone would return unless the double bound is
 * ever below it. */
double ac_t1_t_certified(const double *p, size_t cnt, double m)
{
    double t = ac_t1_t_estimate(p, cnt, m) * (1 - 0x1p-30);
    for (int k = 0; k < 6 && t > 0; k++, t *= 1 - ldexp(1.0, -20 + 3 * k)) {
        /* the answer of the MPFR test below, settled in double when it can be */
        int mp = cnt <= PHI_MPFR_MAX ? ac_t1_phi_fro_up_settle(p, cnt, t, m) : 0;
        if (mp == 1 || phi_fro_up_d(p, cnt, t) < m || (mp < 0 && phi_fro_up(p, cnt, t) < m))
            return t;
    }
    return 0;
}

double ac_t1_t_certified_ref(const double *p, size_t cnt, double m)
{
    double t = ac_t1_t_estimate_ref(p, cnt, m) * (1 - 0x1p-30);
    for (int k = 0; k < 6 && t > 0; k++, t *= 1 - ldexp(1.0, -20 + 3 * k))
        if (phi_fro_up_d(p, cnt, t) < m || (cnt <= PHI_MPFR_MAX && phi_fro_up(p, cnt, t) < m))
            return t;
    return 0;
}

/* ---- the rank obstruction on submatrices ---------------------------------- */

int ac_t1_centred_log_sv_arb(const ac_mat *P, const size_t *I, size_t ni, const size_t *J,
                             size_t nj, long prec, double *slo, double *shi)
{
    arb_mat_t M;
    arb_t mean;
    ac_imat A = {0};
    int ok = 0;
    arb_mat_init(M, (slong)ni, (slong)nj);
    arb_init(mean);
    for (size_t b = 0; b < nj; b++) {
        arb_zero(mean);
        for (size_t a = 0; a < ni; a++) {
            arb_ptr e = arb_mat_entry(M, (slong)a, (slong)b);
            arb_set_d(e, AC_MAT(P, I[a], J[b]));
            arb_log(e, e, prec);
            arb_add(mean, mean, e, prec);
        }
        arb_div_ui(mean, mean, (ulong)ni, prec);
        for (size_t a = 0; a < ni; a++) {
            arb_ptr e = arb_mat_entry(M, (slong)a, (slong)b);
            arb_sub(e, e, mean, prec);
        }
    }
    /* an optional bound: a failure certifies nothing, the message unset */
    if (ac_arb_mat_to_imat(&A, M, NULL) == AC_OK && ac_sv_enclose(&A, slo, shi, NULL, NULL) == AC_OK)
        ok = 1;
    ac_imat_free(&A);
    arb_mat_clear(M);
    arb_clear(mean);
    return ok;
}

double ac_t1_sub_sigma_lo(const ac_mat *P, const size_t *I, size_t ni, const size_t *J,
                          size_t nj, size_t k, long prec)
{
    double res = 0;
    size_t p = ni < nj ? ni : nj;
    double *slo = malloc(p * sizeof(double)), *shi = malloc(p * sizeof(double));
    if (slo && shi && k < p &&
        (prec > 0 ? ac_t1_centred_log_sv_arb(P, I, ni, J, nj, prec, slo, shi)
                  : ac_t1_centred_log_sv_stage0(P, I, ni, J, nj, slo, shi)))
        res = slo[k];
    free(slo);
    free(shi);
    return res;
}

/* sigma_{k+1}(K_I log P_IJ) in double (the estimate that picks the
 * submatrix to certify). */
double ac_t1_sub_sigma_approx(const ac_mat *P, const size_t *I, size_t ni, const size_t *J,
                              size_t nj, size_t k)
{
    ac_mat M = {0};
    size_t p = ni < nj ? ni : nj;
    double *s = malloc(p * sizeof(double)), res = 0;
    if (!s || k >= p || ac_mat_init(&M, ni, nj, NULL)) {
        free(s);
        return 0;
    }
    for (size_t b = 0; b < nj; b++) {
        double mean = 0;
        for (size_t a = 0; a < ni; a++)
            mean += (AC_MAT(&M, a, b) = log(AC_MAT(P, I[a], J[b])));
        mean /= (double)ni;
        for (size_t a = 0; a < ni; a++)
            AC_MAT(&M, a, b) -= mean;
    }
    if (ac_approx_svd_values(&M, s, NULL) == AC_OK)
        res = s[k];
    free(s);
    ac_mat_free(&M);
    return res;
}

void ac_t1_greedy_submatrix(const ac_mat *P, double tau, size_t k, size_t *I, size_t *ni,
                            size_t *J, size_t *nj, size_t *cr, size_t *cc)
{
    for (size_t a = 0; a < *ni; a++)
        cr[a] = 0;
    for (size_t b = 0; b < *nj; b++)
        cc[b] = 0;
    for (size_t a = 0; a < *ni; a++)
        for (size_t b = 0; b < *nj; b++)
            if (AC_MAT(P, I[a], J[b]) < tau) {
                cr[a]++;
                cc[b]++;
            }
    for (;;) {
        size_t bi = 0, bj = 0, ci = 0, cj = 0;
        for (size_t a = 0; a < *ni; a++)
            if (cr[a] > ci)
                ci = cr[a], bi = a;
        for (size_t b = 0; b < *nj; b++)
            if (cc[b] > cj)
                cj = cc[b], bj = b;
        if (ci == 0)
            return;
        if ((double)ci / (double)*nj >= (double)cj / (double)*ni) {
            if (*ni <= k + 2)
                return;
            for (size_t b = 0; b < *nj; b++)
                cc[b] -= AC_MAT(P, I[bi], J[b]) < tau;
            --*ni;
            I[bi] = I[*ni];
            cr[bi] = cr[*ni];
        } else {
            if (*nj <= k + 1)
                return;
            for (size_t a = 0; a < *ni; a++)
                cr[a] -= AC_MAT(P, I[a], J[bj]) < tau;
            --*nj;
            J[bj] = J[*nj];
            cc[bj] = cc[*nj];
        }
    }
}

void ac_t1_gather(double *buf, const ac_mat *P, const size_t *I, size_t ni, const size_t *J,
                   size_t nj)
{
    for (size_t a = 0; a < ni; a++)
        for (size_t b = 0; b < nj; b++)
            buf[a * nj + b] = AC_MAT(P, I[a], J[b]);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define SUB_TAUS 24     /* thresholds tried (every third above SUB_ALL_TAUS_N) */
#define SUB_ALL_TAUS_N 256
#define SUB_MAX_N 512   /* largest n searched */
#define ENTRYWISE_MAX_N 1024 /* largest n of the entrywise bound (n^2 logarithms per t) */

/* The rank obstruction on the best submatrix found: every head's logits
 * Z = X'AX have rank <= k = min(dk, r), and log S = Z + 1c' kills c under
 * K_I, so sigma_{k+1}(K_I log P_IJ) <= ||(log S - log P)_IJ||_2.  The best
 * candidate is certified only if its estimate exceeds skip_below (the best
 * bound certified so far) by 0.1%. */
double ac_t1_lb_greedy(const ac_mat *P, size_t k, const size_t *I0, size_t a0, const size_t *J0,
                       size_t b0, const double *taus, int nt, double skip_below, long prec,
                       size_t *sz_i, size_t *sz_j)
{
    size_t *I = malloc(a0 * sizeof(size_t)), *J = malloc(b0 * sizeof(size_t));
    size_t *bI = malloc(a0 * sizeof(size_t)), *bJ = malloc(b0 * sizeof(size_t));
    size_t *cr = malloc(a0 * sizeof(size_t)), *cc = malloc(b0 * sizeof(size_t));
    double *buf = malloc(a0 * b0 * sizeof(double));
    double best_est = 0, res = 0;
    size_t bni = 0, bnj = 0;
    if (!I || !J || !bI || !bJ || !cr || !cc || !buf)
        goto out;
    for (int q = 0; q < nt; q++) {
        size_t ni = a0, nj = b0;
        memcpy(I, I0, a0 * sizeof(size_t));
        memcpy(J, J0, b0 * sizeof(size_t));
        ac_t1_greedy_submatrix(P, taus[q], k, I, &ni, J, &nj, cr, cc);
        if (ni < k + 2 || nj < k + 1)
            continue;
        double m = ac_t1_sub_sigma_approx(P, I, ni, J, nj, k);
        ac_t1_gather(buf, P, I, ni, J, nj);
        double t = ac_t1_t_certified(buf, ni * nj, m * (1 - 1e-6));
        if (t > best_est) {
            best_est = t;
            bni = ni;
            bnj = nj;
            memcpy(bI, I, ni * sizeof(size_t));
            memcpy(bJ, J, nj * sizeof(size_t));
        }
    }
    /* certify only an estimate that could beat the best bound already
     * certified (skipping a bound is always sound) */
    if (best_est > 0 && best_est > skip_below * (1 + 1e-3)) {
        double m = ac_t1_sub_sigma_lo(P, bI, bni, bJ, bnj, k, prec);
        ac_t1_gather(buf, P, bI, bni, bJ, bnj);
        res = ac_t1_t_certified(buf, bni * bnj, m);
        *sz_i = bni;
        *sz_j = bnj;
    }
out:
    free(I);
    free(J);
    free(bI);
    free(bJ);
    free(cr);
    free(cc);
    free(buf);
    return res;
}

static double lb_submatrix(const ac_mat *P, size_t k, double skip_below, size_t *sz_i,
                           size_t *sz_j, int *stage)
{
    size_t n = P->rows, nn = n * n;
    if (n > SUB_MAX_N || k + 2 > n)
        return 0;
    size_t *all = malloc(n * sizeof(size_t));
    double *sorted = malloc(nn * sizeof(double)), taus[SUB_TAUS], res = 0;
    int nt = 0;
    if (!all || !sorted)
        goto out;
    for (size_t i = 0; i < n; i++)
        all[i] = i;
    memcpy(sorted, P->data, nn * sizeof(double));
    qsort(sorted, nn, sizeof(double), cmp_double);
    int stride = n > SUB_ALL_TAUS_N ? 3 : 1;
    for (int q = 0; q < SUB_TAUS; q += stride)
        taus[nt++] = q == 0 ? 0 : sorted[(size_t)((double)nn * 0.7 * q / SUB_TAUS)];
    /* stage 0 (a double enclosure of K_I log P_IJ) above SUB_ALL_TAUS_N */
    res = ac_t1_lb_greedy(P, k, all, n, all, n, taus, nt, skip_below,
                          n > SUB_ALL_TAUS_N ? 0 : 128, sz_i, sz_j);
    if (n > SUB_ALL_TAUS_N && res > 0)
        *stage = AC_STAGE_DOUBLE;
out:
    free(all);
    free(sorted);
    return res;
}

/* ---- all lower bounds ------------------------------------------------------ */

int ac_t1_lower_bounds(ac_t1_result *res, const ac_mat *X, const ac_mat *P, double a_lo,
                       const ac_t1_opts *o, ac_err *err)
{
    size_t n = P->rows, j1 = 0, j2 = 0;
    lb_best b = {0, "", AC_STAGE_NONE, 0, o->tol, AC_STAGE_NONE, 0, ""};
    if (res->dist_lo > 0) {
        b.lo = res->dist_lo;
        b.stage = res->rank == 0 ? AC_STAGE_EXACT : res->exact_stage;
        b.prec = res->rank == 0 ? 0 : res->exact_prec;
        if (b.lo > b.tol) {
            b.rstage = b.stage;
            b.rprec = b.prec;
            snprintf(b.rmethod, sizeof b.rmethod, "%s",
                     res->rank == 0 ? "X = 0: every head gives uniform columns (exact)"
                                    : "log-domain obstruction m, p_min (1 - exp(-m/n))");
        }
        snprintf(b.method, sizeof b.method, "%s",
                 res->rank == 0 ? "X = 0: every head gives uniform columns (exact)"
                                : "log-domain obstruction m, p_min (1 - exp(-m/n))");
    }
    /* (each bound computed before its message reads the indices it found;
     * columns are numbered from 1 in the messages) */
    double v = ac_t1_lb_colsum(P, NULL, &j1);
    lb_offer(&b, v, AC_STAGE_DOUBLE, 53, "column %zu of P does not sum to 1: |1 - sum|/n", j1 + 1);
    v = ac_t1_lb_zero_cols(X, P, NULL, &j1);
    lb_offer(&b, v, AC_STAGE_DOUBLE, 53, "column %zu of X is 0: softmax column %zu is uniform, max_i |P_ij - 1/n|",
             j1 + 1, j1 + 1);
    v = ac_t1_lb_equal_cols(X, P, NULL, &j1, &j2);
    lb_offer(&b, v, AC_STAGE_DOUBLE, 53,
             "columns %zu and %zu of X are equal: equal softmax columns and rows, half their "
             "largest gap in P", j1 + 1, j2 + 1);
    double m = 0;
    int ms = AC_STAGE_NONE;
    long mp = 0;
    if (!isnan(res->rho_lo) && res->rho_lo > m)
        m = res->rho_lo, ms = res->rho_stage, mp = res->rho_prec;
    if (!isnan(res->lowrank_lo) && res->lowrank_lo > m)
        m = res->lowrank_lo, ms = res->lowrank_stage, mp = res->lowrank_prec;
    char fb[AC_FMT_BOUND_BUFSIZE];
    if (m > 0 && res->route == AC_T1_ROUTE_DECIDE && n <= ENTRYWISE_MAX_N)
        lb_offer(&b, ac_t1_t_certified(P->data, n * n, m), ms, mp,
                 "log-domain obstruction m >= %s entry by entry: ||-log(1 - t/P)||_F < m",
                 ac_str_lo(fb, ".3g", m));
    if (res->route == AC_T1_ROUTE_DECIDE && res->rank == (long)X->rows && X->rows + 2 <= n) {
        size_t rj = 0, ra = 0;
        double rrho = 0;
        double t = ac_t1_lb_resid(X, P, &rj, &ra, &rrho);
        lb_offer(&b, t, AC_STAGE_DOUBLE, 53,
                 "residual on column %zu, its %zu largest entries: "
                 "dist(log P_Ij, range X_I' + span 1) >= %s, entry by entry", rj + 1, ra,
                 ac_str_lo(fb, ".4g", rrho));
    }
    if (res->route == AC_T1_ROUTE_DECIDE && res->rank > 0) {
        size_t r = (size_t)res->rank, k = res->dk < r ? res->dk : r, si = 0, sj = 0;
        int sst = 1; /* Arb at 128 bits up to n = SUB_ALL_TAUS_N, else stage 0 */
        /* a candidate below b.lo can matter only for the stage of REFUTED
         * when that is not stage 0 already */
        double skip = (b.rstage == AC_STAGE_DOUBLE || !(b.lo > b.tol)) ? b.lo : 0;
        double t = lb_submatrix(P, k, skip, &si, &sj, &sst);
        lb_offer(&b, t, sst, sst == AC_STAGE_DOUBLE ? 53 : 128,
                 "rank <= %zu on the %zu x %zu submatrix of P: sigma_%zu(K_I log P_IJ) entry by "
                 "entry", k, si, sj, k + 1);
    }
    lb_offer(&b, a_lo, AC_STAGE_DOUBLE, 53, "d = 1: branch and bound over the logit weight a (enclosures)");
    if (b.lo > res->dist_lo) {
        res->dist_lo = b.lo;
        ac_t1_add_step(res, "distance lower bound (doc/mathematics.md §3.6)",
                       "inf over heads of max|Softmax - P| >=", b.lo, b.lo, AC_STAGE_EXACT, 64,
                       b.method);
    }
    snprintf(res->lower_method, sizeof res->lower_method, "%s",
             b.lo > 0 ? b.method : "none (no bound certified above 0)");
    res->lower_stage = b.lo > 0 ? b.stage : AC_STAGE_NONE;
    res->lower_prec = b.lo > 0 ? b.prec : 0;
    res->refute_stage = b.rstage;
    res->refute_prec = b.rprec;
    snprintf(res->refute_method, sizeof res->refute_method, "%s", b.rmethod);
    /* every head is >= dist_lo from P, so >= dist_lo - norm_gap > 0 from the
     * column-normalised P: that one is not exactly representable either */
    if (res->route == AC_T1_ROUTE_DECIDE && res->exact == AC_UNDECIDED &&
        res->dist_lo > res->norm_gap) {
        res->exact = AC_REFUTED;
        res->exact_stage = res->lower_stage;
        res->exact_prec = res->lower_prec;
    }
    return AC_OK;
}
