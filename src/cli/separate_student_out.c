/* separate_student_out.c — the files of `attncheck separate --student`
 * (separate.h): the CSV of the training curves and the gnuplot script of
 * --plot (staged and committed by plot.h's cli_plot_files); the table and
 * the JSON are separate_text.c's and the library's. */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "plot.h"
#include "separate.h"

static const char *kind_name(const ac_learn_t2_row *w)
{
    return w->fixed ? "fixed" : "standard";
}

/* ---- the CSV ------------------------------------------------------------------------ */

typedef struct {
    const ac_sep_request *q;
    const ac_sep_result *res;
} plot_ctx;

static void write_csv(FILE *f, void *ctx)
{
    const ac_sep_request *q = ((const plot_ctx *)ctx)->q;
    const ac_learn_t2_result *r = &((const plot_ctx *)ctx)->res->stu;
    fprintf(f, "kind,heads,head_size,seed,step,loss,eval_rel_error\n");
    for (size_t i = 0; i < r->nrows; i++) {
        const ac_learn_t2_row *w = &r->rows[i];
        for (size_t s = 0; s < w->nseeds; s++)
            for (size_t p = 0; p < w->ncurve; p++) {
                if (!w->curve_step[p])
                    continue;
                fprintf(f, "%s,%zu,%zu,%llu,%zu,%.17g,%.17g\n", kind_name(w), w->heads, w->hs,
                        (unsigned long long)(q->seed + s), w->curve_step[p],
                        w->curve_loss[s * w->ncurve + p], w->curve_rel[s * w->ncurve + p]);
            }
    }
}

/* ---- the plot ----------------------------------------------------------------------- */

/* Evaluation relative error against the step, one curve per student and
 * seed (log scale); the picture goes to gnuplot's standard output. */
static void write_gnuplot(FILE *f, void *ctx)
{
    const plot_ctx *p = ctx;
    const ac_learn_t2_result *r = &p->res->stu;
    const ac_mh *V = &p->res->V;
    fprintf(f, "set terminal %s\n", cli_plot_terminal(p->q->plot));
    fprintf(f, "\nset logscale y\nset format y '10^{%%L}'\nset xlabel 'step'\nset ylabel '|f-g|^2/|g|^2 (held out)'\n"
               "set key outside right\nset title 'students of g_V: d = %zu, h = %zu, dp = %zu'\n",
            V->d, V->h, V->hs);
    for (size_t i = 0; i < r->nrows; i++) {
        const ac_learn_t2_row *w = &r->rows[i];
        for (size_t s = 0; s < w->nseeds; s++) {
            fprintf(f, "$d%zu_%zu << EOD\n", i, s);
            for (size_t k = 0; k < w->ncurve; k++)
                if (w->curve_step[k]) {
                    fprintf(f, "%zu", w->curve_step[k]);
                    cli_gp_val(f, w->curve_rel[s * w->ncurve + k]);
                    fputc('\n', f);
                }
            fputs("EOD\n", f);
        }
    }
    fputs("plot", f);
    for (size_t i = 0; i < r->nrows; i++) {
        const ac_learn_t2_row *w = &r->rows[i];
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

int sep_student_files_write(const ac_sep_request *q, const ac_sep_result *res,
                            cli_plot_files *f)
{
    plot_ctx pc = {q, res};
    return cli_plot_files_commit(f, write_csv, write_gnuplot, &pc);
}
