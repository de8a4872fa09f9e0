/* embed_check.c — the embedding check of Theorem 2 of paper 1's inclusion
 * F in G (doc/mathematics.md §4.2): on sample inputs X_k, is
 * ||g_V(X_k) - f_W(X_k)||_F <= tol ||f_W(X_k)||_F?  Each sample is decided
 * exactly when the heads agree at X_k (heads_agree_at), and its relative
 * deviation is enclosed by the verdict engine (dev_stage0, dev_ball); the
 * samples are then combined into one certificate (embed_combine). */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ball.h"
#include "attention/multihead_arb.h"
#include "attncheck/blas.h"
#include "attncheck/interval.h"
#include "t2_impl.h"

/* Exactly: head i of f_W and of g_V agree at X (Xx, its transpose XT), i.e.
 * Vo_i Vv_i X = Wo_i Wv_i X and X'U_i X/sqrt(dp) = X'A_i X/sqrt(dh).  1 yes,
 * 0 no, -1 too wide. */
static int head_agrees_at(const ac_mh *W, const ac_mh *V, size_t i, const ac_xmat *Xx,
                          const ac_xmat *XT)
{
    ac_xmat a, b, pa, pb, t;
    int ans = 1;
    if (!t2_x_pair(&a, &b, t2_x_ov, W, V, i))
        return -1;
    ac_xmat_mul(&pa, &a, Xx);
    ac_xmat_mul(&pb, &b, Xx);
    if (!ac_xmat_equal(&pa, &pb))
        ans = 0;
    ac_xmat_clear(&a);
    ac_xmat_clear(&b);
    ac_xmat_clear(&pa);
    ac_xmat_clear(&pb);
    if (ans != 1)
        return ans;
    if (!t2_x_pair(&a, &b, t2_x_qk, W, V, i))
        return -1;
    ac_xmat_mul(&t, XT, &a);
    ac_xmat_mul(&pa, &t, Xx);
    ac_xmat_clear(&t);
    ac_xmat_mul(&t, XT, &b);
    ac_xmat_mul(&pb, &t, Xx);
    ac_xmat_clear(&t);
    /* X'U_i X / sqrt(dp) = X'A_i X / sqrt(dh) */
    if (!ac_xmat_scaled_equal(&pb, (unsigned long)W->hs, &pa, (unsigned long)V->hs))
        ans = 0;
    ac_xmat_clear(&a);
    ac_xmat_clear(&b);
    ac_xmat_clear(&pa);
    ac_xmat_clear(&pb);
    return ans;
}

/* Every head of f_W and of g_V agree at X: 1 yes, 0 no, -1 too wide. */
static int heads_agree_at(const ac_mh *W, const ac_mh *V, const ac_mat *X)
{
    ac_xmat Xx, XT;
    int ans = 1;
    if (ac_xmat_from_d(&Xx, X->data, X->rows, X->cols, X->cols, 0, T2_X_BITS) != AC_XMAT_OK)
        return -1;
    ac_xmat_transpose(&XT, &Xx);
    for (size_t i = 0; i < W->h && ans == 1; i++)
        ans = head_agrees_at(W, V, i, &Xx, &XT);
    ac_xmat_clear(&Xx);
    ac_xmat_clear(&XT);
    return ans;
}

int ac_t2_sample_input(ac_mat *X, size_t d, size_t n, uint64_t seed, size_t k, ac_err *err)
{
    int st = ac_mat_init(X, d, n, err);
    if (!st)
        t2_rng_vec(X->data, d * n, seed, T2_STREAM_SAMPLE, k);
    return st;
}

/* The relative deviation r_k of sample k is t2_dev_ctx's quantity (certify.c):
 * ||g_V - f_W||_F = ||f_W - g_V||_F. */

#define EMBED_QUANTITY "max over the samples of ||g_V(X) - f_W(X)||_F / ||f_W(X)||_F"

/* What the samples add up to: the enclosure [max_lo, max_hi] of the max of
 * the relative deviations (an exactly equal sample contributes its exact 0),
 * its highest stage, the first refuting certificate, the time. */
typedef struct {
    ac_cert refute;
    int top_stage;
    long top_prec;
    double max_lo, max_hi, secs;
} embed_acc;

/* Sample k: exact agreement of the heads, and the certified enclosure of its
 * relative deviation (for an exact sample: a cross-check). */
