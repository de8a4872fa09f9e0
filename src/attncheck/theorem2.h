/* attncheck/theorem2.h — Theorem 2 of Bhojanapalli et al. (2020) (paper 1):
 * a FixedMultiHead layer g_V is not represented by any standard MultiHead
 * layer f_W; checked on concrete instances (doc/mathematics.md §4).
 *
 * Layers (attncheck/multihead.h), X d x n with one column per token, softmax
 * over each column:
 *   f_W(X) = sum_i Wo_i Wv_i X Softmax((Wk_i X)^T (Wq_i X) / sqrt(d/h)),  head size d/h;
 *   g_V(X) = sum_i Vo_i Vv_i X Softmax((Vk_i X)^T (Vq_i X) / sqrt(dp)),   head size dp.
 * Both have h heads.  S_W = sum_i Wo_i Wv_i, S_V = sum_i Vo_i Vv_i,
 * U_i = Vk_i^T Vq_i, A_i = Wk_i^T Wq_i, M_i = U/sqrt(dp) - A_i/sqrt(d/h).
 *
 * Theorem.  n >= 2, d >= dp, h > d/dp.  If (i) S_V has full rank d and
 * (ii) U_i = U for every i with rank U = dp, then for every f_W there is an X
 * with f_W(X) != g_V(X).  Proof by cases: 1. S_W != S_V; 2. S_W = S_V and
 * some M_i is not skew-symmetric; 3. S_W = S_V and every M_i is skew.
 *
 * What is certified, and how:
 *   - the hypotheses, each a verdict: the sizes (exact integers), rank S_V = d
 *     and rank U = dp (exact rank modulo a prime / over Q of the exact
 *     products), U_i = U (exact comparison of the exact products);
 *   - the case: S_W = S_V and the skew-symmetry of M_i are decided exactly
 *     (products of doubles computed exactly as dyadic rationals; the
 *     irrational factors 1/sqrt(dp), 1/sqrt(d/h) compared through squares);
 *   - "separated at X": ||f_W(X) - g_V(X)||_F > tol ||f_W(X)||_F, tol the
 *     tolerance of the embedding check, from the exact doubles of X, W, V,
 *     decided by the verdict engine (stage 0: interval products + rigorous
 *     softmax; then Arb balls, with more bits when the logits need them; an
 *     X with equal columns through f - g = (S_W - S_V) v 1').
 * "For every f_W" is the paper's conclusion; a run checks the hypotheses and
 * one f_W.  A separation is a fact about the two layers whether or not the
 * hypotheses hold; when they do not, the theorem itself says nothing, and
 * the result says so.  "No X separates" is never concluded from a failed
 * search: it is REFUTED only when f_W and g_V are proved to be the same
 * function by the class-sum criterion (doc/mathematics.md §4.9: heads
 * grouped by equal logit matrices, zero value paths dropped, the value paths
 * of each class summed and compared exactly; for n = 1, S_W = S_V).
 */
#ifndef ATTNCHECK_THEOREM2_H
#define ATTNCHECK_THEOREM2_H

#include <stdint.h>

#include "attncheck/common.h"
#include "attncheck/multihead.h"
#include "attncheck/verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    AC_T2_CASE_UNKNOWN = 0, /* could not be decided exactly (numbers too large) */
    AC_T2_CASE_1 = 1,       /* S_W != S_V */
    AC_T2_CASE_2 = 2,       /* S_W = S_V, some M_i not skew-symmetric */
    AC_T2_CASE_3 = 3,       /* S_W = S_V, every M_i skew-symmetric */
    AC_T2_CASE_NONE = 4     /* S_W = S_V but the heads of g_V do not share U */
} ac_t2_case;

/* Constructions of X (the paper's three, and the numerical maximiser). */
enum {
    AC_T2_CON_NONE = 0,
    AC_T2_CON_1 = 1,   /* X = v 1^T */
    AC_T2_CON_2 = 2,   /* X = v e_1^T */
    AC_T2_CON_3 = 3,   /* X = [v1, alpha v2~, 0, ..., 0] */
    AC_T2_CON_OPT = 4, /* GSL multimin on the relative gap, from the best of the others */
    /* within reach (doc/mathematics.md §4.10), certified in balls: */
    AC_T2_CON_TIE = 5,   /* a near-tie of two logits, X at the scale that resolves it */
    AC_T2_CON_BASIS = 6, /* the basis vector e_k as the first token, the others 0 */
    AC_T2_CON_SCALE = 7, /* a Gaussian X at the logit scale of one head */
    AC_T2_CON_CANCEL = 8 /* equal tokens along the least singular direction of
                            sum_h Wo_h Wv_h: the head outputs cancel */
};

