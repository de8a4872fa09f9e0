/* circuit.c — certified singular values of a head's circuit A B (A d x dk,
 * B dk x d: QK = Wq_i' Wk_g, OV = Wo_i Wv_g), doc/mathematics.md §6.9
 * "Circuits":
 *   md_circuit_full  the d x d product enclosed by interval arithmetic, Weyl
 *                    around its double SVD (ac_sv_enclose, §2.5): O(d^3);
 *   md_circuit_core  the same values from the dk x dk core R_A D R_B' of two
 *                    Cholesky factors, with the certified orthogonality
 *                    defects e_A, e_B of the exact Q factors: O(d dk^2);
 *   md_circuit       the core, and the full product as well when the core
 *                    cannot certify or is loose (the two intersected).
 *
 * Dimension letters: d width, dk head size (the rank bound of the product). */
#include <config.h>

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <lapacke.h>

#include "attncheck/interval.h"
#include "attncheck/linalg.h"
#include "models/models_impl.h"

/* The core is used alone when its widest enclosure is at most this many
 * times the width the full product would give, predicted as
 * 2 gamma_d ||A||_F ||B||_F (the size of its interval product's radius and
 * of the residual of its d x d SVD, §2.3, §2.5); else the
 * full product is computed too and the two enclosures intersected.  A
 * choice of tightness, never of soundness: either enclosure is certified.
 * (The core's relative width is about e ~ dk u kappa(A)^2: alone on
 * well-conditioned heads, intersected on ill-conditioned ones.) */
#define CORE_WIDTH_FACTOR 4.0

/* The rank range of c from its d values (rank <= dk exactly, doc §6.9). */
static void circuit_ranks(ac_inspect_circuit *c, size_t m, size_t dk)
{
    c->nsv = dk < m ? dk : m;
    c->rank_lo = 0;
    long nz = 0;
    for (size_t i = 0; i < m; i++) {
        c->rank_lo += c->lo[i] > 0;
        nz += c->hi[i] > 0;
    }
    c->rank_hi = nz < (long)dk ? nz : (long)dk;
}

static int circuit_alloc(ac_inspect_circuit *c, size_t m, ac_err *err)
{
    c->lo = calloc(m ? m : 1, sizeof *c->lo);
    c->hi = calloc(m ? m : 1, sizeof *c->hi);
    if (!c->lo || !c->hi) {
        md_circuit_free(c);
        return ac_err_set(err, AC_EINTERNAL, "out of memory (a circuit of %zu values)", m);
    }
    return AC_OK;
}

void md_circuit_free(ac_inspect_circuit *c)
{
    free(c->lo);
    free(c->hi);
    memset(c, 0, sizeof *c);
}

/* Certified singular values of A B: the product enclosed by interval
 * arithmetic, Weyl around its SVD (ac_sv_enclose, doc §2.5). */
int md_circuit_full(ac_inspect_circuit *c, const ac_mat *A, const ac_mat *B, ac_err *err)
{
    ac_imat C = {0};
    ac_imat Ai = ac_imat_view(A), Bi = ac_imat_view(B);
    size_t d = A->rows, dk = A->cols, m = d < B->cols ? d : B->cols;
    int st;
    memset(c, 0, sizeof *c);
    if ((st = circuit_alloc(c, m, err)) || (st = ac_imat_init(&C, d, B->cols, 1, err)) ||
        (st = ac_imat_mul(&C, AC_NOTRANS, &Ai, AC_NOTRANS, &Bi, err)))
        goto out;
    if (!ac_imat_finite(&C)) {
        for (size_t i = 0; i < m; i++)
            c->lo[i] = 0, c->hi[i] = INFINITY;
        c->eps = INFINITY;
    } else if ((st = ac_sv_enclose(&C, c->lo, c->hi, &c->eps, err))) {
        goto out;
    }
    circuit_ranks(c, m, dk);
out:
    ac_imat_free(&C);
    if (st)
        md_circuit_free(c);
    return st;
}

