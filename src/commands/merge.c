/* merge.c — the command merge (attncheck/commands.h): the shard files of
 * one condition sweep (condition --shard I/K --samples-out FILE, for every
 * I of 1..K) combined into exactly the result of the unsharded sweep
 * (attncheck/shard.h): its options from the words of the first shard,
 * every h merged and finished as ac_cond_run finishes it, claim C over
 * every h.  The result, its JSON and its exit status are condition's.
 * The shard files of inspect (inspect --shard I/K --shard-out FILE) are
 * merged into inspect's result (attncheck/inspect.h, ac_merge_result):
 * inspect's options from the first shard's words, the run of inspect with
 * every head's record from its shard (inspect.c). */
#include <config.h>

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/commands.h"
#include "attncheck/inspect.h"
#include "attncheck/shard.h"
#include "commands/cmd_impl.h"
#include "commands/cond_cmd.h"
#include "commands/inspect_cmd.h"

#define Q(f) offsetof(ac_merge_request, f)
#define F(f) AC_OPT_FIELD(ac_merge_request, f)
#define S(f) AC_OPT_SET(ac_merge_request, f)
#define A(f) AC_OPT_ARRAY_AT(ac_merge_request, f)
#define NS AC_OPT_NOSET

static const ac_opt merge_opts[] = {
    {.name = "files", .kind = AC_OPT_STRINGS, F(files), .set_offset = NS,
     .arg = "FILE", .flags = AC_OPTF_OPERANDS | AC_OPTF_POSITIONAL,
     .help = "the shard files of one sweep, one for every I of 1..K, in any order"},
    {.name = "json", .kind = AC_OPT_FLAG, F(json), .set_offset = NS,
     .flags = AC_OPTF_PROGRAM, .help = "print one JSON object, as condition does"},
    {.name = "csv", .kind = AC_OPT_STRING, F(csv), .set_offset = NS, .arg = "FILE",
     .flags = AC_OPTF_PROGRAM, .help = "one row per h, as condition writes it"},
    {.name = "plot", .kind = AC_OPT_STRING, F(plot), .set_offset = NS, .arg = "FILE",
     .flags = AC_OPTF_PROGRAM, .check = ac_cmd_check_plot,
     .help = "kappa against h, as condition draws it"},
    {.name = "threads", .kind = AC_OPT_LONG, F(threads), S(have_threads),
     .min = 1, .max = 1024, .arg = "N",
     .help = "threads (the result does not depend on them)"},
    {0},
};

static const char merge_description[] =
    "Combine the shard files of one condition sweep, written by\n"
    "  attncheck condition OPTIONS --shard I/K --samples-out FILE\n"
    "for every I of 1..K (in any order, on any machines), into exactly the result\n"
    "of `attncheck condition OPTIONS`: the same samples, statistics, predictions\n"
    "and certificates.  The output options are those of condition.\n"
    "The shard files of\n"
    "  attncheck inspect OPTIONS --shard I/K --shard-out FILE\n"
    "are merged into the result of `attncheck inspect OPTIONS` (--json, the\n"
    "table, --csv), each layer's patterns, kappa and Theorem 2 hypotheses\n"
    "computed from the model and the input the shards name.";

static const char merge_epilogue[] =
    "Exit status: that of condition; 65 if a shard is missing, given twice,\n"
    "corrupt (its checksum fails), inconsistent (its numbers contradict each\n"
    "other or the options) or of another sweep; 66 if a file cannot be read.";

static int merge_check(void *qv, ac_err *err)
{
    const ac_merge_request *q = qv;
    if (q->files.n == 0)
        return ac_err_set(err, AC_EUSAGE,
                          "merge needs the shard files: attncheck merge FILE... [--json]");
    return AC_OK;
}

/* The sweep of the shards: condition's options from the words of the first
 * shard (sweep options only: a shard's words bring no output option, no
 * --help, no operand into the merge), its rules; merge's --threads. */
static int sweep_of(ac_condition_result *res, const ac_merge_request *q, const ac_cond_shard *sh,
                    const char *file, ac_err *err)
{
    ac_condition_request *sw = &res->sweep;
    size_t bad;
    int st = ac_opts_default(ac_cond_cmd_opts, sw, err);
    if (st)
        return st;
    /* the words outlive the shard: the sweep's string values point into them */
    if (!(res->words = calloc(sh->nwords + 1, sizeof *res->words)))
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (size_t w = 0; w < sh->nwords; w++) {
        if (!(res->words[w] = strdup(sh->words[w])))
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
        res->nwords = w + 1;
    }
    ac_err e;
    ac_err_clear(&e);
    if ((st = ac_cmd_set_words(ac_cond_cmd_opts, sw, res->words, res->nwords,
                               ac_cond_cmd_sweep_option, &bad, &e))) {
        if (bad != (size_t)-1)
            return ac_err_set(err, AC_EDATA, "%s: inconsistent shard file: its options contain "
                              "'%s', which is not an option of the sweep", file, res->words[bad]);
        return ac_err_set(err, AC_EDATA, "%s: inconsistent shard file: %s", file, e.msg);
    }
    if ((st = ac_cond_cmd_rules(sw, &e)))
        return ac_err_set(err, AC_EDATA, "%s: inconsistent shard file: %s", file, e.msg);
    sw->threads = q->threads;
    sw->have_threads = q->have_threads;
    return AC_OK;
}

/* inspect's shards: its options from the first shard's words, then its run
 * with the heads of the shards. */
