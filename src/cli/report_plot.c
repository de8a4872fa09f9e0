/* report_plot.c — the summary figure of `attncheck report --plot`
 * (report_plot.h): one row of marks per check — on the left the verdict
 * expected (open circle) and the verdict found (filled: green
 * as predicted, red contradicting, orange undecided or failed), on the
 * right the certified bound on a log axis when the row has one. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot.h"
#include "report_plot.h"

int report_plot_open(report_plot *p, const char *path)
{
    ac_err err;
    ac_err_clear(&err);
    p->path = path;
    if (!path)
        return AC_OK;
    p->gp = cli_find_gnuplot(p->gpbuf, sizeof p->gpbuf);
    if (!p->gp)
        return cli_fail(AC_ECANTCREAT,
                        "--plot %s: gnuplot not found (install it: apt-get install "
                        "gnuplot-nox, or set ATTNCHECK_GNUPLOT); nothing was computed",
                        path);
    if (ac_atomic_open(&p->out, path, &err))
        return cli_fail_err(&err);
    return AC_OK;
}

void report_plot_abort(report_plot *p)
{
    ac_atomic_abort(&p->out);
}

double report_bound_value(const char *bound, int *rel)
{
    const char *le = NULL, *ge = NULL;
    for (const char *s = bound; (s = strstr(s, "<=")); s += 2)
        le = s;
    for (const char *s = bound; (s = strstr(s, ">=")); s += 2)
        ge = s;
    const char *at = le && (!ge || le > ge) ? le : ge;
    *rel = 0;
    if (!at)
        return NAN;
    char *end;
    double v = strtod(at + 2, &end);
    if (end == at + 2 || !isfinite(v))
        return NAN;
    *rel = at == le ? 1 : -1;
    return v;
}

/* The column of a verdict on the left panel: PROVED, REFUTED, UNDECIDED. */
static int verdict_x(ac_verdict v)
{
    return (unsigned)v <= AC_UNDECIDED ? (int)v : 2;
}

/* The colour of a row by its outcome (ac_report_row_outcome): green as
 * predicted, red contradicting, orange undecided or not run. */
static const long outcome_color[] = {
    [AC_PROVED] = 0x2ca02c, [AC_REFUTED] = 0xd62728, [AC_UNDECIDED] = 0xff7f0e};

typedef struct {
    const ac_report *rep;
    const char *term, *out;
} plot_ctx;

static void write_data(FILE *f, const ac_report *rep, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = 0;
    fputs("$data << EOD\n", f);
    for (size_t i = 0; i < rep->n; i++) {
        const ac_report_row *r = &rep->rows[i];
        int rel;
        double b = r->error ? NAN : report_bound_value(r->bound, &rel);
        long color = outcome_color[ac_report_row_outcome(r)];
        if (!(b > 0)) /* not drawn on the log axis */
            rel = 0;
        else {
            *lo = fmin(*lo, b);
            *hi = fmax(*hi, b);
        }
        fprintf(f, "%zu %d %d %ld", i, verdict_x(r->expected),
                r->error ? 2 : verdict_x(r->verdict), color);
        cli_gp_val(f, rel ? b : NAN);
        fprintf(f, " %d\n", rel);
    }
    fputs("EOD\n", f);
}

/* The claims as the tics of the rows (the program's own texts). */
static void write_row_tics(FILE *f, const ac_report *rep)
{
    fputs("set ytics (", f);
    for (size_t i = 0; i < rep->n; i++) {
        if (i)
            fputs(", ", f);
        /* enhanced text: '_', '^', '{', '}', '@', '&', '~' have meanings;
         * a tic label is a format: '%' is written twice */
        char buf[2 * sizeof rep->rows[i].claim];
        size_t k = 0;
        for (const char *s = rep->rows[i].claim; *s && k + 2 < sizeof buf; s++) {
            if (strchr("_^{}@&~\\", *s))
                buf[k++] = '\\';
            else if (*s == '%')
                buf[k++] = '%';
            buf[k++] = *s;
        }
        buf[k] = 0;
        cli_gp_quote(f, buf);
        fprintf(f, " %zu", i);
    }
    fputs(")\n", f);
}

