/* t2_impl.h — internals of Theorem 2 of paper 1 (src/theorem2/), shared by
 * its files, and the map of the module; not installed.
 *
 * Dimension letters: d model width, n tokens, h heads, dh = d/h the head size
 * of f_W, dp the head size of g_V, hh = h * head size.  X is d x n, one column
 * per token; softmax over each column (doc/mathematics.md §1.2).  Exact checks
 * use core/dyadic.h (products of doubles as exact dyadic rationals,
 * doc/mathematics.md §2.6); certified values use the verdict engine with
 * stage 0 = ac_mh_enclose and Arb balls after it (attention/multihead_arb.h,
 * doc/mathematics.md §2.2).
 *
 * Files of src/theorem2/ (this map; tests/docs.sh checks it against
 * local.mk), by the step of the paper's proof they hold (paper 1, Theorem 2):
 *   hypotheses.c  the hypotheses, the exact identity, the case (x_S, x_qk, x_ov)
 *   identity.c    are f_W and g_V the same function? the class-sum criterion
 *                 (doc/mathematics.md §4.9)
 *   generate.c    g_V and f_W generators, one per case (generate_w_case1/2/3)
 *   construct.c   the constructions of X, one per case (construct_case1/2/3)
 *   certify.c     double gap estimates, the certificate ||f_W(X) - g_V(X)||_F > 0
 *   multimin.c    BFGS maximisation of the relative gap
 *   search.c      ac_t2_separate: candidates, certification, summary
 *   reach.c       the candidates double estimates cannot see: near-ties of
 *                 logits at saturating scales, heads' own scales, basis
 *                 vectors (doc/mathematics.md §4.10, "Within reach")
 *   bound.c       a bound on r(X) over every X when the layers differ only
 *                 in Wo (doc/mathematics.md §4.10, "Within tol at every X")
 *   trace.c       the proof's steps with certified values (trace_case1/2/3)
 *   audit.c       the three gaps of the paper's proof (audit_dependence,
 *                 audit_parallel, audit_v2)
 *   embed.c       the inclusion F in G (ac_t2_embed)
 *   embed_check.c the embedding check on sample inputs (ac_t2_embed_check)
 *   headcount.c   the standard head counts that represent a layer exactly
 *                 (attncheck/headcount.h, doc/mathematics.md §4.8)
 *   t2_impl.h     this header
 *   test/         the unit tests, one Check program per file:
 *     test_theorem2.c   the generators land in their case, the separation
 *                       certificate against Arb at 512 bits, equal layers never
 *                       separated;
 *     test_identity.c   layers equal as functions but written differently, the
 *                       embedding check's tolerance and certificate, the audit;
 *     test_headcount.c  ac_headcount_decide on constructed layers of every kind.
 */
#ifndef AC_T2_IMPL_H
#define AC_T2_IMPL_H

#include <math.h>

#include "core/ac_arb.h"
#include "core/dyadic.h"
#include "attncheck/interval.h"
#include "attncheck/json.h"
#include "attncheck/multihead.h"
#include "attncheck/theorem2.h"

/* Streams of the random draws: (seed, T2_STREAM_*, index). */
enum {
    T2_STREAM_V = 100,     /* g_V generator (+ 8 * attempt + k) */
    T2_STREAM_W = 2,       /* f_W generator */
    T2_STREAM_WCASE = 3,   /* f_W built for case 2 / 3 */
    T2_STREAM_CON = 200,   /* construction c uses 200 + c */
    T2_STREAM_SAMPLE = 301, /* sample inputs of the embedding check */
    T2_STREAM_REACH = 401   /* candidates within reach (reach.c) */
};

/* Precision (bits) of the trace's Arb values. */
#define T2_TRACE_PREC 128

/* ---- exact parts of a layer (hypotheses.c; dyadic.h) ---------------------- */

/* Bit budget of the exact conversions of this module: every finite double
 * is m 2^e with |m| < 2^53 and -1074 <= e <= 971, so a matrix of finite
 * doubles spans at most 53 + 971 + 1074 = 2098 bits; with this budget every
 * finite input is converted (decided exactly), whatever its scale. */
#define T2_X_BITS 2112

/* S = Wo_cat Wv_stack = sum_i Wo_i Wv_i (d x d) */
int t2_x_S(ac_xmat *S, const ac_mh *L);
/* A_i = Wk_i^T Wq_i (d x d) */
int t2_x_qk(ac_xmat *A, const ac_mh *L, size_t i);
/* Wo_i Wv_i (d x d) */
int t2_x_ov(ac_xmat *A, const ac_mh *L, size_t i);
/* One exact part of head i of a layer: t2_x_qk or t2_x_ov. */
typedef int (*t2_x_part)(ac_xmat *A, const ac_mh *L, size_t i);
/* a = part(W, i), b = part(V, i): 1, or 0 when either is too wide for
 * exact arithmetic (then nothing is left to clear). */
