/* separate_text.c — the text report of `attncheck separate` (separate.h):
 * the instance, the hypotheses, the case, the search, the trace and the
 * audit, the verdict (sep_print); of --embed (sep_print_embed); and the
 * table of --student (sep_print_student).  Every verdict and comparison
 * printed is the library's result. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "separate.h"

/* a certified bound to 3 digits, rounded outward (ac_str_lo, ac_str_hi) */
#define NUM_LO(b, x) ac_str_lo(b, ".3g", x)
#define NUM_HI(b, x) ac_str_hi(b, ".3g", x)

static void print_sep(const char *label, const ac_t2_sep *s)
{
    char b1[AC_FMT_BOUND_BUFSIZE], b2[AC_FMT_BOUND_BUFSIZE], sb[64];
    printf("%-10s %s", label, ac_t2_construction_name(s->construction));
    if (s->construction == AC_T2_CON_2 || s->construction == AC_T2_CON_3)
        printf(", head %zu", s->head);
    if (s->construction == AC_T2_CON_3)
        printf(", alpha %g", s->alpha);
    if (s->construction >= AC_T2_CON_1 && s->construction <= AC_T2_CON_3)
        printf(", vector %zu", s->index + 1);
    printf("\n           ||f_W(X) - g_V(X)||_F in [%s, %s], ", NUM_LO(b1, s->gap_lo),
           NUM_HI(b2, s->gap_hi));
    printf("ratio to ||f_W(X)||_F in [%s, %s]  (%s)\n", NUM_LO(b1, s->cert.lo),
           NUM_HI(b2, s->cert.hi),
           ac_stage_name(sb, sizeof sb, s->cert.stage, s->cert.prec));
}

static void print_hypotheses(const ac_t2_hyp *hyp)
{
    printf("hypotheses of Theorem 2\n");
    printf("  sizes    %-9s  %s\n", ac_verdict_name(hyp->sizes), hyp->sizes_note);
    printf("  S_V      %-9s  rank S_V = d = %zu", ac_verdict_name(hyp->sv_rank), hyp->d);
    if (hyp->sv_rank == AC_REFUTED)
        printf(" fails: rank %ld", hyp->sv_rank_value);
    printf(" (%s)\n", hyp->sv_method);
    printf("  U        %-9s  Vk_i'Vq_i = U for every head", ac_verdict_name(hyp->u_shared));
    if (hyp->u_shared == AC_REFUTED)
        printf(" fails at head %zu", hyp->u_first_bad);
    printf(" (exact comparison)\n");
    printf("  rank U   %-9s  rank U = dp = %zu", ac_verdict_name(hyp->u_rank), hyp->dp);
    if (hyp->u_rank == AC_REFUTED && hyp->u_rank_value >= 0)
        printf(" fails: rank %ld", hyp->u_rank_value);
    printf(" (%s)\n", hyp->u_method);
    printf("  theorem  %-9s  %s\n", ac_verdict_name(hyp->applies),
           hyp->applies == AC_PROVED ? "applies: for every f_W some X separates f_W from g_V"
                                     : "the hypotheses are not all proved: the theorem says "
                                       "nothing about this g_V");
}

/* the case, the identity, the case's X, the search and the best X */
static void print_search(const ac_sep_request *q, const ac_t2_result *r)
{
    char e1[AC_FMT_BOUND_BUFSIZE], e2[AC_FMT_BOUND_BUFSIZE];
    printf("case       %s\n           %s\n", ac_t2_case_name(r->cls.kase), r->cls.note);
    printf("identity   %s\n", r->identity_note);
    if (r->by_case.X.data)
        print_sep("case X", &r->by_case);
    if (r->verdict != AC_REFUTED || r->ncand) {
        printf("search     %zu candidates (3 constructions x %zu vectors%s", r->ncand, q->tries,
               q->optimize ? ", multimin" : "");
        if (r->nreach)
            printf(", %zu within reach", r->nreach);
        printf("), %zu certified", r->ncert);
        if (!isnan(r->opt_from))
            printf("; multimin: relative gap ||f-g||/(||f||+||g||), estimated, %s -> %s (%ld "
                   "evaluations)", NUM_LO(e1, r->opt_from), NUM_LO(e2, r->opt_to), r->opt_evals);
        printf("\n");
    }
    if (r->best.X.data)
        print_sep("best X", &r->best);
}

