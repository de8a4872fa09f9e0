/* inspect.c — every check on one layer of a pretrained model, head by head
 * (attncheck/inspect.h, doc/mathematics.md §6.9): the patterns, Theorem 1's
 * threshold at tol and the compression distances, the self-check of the
 * head's own weights, the certified circuits, kappa of the layer's block
 * (Theorem 3.2) and Theorem 2's hypotheses on the input.
 *
 * Dimension letters as in models.h: n tokens, d width, h heads, dk head
 * size; d' = d + 1 for heads with biases. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "attncheck/blas.h"
#include "attncheck/head.h"
#include "attncheck/inspect.h"
#include "attncheck/interval.h"
#include "attncheck/learned.h"
#include "attncheck/linalg.h"
#include "models/models_impl.h"

void ac_inspect_opts_default(ac_inspect_opts *o)
{
    memset(o, 0, sizeof *o);
    o->tol = 0x1p-26;
    o->sched = ac_schedule_upto(512);
    o->rtol = AC_COND_RTOL_DEFAULT;
    o->max_prec = 1024;
    o->optimize = 0;
}

void ac_inspect_layer_free(ac_inspect_layer *res)
{
    if (!res)
        return;
    for (size_t i = 0; i < res->nheads && res->heads; i++) {
        ac_inspect_head *hd = &res->heads[i];
        for (size_t j = 0; j < hd->ndist; j++) {
            ac_mat_free(&hd->dist[j].Wq);
            ac_mat_free(&hd->dist[j].Wk);
        }
        md_circuit_free(&hd->qk);
        md_circuit_free(&hd->ov);
    }
    free(res->heads);
    ac_array_free(&res->patterns);
    memset(res, 0, sizeof *res);
}

ac_verdict ac_inspect_verdict(const ac_inspect_layer *ly, size_t nlayers)
{
    int undecided = 0;
    for (size_t l = 0; l < nlayers; l++)
        for (size_t i = 0; i < ly[l].nheads; i++) {
            if (ly[l].heads[i].self.verdict == AC_REFUTED)
                return AC_REFUTED;
            if (ly[l].heads[i].self.verdict != AC_PROVED)
                undecided = 1;
        }
    return undecided || nlayers == 0 ? AC_UNDECIDED : AC_PROVED;
}

/* ---- circuits ------------------------------------------------------------------ */

/* The QK and OV circuits of head i (md_circuit, doc §6.9). */
static int head_circuits(ac_inspect_head *hd, const ac_attn_layer *L, ac_err *err)
{
    size_t d = L->d, dk = L->dk, i = hd->head, g = hd->kv_head;
    ac_mat WqT = {0}, Wk = {0}, Wo = {0}, Wv = {0};
    int st;
    if ((st = ac_mat_init(&WqT, d, dk, err)) || (st = ac_mat_init(&Wk, dk, d, err)) ||
        (st = ac_mat_init(&Wo, d, dk, err)) || (st = ac_mat_init(&Wv, dk, d, err)))
        goto out;
    for (size_t r = 0; r < dk; r++)
        for (size_t c = 0; c < d; c++) {
            AC_MAT(&WqT, c, r) = L->wq[(i * dk + r) * d + c];
            AC_MAT(&Wk, r, c) = L->wk[(g * dk + r) * d + c];
            AC_MAT(&Wv, r, c) = L->wv[(g * dk + r) * d + c];
            AC_MAT(&Wo, c, r) = L->wo[c * (L->h * dk) + i * dk + r];
        }
    if ((st = md_circuit(&hd->qk, &WqT, &Wk, err)) || (st = md_circuit(&hd->ov, &Wo, &Wv, err)))
        goto out;
out:
    ac_mat_free(&WqT);
    ac_mat_free(&Wk);
    ac_mat_free(&Wo);
    ac_mat_free(&Wv);
    return st;
}

/* ---- Theorem 1 per head ---------------------------------------------------------- */

/* dist(dk) is non-increasing in dk: any size evaluated for the threshold
 * bounds it from the side it can. */
static void closure(ac_inspect_dist *ds, const ac_t1_tol_threshold *t)
{
    for (size_t q = 0; q < t->nevals; q++) {
        if (t->eval[q].dk >= (long)ds->dk && t->eval[q].lo > ds->lo)
            ds->lo = t->eval[q].lo;
        if (t->eval[q].dk <= (long)ds->dk && t->eval[q].hi < ds->hi)
            ds->hi = t->eval[q].hi;
    }
}

