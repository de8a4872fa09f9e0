/* condition_model.c — `attncheck condition --model DIR`: paper 2's condition
 * number on learned weights (attncheck/model_kappa.h, doc/mathematics.md
 * §6.6).  Per layer of a trained checkpoint, kappa of [A_1 ... A_h] on real
 * sequences, beside the Gaussian predictions for the same N and D
 * (attncheck/rmt.h) and beside attention heads with Gaussian weights of the
 * same shapes (ac_cond_run, --mode attention).  One table, --json, --csv,
 * --plot. */
#include <config.h>

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/condition.h"
#include "attncheck/model_kappa.h"
#include "attncheck/rmt.h"
#include "condition_cli.h"
#include "plot.h"

enum {
    MO_MODEL = 256, MO_DATA, MO_BATCHES, MO_TRIALS, MO_SEED, MO_RTOL, MO_MAXPREC, MO_JSON, MO_CSV,
    MO_PLOT, MO_THREADS
};

static const struct option model_opts[] = {
    {"model", required_argument, NULL, MO_MODEL},
    {"data", required_argument, NULL, MO_DATA},
    {"batches", required_argument, NULL, MO_BATCHES},
    {"trials", required_argument, NULL, MO_TRIALS},
    {"seed", required_argument, NULL, MO_SEED},
    {"rtol", required_argument, NULL, MO_RTOL},
    {"max-prec", required_argument, NULL, MO_MAXPREC},
    {"json", no_argument, NULL, MO_JSON},
    {"csv", required_argument, NULL, MO_CSV},
    {"plot", required_argument, NULL, MO_PLOT},
    {"threads", required_argument, NULL, MO_THREADS},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

typedef struct {
    const char *model, *csv, *plot;
    ac_mkappa_opts mo;
    size_t trials;
    uint64_t seed;
    int json;
    long max_prec;
    int threads;
} model_args;

/* The comparison for the trained blocks' shapes: predictions for an N x D
 * Gaussian block (N = the median rows) and attention heads with Gaussian
 * weights of the model's shapes (input width C). */
typedef struct {
    ac_rmt_pred pred;
    double pred_median;       /* Edelman's median at D = N, else the TW median */
    ac_cond_result gauss;     /* --mode attention */
} model_cmp;

/* Options other than those of model_opts are usage errors here. */
static int parse_model_args(model_args *a, int argc, char **argv)
{
    int c, st;
    memset(a, 0, sizeof *a);
    ac_mkappa_opts_default(&a->mo);
    a->mo.initial = 1;
    a->trials = 20;
    a->seed = 1;
    a->max_prec = 1024;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", model_opts, NULL)) != -1) {
        st = AC_OK;
        switch (c) {
        case MO_MODEL: a->model = optarg; break;
        case MO_DATA: a->mo.data_path = optarg; break;
        case MO_BATCHES: st = cli_parse_size("--batches", optarg, 1, 1u << 20, &a->mo.batches); break;
        case MO_TRIALS: st = cli_parse_size("--trials", optarg, 1, 1u << 20, &a->trials); break;
        case MO_SEED: st = cli_parse_u64("--seed", optarg, &a->seed); break;
        case MO_RTOL: st = cli_parse_double("--rtol", optarg, 1e-14, 0.1, &a->mo.rtol); break;
        case MO_MAXPREC: st = cli_parse_int("--max-prec", optarg, 128, 1L << 16, &a->max_prec); break;
        case MO_JSON: a->json = 1; break;
        case MO_CSV: a->csv = optarg; break;
        case MO_PLOT: a->plot = optarg; break;
        case MO_THREADS: st = cli_parse_threads(optarg, &a->threads); break;
        case '?':
            if (optind >= 1 && optind <= argc && argv[optind - 1][0] == '-' &&
                argv[optind - 1][1] == '-')
                return cli_usage("%s does not apply with --model (see 'attncheck condition "
                                 "--help', \"Trained models\")", argv[optind - 1]);
            return cli_bad_option(c, argv);
        default: return cli_bad_option(c, argv);
        }
        if (st)
            return st;
    }
    if ((st = cli_no_operands(argc, argv)))
        return st;
    if (a->plot && !cli_plot_terminal(a->plot))
        return cli_usage("--plot %s: the file name must end in .svg, .png or .pdf", a->plot);
    a->mo.max_prec = a->max_prec;
    a->mo.threads = a->threads;
    return AC_OK;
}