static void print_trace(const ac_t2_result *r)
{
    printf("trace (%s)\n", ac_t2_case_name(r->cls.kase));
    if (!r->nsteps)
        printf("  no steps: %s\n",
               r->verdict == AC_REFUTED
                   ? (r->identical == 1 ? "f_W = g_V as functions, so no construction was tried"
                                        : "r(X) <= tol at every X (a bound), so no construction "
                                          "was tried")
                   : (r->cls.kase >= AC_T2_CASE_1 && r->cls.kase <= AC_T2_CASE_3)
                         ? "no candidate of the case's construction"
                         : "the instance is in none of the paper's three cases");
    cli_print_steps(r->steps, r->nsteps);
}

static void print_audit(const ac_t2_result *r)
{
    const ac_t2_audit *au = &r->audit;
    printf("audit (the three gaps of the paper's proof, doc/mathematics.md §4.7)\n");
    printf("  gap 1    %-9s  ", ac_verdict_name(au->dep));
    if (au->dep == AC_PROVED) {
        printf("v != 0 with Wv_%zu v = 0 exactly (integer v, %ld-bit entries; v/|v| starts",
               au->dep_head, au->dep_bits);
        for (size_t i = 0; i < au->dep_nshow; i++)
            printf(" %.3g", au->dep_v[i]);
        printf(")\n           so Wo_%zu Wv_%zu v = 0 and {Wo_i Wv_i v} is linearly dependent: "
               "\"for any v != 0 ... independent\" fails\n", au->dep_head, au->dep_head);
    } else {
        printf("%s\n", au->note);
    }
    printf("  generic  %-9s  the v the construction uses: sigma_h([Wo_i Wv_i v]) >= %.3g\n",
           ac_verdict_name(au->indep), au->indep_sigma_lo);
    printf("  gap 2    %-9s  %s\n", ac_verdict_name(au->parallel), au->par_note);
    printf("  gap 3    %-9s  %s\n", ac_verdict_name(au->v2null), au->v2_note);
    if (au->v2null == AC_PROVED && au->v2_v) {
        printf("           v1/|v1| starts");
        for (size_t i = 0; i < au->v2_len && i < 8; i++)
            printf(" %.3g", au->v2_v[i]);
        printf("%s\n", au->v2_len > 8 ? " ... (all of it in --json)" : "");
    }
    if (r->verdict == AC_PROVED)
        printf("           the theorem still holds here: f_W(X) != g_V(X) is certified "
               "above for a generic X\n");
}

static void print_verdict(const ac_t2_result *r)
{
    char b1[AC_FMT_BOUND_BUFSIZE], sb[64];
    const ac_cert *c = r->best.X.data ? &r->best.cert : NULL;
    char b2[AC_FMT_BOUND_BUFSIZE];
    cli_num(b2, sizeof b2, r->tol);
    if (r->verdict == AC_PROVED && c)
        printf("verdict    PROVED: separated at X: ||f_W(X) - g_V(X)||_F >= %s ||f_W(X)||_F > "
               "tol ||f_W(X)||_F, tol = %s  [%s, %s, %.3g s]\n", NUM_LO(b1, c->lo),
               b2, c->method, ac_stage_name(sb, sizeof sb, c->stage, c->prec), r->seconds);
    else if (r->verdict == AC_REFUTED && r->identical != 1)
        printf("verdict    REFUTED: no X separates f_W from g_V beyond tol = %s: "
               "||f_W(X) - g_V(X)||_F <= %s ||f_W(X)||_F at every X  [%s, %s, %.3g s]\n", b2,
               NUM_HI(b1, r->best.cert.hi), r->best.cert.method,
               ac_stage_name(sb, sizeof sb, r->best.cert.stage, r->best.cert.prec), r->seconds);
    else if (r->verdict == AC_REFUTED)
        printf("verdict    REFUTED: no X separates f_W from g_V (f_W = g_V as functions, "
               "exact)  [%.3g s]\n", r->seconds);
    else
        printf("verdict    UNDECIDED: no X certified with ||f_W(X) - g_V(X)||_F > tol "
               "||f_W(X)||_F, tol = %s  [%.3g s]\n", b2, r->seconds);
}

