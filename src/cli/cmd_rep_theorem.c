/* cmd_rep_theorem.c — `attncheck rep-theorem`: Theorem 1 on one instance.
 * The options, the run and the JSON result are the library's
 * (src/commands/rep_theorem.c); this file prints the text result and
 * writes the files (--out-dir; --learn's --csv and --plot in
 * rep_learn_out.c). */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attncheck/commands.h"
#include "attncheck/json.h"
#include "attncheck/theorem1.h"
#include "cli.h"
#include "rep_learn.h"

/* How rep-theorem spells the parameters the library's messages name
 * (ac_err.fields). */
static const cli_flag t1_flags[] = {
    {"normalize", "--normalize"},
    {"rows", "--rows"},
    {NULL, NULL},
};

/* The threshold line: "smallest dk that represents P: ...". */
static void format_threshold(char *buf, size_t len, const ac_t1_threshold *t, size_t n)
{
    char hi[48] = "";
    if (t->none)
        snprintf(buf, len, "none (no head size represents P)");
    else if (t->lo < 0)
        snprintf(buf, len, "not determined");
    else {
        if (t->hi >= 0 && (size_t)t->hi + 1 == n)
            snprintf(hi, sizeof hi, " (n - 1)");
        if (t->hi >= 0 && t->lo == t->hi)
            snprintf(buf, len, "%ld%s%s", t->hi, hi,
                     t->if_any ? ", if P is representable at all" : "");
        else if (t->hi >= 0)
            snprintf(buf, len, ">= %ld and <= %ld%s%s", t->lo, t->hi, hi,
                     t->if_any ? ", if P is representable at all" : "");
        else
            snprintf(buf, len, ">= %ld", t->lo);
    }
}

static void print_text(const ac_rt_request *q, const char *instance, const ac_t1_result *r)
{
    char b1[AC_FMT_BOUND_BUFSIZE], b2[AC_FMT_BOUND_BUFSIZE], sb[64];
    printf("instance   %s, dk = %zu\n", instance, r->dk);
    printf("route      %s\n", r->route == AC_T1_ROUTE_CONSTRUCT
                                  ? "Theorem 1 construction, paper 1, eqs. (4)-(7)"
                              : r->route == AC_T1_ROUTE_MASKED
                                  ? "masked head: minimum-rank completion (doc/mathematics.md §3.8)"
                                  : "decision procedure (doc/mathematics.md §3.4)");
    if (r->masked)
        printf("mask       %s: %zu of %zu (key, query) pairs visible; %s\n",
               q->mask ? q->mask : "mask", r->nvisible, r->n * r->n,
               r->support);
    if (r->bias)
        printf("bias       heads with query/key biases: unbiased heads on [X; 1'] "
               "(weights dk x (d + 1), the last column the bias)\n");
    if (r->rank >= 0)
        printf("rank X     %ld (%s)\n", r->rank, r->rank_method);
    else
        printf("rank X     not certified\n");
    if (!isnan(r->rho_lo))
        printf("residual   rho in [%s, %s]  (log-domain, min over c), %s\n",
               ac_str_lo(b1, ".3g", r->rho_lo), ac_str_hi(b2, ".3g", r->rho_hi),
               ac_stage_name(sb, sizeof sb, r->rho_stage, r->rho_prec));
    if (!isnan(r->lowrank_lo))
        printf("rank cond. sigma_{dk+1} in [%s, %s], %s\n", ac_str_lo(b1, ".3g", r->lowrank_lo),
               ac_str_hi(b2, ".3g", r->lowrank_hi),
               ac_stage_name(sb, sizeof sb, r->lowrank_stage, r->lowrank_prec));
    char thr[128];
    format_threshold(thr, sizeof thr, &r->threshold, r->n);
    printf("exact      %s (%s)\n",
           r->exact == AC_PROVED    ? "PROVED: P (column-normalised) is exactly representable"
           : r->exact == AC_REFUTED ? "REFUTED: P is not exactly representable"
                                    : "UNDECIDED: exact representability not decided",
           r->exact_method[0] ? r->exact_method : "no criterion applies");
    printf("threshold  smallest dk that represents P: %s\n", thr);
    if (r->weights_unusable)
        printf("weights    none written: they exist in exact arithmetic but overflow double at "
               "this scale of X\n");
    else
        printf("weights    max|Softmax - P| in [%s, %s], %s\n",
               ac_str_lo(b1, ".3g", r->weights_cert.lo), ac_str_hi(b2, ".3g", r->weights_cert.hi),
               ac_stage_name(sb, sizeof sb, r->weights_cert.stage, r->weights_cert.prec));
    printf("distance   inf over heads of max|Softmax - P| in [%s, %s]\n",
           ac_str_lo(b1, ".3g", r->dist_lo), ac_str_hi(b2, ".3g", r->dist_hi));
    printf("  lower    %s\n", r->lower_method[0] ? r->lower_method : "none");
    printf("  upper    %s\n", r->upper_method[0] ? r->upper_method : "none");
    if (r->refine_stop[0])
        printf("  refine   %s\n", r->refine_stop);
    if (q->trace) {
        printf("trace\n");
        cli_print_steps(r->steps, r->nsteps);
    }
    printf("summary    %s\n", r->summary);
    printf("approx.    %s: some head of size %zu has max|Softmax - P| <= tol = %s\n",
           ac_verdict_name(r->verdict), r->dk, cli_num(b1, sizeof b1, q->tol));
    printf("verdict    %s: dist <= tol = %s  [%s, %.3g s]\n", ac_verdict_name(r->verdict),
           cli_num(b1, sizeof b1, q->tol), r->cert.method, r->cert.seconds);
}


/* --learn on a terminal: the head sizes done, on stderr */
static void learn_progress(void *ctx, size_t done, size_t total)
{
    const ac_rt_request *q = ctx;
    size_t lo = q->have_dk_range ? q->dk_range[0] : 1;
    fprintf(stderr, "\r  dk %zu/%zu done ", lo + done - 1, lo + total - 1);
}

int cmd_rep_theorem(int argc, char **argv)
{
    ac_request *r = NULL;
    ac_err err;
    int st;
    ac_err_clear(&err);
    if (ac_request_new(&r, "rep-theorem", &err))
        return cli_fail_err(&err);
    if ((st = cli_parse_request(r, argc, argv)))
        goto out;
    const ac_rt_request *q = ac_request_options(r);
    cli_set_flags(t1_flags);
    rep_learn_files files;
    memset(&files, 0, sizeof files);
    if ((st = cli_check_request(r)) || (q->learn && (st = rep_learn_files_open(q, &files))))
        goto out;
    ac_cmd_progress prog = {learn_progress, (void *)q};
    int tty = q->learn && !q->json && isatty(2);
    st = cli_run_request(r, tty ? &prog : NULL);
    if (tty)
        fprintf(stderr, "\r%*s\r", 30, "");
    if (st) {
        rep_learn_files_abort(&files);
        goto out;
    }
    const ac_rt_result *res = ac_request_result(r);
    if (res->learn) {
        if (q->out_dir && (st = cli_write_outdir(r, q->out_dir))) {
            rep_learn_files_abort(&files);
            goto out;
        }
        if ((st = rep_learn_write(q, res, &files)))
            goto out;
    } else {
        if (q->out_dir && (st = cli_write_outdir(r, q->out_dir)))
            goto out;
        if (q->json) {
            if ((st = cli_print_json(r)))
                goto out;
        } else {
            print_text(q, res->instance, &res->t1);
        }
    }
    st = ac_request_status(r);
out:
    ac_request_free(r);
    return st;
}

