/* condition_text.c — the text output of `attncheck condition` (Theorem 3.2
 * of paper 2) and `attncheck merge`: one function per table, in the order
 * printed, from the library's result (ac_condition_result). */
#include <config.h>

#include <math.h>
#include <stdio.h>

#include "attncheck/rmt.h"
#include "condition_cli.h"

/* %.4g, "-" for NaN, "inf" */
static const char *fg(char *b, size_t n, double x)
{
    if (x != x)
        snprintf(b, n, "-");
    else if (isinf(x))
        snprintf(b, n, x > 0 ? "inf" : "-inf");
    else
        snprintf(b, n, "%.4g", x);
    return b;
}

/* a standard error: two digits */
static const char *fse(char *b, size_t n, double x)
{
    if (x != x)
        snprintf(b, n, "-");
    else
        snprintf(b, n, "%.2g", x);
    return b;
}

/* relative error as a signed percentage */
static const char *fpct(char *b, size_t n, double x)
{
    if (x != x)
        snprintf(b, n, "-");
    else
        snprintf(b, n, "%+.2f%%", 100 * x);
    return b;
}


/* The first lines: sizes, blocks, trials, seed, rtol. */
static void print_header(const ac_condition_request *q)
{
    char b[8][40];
    printf("attncheck condition: Theorem 3.2, kappa of A = [A_1 ... A_h], N = %zu, ", q->seq);
    if (q->have_embed)
        printf("D = %zu (d = D/h)\n", q->embed);
    else
        printf("d = %zu (D = h d)\n", q->head_dim);
    if (q->mode == AC_COND_IID)
        printf("blocks: iid N(0,1)");
    else if (q->have_input_dim)
        printf("blocks: attention heads, X N x %zu Gaussian, N(0,1/E) projections", q->input_dim);
    else
        printf("blocks: attention heads, X N x D Gaussian, N(0,1/E) projections");
    printf("; %zu trials per h; seed %llu; rtol %s\n\n", q->trials, (unsigned long long)q->seed,
           fg(b[0], sizeof b[0], q->rtol));
}

/* The sample statistics of kappa and the routes, one row per h. */
static void print_samples(const ac_cond_result *res, const ac_condition_h *hs, size_t nh)
{
    char b[8][40];
    printf("samples (estimates; at D = N >= 2 the mean is not reported: E kappa = inf, "
           "doc/mathematics.md §5.5)\n");
    printf("%5s %7s %-6s %9s %8s %9s %8s %9s %9s %8s %6s %5s %5s\n", "h", "D", "regime", "mean",
           "+-se", "median", "sd", "q05", "q95", "E log k", "gram", "svd", "mpfr");
    for (size_t i = 0; i < nh; i++) {
        const ac_cond_result *r = &res[i];
        int sq = !hs[i].mean_reported;
        printf("%5zu %7zu %-6s %9s %8s %9s %8s %9s %9s %8.4f %6zu %5zu %5zu\n", r->h, r->D,
               ac_rmt_regime_name(r->pred.regime), sq ? "-" : fg(b[0], 40, r->st.mean),
               sq ? "-" : fse(b[1], 40, r->st.se_mean), fg(b[2], 40, r->st.median),
               sq ? "-" : fg(b[3], 40, r->st.sd), fg(b[4], 40, r->st.q05),
               fg(b[5], 40, r->st.q95), r->st.elog, r->n_route[0], r->n_route[1], r->n_route[2]);
    }
}

/* One row of the predictions at D = N: Edelman's law. */
static void print_prediction_square(const ac_cond_result *r, const ac_condition_h *hi)
{
    char b[8][40];
    const ac_rmt_pred *p = &r->pred;
    if (isnan(p->edelman_median)) { /* N = D = 1 */
        printf("%5zu %7zu  %-18s kappa = 1 exactly (a nonzero 1 x 1 block); Edelman's law needs "
               "N >= 2\n",
               r->h, r->D, "inf");
        return;
    }
    printf("%5zu %7zu  %-18s Edelman (D = N): median %s (%s, se %.1f%%), E log k %.4f (%+.3f, "
           "se %.3f), 5-95%% [%s, %s] (%.0f%%)\n",
           r->h, r->D, "inf", fg(b[0], 40, p->edelman_median),
           fpct(b[1], 40, r->err_edelman_median), 100 * hi->se_edelman_median, p->edelman_elog,
           r->diff_edelman_elog, r->st.se_elog, fg(b[2], 40, p->edelman_q05),
           fg(b[3], 40, p->edelman_q95), 100 * r->edelman_coverage);
}

/* The predictions (first order, paper 2, eq. (6); Tracy-Widom; Gordon) and
 * their relative errors, one row per h. */