#define AC_T2_MAX_ALPHA 8
#define AC_T2_MAX_STEPS 16

typedef struct {
    uint64_t seed;        /* generic vectors: Philox streams (seed, 200 + construction, index) */
    size_t tries;         /* generic vectors per construction (default 3) */
    size_t nalpha;        /* case-3 scalings alpha (default 1, 4, 16, 64) */
    double alpha[AC_T2_MAX_ALPHA];
    int optimize;         /* BFGS iterations maximising the relative gap (default 60; 0 = off);
                             at most 5 optimize + 10 evaluations of the layers in all */
    int trace;            /* record the proof steps of the case (ac_t2_result.steps) */
    int audit;            /* exhibit the gaps of the paper's proof
                             (doc/mathematics.md §4.7; ac_t2_result.audit) */
    int search_if_identical; /* search even when f_W = g_V is proved (tests) */
    const char *wname, *vname; /* the layers in the messages of ac_t2_validate (default
                             "f_W", "g_V"; e.g. the directories they were read from) */
    double tol;           /* separated at X means ||f_W(X) - g_V(X)||_F > tol ||f_W(X)||_F
                             (default AC_T2_TOL_DEFAULT, the tolerance of the embedding
                             check, so that the two verdicts are complementary; 0 = any
                             difference) */
    ac_schedule sched;    /* ball stages of the separation certificate */
    int threads;          /* threads of the double forward/backward passes of the search
                             (default 1; 0 = the BLAS threads at the call); the result
                             does not depend on it.  More than 1 pays only for large
                             layers on an idle machine: the passes are short and many */
} ac_t2_opts;

void ac_t2_opts_default(ac_t2_opts *o);

/* The hypotheses of Theorem 2 for (g_V, n). */
typedef struct {
    size_t d, h, dp, n;
    ac_verdict sizes;        /* n >= 2, d >= dp, h dp > d, h divides d (exact) */
    char sizes_note[200];
    ac_verdict sv_rank;      /* rank S_V = d */
    long sv_rank_value;      /* exact rank, or -1 if not known */
    char sv_method[96];
    ac_verdict u_shared;     /* Vk_i^T Vq_i = Vk_1^T Vq_1 for every i */
    size_t u_first_bad;      /* first head (1-based) whose U_i differs; 0 if none */
    ac_verdict u_rank;       /* rank U_1 = dp */
    long u_rank_value;       /* exact rank, or -1 if not known */
    char u_method[96];
    ac_verdict applies;      /* all of the above */
} ac_t2_hyp;

typedef struct {
    ac_t2_case kase;
    ac_verdict sw_equals_sv; /* PROVED S_W = S_V, REFUTED S_W != S_V (exact), UNDECIDED */
    size_t nonskew;          /* heads with M_i not skew (exact; 0 in case 3) */
    size_t first_nonskew;    /* 1-based; 0 if none */
    char note[256];
} ac_t2_class;

/* One candidate X and its certificate. */
typedef struct {
    int construction;        /* AC_T2_CON_* */
    size_t index;            /* which generic vector */
    size_t head;             /* constructions 2, 3: the head the argument uses (1-based) */
    double alpha;            /* construction 3 */
    ac_mat X;                /* d x n */
    double est_gap, est_rel; /* double-precision estimates */
    ac_cert cert;            /* "||f_W(X) - g_V(X)||_F / ||f_W(X)||_F > tol" (+inf when
                                f_W(X) = 0 != g_V(X)) */
    double gap_lo, gap_hi;   /* certified enclosure of ||f_W(X) - g_V(X)||_F */
    double rel_lo;           /* certified lower bound on ||f-g||_F / (||f||_F + ||g||_F) */
    double f_hi, g_hi;       /* certified upper bounds on ||f_W(X)||_F, ||g_V(X)||_F */
} ac_t2_sep;

