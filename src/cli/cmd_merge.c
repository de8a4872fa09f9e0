/* cmd_merge.c — `attncheck merge FILE...`: combine a complete set of
 * condition shards (condition --shard I/K --samples-out FILE) into exactly
 * the result of the unsharded sweep.  The options, the run and the result
 * are the library's (src/commands/merge.c); the result is printed and
 * written as `condition` prints and writes it (cmd_condition.c), with the
 * sweep's options read from the shards; inspect's shards (inspect --shard
 * I/K --shard-out FILE) as `inspect` prints and writes its result
 * (cli_inspect_outputs). */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "attncheck/commands.h"
#include "attncheck/inspect.h"
#include "condition_cli.h"
#include "plot.h"

int cmd_merge(int argc, char **argv)
{
    ac_request *r = NULL;
    cond_files files;
    cli_plot_files pfiles;
    ac_err err;
    int st;
    memset(&files, 0, sizeof files);
    memset(&pfiles, 0, sizeof pfiles);
    ac_err_clear(&err);
    if (ac_request_new(&r, "merge", &err))
        return cli_fail_err(&err);
    if ((st = cli_parse_request(r, argc, argv)))
        goto out;
    const ac_merge_request *q = ac_request_options(r);
    if ((st = cli_check_request(r)) || (st = cond_files_open(&files, q->csv, q->plot)) ||
        (st = cli_run_request(r, NULL)))
        goto out;
    const ac_merge_result *mr = ac_request_result(r);
    if (mr->inspect) {
        /* inspect's shards: inspect's outputs (--csv its table, --plot its map) */
        cond_files_abort(&files);
        if (!(st = cli_plot_files_open(&pfiles, q->csv, q->plot)) &&
            !(st = cli_inspect_outputs(r, &mr->request, &mr->insp, &pfiles, q->json)))
            st = ac_request_status(r);
    } else if (!(st = cond_write_outputs(r, &mr->cond.sweep, &mr->cond, &files, q->json))) {
        st = ac_request_status(r);
    }
out:
    cli_plot_files_abort(&pfiles);
    cond_files_abort(&files);
    ac_request_free(r);
    return st;
}