/* 2^-e with e the exponent of max |x| (max |x| 2^-e in [1/2, 1)); 0 if x = 0. */
static int scale_exp(const double *x, size_t n, size_t stride)
{
    double m = 0;
    int e = 0;
    for (size_t i = 0; i < n; i++)
        m = fabs(x[i * stride]) > m ? fabs(x[i * stride]) : m;
    if (m > 0)
        frexp(m, &e);
    return e;
}

/* A lower bound >= 0 on x 2^t (x a lower bound on a singular value: below
 * 0 it says nothing, 0 is returned), and an upper bound on x 2^t (x >= 0):
 * exact unless the result leaves the normal range. */
static double ldexp_dn(double x, int t)
{
    if (!(x > 0))
        return 0;
    double y = ldexp(x, t);
    if (y == INFINITY)
        return DBL_MAX; /* x 2^t > DBL_MAX */
    if (y < AC_REALMIN) {
        y = ac_dn(y); /* ldexp rounded to nearest in the subnormal range */
        return y > 0 ? y : 0;
    }
    return y;
}

static double ldexp_up(double x, int t)
{
    double y = ldexp(x, t);
    return y < AC_REALMIN && x > 0 ? ac_up(y) : y;
}

/* One factor of the core (doc §6.9): F (k x d, a row-scaled copy of A' or B,
 * scaled exactly) -> R upper triangular with R'R ~ F F' (Cholesky of the
 * midpoint of the enclosed Gram matrix) and e >= ||R^-T (F F') R^-1 - I||_2.
 * Returns 0 with *ok = 0 if the factor cannot be certified (Cholesky or the
 * inverse's certificate fails, or e >= 1). */
