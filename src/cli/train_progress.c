/* train_progress.c — what `attncheck train` shows while it runs: the
 * header lines, the progress bar, the per-step log (CSV or JSON lines) and
 * the evaluation lines (train_cli.h). */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "train_cli.h"
#include "tty_width.h"

void train_print_header(const ac_trainer *tr, size_t last, int nthreads)
{
    const ac_train_config *c = &tr->cfg;
    const ac_nn_config *m = &c->model;
    printf("task       %s: %s\n", ac_task_name(c->task), ac_trainer_data_summary(tr));
    if (m->arch == AC_NN_ARCH_TRANSFORMER)
        printf("model      %zu %s-LN layers, width %zu, %zu %s heads of size %zu, FFN %zu, "
               "%s; %zu parameters\n", m->layers, m->ln == AC_NN_LN_PRE ? "pre" : "post",
               m->width, m->heads, m->kind == AC_NN_ATTN_STANDARD ? "standard" : "fixed",
               tr->model.S, m->ffn, m->causal ? "causal" : "bidirectional",
               tr->model.nparams);
    else
        printf("model      %s: %zu %s heads of size %zu on d = %zu; %zu parameters\n",
               m->arch == AC_NN_ARCH_ATTENTION ? "one attention layer" : "attention scores",
               m->heads, m->kind == AC_NN_ATTN_STANDARD ? "standard" : "fixed", tr->model.S,
               m->width, tr->model.nparams);
    if (c->optimizer == AC_OPT_BFGS)
        printf("training   steps %zu..%zu of %zu, BFGS (GSL vector_bfgs2, one iteration per "
               "step), %d thread%s\n", tr->step + 1, last, c->steps, nthreads,
               nthreads == 1 ? "" : "s");
    else
        printf("training   steps %zu..%zu of %zu, batch %zu x %zu tokens, AdamW lr %g (warm-up "
               "%zu, %s), %d thread%s\n", tr->step + 1, last, c->steps, c->batch, c->seq, c->lr,
               c->warmup, c->schedule == AC_SCHED_COSINE ? "cosine" :
               c->schedule == AC_SCHED_LINEAR ? "linear" : "constant", nthreads,
               nthreads == 1 ? "" : "s");
    fflush(stdout);
}

/* The bar takes the room the text leaves on the row (at most 30 columns;
 * none when fewer than 8 are left), so that the line never wraps: a wrapped
 * line cannot be redrawn in place with '\r'.  It is redrawn at most every
 * 0.1 s, and always when FORCE is set: after an evaluation line (which
 * cleared it) and at the end of the run. */