/* A candidate head of size r for the distance's upper bound: the best
 * rank-r approximation of the head's own bilinear form, factor Wk' Wq /
 * sqrt(dk), by three small SVDs (Wk = Uk Sk Vk', Wq = Uq Sq Vq', the core
 * M = Sk Uk' Uq Sq = U S V'): Wk2 = S_r^(1/2) U_r' Vk', Wq2 = c S_r^(1/2)
 * V_r' Vq' with c = factor sqrt(r / dk), so that Wk2' Wq2 / sqrt(r) =
 * factor (Wk' Wq)_r / sqrt(dk).  Approximate: it is only certified (as
 * ac_t1_opts.user_wk, user_wq), never trusted. */
static int truncated_head(ac_mat *Wq2, ac_mat *Wk2, const ac_mat *Wq, const ac_mat *Wk, size_t r,
                          double factor, ac_err *err)
{
    ac_mat Uk = {0}, Vkt = {0}, Uq = {0}, Vqt = {0}, M = {0}, U = {0}, Vt = {0};
    size_t dk = Wq->rows, dd = Wq->cols, p = dk < dd ? dk : dd;
    double *sk = malloc(p * sizeof *sk), *sq = malloc(p * sizeof *sq), *sv = malloc(p * sizeof *sv);
    int st;
    if (!sk || !sq || !sv) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory (a head of size %zu)", dk);
        goto out;
    }
    if (r > p)
        r = p;
    if ((st = ac_approx_svd(Wk, &Uk, sk, &Vkt, err)) || (st = ac_approx_svd(Wq, &Uq, sq, &Vqt, err)) ||
        (st = ac_mat_init(&M, p, p, err)))
        goto out;
    ac_dgemm(AC_TRANS, AC_NOTRANS, p, p, dk, 1.0, Uk.data, p, Uq.data, p, 0.0, M.data, p);
    for (size_t i = 0; i < p; i++)
        for (size_t j = 0; j < p; j++)
            AC_MAT(&M, i, j) *= sk[i] * sq[j];
    if ((st = ac_approx_svd(&M, &U, sv, &Vt, err)) || (st = ac_mat_init(Wk2, r, dd, err)) ||
        (st = ac_mat_init(Wq2, r, dd, err)))
        goto out;
    double c = factor * sqrt((double)r / (double)dk);
    for (size_t i = 0; i < r; i++) {
        double a = sqrt(sv[i]);
        for (size_t j = 0; j < p; j++) {
            double wk = a * AC_MAT(&U, j, i), wq = c * a * AC_MAT(&Vt, i, j);
            for (size_t t = 0; t < dd; t++) {
                AC_MAT(Wk2, i, t) += wk * AC_MAT(&Vkt, j, t);
                AC_MAT(Wq2, i, t) += wq * AC_MAT(&Vqt, j, t);
            }
        }
    }
out:
    free(sk);
    free(sq);
    free(sv);
    ac_mat_free(&Uk);
    ac_mat_free(&Vkt);
    ac_mat_free(&Uq);
    ac_mat_free(&Vqt);
    ac_mat_free(&M);
    ac_mat_free(&U);
    ac_mat_free(&Vt);
    if (st) {
        ac_mat_free(Wq2);
        ac_mat_free(Wk2);
    }
    return st;
}

