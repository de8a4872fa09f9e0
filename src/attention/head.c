/* head.c — one attention head, Softmax((Wk X)^T (Wq X) / sqrt(dk)) (paper 1,
 * eq. (1), in the layout of paper 1, eq. (3); attncheck/head.h), in double, at stage 0
 * and in Arb balls: the one home of "the logits of one head" and "the softmax
 * of one head" (head_impl.h) for Theorem 1, the multi-head layers and the
 * trainer's certification.  The masked head (doc/mathematics.md §3.8: the
 * softmax of each column over its visible keys) runs through the same
 * stages with a mask argument; NULL is the unmasked head, the same
 * operations as before.
 *
 * Dimension letters: d model width, n tokens, dk head size.  Buffers are
 * row-major: X d x n, Wk/Wq dk x d, K = Wk X and Q = Wq X dk x n, logits and
 * softmax n x n with the softmax over each column.
 */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpfr.h>

#include "attncheck/head.h"
#include "attncheck/interval.h"
#include "attncheck/json.h"
#include "attncheck/linalg.h"
#include "attention/head_impl.h"
#include "attention/softmax.h"
#include "core/ball.h"
#include "core/imat_split.h"

/* ---- double --------------------------------------------------------------- */

void ac_head_logits(double *Z, const double *K, const double *Q, size_t n, size_t dk)
{
    ac_dgemm(AC_TRANS, AC_NOTRANS, n, n, dk, 1.0 / sqrt((double)dk), K, n, Q, n, 0.0, Z, n);
}

void ac_head_softmax_kq(double *P, const double *K, const double *Q, size_t n, size_t dk,
                        double *scratch)
{
    ac_head_logits(P, K, Q, n, dk);
    ac_softmax_cols(P, n, n, scratch, scratch + n);
}

/* S = the logits (Wk X)^T (Wq X) / sqrt(dk) (logits_only) or their column
 * softmax, in double; S allocated here. */
static int head_double(ac_mat *S, const ac_mat *X, const ac_mat *Wk, const ac_mat *Wq,
                       int logits_only, ac_err *err)
{
    size_t d = X->rows, n = X->cols, dk = Wk->rows;
    ac_mat K = {0}, Q = {0};
    double *scratch = NULL;
    int st;
    S->data = NULL;
    if (Wk->cols != d || Wq->cols != d || Wq->rows != dk)
        return ac_err_set(err, AC_EDATA,
                          "weights are %zu x %zu and %zu x %zu; expected dk x d "
                          "with d = %zu",
                          Wk->rows, Wk->cols, Wq->rows, Wq->cols, d);
    if ((st = ac_mat_init(&K, dk, n, err)) || (st = ac_mat_init(&Q, dk, n, err)) ||
        (st = ac_mat_init(S, n, n, err)) ||
        (st = ac_gemm(&K, AC_NOTRANS, Wk, AC_NOTRANS, X, err)) ||
        (st = ac_gemm(&Q, AC_NOTRANS, Wq, AC_NOTRANS, X, err)))
        goto out;
    if (logits_only) {
        ac_head_logits(S->data, K.data, Q.data, n, dk);
        goto out;
    }
    if (!(scratch = malloc(2 * n * sizeof *scratch))) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    ac_head_softmax_kq(S->data, K.data, Q.data, n, dk, scratch);
out:
    if (st)
        ac_mat_free(S);
    free(scratch);
    ac_mat_free(&K);
    ac_mat_free(&Q);
    return st;
}

int ac_head_softmax(ac_mat *S, const ac_mat *X, const ac_mat *Wk, const ac_mat *Wq, ac_err *err)
{
    return head_double(S, X, Wk, Wq, 0, err);
}

/* ---- stage 0 -------------------------------------------------------------- */

int ac_head_logits_enclose(double *llo, double *lhi, ac_imat *S, const ac_imat *K,
                           const ac_imat *Q, size_t dk, ac_err *err)
{
    size_t n = S->rows;
    int st;
    if ((st = ac_imat_mul(S, AC_TRANS, K, AC_NOTRANS, Q, err)))
        return st;
    /* 1/sqrt(dk) in [s_lo, s_hi]: sqrt and / are correctly rounded */
    double s_lo = ac_div_dn(1.0, ac_sqrt_up((double)dk));
    double s_hi = ac_div_up(1.0, ac_sqrt_dn((double)dk));
    for (size_t i = 0; i < n * n; i++) {
        double a = ac_imat_lo(S, i), b = ac_imat_hi(S, i);
        llo[i] = a >= 0 ? ac_mul_dn(a, s_lo) : ac_mul_dn(a, s_hi);
        lhi[i] = b >= 0 ? ac_mul_up(b, s_hi) : ac_mul_up(b, s_lo);
    }
    return AC_OK;
}

