/* interval.c — stage-0 rigorous arithmetic in round-to-nearest
 * (attncheck/interval.h).  Each bound below cites the inequality it relies on;
 * u = 2^-53, eta = 2^-1074.
 */
#include <config.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "attncheck/interval.h"
#include "core/exp_kernel.h"

double ac_gamma_up(double k)
{
    /* gamma_k = k u / (1 - k u).  k u is exact for k < 2^53 (a power-of-two
     * scaling), 1 - k u is rounded down, the quotient rounded up. */
    double ku = k * AC_U;
    if (!(ku < 0.5))
        return INFINITY;
    return ac_div_up(ku, ac_sub_dn(1.0, ku));
}

/* ---- exp ------------------------------------------------------------------
 *
 * e^x = 2^k e^r*, r* = x - k ln2, k = nearest integer to x/ln2.
 *
 * Reduction (Cody & Waite): LN2_HI has 32 significant bits, so t1 = k*LN2_HI
 * is exact for |k| < 2^21; r1 = fl(x - t1), t2 = fl(k*LN2_LO), r = fl(r1 - t2).
 * Each rounding is at most u times the rounded value (Higham (2.5)), and
 * |ln2 - LN2_HI - LN2_LO| < 2^-86 (checked in the tests with MPFR), so
 *     |r* - r| <= E_r := u(|r1| + |t2| + |r|) + |k| 2^-86.
 *
 * Polynomial: p(r) = sum_{i<=15} c_i r^i, c_i = fl(1/i!), |c_i - 1/i!| <= u/i!.
 * For |r| <= 0.36 the Taylor remainder is at most 0.36^16/16! e^0.36
 * < 6e-21 < 0.06 u.  Horner's rule satisfies |p^ - p| <= gamma_30 sum |c_i||r|^i
 * (Higham (5.3)); with the coefficient errors and the remainder,
 *     |p^ - e^r| <= (gamma_30 (1+u) + u + 0.06u) e^|r| <= 31.2 u e^0.36,
 * and since e^r >= e^-0.36 this is a relative error of at most
 * 31.2 u e^0.72 < 64.1 u.  (Underflow inside Horner adds below 2^-1070,
 * negligible against e^r > 0.69.)
 *
 * Hence e^r* in p^ [(1 - 64.2u) e^-1.01E_r, (1 + 64.2u) e^1.01E_r]
 * and we use the relative radius rho = 72u + 1.02 E_r (E_r < 0.4u + 2^-75).
 * The scaling p^ 2^k is exact unless the result is subnormal, where it adds
 * at most eta/2 (one rounding).
 */
/* the reduction constants of the library's exp kernel */
#define LN2_HI AC_EXP_LN2_HI
#define LN2_LO AC_EXP_LN2_LO
#define LOG2E  AC_EXP_LOG2E

static const double exp_coef[16] = {
    1.0,
    1.0,
    1.0 / 2,
    1.0 / 6,
    1.0 / 24,
    1.0 / 120,
    1.0 / 720,
    1.0 / 5040,
    1.0 / 40320,
    1.0 / 362880,
    1.0 / 3628800,
    1.0 / 39916800,
    1.0 / 479001600,
    1.0 / 6227020800.0,
    1.0 / 87178291200.0,
    1.0 / 1307674368000.0,
};

void ac_exp_enclose(double x, double *lo, double *hi)
{
    if (x != x) {
        *lo = *hi = x;
        return;
    }
    if (x > 709.0) {
        /* e^x >= e^709 > 8.2e307; the upper bound is infinite. */
        double l, h;
        ac_exp_enclose(709.0, &l, &h);
        *lo = l;
        *hi = INFINITY;
        return;
    }
    if (x < -745.2) {
        /* e^-745.2 < 2^-1075 */
        *lo = 0.0;
        *hi = AC_ETA;
        return;
    }
    double kd = nearbyint(x * LOG2E);
    int k = (int)kd;
    double t1 = kd * LN2_HI;                 /* exact */
    double r1 = x - t1;
    double t2 = kd * LN2_LO;
    double r = r1 - t2;
    double er = AC_U * (fabs(r1) + fabs(t2) + fabs(r)) * 1.0001 + fabs(kd) * 0x1p-86;
    if (!(fabs(r) <= 0.36)) {
        /* Cannot happen for |x| <= 745.2 (|x/ln2 - k| <= 1/2 + tiny); stay
         * rigorous anyway with a trivial enclosure. */
        *lo = 0.0;
        *hi = INFINITY;
        return;
    }
    double p = exp_coef[15];
    for (int i = 14; i >= 0; i--)
        p = p * r + exp_coef[i];
    double rho = ac_up(72.0 * AC_U + 1.02 * er);
    double plo = ac_mul_dn(p, ac_sub_dn(1.0, rho));
    double phi = ac_mul_up(p, ac_add_up(1.0, rho));
    /* scale by 2^k; ldexp is exact unless the result is subnormal */
    double l = ldexp(plo, k), h = ldexp(phi, k);
    if (l < AC_REALMIN) {
        l = ac_dn(l);
        if (l < 0)
            l = 0;
    }
    if (h < AC_REALMIN)
        h = ac_up(h);
    *lo = l;
    *hi = h;
}

