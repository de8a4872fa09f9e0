/* search.c — Theorem 2 of paper 1 on one pair of layers (ac_t2_separate;
 * doc/mathematics.md §4.10): the hypotheses, the identity and the case
 * (hypotheses.c), then the search for a separating X in named steps:
 *   search_constructions   the three constructions with several generic vectors
 *   search_stage0          a stage-0 certificate of each candidate
 *   search_case_full       the case's own construction through the ball stages
 *   search_multimin        BFGS on the relative gap from the best X so far
 *   search_full_precision  the best estimates through the ball stages
 *   search_reach           what double estimates cannot see: near-ties at
 *                          saturating scales, heads' own scales, basis
 *                          vectors, through the ball stages (reach.c)
 *   search_conclude        the verdict and the certified X
 * and, when asked, the trace of the case's construction and the audit;
 * write_summary says what was shown. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/blas.h"
#include "t2_impl.h"

void ac_t2_opts_default(ac_t2_opts *o)
{
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->tries = 3;
    o->nalpha = 4;
    o->alpha[0] = 1;
    o->alpha[1] = 4;
    o->alpha[2] = 16;
    o->alpha[3] = 64;
    o->optimize = 60;
    o->sched = ac_schedule_default();
    o->threads = 1;
    o->tol = AC_T2_TOL_DEFAULT;
    o->wname = "f_W";
    o->vname = "g_V";
}

/* ---- candidates ----------------------------------------------------------- */

typedef struct {
    ac_t2_sep *v;
    size_t n, cap;
} cand_list;

static ac_t2_sep *cand_push(cand_list *l)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        ac_t2_sep *nv = realloc(l->v, cap * sizeof *nv);
        if (!nv)
            return NULL;
        l->v = nv;
        l->cap = cap;
    }
    ac_t2_sep *s = &l->v[l->n++];
    memset(s, 0, sizeof *s);
    s->cert.verdict = AC_UNDECIDED;
    s->cert.stage = AC_STAGE_NONE;
    return s;
}