void sep_print(const ac_sep_request *q, const ac_sep_result *res)
{
    const ac_t2_result *r = &res->t2;
    printf("instance   d = %zu, h = %zu (f_W head size d/h = %zu), dp = %zu, n = %zu\n",
           res->W.d, res->W.h, res->W.hs, res->V.hs, res->n);
    printf("g_V        %s\n", res->vdesc);
    printf("f_W        %s\n", res->wdesc);
    print_hypotheses(&r->hyp);
    print_search(q, r);
    if (q->trace)
        print_trace(r);
    if (r->audit.done)
        print_audit(r);
    printf("summary    %s\n", r->summary);
    print_verdict(r);
}

static void print_embed_verdict(const ac_sep_result *res)
{
    const ac_t2_embed_result *e = &res->embed;
    char b1[AC_FMT_BOUND_BUFSIZE], sb[64];
    if (e->verdict == AC_PROVED && e->exact)
        printf("verdict    PROVED: g_V = f_W on the sample inputs, exactly (deviation 0)\n");
    else if (e->verdict == AC_PROVED)
        printf("verdict    PROVED: g_V = f_W on the sample inputs within tol: relative "
               "deviation <= %s (not exact: %s)\n", NUM_HI(b1, e->rel_hi),
               res->v_given ? "g_V is not f_W head by head"
                          : "the double V rounds the rescaling s = sqrt(dp/(d/h))");
    else if (e->verdict == AC_REFUTED)
        printf("verdict    REFUTED: max over the samples of ||g - f||_F / ||f||_F >= %s > tol "
               "(first beyond tol: sample %zu); only this is claimed, not that g_V is no "
               "embedding of f_W  [%s]\n", NUM_LO(b1, e->cert.lo), e->refuted_sample,
               ac_stage_name(sb, sizeof sb, e->cert.stage, e->cert.prec));
    else
        printf("verdict    UNDECIDED: sample %zu is neither proved within tol nor beyond it\n",
               e->undecided_sample);
}

void sep_print_embed(const ac_sep_request *q, const ac_sep_result *res)
{
    const ac_t2_embed_result *e = &res->embed;
    char b1[AC_FMT_BOUND_BUFSIZE], b2[AC_FMT_BOUND_BUFSIZE], sb[64];
    (void)q;
    printf("instance   d = %zu, h = %zu (f_W head size d/h = %zu), dp = %zu, n = %zu\n",
           res->W.d, res->W.h, res->W.hs, res->V.hs, res->n);
    printf("f_W        %s\n", res->wdesc);
    printf("g_V        %s\n", res->vdesc);
    printf("rescaling  %s\n", res->embnote);
    printf("identity   %s\n",
           e->params_identical == 1 ? "Vo_i Vv_i = Wo_i Wv_i and Vk_i'Vq_i/sqrt(dp) = "
                                      "Wk_i'Wq_i/sqrt(d/h) for every head (exact)"
           : e->params_identical == 0 ? "the parameters are NOT equal head by head (exact)"
                                      : "head-by-head identity not decided");
    printf("samples    %zu Gaussian inputs X (d x n): %zu equal exactly, head by head; "
           "%zu proved within tol\n", e->samples, e->equal_samples, e->within_samples);
    printf("claim      ||g_V(X) - f_W(X)||_F <= tol ||f_W(X)||_F on every sample, tol = %s\n",
           cli_num(b1, sizeof b1, e->tol));
    if (e->exact)
        printf("deviation  0 on every sample (exact); the enclosures bound ||g_V(X) - "
               "f_W(X)||_F <= %s (a cross-check)\n", NUM_HI(b1, e->diff_hi));
    else
        printf("deviation  max ||g - f||_F / ||f||_F in [%s, %s]  (%s)\n",
               NUM_LO(b1, e->rel_lo), NUM_HI(b2, e->rel_hi),
               ac_stage_name(sb, sizeof sb, e->cert.stage, e->cert.prec));
    printf("summary    %s\n", e->summary);
    print_embed_verdict(res);
}