static int run_compare(model_cmp *cmp, const ac_mkappa_result *r, const model_args *a,
                       ac_err *err)
{
    const ac_mkappa_layer *ly = &r->layers[0];
    size_t N = ly->N_med, D = ly->D;
    int st;
    if ((st = ac_rmt_predict(&cmp->pred, N, D, err)))
        return st;
    cmp->pred_median = N == D ? cmp->pred.edelman_median : cmp->pred.tw_median;
    ac_cond_opts o;
    ac_cond_opts_default(&o);
    o.N = N;
    o.mode = AC_COND_ATTENTION;
    o.input_dim = r->width;
    o.seed = a->seed;
    o.trials = a->trials;
    o.rtol = a->mo.rtol;
    o.max_prec = a->max_prec;
    o.sched = ac_schedule_upto(a->max_prec);
    o.threads = a->threads;
    return ac_cond_run(&cmp->gauss, ly->H, ly->S, &o, err);
}

/* ---- outputs ---------------------------------------------------------------------- */

static const char *task_words(const ac_mkappa_result *r)
{
    return r->cfg.task == AC_TASK_TEXT ? "text (causal)" : "listops (padding masked)";
}

static void print_text(const model_args *a, const ac_mkappa_result *r, const model_cmp *cmp)
{
    const ac_mkappa_layer *l0 = &r->layers[0];
    const ac_rmt_pred *p = &cmp->pred;
    printf("Trained heads (paper 2, Theorem 3.2 on learned weights): %s\n", a->model);
    printf("model: %s, %zu layer(s), width %zu, %zu %s heads of size %zu (D = %zu), step %zu, "
           "%zu parameters\n", task_words(r), r->L, r->width, l0->H,
           r->cfg.model.kind == AC_NN_ATTN_FIXED ? "fixed" : "standard", l0->S, l0->D, r->step,
           r->nparams);
    printf("data: %s (%zu sequences); model loss %.4g, accuracy %.4g (initial weights: %.4g, "
           "%.4g)\n", r->source, r->sequences, r->loss, r->accuracy, r->init_loss,
           r->init_accuracy);
    printf("block: A = [A_1 ... A_h] per sequence, rows = real tokens (N = %zu..%zu, median %zu), "
           "D = %zu; kappa estimates (rtol %.2g, not certified)\n\n", l0->N_min, l0->N_max,
           l0->N_med, l0->D, a->mo.rtol);
    printf("Gaussian comparison at N = %zu, D = %zu (regime %s): first order %.4g, %s %.4g "
           "[%.4g, %.4g];\n  attention heads with Gaussian weights (input width %zu, %zu trials, "
           "non-causal): median %.4g [%.4g, %.4g]\n\n",
           l0->N_med, l0->D, ac_rmt_regime_name(p->regime), p->first_order,
           l0->N_med == l0->D ? "Edelman median" : "Tracy-Widom median", cmp->pred_median,
           l0->N_med == l0->D ? p->edelman_q05 : p->tw_q05,
           l0->N_med == l0->D ? p->edelman_q95 : p->tw_q95, r->width, cmp->gauss.trials,
           cmp->gauss.st.median, cmp->gauss.st.q05, cmp->gauss.st.q95);
    printf("%-6s %7s  %10s %10s %10s %10s  %12s %12s  %10s\n", "layer", "blocks", "median", "5%",
           "95%", "mean", "/Gauss pred", "/Gauss attn", "initial");
    for (size_t l = 0; l < r->L; l++) {
        const ac_mkappa_layer *ly = &r->layers[l];
        printf("%-6zu %7zu  %10.4g %10.4g %10.4g %10.4g  %12.3g %12.3g  %10.4g", l, ly->n,
               ly->st.median, ly->st.q05, ly->st.q95, ly->st.mean,
               ly->st.median / cmp->pred_median, ly->st.median / cmp->gauss.st.median,
               r->init[l].st.median);
        if (ly->n_unresolved)
            printf("  (%zu unresolved)", ly->n_unresolved);
        printf("\n");
    }
    printf("\n/Gauss pred, /Gauss attn: the trained median over the Gaussian prediction's median "
           "and over the median with Gaussian weights;\ninitial: the median for the run's "
           "initial weights (same data; `attncheck train` drew them with seed %llu, std %g).\n",
           (unsigned long long)r->cfg.seed, r->cfg.init_std);
}

