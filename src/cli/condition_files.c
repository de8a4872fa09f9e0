/* condition_files.c — the output files of `attncheck condition` (and
 * merge): the --csv table (one row per h) and the gnuplot script of --plot
 * (kappa against h with every prediction; run by plot.c), from the
 * library's result. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <stdio.h>

#include "attncheck/fileio.h"
#include "attncheck/json.h"
#include "condition_cli.h"
#include "plot.h"

/* ---- CSV ----------------------------------------------------------------------------------- */

static void csv_num(FILE *f, double x)
{
    char buf[AC_FMT_DOUBLE_BUFSIZE];
    ac_fmt_double(buf, sizeof buf, x);
    fprintf(f, ",%s", buf);
}

/* a certified bound: 17 significant digits rounded outward (up: an upper
 * bound), so that the decimal written is itself a bound */
static void csv_bound(FILE *f, double x, int up)
{
    char buf[AC_FMT_BOUND_BUFSIZE];
    fprintf(f, ",%s", up ? ac_str_hi(buf, ".17g", x) : ac_str_lo(buf, ".17g", x));
}

void cond_write_csv(FILE *f, const ac_condition_request *q, const ac_condition_result *cr)
{
    const ac_cond_result *res = cr->res;
    size_t nh = cr->nh;
    fputs("h,d,D,N,E,mode,trials,regime,mean,se_mean,median,sd,q05,q95,min,max,elog,se_elog,"
          "mean_sigma1,mean_sigmin,first_order,err_first_order,tw_point,err_tw_point,tw_median,"
          "err_tw_median,tw_q05,tw_q95,tw_coverage,gordon_kappa95,above_gordon,gordon_smax_hi,"
          "gordon_smin_lo,edelman_median,err_edelman_median,edelman_elog,diff_edelman_elog,"
          "edelman_q05,edelman_q95,edelman_coverage,n_gram,n_svd,n_mpfr,n_unresolved,ks,"
          "verdict,n_proved,n_undecided,n_refuted,dev_hi,cert_mean_lo,cert_mean_hi,"
          "cert_median_lo,cert_median_hi,wall\n",
          f);
    for (size_t i = 0; i < nh; i++) {
        const ac_cond_result *r = &res[i];
        const ac_rmt_pred *p = &r->pred;
        int sq = !cr->hs[i].mean_reported;
        fprintf(f, "%zu,%zu,%zu,%zu,%zu,%s,%zu,%s", r->h, r->d, r->D, r->N, r->E,
                ac_cond_mode_name(r->mode), r->trials, ac_rmt_regime_name(p->regime));
        csv_num(f, sq ? NAN : r->st.mean);
        csv_num(f, sq ? NAN : r->st.se_mean);
        csv_num(f, r->st.median);
        csv_num(f, sq ? NAN : r->st.sd);
        csv_num(f, r->st.q05);
        csv_num(f, r->st.q95);
        csv_num(f, r->st.min);
        csv_num(f, r->st.max);
        csv_num(f, r->st.elog);
        csv_num(f, r->st.se_elog);
        csv_num(f, r->st.mean_sigma1);
        csv_num(f, r->st.mean_sigmin);
        csv_num(f, p->first_order);
        csv_num(f, r->err_first_order);
        csv_num(f, p->tw_point);
        csv_num(f, r->err_tw_point);
        csv_num(f, p->tw_median);
        csv_num(f, r->err_tw_median);
        csv_num(f, p->tw_q05);
        csv_num(f, p->tw_q95);
        csv_num(f, r->tw_coverage);
        csv_num(f, p->gordon_kappa95);
        csv_num(f, r->gordon_exceed);
        csv_num(f, p->gordon_smax_hi);
        csv_num(f, p->gordon_smin_lo);
        csv_num(f, p->edelman_median);
        csv_num(f, r->err_edelman_median);
        csv_num(f, p->edelman_elog);
        csv_num(f, r->diff_edelman_elog);
        csv_num(f, p->edelman_q05);
        csv_num(f, p->edelman_q95);
        csv_num(f, r->edelman_coverage);
        fprintf(f, ",%zu,%zu,%zu,%zu", r->n_route[0], r->n_route[1], r->n_route[2],
                r->n_unresolved);
        csv_num(f, r->bins ? r->ks : NAN);
        fprintf(f, ",%s,%zu,%zu,%zu", q->certify ? ac_verdict_name(r->verdict) : "",
                r->n_proved, r->n_undecided, r->n_refuted);
        csv_bound(f, q->certify ? r->dev_hi : NAN, 1);
        int cv = q->certify && r->cst.valid;
        csv_bound(f, cv && !sq ? r->cst.mean_lo : NAN, 0);
        csv_bound(f, cv && !sq ? r->cst.mean_hi : NAN, 1);
        csv_bound(f, cv ? r->cst.median_lo : NAN, 0);
        csv_bound(f, cv ? r->cst.median_hi : NAN, 1);
        csv_num(f, r->wall);
        fputc('\n', f);
    }
}

/* ---- the gnuplot script -------------------------------------------------------------------- */

/* The x axis: a tic at every h of the run (h = 3, 6, 12 too, which the
 * default powers of 2 miss), except where it would crowd the previous one
 * (closer than 1/14 of the axis on the log scale); the range padded by 10%
 * so that the first and last h are inside; the bottom margin reserved for
 * the tic labels, the x label and the key (up to 4 rows in a box) so that
 * the key does not cover the x label. */