void train_draw_bar(train_progress *rs, const ac_train_progress *p, double now, int force)
{
    if (!rs->bar || (!force && now - rs->t_last_draw < 0.1))
        return;
    const ac_step_info *si = p->step;
    const ac_eval_info *ev = p->last_eval;
    size_t steps = p->last;
    rs->t_last_draw = now;
    double el = now - rs->t_start;
    double tps = el > 0 ? p->tokens / el : 0;
    double done = (double)(si->step - p->first_step);
    double eta = done > 0 ? el / done * (double)(steps - si->step) : NAN;
    char eb[32], head[64], tail[160], bar[40], line[320];
    cli_fmt_duration(eb, sizeof eb, eta);
    snprintf(head, sizeof head, "  step %zu/%zu", si->step, steps);
    int k = snprintf(tail, sizeof tail, " loss %.4g", si->loss);
    if (ev && !isnan(ev->loss))
        k += snprintf(tail + k, sizeof tail - (size_t)k, " eval %.4f", ev->loss);
    snprintf(tail + k, sizeof tail - (size_t)k, " %.0f tok/s ETA %s", tps, eb);
    int cols = cli_tty_columns(2);
    if ((int)strlen(tail) > rs->tail_max) /* the bar only shrinks: it does not jitter */
        rs->tail_max = (int)strlen(tail);
    int w = cols - 1 - (int)strlen(head) - rs->tail_max - 3; /* " [" "]" */
    if (w > 30)
        w = 30;
    if (w >= 8) {
        int fill = (int)((double)w * (double)si->step / (double)steps);
        for (int i = 0; i < w; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[w] = 0;
        snprintf(line, sizeof line, "%s [%s]%s", head, bar, tail);
    } else {
        snprintf(line, sizeof line, "%s%s", head, tail);
    }
    cli_tty_line(stderr, line, cols);
}

void train_clear_bar(train_progress *rs)
{
    if (rs->bar) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
}

static void log_num(FILE *f, int jsonl, const char *key, double v, int *first)
{
    char b[AC_FMT_DOUBLE_BUFSIZE];
    if (jsonl) { /* every key in every row; non-finite as null (attncheck(1), JSON) */
        ac_fmt_double(b, sizeof b, v);
        fprintf(f, "%s\"%s\": %s", *first ? "" : ", ", key, isfinite(v) ? b : "null");
    } else {
        if (!isnan(v)) {
            ac_fmt_double(b, sizeof b, v);
            fprintf(f, "%s%s", *first ? "" : ",", b);
        } else {
            fprintf(f, "%s", *first ? "" : ",");
        }
    }
    *first = 0;
}

static const char log_columns[] =
    "step,lr,loss,grad_norm,accuracy,maxdev,eval_loss,eval_accuracy,eval_maxdev,tokens_per_s,"
    "seconds";

void train_log_row(train_progress *rs, const ac_step_info *si, const ac_eval_info *ev,
                   double tps, double secs)
{
    if (!rs->log)
        return;
    FILE *f = rs->log;
    int first = 1;
    if (rs->jsonl)
        fputc('{', f);
    log_num(f, rs->jsonl, "step", (double)si->step, &first);
    log_num(f, rs->jsonl, "lr", si->lr, &first);
    log_num(f, rs->jsonl, "loss", si->loss, &first);
    log_num(f, rs->jsonl, "grad_norm", si->grad_norm, &first);
    log_num(f, rs->jsonl, "accuracy", si->accuracy, &first);
    log_num(f, rs->jsonl, "maxdev", si->maxdev, &first);
    log_num(f, rs->jsonl, "eval_loss", ev ? ev->loss : NAN, &first);
    log_num(f, rs->jsonl, "eval_accuracy", ev ? ev->accuracy : NAN, &first);
    log_num(f, rs->jsonl, "eval_maxdev", ev ? ev->maxdev : NAN, &first);
    log_num(f, rs->jsonl, "tokens_per_s", tps, &first);
    log_num(f, rs->jsonl, "seconds", secs, &first);
    fputs(rs->jsonl ? "}\n" : "\n", f);
}

int train_log_open(train_progress *rs, const char *path, int jsonl, int append, ac_err *err)
{
    int to_stdout = strcmp(path, "-") == 0; /* "-": standard output */
    append = append && !to_stdout && access(path, F_OK) == 0;
    rs->log = to_stdout ? stdout : fopen(path, append ? "a" : "w");
    if (!rs->log)
        return ac_err_set(err, AC_ECANTCREAT, "%s: cannot create: %s", path, strerror(errno));
    rs->jsonl = jsonl;
    if (!rs->jsonl && (!append || ftell(rs->log) == 0))
        fprintf(rs->log, "%s\n", log_columns);
    return AC_OK;
}

void train_print_eval(const ac_trainer *tr, const ac_step_info *si, const ac_eval_info *ev,
                      double tps)
{
    if (tr->cfg.task == AC_TASK_FIT_P) { /* KL(P || Softmax); BFGS has no lr */
        printf("step %zu/%zu  KL %.6g", si->step, tr->cfg.steps, ev->loss);
        if (!isnan(si->lr))
            printf("  lr %.3g", si->lr);
    } else {
        printf("step %zu/%zu  loss %.6f  lr %.3g", si->step, tr->cfg.steps, si->loss, si->lr);
        printf("  eval loss %.6f", ev->loss);
    }
    if (!isnan(ev->accuracy))
        printf("  accuracy %.4f", ev->accuracy);
    if (!isnan(ev->maxdev))
        printf("  max dev %.3g", ev->maxdev);
    if (!isnan(ev->rel_mse))
        printf("  rel MSE %.3g", ev->rel_mse);
    printf("  %.0f tok/s\n", tps);
    fflush(stdout);
}
