/* condition_model.c — what `attncheck condition --model DIR` prints and
 * writes: paper 2's condition number on learned weights (doc/mathematics.md
 * §6.6).  The experiment — per layer of a trained checkpoint, kappa of
 * [A_1 ... A_h] on real sequences, beside the Gaussian predictions for the
 * same N and D (attncheck/rmt.h) and beside attention heads with Gaussian
 * weights of the same shapes — is the library's (ac_learn_kappa_compare,
 * attncheck/learned.h); here the table, --csv and --plot (its JSON is the
 * library's). */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/learned.h"
#include "attncheck/rmt.h"
#include "condition_cli.h"
#include "plot.h"

/* ---- outputs ---------------------------------------------------------------------- */

static const char *task_words(const ac_learn_kappa_result *r)
{
    return r->cfg.task == AC_TASK_TEXT ? "text (causal)" : "listops (padding masked)";
}

static void print_text(const ac_condition_request *q, const ac_learn_kappa_compare *cmp)
{
    const ac_learn_kappa_result *r = &cmp->r;
    const ac_learn_kappa_layer *l0 = &r->layers[0];
    const ac_rmt_pred *p = &cmp->pred;
    printf("Trained heads (paper 2, Theorem 3.2 on learned weights): %s\n", q->model);
    printf("model: %s, %zu layer(s), width %zu, %zu %s heads of size %zu (D = %zu), step %zu, "
           "%zu parameters\n", task_words(r), r->L, r->width, l0->H,
           r->cfg.model.kind == AC_NN_ATTN_FIXED ? "fixed" : "standard", l0->S, l0->D, r->step,
           r->nparams);
    printf("data: %s (%zu sequences); model loss %.4g, accuracy %.4g (initial weights: %.4g, "
           "%.4g)\n", r->source, r->sequences, r->loss, r->accuracy, r->init_loss,
           r->init_accuracy);
    printf("block: A = [A_1 ... A_h] per sequence, rows = real tokens (N = %zu..%zu, median %zu), "
           "D = %zu; kappa estimates (rtol %.2g, not certified)\n\n", l0->N_min, l0->N_max,
           l0->N_med, l0->D, q->rtol);
    printf("Gaussian comparison at N = %zu, D = %zu (regime %s): first order %.4g, %s %.4g "
           "[%.4g, %.4g];\n  attention heads with Gaussian weights (input width %zu, %zu trials, "
           "non-causal): median %.4g [%.4g, %.4g]\n\n",
           l0->N_med, l0->D, ac_rmt_regime_name(p->regime), p->first_order,
           l0->N_med == l0->D ? "Edelman median" : "Tracy-Widom median", cmp->pred_median,
           cmp->pred_q05, cmp->pred_q95, r->width, cmp->gauss.trials,
           cmp->gauss.st.median, cmp->gauss.st.q05, cmp->gauss.st.q95);
    printf("%-6s %7s  %10s %10s %10s %10s  %12s %12s  %10s\n", "layer", "blocks", "median", "5%",
           "95%", "mean", "/Gauss pred", "/Gauss attn", "initial");
    for (size_t l = 0; l < r->L; l++) {
        const ac_learn_kappa_layer *ly = &r->layers[l];
        printf("%-6zu %7zu  %10.4g %10.4g %10.4g %10.4g  %12.3g %12.3g  %10.4g", l, ly->n,
               ly->st.median, ly->st.q05, ly->st.q95, ly->st.mean, cmp->ratio_pred[l],
               cmp->ratio_gauss[l], r->init[l].st.median);
        if (ly->n_unresolved)
            printf("  (%zu unresolved)", ly->n_unresolved);
        printf("\n");
    }
    printf("\n/Gauss pred, /Gauss attn: the trained median over the Gaussian prediction's median "
           "and over the median with Gaussian weights;\ninitial: the median for the run's "
           "initial weights (same data; `attncheck train` drew them with seed %llu, std %g).\n",
           (unsigned long long)r->cfg.seed, r->cfg.init_std);
}

static void write_csv(FILE *f, const ac_learn_kappa_compare *cmp)
{
    const ac_learn_kappa_result *r = &cmp->r;
    const ac_rmt_pred *p = &cmp->pred;
    fputs("layer,heads,head_dim,D,N_min,N_median,N_max,blocks,kappa_median,kappa_q05,kappa_q95,"
          "kappa_mean,elog_kappa,unresolved,regime,first_order,tw_median,tw_q05,tw_q95,"
          "edelman_median,prediction_median,gauss_attention_median,gauss_attention_q05,"
          "gauss_attention_q95,ratio_prediction,ratio_gauss_attention,init_kappa_median,"
          "init_kappa_q05,init_kappa_q95\n", f);
    for (size_t l = 0; l < r->L; l++) {
        const ac_learn_kappa_layer *ly = &r->layers[l];
        fprintf(f, "%zu,%zu,%zu,%zu,%zu,%zu,%zu,%zu,%.10g,%.10g,%.10g,%.10g,%.10g,%zu,%s,%.10g,"
                "%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g\n",
                l, ly->H, ly->S, ly->D, ly->N_min, ly->N_med, ly->N_max, ly->n, ly->st.median,
                ly->st.q05, ly->st.q95, ly->st.mean, ly->st.elog, ly->n_unresolved,
                ac_rmt_regime_name(p->regime), p->first_order, p->tw_median, p->tw_q05,
                p->tw_q95, p->edelman_median, cmp->pred_median, cmp->gauss.st.median,
                cmp->gauss.st.q05, cmp->gauss.st.q95, cmp->ratio_pred[l], cmp->ratio_gauss[l],
                r->init[l].st.median, r->init[l].st.q05,
                r->init[l].st.q95);
    }
}