static int head_t1(ac_inspect_head *hd, const ac_attn_layer *L, const ac_mat *X,
                   const ac_array *P, const ac_inspect_opts *o, ac_err *err)
{
    size_t n = X->rows, d = L->d, i = hd->head;
    ac_mat Xt = {0}, Wq = {0}, Wk = {0}, Pt = {0}, Xd = {0};
    unsigned char *omega = NULL;
    ac_t1_instance *inst = NULL; /* (X, P) once for the threshold and every dk' */
    ac_t1_result r;
    int st;
    memset(&r, 0, sizeof r);
    if ((st = ac_attn_head_t1(&Xt, &Wq, &Wk, &hd->factor, L, i, X, err)))
        goto out;
    if ((st = ac_mat_init(&Pt, n, n, err)))
        goto out;
    const double *Pi = P->data + i * n * n;
    for (size_t q = 0; q < n; q++)
        for (size_t k = 0; k < n; k++)
            AC_MAT(&Pt, k, q) = Pi[q * n + k]; /* column-stochastic: (key, query) */
    /* X' without the row of ones: the class is chosen by opts.bias */
    if ((st = ac_mat_init(&Xd, d, n, err)))
        goto out;
    memcpy(Xd.data, Xt.data, d * n * sizeof(double));
    ac_t1_mask mask = {.causal = L->mask == AC_MASK_CAUSAL, .window = L->window,
                       .valid = o->keep, .nvalid = o->keep ? n : 0,
                       .name = o->keep ? "the layer's mask and the attention mask"
                                       : "the layer's mask"};
    ac_t1_opts to;
    ac_t1_opts_default(&to);
    to.tol = o->tol;
    to.sched = o->sched;
    to.bias = hd->bias;
    to.mask = hd->masked ? &mask : NULL;
    to.xname = "X";
    to.pname = "the head's pattern";
    to.optimize = 0;
    double t0 = ac_seconds();
    if ((st = ac_t1_instance_init(&inst, &Xd, &Pt, &to, err)) ||
        (st = ac_t1_instance_threshold(&hd->thr, inst, 0, err)))
        goto out;
    if (hd->thr.hi > 0 && (long)hd->dk >= hd->thr.hi)
        hd->own = AC_PROVED;
    else if ((long)hd->dk < hd->thr.lo)
        hd->own = AC_REFUTED;
    else
        hd->own = AC_UNDECIDED;
    double t1 = ac_seconds();
    for (size_t j = 0; j < hd->ndist; j++) {
        ac_inspect_dist *ds = &hd->dist[j];
        to.dk = ds->dk;
        to.want_weights = 1; /* the candidates give the upper bound */
        to.optimize = o->optimize; /* BFGS from them (scaled to a work budget; doc §3.6) */
        memset(&r, 0, sizeof r);
        ac_mat cq = {0}, ck = {0};
        if ((st = truncated_head(&cq, &ck, &Wq, &Wk, ds->dk, hd->factor, err)))
            goto out;
        to.user_wq = &cq;
        to.user_wk = &ck;
        to.wqname = "the truncated head";
        to.wkname = "the truncated head";
        st = ac_t1_instance_check(&r, inst, &to, err);
        ac_mat_free(&cq);
        ac_mat_free(&ck);
        to.user_wq = to.user_wk = NULL;
        if (st)
            goto out;
        ds->lo = r.dist_lo;
        ds->hi = r.dist_hi;
        closure(ds, &hd->thr);
        ds->verdict = ac_judge(ds->lo, ds->hi, AC_LE, o->tol);
        ds->decades = ds->lo > 0 ? log10(ds->hi / ds->lo) : INFINITY;
        if (o->weights && r.Wq.data && !r.weights_unusable) {
            ds->Wq = r.Wq;
            ds->Wk = r.Wk;
            r.Wq = r.Wk = (ac_mat){0};
        }
        ac_t1_result_free(&r);
    }
    double t2 = ac_seconds();
    /* the self-check: the head's own weights, the factor folded into Wq (a
     * rounding unless it is 1 or a power of two: then the certified head is
     * fl(factor Wq), which the note says) */
    int exact_factor = 0;
    if (hd->factor != 1.0) {
        int e;
        exact_factor = frexp(hd->factor, &e) == 0.5;
        for (size_t k = 0; k < Wq.rows * Wq.cols; k++)
            Wq.data[k] *= hd->factor;
    }
    snprintf(hd->self_note, sizeof hd->self_note, "%s%s",
             hd->bias ? "[Wq_i bq_i], [Wk_g bk_g] on [X'; 1']" : "Wq_i, Wk_g on X'",
             hd->factor == 1.0 ? ", scale exactly 1/sqrt(dk)"
             : exact_factor ? ", Wq times the model's scale sqrt(dk) (a power of two, exact)"
                            : ", Wq rounded to fl(scale sqrt(dk) Wq) (the model's scale)");
    if (hd->masked) {
        omega = malloc(n * n);
        if (!omega) {
            st = ac_err_set(err, AC_EINTERNAL, "out of memory (mask of %zu tokens)", n);
            goto out;
        }
        if ((st = ac_t1_mask_support(omega, n, &mask, err)) ||
            (st = ac_head_certify_masked(&hd->self, &Xt, &Wk, &Wq, &Pt, omega, o->tol, &o->sched,
                                         err)))
            goto out;
    } else if ((st = ac_head_certify(&hd->self, &Xt, &Wk, &Wq, &Pt, o->tol, &o->sched, err))) {
        goto out;
    }
    (void)t0;
    hd->t_dist = t2 - t1;
out:
    ac_t1_instance_free(inst);
    ac_t1_result_free(&r);
    ac_mat_free(&Xt);
    ac_mat_free(&Wq);
    ac_mat_free(&Wk);
    ac_mat_free(&Pt);
    ac_mat_free(&Xd);
    free(omega);
    return st;
}