static int merge_inspect(ac_merge_result *mr, const ac_merge_request *q, ac_err *err)
{
    const char *const *files = q->files.v;
    size_t n = q->files.n, nread = 0, bad;
    ac_inspect_request *iq = &mr->request;
    int st;
    mr->inspect = 1;
    ac_inspect_shard *sh = calloc(n, sizeof *sh);
    if (!sh)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (; nread < n; nread++)
        if ((st = ac_inspect_shard_read(&sh[nread], files[nread], err)))
            goto out;
    if ((st = ac_opts_default(ac_inspect_cmd_opts, iq, err)))
        goto out;
    if (!(mr->words = calloc(sh[0].nwords + 1, sizeof *mr->words))) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    for (size_t w = 0; w < sh[0].nwords; w++) {
        if (!(mr->words[w] = strdup(sh[0].words[w]))) {
            st = ac_err_set(err, AC_EINTERNAL, "out of memory");
            goto out;
        }
        mr->nwords = w + 1;
    }
    ac_err e;
    ac_err_clear(&e);
    if (ac_cmd_set_words(ac_inspect_cmd_opts, iq, mr->words, mr->nwords,
                         ac_inspect_cmd_run_option, &bad, &e) ||
        ac_cmd_inspect.check(iq, &e)) {
        st = ac_err_set(err, AC_EDATA, "%s: inconsistent inspect shard file: its options: %s",
                        files[0], e.msg);
        goto out;
    }
    iq->threads = q->threads;
    iq->have_threads = q->have_threads;
    st = ac_inspect_cmd_run(&mr->insp, iq, sh, files, n, err);
out:
    for (size_t k = 0; k < nread; k++)
        ac_inspect_shard_free(&sh[k]);
    free(sh);
    return st;
}

static int merge_run(void *rv, const void *qv, void *hooks, ac_err *err)
{
    ac_condition_result *res = rv;
    const ac_merge_request *q = qv;
    const char *const *files = q->files.v;
    size_t n = q->files.n, nread = 0;
    double t0 = ac_seconds();
    int st = AC_OK;
    (void)hooks;
    if (n && ac_inspect_shard_is(files[0]))
        return merge_inspect(rv, q, err);
    res->merged = 1;
    ac_cond_shard *sh = calloc(n, sizeof *sh);
    if (!sh)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (; nread < n; nread++)
        if ((st = ac_cond_shard_read(&sh[nread], files[nread], err)))
            goto out;
    const ac_condition_request *sw = &res->sweep;
    if ((st = sweep_of(res, q, &sh[0], files[0], err)) || (st = ac_cond_cmd_memory(sw, err)))
        goto out;
    ac_cmd_apply_threads(sw->threads);
    res->threads = ac_cond_cmd_threads(sw);
    ac_cond_opts o;
    ac_cond_cmd_opts_of(&o, sw);
    size_t nh = sw->heads.n;
    if (!(res->res = calloc(nh ? nh : 1, sizeof *res->res))) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < nh; i++) {
        if (sh[0].nres != nh || sh[0].res[i].h != sw->heads.v[i] ||
            sh[0].res[i].d != sw->dims[i]) {
            st = ac_err_set(err, AC_EDATA, "%s: the shards were made for other head counts",
                            files[0]);
            goto out;
        }
        if ((st = ac_cond_shard_merge(&res->res[i], sh, files, n, i, &o, err)) ||
            (st = ac_cond_finish(&res->res[i], &o, err)))
            goto out;
        res->wall += res->res[i].wall;
        res->nh++;
    }
    st = ac_cond_cmd_finish(res, sw, err);
out:
    for (size_t k = 0; k < nread; k++)
        ac_cond_shard_free(&sh[k]);
    free(sh);
    res->seconds = ac_seconds() - t0;
    return st;
}

static void merge_write_json(ac_json *j, const void *qv, const void *rv)
{
    const ac_merge_result *mr = rv;
    const ac_condition_result *res = rv;
    (void)qv;
    if (mr->inspect)
        ac_inspect_cmd_write_json(j, &mr->request, &mr->insp);
    else
        ac_cond_cmd_write_json(j, &res->sweep, res);
}

static size_t merge_arrays(const void *qv, const void *rv, ac_out_array *out, size_t max)
{
    const ac_merge_result *mr = rv;
    const ac_condition_result *res = rv;
    (void)qv;
    if (mr->inspect)
        return ac_inspect_cmd_arrays(&mr->request, &mr->insp, out, max);
    return ac_cond_cmd_arrays(&res->sweep, res, out, max);
}

static int merge_status(const void *qv, const void *rv)
{
    const ac_merge_result *mr = rv;
    (void)qv;
    if (mr->inspect)
        return ac_verdict_status(mr->insp.verdict);
    return ac_cond_cmd_status(rv);
}

static void merge_result_free(void *rv)
{
    ac_merge_result *mr = rv;
    ac_cond_cmd_result_free(rv);
    ac_inspect_cmd_result_free(&mr->insp);
    for (size_t w = 0; w < mr->nwords; w++)
        free(mr->words[w]);
    free(mr->words);
    mr->words = NULL;
    mr->nwords = 0;
}

const ac_command ac_cmd_merge = {
    .name = "merge",
    .summary = "combine the shard files of a condition sweep or of an inspect run into its "
               "whole result",
    .synopsis = "attncheck merge FILE... [--json] [--csv FILE] [--plot FILE] [--threads N]",
    .description = merge_description,
    .epilogue = merge_epilogue,
    .opts = merge_opts,
    .request_size = sizeof(ac_merge_request),
    .result_size = sizeof(ac_merge_result),
    .check = merge_check,
    .run = merge_run,
    .write_json = merge_write_json,
    .arrays = merge_arrays,
    .status = merge_status,
    .result_free = merge_result_free,
};