/* Batch version, same analysis, written so that the compiler vectorises it:
 * for x in [-708, 709] the result is normal and 2^k is built from its bits;
 * k comes from the round-to-nearest "shifter" trick (any integer k is fine as
 * long as |r| <= 0.36, which is checked).  The factors 1 -+ 2 rho carry a
 * margin of rho >= 72u that absorbs the rounding of the factors themselves
 * and of the final product p * (1 -+ 2 rho) (each at most u relative), and
 * multiplying by 2^k is exact.  Arguments outside the range (and NaN) go
 * through ac_exp_enclose. */
void ac_exp_enclose_array(const double *x, size_t n, double *lo, double *hi)
{
    const double shifter = 0x1.8p52;
    uint64_t rmax = 0;
    for (size_t i = 0; i < n; i++) {
        double xc = x[i];
        xc = xc == xc ? xc : 0.0; /* NaN: recomputed below */
        xc = xc < -708.0 ? -708.0 : xc;
        xc = xc > 709.0 ? 709.0 : xc;
        double kd = (xc * LOG2E + shifter) - shifter;
        double r1 = xc - kd * LN2_HI;
        double t2 = kd * LN2_LO;
        double r = r1 - t2;
        double ar = fabs(r);
        /* the largest |r| by its bits (ar >= 0: the same order), an integer
         * maximum, so that the loop vectorises */
        uint64_t ab;
        memcpy(&ab, &ar, sizeof ab);
        rmax = ab > rmax ? ab : rmax;
        double er = AC_U * (fabs(r1) + fabs(t2) + ar) * 1.0001 + fabs(kd) * 0x1p-86;
        /* Horner, unrolled (the same operations as in ac_exp_enclose) */
        double p = exp_coef[15];
        p = p * r + exp_coef[14];
        p = p * r + exp_coef[13];
        p = p * r + exp_coef[12];
        p = p * r + exp_coef[11];
        p = p * r + exp_coef[10];
        p = p * r + exp_coef[9];
        p = p * r + exp_coef[8];
        p = p * r + exp_coef[7];
        p = p * r + exp_coef[6];
        p = p * r + exp_coef[5];
        p = p * r + exp_coef[4];
        p = p * r + exp_coef[3];
        p = p * r + exp_coef[2];
        p = p * r + exp_coef[1];
        p = p * r + exp_coef[0];
        double rho = (72.0 * AC_U + 1.02 * er) * (1.0 + 0x1p-50);
        uint64_t kb = (uint64_t)((int64_t)kd + 1023) << 52; /* 1 <= kd + 1023 <= 2046 */
        double sc;
        memcpy(&sc, &kb, sizeof sc);
        lo[i] = (p * (1.0 - 2.0 * rho)) * sc;
        hi[i] = (p * (1.0 + 2.0 * rho)) * sc;
    }
    double amax;
    memcpy(&amax, &rmax, sizeof amax);
    if (!(amax <= 0.36)) {
        for (size_t i = 0; i < n; i++)
            ac_exp_enclose(x[i], &lo[i], &hi[i]);
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (!(x[i] >= -708.0 && x[i] <= 709.0))
            ac_exp_enclose(x[i], &lo[i], &hi[i]);
}

/* e^a <= El and e^b >= Eh for a <= b close together, with one exp per
 * entry: e^b = e^a e^(b-a), and for 0 <= t <= 1
 *     e^t = 1 + t + t^2 (1/2! + t/3! + ...) <= 1 + t + t^2 (e - 2) <= 1 + t + t^2,
 * so Eh = up(H (1 + t + t^2)) with H >= e^a and t >= b - a (all rounded
 * up).  Entries with b - a > 2^-10 (or not finite) take their own exp. */
void ac_exp_enclose_shift(const double *a, const double *b, size_t n, double *El, double *Eh,
                          double *tmp)
{
    ac_exp_enclose_array(a, n, El, tmp);
    /* selects only, so that the loop vectorises; the wide entries are
     * marked +inf and recomputed below (an entry already +inf stays so) */
    for (size_t i = 0; i < n; i++) {
        double t = ac_sub_up(b[i], a[i]);
        double f = ac_add_up(1.0, ac_add_up(t, ac_mul_up(t, t)));
        Eh[i] = (t >= 0 && t <= 0x1p-10) ? ac_mul_up(tmp[i], f) : INFINITY;
    }
    for (size_t i = 0; i < n; i++)
        if (!(Eh[i] < INFINITY)) {
            double l;
            ac_exp_enclose(b[i], &l, &Eh[i]);
        }
}

/* ac_sum_enclose from its two sums s = fl(sum x_i) and a = fl(sum |x_i|),
 * both formed by recursive summation over the n terms in order. */
static int sum_enclose_from(double s, double a, size_t n, double *lo, double *hi)
{
    if (!isfinite(s) || !isfinite(a)) {
        *lo = -INFINITY;
        *hi = INFINITY;
        return 0;
    }
    if (n <= 1) {
        *lo = *hi = s;
        return 1;
    }
    double g = ac_gamma_up((double)(n - 1));
    double err = ac_mul_up(ac_div_up(g, ac_sub_dn(1.0, g)), a);
    *lo = ac_sub_dn(s, err);
    *hi = ac_add_up(s, err);
    return 1;
}

int ac_sum_enclose(const double *x, size_t n, size_t stride, double *lo, double *hi)
{
    /* |fl(s) - s| <= gamma_{n-1} sum|x_i| (Higham (4.4)); sum|x_i| <=
     * fl(sum|x_i|)/(1 - gamma_{n-1}) since that sum has non-negative terms. */
    double s = 0.0, a = 0.0;
    for (size_t i = 0; i < n; i++) {
        double v = x[i * stride];
        s += v;
        a += fabs(v);
    }
    return sum_enclose_from(s, a, n, lo, hi);
}

/* The end of ac_norm2_up and ac_imat_fro_dev_up: s is the double sum of the
 * n squares of the entries scaled by 2^-e (largest in [1/2, 1)); returns an
 * upper bound on the exact 2-norm of the unscaled entries.  Each square:
 * relative error u plus eta/2 absolute; the sum of n non-negative terms:
 * relative gamma_{n-1}.  Together <= gamma_n relative plus n*eta absolute on
 * sum (x_i 2^-e)^2 (with the scaling loss, the exact scaled value v_i
 * satisfies |v_i| <= |fl v_i| + eta/2). */
static double norm2_finish_up(double s, size_t n, int e)
{
    double g = ac_gamma_up((double)n + 1);
    double bound = ac_mul_up(s, ac_div_up(1.0, ac_sub_dn(1.0, g)));
    /* (|v|+eta/2)^2 <= v^2 + eta|v| + eta^2/4 <= v^2 + 2 eta */
    bound = ac_add_up(bound, ac_mul_up((double)n, 4 * AC_ETA + 0x1p-1060));
    return ldexp(ac_sqrt_up(bound), e) * (1.0 + 2 * AC_U) + AC_ETA;
}

double ac_norm2_up(const double *x, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++) {
        double v = fabs(x[i]);
        if (!(v <= DBL_MAX))
            return INFINITY; /* Inf or NaN */
        if (v > m)
            m = v;
    }
    if (m == 0.0)
        return 0.0;
    /* Scale by 2^-e (exact unless an entry becomes subnormal: at most eta/2
     * lost per entry, accounted for below), so that the largest is in [1/2,1). */
    int e;
    frexp(m, &e);
    double s = 0.0;
    if (e >= -1021 && e <= 1021) {
        /* 2^-e is a normal double: x 2^-e rounds exactly as ldexp does
         * (exact unless the result is subnormal) */
        double sc = ldexp(1.0, -e);
        for (size_t i = 0; i < n; i++) {
            double v = x[i] * sc;
            s += v * v;
        }
    } else
        for (size_t i = 0; i < n; i++) {
            double v = ldexp(x[i], -e);
            s += v * v;
        }
    return norm2_finish_up(s, n, e);
}