static void print_predictions(const ac_cond_result *res, const ac_condition_h *hs, size_t nh)
{
    char b[8][40];
    printf("\npredictions (relative error: first order and TW point vs the mean, TW median vs the "
           "median)\n");
    printf("%5s %7s  %-18s %-18s %-18s %-26s %s\n", "h", "D", "first order", "TW point",
           "TW median", "TW 5-95% band (coverage)", "Gordon95 (above)");
    for (size_t i = 0; i < nh; i++) {
        const ac_cond_result *r = &res[i];
        const ac_rmt_pred *p = &r->pred;
        char c1[64], c2[64], c3[64], c4[80], c5[64];
        if (r->D == r->N) {
            print_prediction_square(r, &hs[i]);
            continue;
        }
        snprintf(c1, sizeof c1, "%s (%s)", fg(b[0], 40, p->first_order),
                 fpct(b[1], 40, r->err_first_order));
        if (isnan(p->tw_point)) {
            snprintf(c2, sizeof c2, "-");
            snprintf(c3, sizeof c3, "-");
            snprintf(c4, sizeof c4, "-");
        } else {
            snprintf(c2, sizeof c2, "%s (%s)", fg(b[2], 40, p->tw_point),
                     fpct(b[3], 40, r->err_tw_point));
            snprintf(c3, sizeof c3, "%s (%s)", fg(b[4], 40, p->tw_median),
                     fpct(b[5], 40, r->err_tw_median));
            snprintf(c4, sizeof c4, "[%s, %s] (%3.0f%%)", fg(b[6], 40, p->tw_q05),
                     fg(b[7], 40, p->tw_q95), 100 * r->tw_coverage);
        }
        snprintf(c5, sizeof c5, "%s (%.0f%%)", fg(b[0], 40, p->gordon_kappa95),
                 100 * r->gordon_exceed);
        printf("%5zu %7zu  %-18s %-18s %-18s %-26s %s%s\n", r->h, r->D, c1, c2, c3, c4, c5,
               r->pred.regime == AC_REGIME_SQUARE ? "  (D~N: unreliable)" : "");
    }
}

/* Mean sigma_1 and sigma_min against the Gordon bounds (iid blocks). */
static void print_gordon(const ac_cond_result *res, const ac_condition_h *hs, size_t nh)
{
    printf("\nsingular values against the Gordon bounds (E sigma_1 <= sqrt M + sqrt m, "
           "E sigma_min >= sqrt M - sqrt m; estimates)\n");
    printf("%5s %7s %12s %8s %10s %12s %8s %10s\n", "h", "D", "mean sig_1", "+-se", "<= bound",
           "mean sig_min", "+-se", ">= bound");
    for (size_t i = 0; i < nh; i++) {
        const ac_cond_result *r = &res[i];
        printf("%5zu %7zu %12.5g %8.2g %10.5g %12.5g %8.2g %10.5g\n", r->h, r->D,
               r->st.mean_sigma1, hs[i].se_sigma1, r->pred.gordon_smax_hi, r->st.mean_sigmin,
               hs[i].se_sigmin, r->pred.gordon_smin_lo);
    }
}

/* The histogram of one h against the Marchenko-Pastur density: a bar of
 * '#' for the sample, '|' at the MP density, scaled to 30 columns. */
static void print_histogram(const ac_cond_result *r)
{
    double mx = 0;
    for (size_t k = 0; k < r->bins; k++)
        mx = fmax(mx, fmax(r->hist_density[k], r->hist_mp[k]));
    for (size_t k = 0; k < r->bins; k++) {
        int w = mx > 0 ? (int)lround(30 * r->hist_density[k] / mx) : 0;
        int wm = mx > 0 ? (int)lround(30 * r->hist_mp[k] / mx) : 0;
        char bar[40];
        for (int q = 0; q < 31; q++)
            bar[q] = q < w ? '#' : ' ';
        if (wm >= 0 && wm <= 30)
            bar[wm] = '|';
        bar[31] = 0;
        for (int q = 30; q >= 0 && bar[q] == ' '; q--)
            bar[q] = 0;
        printf("   [%9.4g, %9.4g)  %9.4f  MP %9.4f  %s\n", r->hist_lo[k], r->hist_hi[k],
               r->hist_density[k], r->hist_mp[k], bar);
    }
}