/* The number r of leading rows of Wk, Wq (dk x d) that can contribute to
 * (Wk X)^T (Wq X) = sum_i (Wk X)_i^T (Wq X)_i: trailing rows i where Wk_i or
 * Wq_i is zero add an exact 0 and are skipped (Theorem 1 writes
 * Wk = [X^+; 0], Wq = [Wkq~ X^+; 0], so for dk = d >> n only n rows count).
 * The scale stays 1/sqrt(dk). */
size_t ac_head_live_rows(const ac_mat *Wk, const ac_mat *Wq)
{
    size_t r = Wk->rows, d = Wk->cols;
    while (r > 0) {
        const double *a = Wk->data + (r - 1) * d, *b = Wq->data + (r - 1) * d;
        int za = 1, zb = 1;
        for (size_t l = 0; l < d && za; l++)
            za = a[l] == 0.0;
        for (size_t l = 0; l < d && zb && !za; l++)
            zb = b[l] == 0.0;
        if (!za && !zb)
            break;
        r--;
    }
    return r;
}

int ac_head_logits_stage0(double *llo, double *lhi, ac_imat *S_out, const ac_mat *X,
                          const ac_mat *Wk, const ac_mat *Wq, const ac_imat *Kpre, ac_err *err)
{
    size_t n = X->cols, dk = Wk->rows, r = ac_head_live_rows(Wk, Wq);
    ac_imat K = {0}, Q = {0}, S = {0};
    ac_mat Wkr = {r, Wk->cols, Wk->data}, Wqr = {r, Wq->cols, Wq->data};
    ac_imat Xi = ac_imat_view(X), Wki = ac_imat_view(&Wkr), Wqi = ac_imat_view(&Wqr);
    ac_imat Kv = {0};
    if (Kpre) /* its first r rows (row-major: a prefix) */
        Kv = (ac_imat){r, Kpre->cols, Kpre->mid, Kpre->rad};
    const ac_imat *Kp = Kpre ? &Kv : &K;
    int st;
    if (Kpre && Kpre->rows < r)
        return ac_err_set(err, AC_EUSAGE, "head logits: K has %zu rows, expected %zu", Kpre->rows, dk);
    if ((!Kpre && ((st = ac_imat_init(&K, r, n, 1, err)) ||
                   (st = ac_imat_mul(&K, AC_NOTRANS, &Wki, AC_NOTRANS, &Xi, err)))) ||
        (st = ac_imat_init(&Q, r, n, 1, err)) || (st = ac_imat_init(&S, n, n, 1, err)) ||
        (st = ac_imat_mul(&Q, AC_NOTRANS, &Wqi, AC_NOTRANS, &Xi, err)) ||
        (st = ac_head_logits_enclose(llo, lhi, &S, Kp, &Q, dk, err)))
        goto out;
    if (S_out) {
        *S_out = S;
        S.mid = S.rad = NULL;
    }
out:
    ac_imat_free(&K);
    ac_imat_free(&Q);
    ac_imat_free(&S);
    return st;
}

int ac_head_softmax_enclose(double *plo, double *phi, const double *llo, const double *lhi,
                            size_t n)
{
    return ac_softmax_col_enclose(llo, lhi, n, n, plo, phi);
}

void ac_head_maxdev_from_bounds(const double *plo, const double *phi, const double *P, size_t N,
                                double *lo, double *hi)
{
    double l = 0, h = 0;
    for (size_t i = 0; i < N; i++) {
        double up = fmax(ac_sub_up(phi[i], P[i]), ac_sub_up(P[i], plo[i]));
        double dn = fmax(ac_sub_dn(plo[i], P[i]), ac_sub_dn(P[i], phi[i]));
        if (!(up <= h))
            h = up; /* also propagates NaN -> handled by caller via isfinite */
        if (dn > l)
            l = dn;
    }
    *lo = l;
    *hi = h;
}

/* [l, h] (running) encloses max |p - v| over p in [a, b] as well: the
 * largest upper bound (NaN read as +inf) and the largest lower bound. */
static void dev_update(double *l, double *h, double a, double b, double v)
{
    double up = fmax(ac_sub_up(b, v), ac_sub_up(v, a));
    double dn = fmax(ac_sub_dn(a, v), ac_sub_dn(v, b));
    if (!(up <= *h))
        *h = up == up ? up : INFINITY;
    if (dn > *l)
        *l = dn;
}

/* The masked zero head: column j is exactly 1/m_j on its m_j visible keys
 * and 0 elsewhere; the deviation from P column by column (off the mask it
 * is |P_ij|, exact). */