/* ---- interval matrices ---------------------------------------------------- */

int ac_imat_init(ac_imat *m, size_t rows, size_t cols, int with_rad, ac_err *err)
{
    size_t n;
    m->rows = m->cols = 0;
    m->mid = m->rad = NULL;
    if (!ac_size_mul(rows, cols, &n) || n > SIZE_MAX / sizeof(double))
        return ac_err_set(err, AC_EUSAGE, "interval matrix of %zu x %zu entries is too large",
                          rows, cols);
    m->mid = calloc(n ? n : 1, sizeof(double));
    if (with_rad)
        m->rad = calloc(n ? n : 1, sizeof(double));
    if (!m->mid || (with_rad && !m->rad)) {
        free(m->mid);
        free(m->rad);
        m->mid = m->rad = NULL;
        return ac_err_set(err, AC_EINTERNAL, "out of memory (%zu x %zu interval matrix)", rows, cols);
    }
    m->rows = rows;
    m->cols = cols;
    return AC_OK;
}

void ac_imat_free(ac_imat *m)
{
    if (!m)
        return;
    free(m->mid);
    free(m->rad);
    m->mid = m->rad = NULL;
    m->rows = m->cols = 0;
}

ac_imat ac_imat_view(const ac_mat *m)
{
    ac_imat v;
    v.rows = m->rows;
    v.cols = m->cols;
    v.mid = m->data;
    v.rad = NULL;
    return v;
}

