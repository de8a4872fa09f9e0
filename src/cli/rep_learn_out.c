/* rep_learn_out.c — the outputs of `rep-theorem --learn` (rep_learn_impl.h):
 * the table, the JSON object, the CSV file and the gnuplot script (learned
 * error and certified lower bound against dk, log scale, the tolerance and
 * a vertical line where the exact criterion stops refuting C(tol)). */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attncheck/json.h"
#include "rep_learn_impl.h"
#include "json_contract.h"

/* ---- files ----------------------------------------------------------------- */

int rep_learn_files_open(const rep_learn_opts *o, rep_learn_files *f)
{
    ac_err err;
    int st;
    memset(f, 0, sizeof *f);
    ac_err_clear(&err);
    if (o->plot) {
        f->gp = cli_find_gnuplot(f->gpbuf, sizeof f->gpbuf);
        if (!f->gp)
            return cli_fail(AC_ECANTCREAT,
                            "--plot %s: gnuplot not found (install it: apt-get install "
                            "gnuplot-nox, or set ATTNCHECK_GNUPLOT); nothing was computed",
                            o->plot);
        if ((st = ac_atomic_open(&f->plot, o->plot, &err)))
            return cli_fail_err(&err);
    }
    if (o->csv && (st = ac_atomic_open(&f->csv, o->csv, &err))) {
        ac_atomic_abort(&f->plot);
        return cli_fail_err(&err);
    }
    return AC_OK;
}

void rep_learn_files_abort(rep_learn_files *f)
{
    ac_atomic_abort(&f->csv);
    ac_atomic_abort(&f->plot);
}

/* ---- text ------------------------------------------------------------------ */

static const char *short_verdict(ac_verdict v)
{
    return v == AC_PROVED ? "PROVED" : v == AC_REFUTED ? "REFUTED" : "UNDECIDED";
}

static void print_text(const learn_report *r)
{
    char b1[32], b2[32], b3[32], sent[1024];
    const learn_summary *s = r->s;
    printf("instance   %s", r->instance);
    if (s->rank >= 0)
        printf("; rank X = %ld", s->rank);
    printf("\n");
    printf("learning   one head per dk: fit-p (BFGS on KL(P || Softmax), at most %zu steps, "
           "best iterate), its weights certified at tol = %s\n",
           r->nrows ? r->rows[0].max_steps : 0, cli_num(b1, sizeof b1, r->tol));
    printf("exact      the criterion of doc/mathematics.md §3.4-3.6 for the same dk: a "
           "certified lower bound on the distance, C(tol)\n\n");
    printf("%5s %6s  %-10s %-10s %-9s | %-10s %-10s %-9s %-9s\n", "dk", "steps", "learned",
           "KL(P||S)", "learned", "dist >=", "dist <=", "C(tol)", "exact");
    printf("%5s %6s  %-10s %-10s %-9s | %-10s %-10s %-9s %-9s\n", "", "", "max|S-P|", "",
           "at tol", "(certif.)", "", "", "repr.");
    for (size_t i = 0; i < r->nrows; i++) {
        const learn_row *w = &r->rows[i];
        printf("%5zu %6zu  %-10s %-10.3g %-9s | %-10s %-10s %-9s %-9s\n", w->dk, w->steps,
               cli_num(b1, sizeof b1, w->learned.hi), w->kl, short_verdict(w->learned.verdict),
               cli_num(b2, sizeof b2, w->dist_lo), cli_num(b3, sizeof b3, w->dist_hi),
               short_verdict(w->verdict), short_verdict(w->exact));
    }
    printf("\n");
    rep_learn_sentence(sent, sizeof sent, s, r->tol);
    printf("transition %s\n", sent);
    printf("verdict    %s: the learned transition is where the exact criterion puts it "
           "[%.2f s]\n", s->inconsistent >= 0 ? "INCONSISTENT" : ac_verdict_name(s->outcome),
           r->seconds);
}

/* ---- JSON ------------------------------------------------------------------- */