static void json_layer(ac_json *j, const ac_mkappa_layer *ly, const ac_mkappa_layer *init,
                       const model_cmp *cmp)
{
    ac_json_begin_object(j);
    ac_json_kv_int(j, "layer", (long long)ly->layer);
    ac_json_kv_int(j, "blocks", (long long)ly->n);
    ac_json_kv_int(j, "N_min", (long long)ly->N_min);
    ac_json_kv_int(j, "N_median", (long long)ly->N_med);
    ac_json_kv_int(j, "N_max", (long long)ly->N_max);
    ac_json_kv_int(j, "D", (long long)ly->D);
    ac_json_kv_number(j, "kappa_median", ly->st.median);
    ac_json_kv_number(j, "kappa_q05", ly->st.q05);
    ac_json_kv_number(j, "kappa_q95", ly->st.q95);
    ac_json_kv_number(j, "kappa_mean", ly->st.mean);
    ac_json_kv_number(j, "kappa_min", ly->st.min);
    ac_json_kv_number(j, "kappa_max", ly->st.max);
    ac_json_kv_number(j, "elog_kappa", ly->st.elog);
    ac_json_kv_int(j, "unresolved", (long long)ly->n_unresolved);
    ac_json_kv_number(j, "ratio_gauss_pred", ly->st.median / cmp->pred_median);
    ac_json_kv_number(j, "ratio_gauss_attention", ly->st.median / cmp->gauss.st.median);
    ac_json_kv_number(j, "init_kappa_median", init->st.median);
    ac_json_kv_number(j, "init_kappa_q05", init->st.q05);
    ac_json_kv_number(j, "init_kappa_q95", init->st.q95);
    ac_json_key(j, "kappa");
    ac_json_begin_array(j);
    for (size_t i = 0; i < ly->n; i++)
        ac_json_number(j, ly->kappa[i]);
    ac_json_end_array(j);
    ac_json_end_object(j);
}