/* --spectrum: the KS distance and histogram of every h. */
static void print_spectrum(const ac_condition_request *q, const ac_cond_result *res, size_t nh)
{
    printf("\nspectrum of (1/D) A A^T against Marchenko-Pastur (y = N/D)%s\n",
           q->mode == AC_COND_ATTENTION ? ", divided by the mean square entry" : "");
    for (size_t i = 0; i < nh; i++) {
        const ac_cond_result *r = &res[i];
        double y = (double)r->N / (double)r->D, lo, hi;
        ac_mp_edges(y, &lo, &hi);
        printf("h = %zu, D = %zu: y = %.4g, support [%.4g, %.4g], KS distance %.4f "
               "(%zu eigenvalues)\n",
               r->h, r->D, y, lo, hi, r->ks, r->trials * r->m);
        print_histogram(r);
    }
}

/* One row of the certified table. */
static void print_certified_row(const ac_cond_result *r, const ac_condition_h *hi)
{
    const ac_cond_certstats *c = &r->cst;
    char m1[64], m2[64], m3[64], m4[64], bl[AC_FMT_BOUND_BUFSIZE], bh[AC_FMT_BOUND_BUFSIZE];
    if (c->valid) {
        if (!hi->mean_reported)
            snprintf(m1, sizeof m1, "- (E kappa = inf)");
        else
            snprintf(m1, sizeof m1, "[%s, %s]", ac_str_lo(bl, ".10g", c->mean_lo),
                     ac_str_hi(bh, ".10g", c->mean_hi));
        snprintf(m2, sizeof m2, "[%s, %s]", ac_str_lo(bl, ".10g", c->median_lo),
                 ac_str_hi(bh, ".10g", c->median_hi));
        if (isnan(c->err_tw_point_lo))
            snprintf(m3, sizeof m3, "-");
        else
            snprintf(m3, sizeof m3, "[%s, %s]", ac_str_lo(bl, "+.4f%", c->err_tw_point_lo),
                     ac_str_hi(bh, "+.4f%", c->err_tw_point_hi));
        if (isnan(c->err_first_order_lo))
            snprintf(m4, sizeof m4, "-");
        else
            snprintf(m4, sizeof m4, "[%s, %s]", ac_str_lo(bl, "+.4f%", c->err_first_order_lo),
                     ac_str_hi(bh, "+.4f%", c->err_first_order_hi));
    } else {
        snprintf(m1, sizeof m1, "- (some sample unbounded)");
        snprintf(m2, sizeof m2, "-");
        snprintf(m3, sizeof m3, "-");
        snprintf(m4, sizeof m4, "-");
    }
    printf("%5zu %7zu %-9s %7zu %7zu %9s %-28s %-28s %-24s %s\n", r->h, r->D,
           ac_verdict_name(r->verdict), r->n_proved, r->n_undecided,
           isnan(r->dev_hi) ? "-" : ac_str_hi(bh, ".4g", r->dev_hi),
           m1, m2, m4, m3);
}

/* --certify: claim C and the certified statistics of every h. */
static void print_certified(const ac_cond_result *res, const ac_condition_h *hs, size_t nh)
{
    printf("\ncertified (rigorous enclosures for the seeded sample; dev = |kappa/kappa~ - 1|)\n");
    printf("%5s %7s %-9s %7s %7s %9s %-28s %-28s %-24s %s\n", "h", "D", "verdict", "proved",
           "undec.", "dev <=", "mean in", "median in", "first order err in", "TW point err in");
    for (size_t i = 0; i < nh; i++)
        print_certified_row(&res[i], &hs[i]);
    for (size_t i = 0; i < nh; i++) {
        const ac_cond_result *r = &res[i];
        if (!hs[i].full_rank_possible)
            printf("  h = %zu: rank A <= h min(N, E, d) = %zu min(%zu, %zu, %zu) = %zu < min(N, D) "
                   "= %zu: no block has full rank (doc/mathematics.md §5.10)\n",
                   r->h, r->h, r->N, r->E, r->d, r->rank_bound, r->m);
    }
}

/* Findings (the library's, ac_condition_findings): the range of the
 * first-order error, the largest TW error, Edelman at D = N, the largest h,
 * the MPFR fallback. */