int t2_x_pair(ac_xmat *a, ac_xmat *b, t2_x_part part, const ac_mh *W, const ac_mh *V, size_t i);

/* ---- equality as functions (identity.c; doc/mathematics.md §4.9) ---------- */

/* Decide f_W = g_V for every X with n tokens by the class-sum criterion:
 * group the heads of both layers by their logit matrix (A_i/sqrt(d/h),
 * U_j/sqrt(dp), compared exactly), drop heads with a zero value path, and
 * compare the sums of the value paths in every class (exactly); for n = 1,
 * S_W = S_V.  *same = 1: equal for every X (proved); 0: the criterion fails
 * (for n = 1 this proves f_W != g_V; for n >= 2 see §4.9); -1 never with
 * finite input (T2_X_BITS).  note (>= 160 bytes) says how.  *logits_pair
 * (may be NULL; n >= 2) = 1 when every class holds as many heads of f_W as
 * of g_V, i.e. the logit matrices pair up and the layers can differ only in
 * value paths; 0 otherwise; -1 not decided (n = 1). */
int t2_equal_functions(int *same, const ac_mh *W, const ac_mh *V, size_t n, char *note,
                       size_t len, int *logits_pair);

/* ---- random vectors (construct.c) ---------------------------------------- */

/* v[0..m) i.i.d. N(0, 1) from the stream (seed, a, b). */
void t2_rng_vec(double *v, size_t m, uint64_t seed, uint64_t a, uint64_t b);

/* ---- double-precision gap (certify.c) ------------------------------------- */

typedef struct {
    const ac_mh *W, *V;
    size_t n;
    ac_mh_work ww, wv;
    ac_mat Yf, Yg;
} t2_gap_ws;

/* threads: of the forward and backward passes (0 = as the BLAS) */
int t2_gap_ws_init(t2_gap_ws *g, const ac_mh *W, const ac_mh *V, size_t n, int threads,
                   ac_err *err);
void t2_gap_ws_free(t2_gap_ws *g);
/* gap = ||f - g||_F, nf, ng the norms (may be NULL); returns the relative gap
 * ||f - g||_F / (||f||_F + ||g||_F) (0 when both are 0). */
double t2_gap_eval(t2_gap_ws *g, const ac_mat *X, double *gap, double *nf, double *ng);

/* Lower bound on sqrt(sum m_i^2) over nonnegative m_i, rounded down
 * (doc/mathematics.md §2.3). */
double t2_norm2_dn(const double *m, size_t N);

/* r = ||f_W(X) - g_V(X)||_F / ||f_W(X)||_F at one X (certify.c): the
 * quantity of the separation certificate (r > tol) and of the embedding
 * check (r <= tol).  The stages record the enclosures of the last stage run:
 * diff_lo <= ||f - g||_F <= diff_hi, f_lo <= ||f||_F <= f_hi, ||g||_F <= g_hi. */
typedef struct {
    const ac_mh *W, *V;
    const ac_mat *X;
    double diff_lo, diff_hi, f_lo, f_hi, g_hi;
} t2_dev_ctx;
int t2_dev_stage0(void *ctx, double *lo, double *hi, ac_err *err);
int t2_dev_ball(void *ctx, long prec, mpfr_t lo, mpfr_t hi, ac_err *err);
/* [lo, hi] for r from the norm bounds (0 when f = g, +inf when f = 0 != g) */
void t2_ratio_bounds(double dlo, double dhi, double flo, double fhi, double *lo, double *hi);

/* The ball stages of sched (returned unchanged when it has none), with one
 * more stage when the logits at X need more bits than its last: a logit of
 * magnitude 2^b is known to absolute accuracy ~1 only at precision > b, so
 * the stage added has b + T2_PREC_MARGIN bits (b from Cauchy-Schwarz
 * bounds of both layers, computed in logarithms), rounded up to a multiple
 * of 64 and at most T2_PREC_CAP (beyond every logit of finite doubles with
 * |X| < 2^1024 and d < 2^32).  doc/mathematics.md §4.10. */
#define T2_PREC_MARGIN 192
#define T2_PREC_CAP 8704
ac_schedule t2_sched_adapt(const ac_schedule *s, const ac_mh *W, const ac_mh *V,
                           const ac_mat *X);

