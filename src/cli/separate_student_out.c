/* separate_student_out.c — the outputs of `attncheck separate --student`
 * (separate_student.h): the table, the JSON object, the CSV of the training
 * curves and the gnuplot script of --plot. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plot.h"
#include "separate_student.h"
#include "json_contract.h"

/* A student counts as matching g_V when its best seed's relative error is
 * within this factor of the fixed student's best seed (a display threshold,
 * not a theorem: doc/mathematics.md §4.8). */
#define STU_MATCH_FACTOR 10.0

static const char *answer_name(ac_hc_answer a)
{
    return a == AC_HC_YES ? "yes" : a == AC_HC_NO ? "no" : "not decided";
}

static const char *kind_name(const stu_row *w)
{
    return w->fixed ? "fixed" : "standard";
}

/* Smallest certified lower bound and largest upper bound over the seeds. */
static void cert_range(const stu_row *w, double *lo, double *hi, double *est)
{
    *lo = INFINITY;
    *hi = 0;
    *est = 0;
    for (size_t j = 0; j < w->nseeds; j++) {
        *lo = fmin(*lo, w->cert_lo[j]);
        *hi = fmax(*hi, w->cert_hi[j]);
        *est = fmax(*est, w->worst_est[j]);
    }
}

/* "agrees", "disagrees" or "" (nothing to compare) for one standard row:
 * whether a layer of this shape can represent g_V is a question of
 * existence, so the best seed is compared with the fixed student's best
 * seed (a seed that trains badly does not refute it). */
static const char *outcome(const stu_run *r, const stu_row *w)
{
    const stu_row *f = NULL;
    for (size_t i = 0; i < r->nrows; i++)
        if (r->rows[i].fixed)
            f = &r->rows[i];
    if (w->fixed || !f || w->expect == AC_HC_NOT_DECIDED || isnan(w->min) || isnan(f->min))
        return "";
    int close = w->min <= STU_MATCH_FACTOR * f->min;
    return (w->expect == AC_HC_YES) == close ? "agrees" : "disagrees";
}

static void print_headcount(const ac_headcount *hc)
{
    printf("head count %s\n", hc->summary);
    if (!hc->exact)
        return;
    printf("           h' (divisors of d):");
    for (size_t k = 0; k < hc->ndiv; k++)
        printf(" %zu:%s", hc->divisors[k], answer_name(hc->answer[k]));
    printf("\n");
}

void stu_print(const stu_run *r)
{
    const stu_args *a = r->a;
    const ac_mh *V = &r->V;
    char b1[32], b2[32], b3[32];
    printf("teacher    g_V: d = %zu, h = %zu heads of size dp = %zu, %s; n = %zu tokens\n",
           V->d, V->h, V->hs, r->vdesc, a->n);
    printf("theorem 2  hypotheses %s (sizes %s, rank S_V = d %s, shared U %s, rank U = dp %s)\n",
           ac_verdict_name(r->hyp.applies), ac_verdict_name(r->hyp.sizes),
           ac_verdict_name(r->hyp.sv_rank), ac_verdict_name(r->hyp.u_shared),
           ac_verdict_name(r->hyp.u_rank));
    print_headcount(&r->hc);
    printf("training   %zu steps of AdamW, lr %g, batch %zu x %zu tokens, X ~ N(0,1); seeds "
           "%llu..%llu; held out: %zu inputs\n\n", a->steps, a->lr, a->batch, a->n,
           (unsigned long long)a->seed, (unsigned long long)(a->seed + a->seeds - 1), a->samples);
    printf("%-8s %5s %4s %7s  %-30s %9s %-20s %9s  %-11s %s\n", "student", "heads", "size",
           "params", "|f-g|^2/|g|^2 mean +- sd", "worst X", "certified |f-g|/|g|", "/ fixed",
           "exact rep.", "");
    for (size_t i = 0; i < r->nrows; i++) {
        const stu_row *w = &r->rows[i];
        double lo, hi, est, q = stu_ratio_to_fixed(r, w);
        char cell[64], cert[64];
        cert_range(w, &lo, &hi, &est);
        snprintf(cell, sizeof cell, "%.3g +- %.2g", w->mean, w->sd);
        snprintf(cert, sizeof cert, "[%s, %s]", cli_num(b1, sizeof b1, lo),
                 cli_num(b2, sizeof b2, hi));
        printf("%-8s %5zu %4zu %7zu  %-30s %9s %-20s %9.3g  %-11s %s\n", kind_name(w), w->heads,
               w->hs, w->nparams, cell, cli_num(b3, sizeof b3, est), cert, q,
               answer_name(w->expect), outcome(r, w));
    }
    printf("\nrelative error: sum over the held-out X of |f(X) - g_V(X)|^2 / |g_V(X)|^2, mean +- "
           "sd over the seeds (min..max in --json).\n"
           "worst X: largest |f-g|_F/|g|_F over the held-out X (double, max over seeds); "
           "certified: the smallest lower bound and largest upper bound over the seeds "
           "(each at its own worst X, stage %s).\n"
           "exact rep.: whether a layer of this shape represents g_V exactly "
           "(doc/mathematics.md §4.8); agrees: the best seed's error is within %gx of the fixed "
           "student's best seed exactly when it does.\n", a->common.max_prec ? "0 + balls" : "0", STU_MATCH_FACTOR);
    printf("wall       %.2f s\n", r->wall);
}