int ac_imat_finite(const ac_imat *A)
{
    size_t n = A->rows * A->cols;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(A->mid[i]) || (A->rad && !isfinite(A->rad[i])))
            return 0;
    return 1;
}

#define ABS_PANEL 256 /* rows of op(A) whose |A| is formed at a time */
#define B_PANEL 512   /* columns of op(B) whose factors B1, B2 are formed at a time */

int ac_imat_mul(ac_imat *C, ac_trans ta, const ac_imat *A, ac_trans tb, const ac_imat *B,
                ac_err *err)
{
    size_t m = ta ? A->cols : A->rows, k = ta ? A->rows : A->cols;
    size_t kb = tb ? B->cols : B->rows, n = tb ? B->rows : B->cols;
    if (k != kb || C->rows != m || C->cols != n || !C->rad)
        return ac_err_set(err, AC_EUSAGE,
                          "interval product: shapes %zux%zu%s * %zux%zu%s -> %zux%zu do not match",
                          A->rows, A->cols, ta ? "^T" : "", B->rows, B->cols, tb ? "^T" : "",
                          C->rows, C->cols);
    size_t mn = m * n;
    if (mn == 0)
        return AC_OK;
    if (k == 0) {
        memset(C->mid, 0, mn * sizeof(double));
        memset(C->rad, 0, mn * sizeof(double));
        return AC_OK;
    }
    CBLAS_TRANSPOSE TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
    int lda = (int)A->cols, ldb = (int)B->cols, ldc = (int)n;
    size_t pr = m < ABS_PANEL ? m : ABS_PANEL, pc = n < B_PANEL ? n : B_PANEL;
    /* |Am| is formed a panel of pr rows of op(A) at a time and the factors
     * B1, B2 below a panel of pc columns of op(B) at a time (memory: (pr + 2
     * pc) k doubles, not copies of A and B) */
    double *absA = malloc(pr * k * sizeof(double)), *B1 = malloc(pc * k * sizeof(double));
    double *B2 = NULL;
    int st = AC_OK;
    if (!absA || !B1 || (A->rad && !(B2 = malloc(pc * k * sizeof(double))))) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory in an interval product");
        goto done;
    }
    /* C_m = fl(A_m B_m) */
    cblas_dgemm(CblasRowMajor, TA, TB, (int)m, (int)n, (int)k, 1.0, A->mid, lda, B->mid, ldb,
                0.0, C->mid, ldc);
    /* The exact radius needed is
     *   |A_m B_m - C_m| + |A_m| B_r + A_r (|B_m| + B_r)
     *   <= |A_m| (g |B_m| + B_r) + A_r (|B_m| + B_r),       g = gamma_k,
     * a product of non-negative matrices [|A_m|, A_r] [B1; B2] with
     * B1 >= g|B_m| + B_r and B2 >= |B_m| + B_r formed with upward rounding.
     * Its floating-point value G (inner dimension k or 2k, one dgemm or two
     * accumulating ones) satisfies exact <= G / (1 - gamma_{2k+1}); products
     * that underflow add at most 2k eta/2 < realmin.  So
     *   C_r = up(G / (1 - gamma_{2k+1})) + realmin.
     * Cost: 2 dgemm for a point A, 3 for an interval A (vs 1 for fl(AB)). */
    double g = ac_gamma_up((double)k);
    for (size_t j0 = 0; j0 < n; j0 += pc) {
        size_t wc = n - j0 < pc ? n - j0 : pc;
        for (size_t l = 0; l < k; l++) /* B1, B2: k x wc, op(B)'s columns j0.. */
            for (size_t j = 0; j < wc; j++) {
                size_t idx = tb ? (j0 + j) * (size_t)ldb + l : l * (size_t)ldb + j0 + j;
                double bm = fabs(B->mid[idx]), br = B->rad ? B->rad[idx] : 0.0;
                B1[l * wc + j] = ac_add_up(ac_mul_up(g, bm), br);
                if (B2)
                    B2[l * wc + j] = ac_add_up(bm, br);
            }
        for (size_t r0 = 0; r0 < m; r0 += pr) {
            size_t w = m - r0 < pr ? m - r0 : pr;
            if (!ta) /* rows r0.. of A, w x k */
                for (size_t i = 0; i < w; i++)
                    for (size_t l = 0; l < k; l++)
                        absA[i * k + l] = fabs(A->mid[(r0 + i) * (size_t)lda + l]);
            else /* columns r0.. of A, k x w */
                for (size_t l = 0; l < k; l++)
                    for (size_t i = 0; i < w; i++)
                        absA[l * w + i] = fabs(A->mid[l * (size_t)lda + r0 + i]);
            cblas_dgemm(CblasRowMajor, TA, CblasNoTrans, (int)w, (int)wc, (int)k, 1.0, absA,
                        ta ? (int)w : (int)k, B1, (int)wc, 0.0, C->rad + r0 * (size_t)ldc + j0,
                        ldc);
        }
        if (A->rad)
            cblas_dgemm(CblasRowMajor, TA, CblasNoTrans, (int)m, (int)wc, (int)k, 1.0, A->rad, lda,
                        B2, (int)wc, 1.0, C->rad + j0, ldc);
    }
    double c2 = ac_div_up(1.0, ac_sub_dn(1.0, ac_gamma_up(2.0 * (double)k + 1.0)));
    for (size_t i = 0; i < mn; i++)
        C->rad[i] = ac_add_up(ac_mul_up(c2, C->rad[i]), AC_REALMIN);