/* One proof step with its certified value (ac_t2_opts.trace): ac_step of
 * verdict.h.  A step's note may name an option of ac_t2_opts by its field
 * name, as a whole word ("see audit"); AC_T2_STEP_FIELDS lists those names,
 * comma-separated as ac_err.fields, so that a front end can spell them as
 * its own options. */
typedef ac_step ac_t2_step;
#define AC_T2_STEP_FIELDS "audit"


/* The three gaps of the paper's proof (doc/mathematics.md §4.7) exhibited on
 * the instance (ac_t2_opts.audit). */
typedef struct {
    int done;
    ac_verdict dep;          /* PROVED: a v != 0 with {Wo_i Wv_i v} dependent, exactly */
    size_t dep_head;         /* Wv_i v = 0 for this head (1-based) */
    long dep_bits;           /* bits of the largest entry of the integer vector v */
    double dep_v[8];         /* first entries of v / ||v|| (approximate, for display) */
    size_t dep_nshow;
    ac_verdict indep;        /* PROVED: for the generic v used, sigma_h([Wo_i Wv_i v]) > 0 */
    double indep_sigma_lo;
    ac_verdict parallel;     /* PROVED: a v1 = e_j with U v1, A_i v1 positively parallel and
                                M_i v1 != 0 (no sign-separating v2~); UNDECIDED: none found */
    size_t par_head, par_coord; /* 1-based */
    char par_note[240];
    double *dep_vec;         /* the whole v / ||v|| of dep (dep_len = d entries; freed by
                                ac_t2_result_free) */
    size_t dep_len;
    ac_verdict v2null;       /* PROVED: (case 3) a v1 with U v1, A_i v1 nonzero and not
                                positively parallel, M_i v1 != 0, and Wv_i v2~ = 0 exactly
                                (the third gap, step 3.4) */
    size_t v2_head;          /* 1-based */
    size_t v2_dim;           /* dimension of the null space v1 was taken from */
    double v2_mnorm;         /* lower bound on ||M_i v1|| / ||v1|| */
    double v2_rounded;       /* ||Wv_i v2~|| at v1 rounded to double (nonzero, ~1e-16) */
    double *v2_v;            /* v1 / ||v1|| (v2_len = d entries; freed by ac_t2_result_free) */
    size_t v2_len;
    char v2_note[480];
    char note[240];
} ac_t2_audit;

typedef struct {
    ac_verdict verdict;      /* PROVED: separated at best.X; REFUTED: f_W = g_V identically
                                (exact, head-wise), or r(X) <= value_bound <= tol at every
                                X; UNDECIDED otherwise */
    ac_t2_hyp hyp;
    ac_t2_class cls;
    int identical;           /* f_W = g_V for every X with n tokens: 1 proved (n = 1: S_W =
                                S_V; n >= 2: the class-sum criterion, doc/mathematics.md
                                §4.9), 0 the criterion fails, -1 unknown */
    char identity_note[240]; /* how identical was decided */
    size_t n_tokens;         /* n */
    double tol;              /* the tolerance of "separated" (opts->tol) */
    ac_t2_sep best;          /* the best certified X; without one (X empty) best.cert is
                                the exact identity (REFUTED) or the most promising
                                failed attempt (UNDECIDED) */
    ac_t2_sep by_case;       /* the first certified X of the case's own construction */
    size_t ncand, ncert;     /* candidates evaluated / certified */
    size_t nreach;           /* of them within reach (ties, basis, scales; certified in
                                balls, not estimated: doc/mathematics.md §4.10) */
    int logits_pair;         /* 1: the logit matrices of the two layers pair up exactly
                                (they differ only in value paths); 0 no; -1 not decided */
    double value_bound;      /* layers that differ only in Wo (Wq, Wk, Wv equal): a certified
                                B >= r(X) for every X (doc/mathematics.md §4.10, "Within tol
                                at every X"); B <= tol gives REFUTED; NAN otherwise */
    long value_bound_prec;   /* bits of the Arb balls that certified it */
    double opt_from, opt_to; /* relative gap (estimate) before and after multimin; NAN if none */
    long opt_evals;          /* evaluations of the two layers by the multimin (each a forward
                                pass of both, with or without their backward passes) */
    ac_t2_step steps[AC_T2_MAX_STEPS];
    size_t nsteps;
    ac_t2_audit audit;
    char summary[640];
    double seconds;
} ac_t2_result;