static void write_json(ac_json *j, const model_args *a, const ac_mkappa_result *r,
                       const model_cmp *cmp)
{
    const ac_rmt_pred *p = &cmp->pred;
    ac_json_begin_object(j);
    ac_json_kv_string(j, "command", "condition");
    ac_json_kv_string(j, "version", PACKAGE_VERSION);
    ac_json_kv_string(j, "mode", "model");
    ac_json_kv_string(j, "model", a->model);
    ac_json_kv_string(j, "task", ac_task_name(r->cfg.task));
    ac_json_kv_int(j, "step", (long long)r->step);
    ac_json_kv_int(j, "params", (long long)r->nparams);
    ac_json_kv_int(j, "layers", (long long)r->L);
    ac_json_kv_int(j, "width", (long long)r->width);
    ac_json_kv_int(j, "heads", (long long)r->layers[0].H);
    ac_json_kv_int(j, "head_dim", (long long)r->layers[0].S);
    ac_json_kv_string(j, "attention", r->cfg.model.kind == AC_NN_ATTN_FIXED ? "fixed" : "standard");
    ac_json_kv_string(j, "data", r->source);
    ac_json_kv_int(j, "sequences", (long long)r->sequences);
    ac_json_kv_number(j, "loss", r->loss);
    ac_json_kv_number(j, "accuracy", r->accuracy);
    ac_json_kv_number(j, "init_loss", r->init_loss);
    ac_json_kv_number(j, "init_accuracy", r->init_accuracy);
    ac_json_kv_number(j, "init_std", r->cfg.init_std);
    ac_json_kv_number(j, "rtol", a->mo.rtol);
    ac_json_kv_bool(j, "certified", 0);
    ac_json_key(j, "gaussian");
    ac_json_begin_object(j);
    ac_json_kv_int(j, "N", (long long)p->N);
    ac_json_kv_int(j, "D", (long long)p->D);
    ac_json_kv_string(j, "regime", ac_rmt_regime_name(p->regime));
    ac_json_kv_number(j, "first_order", p->first_order);
    ac_json_kv_number(j, "tw_point", p->tw_point);
    ac_json_kv_number(j, "tw_median", p->tw_median);
    ac_json_kv_number(j, "tw_q05", p->tw_q05);
    ac_json_kv_number(j, "tw_q95", p->tw_q95);
    ac_json_kv_number(j, "edelman_median", p->edelman_median);
    ac_json_kv_number(j, "prediction_median", cmp->pred_median);
    ac_json_kv_int(j, "attention_trials", (long long)cmp->gauss.trials);
    ac_json_kv_int(j, "attention_seed", (long long)a->seed);
    ac_json_kv_number(j, "attention_median", cmp->gauss.st.median);
    ac_json_kv_number(j, "attention_q05", cmp->gauss.st.q05);
    ac_json_kv_number(j, "attention_q95", cmp->gauss.st.q95);
    ac_json_end_object(j);
    ac_json_key(j, "layers");
    ac_json_begin_array(j);
    for (size_t l = 0; l < r->L; l++)
        json_layer(j, &r->layers[l], &r->init[l], cmp);
    ac_json_end_array(j);
    ac_json_end_object(j);
}

static void write_csv(FILE *f, const ac_mkappa_result *r, const model_cmp *cmp)
{
    const ac_rmt_pred *p = &cmp->pred;
    fputs("layer,heads,head_dim,D,N_min,N_median,N_max,blocks,kappa_median,kappa_q05,kappa_q95,"
          "kappa_mean,elog_kappa,unresolved,regime,first_order,tw_median,tw_q05,tw_q95,"
          "edelman_median,prediction_median,gauss_attention_median,gauss_attention_q05,"
          "gauss_attention_q95,ratio_prediction,ratio_gauss_attention,init_kappa_median,"
          "init_kappa_q05,init_kappa_q95\n", f);
    for (size_t l = 0; l < r->L; l++) {
        const ac_mkappa_layer *ly = &r->layers[l];
        fprintf(f, "%zu,%zu,%zu,%zu,%zu,%zu,%zu,%zu,%.10g,%.10g,%.10g,%.10g,%.10g,%zu,%s,%.10g,"
                "%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g\n",
                l, ly->H, ly->S, ly->D, ly->N_min, ly->N_med, ly->N_max, ly->n, ly->st.median,
                ly->st.q05, ly->st.q95, ly->st.mean, ly->st.elog, ly->n_unresolved,
                ac_rmt_regime_name(p->regime), p->first_order, p->tw_median, p->tw_q05,
                p->tw_q95, p->edelman_median, cmp->pred_median, cmp->gauss.st.median,
                cmp->gauss.st.q05, cmp->gauss.st.q95, ly->st.median / cmp->pred_median,
                ly->st.median / cmp->gauss.st.median, r->init[l].st.median, r->init[l].st.q05,
                r->init[l].st.q95);
    }
}