typedef struct {
    const char *plot;
    const ac_learn_kappa_compare *cmp;
} mplot_ctx;

/* kappa against the layer: the trained median with its 5-95% band, the
 * Gaussian-weight attention heads and the Gaussian prediction. */
static void write_plot(FILE *f, void *ctx)
{
    const mplot_ctx *c = ctx;
    const ac_learn_kappa_result *r = &c->cmp->r;
    /* the picture goes to gnuplot's standard output: no file name in the script */
    fprintf(f, "set terminal %s\n", cli_plot_terminal(c->plot));
    fputs("$data << EOD\n", f);
    for (size_t l = 0; l < r->L; l++) {
        const ac_learn_kappa_layer *ly = &r->layers[l];
        fprintf(f, "%zu", l);
        cli_gp_val(f, ly->st.median);
        cli_gp_val(f, ly->st.q05);
        cli_gp_val(f, ly->st.q95);
        cli_gp_val(f, c->cmp->gauss.st.median);
        cli_gp_val(f, c->cmp->gauss.st.q05);
        cli_gp_val(f, c->cmp->gauss.st.q95);
        cli_gp_val(f, c->cmp->pred_median);
        cli_gp_val(f, r->init[l].st.median);
        cli_gp_val(f, r->init[l].st.q05);
        cli_gp_val(f, r->init[l].st.q95);
        fputc('\n', f);
    }
    fputs("EOD\n", f);
    fprintf(f, "set title 'Trained heads: {/Symbol k}([A_1 ... A_h]), %s, h = %zu, D = %zu, "
            "median N = %zu'\n", ac_task_name(r->cfg.task), r->layers[0].H, r->layers[0].D,
            r->layers[0].N_med);
    fprintf(f, "set xlabel 'layer'\nset ylabel 'condition number {/Symbol k}'\nset logscale y\n"
            "set grid\nset key below box\nset xrange [-0.5:%g]\nset xtics 1\n",
            (double)r->L - 0.5);
    fputs("plot $data using ($1-0.05):2:3:4 with yerrorbars pt 7 lw 2 lc rgb '#08519c' "
          "title 'trained: median, 5-95%', \\\n"
          "     $data using ($1+0.05):5:6:7 with yerrorbars pt 4 lw 2 lc rgb '#d62728' "
          "title 'attention, Gaussian weights', \\\n"
          "     $data using ($1+0.15):9:10:11 with yerrorbars pt 6 lw 2 lc rgb '#7f7f7f' "
          "title 'same model, initial weights', \\\n"
          "     $data using 1:8 with points pt 2 ps 2 lw 2 lc rgb '#2ca02c' "
          "title 'Gaussian block prediction (median)'\n", f);
}

int cond_model_outputs(ac_request *req, const ac_condition_request *q,
                       const ac_condition_result *res, int json)
{
    const ac_learn_kappa_compare *cmp = &res->compare;
    ac_err err;
    ac_atomic csv, plot;
    int st = AC_OK;
    char gpbuf[4096];
    const char *gp = NULL;
    memset(&csv, 0, sizeof csv);
    memset(&plot, 0, sizeof plot);
    ac_err_clear(&err);
    if (q->plot) {
        if (!(gp = cli_find_gnuplot(gpbuf, sizeof gpbuf)))
            return cli_fail(AC_ECANTCREAT, "--plot %s: gnuplot not found (install it: apt-get "
                            "install gnuplot-nox, or set ATTNCHECK_GNUPLOT)", q->plot);
        if (ac_atomic_open(&plot, q->plot, &err))
            return cli_fail_err(&err);
        mplot_ctx pc = {q->plot, cmp};
        int gs = cli_run_gnuplot(gp, fileno(plot.fp), write_plot, &pc);
        if (gs != 0) {
            st = cli_fail(AC_ECANTCREAT, "--plot %s: gnuplot (%s) failed (status %d)", q->plot,
                          gp, gs);
            goto out;
        }
    }
    if (q->csv) {
        if (ac_atomic_open(&csv, q->csv, &err)) {
            st = cli_fail_err(&err);
            goto out;
        }
        write_csv(csv.fp, cmp);
        if (ac_atomic_commit(&csv, &err)) {
            st = cli_fail_err(&err);
            goto out;
        }
    }
    if (q->plot && ac_atomic_commit(&plot, &err)) {
        st = cli_fail_err(&err);
        goto out;
    }
    if (json)
        st = cli_print_json(req);
    else
        print_text(q, cmp);
out:
    ac_atomic_abort(&csv);
    ac_atomic_abort(&plot);
    return st;
}