static void maxdev_uniform_masked(double *lo, double *hi, const ac_mat *P,
                                  const unsigned char *mask)
{
    size_t n = P->rows;
    double l = 0, h = 0;
    for (size_t j = 0; j < n; j++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            m += mask[i * n + j] != 0;
        double pl = m ? ac_div_dn(1.0, (double)m) : 0, ph = m ? ac_div_up(1.0, (double)m) : 0;
        for (size_t i = 0; i < n; i++)
            dev_update(&l, &h, mask[i * n + j] ? pl : 0, mask[i * n + j] ? ph : 0,
                       AC_MAT(P, i, j));
    }
    *lo = l;
    *hi = h;
}

/* max|Softmax - P| when every logit is an exact 0 (no live row: each term
 * (Wk X)_i^T (Wq X)_i of the logits has a zero factor): every column of the
 * softmax is exactly 1/n, enclosed by [1/n rounded down, rounded up]. */
static void maxdev_uniform(double *lo, double *hi, const ac_mat *P)
{
    size_t n = P->rows, N = n * n;
    double pl = ac_div_dn(1.0, (double)n), ph = ac_div_up(1.0, (double)n);
    /* max_i |p - P_i| over p in [pl, ph] only needs the extremes of P
     * (exact: min and max do not round) */
    double mn = INFINITY, mx = -INFINITY;
    int nan = 0;
    for (size_t i = 0; i < N; i++) {
        double v = P->data[i];
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
        nan |= v != v;
    }
    if (nan || N == 0) {
        *lo = 0;
        *hi = nan ? INFINITY : 0;
        return;
    }
    double h = fmax(ac_sub_up(ph, mn), ac_sub_up(mx, pl));
    double l = fmax(ac_sub_dn(pl, mn), ac_sub_dn(mx, ph));
    *lo = l > 0 ? l : 0;
    *hi = h > 0 ? h : 0;
}

/* The masked softmax enclosure of the w columns j0 .. j0 + w - 1 of an
 * n-row logit panel [llo, lhi] (n x w, row-major): column j is enclosed over
 * its visible rows only (mask[i * ncols + j0 + j], ncols the mask's columns),
 * gathered and passed to ac_softmax_col_enclose; the masked entries are
 * exactly 0.  Returns 0 if some visible logit is not finite or memory runs
 * out (those columns get the trivial [0, 1] on their visible rows). */
int ac_head_softmax_enclose_masked(double *plo, double *phi, const double *llo,
                                   const double *lhi, size_t n, size_t w,
                                   const unsigned char *mask, size_t ncols, size_t j0)
{
    double *buf = malloc((n ? 4 * n : 1) * sizeof(double));
    int ok = buf != NULL;
    for (size_t j = 0; j < w; j++) {
        size_t m = 0;
        for (size_t i = 0; i < n && buf; i++)
            if (mask[i * ncols + j0 + j]) {
                buf[m] = llo[i * w + j];
                buf[n + m] = lhi[i * w + j];
                m++;
            }
        int cok = buf && m > 0 &&
                  ac_softmax_col_enclose(buf, buf + n, m, 1, buf + 2 * n, buf + 3 * n);
        ok &= cok;
        for (size_t i = 0, t = 0; i < n; i++) {
            if (!mask[i * ncols + j0 + j]) { /* exactly 0 off the mask */
                plo[i * w + j] = phi[i * w + j] = 0.0;
                continue;
            }
            plo[i * w + j] = cok ? buf[2 * n + t] : 0.0;
            phi[i * w + j] = cok ? buf[3 * n + t] : 1.0;
            t++;
        }
    }
    free(buf);
    return ok;
}

/* Stage 0 of max|Softmax - P|: logits, softmax enclosure, deviation; the
 * softmax over the visible keys of each column when mask is not NULL. */
static int maxdev_stage0(double *lo, double *hi, const ac_mat *X, const ac_mat *Wk,
                         const ac_mat *Wq, const ac_mat *P, const unsigned char *mask,
                         ac_err *err)
{
    size_t n = X->cols, N = n * n;
    if (ac_head_live_rows(Wk, Wq) == 0) {
        if (mask)
            maxdev_uniform_masked(lo, hi, P, mask);
        else
            maxdev_uniform(lo, hi, P);
        return AC_OK;
    }
    double *llo = malloc(N * sizeof(double)), *lhi = malloc(N * sizeof(double));
    double *plo = NULL, *phi = NULL;
    int st = AC_OK;
    if (!llo || !lhi) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    if ((st = ac_head_logits_stage0(llo, lhi, NULL, X, Wk, Wq, NULL, err)))
        goto out;
    plo = malloc(N * sizeof(double));
    phi = malloc(N * sizeof(double));
    if (!plo || !phi) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    if (!(mask ? ac_head_softmax_enclose_masked(plo, phi, llo, lhi, n, n, mask, n, 0)
               : ac_head_softmax_enclose(plo, phi, llo, lhi, n))) {
        *lo = 0;
        *hi = INFINITY;
    } else {
        ac_head_maxdev_from_bounds(plo, phi, P->data, N, lo, hi);
    }
out:
    free(plo);
    free(phi);
    free(llo);
    free(lhi);
    return st;
}