done:
    free(absA);
    free(B1);
    free(B2);
    return st;
}

/* An upper bound on |a - b| over the entry i of A, b = B[i], the identity's
 * entry or 0: |a - b| <= |mid - b| + rad, and c = fl(mid - b) gives
 * |mid - b| <= up(|c|). */
static double entry_dev_up(const ac_imat *A, size_t i, const double *B, int identity)
{
    double b = 0.0;
    if (identity)
        b = (i / A->cols == i % A->cols) ? 1.0 : 0.0;
    else if (B)
        b = B[i];
    double d = ac_up(fabs(A->mid[i] - b));
    if (A->rad)
        d = ac_add_up(d, A->rad[i]);
    return d;
}

double ac_imat_maxdev_up(const ac_imat *A, const double *B, int identity)
{
    size_t n = A->rows * A->cols;
    double m = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = entry_dev_up(A, i, B, identity);
        if (!(d <= DBL_MAX))
            return INFINITY;
        if (d > m)
            m = d;
    }
    return m;
}

double ac_imat_fro_dev_up(const ac_imat *A, const double *B, int identity)
{
    /* ac_norm2_up of the entrywise bounds, streamed in two passes (the
     * largest bound, then the scaled squares) instead of an n^2 buffer: the
     * same operations on the same values, so the same result */
    size_t n = A->rows * A->cols;
    double m = 0.0;
    for (size_t i = 0; i < n; i++) {
        double v = entry_dev_up(A, i, B, identity);
        if (!(v <= DBL_MAX))
            return INFINITY;
        if (v > m)
            m = v;
    }
    if (m == 0.0)
        return 0.0;
    int e;
    frexp(m, &e);
    double s = 0.0;
    if (e >= -1021 && e <= 1021) {
        double sc = ldexp(1.0, -e);
        for (size_t i = 0; i < n; i++) {
            double v = entry_dev_up(A, i, B, identity) * sc;
            s += v * v;
        }
    } else
        for (size_t i = 0; i < n; i++) {
            double v = ldexp(entry_dev_up(A, i, B, identity), -e);
            s += v * v;
        }
    return norm2_finish_up(s, n, e);
}