/* ---- --student ------------------------------------------------------------------- */

static void print_headcount(const ac_headcount *hc)
{
    printf("head count %s\n", hc->summary);
    if (!hc->exact)
        return;
    printf("           h' (divisors of d):");
    for (size_t k = 0; k < hc->ndiv; k++)
        printf(" %zu:%s", hc->divisors[k], ac_hc_answer_name(hc->answer[k]));
    printf("\n");
}

void sep_print_student(const ac_sep_request *q, const ac_sep_result *res)
{
    const ac_learn_t2_result *r = &res->stu;
    const ac_mh *V = &res->V;
    char b1[AC_FMT_BOUND_BUFSIZE], b2[AC_FMT_BOUND_BUFSIZE], b3[AC_FMT_BOUND_BUFSIZE];
    printf("teacher    g_V: d = %zu, h = %zu heads of size dp = %zu, %s; n = %zu tokens\n",
           V->d, V->h, V->hs, res->vdesc, res->n);
    printf("theorem 2  hypotheses %s (sizes %s, rank S_V = d %s, shared U %s, rank U = dp %s)\n",
           ac_verdict_name(r->hyp.applies), ac_verdict_name(r->hyp.sizes),
           ac_verdict_name(r->hyp.sv_rank), ac_verdict_name(r->hyp.u_shared),
           ac_verdict_name(r->hyp.u_rank));
    print_headcount(&r->hc);
    printf("training   %zu steps of AdamW, lr %g, batch %zu x %zu tokens, X ~ N(0,1); seeds "
           "%llu..%llu; held out: %zu inputs\n\n", q->student_steps, q->student_lr,
           q->student_batch, res->n, (unsigned long long)q->seed,
           (unsigned long long)(q->seed + q->student_seeds - 1), res->samples);
    printf("%-8s %5s %4s %7s  %-30s %9s %-20s %9s  %-11s %s\n", "student", "heads", "size",
           "params", "|f-g|^2/|g|^2 mean +- sd", "worst X", "certified |f-g|/|g|", "/ fixed",
           "exact rep.", "");
    for (size_t i = 0; i < r->nrows; i++) {
        const ac_learn_t2_row *w = &r->rows[i];
        char cell[64], cert[64];
        snprintf(cell, sizeof cell, "%.3g +- %.2g", w->mean, w->sd);
        snprintf(cert, sizeof cert, "[%s, %s]", NUM_LO(b1, w->cert_lo_min),
                 NUM_HI(b2, w->cert_hi_max));
        printf("%-8s %5zu %4zu %7zu  %-30s %9s %-20s %9.3g  %-11s %s\n",
               w->fixed ? "fixed" : "standard", w->heads, w->hs, w->nparams, cell,
               cli_num(b3, sizeof b3, w->worst_est_max), cert, w->ratio,
               ac_hc_answer_name(w->expect), ac_learn_t2_outcome_name(w->outcome));
    }
    printf("\nrelative error: sum over the held-out X of |f(X) - g_V(X)|^2 / |g_V(X)|^2, mean +- "
           "sd over the seeds (min..max in --json).\n"
           "worst X: largest |f-g|_F/|g|_F over the held-out X (double, max over seeds); "
           "certified: the smallest lower bound and largest upper bound over the seeds "
           "(each at its own worst X, stage %s).\n"
           "exact rep.: whether a layer of this shape represents g_V exactly "
           "(doc/mathematics.md §4.8); agrees: the best seed's error is within %gx of the fixed "
           "student's best seed exactly when it does.\n", q->max_prec ? "0 + balls" : "0",
           AC_LEARN_T2_MATCH_FACTOR);
    printf("wall       %.2f s\n", r->seconds);
}