/* ---- split stage (doc/mathematics.md §2.3, split products) ----------------- */

#define COLPANEL 256 /* columns of the logits certified at a time */

/* cdev_j >= max_i |p_ij - P_ij| over plo <= p <= phi for the w columns of a
 * panel starting at column j0 (ac_head_maxdev_from_bounds, per column). */
static void panel_dev(double *clo, double *chi, const double *plo, const double *phi,
                      const double *P, size_t n, size_t j0, size_t w)
{
    for (size_t j = 0; j < w; j++) {
        double l = 0, h = 0;
        for (size_t i = 0; i < n; i++)
            dev_update(&l, &h, plo[i * w + j], phi[i * w + j], P[i * n + j0 + j]);
        clo[j0 + j] = l;
        chi[j0 + j] = h;
    }
}

/* Per-column enclosures [clo_j, chi_j] of max_i |Softmax - P|_ij: K = Wk X
 * and Q = Wq X by split products (their radius no longer grows with the size
 * of the weights), S = K^T Q by the interval product (K is close to the
 * identity, so its a-priori term is small), all in panels of COLPANEL
 * columns: besides the inputs, K (2 dk n doubles) and panels of O(n) columns. */
static int maxdev_split_cols(double *clo, double *chi, const ac_mat *X, const ac_mat *Wk,
                             const ac_mat *Wq, const ac_mat *P, const unsigned char *mask,
                             ac_err *err)
{
    size_t d = X->rows, n = X->cols, dk = Wk->rows, nb = n < COLPANEL ? n : COLPANEL;
    size_t r = ac_head_live_rows(Wk, Wq); /* K, Q: r x n */
    ac_imat K = {0}, Qp = {0}, Sp = {0};
    ac_split s = {0};
    size_t pn = (n * nb > 0) ? n * nb : 1;
    double *llo = malloc(4 * pn * sizeof(double));
    int st;
    if (!llo)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    double *lhi = llo + n * nb, *plo = lhi + n * nb, *phi = plo + n * nb;
    if ((st = ac_imat_init(&K, r, n, 1, err)) || (st = ac_imat_init(&Qp, r, nb, 1, err)) ||
        (st = ac_imat_init(&Sp, n, nb, 1, err)))
        goto out;
    for (size_t j0 = 0; j0 < n; j0 += nb) {
        size_t w = n - j0 < nb ? n - j0 : nb;
        if ((st = ac_split_cols(&s, X->data + j0, d, w, n, err)) ||
            (st = ac_mul_split(K.mid + j0, K.rad + j0, n, Wk->data, r, d, &s, err)))
            goto out;
        ac_split_free(&s);
    }
    double s_lo = ac_div_dn(1.0, ac_sqrt_up((double)dk));
    double s_hi = ac_div_up(1.0, ac_sqrt_dn((double)dk));
    for (size_t j0 = 0; j0 < n; j0 += nb) {
        size_t w = n - j0 < nb ? n - j0 : nb;
        Qp.cols = Sp.cols = w;
        if ((st = ac_split_cols(&s, X->data + j0, d, w, n, err)) ||
            (st = ac_mul_split(Qp.mid, Qp.rad, w, Wq->data, r, d, &s, err)) ||
            (st = ac_imat_mul(&Sp, AC_TRANS, &K, AC_NOTRANS, &Qp, err)))
            goto out;
        ac_split_free(&s);
        for (size_t i = 0; i < n * w; i++) {
            double a = ac_imat_lo(&Sp, i), b = ac_imat_hi(&Sp, i);
            llo[i] = a >= 0 ? ac_mul_dn(a, s_lo) : ac_mul_dn(a, s_hi);
            lhi[i] = b >= 0 ? ac_mul_up(b, s_hi) : ac_mul_up(b, s_lo);
        }
        if (mask) /* bad columns: [0, 1] on their visible rows */
            ac_head_softmax_enclose_masked(plo, phi, llo, lhi, n, w, mask, n, j0);
        else
            ac_softmax_col_enclose(llo, lhi, n, w, plo, phi); /* bad columns: [0, 1] */
        panel_dev(clo, chi, plo, phi, P->data, n, j0, w);
    }
out:
    ac_split_free(&s);
    ac_imat_free(&K);
    ac_imat_free(&Qp);
    ac_imat_free(&Sp);
    free(llo);
    return st;
}