static int cmp_size(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    return (a > b) - (a < b);
}

static void cond_write_xaxis(FILE *f, const ac_cond_result *res, size_t nh)
{
    size_t *h = nh ? malloc(nh * sizeof *h) : NULL;
    if (!h)
        return; /* gnuplot's own tics */
    for (size_t i = 0; i < nh; i++)
        h[i] = res[i].h;
    qsort(h, nh, sizeof *h, cmp_size); /* --heads may be in any order */
    double lo = (double)h[0] / 1.1, hi = (double)h[nh - 1] * 1.1;
    double span = log2(hi / lo), last = -INFINITY;
    fprintf(f, "set xrange [%.6g:%.6g]\nset xtics (", lo, hi);
    for (size_t i = 0; i < nh; i++) {
        double x = log2((double)h[i]);
        if (x - last < span / 14)
            continue;
        fprintf(f, "%s'%zu' %zu", i ? ", " : "", h[i], h[i]);
        last = x;
    }
    fputs(")\nset bmargin 8.5\n", f);
    free(h);
}

void cond_write_gnuplot_script(FILE *f, const ac_condition_request *q,
                               const ac_condition_result *cr, const char *plot)
{
    const ac_cond_result *res = cr->res;
    size_t nh = cr->nh;
    double ymin = INFINITY, ymax = 0;
    int have_ed = 0, have_tw = 0;
    /* the picture goes to gnuplot's standard output: no file name in the
     * script (plot.h) */
    fprintf(f, "set terminal %s\n", cli_plot_terminal(plot));
    /* NaN marks an undefined value: lines break there */
    fputs("$data << EOD\n", f);
    /* the rows in increasing h (--heads may be in any order): the curves
     * then join neighbouring h */
    size_t done = 0, prev = 0;
    for (size_t i = 0; i < nh; i++) {
        size_t m = nh; /* the smallest h above prev */
        for (size_t j = 0; j < nh; j++)
            if ((!done || res[j].h > prev) && (m == nh || res[j].h < res[m].h))
                m = j;
        prev = res[m].h;
        done = 1;
        const ac_cond_result *r = &res[m];
        const ac_rmt_pred *p = &r->pred;
        fprintf(f, "%zu", r->h);
        cli_gp_val(f, r->st.median);
        cli_gp_val(f, r->st.q05);
        cli_gp_val(f, r->st.q95);
        cli_gp_val(f, p->first_order);
        cli_gp_val(f, p->tw_point);
        cli_gp_val(f, p->tw_q05);
        cli_gp_val(f, p->tw_q95);
        cli_gp_val(f, p->gordon_kappa95);
        cli_gp_val(f, p->edelman_median);
        fputc('\n', f);
        double v[] = {r->st.median, r->st.q05, r->st.q95, p->first_order, p->tw_point,
                      p->edelman_median};
        for (size_t k = 0; k < sizeof v / sizeof *v; k++)
            if (isfinite(v[k]) && v[k] > 0) {
                ymin = fmin(ymin, v[k]);
                ymax = fmax(ymax, v[k]);
            }
        have_ed |= isfinite(p->edelman_median);
        have_tw |= isfinite(p->tw_point);
    }
    fputs("EOD\n", f);
    fprintf(f, "set title 'Theorem 3.2: {/Symbol k}(A), N = %zu, %s, %s, %zu trials per h'\n",
            q->seq, q->have_embed ? "fixed D" : "fixed d",
            q->mode == AC_COND_IID ? "i.i.d. Gaussian blocks" : "attention heads", q->trials);
    fputs("set xlabel 'heads h'\nset ylabel 'condition number {/Symbol k}'\n"
          "set logscale x 2\nset grid\nset key below maxrows 3 box\n",
          f);
    cond_write_xaxis(f, res, nh);
    if (isfinite(ymin) && ymax / ymin > 8)
        fputs("set logscale y\n", f);
    fputs("plot $data using 1:3:4 with filledcurves lc rgb '#c6dbef' title 'sample 5-95%', \\\n"
          "     $data using 1:2 with linespoints pt 7 lw 2 lc rgb '#08519c' "
          "title 'sample median', \\\n"
          "     $data using 1:5 with linespoints pt 4 dt 2 lw 2 lc rgb '#d62728' "
          "title 'first order (paper 2, eq. (6))', \\\n"
          "     $data using 1:9 with lines dt 3 lw 2 lc rgb '#7f7f7f' title 'Gordon 95% bound'",
          f);
    if (have_tw)
        fputs(", \\\n     $data using 1:6 with linespoints pt 6 lw 2 lc rgb '#2ca02c' "
              "title 'Tracy-Widom', \\\n"
              "     $data using 1:7 with lines dt 4 lc rgb '#2ca02c' title 'TW 5-95%', \\\n"
              "     $data using 1:8 with lines dt 4 lc rgb '#2ca02c' notitle",
              f);
    if (have_ed)
        fputs(", \\\n     $data using 1:10 with points pt 5 ps 1.5 lc rgb '#9467bd' "
              "title 'Edelman median (D = N)'",
              f);
    fputs("\nset output\n", f);
}