/* The mignitude (least |x|) and the magnitude (largest |x|) of [lo, hi]. */
static inline double t2_mig(double lo, double hi)
{
    return lo > 0 ? lo : (hi < 0 ? -hi : 0.0);
}
static inline double t2_mag(double lo, double hi)
{
    return fmax(fabs(lo), fabs(hi));
}

/* Stage 0 of both layers at X: F = f_W(X), G = g_V(X) enclosed by
 * ac_mh_enclose; on error nothing is left to free. */
int t2_enclose_pair(ac_imat *F, ac_imat *G, const ac_mh *W, const ac_mh *V, const ac_mat *X,
                    ac_err *err);
/* The ball stages of both layers at X: Xa = X exactly, F = f_W(X),
 * G = g_V(X) in Arb at prec (d x n each, initialised by the caller). */
void t2_arb_pair(arb_mat_t Xa, arb_mat_t F, arb_mat_t G, const ac_mh *W, const ac_mh *V,
                 const ac_mat *X, slong prec);

/* ---- the search's pieces -------------------------------------------------- */

/* BFGS from X0 on the relative gap (multimin.c); the best point evaluated goes
 * to Xout (allocated here).  Returns its relative gap estimate, or -1 if
 * nothing was done; *evals receives the number of evaluations. */
double t2_maximise_gap(ac_mat *Xout, const ac_mh *W, const ac_mh *V, const ac_mat *X0,
                       int iters, int threads, long *evals, ac_err *err);

/* Candidates within reach (reach.c; doc/mathematics.md §4.10): near-ties
 * of logits resolved at a saturating scale, the scales of heads beyond the
 * reach of X of order one, basis vectors as tokens.  Certified by the
 * search through the ball stages, not estimated in double. */
#define T2_REACH_BASIS 16  /* basis vectors e_1 .. e_16 at most */
#define T2_REACH_SCALES 8  /* distinct head scales at most */
#define T2_REACH_QUANT 8   /* head scales in steps of 2^8, beyond |b| > 8 */
typedef struct {
    ac_mat X;
    int kind;    /* AC_T2_CON_TIE, AC_T2_CON_BASIS, AC_T2_CON_SCALE, AC_T2_CON_CANCEL */
    size_t head; /* ties: the head (1-based); basis: k of e_k */
    int which;   /* ties: 0 a head of f_W, 1 of g_V */
} t2_reach_cand;
typedef struct {
    t2_reach_cand *v;
    size_t n, cap;
} t2_reach_list;
/* Every candidate, in the order they are certified (the list zeroed
 * here; on error it is left for t2_reach_free). */
int t2_reach_build(t2_reach_list *l, const ac_mh *W, const ac_mh *V, size_t n, uint64_t seed,
                   ac_err *err);
void t2_reach_free(t2_reach_list *l);

/* Layers that differ only in their output projections (same sizes, Wq,
 * Wk, Wv equal entry by entry) with Wo_cat of f_W of full column rank
 * (h hs <= d): a certified upper bound B on ||Delta A^+||_F, A = Wo_cat of
 * f_W, Delta = Vo_cat - A, so that r(X) <= B at every X (bound.c;
 * doc/mathematics.md §4.10).  NAN when the layers are not of this kind or
 * the bound was not certified (A'A not proved invertible at 512 bits);
 * *prec receives the bits of the balls that certified it. */
double t2_wo_bound(const ac_mh *W, const ac_mh *V, long *prec);

/* The proof's steps for the case res->cls.kase at the candidate cand, into
 * res->steps (trace.c). */
int t2_trace(ac_t2_result *res, const ac_mh *W, const ac_mh *V, const ac_t2_sep *cand,
             ac_err *err);

/* The gaps of the paper's proof on the instance, into res->audit; Xgen (may
 * be NULL) holds the generic v of the case-2 construction in its column 1
 * (audit.c). */
int t2_run_audit(ac_t2_result *res, const ac_mh *W, const ac_mh *V, const ac_mat *Xgen,
                 ac_err *err);

/* ---- Arb helpers shared by the trace and the audit (trace.c) ------------- */

/* v = column j of X (d x 1, exactly) */
void t2_arb_col_of(arb_mat_t v, const ac_mat *X, size_t j);
/* Certified enclosure [lo, hi] of sigma_h of B = [Wo_1 Wv_1 v, ..., Wo_h Wv_h v]
 * (d x h); [0, inf] when h > d. */
int t2_sigma_ov(double *lo, double *hi, const ac_mh *W, const arb_mat_t v, ac_err *err);

#endif /* AC_T2_IMPL_H */
