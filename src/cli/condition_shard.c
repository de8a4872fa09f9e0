/* condition_shard.c — `attncheck condition --shard I/K --samples-out FILE`
 * and `attncheck merge FILE...`: a condition sweep split by trials across
 * processes or machines and merged into exactly the unsharded result
 * (attncheck/shard.h). */
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/shard.h"
#include "condition_cli.h"
#include "json_contract.h"

/* Options that do not change the sweep's numbers: left out of a shard's
 * words, so that shards may differ in them and merge may add them. */
static const char *const not_sweep[] = {"shard", "samples-out", "merge-from", "json", "csv",
                                        "plot", "trace", "threads", NULL};

static const struct option *find_opt(const struct option *opts, const char *name, size_t len)
{
    const struct option *hit = NULL;
    for (const struct option *o = opts; o->name; o++) {
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
            return o;
        if (strncmp(o->name, name, len) == 0)
            hit = hit ? NULL : o; /* a unique prefix, as getopt_long accepts */
    }
    return hit;
}

int cond_shard_words(cond_args *a, int argc, char **argv, const struct option *opts)
{
    a->words = calloc((size_t)argc + 1, sizeof *a->words);
    if (!a->words)
        return cli_fail(AC_EINTERNAL, "out of memory");
    a->nwords = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strncmp(s, "--", 2) == 0 && s[2]) {
            const char *eq = strchr(s, '=');
            size_t len = eq ? (size_t)(eq - s - 2) : strlen(s + 2);
            const struct option *o = find_opt(opts, s + 2, len);
            int skip = 0;
            for (int k = 0; o && not_sweep[k]; k++)
                skip |= strcmp(o->name, not_sweep[k]) == 0;
            int takes = o && o->has_arg == required_argument && !eq;
            if (skip) {
                i += takes;
                continue;
            }
            a->words[a->nwords++] = s;
            if (takes && i + 1 < argc)
                a->words[a->nwords++] = argv[++i];
            continue;
        }
        a->words[a->nwords++] = s;
    }
    return AC_OK;
}

int cond_parse_shard(cond_args *a, const char *s)
{
    char *end;
    unsigned long long i = strtoull(s, &end, 10), k = 0;
    if (end != s && *end == '/')
        k = strtoull(end + 1, &end, 10);
    if (*end != '\0' || i < 1 || k < 1 || i > k || k > 1000000)
        return cli_usage("--shard must be I/K with 1 <= I <= K <= 1000000, not '%s'", s);
    a->shard_i = (size_t)i;
    a->shard_k = (size_t)k;
    return AC_OK;
}

int cond_check_shard_args(const cond_args *a)
{
    if ((a->shard_k != 0) != (a->samples_out != NULL))
        return cli_usage("--shard I/K and --samples-out FILE go together");
    if (a->shard_k && (a->csv || a->plot))
        return cli_usage("--csv and --plot need the whole sweep: give them to `attncheck merge`");
    if (a->shard_k && a->nmerge)
        return cli_usage("--shard cannot be merged in the same run");
    if (a->shard_k && a->shard_k > a->o.trials)
        return cli_usage("--shard %zu/%zu: more shards than --trials %zu", a->shard_i,
                         a->shard_k, a->o.trials);
    return AC_OK;
}

int cond_run_shard(cond_args *a, ac_cond_result *res, size_t *nres)
{
    ac_err err;
    size_t lo, hi;
    ac_err_clear(&err);
    ac_cond_shard_range(a->o.trials, a->shard_i, a->shard_k, &lo, &hi);
    for (size_t i = 0; i < a->nh; i++) {
        if (ac_cond_run_range(&res[i], a->heads[i], a->dims[i], &a->o, lo, hi, &err))
            return cli_fail_err(&err);
        (*nres)++;
    }
    if (ac_cond_shard_write(a->samples_out, (const char *const *)a->words, a->nwords, a->shard_i,
                            a->shard_k, res, a->nh, lo, hi, &a->o, &err))
        return cli_fail_err(&err);
    if (a->common.json) {
        ac_json *j = cli_json_stdout();
        /* one shard decides nothing: its verdict comes with merge */
        cli_json_envelope_begin(j, "condition", NULL, NULL);
        cli_json_parameters_begin(j, a->o.seed);
        ac_json_kv_int(j, "trials", (long long)a->o.trials);
        ac_json_kv_string(j, "samples_out", a->samples_out);
        cli_json_parameters_end(j);
        cli_json_seconds(j, cli_json_elapsed());
        ac_json_kv_int_pair(j, "shard", (long long)a->shard_i, (long long)a->shard_k);
        ac_json_kv_int_pair(j, "trials", (long long)lo, (long long)hi);
        ac_json_kv_string(j, "samples_out", a->samples_out);
        ac_json_end_object(j);
        return cli_json_finish(j);
    }
    printf("shard %zu/%zu: trials %zu..%zu of %zu for each of %zu head counts, written to %s\n"
           "(combine a complete set with: attncheck merge FILE...)\n",
           a->shard_i, a->shard_k, lo, hi - 1, a->o.trials, a->nh, a->samples_out);
    return AC_OK;
}

int cond_merge_all(cond_args *a, ac_cond_result *res, size_t *nres, double *wall)
{
    ac_err err;
    int st = AC_OK;
    ac_err_clear(&err);
    ac_cond_shard *sh = calloc(a->nmerge, sizeof *sh);
    if (!sh)
        return cli_fail(AC_EINTERNAL, "out of memory");
    size_t nread = 0;
    for (; nread < a->nmerge; nread++)
        if ((st = ac_cond_shard_read(&sh[nread], a->merge[nread], &err)))
            break;
    for (size_t i = 0; !st && i < a->nh; i++) {
        if (sh[0].nres != a->nh || sh[0].res[i].h != a->heads[i] || sh[0].res[i].d != a->dims[i]) {
            st = ac_err_set(&err, AC_EDATA, "%s: the shards were made for other head counts",
                            a->merge[0]);
            break;
        }
        if ((st = ac_cond_shard_merge(&res[i], sh, a->merge, a->nmerge, i, &a->o, &err)) ||
            (st = ac_cond_finish(&res[i], &a->o, &err)))
            break;
        *wall += res[i].wall;
        (*nres)++;
    }
    for (size_t k = 0; k < nread; k++)
        ac_cond_shard_free(&sh[k]);
    free(sh);
    return st ? cli_fail_err(&err) : AC_OK;
}
