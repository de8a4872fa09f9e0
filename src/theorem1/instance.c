/* instance.c — the instances of Theorem 1 (paper 1): validation of (X, P,
 * D0, dk), the column normalisation of P, generated instances
 * (doc/mathematics.md §3.1, §3.3, §3.7), and the instance of a head with
 * biases, X with a row of ones appended (§3.8).
 *
 * Dimension letters: d model width, n tokens, dk head size.  X is d x n (one
 * column per token), P is n x n, positive and column-stochastic.
 */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>


#include "attncheck/interval.h"
#include "attncheck/rng.h"
#include "attncheck/theorem1.h"
#include "core/sum_exact.h"
#include "theorem1/t1_impl.h"

double ac_t1_colsum_tol(size_t n)
{
    return AC_T1_COLSUM_FACTOR * (double)(n ? n : 1) * AC_U;
}

/* ---- validation ----------------------------------------------------------- */

static int check_finite(const ac_mat *A, const char *name, ac_err *err)
{
    for (size_t i = 0; i < A->rows; i++)
        for (size_t j = 0; j < A->cols; j++) {
            double v = AC_MAT(A, i, j);
            if (!isfinite(v))
                return ac_err_set(err, AC_EDATA, "%s: entry (%zu, %zu) is %s", name, i, j,
                                  v != v ? "NaN" : (v > 0 ? "+Inf" : "-Inf"));
        }
    return AC_OK;
}

/* Every row of P sums to 1 within tol (certified enclosures): P is in the
 * row-stochastic layout of PyTorch's attention weights. */
static int t1_rows_sum_to_one(const ac_mat *P, double tol)
{
    for (size_t i = 0; i < P->rows; i++) {
        double lo, hi;
        ac_sum_enclose(P->data + i * P->cols, P->cols, 1, &lo, &hi);
        if (lo > 1 + tol || hi < 1 - tol)
            return 0;
    }
    return 1;
}

/* X d x n with d, n >= 1, dk >= 1, P n x n, both finite. */
static int validate_shapes(const ac_mat *X, const char *xname, const ac_mat *P, const char *pname,
                           size_t dk, ac_err *err)
{
    int st;
    size_t d = X->rows, n = X->cols;
    if (n == 0 || d == 0)
        return ac_err_set(err, AC_EDATA,
                          "%s: X is %zu x %zu; it needs d >= 1 rows and n >= 1 "
                          "columns (one per token)",
                          xname, d, n);
    if (dk == 0)
        return ac_err_set(err, AC_EUSAGE, "head size dk must be at least 1");
    if (P->rows != n || P->cols != n)
        return ac_err_set(err, AC_EDATA,
                          "%s: P is %zu x %zu but X (%s) has n = %zu columns, so "
                          "P must be %zu x %zu",
                          pname, P->rows, P->cols, xname, n, n, n);
    if ((st = check_finite(X, xname, err)) || (st = check_finite(P, pname, err)))
        return st;
    return AC_OK;
}

/* Every column of P sums to 1 within AC_T1_COLSUM_FACTOR n u (entries off a
 * mask are exact zeros and add nothing). */
static int validate_colsums(const ac_mat *P, const char *pname, ac_err *err)
{
    size_t n = P->rows;
    double tol = ac_t1_colsum_tol(n);
    for (size_t j = 0; j < n; j++) {
        double lo, hi;
        ac_sum_enclose(P->data + j, n, n, &lo, &hi);
        if (lo > 1 + tol || hi < 1 - tol) {
            double s = 0.5 * (lo + hi);
            if (t1_rows_sum_to_one(P, tol))
                return ac_err_set_field(err, AC_EDATA, "rows",
                                        "%s: column %zu sums to 1%+.3g but every row sums to 1: "
                                        "P is row-stochastic (PyTorch's layout); pass rows to "
                                        "check its transpose", pname, j, s - 1);
            return ac_err_set_field(err, AC_EDATA, "normalize",
                              "%s: column %zu sums to 1%+.3g, not 1 (tolerance "
                              "%.0f*n*u = %.3g; P must be column-stochastic: renormalise with "
                              "P /= P.sum(axis=0) or pass normalize)",
                              pname, j, s - 1, AC_T1_COLSUM_FACTOR, tol);
        }
    }
    return AC_OK;
}

int ac_t1_validate(const ac_mat *X, const char *xname, const ac_mat *P, const char *pname,
                   const double *d0, size_t nd0, const char *d0name, size_t dk, ac_err *err)
{
    int st;
    size_t n = X->cols;
    if ((st = validate_shapes(X, xname, P, pname, dk, err)))
        return st;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            if (!(AC_MAT(P, i, j) > 0))
                return ac_err_set(err, AC_EDATA,
                                  "%s: entry (%zu, %zu) = %g is not positive "
                                  "(a softmax output is always > 0)",
                                  pname, i, j, AC_MAT(P, i, j));
    if ((st = validate_colsums(P, pname, err)))
        return st;
    if (d0) {
        if (nd0 != n)
            return ac_err_set(err, AC_EDATA, "%s: D0 has %zu entries, expected n = %zu", d0name,
                              nd0, n);
        for (size_t j = 0; j < n; j++)
            if (!isfinite(d0[j]) || !(d0[j] > 0))
                return ac_err_set(err, AC_EDATA,
                                  "%s: entry %zu = %g is not a positive finite "
                                  "number (D0 is a positive diagonal)",
                                  d0name, j, d0[j]);
    }
    return AC_OK;
}