static int core_factor(ac_mat *R, double *e, int *ok, const ac_mat *F, ac_err *err)
{
    size_t k = F->rows, d = F->cols;
    ac_mat Ft = {0}, Rt = {0}, Y = {0};
    ac_imat G = {0}, H = {0};
    int st;
    *ok = 0;
    *e = INFINITY;
    if ((st = ac_mat_init(&Ft, d, k, err)) || (st = ac_mat_init(R, k, k, err)) ||
        (st = ac_mat_init(&Rt, k, k, err)) || (st = ac_mat_init(&Y, k, k, err)) ||
        (st = ac_imat_init(&G, k, k, 1, err)) || (st = ac_imat_init(&H, k, k, 1, err)))
        goto out;
    for (size_t i = 0; i < k; i++)
        for (size_t j = 0; j < d; j++)
            AC_MAT(&Ft, j, i) = AC_MAT(F, i, j);
    /* G = F F' enclosed (split product: radius about u|G|) */
    if ((st = ac_imat_mul_split(&G, F, &Ft, err)))
        goto out;
    if (!ac_imat_finite(&G))
        goto out;
    /* R: the row-major upper triangle = LAPACK's column-major lower one,
     * mid(G) = L L' = R'R */
    memcpy(R->data, G.mid, k * k * sizeof(double));
    if (k && LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', (lapack_int)k, R->data, (lapack_int)k) != 0)
        goto out;
    for (size_t i = 0; i < k; i++)
        for (size_t j = 0; j < i; j++)
            AC_MAT(R, i, j) = 0;
    for (size_t i = 0; i < k; i++)
        for (size_t j = 0; j < k; j++)
            AC_MAT(&Rt, j, i) = AC_MAT(R, i, j);
    /* ||E||_2 <= ||E||_F for E = F F' - R'R: H = R'R enclosed, G's radius
     * widened by H's */
    if ((st = ac_imat_mul_split(&H, &Rt, R, err)))
        goto out;
    if (!ac_imat_finite(&H))
        goto out;
    for (size_t i = 0; i < k * k; i++)
        G.rad[i] = ac_add_up(G.rad[i], H.rad[i]);
    double ne = ac_imat_fro_dev_up(&G, H.mid, 0);
    /* ||R^-1||_2 <= 1/s with s <= sigma_min(R) from a left inverse Y ~ R^-1
     * (doc §2.5, "Left inverse") */
    memcpy(Y.data, R->data, k * k * sizeof(double));
    if (k && LAPACKE_dtrtri_work(LAPACK_COL_MAJOR, 'L', 'N', (lapack_int)k, Y.data, (lapack_int)k) != 0)
        goto out;
    double qlo, qhi, s = 0;
    if ((st = ac_cert_left_inverse(&Y, R, &qlo, &qhi, &s, NULL, err)))
        goto out;
    if (!(s > 0) || !(ne <= DBL_MAX))
        goto out;
    /* e = ||R^-T E R^-1||_2 <= ||E||_2 / sigma_min(R)^2 */
    *e = ac_div_up(ne, ac_mul_dn(s, s));
    *ok = *e < 1;
out:
    ac_mat_free(&Ft);
    ac_mat_free(&Rt);
    ac_mat_free(&Y);
    ac_imat_free(&G);
    ac_imat_free(&H);
    if (st || !*ok)
        ac_mat_free(R);
    return st;
}

/* Certified singular values of A B on its rank-dk core (doc §6.9): A = As Da
 * (columns scaled by powers of two), B = Db Bs (rows), As = Qa Ra and
 * Bs' = Qb Rb with Ra, Rb the Cholesky factors of core_factor and
 * Qa = As Ra^-1, Qb = Bs' Rb^-1 exact; A B = Qa (Ra D Rb') Qb' with
 * D = Da Db = 2^t D', and for i <= dk
 *   sigma_i(A B) in 2^t sigma_i(Ra D' Rb') [sqrt((1-ea)(1-eb)), sqrt((1+ea)(1+eb))];
 * the values beyond dk are exactly 0.  *ok = 0 (c left empty) when the core
 * cannot certify: a scaling that is not exact, dk >= d, a failed factor. */
int md_circuit_core(ac_inspect_circuit *c, int *ok, const ac_mat *A, const ac_mat *B, ac_err *err)
{
    size_t d = A->rows, dk = A->cols, m = d < B->cols ? d : B->cols;
    ac_mat Fa = {0}, Fb = {0}, Ra = {0}, Rb = {0}, S = {0};
    ac_imat C = {0};
    int *ea = NULL, *eb = NULL;
    double *slo = NULL, *shi = NULL;
    int st, oka = 0, okb = 0;
    *ok = 0;
    memset(c, 0, sizeof *c);
    if (B->rows != dk)
        return ac_err_set(err, AC_EUSAGE, "circuit: A is %zu x %zu, B %zu x %zu", A->rows,
                          A->cols, B->rows, B->cols);
    if (dk == 0 || dk >= m)
        return AC_OK; /* nothing to gain: the full product */
    ea = malloc(dk * sizeof *ea);
    eb = malloc(dk * sizeof *eb);
    slo = malloc(dk * sizeof *slo);
    shi = malloc(dk * sizeof *shi);
    if (!ea || !eb || !slo || !shi) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory (a circuit core of %zu)", dk);
        goto out;
    }
    if ((st = ac_mat_init(&Fa, dk, d, err)) || (st = ac_mat_init(&Fb, dk, B->cols, err)) ||
        (st = ac_mat_init(&S, dk, dk, err)))
        goto out;
    /* Fa = (A Da^-1)', Fb = Db^-1 B: every column of A, row of B scaled to a
     * largest entry in [1/2, 1); exact, or the core is not used */
    for (size_t j = 0; j < dk; j++) {
        ea[j] = scale_exp(A->data + j, d, dk);
        eb[j] = scale_exp(B->data + j * B->cols, B->cols, 1);
        for (size_t i = 0; i < d; i++) {
            double x = AC_MAT(A, i, j), y = ldexp(x, -ea[j]);
            if (ldexp(y, ea[j]) != x)
                goto out;
            AC_MAT(&Fa, j, i) = y;
        }
        for (size_t i = 0; i < B->cols; i++) {
            double x = AC_MAT(B, j, i), y = ldexp(x, -eb[j]);
            if (ldexp(y, eb[j]) != x)
                goto out;
            AC_MAT(&Fb, j, i) = y;
        }
    }
    double e_a, e_b;
    if ((st = core_factor(&Ra, &e_a, &oka, &Fa, err)) || !oka ||
        (st = core_factor(&Rb, &e_b, &okb, &Fb, err)) || !okb)
        goto out;
    /* S = D' Rb' with D = Da Db = 2^t D', D' <= 1: exact, or no core */
    int t = INT_MIN;
    for (size_t j = 0; j < dk; j++)
        t = ea[j] + eb[j] > t ? ea[j] + eb[j] : t;
    for (size_t i = 0; i < dk; i++)
        for (size_t j = 0; j < dk; j++) {
            double x = AC_MAT(&Rb, j, i), y = ldexp(x, ea[i] + eb[i] - t);
            if (ldexp(y, t - ea[i] - eb[i]) != x)
                goto out;
            AC_MAT(&S, i, j) = y;
        }
    double eps;
    if ((st = ac_imat_init(&C, dk, dk, 1, err)) || (st = ac_imat_mul_split(&C, &Ra, &S, err)))
        goto out;
    if (!ac_imat_finite(&C))
        goto out;
    if ((st = ac_sv_enclose(&C, slo, shi, &eps, err)))
        goto out;
    if (!(shi[0] < INFINITY))
        goto out;
    double gl = ac_sqrt_dn(ac_mul_dn(ac_sub_dn(1, e_a), ac_sub_dn(1, e_b)));
    double gh = ac_sqrt_up(ac_mul_up(ac_add_up(1, e_a), ac_add_up(1, e_b)));
    if ((st = circuit_alloc(c, m, err)))
        goto out;
    for (size_t i = 0; i < dk; i++) {
        c->lo[i] = ldexp_dn(ac_mul_dn(slo[i], gl), t);
        c->hi[i] = ldexp_up(ac_mul_up(shi[i], gh), t);
    }
    /* values dk .. m-1 are exactly 0 (calloc) */
    c->eps = ldexp_up(ac_mul_up(eps, gh), t);
    c->route = 1;
    c->e_core = e_a > e_b ? e_a : e_b;
    circuit_ranks(c, m, dk);
    *ok = 1;
out:
    free(ea);
    free(eb);
    free(slo);
    free(shi);
    ac_mat_free(&Fa);
    ac_mat_free(&Fb);
    ac_mat_free(&Ra);
    ac_mat_free(&Rb);
    ac_mat_free(&S);
    ac_imat_free(&C);
    if (st)
        md_circuit_free(c);
    return st;
}