#define SMX_COLS 64 /* softmax columns enclosed together, read row by row */

int ac_softmax_col_enclose(const double *lo, const double *hi, size_t n, size_t m,
                           double *plo, double *phi)
{
    /* Blocks of up to SMX_COLS columns, each read row by row (contiguous,
     * vectorised across the columns); per column the same operations in
     * the same order as one column at a time: the exps entry by entry, the
     * sums over i in order, the same final formulas, so the same bits. */
    int ok = 1;
    size_t B = m < SMX_COLS ? m : SMX_COLS, nb = n * B;
    double *buf = malloc((5 * nb + 6 * B + 1) * sizeof(double));
    if (!buf) {
        for (size_t i = 0; i < n * m; i++) {
            plo[i] = 0.0;
            phi[i] = 1.0;
        }
        return 0;
    }
    double *Al = buf, *Ah = Al + nb, *El = Ah + nb, *Eh = El + nb, *T = Eh + nb;
    double *mx = T + nb, *sl = mx + B, *al = sl + B, *sh = al + B, *ah = sh + B, *bad = ah + B;
    for (size_t j0 = 0; j0 < m; j0 += B) {
        size_t w = m - j0 < B ? m - j0 : B;
        for (size_t j = 0; j < w; j++) {
            mx[j] = -INFINITY;
            bad[j] = 0;
            sl[j] = al[j] = sh[j] = ah[j] = 0;
        }
        for (size_t i = 0; i < n; i++) {
            const double *l = lo + i * m + j0, *h = hi + i * m + j0;
            for (size_t j = 0; j < w; j++) {
                double a = l[j], b = h[j];
                bad[j] = (!isfinite(a) || !isfinite(b) || a > b) ? 1.0 : bad[j];
                mx[j] = b > mx[j] ? b : mx[j];
            }
        }
        /* E-_i <= exp(lo_i - mx), E+_i >= exp(hi_i - mx); the shift cancels
         * in the ratios, so any mx works as long as the bounds are rigorous.
         * A column with a bad entry gets exp(0) (harmless) and [0, 1] below. */
        for (size_t i = 0; i < n; i++) {
            const double *l = lo + i * m + j0, *h = hi + i * m + j0;
            for (size_t j = 0; j < w; j++) {
                Al[i * w + j] = bad[j] != 0 ? 0.0 : ac_sub_dn(l[j], mx[j]);
                Ah[i * w + j] = bad[j] != 0 ? 0.0 : ac_sub_up(h[j], mx[j]);
            }
        }
        ac_exp_enclose_shift(Al, Ah, n * w, El, Eh, T);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < w; j++) {
                double el = El[i * w + j], eh = Eh[i * w + j];
                sl[j] += el;
                al[j] += fabs(el);
                sh[j] += eh;
                ah[j] += fabs(eh);
            }
        for (size_t j = 0; j < w; j++) {
            double t;
            sum_enclose_from(sl[j], al[j], n, &sl[j], &t); /* sl <= sum E-_k */
            sum_enclose_from(sh[j], ah[j], n, &t, &sh[j]); /* sh >= sum E+_k */
            ok &= bad[j] == 0;
        }
        for (size_t i = 0; i < n; i++) {
            const double *el = El + i * w, *eh = Eh + i * w;
            double *pl_ = plo + i * m + j0, *ph_ = phi + i * m + j0;
            for (size_t j = 0; j < w; j++) {
                /* sum_{k != i} E+_k <= sh - E+_i; sum_{k != i} E-_k >= sl - E-_i */
                double oh = ac_sub_up(sh[j], eh[j]);
                double ol = ac_sub_dn(sl[j], el[j]);
                ol = ol < 0 ? 0 : ol;
                double pl = ac_div_dn(el[j], ac_add_up(el[j], oh));
                double den = ac_add_dn(eh[j], ol);
                double ph = den > 0 ? ac_div_up(eh[j], den) : 1.0;
                pl = pl >= 0 ? pl : 0;
                ph = ph <= 1 ? ph : 1;
                pl_[j] = bad[j] != 0 ? 0.0 : pl;
                ph_[j] = bad[j] != 0 ? 1.0 : ph;
            }
        }
    }
    free(buf);
    return ok;
}
