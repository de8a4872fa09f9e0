/* cmd_condition.c — `attncheck condition`: Theorem 3.2 of Saratchandran et
 * al. (2025) (paper 2).  The options, the runs (sweep, shard, --model), the
 * verdicts and the JSON result are the library's
 * (src/commands/condition.c); this file parses, draws the progress line,
 * prints --trace, stages the output files before the run and writes the
 * outputs (condition_cli.h lists the files). */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attncheck/commands.h"
#include "attncheck/json.h"
#include "condition_cli.h"
#include "plot.h"
#include "tty_width.h"

/* How condition spells the library's parameters (ac_err.fields); the
 * others are "--" + the field name (trials, rtol, max_prec, bins, model,
 * batches). */
static const cli_flag cond_flags[] = {
    {"N", "--seq"}, {"h", "--heads"}, {"d", "--head-dim"}, {NULL, NULL}};

/* ---- progress ------------------------------------------------------------------ */

typedef struct {
    int on;
    const ac_condition_request *q; /* the (h, d) list and the sizes, for the ETA */
    double last;
    int drawn;
    double t0;                      /* when the run started */
} progress_state;

/* The work of one sample of the i-th h, in the units of the ETA: the SVD
 * or Gram eigenvalues of an N x D block cost about N D min(N, D) flops,
 * drawing and reducing it about 32 per entry (measured: 15-50 ns per
 * entry against about 1 ns per flop). */
static double progress_work(const ac_condition_request *q, size_t i)
{
    double N = (double)q->seq, D = (double)q->heads.v[i] * (double)q->dims[i];
    return N * D * (fmin(N, D) + 32);
}

/* The progress line, cut to the terminal's width: the h, the samples done
 * and an ETA from the time so far, the samples still to run weighted by
 * progress_work (an estimate: the routes differ in cost). */
static void progress_cb(void *ctx, size_t idx, size_t done, size_t total)
{
    progress_state *p = ctx;
    double t = ac_seconds();
    if (!p->on || (done < total && t - p->last < 0.1))
        return;
    p->last = t;
    size_t nh = p->q->heads.n;
    double wdone = 0, wall = 0;
    for (size_t i = 0; i < nh; i++) {
        double w = progress_work(p->q, i) * (double)total;
        wall += w;
        if (i < idx)
            wdone += w;
        else if (i == idx)
            wdone += w * (double)done / (double)(total ? total : 1);
    }
    char eb[32], line[256];
    /* none in the first half second, which start-up costs dominate */
    cli_fmt_duration(eb, sizeof eb,
                     wdone > 0 && t > p->t0 + 0.5 ? (t - p->t0) / wdone * (wall - wdone) : NAN);
    snprintf(line, sizeof line, "attncheck condition: h = %zu (%zu of %zu): %zu/%zu samples, "
             "ETA %s", p->q->heads.v[idx], idx + 1, nh, done, total, eb);
    cli_tty_line(stderr, line, cli_tty_columns(2));
    p->drawn = 1;
}

static void progress_clear(progress_state *p)
{
    if (p->on && p->drawn) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        p->drawn = 0;
    }
}

/* --trace: one line per sample of r. */
static void print_trace(const ac_cond_result *r, int certify)
{
    for (size_t t = 0; t < r->trials; t++) {
        const ac_cond_sample *s = &r->samples[t];
        printf("h = %zu, trial %zu: kappa %.10g (sigma_1 %.10g, sigma_min %.10g), "
               "route %s%s, relerr <= %.2g",
               r->h, t, s->kappa, s->sigma1, s->sigmin,
               ac_cond_route_name((ac_cond_route)s->route), s->resolved ? "" : " unresolved",
               s->relerr);
        if (s->route == AC_COND_MPFR)
            printf(", %ld bits", s->prec);
        if (certify)
        {
            char b1[AC_FMT_BOUND_BUFSIZE], b2[AC_FMT_BOUND_BUFSIZE];
            printf("; %s at stage %d: kappa in [%s, %s]", ac_verdict_name(s->cert),
                   s->cert_stage, ac_str_lo(b1, ".12g", s->kappa_lo),
                   ac_str_hi(b2, ".12g", s->kappa_hi));
        }
        printf("\n");
    }
}

/* after each h: the trace of its samples, below the progress line */
static void done_cb(void *ctx, size_t i, const ac_cond_result *r)
{
    progress_state *p = ctx;
    (void)i;
    if (p->q->trace) {
        progress_clear(p);
        print_trace(r, p->q->certify);
    }
}

/* ---- the output files ------------------------------------------------------------ */