int md_circuit(ac_inspect_circuit *c, const ac_mat *A, const ac_mat *B, ac_err *err)
{
    ac_inspect_circuit f;
    int ok, st;
    if ((st = md_circuit_core(c, &ok, A, B, err)))
        return st;
    if (ok) {
        double w = 0, na = ac_norm2_up(A->data, A->rows * A->cols),
               nb = ac_norm2_up(B->data, B->rows * B->cols);
        for (size_t i = 0; i < A->cols; i++)
            w = fmax(w, c->hi[i] - c->lo[i]);
        if (w <= CORE_WIDTH_FACTOR * 2 * ac_gamma_up((double)A->rows) * na * nb)
            return AC_OK;
    }
    if ((st = md_circuit_full(&f, A, B, err))) {
        md_circuit_free(c);
        return st;
    }
    if (!ok) {
        *c = f;
        return AC_OK;
    }
    /* both certified: their intersection, which cannot be empty */
    size_t m = A->rows < B->cols ? A->rows : B->cols;
    for (size_t i = 0; i < m; i++) {
        c->lo[i] = f.lo[i] > c->lo[i] ? f.lo[i] : c->lo[i];
        c->hi[i] = f.hi[i] < c->hi[i] ? f.hi[i] : c->hi[i];
        if (c->lo[i] > c->hi[i]) {
            st = ac_err_set(err, AC_EINTERNAL,
                            "circuit: the core's and the full product's enclosures of "
                            "sigma_%zu are disjoint", i + 1);
            break;
        }
    }
    c->eps = f.eps < c->eps ? f.eps : c->eps;
    c->route = 2;
    if (!st)
        circuit_ranks(c, m, A->cols);
    md_circuit_free(&f);
    if (st)
        md_circuit_free(c);
    return st;
}