typedef struct {
    const model_args *a;
    const ac_mkappa_result *r;
    const model_cmp *cmp;
    const char *out;
} mplot_ctx;

/* kappa against the layer: the trained median with its 5-95% band, the
 * Gaussian-weight attention heads and the Gaussian prediction. */
static void write_plot(FILE *f, void *ctx)
{
    const mplot_ctx *c = ctx;
    const ac_mkappa_result *r = c->r;
    fprintf(f, "set terminal %s\nset output ", cli_plot_terminal(c->a->plot));
    cli_gp_quote(f, c->out);
    fputs("\n$data << EOD\n", f);
    for (size_t l = 0; l < r->L; l++) {
        const ac_mkappa_layer *ly = &r->layers[l];
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
          "title 'Gaussian block prediction (median)'\nset output\n", f);
}

static int write_outputs(const model_args *a, const ac_mkappa_result *r, const model_cmp *cmp)
{
    ac_err err;
    ac_atomic csv, plot;
    int st = AC_OK;
    char gpbuf[4096];
    const char *gp = NULL;
    memset(&csv, 0, sizeof csv);
    memset(&plot, 0, sizeof plot);
    ac_err_clear(&err);
    if (a->plot) {
        if (!(gp = cli_find_gnuplot(gpbuf, sizeof gpbuf)))
            return cli_fail(AC_ECANTCREAT, "--plot %s: gnuplot not found (install it: apt-get "
                            "install gnuplot-nox, or set ATTNCHECK_GNUPLOT)", a->plot);
        if (ac_atomic_open(&plot, a->plot, &err))
            return cli_fail_err(&err);
        mplot_ctx pc = {a, r, cmp, plot.tmp_path};
        int gs = cli_run_gnuplot(gp, write_plot, &pc);
        if (gs != 0) {
            st = cli_fail(AC_ECANTCREAT, "--plot %s: gnuplot (%s) failed (status %d)", a->plot,
                          gp, gs);
            goto out;
        }
    }
    if (a->csv) {
        if (ac_atomic_open(&csv, a->csv, &err)) {
            st = cli_fail_err(&err);
            goto out;
        }
        write_csv(csv.fp, r, cmp);
        if (ac_atomic_commit(&csv, &err)) {
            st = cli_fail_err(&err);
            goto out;
        }
    }
    if (a->plot && ac_atomic_commit(&plot, &err)) {
        st = cli_fail_err(&err);
        goto out;
    }
    if (a->json) {
        ac_json *j = cli_json_stdout();
        write_json(j, a, r, cmp);
        st = cli_json_finish(j);
    } else {
        print_text(a, r, cmp);
    }
out:
    ac_atomic_abort(&csv);
    ac_atomic_abort(&plot);
    return st;
}

static const cli_flag model_flags[] = {
    {"model", "--model"}, {"batches", "--batches"}, {NULL, NULL}};

int cmd_condition_model(int argc, char **argv)
{
    model_args a;
    ac_mkappa_result r;
    model_cmp cmp;
    ac_err err;
    int st;
    memset(&r, 0, sizeof r);
    memset(&cmp, 0, sizeof cmp);
    ac_err_clear(&err);
    if ((st = parse_model_args(&a, argc, argv)))
        return st;
    if (!a.model)
        return cli_usage("--model DIR is required here");
    cli_set_flags(model_flags);
    if ((st = ac_mkappa_run(&r, a.model, &a.mo, &err)) || (st = run_compare(&cmp, &r, &a, &err))) {
        st = cli_fail_err(&err);
        goto out;
    }
    if ((st = write_outputs(&a, &r, &cmp)))
        goto out;
    st = CLI_EXIT_UNDECIDED; /* a measurement: no claim is certified */
out:
    ac_cond_result_free(&cmp.gauss);
    ac_mkappa_free(&r);
    return st;
}