static int embed_sample(ac_t2_embed_result *r, embed_acc *acc, ac_quantity *q, const ac_mh *W,
                        const ac_mh *V, size_t n, uint64_t seed, const ac_schedule *sched,
                        size_t k, ac_err *err)
{
    ac_mat X = {0};
    ac_cert c;
    int st;
    if ((st = ac_t2_sample_input(&X, W->d, n, seed, k, err)))
        return st;
    /* exact: equal as functions, or equal value paths and logit matrices
     * head by head at X => r = 0 */
    int agree = r->equal_functions == 1 ? 1 : heads_agree_at(W, V, &X);
    t2_dev_ctx dc = {W, V, &X, 0, INFINITY, 0, INFINITY, INFINITY};
    q->ctx = &dc;
    ac_schedule sa;
    if (sched)
        sa = t2_sched_adapt(sched, W, V, &X);
    st = ac_decide(&c, q, AC_LE, r->tol, sched ? &sa : NULL, err);
    ac_mat_free(&X);
    if (st)
        return st;
    acc->secs += c.seconds;
    if (!(dc.diff_hi <= r->diff_hi))
        r->diff_hi = dc.diff_hi;
    if (agree != 1) {
        /* the max over the samples: an exactly equal sample contributes its
         * exact 0, the others their enclosure */
        if (c.lo > acc->max_lo)
            acc->max_lo = c.lo;
        if (!(c.hi <= acc->max_hi))
            acc->max_hi = c.hi;
        if (c.stage > acc->top_stage || (c.stage == acc->top_stage && c.prec > acc->top_prec)) {
            acc->top_stage = c.stage;
            acc->top_prec = c.prec;
        }
    }
    if (agree == 1) {
        r->equal_samples++;
        r->within_samples++;
        if (c.verdict == AC_REFUTED)
            return ac_err_set(err, AC_EINTERNAL, "embedding check, sample %zu: exactly equal "
                              "head by head but the enclosure of the deviation excludes 0 "
                              "(report a bug)", k + 1);
    } else if (c.verdict == AC_PROVED) {
        r->within_samples++;
    } else if (c.verdict == AC_REFUTED) {
        if (!r->refuted_sample) {
            r->refuted_sample = k + 1;
            acc->refute = c;
        }
    } else if (!r->undecided_sample) {
        r->undecided_sample = k + 1;
    }
    return AC_OK;
}

/* The verdict and the certificate of "max_k r_k <= tol": the first refuting
 * sample's enclosure, exact 0 when every sample agrees exactly, else the
 * enclosure of the max over the samples. */
static int embed_combine(ac_t2_embed_result *r, const embed_acc *acc, const ac_quantity *q,
                         ac_err *err)
{
    double tol = r->tol;
    r->rel_lo = acc->max_lo;
    r->rel_hi = acc->max_hi;
    r->exact = r->equal_samples == r->samples;
    if (r->refuted_sample) {
        /* the enclosure of the max over the samples (its lower bound is at
         * least the refuting sample's, so it is > tol as well) */
        r->verdict = AC_REFUTED;
        ac_cert_set(&r->cert, EMBED_QUANTITY, AC_LE, tol, acc->top_stage, acc->top_prec,
                    acc->max_lo, acc->max_hi,
                    acc->top_stage >= 1 ? q->method_ball : q->method0);
        r->cert.seconds = acc->secs;
        if (r->cert.verdict != AC_REFUTED)
            return ac_err_set(err, AC_EINTERNAL, "embedding check: sample %zu exceeds tol but "
                              "the enclosure [%g, %g] of the max does not (report a bug)",
                              r->refuted_sample, acc->max_lo, acc->max_hi);
    } else if (r->exact) {
        r->verdict = AC_PROVED;
        ac_cert_set(&r->cert, EMBED_QUANTITY, AC_LE, tol, AC_STAGE_EXACT, 0, 0.0, 0.0,
                    "exact head-by-head equality at every sample (dyadic rationals): the "
                    "deviation is 0");
        r->cert.seconds = acc->secs;
    } else {
        /* the enclosure of the max over the samples; an exactly equal sample
         * contributes its certified enclosure (which contains its true 0) */
        ac_cert_set(&r->cert, EMBED_QUANTITY, AC_LE, tol, acc->top_stage, acc->top_prec,
                    acc->max_lo, acc->max_hi,
                    acc->top_stage >= 1 ? q->method_ball : q->method0);
        r->cert.seconds = acc->secs;
        r->verdict = r->within_samples == r->samples ? AC_PROVED : AC_UNDECIDED;
        if (r->verdict == AC_UNDECIDED)
            r->cert.verdict = AC_UNDECIDED;
        else if (r->cert.verdict != AC_PROVED)
            return ac_err_set(err, AC_EINTERNAL, "embedding check: every sample is within tol "
                              "but the combined enclosure [%g, %g] is not (report a bug)",
                              acc->max_lo, acc->max_hi);
    }
    return AC_OK;
}