static void max_of_cols(const double *clo, const double *chi, size_t n, double *lo, double *hi)
{
    double l = 0, h = 0;
    for (size_t j = 0; j < n; j++) {
        if (clo[j] > l)
            l = clo[j];
        if (!(chi[j] <= h))
            h = chi[j] == chi[j] ? chi[j] : INFINITY;
    }
    *lo = l;
    *hi = h;
}

static int maxdev_split(double *lo, double *hi, const ac_mat *X, const ac_mat *Wk,
                        const ac_mat *Wq, const ac_mat *P, const unsigned char *mask,
                        ac_err *err)
{
    size_t n = X->cols;
    double *c = malloc((n ? 2 * n : 1) * sizeof(double));
    if (!c)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    int st = maxdev_split_cols(c, c + n, X, Wk, Wq, P, mask, err);
    if (!st)
        max_of_cols(c, c + n, n, lo, hi);
    free(c);
    return st;
}

/* ---- Arb balls ------------------------------------------------------------ */

void ac_head_project_arb(arb_mat_t Y, const double *W, size_t rows, size_t d, const arb_mat_t X,
                         slong prec)
{
    arb_mat_t A;
    arb_mat_init(A, (slong)rows, (slong)d);
    ac_arb_mat_set_d(A, W, rows, d);
    arb_mat_mul(Y, A, X, prec);
    arb_mat_clear(A);
}

void ac_head_logits_arb(arb_mat_t Z, const arb_mat_t K, const arb_mat_t Q, size_t dk, slong prec)
{
    slong n = arb_mat_ncols(Q);
    arb_mat_t KT;
    arb_t rs;
    arb_mat_init(KT, n, (slong)dk);
    arb_init(rs);
    arb_mat_transpose(KT, K);
    arb_mat_mul(Z, KT, Q, prec);
    arb_rsqrt_ui(rs, (ulong)dk, prec);
    arb_mat_scalar_mul_arb(Z, Z, rs, prec);
    arb_mat_clear(KT);
    arb_clear(rs);
}

void ac_head_softmax_arb(arb_mat_t P, const arb_mat_t K, const arb_mat_t Q, size_t dk,
                         slong prec)
{
    slong n = arb_mat_ncols(Q);
    arb_mat_t Z;
    arb_mat_init(Z, n, n);
    ac_head_logits_arb(Z, K, Q, dk, prec);
    ac_arb_softmax_cols(P, Z, prec);
    arb_mat_clear(Z);
}

/* max_i |Softmax - P|_ij of the column j alone in balls: the logits column
 * (Wk X)^T (Wq x_j) / sqrt(dk) = X^T (Wk^T (Wq x_j)) / sqrt(dk) by three
 * matrix-vector products (2 dk d + d n ball multiply-adds), its softmax and
 * the deviation.  With a mask (n x n, row = key) the softmax runs over the
 * visible keys of column j only, and a masked entry deviates by |P_ij|. */
static void maxdev_ball_col(arb_t res, size_t j, const ac_mat *X, const ac_mat *Wk,
                            const ac_mat *Wq, const ac_mat *P, const unsigned char *mask,
                            slong prec)
{
    size_t d = X->rows, n = X->cols, dk = Wk->rows, m = d > n ? d : n;
    m = m > dk ? m : dk;
    size_t r = ac_head_live_rows(Wk, Wq); /* rows of q that can contribute */
    size_t nv = n;
    if (mask) {
        nv = 0;
        for (size_t i = 0; i < n; i++)
            nv += mask[i * n + j] != 0;
    }
    arb_ptr x = _arb_vec_init((slong)d), q = _arb_vec_init((slong)dk), z = _arb_vec_init((slong)d);
    arb_ptr row = _arb_vec_init((slong)m);
    arb_mat_t L, S;
    arb_t rs;
    arb_mat_init(L, (slong)nv, 1);
    arb_mat_init(S, (slong)nv, 1);
    arb_init(rs);
    double *pc = malloc((n ? n : 1) * sizeof(double)), off = 0;
    for (size_t l = 0; l < d; l++)
        arb_set_d(x + l, X->data[l * n + j]);
    for (size_t i = 0; i < r; i++) { /* q = Wq x_j */
        for (size_t l = 0; l < d; l++)
            arb_set_d(row + l, Wq->data[i * d + l]);
        arb_dot(q + i, NULL, 0, row, 1, x, 1, (slong)d, prec);
    }
    for (size_t l = 0; l < d; l++) { /* z = Wk^T q */
        for (size_t i = 0; i < r; i++)
            arb_set_d(row + i, Wk->data[i * d + l]);
        arb_dot(z + l, NULL, 0, row, 1, q, 1, (slong)r, prec);
    }
    arb_rsqrt_ui(rs, (ulong)dk, prec);
    for (size_t i = 0, t = 0; i < n; i++) { /* L = X^T z / sqrt(dk), visible rows */
        if (mask && !mask[i * n + j]) {
            off = fmax(off, fabs(P->data[i * n + j])); /* exact */
            continue;
        }
        for (size_t l = 0; l < d; l++)
            arb_set_d(row + l, X->data[l * n + i]);
        arb_ptr e = arb_mat_entry(L, (slong)t, 0);
        arb_dot(e, NULL, 0, row, 1, z, 1, (slong)d, prec);
        arb_mul(e, e, rs, prec);
        if (pc)
            pc[t] = P->data[i * n + j];
        t++;
    }
    if (nv > 0)
        ac_arb_softmax_cols(S, L, prec);
    if (pc && nv > 0) {
        ac_arb_max_abs_dev(res, S, pc, prec);
        if (off > 0) { /* max(res, off): off is exact */
            arb_t o;
            arb_init(o);
            arb_set_d(o, off);
            arb_max(res, res, o, prec);
            arb_clear(o);
        }
    } else
        arb_indeterminate(res);
    free(pc);
    arb_clear(rs);
    arb_mat_clear(L);
    arb_mat_clear(S);
    _arb_vec_clear(x, (slong)d);
    _arb_vec_clear(q, (slong)dk);
    _arb_vec_clear(z, (slong)d);
    _arb_vec_clear(row, (slong)m);
}