static void json_headcount(ac_json *j, const ac_headcount *hc)
{
    ac_json_begin_object(j);
    ac_json_kv_bool(j, "exact", hc->exact);
    ac_json_kv_int(j, "classes", (long long)hc->nclasses);
    ac_json_kv_int(j, "active_classes", (long long)hc->nactive);
    ac_json_kv_int(j, "max_rank_u", hc->max_u_rank);
    ac_json_kv_bool(j, "proved_both_ways", hc->iff);
    ac_json_kv_int(j, "h_min", (long long)hc->h_min);
    ac_json_kv_int(j, "h_max", (long long)hc->h_max);
    ac_json_key(j, "per_head_count");
    ac_json_begin_array(j);
    for (size_t k = 0; k < hc->ndiv; k++) {
        ac_json_begin_object(j);
        ac_json_kv_int(j, "heads", (long long)hc->divisors[k]);
        ac_json_kv_string(j, "represents", answer_name(hc->answer[k]));
        ac_json_end_object(j);
    }
    ac_json_end_array(j);
    ac_json_key(j, "classes_detail");
    ac_json_begin_array(j);
    for (size_t c = 0; c < hc->nclasses; c++) {
        ac_json_begin_object(j);
        ac_json_kv_int(j, "heads", (long long)hc->class_size[c]);
        ac_json_kv_int(j, "rank_u", hc->u_rank[c]);
        ac_json_kv_int(j, "rank_s", hc->s_rank[c]);
        ac_json_end_object(j);
    }
    ac_json_end_array(j);
    ac_json_kv_string(j, "summary", hc->summary);
    ac_json_end_object(j);
}

static void json_seed(ac_json *j, const stu_run *r, const stu_row *w, size_t s)
{
    ac_json_begin_object(j);
    ac_json_kv_uint(j, "seed", r->a->seed + s); /* wraps mod 2^64 as the run does */
    ac_json_kv_number(j, "rel_error", w->rel[s]);
    ac_json_kv_int(j, "worst_sample", (long long)w->worst_k[s]);
    ac_json_kv_number(j, "worst_rel_estimate", w->worst_est[s]);
    ac_json_kv_string(j, "separated", ac_verdict_name(w->sep[s]));
    ac_json_kv_number(j, "worst_rel_certified_lo", w->cert_lo[s]);
    ac_json_kv_number(j, "worst_rel_certified_hi", w->cert_hi[s]);
    ac_json_kv_number(j, "seconds", w->seconds[s]);
    ac_json_key(j, "curve");
    ac_json_begin_array(j);
    for (size_t p = 0; p < w->ncurve; p++) {
        if (!w->curve_step[p])
            continue;
        ac_json_begin_object(j);
        ac_json_kv_int(j, "step", (long long)w->curve_step[p]);
        ac_json_kv_number(j, "loss", w->curve_loss[s * w->ncurve + p]);
        ac_json_kv_number(j, "eval_rel_error", w->curve_rel[s * w->ncurve + p]);
        ac_json_end_object(j);
    }
    ac_json_end_array(j);
    ac_json_end_object(j);
}