static void json_dk(ac_json *j, const char *key, long v)
{
    if (v >= 0)
        ac_json_kv_int(j, key, v);
    else {
        ac_json_key(j, key);
        ac_json_null(j);
    }
}

static void write_json(ac_json *j, const learn_report *r)
{
    char sent[1024];
    const learn_summary *s = r->s;
    rep_learn_sentence(sent, sizeof sent, s, r->tol);
    cli_json_envelope_begin(j, "rep-theorem", s->inconsistent >= 0 ? "INCONSISTENT"
                                                                  : ac_verdict_name(s->outcome),
                            NULL); /* one certificate per row, under "rows" */
    cli_json_parameters_begin(j, r->seed);
    ac_json_kv_bool(j, "learn", 1);
    ac_json_kv_number(j, "tol", r->tol);
    cli_json_parameters_end(j);
    ac_json_kv_string(j, "mode", "learn");
    ac_json_kv_string(j, "claim", "learned heads reach max|Softmax - P| <= tol exactly at the "
                      "dk where the exact criterion does not refute C(tol)");
    ac_json_kv_number(j, "tol", r->tol);
    ac_json_key(j, "instance");
    ac_json_begin_object(j);
    ac_json_kv_string(j, "description", r->instance);
    ac_json_kv_int(j, "d", (long long)r->d);
    ac_json_kv_int(j, "n", (long long)r->n);
    if (s->rank >= 0)
        ac_json_kv_int(j, "rank", s->rank);
    ac_json_kv_uint(j, "seed", r->seed);
    ac_json_end_object(j);
    json_dk(j, "learned_transition", s->learned_from);
    json_dk(j, "criterion_transition", s->criterion_from);
    ac_json_kv_string(j, "summary", sent);
    cli_json_seconds(j, r->seconds);
    ac_json_key(j, "rows");
    ac_json_begin_array(j);
    for (size_t i = 0; i < r->nrows; i++) {
        const learn_row *w = &r->rows[i];
        ac_json_begin_object(j);
        ac_json_kv_int(j, "dk", (long long)w->dk);
        ac_json_key(j, "learned");
        ac_json_begin_object(j);
        ac_json_kv_int(j, "steps", (long long)w->steps);
        ac_json_kv_bool(j, "stalled", w->stalled);
        ac_json_kv_int(j, "best_step", (long long)w->best_step);
        ac_json_kv_number(j, "maxdev", w->dev);
        ac_json_kv_number(j, "kl", w->kl);
        ac_json_kv_string(j, "verdict", ac_verdict_name(w->learned.verdict));
        ac_json_key(j, "certificate");
        cli_json_cert(j, &w->learned);
        ac_json_kv_number(j, "seconds", w->learn_seconds);
        ac_json_end_object(j);
        ac_json_key(j, "exact");
        ac_json_begin_object(j);
        ac_json_kv_string(j, "verdict", ac_verdict_name(w->verdict));
        ac_json_kv_string(j, "representable", ac_verdict_name(w->exact));
        ac_json_kv_number(j, "dist_lo", w->dist_lo);
        ac_json_kv_number(j, "dist_hi", w->dist_hi);
        ac_json_kv_number(j, "seconds", w->exact_seconds);
        ac_json_end_object(j);
        ac_json_end_object(j);
    }
    ac_json_end_array(j);
    ac_json_end_object(j);
}

/* ---- CSV --------------------------------------------------------------------- */

static void csv_num(FILE *f, double x)
{
    char b[AC_FMT_DOUBLE_BUFSIZE];
    ac_fmt_double(b, sizeof b, x);
    fprintf(f, ",%s", isfinite(x) ? b : "");
}