/* max|Softmax - P| in balls at prec bits: as doubles (lo, hi) and/or as an
 * MPFR interval (mlo, mhi).  Masked: column by column (maxdev_ball_col). */
static int maxdev_ball(double *lo, double *hi, mpfr_t mlo, mpfr_t mhi, const ac_mat *X,
                       const ac_mat *Wk, const ac_mat *Wq, const ac_mat *P,
                       const unsigned char *mask, long prec)
{
    size_t d = X->rows, n = X->cols, dk = Wk->rows;
    arb_mat_t x, k, q, p;
    arb_t t;
    arb_init(t);
    if (mask) {
        arb_t c;
        arb_init(c);
        arb_zero(t);
        for (size_t j = 0; j < n; j++) {
            maxdev_ball_col(c, j, X, Wk, Wq, P, mask, prec);
            arb_max(t, t, c, prec);
        }
        arb_clear(c);
        goto done;
    }
    arb_mat_init(x, (slong)d, (slong)n);
    arb_mat_init(k, (slong)dk, (slong)n);
    arb_mat_init(q, (slong)dk, (slong)n);
    arb_mat_init(p, (slong)n, (slong)n);
    ac_arb_mat_set_d(x, X->data, d, n);
    ac_head_project_arb(k, Wk->data, dk, d, x, prec);
    ac_head_project_arb(q, Wq->data, dk, d, x, prec);
    ac_head_softmax_arb(p, k, q, dk, prec);
    ac_arb_max_abs_dev(t, p, P->data, prec);
    arb_mat_clear(x);
    arb_mat_clear(k);
    arb_mat_clear(q);
    arb_mat_clear(p);
done:
    if (lo)
        *lo = ac_arb_lo(t);
    if (hi)
        *hi = ac_arb_hi(t);
    if (mlo)
        ac_arb_get_interval_mpfr(mlo, mhi, t);
    arb_clear(t);
    return AC_OK;
}

/* ---- max|Softmax - P| for given weights ----------------------------------- */

/* The shapes of a head check: Wk, Wq dk x d, P n x n for X d x n. */
static int check_shapes(const ac_mat *X, const ac_mat *Wk, const ac_mat *Wq, const ac_mat *P,
                        ac_err *err)
{
    if (Wk->cols != X->rows || Wq->cols != X->rows || Wq->rows != Wk->rows || P->rows != X->cols ||
        P->cols != X->cols)
        return ac_err_set(err, AC_EUSAGE, "head check: shapes do not match");
    return AC_OK;
}

/* Every query (column) of the mask sees a key: else its masked softmax is
 * undefined. */
static int check_mask(const unsigned char *mask, size_t n, ac_err *err)
{
    for (size_t j = 0; j < n; j++) {
        size_t m = 0;
        for (size_t i = 0; i < n && !m; i++)
            m = mask[i * n + j] != 0;
        if (!m)
            return ac_err_set(err, AC_EUSAGE,
                              "masked head: query %zu sees no key (its softmax is undefined)", j);
    }
    return AC_OK;
}