/* ---- one head -------------------------------------------------------------------- */

size_t ac_inspect_padded(const unsigned char *keep, size_t n)
{
    size_t c = 0;
    for (size_t k = 0; keep && k < n; k++)
        c += !keep[k];
    return c;
}

int ac_inspect_masked(const ac_attn_layer *L, const unsigned char *keep, size_t n)
{
    return L->mask != AC_MASK_NONE || ac_inspect_padded(keep, n) > 0;
}

static void head_class(ac_inspect_head *hd, const ac_attn_layer *L, size_t padded, size_t n)
{
    if (L->rope) {
        snprintf(hd->klass, sizeof hd->klass, "rotary (RoPE): logits depend on the positions; "
                 "not a Theorem 1 head (not decided)");
        return;
    }
    char m[112], w[32] = "", p[64] = "";
    if (L->mask == AC_MASK_CAUSAL && L->window)
        snprintf(w, sizeof w, ", window %zu", L->window);
    if (padded)
        snprintf(p, sizeof p, "%spadding %zu of %zu keys", L->mask == AC_MASK_CAUSAL ? ", " : "",
                 padded, n);
    if (L->mask == AC_MASK_CAUSAL || padded)
        snprintf(m, sizeof m, "masked (%s%s%s)", L->mask == AC_MASK_CAUSAL ? "causal" : "", w, p);
    else
        snprintf(m, sizeof m, "unmasked");
    snprintf(hd->klass, sizeof hd->klass, "%s, %s", m,
             hd->bias ? "with biases: heads on [X; 1'] (d + 1)" : "no q/k biases");
}

static int head_run(ac_inspect_head *hd, const ac_attn_layer *L, const ac_mat *X,
                    const ac_array *P, const ac_inspect_opts *o, ac_err *err)
{
    double t0 = ac_seconds();
    size_t n = X->rows, i = hd->head;
    hd->kv_head = ac_attn_kv_head(L, i);
    hd->dk = L->dk;
    hd->bias = L->bq || L->bk;
    size_t padded = ac_inspect_padded(o->keep, n);
    hd->masked = ac_inspect_masked(L, o->keep, n);
    hd->dprime = L->d + (size_t)hd->bias;
    hd->own = AC_UNDECIDED;
    hd->self.verdict = AC_UNDECIDED;
    hd->self.stage = AC_STAGE_NONE;
    hd->thr.lo = hd->thr.hi = -1;
    head_class(hd, L, padded, n);
    hd->pmin = INFINITY;
    hd->pmax = 0;
    const double *Pi = P->data + i * n * n;
    for (size_t k = 0; k < n * n; k++)
        if (Pi[k] > 0) {
            hd->pmin = Pi[k] < hd->pmin ? Pi[k] : hd->pmin;
            hd->pmax = Pi[k] > hd->pmax ? Pi[k] : hd->pmax;
        }
    for (size_t j = 0; j < hd->ndist; j++) {
        hd->dist[j].verdict = AC_UNDECIDED;
        hd->dist[j].lo = 0;
        hd->dist[j].hi = INFINITY;
        hd->dist[j].decades = INFINITY;
    }
    int st = AC_OK;
    if (!L->rope)
        st = head_t1(hd, L, X, P, o, err);
    double tc = ac_seconds();
    if (!st)
        st = head_circuits(hd, L, err);
    hd->t_circuits = ac_seconds() - tc;
    hd->seconds = ac_seconds() - t0;
    return st;
}

/* ---- the layer ----------------------------------------------------------------- */