/* The whole check: hypotheses, identity, case, constructions, search,
 * multimin, certificate, and (options) trace and audit.  W is a standard
 * MultiHead layer (W->hs * W->h == W->d), V a FixedMultiHead layer with the
 * same d and h; n >= 1 tokens.  AC_EDATA if the shapes do not fit
 * (ac_t2_validate with opts->wname, opts->vname).
 * res must be freed with ac_t2_result_free in every case.
 *
 * The work is fixed by the sizes and the options, never by timing or by
 * convergence: 3 tries (1 + nalpha) candidates (double forward passes and a
 * stage-0 certificate each), at most 5 candidates taken through the ball
 * stages of sched, and the multimin at most 5 optimize + 10 evaluations.
 * BLAS runs single-threaded for the duration (restored on return): the
 * check is many small products in a loop, where a thread pool waits for its
 * workers at every call -- a scheduler time slice each on a loaded machine --
 * and GSL's vector operations would otherwise make the search path depend
 * on the thread count.  The double passes use opts->threads (default 1).
 * The result is the same with any number of threads. */
int ac_t2_separate(ac_t2_result *res, const ac_mh *W, const ac_mh *V, size_t n,
                   const ac_t2_opts *opts, ac_err *err);
void ac_t2_result_free(ac_t2_result *res);

/* The verdict of the claim "the paper's own construction for case kase
 * proves Theorem 2 on this instance": PROVED when the instance is in case
 * kase (exactly), every hypothesis is proved and res->by_case is certified;
 * UNDECIDED otherwise (the instance lands in another case, a hypothesis is
 * not proved, or no X of the case's construction was certified). */
ac_verdict ac_t2_case_verdict(const ac_t2_result *res, ac_t2_case kase);

/* Shapes: W standard (hs = d/h), V with the same d and h.  AC_EDATA with a
 * message naming wname / vname. */
int ac_t2_validate(const ac_mh *W, const char *wname, const ac_mh *V, const char *vname,
                   ac_err *err);
/* The first check of ac_t2_validate alone: W is a standard MultiHead layer
 * (head size d/h); AC_EDATA with a message naming wname otherwise. */
int ac_t2_validate_w(const ac_mh *W, const char *wname, ac_err *err);

/* ---- building blocks ----------------------------------------------------- */

int ac_t2_hypotheses(ac_t2_hyp *hyp, const ac_mh *V, size_t n, ac_err *err);
/* Classify W against V (uses hyp->u_shared, computed here if hyp == NULL). */
int ac_t2_classify(ac_t2_class *cls, const ac_mh *W, const ac_mh *V, ac_err *err);
/* Exact head-wise identity: *same = 1 (f_W = g_V for every X), 0, or -1
 * (numbers too large to decide). */
int ac_t2_identical(int *same, const ac_mh *W, const ac_mh *V, ac_err *err);

/* X (d x n, zeroed; allocated here) by construction 1, 2 or 3 with the
 * generic vector `index` from seed; construction 3 uses alpha.  *head
 * (may be NULL) receives the head the argument uses.  AC_EUSAGE when the
 * construction needs more tokens (construction 3 needs n >= 2). */
int ac_t2_construct(ac_mat *X, int construction, const ac_mh *W, const ac_mh *V, size_t n,
                    uint64_t seed, size_t index, double alpha, size_t *head, ac_err *err);

/* Double-precision estimates of ||f_W(X) - g_V(X)||_F and of the relative
 * gap ||f-g||_F / (||f||_F + ||g||_F) (0 when both outputs are 0). */
int ac_t2_gap_approx(double *gap, double *rel, const ac_mh *W, const ac_mh *V, const ac_mat *X,
                     ac_err *err);

/* Certify "||f_W(X) - g_V(X)||_F > tol ||f_W(X)||_F" for s->X (tol >= 0,
 * finite; else AC_EUSAGE): fills s->cert (the quantity is the ratio
 * r = ||f - g||_F / ||f||_F), gap_lo, gap_hi, rel_lo, f_hi, g_hi.  sched
 * NULL = stage 0 only.  An X whose columns are all equal is certified
 * through f - g = (S_W - S_V) v 1' (uniform softmax, exact products), with
 * no logit formed (doc/mathematics.md §4.4). */