static int maxdev_enclose(double *lo, double *hi, const ac_mat *X, const ac_mat *Wk,
                          const ac_mat *Wq, const ac_mat *P, const unsigned char *mask, long prec,
                          ac_err *err)
{
    if (prec == 0)
        return maxdev_stage0(lo, hi, X, Wk, Wq, P, mask, err);
    if (prec < 0)
        return maxdev_split(lo, hi, X, Wk, Wq, P, mask, err);
    return maxdev_ball(lo, hi, NULL, NULL, X, Wk, Wq, P, mask, prec);
}

int ac_head_maxdev_enclose(double *lo, double *hi, const ac_mat *X, const ac_mat *Wk,
                           const ac_mat *Wq, const ac_mat *P, long prec, ac_err *err)
{
    int st = check_shapes(X, Wk, Wq, P, err);
    return st ? st : maxdev_enclose(lo, hi, X, Wk, Wq, P, NULL, prec, err);
}

int ac_head_maxdev_enclose_masked(double *lo, double *hi, const ac_mat *X, const ac_mat *Wk,
                                  const ac_mat *Wq, const ac_mat *P, const unsigned char *mask,
                                  long prec, ac_err *err)
{
    int st;
    if ((st = check_shapes(X, Wk, Wq, P, err)) || (st = check_mask(mask, X->cols, err)))
        return st;
    return maxdev_enclose(lo, hi, X, Wk, Wq, P, mask, prec, err);
}

/* The quantity "max|Softmax - P| of the given weights" for the engine.
 * pre != NULL: stage 0 was already computed (Theorem 1's construction route
 * shares the interval products with its trace of paper 1, eq. (4)).
 * Stage 0 is the gamma_k stage; when it cannot decide "<= tol", the split
 * stage runs and keeps per-column enclosures (clo, chi); the ball stages
 * then recompute only the columns whose chi exceeds tol.  mask (or NULL):
 * the masked head, softmax over the visible keys of each column. */
typedef struct {
    const ac_mat *X, *Wk, *Wq, *P;
    const double *pre; /* {lo, hi} or NULL */
    double tol;
    double *clo, *chi; /* per-column enclosures of the split stage, or NULL */
    char method0[200], method_ball[200];
    const unsigned char *mask;
} weights_ctx;

static int weights_stage0(void *v, double *lo, double *hi, ac_err *err)
{
    weights_ctx *c = v;
    int st;
    if (c->pre) {
        *lo = c->pre[0];
        *hi = c->pre[1];
    } else if ((st = maxdev_stage0(lo, hi, c->X, c->Wk, c->Wq, c->P, c->mask, err)))
        return st;
    if (ac_judge(*lo, *hi, AC_LE, c->tol) != AC_UNDECIDED)
        return AC_OK;
    size_t n = c->X->cols;
    c->clo = malloc((n ? 2 * n : 1) * sizeof(double));
    if (!c->clo)
        return AC_OK; /* keep the gamma_k enclosure */
    c->chi = c->clo + n;
    if (maxdev_split_cols(c->clo, c->chi, c->X, c->Wk, c->Wq, c->P, c->mask, NULL)) {
        /* out of memory or a non-finite weight: keep the gamma_k enclosure,
         * the ball stages take the whole product */
        free(c->clo);
        c->clo = c->chi = NULL;
        return AC_OK;
    }
    double l, h;
    max_of_cols(c->clo, c->chi, n, &l, &h);
    char fb[AC_FMT_BOUND_BUFSIZE];
    snprintf(c->method0, sizeof c->method0,
             "split products in double (A1 B1 error-free, rest gamma_k) + rigorous exp; "
             "the gamma_k bound alone gave %s", ac_str_hi(fb, ".3g", *hi));
    *lo = fmax(*lo, l); /* both enclose the same number */
    *hi = fmin(*hi, h);
    return AC_OK;
}

static int weights_ball(void *v, long prec, mpfr_t lo, mpfr_t hi, ac_err *err)
{
    weights_ctx *c = v;
    (void)err;
    if (!c->clo)
        return maxdev_ball(NULL, NULL, lo, hi, c->X, c->Wk, c->Wq, c->P, c->mask, prec);
    size_t n = c->X->cols, redo = 0, d = c->X->rows, dk = c->Wk->rows;
    arb_t t, m;
    arb_init(t);
    arb_init(m);
    double l = 0, h = 0;
    for (size_t j = 0; j < n; j++) {
        if (c->chi[j] <= c->tol) { /* the split stage already shows this column */
            l = fmax(l, c->clo[j]);
            h = fmax(h, c->chi[j]);
            continue;
        }
        redo++;
        maxdev_ball_col(t, j, c->X, c->Wk, c->Wq, c->P, c->mask, prec);
        c->clo[j] = fmax(c->clo[j], ac_arb_lo(t)); /* the tighter of both */
        c->chi[j] = fmin(c->chi[j], ac_arb_hi(t));
        l = fmax(l, c->clo[j]);
        h = fmax(h, c->chi[j]);
    }
    snprintf(c->method_ball, sizeof c->method_ball,
             "Arb ball arithmetic on %zu of %zu columns (%.3g ball multiply-adds), "
             "the others from the split stage",
             redo, n, (double)redo * (double)(2 * dk * d + d * n));
    mpfr_set_d(lo, l, MPFR_RNDD);
    mpfr_set_d(hi, h == h ? h : INFINITY, MPFR_RNDU);
    arb_clear(t);
    arb_clear(m);
    return AC_OK;
}