/* rank X = n, d >= n, dk >= n (Theorem 2's hypotheses on the input) */
static int input_hypotheses(ac_inspect_layer *res, const ac_mat *X, ac_err *err)
{
    size_t n = res->n, d = res->d;
    long r = -1;
    int st;
    res->d_ge_n = d >= n ? AC_PROVED : AC_REFUTED;
    res->dk_ge_n = res->dk >= n ? AC_PROVED : AC_REFUTED;
    if ((st = ac_rank_lower_modp(X, &r, err)))
        return st;
    size_t m = n < d ? n : d;
    if ((size_t)r == m) {
        res->rank_x = r; /* a lower bound equal to the largest possible rank */
    } else {
        long re = -1;
        if ((st = ac_rank_exact(X, 0x1p30, &re, NULL, err)))
            return st;
        res->rank_x = re;
    }
    if (res->rank_x >= 0)
        res->rank_x_full = (size_t)res->rank_x == n ? AC_PROVED : AC_REFUTED;
    else
        res->rank_x_full = d < n ? AC_REFUTED : AC_UNDECIDED;
    char rk[48];
    if (res->rank_x >= 0)
        snprintf(rk, sizeof rk, "%ld", res->rank_x);
    else
        snprintf(rk, sizeof rk, "unknown (>= %ld)", r);
    snprintf(res->t2_line, sizeof res->t2_line,
             "d >= n: %s (d = %zu, n = %zu); rank X = n: %s (rank %s); dk >= n: %s (dk = %zu)",
             ac_verdict_name(res->d_ge_n), d, n, ac_verdict_name(res->rank_x_full), rk,
             ac_verdict_name(res->dk_ge_n), res->dk);
    return AC_OK;
}

/* kappa of [A_1 ... A_h], A_i = P_i V_i as computed in double */
static int layer_kappa(ac_inspect_layer *res, const ac_attn_layer *L, const ac_mat *X,
                       const ac_inspect_opts *o, ac_err *err)
{
    size_t n = X->rows, d = L->d, dk = L->dk, h = L->h, D = h * dk;
    ac_mat A = {0}, V = {0};
    int st;
    if ((st = ac_mat_init(&A, n, D, err)) || (st = ac_mat_init(&V, n, dk, err)))
        goto out;
    for (size_t i = 0; i < h; i++) {
        size_t g = ac_attn_kv_head(L, i);
        /* V = X Wv_g' + bv_g */
        ac_dgemm(AC_NOTRANS, AC_TRANS, n, dk, d, 1.0, X->data, d, L->wv + g * dk * d, d, 0.0, V.data, dk);
        if (L->bv)
            for (size_t t = 0; t < n; t++)
                for (size_t c = 0; c < dk; c++)
                    AC_MAT(&V, t, c) += L->bv[g * dk + c];
        ac_dgemm(AC_NOTRANS, AC_NOTRANS, n, dk, n, 1.0, res->patterns.data + i * n * n, n, V.data, dk, 0.0,
                     A.data + i * dk, D);
    }
    if ((st = ac_cond_kappa(&A, o->rtol, -1, o->max_prec, &res->kappa, err)) ||
        (st = ac_cond_certify(&A, o->rtol, &o->sched, o->max_prec, &res->kappa, err)))
        goto out;
    res->kappa_full_rank = res->kappa.smin_lo > 0 ? AC_PROVED : AC_UNDECIDED;
    if (res->kappa_full_rank != AC_PROVED) {
        long r = -1;
        if ((st = ac_rank_exact(&A, 0x1p30, &r, NULL, err)))
            goto out;
        if (r >= 0 && (size_t)r < (n < D ? n : D))
            res->kappa_full_rank = AC_REFUTED; /* the computed block is singular, exactly */
    }
    if ((st = ac_learn_kappa_predict(&(ac_rmt_pred){0}, &res->pred_median, &res->pred_q05,
                                     &res->pred_q95, n, D, err)))
        goto out;
out:
    ac_mat_free(&A);
    ac_mat_free(&V);
    return st;
}