static void write_csv(FILE *f, const learn_report *r)
{
    fputs("dk,steps,learned_maxdev,learned_kl,learned_lo,learned_hi,learned_verdict,dist_lo,"
          "dist_hi,exact_verdict,exact_representable,seconds\n", f);
    for (size_t i = 0; i < r->nrows; i++) {
        const learn_row *w = &r->rows[i];
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
    const learn_report *r;
    const char *out;
} plot_ctx;

static void write_plot(FILE *f, void *ctx)
{
    const plot_ctx *p = ctx;
    const learn_report *r = p->r;
    (void)p->out; /* the picture goes to gnuplot's standard output: no file name in the script */
    fprintf(f, "set terminal %s\n", cli_plot_terminal(r->o->plot));
    /* columns: dk, learned error (certified), the certified distance interval
     * [lower bound (NaN when 0), upper bound] of the exact check */
    fputs("\n$data << EOD\n", f);
    for (size_t i = 0; i < r->nrows; i++) {
        const learn_row *w = &r->rows[i];
        fprintf(f, "%zu", w->dk);
        cli_gp_val(f, w->learned.hi > 0 ? w->learned.hi : NAN);
        cli_gp_val(f, w->dist_lo > 0 ? w->dist_lo : NAN);
        cli_gp_val(f, w->dist_hi > 0 ? w->dist_hi : NAN);
        fputc('\n', f);
    }
    fputs("EOD\n", f);
    fprintf(f, "set title 'Theorem 1 on learned weights: d = %zu, n = %zu, seed %llu'\n", r->d,
            r->n, (unsigned long long)r->seed);
    fputs("set xlabel 'head size d_k'\nset ylabel 'max|Softmax - P|'\nset logscale y\n"
          "set grid\nset key below box\n", f);
    fprintf(f, "set xrange [%g:%g]\n", (double)r->rows[0].dk - 0.5,
            (double)r->rows[r->nrows - 1].dk + 0.5);
    if (r->s->criterion_from >= 0)
        fprintf(f, "set arrow from %ld, graph 0 to %ld, graph 1 nohead dt 2 lw 2 "
                "lc rgb '#2ca02c'\n", r->s->criterion_from, r->s->criterion_from);
    fputs("plot $data using 1:2 with linespoints pt 7 lw 2 lc rgb '#08519c' "
          "title 'learned head (certified error)', \\\n"
          "     $data using 1:3 with linespoints pt 4 dt 2 lw 2 lc rgb '#d62728' "
          "title 'certified lower bound on the distance', \\\n"
          "     $data using 1:4 with linespoints pt 8 dt 4 lw 2 lc rgb '#ff7f0e' "
          "title 'certified upper bound (weights of the exact check)', \\\n", f);
    fprintf(f, "     %.17g with lines dt 3 lw 2 lc rgb '#7f7f7f' title 'tol', \\\n", r->tol);
    fputs("     NaN with lines dt 2 lw 2 lc rgb '#2ca02c' "
          "title 'exact criterion: first d_k not refuted'\n", f);
}

/* ---- all outputs ------------------------------------------------------------------ */

int rep_learn_write(const learn_report *r, rep_learn_files *f, int json)
{
    ac_err err;
    int st;
    ac_err_clear(&err);
    if (r->o->plot) {
        plot_ctx pc = {r, f->plot.tmp_path};
        int gs = cli_run_gnuplot(f->gp, fileno(f->plot.fp), write_plot, &pc);
        if (gs != 0) {
            rep_learn_files_abort(f);
            return cli_fail(AC_ECANTCREAT, "--plot %s: gnuplot (%s) failed (status %d)",
                            r->o->plot, f->gp, gs);
        }
    }
    if (r->o->csv) {
        write_csv(f->csv.fp, r);
        if ((st = ac_atomic_commit(&f->csv, &err))) {
            rep_learn_files_abort(f);
            return cli_fail_err(&err);
        }
    }
    if (r->o->plot && (st = ac_atomic_commit(&f->plot, &err)))
        return cli_fail_err(&err);
    if (json) {
        ac_json *j = cli_json_stdout();
        write_json(j, r);
        return cli_json_finish(j);
    }
    print_text(r);
    return AC_OK;
}