static int certify(ac_cert *cert, const ac_mat *X, const ac_mat *Wk, const ac_mat *Wq,
                   const ac_mat *P, const double *pre, const unsigned char *mask, double tol,
                   const ac_schedule *sched, ac_err *err)
{
    weights_ctx c = {X, Wk, Wq, P, pre, tol, NULL, NULL,
                     "interval products in double (gamma_k bound) + rigorous exp",
                     "Arb ball arithmetic", mask};
    if (pre)
        snprintf(c.method0, sizeof c.method0, "%s",
                 "norm-bounded interval products in double (X^+X split if needed, "
                 "doc/mathematics.md §2.3) + rigorous exp");
    if (mask)
        snprintf(c.method0, sizeof c.method0, "%s",
                 "interval products in double (gamma_k bound) + rigorous exp, softmax over the "
                 "visible keys (doc/mathematics.md §3.8)");
    ac_quantity q = {mask ? "max|Softmax_Omega((Wk X)'(Wq X)/sqrt(dk)) - P|"
                          : "max|Softmax((Wk X)'(Wq X)/sqrt(dk)) - P|",
                     weights_stage0,
                     weights_ball,
                     NULL,
                     &c,
                     c.method0,
                     c.method_ball,
                     NULL};
    int st = ac_decide(cert, &q, AC_LE, tol, sched, err);
    free(c.clo);
    return st;
}

int ac_head_certify_pre(ac_cert *cert, const ac_mat *X, const ac_mat *Wk, const ac_mat *Wq,
                        const ac_mat *P, const double *pre, double tol, const ac_schedule *sched,
                        ac_err *err)
{
    return certify(cert, X, Wk, Wq, P, pre, NULL, tol, sched, err);
}

int ac_head_certify(ac_cert *cert, const ac_mat *X, const ac_mat *Wk, const ac_mat *Wq,
                    const ac_mat *P, double tol, const ac_schedule *sched, ac_err *err)
{
    ac_schedule none = {0};
    return ac_head_certify_pre(cert, X, Wk, Wq, P, NULL, tol, sched ? sched : &none, err);
}

int ac_head_certify_masked(ac_cert *cert, const ac_mat *X, const ac_mat *Wk, const ac_mat *Wq,
                           const ac_mat *P, const unsigned char *mask, double tol,
                           const ac_schedule *sched, ac_err *err)
{
    ac_schedule none = {0};
    int st;
    if ((st = check_shapes(X, Wk, Wq, P, err)) || (st = check_mask(mask, X->cols, err))) {
        ac_cert_set(cert, "max|Softmax_Omega((Wk X)'(Wq X)/sqrt(dk)) - P|", AC_LE, tol,
                    AC_STAGE_NONE, 0, 0, INFINITY, "not computed (bad input)");
        cert->verdict = AC_UNDECIDED;
        return st;
    }
    return certify(cert, X, Wk, Wq, P, NULL, mask, tol, sched ? sched : &none, err);
}

int ac_head_softmax_masked(ac_mat *S, const ac_mat *X, const ac_mat *Wk, const ac_mat *Wq,
                           const unsigned char *mask, ac_err *err)
{
    size_t n = X->cols;
    int st;
    if ((st = check_mask(mask, n, err)) || (st = head_double(S, X, Wk, Wq, 1, err)))
        return st;
    ac_head_softmax_cols_masked(S->data, n, mask);
    return AC_OK;
}

void ac_head_softmax_cols_masked(double *Z, size_t n, const unsigned char *mask)
{
    for (size_t j = 0; j < n; j++) {
        double m = -INFINITY, sum = 0;
        for (size_t i = 0; i < n; i++)
            if (mask[i * n + j] && Z[i * n + j] > m)
                m = Z[i * n + j];
        for (size_t i = 0; i < n; i++) {
            double *e = Z + i * n + j;
            *e = mask[i * n + j] ? exp(*e - m) : 0.0;
            sum += *e;
        }
        for (size_t i = 0; i < n; i++)
            Z[i * n + j] /= sum;
    }
}