int ac_inspect_layer_run(ac_inspect_layer *res, const ac_attn_layer *L, const ac_mat *X,
                         const size_t *heads, size_t nheads, const ac_inspect_opts *o,
                         ac_err *err)
{
    double t0 = ac_seconds();
    int st;
    memset(res, 0, sizeof *res);
    res->layer = L->layer;
    res->n = X->rows;
    res->d = L->d;
    res->h = L->h;
    res->hkv = L->hkv;
    res->dk = L->dk;
    ac_attn_describe(res->describe, sizeof res->describe, L);
    res->padded = ac_inspect_padded(o->keep, X->rows);
    if (res->padded) {
        size_t k = strlen(res->describe);
        snprintf(res->describe + k, sizeof res->describe - k, "; attention mask: %zu of %zu "
                 "tokens padding (keys hidden from every query)", res->padded, X->rows);
    }
    if (X->cols != L->d)
        return ac_err_set(err, AC_EDATA, "X is %zu x %zu; layer %zu takes width %zu", X->rows,
                          X->cols, L->layer, L->d);
    for (size_t k = 0; k < X->rows * X->cols; k++)
        if (!isfinite(X->data[k]))
            return ac_err_set(err, AC_EDATA, "X: entry (%zu, %zu) is not finite", k / X->cols,
                              k % X->cols);
    size_t ndkp = o->ndkp, dkp[AC_INSPECT_MAX_DKP];
    if (ndkp == 0) {
        if (L->dk / 2 >= 1)
            dkp[ndkp++] = L->dk / 2;
        if (L->dk / 4 >= 1 && L->dk / 4 != L->dk / 2)
            dkp[ndkp++] = L->dk / 4;
    } else {
        if (ndkp > AC_INSPECT_MAX_DKP)
            return ac_err_set(err, AC_EUSAGE, "at most %d head sizes dk'", AC_INSPECT_MAX_DKP);
        for (size_t j = 0; j < ndkp; j++) {
            if (o->dkp[j] < 1 || o->dkp[j] > L->dk)
                return ac_err_set_field(err, AC_EUSAGE, "dk_prime",
                                        "dk_prime %zu: not in [1, dk = %zu]", o->dkp[j], L->dk);
            dkp[j] = o->dkp[j];
        }
    }
    size_t nh = heads ? nheads : L->h;
    for (size_t k = 0; heads && k < nh; k++)
        if (heads[k] >= L->h)
            return ac_err_set_field(err, AC_EUSAGE, "head", "head %zu: layer %zu has %zu heads",
                                    heads[k], L->layer, L->h);
    if ((st = ac_attn_patterns(&res->patterns, L, X, o->keep, err)))
        return st;
    res->heads = calloc(nh ? nh : 1, sizeof *res->heads);
    if (!res->heads)
        return ac_err_set(err, AC_EINTERNAL, "out of memory (%zu heads)", nh);
    res->nheads = nh;
    for (size_t k = 0; k < nh; k++) {
        res->heads[k].layer = L->layer;
        res->heads[k].head = heads ? heads[k] : k;
        res->heads[k].ndist = ndkp;
        for (size_t j = 0; j < ndkp; j++)
            res->heads[k].dist[j].dk = dkp[j];
    }
    /* heads in parallel, BLAS single-threaded inside: each head's result is
     * computed by one thread from its own data, the same for any thread count */
    int bt = ac_blas_get_threads();
    ac_blas_set_threads(1);
    int *sts = calloc(nh ? nh : 1, sizeof *sts);
    ac_err *errs = calloc(nh ? nh : 1, sizeof *errs);
    if (!sts || !errs) {
        free(sts);
        free(errs);
        ac_blas_set_threads(bt);
        return ac_err_set(err, AC_EINTERNAL, "out of memory (%zu heads)", nh);
    }
#ifdef _OPENMP
    int nt = o->threads > 0 ? o->threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
#endif
    for (size_t k = 0; k < nh; k++)
        sts[k] = head_run(&res->heads[k], L, X, &res->patterns, o, &errs[k]);
    st = AC_OK;
    for (size_t k = 0; k < nh && !st; k++)
        if (sts[k]) {
            st = sts[k];
            if (err)
                *err = errs[k];
        }
    free(sts);
    free(errs);
    if (!st && !o->heads_only)
        st = input_hypotheses(res, X, err);
    double tk = ac_seconds();
    if (!st && !o->heads_only)
        st = layer_kappa(res, L, X, o, err);
    res->t_kappa = ac_seconds() - tk;
    ac_blas_set_threads(bt);
    for (size_t k = 0; k < nh; k++) {
        res->t_threshold += res->heads[k].thr.seconds;
        res->t_self += res->heads[k].self.seconds;
        res->t_dist += res->heads[k].t_dist;
        res->t_circuits += res->heads[k].t_circuits;
    }
    res->seconds = ac_seconds() - t0;
    return st;
}