int cond_files_open(cond_files *f, const char *csv, const char *plot)
{
    ac_err err;
    ac_err_clear(&err);
    memset(f, 0, sizeof *f);
    f->csv = csv;
    f->plot = plot;
    if (plot) {
        f->gp = cli_find_gnuplot(f->gpbuf, sizeof f->gpbuf);
        if (!f->gp)
            return cli_fail(AC_ECANTCREAT,
                            "--plot %s: gnuplot not found (install it: apt-get install "
                            "gnuplot-nox, or set ATTNCHECK_GNUPLOT); nothing was computed",
                            plot);
        if (ac_atomic_open(&f->fplot, plot, &err))
            return cli_fail_err(&err);
    }
    if (csv && ac_atomic_open(&f->fcsv, csv, &err)) {
        ac_atomic_abort(&f->fplot);
        return cli_fail_err(&err);
    }
    return AC_OK;
}

void cond_files_abort(cond_files *f)
{
    ac_atomic_abort(&f->fcsv);
    ac_atomic_abort(&f->fplot);
}

typedef struct {
    const ac_condition_request *q;
    const ac_condition_result *res;
    const char *plot;
} plot_ctx;

static void write_plot(FILE *f, void *ctx)
{
    const plot_ctx *p = ctx;
    cond_write_gnuplot_script(f, p->q, p->res, p->plot);
}

int cond_write_outputs(ac_request *r, const ac_condition_request *q,
                       const ac_condition_result *res, cond_files *f, int json)
{
    ac_err err;
    ac_err_clear(&err);
    if (f->plot) {
        plot_ctx pc = {q, res, f->plot}; /* no file name in the script (plot.h) */
        fflush(f->fplot.fp);
        int gs = cli_run_gnuplot(f->gp, fileno(f->fplot.fp), write_plot, &pc);
        if (gs != 0)
            return cli_fail(AC_ECANTCREAT, "--plot %s: gnuplot (%s) failed (status %d)", f->plot,
                            f->gp, gs);
        struct stat sb; /* gnuplot does not report every failed write */
        if (fstat(fileno(f->fplot.fp), &sb) != 0 || sb.st_size == 0)
            return cli_fail(AC_ECANTCREAT, "--plot %s: gnuplot (%s) wrote nothing", f->plot,
                            f->gp);
    }
    if (f->csv) {
        cond_write_csv(f->fcsv.fp, q, res);
        if (ac_atomic_commit(&f->fcsv, &err))
            return cli_fail_err(&err);
    }
    if (f->plot && ac_atomic_commit(&f->fplot, &err))
        return cli_fail_err(&err);
    if (json)
        return cli_print_json(r);
    cond_print_text(q, res);
    return AC_OK;
}

/* ---- the command ---------------------------------------------------------------- */

int cmd_condition(int argc, char **argv)
{
    ac_request *r = NULL;
    cond_files files;
    ac_err err;
    int st;
    memset(&files, 0, sizeof files);
    ac_err_clear(&err);
    if (ac_request_new(&r, "condition", &err))
        return cli_fail_err(&err);
    if ((st = cli_parse_request(r, argc, argv)))
        goto out;
    const ac_condition_request *q = ac_request_options(r);
    cli_set_flags(q->model ? NULL : cond_flags);
    /* everything that can fail cheaply fails before the sampling starts: the
     * rules, the sizes and the memory (the library's check), gnuplot and the
     * output files (--model writes its files after its run) */
    if ((st = cli_check_request(r)) ||
        (!q->model && (st = cond_files_open(&files, q->csv, q->plot))))
        goto out;
    progress_state prog;
    memset(&prog, 0, sizeof prog);
    prog.on = isatty(2);
    prog.q = q;
    prog.t0 = ac_seconds();
    ac_condition_hooks hooks = {progress_cb, done_cb, &prog};
    st = cli_run_request(r, &hooks);
    progress_clear(&prog);
    if (st)
        goto out;
    const ac_condition_result *res = ac_request_result(r);
    if (res->model) {
        st = cond_model_outputs(r, q, res, q->json);
    } else if (res->shard && q->json) {
        st = cli_print_json(r);
    } else if (res->shard) {
        printf("shard %zu/%zu: trials %zu..%zu of %zu for each of %zu head counts, written to "
               "%s\n(combine a complete set with: attncheck merge FILE...)\n",
               q->shard[0], q->shard[1], res->lo, res->hi - 1, q->trials, res->nh,
               q->samples_out);
    } else {
        st = cond_write_outputs(r, q, res, &files, q->json);
    }
    if (!st)
        st = ac_request_status(r);
out:
    cond_files_abort(&files);
    ac_request_free(r);
    return st;
}
