/* cmd_inspect.c — `attncheck inspect`: every check on a pretrained model's
 * layers and heads.  The options, the run, every verdict and the JSON result
 * are the library's (src/commands/inspect.c, src/models/inspect.c); this file
 * prints one table per layer, writes --csv and --out-dir. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attncheck/inspect.h"
#include "cli.h"
#include "plot.h"

static const cli_flag in_flags[] = {
    {"dk_prime", "--dk-prime"},
    {"head", "--head"},
    {NULL, NULL},
};

/* "[lo, hi]" of a threshold: "15" when exact, "-" for an open end */
static const char *thr_text(char *buf, size_t n, const ac_t1_tol_threshold *t)
{
    if (t->lo < 0)
        snprintf(buf, n, "-");
    else if (t->exact)
        snprintf(buf, n, "%ld", t->lo);
    else if (t->hi < 0)
        snprintf(buf, n, "[%ld, >%zu]", t->lo, t->dk_max);
    else
        snprintf(buf, n, "[%ld, %ld]", t->lo, t->hi);
    return buf;
}

static const char *short_class(const ac_inspect_head *hd, int rope)
{
    if (rope)
        return "rope";
    return hd->masked ? (hd->bias ? "mask+bias" : "masked") : (hd->bias ? "bias" : "plain");
}

static void print_layer(const ac_inspect_layer *ly, double tol)
{
    char a[AC_FMT_BOUND_BUFSIZE], b[AC_FMT_BOUND_BUFSIZE], c[32], t[AC_FMT_BOUND_BUFSIZE];
    int rope = ly->nheads && strstr(ly->heads[0].klass, "RoPE") != NULL;
    printf("\n%s\n", ly->describe);
    if (ly->nheads)
        printf("  head class: %s\n", ly->heads[0].klass);
    printf("  %4s %4s %-9s %-12s %-9s", "head", "dk", "class", "thr@tol", "own dk");
    for (size_t j = 0; ly->nheads && j < ly->heads[0].ndist; j++) {
        char hdr[40];
        snprintf(hdr, sizeof hdr, "dist dk'=%zu [lo, hi] (decades)", ly->heads[0].dist[j].dk);
        printf(" %-32s", hdr);
    }
    printf(" %-9s %-9s %-9s %s\n", "self", "QK rank", "OV rank", "min P");
    for (size_t k = 0; k < ly->nheads; k++) {
        const ac_inspect_head *hd = &ly->heads[k];
        printf("  %4zu %4zu %-9s %-12s %-9s", hd->head, hd->dk, short_class(hd, rope),
               thr_text(t, sizeof t, &hd->thr), ac_verdict_name(hd->own));
        for (size_t j = 0; j < hd->ndist; j++) {
            const ac_inspect_dist *ds = &hd->dist[j];
            char cell[64];
            snprintf(cell, sizeof cell, "[%s, %s] (%s)", ac_str_lo(a, ".3g", ds->lo),
                     ac_str_hi(b, ".3g", ds->hi),
                     isfinite(ds->decades) ? (snprintf(c, sizeof c, "%.1f", ds->decades), c)
                                           : "inf");
            printf(" %-32s", cell);
        }
        char qk[32], ov[32];
        snprintf(qk, sizeof qk, hd->qk.rank_lo == hd->qk.rank_hi ? "%ld" : "[%ld, %ld]",
                 hd->qk.rank_lo, hd->qk.rank_hi);
        snprintf(ov, sizeof ov, hd->ov.rank_lo == hd->ov.rank_hi ? "%ld" : "[%ld, %ld]",
                 hd->ov.rank_lo, hd->ov.rank_hi);
        printf(" %-9s %-9s %-9s %s\n", ac_verdict_name(hd->self.verdict), qk, ov,
               ac_str_lo(a, ".3g", hd->pmin));
    }
    printf("  thr@tol: the smallest head size whose C(%g) is PROVED with the next smaller "
           "REFUTED (a range: sizes left undecided)\n", tol);
    char e[32], f[32], g[32];
    printf("  kappa [A_1 ... A_h] (%zu x %zu, as computed) = %s in [%s, %s], full rank %s; "
           "Gaussian prediction: median %s (5-95%%: %s .. %s)\n",
           ly->n, ly->h * ly->dk, ac_str_hi(t, ".3g", ly->kappa.kappa),
           ac_str_lo(a, ".3g", ly->kappa.kappa_lo),
           ac_str_hi(b, ".3g", ly->kappa.kappa_hi),
           ac_verdict_name(ly->kappa_full_rank), cli_num(e, sizeof e, ly->pred_median),
           cli_num(f, sizeof f, ly->pred_q05), cli_num(g, sizeof g, ly->pred_q95));
    printf("  Theorem 2 hypotheses: %s\n", ly->t2_line);
}