static void embed_summary(ac_t2_embed_result *r, const ac_schedule *sched)
{
    size_t samples = r->samples;
    char tb[32], b1[AC_FMT_BOUND_BUFSIZE], b2[AC_FMT_BOUND_BUFSIZE];
    snprintf(tb, sizeof tb, "%.3g", r->tol);
    if (r->verdict == AC_PROVED && r->exact && r->params_identical != 1 &&
        r->equal_functions == 1)
        snprintf(r->summary, sizeof r->summary,
                 "g_V = f_W for every X, exactly: not head by head, but every class of heads "
                 "with equal logit matrices has equal sums of value paths (e.g. heads in "
                 "another order); so the deviation is 0 on all %zu sample inputs", samples);
    else if (r->verdict == AC_PROVED && r->exact)
        snprintf(r->summary, sizeof r->summary,
                 "g_V(X) = f_W(X) exactly on all %zu sample inputs (head by head: equal value "
                 "paths and equal logits), so ||g - f||_F <= tol ||f||_F with deviation 0; the "
                 "parameters %s", samples,
                 r->params_identical == 1 ? "are equal head by head, so g_V = f_W for every X"
                                          : "are not identical head by head");
    else if (r->verdict == AC_PROVED)
        snprintf(r->summary, sizeof r->summary,
                 "||g_V(X) - f_W(X)||_F <= %s ||f_W(X)||_F on all %zu sample inputs "
                 "(certified; tol = %s), %zu of them equal exactly; not exact: the parameters "
                 "are %s head by head (e.g. the double V rounds the rescaled query s Wq)",
                 ac_str_hi(b1, ".3g", r->rel_hi), samples, tb, r->equal_samples,
                 r->params_identical == 0 ? "not equal" : "not known to be equal");
    else if (r->verdict == AC_REFUTED)
        snprintf(r->summary, sizeof r->summary,
                 "the relative deviation ||g_V(X) - f_W(X)||_F / ||f_W(X)||_F exceeds tol = %s "
                 "(certified; max over the samples >= %s, first beyond tol: sample %zu); this "
                 "says only that the deviation is above tol, which may be the rounding of the "
                 "weights, not that g_V fails to embed f_W", tb, ac_str_lo(b1, ".3g", r->cert.lo),
                 r->refuted_sample);
    else
        snprintf(r->summary, sizeof r->summary,
                 "%zu of %zu samples proved within tol = %s; sample %zu could neither be proved "
                 "within nor beyond it (relative deviation in [%s, %s]%s)", r->within_samples,
                 samples, tb, r->undecided_sample, ac_str_lo(b1, ".3g", r->rel_lo),
                 ac_str_hi(b2, ".3g", r->rel_hi),
                 isinf(r->rel_hi) ? ": ||f_W(X)||_F is not certified positive, so no relative "
                                    "bound"
                 : sched && sched->n ? "" : "; no ball stage allowed");
}

static int embed_check(ac_t2_embed_result *r, const ac_mh *W, const ac_mh *V, size_t n,
                       size_t samples, uint64_t seed, double tol, const ac_schedule *sched,
                       ac_err *err)
{
    int st;
    memset(r, 0, sizeof *r);
    r->verdict = AC_UNDECIDED;
    r->samples = samples;
    r->tol = tol;
    r->cert.verdict = AC_UNDECIDED;
    r->cert.stage = AC_STAGE_NONE;
    if (W->d != V->d || W->h != V->h)
        return ac_err_set(err, AC_EDATA, "embedding check: f_W and g_V differ in d or h");
    if (n == 0 || samples == 0)
        return ac_err_set(err, AC_EUSAGE, "embedding check needs n >= 1 and at least one sample");
    if (!(tol >= 0) || !isfinite(tol))
        return ac_err_set(err, AC_EUSAGE, "embedding check: tolerance %g must be finite and >= 0",
                          tol);
    if ((st = ac_t2_identical(&r->params_identical, W, V, err)))
        return st;
    /* equal as functions (the class-sum criterion, e.g. heads in another
     * order): every sample is then exactly equal */
    char note[240];
    if (t2_equal_functions(&r->equal_functions, W, V, n, note, sizeof note, NULL))
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    ac_quantity q = {"||g_V(X) - f_W(X)||_F / ||f_W(X)||_F", t2_dev_stage0, t2_dev_ball, NULL, NULL,
                     "interval products in double (gamma_k bound) + rigorous softmax, directed "
                     "norms and quotient",
                     "Arb ball arithmetic from the exact doubles", NULL};
    embed_acc acc;
    memset(&acc, 0, sizeof acc);
    acc.top_stage = AC_STAGE_NONE;
    r->diff_hi = 0;
    for (size_t k = 0; k < samples; k++)
        if ((st = embed_sample(r, &acc, &q, W, V, n, seed, sched, k, err)))
            return st;
    if ((st = embed_combine(r, &acc, &q, err)))
        return st;
    embed_summary(r, sched);
    return AC_OK;
}

/* single-threaded BLAS, as ac_t2_separate */
int ac_t2_embed_check(ac_t2_embed_result *r, const ac_mh *W, const ac_mh *V, size_t n,
                      size_t samples, uint64_t seed, double tol, const ac_schedule *sched,
                      ac_err *err)
{
    int old = ac_blas_get_threads();
    ac_blas_set_threads(1);
    int st = embed_check(r, W, V, n, samples, seed, tol, sched, err);
    ac_blas_set_threads(old);
    return st;
}
