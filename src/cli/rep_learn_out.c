/* rep_learn_out.c — the outputs of `rep-theorem --learn` (rep_learn.h): the
 * table, the CSV file and the gnuplot script (learned error and certified
 * lower bound against dk, log scale, the tolerance and a vertical line where
 * the exact criterion stops refuting C(tol)); the JSON object is the
 * library's.  The report's row of the experiment. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attncheck/json.h"
#include "attncheck/theorem1.h"
#include "plot.h"
#include "rep_learn.h"

/* ---- files ----------------------------------------------------------------- */

int rep_learn_files_open(const ac_rt_request *o, rep_learn_files *f)
{
    return cli_plot_files_open(f, o->csv, o->plot);
}

void rep_learn_files_abort(rep_learn_files *f)
{
    cli_plot_files_abort(f);
}

/* ---- text ------------------------------------------------------------------ */

static const char *short_verdict(ac_verdict v)
{
    return v == AC_PROVED ? "PROVED" : v == AC_REFUTED ? "REFUTED" : "UNDECIDED";
}

static void print_text(const ac_rt_result *res)
{
    char b1[AC_FMT_BOUND_BUFSIZE], b2[AC_FMT_BOUND_BUFSIZE], b3[AC_FMT_BOUND_BUFSIZE], sent[1024];
    const ac_learn_t1_result *r = &res->lt;
    const ac_learn_t1_summary *s = &r->s;
    printf("instance   %s", res->instance);
    if (s->rank >= 0)
        printf("; rank X = %ld", s->rank);
    printf("\n");
    if (s->masked)
        printf("head       masked%s: the softmax of each query over its visible keys; trained, "
               "certified and decided under the mask (doc/mathematics.md §3.8)\n",
               s->bias ? ", with query/key biases (X with a row of ones appended)" : "");
    else if (s->bias)
        printf("head       with query/key biases: an unbiased head on X with a row of ones "
               "appended (doc/mathematics.md §3.8)\n");
    printf("learning   one head per dk: fit-p (BFGS on KL(P || Softmax), at most %zu steps, "
           "best iterate), its weights certified at tol = %s\n",
           r->nrows ? r->rows[0].max_steps : 0, cli_num(b1, sizeof b1, res->tol));
    printf("exact      the criterion of doc/mathematics.md %s for the same dk: a "
           "certified lower bound on the distance, C(tol)\n", s->masked || s->bias
           ? "§3.8" : "§3.4-3.6");
    if ((s->masked || s->bias) && s->thr_exact)
        printf("threshold  exact representability from dk = %ld (certified)\n", s->thr_lo);
    else if ((s->masked || s->bias) && s->thr_hi >= 0)
        printf("threshold  exact representability from some dk in [%ld, %ld] (certified)\n",
               s->thr_lo < 0 ? 0 : s->thr_lo, s->thr_hi);
    printf("\n");
    printf("%5s %6s  %-10s %-10s %-9s | %-10s %-10s %-9s %-9s\n", "dk", "steps", "learned",
           "KL(P||S)", "learned", "dist >=", "dist <=", "C(tol)", "exact");
    printf("%5s %6s  %-10s %-10s %-9s | %-10s %-10s %-9s %-9s\n", "", "", "max|S-P|", "",
           "at tol", "(certif.)", "", "", "repr.");
    for (size_t i = 0; i < r->nrows; i++) {
        const ac_learn_t1_row *w = &r->rows[i];
        printf("%5zu %6zu  %-10s %-10.3g %-9s | %-10s %-10s %-9s %-9s\n", w->dk, w->steps,
               ac_str_hi(b1, ".3g", w->learned.hi), w->kl, short_verdict(w->learned.verdict),
               ac_str_lo(b2, ".3g", w->dist_lo), ac_str_hi(b3, ".3g", w->dist_hi),
               short_verdict(w->verdict), short_verdict(w->exact));
    }
    printf("\n");
    ac_learn_t1_sentence(sent, sizeof sent, s, res->tol);
    printf("transition %s\n", sent);
    printf("verdict    %s: the learned transition is where the exact criterion puts it "
           "[%.2f s]\n", ac_learn_t1_verdict_name(s), r->seconds);
}

/* ---- CSV --------------------------------------------------------------------- */

static void csv_num(FILE *f, double x)
{
    char b[AC_FMT_DOUBLE_BUFSIZE];
    ac_fmt_double(b, sizeof b, x);
    fprintf(f, ",%s", isfinite(x) ? b : "");
}