static void print_result(const ac_inspect_request *q, const ac_inspect_result *res)
{
    printf("model: %s\n", res->model_desc);
    printf("input: %s (n = %zu tokens)", res->input_kind, res->n);
    if (res->keep)
        printf("; attention mask: %zu padding, %zu real", res->padded, res->n - res->padded);
    printf("\n");
    for (size_t l = 0; l < res->nlayers; l++)
        print_layer(&res->layers[l], q->tol);
    printf("\nverdict: %s (the self-check: every head's own weights reproduce its pattern "
           "within tol = %g); %.1f s\n", ac_verdict_name(res->verdict), q->tol, res->seconds);
}

/* what --csv and --plot are written from */
typedef struct {
    const ac_inspect_result *res;
    const char *plot;
    double tol;
} plot_ctx;

static void write_csv(FILE *f, void *ctxv)
{
    const ac_inspect_result *res = ((const plot_ctx *)ctxv)->res;
    fprintf(f, "layer,head,dk,bias,masked,thr_lo,thr_hi,thr_exact,own_dk,self_check,"
               "self_hi,qk_rank_lo,qk_rank_hi,ov_rank_lo,ov_rank_hi");
    if (res->nlayers && res->layers[0].nheads)
        for (size_t j = 0; j < res->layers[0].heads[0].ndist; j++) {
            size_t k = res->layers[0].heads[0].dist[j].dk;
            fprintf(f, ",dist%zu_lo,dist%zu_hi,dist%zu_verdict", k, k, k);
        }
    fprintf(f, ",kappa,kappa_lo,kappa_hi,prediction_median\n");
    for (size_t l = 0; l < res->nlayers; l++) {
        const ac_inspect_layer *ly = &res->layers[l];
        for (size_t k = 0; k < ly->nheads; k++) {
            const ac_inspect_head *hd = &ly->heads[k];
            fprintf(f, "%zu,%zu,%zu,%d,%d,%ld,%ld,%d,%s,%s,%.17g,%ld,%ld,%ld,%ld", hd->layer,
                    hd->head, hd->dk, hd->bias, hd->masked, hd->thr.lo, hd->thr.hi,
                    hd->thr.exact, ac_verdict_name(hd->own), ac_verdict_name(hd->self.verdict),
                    hd->self.hi, hd->qk.rank_lo, hd->qk.rank_hi, hd->ov.rank_lo,
                    hd->ov.rank_hi);
            for (size_t j = 0; j < hd->ndist; j++)
                fprintf(f, ",%.17g,%.17g,%s", hd->dist[j].lo, hd->dist[j].hi,
                        ac_verdict_name(hd->dist[j].verdict));
            fprintf(f, ",%.17g,%.17g,%.17g,%.17g\n", ly->kappa.kappa, ly->kappa.kappa_lo,
                    ly->kappa.kappa_hi, ly->pred_median);
        }
    }
}

/* --plot: on the left the layer x head map of the thresholds at tol (the
 * colour: the smallest head size PROVED; the label: the threshold or its
 * certified range; blank where no size is proved), on the right kappa per
 * layer (its certified enclosure as an error bar) beside the Gaussian
 * prediction's median and 5-95% band. */