static void write_script(FILE *f, void *ctx)
{
    const plot_ctx *p = ctx;
    const ac_report *rep = p->rep;
    double lo, hi;
    /* the picture goes to gnuplot's standard output, the staged file: no
     * file name in the script (plot.h) */
    fprintf(f, "set terminal %s\n", p->term);
    write_data(f, rep, &lo, &hi);
    fprintf(f, "set multiplot title 'attncheck report: %zu checks on built-in defaults "
               "(seed %llu%s)'\n",
            rep->n, (unsigned long long)rep->seed, rep->quick ? ", quick" : "");
    fprintf(f, "set yrange [%g:-0.6]\nset tmargin at screen 0.90\n"
               "set bmargin at screen 0.20\nset grid ytics\nset tics front\nset ytics nomirror\n",
            (double)rep->n - 0.4);
    fputs("set label 1 'verdict found: green as predicted, red contradicting, orange "
          "undecided or not run' at screen 0.5, 0.935 center font ',10'\n",
          f);
    /* left: verdict against expectation */
    write_row_tics(f, rep);
    fputs("set lmargin at screen 0.37\nset rmargin at screen 0.62\n"
          "set xrange [-0.6:2.6]\nset xtics ('PROVED' 0, 'REFUTED' 1, 'UNDECIDED' 2) scale 0.5 font ',10'\n"
          "set grid xtics\nset xlabel 'verdict'\n"
          "set key at screen 0.37, 0.085 left top vertical box reverse Left samplen 1\n"
          "plot $data using 2:1 with points pt 6 ps 2.2 lc rgb '#444444' "
          "title 'verdict predicted', \\\n"
          "     $data using 3:1:4 with points pt 7 ps 1.2 lc rgb variable "
          "title 'verdict found'\n",
          f);
    /* right: the certified bounds */
    fputs("set lmargin at screen 0.65\nset rmargin at screen 0.97\n"
          "set ytics 1 format ''\nunset grid\nset grid xtics ytics\nunset label 1\n"
          "set xlabel 'certified bound (each row its own quantity)'\n"
          "set key at screen 0.65, 0.085 left top vertical box reverse Left samplen 1\n",
          f);
    if (isfinite(lo) && hi > 0) {
        /* at most about 5 labelled decades */
        double step = pow(10, ceil((log10(hi / lo) + 2) / 5));
        fprintf(f, "set logscale x\nset format x '10^{%%L}'\nset xrange [%.6g:%.6g]\n"
                   "set xtics %.6g\nset mxtics 10\n", lo / 10, hi * 10, step);
        fputs("plot $data using ($6 > 0 ? $5 : NaN):1 with points pt 11 ps 1.6 "
              "lc rgb '#1f77b4' title 'upper bound (<=)', \\\n"
              "     $data using ($6 < 0 ? $5 : NaN):1 with points pt 9 ps 1.6 "
              "lc rgb '#9467bd' title 'lower bound (>=)'\n",
              f);
    } else { /* no row has a numeric bound: an empty, labelled panel */
        fputs("set xrange [0:1]\nset xtics ('none' 0.5)\n"
              "plot NaN notitle\n",
              f);
    }
    fputs("unset multiplot\n", f);
}

int report_plot_write(report_plot *p, const ac_report *rep)
{
    ac_err err;
    ac_err_clear(&err);
    if (!p->path)
        return AC_OK;
    plot_ctx c = {rep, cli_plot_terminal(p->path), p->out.tmp_path};
    int gs = cli_run_gnuplot(p->gp, fileno(p->out.fp), write_script, &c);
    if (gs != 0)
        return cli_fail(AC_ECANTCREAT, "--plot %s: gnuplot (%s) failed (status %d)", p->path,
                        p->gp, gs);
    if (ac_atomic_commit(&p->out, &err))
        return cli_fail_err(&err);
    return AC_OK;
}