int ac_t1_validate_masked(const ac_mat *X, const char *xname, const ac_mat *P,
                          const char *pname, const unsigned char *omega, const char *mname,
                          size_t dk, ac_err *err)
{
    int st;
    size_t n = X->cols;
    if ((st = validate_shapes(X, xname, P, pname, dk, err)))
        return st;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            double v = AC_MAT(P, i, j);
            if (omega[i * n + j] && !(v > 0))
                return ac_err_set(err, AC_EDATA,
                                  "%s: entry (%zu, %zu) = %g is not positive, but key %zu is "
                                  "visible to query %zu in %s (a masked softmax is > 0 on the "
                                  "visible keys)",
                                  pname, i, j, v, i, j, mname);
            if (!omega[i * n + j] && v != 0.0)
                return ac_err_set(err, AC_EDATA,
                                  "%s: entry (%zu, %zu) = %g, but key %zu is masked for query "
                                  "%zu in %s: P must be exactly 0 there",
                                  pname, i, j, v, i, j, mname);
        }
    return validate_colsums(P, pname, err);
}

/* ---- the column normalisation of P --------------------------------------- */

void ac_t1_normalize(ac_mat *P)
{
    if (P->rows == 0)
        return;
    for (size_t j = 0; j < P->cols; j++) {
        double s = 0;
        for (size_t i = 0; i < P->rows; i++)
            s += AC_MAT(P, i, j);
        if (s > 0 && isfinite(s))
            for (size_t i = 0; i < P->rows; i++)
                AC_MAT(P, i, j) /= s;
    }
}

double ac_t1_normalisation_gap(const ac_mat *P)
{
    size_t n = P->rows;
    double gap = 0;
    for (size_t j = 0; j < n; j++) {
        double lo, hi;
        if (ac_sum_is_exactly(P->data + j, n, n, 1.0))
            continue; /* this column is its own normalisation */
        ac_sum_enclose(P->data + j, n, n, &lo, &hi);
        /* |1 - 1/s| over s in [lo, hi] */
        double f = fmax(fabs(ac_sub_up(1.0, ac_div_dn(1.0, hi))),
                        fabs(ac_sub_dn(1.0, ac_div_up(1.0, lo))));
        f = ac_up(f);
        for (size_t i = 0; i < n; i++) {
            double g = ac_mul_up(AC_MAT(P, i, j), f);
            if (g > gap)
                gap = g;
        }
    }
    return gap;
}

/* ---- generators ----------------------------------------------------------- */

int ac_t1_generate(ac_mat *X, ac_mat *P, size_t d, size_t n, uint64_t seed, ac_err *err)
{
    int st;
    X->data = P->data = NULL;
    if (d == 0 || n == 0)
        return ac_err_set(err, AC_EUSAGE, "generated instance needs d >= 1 and n >= 1");
    if ((st = ac_mat_init(X, d, n, err)) || (st = ac_mat_init(P, n, n, err))) {
        ac_mat_free(X);
        return st;
    }
    ac_rng r;
    ac_rng_init(&r, seed, 1, 0);
    ac_rng_normal_fill(&r, X->data, d * n);
    double *col = malloc(n * sizeof(double));
    if (!col) {
        ac_mat_free(X);
        ac_mat_free(P);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    for (size_t j = 0; j < n; j++) {
        ac_rng_init(&r, seed, 2, j);
        ac_rng_dirichlet(&r, n, NULL, col);
        for (size_t i = 0; i < n; i++)
            AC_MAT(P, i, j) = col[i];
    }
    free(col);
    return AC_OK;
}

int ac_t1_generate_representable(ac_mat *P, const ac_mat *X, size_t dk, uint64_t seed, ac_err *err)
{
    size_t d = X->rows;
    ac_mat Wk = {0}, Wq = {0};
    int st;
    P->data = NULL;
    if (dk == 0)
        return ac_err_set(err, AC_EUSAGE, "head size dk must be at least 1");
    if ((st = ac_mat_init(&Wk, dk, d, err)) || (st = ac_mat_init(&Wq, dk, d, err)))
        goto out;
    ac_rng r;
    ac_rng_init(&r, seed, 3, 0);
    ac_rng_normal_fill(&r, Wk.data, dk * d);
    ac_rng_normal_fill(&r, Wq.data, dk * d);
    double s = 1.0 / sqrt((double)d);
    for (size_t i = 0; i < dk * d; i++) {
        Wk.data[i] *= s;
        Wq.data[i] *= s;
    }
    st = ac_head_softmax(P, X, &Wk, &Wq, err);
out:
    ac_mat_free(&Wk);
    ac_mat_free(&Wq);
    return st;
}

int ac_t1_example_paper(ac_mat *X, ac_mat *P, ac_err *err)
{
    int st;
    X->data = P->data = NULL;
    if ((st = ac_mat_init(X, 1, 2, err)) || (st = ac_mat_init(P, 2, 2, err))) {
        ac_mat_free(X);
        return st;
    }
    X->data[0] = 1.0;
    X->data[1] = 0.0;
    P->data[0] = 0.5;
    P->data[1] = 0.75;
    P->data[2] = 0.5;
    P->data[3] = 0.25;
    return AC_OK;
}

/* A head with q/k biases on X is an unbiased head on [X; 1'] (§3.8). */
int ac_t1_append_ones(ac_mat *Xb, const ac_mat *X, ac_err *err)
{
    size_t d = X->rows, n = X->cols;
    int st = ac_mat_init(Xb, d + 1, n, err);
    if (st)
        return st;
    if (d > 0 && n > 0)
        memcpy(Xb->data, X->data, d * n * sizeof(double));
    for (size_t j = 0; j < n; j++)
        AC_MAT(Xb, d, j) = 1.0;
    return AC_OK;
}