static void write_plot(FILE *f, void *ctxv)
{
    const plot_ctx *c = ctxv;
    const ac_inspect_result *res = c->res;
    char t[AC_FMT_BOUND_BUFSIZE];
    size_t H = res->nlayers ? res->layers[0].nheads : 0;
    fprintf(f, "set terminal %s\n", cli_plot_terminal(c->plot));
    fputs("$thr << EOD\n", f);
    for (size_t l = 0; l < res->nlayers; l++)
        for (size_t k = 0; k < res->layers[l].nheads; k++) {
            const ac_inspect_head *hd = &res->layers[l].heads[k];
            fprintf(f, "%zu %zu", hd->layer, hd->head);
            cli_gp_val(f, hd->thr.hi >= 0 ? (double)hd->thr.hi : NAN);
            fprintf(f, " \"%s\"\n", thr_text(t, sizeof t, &hd->thr)); /* digits, [ , ] > - */
        }
    fputs("EOD\n$kap << EOD\n", f);
    for (size_t l = 0; l < res->nlayers; l++) {
        const ac_inspect_layer *ly = &res->layers[l];
        const double v[6] = {ly->kappa.kappa, ly->kappa.kappa_lo, ly->kappa.kappa_hi,
                             ly->pred_median, ly->pred_q05, ly->pred_q95};
        fprintf(f, "%zu", ly->layer);
        for (int k = 0; k < 6; k++)
            cli_gp_val(f, v[k] > 0 ? v[k] : NAN); /* a log axis: 0 is off the plot */
        fputc('\n', f);
    }
    fputs("EOD\n", f);
    size_t l0 = res->nlayers ? res->layers[0].layer : 0;
    size_t l1 = res->nlayers ? res->layers[res->nlayers - 1].layer : 0;
    size_t h0 = H ? res->layers[0].heads[0].head : 0;
    size_t h1 = H ? res->layers[0].heads[H - 1].head : 0;
    fputs("set multiplot layout 1,2 title ", f);
    {
        char title[2400];
        snprintf(title, sizeof title, "attncheck inspect: %s (n = %zu, tol = %g)",
                 ac_model_family_name(res->m.family), res->n, c->tol);
        cli_gp_quote(f, title);
    }
    fprintf(f, "\nset title 'threshold at tol (a range: undecided between)'\nset xlabel 'head'\nset ylabel 'layer'\n"
               "set xrange [%g:%g]\nset yrange [%g:%g]\nset xtics 1\nset ytics 1\n"
               "set cblabel 'head size'\nset cbrange [0:%zu]\nset palette rgbformulae 33,13,10\n"
               "plot $thr using 2:1:(0.5):(0.5):3 with boxxyerror fs solid lc palette notitle, "
               "'' using 2:1:4 with labels notitle\n",
            (double)h0 - 0.5, (double)h1 + 0.5, (double)l1 + 0.5, (double)l0 - 0.5, res->m.dk);
    fprintf(f, "set title 'kappa of [A_1 ... A_h] per layer'\nset xlabel 'layer'\n"
               "set ylabel 'kappa'\nset yrange [*:*] noreverse\nset logscale y\n"
               "set ytics autofreq\nset xrange [%g:%g]\nunset colorbox\nset key top left\n"
               "plot $kap using 1:6:7 with filledcurves fs transparent solid 0.2 lc rgb "
               "'#1f77b4' title 'Gaussian 5-95%%', '' using 1:5 with linespoints lc rgb "
               "'#1f77b4' title 'Gaussian median', '' using 1:2:3:4 with yerrorbars pt 7 lc "
               "rgb '#d62728' title 'kappa [lo, hi]'\nunset multiplot\n",
            (double)l0 - 0.5, (double)l1 + 0.5);
}

int cli_inspect_outputs(ac_request *r, const void *qv, const void *rv, cli_plot_files *files,
                        int json)
{
    const ac_inspect_request *q = qv;
    const ac_inspect_result *res = rv;
    int st;
    if (files->csv_name || files->plot_name) {
        plot_ctx pc = {res, files->plot_name, q->tol};
        if ((st = cli_plot_files_commit(files, write_csv, write_plot, &pc)))
            return st;
    }
    if (json)
        return cli_print_json(r);
    if (res->shard)
        printf("shard %zu/%zu: (layer, head) pairs %zu..%zu of %zu, written to %s\n"
               "(combine a complete set with: attncheck merge FILE...)\n", q->shard[0],
               q->shard[1], res->pair_lo, res->pair_hi - 1, res->pairs, q->shard_out);
    else
        print_result(q, res);
    return AC_OK;
}

int cmd_inspect(int argc, char **argv)
{
    ac_request *r = NULL;
    cli_plot_files files;
    ac_err err;
    int st;
    memset(&files, 0, sizeof files);
    ac_err_clear(&err);
    if (ac_request_new(&r, "inspect", &err))
        return cli_fail_err(&err);
    cli_set_flags(in_flags);
    if ((st = cli_parse_request(r, argc, argv)))
        goto out;
    const ac_inspect_request *q = ac_request_options(r);
    if ((st = cli_check_request(r)) || (st = cli_plot_files_open(&files, q->csv, q->plot)))
        goto out;
    if ((st = cli_run_request(r, NULL)))
        goto out;
    const ac_inspect_result *res = ac_request_result(r);
    if (q->out_dir && (st = cli_write_outdir(r, q->out_dir)))
        goto out;
    if ((st = cli_inspect_outputs(r, q, res, &files, q->json)))
        goto out;
    st = ac_request_status(r);
out:
    cli_plot_files_abort(&files);
    ac_request_free(r);
    return st;
}