void stu_json(ac_json *j, const stu_run *r)
{
    const stu_args *a = r->a;
    /* a measurement: one certificate per student and seed, under "students" */
    cli_json_envelope_begin(j, "separate", NULL, NULL);
    cli_json_parameters_begin(j, a->seed);
    ac_json_kv_bool(j, "student", 1);
    ac_json_kv_int(j, "seeds", (long long)a->seeds);
    ac_json_kv_int(j, "steps", (long long)a->steps);
    ac_json_kv_int(j, "batch", (long long)a->batch);
    ac_json_kv_number(j, "lr", a->lr);
    ac_json_kv_int(j, "samples", (long long)a->samples);
    cli_json_parameters_end(j);
    ac_json_kv_string(j, "mode", "student");
    ac_json_key(j, "teacher");
    ac_json_begin_object(j);
    ac_json_kv_int(j, "d", (long long)r->V.d);
    ac_json_kv_int(j, "h", (long long)r->V.h);
    ac_json_kv_int(j, "dp", (long long)r->V.hs);
    ac_json_kv_int(j, "n", (long long)a->n);
    ac_json_kv_string(j, "source", r->vdesc);
    ac_json_kv_string(j, "theorem2_hypotheses", ac_verdict_name(r->hyp.applies));
    ac_json_end_object(j);
    ac_json_key(j, "headcount");
    json_headcount(j, &r->hc);
    ac_json_key(j, "training");
    ac_json_begin_object(j);
    ac_json_kv_int(j, "steps", (long long)a->steps);
    ac_json_kv_number(j, "lr", a->lr);
    ac_json_kv_int(j, "batch", (long long)a->batch);
    ac_json_kv_int(j, "seeds", (long long)a->seeds);
    ac_json_kv_int(j, "heldout_samples", (long long)a->samples);
    ac_json_end_object(j);
    ac_json_key(j, "students");
    ac_json_begin_array(j);
    for (size_t i = 0; i < r->nrows; i++) {
        const stu_row *w = &r->rows[i];
        double lo, hi, est;
        cert_range(w, &lo, &hi, &est);
        ac_json_begin_object(j);
        ac_json_kv_string(j, "kind", kind_name(w));
        ac_json_kv_int(j, "heads", (long long)w->heads);
        ac_json_kv_int(j, "head_size", (long long)w->hs);
        ac_json_kv_int(j, "params", (long long)w->nparams);
        ac_json_kv_string(j, "represents_exactly", answer_name(w->expect));
        ac_json_kv_number(j, "rel_error_mean", w->mean);
        ac_json_kv_number(j, "rel_error_sd", w->sd);
        ac_json_kv_number(j, "rel_error_min", w->min);
        ac_json_kv_number(j, "rel_error_max", w->max);
        ac_json_kv_number(j, "ratio_to_fixed", stu_ratio_to_fixed(r, w));
        ac_json_kv_number(j, "worst_rel_certified_lo", lo);
        ac_json_kv_number(j, "worst_rel_certified_hi", hi);
        ac_json_kv_string(j, "outcome", outcome(r, w));
        ac_json_key(j, "seeds");
        ac_json_begin_array(j);
        for (size_t s = 0; s < w->nseeds; s++)
            json_seed(j, r, w, s);
        ac_json_end_array(j);
        ac_json_end_object(j);
    }
    ac_json_end_array(j);
    cli_json_seconds(j, r->wall);
    ac_json_end_object(j);
}

void stu_write_csv(FILE *f, const stu_run *r)
{
    fprintf(f, "kind,heads,head_size,seed,step,loss,eval_rel_error\n");
    for (size_t i = 0; i < r->nrows; i++) {
        const stu_row *w = &r->rows[i];
        for (size_t s = 0; s < w->nseeds; s++)
            for (size_t p = 0; p < w->ncurve; p++) {
                if (!w->curve_step[p])
                    continue;
                fprintf(f, "%s,%zu,%zu,%llu,%zu,%.17g,%.17g\n", kind_name(w), w->heads, w->hs,
                        (unsigned long long)(r->a->seed + s), w->curve_step[p],
                        w->curve_loss[s * w->ncurve + p], w->curve_rel[s * w->ncurve + p]);
            }
    }
}

/* Evaluation relative error against the step, one curve per student and
 * seed (log scale). */
void stu_write_gnuplot(FILE *f, const stu_run *r, const char *out)
{
    (void)out; /* the picture goes to gnuplot's standard output: no file name in the script */
    fprintf(f, "set terminal %s\n", cli_plot_terminal(r->a->plot));
    fprintf(f, "\nset logscale y\nset format y '10^{%%L}'\nset xlabel 'step'\nset ylabel '|f-g|^2/|g|^2 (held out)'\n"
               "set key outside right\nset title 'students of g_V: d = %zu, h = %zu, dp = %zu'\n",
            r->V.d, r->V.h, r->V.hs);
    for (size_t i = 0; i < r->nrows; i++) {
        const stu_row *w = &r->rows[i];
        for (size_t s = 0; s < w->nseeds; s++) {
            fprintf(f, "$d%zu_%zu << EOD\n", i, s);
            for (size_t p = 0; p < w->ncurve; p++)
                if (w->curve_step[p]) {
                    fprintf(f, "%zu", w->curve_step[p]);
                    cli_gp_val(f, w->curve_rel[s * w->ncurve + p]);
                    fputc('\n', f);
                }
            fputs("EOD\n", f);
        }
    }
    fputs("plot", f);
    for (size_t i = 0; i < r->nrows; i++) {
        const stu_row *w = &r->rows[i];
        for (size_t s = 0; s < w->nseeds; s++) {
            char t[64];
            snprintf(t, sizeof t, "%s %s=%zu (size %zu)", kind_name(w), w->fixed ? "h" : "h'",
                     w->heads, w->hs);
            fprintf(f, "%s $d%zu_%zu using 1:2 with lines lc %zu dt %zu title ", i || s ? "," : "",
                    i, s, i + 1, s + 1);
            cli_gp_quote(f, s == 0 ? t : "");
        }
    }
    fputs("\n", f);
}