int ac_t2_certify(ac_t2_sep *s, const ac_mh *W, const ac_mh *V, const ac_schedule *sched,
                  double tol, ac_err *err);
void ac_t2_sep_free(ac_t2_sep *s);

/* ---- generators ---------------------------------------------------------- */

typedef enum {
    AC_T2_GEN_GAUSSIAN = 0, /* Gaussian parameters; heads share U through signed permutations */
    AC_T2_GEN_INTEGER = 1,  /* small dyadic integers: S_V and U exact in double */
    AC_T2_GEN_SKEW = 2      /* as INTEGER with U skew-symmetric (dp even) */
} ac_t2_gen;

/* g_V with d, h, dp satisfying (i) and (ii): Vo, Vv random; Vk_i = P_i Vk,
 * Vq_i = P_i Vq for random signed permutations P_i (P_1 = I), so that
 * U_i = Vk^T P_i^T P_i Vq = U exactly.  The integer kinds redraw until
 * rank S_V = d and rank Vk = rank Vq = dp hold exactly (AC_EDATA after 32
 * draws).  AC_EUSAGE: dp > d, or SKEW with dp odd. */
int ac_t2_generate_v(ac_mh *V, size_t d, size_t h, size_t dp, ac_t2_gen kind, uint64_t seed,
                     ac_err *err);

/* The kind of g_V that lets ac_t2_generate_w build case kase: INTEGER for
 * case 2, SKEW for case 3, GAUSSIAN otherwise. */
ac_t2_gen ac_t2_gen_for_case(int kase);

/* A random Gaussian standard MultiHead f_W (head size d/h): ac_mh_random
 * from the stream (seed, 2), the f_W of ac_t2_generate_w for cases 0 and 1.
 * AC_EUSAGE if h does not divide d. */
int ac_t2_random_w(ac_mh *W, size_t d, size_t h, uint64_t seed, ac_err *err);

/* f_W (head size d/h) for V falling in case `kase` (0 = random Gaussian,
 * which lands in case 1 unless S_V is very special):
 *   1: random Gaussian (S_W != S_V);
 *   2: Wv stacked = T, a random unimodular integer matrix, Wo_cat = S_V T^-1
 *      exactly (needs S_V exactly representable in double), random dyadic
 *      Wk, Wq;
 *   3: as 2 for Wv, Wo, and A_i = Wk_i^T Wq_i skew-symmetric (pairs of rows
 *      x y' - y x'; needs U skew-symmetric and shared); head 1 is built so
 *      that A_1 e_1 = U e_1, which makes v1 = e_1 a point where case 3's
 *      sign-separating v2~ does not exist (the second gap,
 *      doc/mathematics.md §4.7).
 * AC_EDATA with an explanation when V does not allow the case (the message
 * names the parameter kase, ac_err.fields); AC_EUSAGE if h does not divide
 * d.  The result is confirmed with ac_t2_classify by the callers and tests,
 * not assumed. */
int ac_t2_generate_w(ac_mh *W, const ac_mh *V, int kase, uint64_t seed, ac_err *err);

/* The inclusion F in G (dp >= d/h): V from W by padding each head with zero
 * rows/columns and rescaling the query by s = sqrt(dp/(d/h)), so that
 * Vk_i^T Vq_i / sqrt(dp) = Wk_i^T Wq_i / sqrt(d/h) in real arithmetic.  In
 * doubles: when s = p/2^k is dyadic and w(p) d/h <= dp, w(p) the number of
 * nonzero digits of the non-adjacent form of p (at most the binary digits
 * of p), one copy of the head's (Wk_i, +-2^e Wq_i) per digit, exact unless
 * a 2^e Wq entry over- or underflows; otherwise one copy with the query
 * multiplied by s (dyadic s: exact only where s Wq is a double) or by fl(s)
 * (irrational s: exact only in real arithmetic).  E.g. d = 128, h = 2,
 * dp = 121: s = 11/8 needs 3 x 64 rows > 121, so the query is rounded.
 * note (may be NULL, AC_T2_EMBED_NOTE_LEN bytes) receives how.  AC_EUSAGE
 * if dp < d/h. */