static void cand_free(cand_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        ac_t2_sep_free(&l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

/* a certified candidate a beats b */
static int better(const ac_t2_sep *a, const ac_t2_sep *b)
{
    if (a->cert.verdict != AC_PROVED)
        return 0;
    if (!b || b->cert.verdict != AC_PROVED)
        return 1;
    return a->rel_lo > b->rel_lo;
}

static int sep_copy(ac_t2_sep *dst, const ac_t2_sep *src, ac_err *err)
{
    *dst = *src;
    dst->X.data = NULL;
    return ac_mat_copy(&dst->X, &src->X, err);
}

/* ---- the steps of the search ---------------------------------------------- */

/* The state of one search: the candidates, the double workspace, the best
 * certified candidate and the best of the case's own construction (both
 * point into L, which moves when it grows). */
typedef struct {
    ac_t2_result *res;
    const ac_mh *W, *V;
    const ac_mh *Wd, *Vd; /* the layers of the double estimates (W, V, or both with Wo
                             scaled by one power of two: estimate_scale) */
    size_t n;
    const ac_t2_opts *o;
    int threads, kase;
    cand_list L;
    t2_gap_ws g;
    ac_t2_sep *best, *bycase;
} t2_search;

/* 1. the three constructions (paper 1, Theorem 2, cases 1-3) with o->tries
 *    generic vectors each, construction 3 with every alpha */
static int search_constructions(t2_search *s, ac_err *err)
{
    const ac_t2_opts *o = s->o;
    int st;
    for (int con = AC_T2_CON_1; con <= AC_T2_CON_3; con++) {
        if (con == AC_T2_CON_3 && s->n < 2)
            continue;
        size_t na = con == AC_T2_CON_3 ? (o->nalpha ? o->nalpha : 1) : 1;
        for (size_t k = 0; k < o->tries; k++)
            for (size_t ia = 0; ia < na; ia++) {
                ac_t2_sep *c = cand_push(&s->L);
                if (!c)
                    return ac_err_set(err, AC_EINTERNAL, "out of memory");
                c->construction = con;
                c->index = k;
                c->alpha = con == AC_T2_CON_3 ? (o->nalpha ? o->alpha[ia] : 1.0) : 0.0;
                if ((st = ac_t2_construct(&c->X, con, s->W, s->V, s->n, o->seed, k, c->alpha,
                                          &c->head, err)))
                    return st;
                c->est_rel = t2_gap_eval(&s->g, &c->X, &c->est_gap, NULL, NULL);
            }
    }
    s->res->ncand = s->L.n;
    return AC_OK;
}

/* 2. stage-0 certificates (cheap); a candidate whose estimate is 0 cannot be
 *    separated and is skipped */
static int search_stage0(t2_search *s, ac_err *err)
{
    int st;
    for (size_t i = 0; i < s->L.n; i++) {
        ac_t2_sep *c = &s->L.v[i];
        if (c->est_gap == 0) /* NaN / inf (overflow in double) are still tried */
            continue;
        if ((st = ac_t2_certify(c, s->W, s->V, NULL, s->o->tol, err)))
            return st;
        if (c->cert.verdict == AC_PROVED) {
            s->res->ncert++;
            if (better(c, s->best))
                s->best = c;
            if (c->construction == s->kase && better(c, s->bycase))
                s->bycase = c;
        }
    }
    return AC_OK;
}

/* 3. the case's own construction through the ball stages if stage 0 failed */
static int search_case_full(t2_search *s, ac_err *err)
{
    ac_t2_sep *top = NULL;
    int st;
    if (s->kase < 1 || s->kase > 3 || s->bycase)
        return AC_OK;
    for (size_t i = 0; i < s->L.n; i++)
        if (s->L.v[i].construction == s->kase && s->L.v[i].est_gap != 0 &&
            (!top || s->L.v[i].est_rel > top->est_rel))
            top = &s->L.v[i];
    if (!top)
        return AC_OK;
    if ((st = ac_t2_certify(top, s->W, s->V, &s->o->sched, s->o->tol, err)))
        return st;
    if (top->cert.verdict == AC_PROVED) {
        s->res->ncert++;
        s->bycase = top;
        if (better(top, s->best))
            s->best = top;
    } else {
        top->est_gap = 0; /* every stage tried */
    }
    return AC_OK;
}

/* The starting point of the multimin: the best certified X, else the best
 * estimate, else a Gaussian X from the stream (seed, 204, 0). */
static int multimin_start(ac_mat *X0, const t2_search *s, ac_err *err)
{
    const ac_t2_sep *from = s->best;
    if (!from)
        for (size_t i = 0; i < s->L.n; i++)
            if (s->L.v[i].est_rel > 0 && (!from || s->L.v[i].est_rel > from->est_rel))
                from = &s->L.v[i];
    if (from)
        return ac_mat_copy(X0, &from->X, err);
    int st = ac_mat_init(X0, s->W->d, s->n, err);
    if (!st)
        t2_rng_vec(X0->data, s->W->d * s->n, s->o->seed, T2_STREAM_CON + AC_T2_CON_OPT, 0);
    return st;
}

/* the multimin's X, certified at stage 0 and then through the ball stages */
static int certify_multimin(t2_search *s, ac_t2_sep *c, ac_err *err)
{
    int st;
    c->est_rel = t2_gap_eval(&s->g, &c->X, &c->est_gap, NULL, NULL);
    if (!(c->est_gap > 0))
        return AC_OK;
    if ((st = ac_t2_certify(c, s->W, s->V, NULL, s->o->tol, err)))
        return st;
    if (c->cert.verdict != AC_PROVED && (st = ac_t2_certify(c, s->W, s->V, &s->o->sched, s->o->tol, err)))
        return st;
    if (c->cert.verdict == AC_PROVED)
        s->res->ncert++;
    else
        c->est_gap = 0; /* every stage tried */
    return AC_OK;
}

/* 4. multimin on the relative gap, from the best X so far (copied: the
 *    candidate array may move when the result is appended); then the best
 *    and the case's best again, as the array moved */
static int search_multimin(t2_search *s, ac_err *err)
{
    ac_t2_result *res = s->res;
    ac_mat X0 = {0};
    int st;
    if (s->o->optimize <= 0)
        return AC_OK;
    if ((st = multimin_start(&X0, s, err)))
        return st;
    double g0, r0 = t2_gap_eval(&s->g, &X0, &g0, NULL, NULL);
    ac_t2_sep *c = cand_push(&s->L);
    if (!c) {
        ac_mat_free(&X0);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    c->construction = AC_T2_CON_OPT;
    double r1 = t2_maximise_gap(&c->X, s->Wd, s->Vd, &X0, s->o->optimize, s->threads,
                                &res->opt_evals, NULL);
    ac_mat_free(&X0);
    if (r1 >= 0 && c->X.data) {
        res->opt_from = r0;
        res->opt_to = r1;
        res->ncand++;
        if ((st = certify_multimin(s, c, err)))
            return st;
    }
    s->best = s->bycase = NULL;
    for (size_t i = 0; i < s->L.n; i++) {
        ac_t2_sep *ci = &s->L.v[i];
        if (ci->cert.verdict != AC_PROVED)
            continue;
        if (better(ci, s->best))
            s->best = ci;
        if (ci->construction == s->kase && better(ci, s->bycase))
            s->bycase = ci;
    }
    return AC_OK;
}

/* 5. nothing certified at stage 0: the best estimates through the ball
 *    stages (at most 3) */
static int search_full_precision(t2_search *s, ac_err *err)
{
    int st;
    for (int rep = 0; rep < 3 && !s->best; rep++) {
        ac_t2_sep *top = NULL;
        for (size_t i = 0; i < s->L.n; i++) {
            ac_t2_sep *c = &s->L.v[i];
            if (c->est_gap != 0 && c->cert.verdict != AC_PROVED &&
                (!top || c->est_rel > top->est_rel))
                top = c;
        }
        if (!top)
            break;
        if ((st = ac_t2_certify(top, s->W, s->V, &s->o->sched, s->o->tol, err)))
            return st;
        if (top->cert.verdict == AC_PROVED) {
            s->res->ncert++;
            s->best = top;
            if (top->construction == s->kase)
                s->bycase = top;
        } else {
            top->est_gap = 0; /* do not retry */
        }
    }
    return AC_OK;
}

/* 6. nothing certified yet: the candidates the double estimates cannot see
 *    (reach.c), each certified through the ball stages, in their fixed
 *    order and by groups (the ties, then the basis vectors and scales): the
 *    best of the first group that certifies one */
static int search_reach(t2_search *s, ac_err *err)
{
    t2_reach_list rl;
    int st = t2_reach_build(&rl, s->W, s->V, s->n, s->o->seed, err);
    for (size_t k = 0; st == AC_OK && k < rl.n; k++) {
        if (s->best && k > 0 && (rl.v[k].kind != AC_T2_CON_TIE || rl.v[k - 1].kind != AC_T2_CON_TIE))
            break; /* a group proved one: done */
        ac_t2_sep *c = cand_push(&s->L);
        if (!c) {
            st = ac_err_set(err, AC_EINTERNAL, "out of memory");
            break;
        }
        c->construction = rl.v[k].kind;
        c->head = rl.v[k].head;
        c->index = (size_t)rl.v[k].which;
        c->X = rl.v[k].X;
        rl.v[k].X.data = NULL;
        c->est_rel = c->est_gap = NAN; /* not estimated: doubles cannot see it */
        s->res->ncand++;
        s->res->nreach++;
        if ((st = ac_t2_certify(c, s->W, s->V, &s->o->sched, s->o->tol, err)))
            break;
        if (c->cert.verdict == AC_PROVED) {
            s->res->ncert++;
            s->best = NULL; /* the list may have moved: found again below */
        } else {
            c->est_gap = 0; /* every stage tried */
        }
        for (size_t i = 0; i < s->L.n; i++)
            if (better(&s->L.v[i], s->best))
                s->best = &s->L.v[i];
    }
    t2_reach_free(&rl);
    return st;
}

/* 7. PROVED with the best certified X; without one, the certificate of the
 *    most promising attempt, and REFUTED only for an exact identity */
static int search_conclude(t2_search *s, ac_err *err)
{
    ac_t2_result *res = s->res;
    int st;
    if (s->best) {
        res->verdict = AC_PROVED;
        if ((st = sep_copy(&res->best, s->best, err)))
            return st;
    } else {
        const ac_t2_sep *top = NULL;
        for (size_t i = 0; i < s->L.n; i++)
            if (s->L.v[i].cert.stage != AC_STAGE_NONE &&
                (!top || s->L.v[i].est_rel > top->est_rel))
                top = &s->L.v[i];
        if (top)
            res->best.cert = top->cert;
        if (res->identical == 1)
            res->verdict = AC_REFUTED;
    }
    if (s->bycase && (st = sep_copy(&res->by_case, s->bycase, err)))
        return st;
    return AC_OK;
}

/* The search proper: steps 1 to 7. */
static int search_run(t2_search *s, ac_err *err)
{
    int st;
    if ((st = search_constructions(s, err)) || (st = search_stage0(s, err)) ||
        (st = search_case_full(s, err)) || (st = search_multimin(s, err)))
        return st;
    if (!s->best && (st = search_full_precision(s, err)))
        return st;
    if (!s->best && (st = search_reach(s, err)))
        return st;
    return search_conclude(s, err);
}

/* ---- after the search: trace, audit, summary ------------------------------ */

/* The trace of the case's construction: its certified X, else its best
 * estimate. */
static int search_trace(t2_search *s, ac_err *err)
{
    const ac_t2_sep *tc = s->res->by_case.X.data ? &s->res->by_case : NULL;
    if (s->kase < 1 || s->kase > 3)
        return AC_OK;
    if (!tc)
        for (size_t i = 0; i < s->L.n; i++)
            if (s->L.v[i].construction == s->kase && (!tc || s->L.v[i].est_rel > tc->est_rel))
                tc = &s->L.v[i];
    return tc ? t2_trace(s->res, s->W, s->V, tc, err) : AC_OK;
}

/* The audit at the generic v of the case's certified X (cases 2 and 3), else
 * of construction 2 with the first vector. */
static int search_audit(t2_search *s, ac_err *err)
{
    ac_t2_result *res = s->res;
    const ac_mat *Xg = NULL;
    ac_mat Xv = {0};
    if (res->by_case.X.data && (s->kase == 2 || s->kase == 3))
        Xg = &res->by_case.X;
    if (!Xg && ac_t2_construct(&Xv, AC_T2_CON_2, s->W, s->V, s->n, s->o->seed, 0, 1.0, NULL,
                               NULL) == AC_OK)
        Xg = &Xv;
    int st = t2_run_audit(res, s->W, s->V, Xg, err);
    ac_mat_free(&Xv);
    return st;
}

static const char *verdict_word(ac_verdict v)
{
    return v == AC_PROVED ? "holds" : v == AC_REFUTED ? "fails" : "undecided";
}

static void failing_hypotheses(char *buf, size_t n, const ac_t2_hyp *hy)
{
    size_t k = 0;
    buf[0] = '\0';
    const char *names[4] = {"the sizes", "rank S_V = d", "U_i = U for every head", "rank U = dp"};
    ac_verdict v[4] = {hy->sizes, hy->sv_rank, hy->u_shared, hy->u_rank};
    for (int i = 0; i < 4; i++)
        if (v[i] != AC_PROVED && k < n)
            k += (size_t)snprintf(buf + k, n - k, "%s%s %s", k ? ", " : "", names[i],
                                  verdict_word(v[i]) );
}

/* res->summary: what the verdict means for Theorem 2, given its hypotheses */
static void write_summary(ac_t2_result *res, double tol)
{
    char fails[200], b1[AC_FMT_BOUND_BUFSIZE], b2[AC_FMT_BOUND_BUFSIZE], bt[32];
    char bb[AC_FMT_BOUND_BUFSIZE];
    failing_hypotheses(fails, sizeof fails, &res->hyp);
    ac_str_hi(bb, ".3g", res->value_bound);
    ac_str_lo(b1, ".3g", res->best.gap_lo);
    ac_str_lo(b2, ".3g", res->best.cert.lo);
    snprintf(bt, sizeof bt, "%.3g", tol);
    if (res->verdict == AC_PROVED && res->hyp.applies == AC_PROVED)
        snprintf(res->summary, sizeof res->summary,
                 "Theorem 2's hypotheses are proved (its conclusion: every f_W is separated "
                 "from this g_V); checked for this f_W: ||f_W(X) - g_V(X)||_F >= %s and >= %s "
                 "||f_W(X)||_F > tol ||f_W(X)||_F, tol = %s, at the X found (%s; best X from "
                 "%s)", b1, b2, bt, ac_t2_case_name(res->cls.kase),
                 ac_t2_construction_name(res->best.construction));
    else if (res->verdict == AC_PROVED)
        snprintf(res->summary, sizeof res->summary,
                 "f_W is separated from g_V at the X found (||f_W(X) - g_V(X)||_F >= %s "
                 "||f_W(X)||_F > tol ||f_W(X)||_F, tol = %s): a fact about these two layers; "
                 "Theorem 2 itself says nothing here, because its hypotheses are not all "
                 "proved (%.90s)", b2, bt, fails);
    else if (res->verdict == AC_REFUTED && res->identical != 1)
        snprintf(res->summary, sizeof res->summary,
                 "no X separates f_W from g_V beyond tol = %s: they differ only in the output "
                 "projection (Wq, Wk, Wv equal), and r(X) = ||f_W(X) - g_V(X)||_F / "
                 "||f_W(X)||_F <= ||(Vo - Wo) Wo^+||_F <= %s at every X (doc/mathematics.md "
                 "§4.10); they are not the same function (%.200s)", bt, bb, res->identity_note);
    else if (res->verdict == AC_REFUTED)
        snprintf(res->summary, sizeof res->summary,
                 "no X separates f_W from g_V: they are the same function (%.320s); %s",
                 res->identity_note, res->hyp.applies == AC_PROVED
                     ? "this contradicts Theorem 2, whose hypotheses were proved: report a bug"
                     : "consistent with Theorem 2, whose hypotheses fail");
    else if (res->hyp.applies == AC_PROVED)
        snprintf(res->summary, sizeof res->summary,
                 "the theorem's hypotheses hold, so some X has f_W(X) != g_V(X), but none of "
                 "the %zu candidates was certified with ||f_W(X) - g_V(X)||_F > tol "
                 "||f_W(X)||_F, tol = %s (the differences may all be below tol, or below what "
                 "the precision schedule resolves)", res->ncand, bt);
    else if (res->logits_pair == 1 && res->identical == 0)
        snprintf(res->summary, sizeof res->summary,
                 "no X certified with r(X) > tol = %s among %zu candidates: the logit "
                 "matrices pair up exactly, so the layers differ only in value paths and r(X) "
                 "stays of their size unless f_W's heads cancel at X; none found, and %s "
                 "(doc/mathematics.md §4.10)", bt, res->ncand,
                 isnan(res->value_bound) ? "no bound over all X is proved"
                                         : "the bound over all X proved is above tol");
    else
        snprintf(res->summary, sizeof res->summary,
                 "no X was certified with ||f_W(X) - g_V(X)||_F > tol ||f_W(X)||_F (tol = %s) "
                 "among %zu candidates; the hypotheses of Theorem 2 are not all proved (%.80s); "
                 "%s", bt, res->ncand, fails,
                 res->identical == 0 && res->n_tokens == 1
                     ? "S_W != S_V exactly, so f_W != g_V, but the difference was not certified "
                       "above tol"
                     : "f_W and g_V may be equal; that is not concluded from a failed search");
}

/* ---- double estimates at any scale ---------------------------------------- */

/* log2 of the largest |Wo_i| |Wv_i| (entries) of a layer; -inf for 0 */
static double lg_value(const ac_mh *L)
{
    double best = -INFINITY;
    size_t d = L->d, hs = L->hs, hh = L->h * hs;
    for (size_t i = 0; i < L->h; i++) {
        double o = 0, v = 0;
        for (size_t r = 0; r < d; r++)
            for (size_t c = 0; c < hs; c++)
                o = fmax(o, fabs(L->wo[r * hh + i * hs + c]));
        for (size_t k = 0; k < hs * d; k++)
            v = fmax(v, fabs(L->wv[i * hs * d + k]));
        if (o > 0 && v > 0 && isfinite(o) && isfinite(v))
            best = fmax(best, log2(o) + log2(v));
    }
    return best;
}

/* Outputs are linear in Wo: f with Wo scaled by 2^k is 2^k f, and the ratios
 * the search maximises do not change.  When the value paths are so small or
 * large that the double outputs would underflow or overflow (outputs near
 * 1e-320 or 1e300), the double estimates run on copies with Wo of both
 * layers scaled by one power of two that brings the largest |Wo_i||Wv_i| to
 * about 1; the certificates always use the given layers (their ball stages
 * have no exponent range).  *scaled = 1 when Ws, Vs were filled (the
 * caller frees them). */
static int estimate_scale(int *scaled, ac_mh *Ws, ac_mh *Vs, const ac_mh *W, const ac_mh *V,
                          ac_err *err)
{
    double lg = fmax(lg_value(W), lg_value(V));
    int st;
    *scaled = 0;
    if (!isfinite(lg) || fabs(lg) < 256)
        return AC_OK;
    int k = (int)-lround(lg);
    if ((st = ac_mh_copy(Ws, W, err)))
        return st;
    if ((st = ac_mh_copy(Vs, V, err))) {
        ac_mh_free(Ws);
        return st;
    }
    *scaled = 1;
    for (size_t t = 0; t < W->d * W->h * W->hs; t++)
        Ws->wo[t] = ldexp(Ws->wo[t], k);
    for (size_t t = 0; t < V->d * V->h * V->hs; t++)
        Vs->wo[t] = ldexp(Vs->wo[t], k);
    return AC_OK;
}

/* ---- ac_t2_separate ------------------------------------------------------- */

static void result_init(ac_t2_result *res)
{
    memset(res, 0, sizeof *res);
    res->verdict = AC_UNDECIDED;
    res->identical = -1;
    res->logits_pair = -1;
    res->value_bound = NAN;
    res->opt_from = res->opt_to = NAN;
    res->best.cert.verdict = res->by_case.cert.verdict = AC_UNDECIDED;
    res->best.cert.stage = res->by_case.cert.stage = AC_STAGE_NONE;
}

/* The exact decisions: shapes, hypotheses, identity, case. */
static int decide_exactly(ac_t2_result *res, const ac_mh *W, const ac_mh *V, size_t n,
                          const ac_t2_opts *o, ac_err *err)
{
    int st;
    if ((st = ac_t2_validate(W, o->wname ? o->wname : "f_W", V, o->vname ? o->vname : "g_V",
                             err)))
        return st;
    if (n == 0)
        return ac_err_set(err, AC_EUSAGE, "X needs n >= 1 tokens");
    if (!(o->tol >= 0) || !isfinite(o->tol))
        return ac_err_set(err, AC_EUSAGE, "separation: tolerance %g must be finite and >= 0",
                          o->tol);
    res->n_tokens = n;
    res->tol = o->tol;
    if ((st = ac_t2_hypotheses(&res->hyp, V, n, err)) ||
        (st = ac_t2_classify(&res->cls, W, V, err)))
        return st;
    if (t2_equal_functions(&res->identical, W, V, n, res->identity_note,
                           sizeof res->identity_note, &res->logits_pair))
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    if (res->identical == 0)
        res->value_bound = t2_wo_bound(W, V, &res->value_bound_prec);
    return AC_OK;
}

static int separate(ac_t2_result *res, const ac_mh *W, const ac_mh *V, size_t n,
                    const ac_t2_opts *opts, int threads, ac_err *err)
{
    ac_t2_opts defaults;
    t2_search s;
    ac_mh Ws = {0}, Vs = {0};
    int st, have_g = 0, scaled = 0;
    double t0 = ac_seconds();
    result_init(res);
    if (!opts) {
        ac_t2_opts_default(&defaults);
        opts = &defaults;
    }
    if ((st = decide_exactly(res, W, V, n, opts, err)))
        return st;
    memset(&s, 0, sizeof s);
    s.res = res;
    s.W = s.Wd = W;
    s.V = s.Vd = V;
    s.n = n;
    s.o = opts;
    s.threads = threads;
    s.kase = (int)res->cls.kase;
    if ((res->identical == 1 || res->value_bound <= opts->tol) && !opts->search_if_identical) {
        res->verdict = AC_REFUTED; /* no X can be certified: nothing to search */
    } else {
        if ((st = estimate_scale(&scaled, &Ws, &Vs, W, V, err)))
            goto out;
        if (scaled) {
            s.Wd = &Ws;
            s.Vd = &Vs;
        }
        if ((st = t2_gap_ws_init(&s.g, s.Wd, s.Vd, n, threads, err)))
            goto out;
        have_g = 1;
        if ((st = search_run(&s, err)))
            goto out;
    }
    if (res->verdict == AC_PROVED && !(res->best.cert.lo <= res->value_bound) &&
        !isnan(res->value_bound)) {
        st = ac_err_set(err, AC_EINTERNAL,
                        "separation: r(X) >= %g certified above the bound %g over all X "
                        "(a bug: doc/mathematics.md §4.10)", res->best.cert.lo, res->value_bound);
        goto out;
    }
    if (res->verdict == AC_REFUTED && res->identical != 1)
        ac_cert_set(&res->best.cert, "sup over X of ||f_W(X) - g_V(X)||_F / ||f_W(X)||_F",
                    AC_GT, opts->tol, 1, res->value_bound_prec, 0.0, res->value_bound,
                    "bound over all X: ||(Vo - Wo) Wo^+||_F in Arb balls from the exact "
                    "doubles (Wq, Wk, Wv equal)");
    else if (res->verdict == AC_REFUTED)
        ac_cert_set(&res->best.cert, "||f_W(X) - g_V(X)||_F / ||f_W(X)||_F for every X",
                    AC_GT, opts->tol,
                    AC_STAGE_EXACT, 0, 0.0, 0.0,
                    res->n_tokens == 1 ? "exact: n = 1 and S_W = S_V (dyadic rationals)"
                    : "exact class sums of value paths over equal logits (dyadic rationals)");
    if ((opts->trace && (st = search_trace(&s, err))) ||
        (opts->audit && (st = search_audit(&s, err))))
        goto out;
    write_summary(res, opts->tol);
out:
    if (have_g)
        t2_gap_ws_free(&s.g);
    if (scaled) {
        ac_mh_free(&Ws);
        ac_mh_free(&Vs);
    }
    cand_free(&s.L);
    res->seconds = ac_seconds() - t0;
    return st;
}

/* The check runs with single-threaded BLAS.  It is made of many small
 * products in a loop, and a thread pool (OpenBLAS's, or OpenMP's in
 * ac_mh_forward) makes each parallel call wait for its workers: on a loaded
 * machine a descheduled worker costs a scheduler time slice per call, which
 * turned a 0.25 s search into 5.3 s with 4 busy processes on 2 cores.  And
 * the vector operations of GSL's BFGS go through the CBLAS, whose threaded
 * dot products would make the search path depend on the thread count.  The
 * double forward and backward passes use opts->threads threads (default 1;
 * their result does not depend on it). */
int ac_t2_separate(ac_t2_result *res, const ac_mh *W, const ac_mh *V, size_t n,
                   const ac_t2_opts *opts, ac_err *err)
{
    int old = ac_blas_get_threads();
    int threads = opts ? (opts->threads > 0 ? opts->threads : old) : 1;
    ac_blas_set_threads(1);
    int st = separate(res, W, V, n, opts, threads, err);
    ac_blas_set_threads(old);
    return st;
}

void ac_t2_result_free(ac_t2_result *res)
{
    if (!res)
        return;
    ac_t2_sep_free(&res->best);
    ac_t2_sep_free(&res->by_case);
    free(res->audit.dep_vec);
    free(res->audit.v2_v);
    res->audit.dep_vec = res->audit.v2_v = NULL;
}

ac_verdict ac_t2_case_verdict(const ac_t2_result *res, ac_t2_case kase)
{
    if (res->cls.kase != kase || res->hyp.applies != AC_PROVED || !res->by_case.X.data)
        return AC_UNDECIDED;
    return res->by_case.cert.verdict;
}