static void print_findings(const ac_condition_request *q, const ac_condition_result *cr)
{
    char b[8][40];
    const ac_cond_result *res = cr->res;
    const ac_condition_findings *fd = &cr->findings;
    size_t nh = cr->nh;
    printf("\nfindings\n");
    if (fd->fo_n)
        printf("  first order (paper 2, eq. (6)): error %s (h = %zu) to %s (h = %zu) against the "
               "sample mean%s\n",
               fpct(b[0], 40, fd->fo_lo), fd->fo_h_lo, fpct(b[1], 40, fd->fo_hi), fd->fo_h_hi,
               fd->fo_above ? "; the first order is above the sample mean at every h" : "");
    if (fd->tw_n)
        printf("  Tracy-Widom point estimate: |error| <= %.2f%% for every h with |D - N| >= "
               "%d\n",
               100 * fd->tw_max, AC_RMT_SQUARE_BAND);
    for (size_t i = 0; i < nh; i++) {
        const ac_cond_result *r = &res[i];
        if (!cr->hs[i].mean_reported)
            printf("  D = N (h = %zu): first order is infinite; Edelman's median %s vs sample "
                   "%s, E log kappa %.4f vs %.4f (se %.3f)\n",
                   r->h, fg(b[0], 40, r->pred.edelman_median), fg(b[1], 40, r->st.median),
                   r->pred.edelman_elog, r->st.elog, r->st.se_elog);
        else if (r->D == r->N)
            printf("  D = N = 1 (h = %zu): kappa = 1 for every block\n", r->h);
    }
    const ac_cond_result *last = &res[nh - 1];
    printf("  largest h = %zu: median kappa %s (first order %s, TW %s)\n", last->h,
           fg(b[0], 40, last->st.median), fg(b[1], 40, last->pred.first_order),
           fg(b[2], 40, last->pred.tw_median));
    printf("  high-precision (MPFR) fallback: %zu sample%s", fd->n_mpfr,
           fd->n_mpfr == 1 ? "" : "s");
    if (fd->n_unresolved)
        printf(", %zu unresolved at %ld bits (kappa reported as inf)", fd->n_unresolved,
               q->max_prec);
    printf("\n");
}

/* The time line and the verdict line (the certificate of claim C). */
static void print_time_verdict(const ac_condition_request *q, const ac_condition_result *cr)
{
    char b[8][40], bl[AC_FMT_BOUND_BUFSIZE], bh[AC_FMT_BOUND_BUFSIZE];
    const ac_cond_result *res = cr->res;
    const ac_condition_times *t = &cr->times;
    const ac_cert *cert = &cr->cert;
    size_t nh = cr->nh;
    double wall = cr->wall;
    int threads = cr->threads;
    printf("\ntime       %.3f s on %d thread%s; thread-seconds: sampling %.3f, reduction %.3f, "
           "SVD/eigen %.3f, MPFR %.3f, certify %.3f; %.3g GFLOP, %.1f GFLOP/s\n",
           wall, threads, threads == 1 ? "" : "s", t->sample, t->reduce, t->solve, t->mpfr,
           t->certify, t->flops * 1e-9, wall > 0 ? t->flops * 1e-9 / wall : 0.0);
    char sb[64];
    if (!q->certify) {
        printf("verdict    UNDECIDED: claim C not checked (every number above is an estimate; "
               "add --certify)\n");
        return;
    }
    const ac_cond_result *low = cr->findings.low_rank < nh ? &res[cr->findings.low_rank] : NULL;
    if (low)
        printf("verdict    %s: not every block has full rank: rank A <= h min(N, E, d) = %zu < "
               "min(N, D) = %zu at h = %zu  [%s]\n",
               ac_verdict_name(cert->verdict), low->rank_bound, low->m, low->h,
               ac_stage_name(sb, sizeof sb, cert->stage, cert->prec));
    else
        printf("verdict    %s: dev = max |kappa/kappa~ - 1| in [%s, %s] %s rtol = %s, every "
               "block full rank  [%s]\n",
               ac_verdict_name(cert->verdict), ac_str_lo(bl, ".4g", cert->lo),
               ac_str_hi(bh, ".4g", cert->hi),
               cert->verdict == AC_PROVED    ? "<="
               : cert->verdict == AC_REFUTED ? "not <="
                                             : "vs",
               fg(b[2], 40, q->rtol), ac_stage_name(sb, sizeof sb, cert->stage, cert->prec));
    printf("meaning    PROVED asserts claim C: every sampled block (%s) has full rank and every "
           "reported kappa is within rtol of its exact kappa; it does not prove Theorem 3.2's "
           "prediction, which the tables above compare as estimates\n",
           q->mode == AC_COND_ATTENTION
               ? "the exact heads of the sampled X and weights, not their double rounding"
               : "the sampled doubles");
}

void cond_print_text(const ac_condition_request *q, const ac_condition_result *cr)
{
    const ac_cond_result *res = cr->res;
    size_t nh = cr->nh;
    print_header(q);
    print_samples(res, cr->hs, nh);
    print_predictions(res, cr->hs, nh);
    if (q->mode == AC_COND_IID)
        print_gordon(res, cr->hs, nh);
    if (q->spectrum)
        print_spectrum(q, res, nh);
    if (q->certify)
        print_certified(res, cr->hs, nh);
    print_findings(q, cr);
    print_time_verdict(q, cr);
}
