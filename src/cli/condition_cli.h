/* condition_cli.h — the pieces of `attncheck condition` (Theorem 3.2 of
 * paper 2), shared by its files (not part of the library):
 *   cmd_condition.c     options, the run, the trace, the output files
 *   condition_text.c    the text output, one table per function
 *   condition_json.c    --json
 *   condition_files.c   --csv, and the gnuplot script of --plot (plot.h)
 *   condition_report.c  the rows of `attncheck report`
 * Every verdict comes from the library (attncheck/condition.h). */
#ifndef AC_CLI_CONDITION_CLI_H
#define AC_CLI_CONDITION_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "attncheck/condition.h"
#include "cli.h"

#define MAX_HEADS_LIST 64

/* The parsed command line. */
typedef struct {
    size_t heads[MAX_HEADS_LIST], dims[MAX_HEADS_LIST], nh;
    size_t d, embed;
    int have_d, have_embed;
    const char *csv, *plot;
    int trace;
    ac_cond_opts o;
    cli_common common;
    /* shards (condition_shard.c) */
    size_t shard_i, shard_k;     /* --shard I/K (k = 0: not sharded) */
    const char *samples_out;     /* --samples-out FILE */
    const char **merge;          /* --merge-from FILE... (attncheck merge) */
    size_t nmerge;
    const char **words;          /* the sweep's options, for the shard file */
    size_t nwords;
} cond_args;

/* D = N: Edelman's law, the mean is not reported (E kappa = inf) */
static inline int cond_is_square(const ac_cond_result *r)
{
    return r->D == r->N && r->N >= 2; /* E kappa = inf; N = D = 1: kappa = 1 */
}

/* Thread-seconds of the parts and flops, summed over the results. */
typedef struct {
    double sample, reduce, solve, mpfr, certify, flops;
} cond_times;

cond_times cond_sum_times(const ac_cond_result *res, size_t nh);

void cond_print_text(const cond_args *a, const ac_cond_result *res, size_t nh, double wall,
                     int threads, const ac_cert *cert);
void cond_write_json(ac_json *j, const cond_args *a, const ac_cond_result *res, size_t nh,
                     double wall, int threads, const ac_cert *cert);
void cond_write_csv(FILE *f, const cond_args *a, const ac_cond_result *res, size_t nh);
/* `condition --model DIR` (condition_model.c): kappa of trained heads. */
int cmd_condition_model(int argc, char **argv);

/* The gnuplot script of --plot: kappa against h, writing the image to out. */
void cond_write_gnuplot_script(FILE *f, const cond_args *a, const ac_cond_result *res, size_t nh,
                               const char *out);

struct option;
/* condition_shard.c */
int cond_shard_words(cond_args *a, int argc, char **argv, const struct option *opts);
int cond_parse_shard(cond_args *a, const char *s);
int cond_check_shard_args(const cond_args *a);
int cond_run_shard(cond_args *a, ac_cond_result *res, size_t *nres);
int cond_merge_all(cond_args *a, ac_cond_result *res, size_t *nres, double *wall);

#endif