int ac_t2_embed(ac_mh *V, const ac_mh *W, size_t dp, char *note, size_t note_len, ac_err *err);
/* A note buffer that holds every note of ac_t2_embed. */
#define AC_T2_EMBED_NOTE_LEN 320

/* Default relative tolerance of the embedding check and of the separation:
 * half the digits of a double, as rep-theorem's AC_T1_TOL_DEFAULT.  With
 * the same tol, "separated" (some X has r(X) > tol) and the embedding
 * check (r(X_k) <= tol on the samples) are complementary claims about the
 * same quantity r = ||f_W(X) - g_V(X)||_F / ||f_W(X)||_F. */
#define AC_T2_TOL_DEFAULT 0x1p-26
#define AC_T2_EMBED_TOL_DEFAULT AC_T2_TOL_DEFAULT

/* The embedding check decides, on every sample input X_k,
 *
 *     ||g_V(X_k) - f_W(X_k)||_F <= tol ||f_W(X_k)||_F,
 *
 * i.e. the relative deviation r_k = ||g - f||_F / ||f||_F is at most tol.
 * r_k is enclosed by the verdict engine (stage 0: ac_mh_enclose of both
 * layers, the upper bound of ||g - f|| over a lower bound of ||f|| and vice
 * versa, directed rounding; then Arb balls of the quotient).  A sample where
 * g_V and f_W agree exactly, head by head (equal value paths and equal logit
 * matrices, decided on dyadic rationals), has r_k = 0 exactly, and when that
 * holds for every sample the certificate is exact.  A sample with f_W(X) = 0
 * and g_V(X) != 0 has r_k = +inf; one whose ||f_W(X)||_F cannot be certified
 * positive (and is not exactly equal) leaves the claim UNDECIDED. */
typedef struct {
    ac_verdict verdict;      /* PROVED: r_k <= tol on every sample (exact or certified);
                                REFUTED: a sample with certified r_k > tol; UNDECIDED */
    double tol;
    int exact;               /* 1: g_V(X) = f_W(X) exactly on every sample (r = 0) */
    int params_identical;    /* head-wise identity (=> every X): 1, 0, -1 unknown */
    int equal_functions;     /* the class-sum criterion (doc/mathematics.md §4.9; e.g. heads
                                in another order): 1 proved (every sample then counts as
                                exactly equal), 0 it fails, -1 unknown */
    size_t samples;
    size_t equal_samples;    /* equal exactly, head by head */
    size_t within_samples;   /* r_k <= tol proved (exactly or by the enclosure) */
    double rel_lo, rel_hi;   /* enclosure of max_k r_k: an exactly equal sample counts as 0,
                                the others by their certified enclosure (0, 0 when exact) */
    double diff_hi;          /* largest certified upper bound on ||g_V(X) - f_W(X)||_F over
                                every sample (for the exactly equal ones a cross-check of
                                the identity by the enclosures) */
    size_t refuted_sample;   /* first sample with certified r_k > tol (1-based), 0 if none */
    size_t undecided_sample; /* first sample neither proved nor refuted, 0 if none */
    ac_cert cert;            /* "max_k r_k <= tol": exact (0, every sample equal), the
                                enclosure of max_k r_k, or the refuting sample's enclosure */
    char summary[400];
} ac_t2_embed_result;

/* Sample input k of the embedding check: X (d x n, zeroed; allocated here)
 * i.i.d. N(0, 1) from the stream (seed, 301, k). */
int ac_t2_sample_input(ac_mat *X, size_t d, size_t n, uint64_t seed, size_t k, ac_err *err);

/* The embedding check (see above) on `samples` inputs X (ac_t2_sample_input
 * k = 0, 1, ...), with relative tolerance tol >= 0 (AC_T2_EMBED_TOL_DEFAULT
 * is the documented default) and the ball stages of sched (NULL or empty:
 * stage 0 only); also the parameter identity.  AC_EUSAGE: n = 0, no
 * samples, tol < 0, infinite or NaN; AC_EDATA: d or h differ. */
int ac_t2_embed_check(ac_t2_embed_result *r, const ac_mh *W, const ac_mh *V, size_t n,
                      size_t samples, uint64_t seed, double tol, const ac_schedule *sched,
                      ac_err *err);

const char *ac_t2_case_name(ac_t2_case c);
const char *ac_t2_construction_name(int construction);

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_THEOREM2_H */