static void write_csv(FILE *f, const ac_learn_t1_result *r)
{
    fputs("dk,steps,learned_maxdev,learned_kl,learned_lo,learned_hi,learned_verdict,dist_lo,"
          "dist_hi,exact_verdict,exact_representable,seconds\n", f);
    for (size_t i = 0; i < r->nrows; i++) {
        const ac_learn_t1_row *w = &r->rows[i];
        fprintf(f, "%zu,%zu", w->dk, w->steps);
        csv_num(f, w->dev);
        csv_num(f, w->kl);
        csv_num(f, w->learned.lo);
        csv_num(f, w->learned.hi);
        fprintf(f, ",%s", ac_verdict_name(w->learned.verdict));
        csv_num(f, w->dist_lo);
        csv_num(f, w->dist_hi);
        fprintf(f, ",%s,%s", ac_verdict_name(w->verdict), ac_verdict_name(w->exact));
        csv_num(f, w->learn_seconds + w->exact_seconds);
        fputc('\n', f);
    }
}

/* ---- plot ---------------------------------------------------------------------- */

typedef struct {
    const ac_rt_request *q;
    const ac_rt_result *res;
} plot_ctx;

static void write_csv_cb(FILE *f, void *ctx)
{
    write_csv(f, &((const plot_ctx *)ctx)->res->lt);
}

static void write_plot(FILE *f, void *ctx)
{
    const plot_ctx *p = ctx;
    const ac_learn_t1_result *r = &p->res->lt;
    /* the picture goes to gnuplot's standard output: no file name in the script */
    fprintf(f, "set terminal %s\n", cli_plot_terminal(p->q->plot));
    /* columns: dk, learned error (certified), the certified distance interval
     * [lower bound (NaN when 0), upper bound] of the exact check */
    fputs("\n$data << EOD\n", f);
    for (size_t i = 0; i < r->nrows; i++) {
        const ac_learn_t1_row *w = &r->rows[i];
        fprintf(f, "%zu", w->dk);
        cli_gp_val(f, w->learned.hi > 0 ? w->learned.hi : NAN);
        cli_gp_val(f, w->dist_lo > 0 ? w->dist_lo : NAN);
        cli_gp_val(f, w->dist_hi > 0 ? w->dist_hi : NAN);
        fputc('\n', f);
    }
    fputs("EOD\n", f);
    fprintf(f, "set title 'Theorem 1 on learned weights: d = %zu, n = %zu, seed %llu'\n",
            p->res->X.rows, p->res->X.cols, (unsigned long long)p->q->seed);
    fputs("set xlabel 'head size d_k'\nset ylabel 'max|Softmax - P|'\nset logscale y\n"
          "set grid\nset key below box\n", f);
    fprintf(f, "set xrange [%g:%g]\n", (double)r->rows[0].dk - 0.5,
            (double)r->rows[r->nrows - 1].dk + 0.5);
    if (r->s.criterion_from >= 0)
        fprintf(f, "set arrow from %ld, graph 0 to %ld, graph 1 nohead dt 2 lw 2 "
                "lc rgb '#2ca02c'\n", r->s.criterion_from, r->s.criterion_from);
    fputs("plot $data using 1:2 with linespoints pt 7 lw 2 lc rgb '#08519c' "
          "title 'learned head (certified error)', \\\n"
          "     $data using 1:3 with linespoints pt 4 dt 2 lw 2 lc rgb '#d62728' "
          "title 'certified lower bound on the distance', \\\n"
          "     $data using 1:4 with linespoints pt 8 dt 4 lw 2 lc rgb '#ff7f0e' "
          "title 'certified upper bound (weights of the exact check)', \\\n", f);
    fprintf(f, "     %.17g with lines dt 3 lw 2 lc rgb '#7f7f7f' title 'tol', \\\n", p->res->tol);
    fputs("     NaN with lines dt 2 lw 2 lc rgb '#2ca02c' "
          "title 'exact criterion: first d_k not refuted'\n", f);
}

/* ---- all outputs ------------------------------------------------------------------ */

int rep_learn_write(const ac_rt_request *q, const ac_rt_result *res, rep_learn_files *f)
{
    int st;
    plot_ctx pc = {q, res};
    if ((st = cli_plot_files_commit(f, write_csv_cb, write_plot, &pc)))
        return st;
    if (q->json) {
        ac_json *j = cli_json_stdout();
        ac_cmd_rep_theorem.write_json(j, q, res);
        return cli_json_finish(j);
    }
    print_text(res);
    return AC_OK;
}

