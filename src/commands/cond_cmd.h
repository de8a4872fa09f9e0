/* cond_cmd.h — what condition's files and merge share in src/commands
 * (attncheck/commands.h); not installed.
 *   condition.c       condition: the option table, the rules, the run
 *                     (sweep, shard, --model);
 *   condition_json.c  the one serialiser of condition's result (and of
 *                     merge's), its arrays, its exit status;
 *   merge.c           merge: the shards read back into condition's result.
 */
#ifndef AC_COMMANDS_COND_CMD_H
#define AC_COMMANDS_COND_CMD_H

#include "attncheck/commands.h"

/* condition's option table (condition.c). */
extern const ac_opt ac_cond_cmd_opts[];

/* The options of a sweep written to a shard file (and read back by merge):
 * every option of the table but the program's and --threads, --shard,
 * --samples-out, --model, --data, --batches. */
int ac_cond_cmd_sweep_option(const ac_opt *o);

/* The rules between the options of a sweep (not --model): --input-dim with
 * --mode attention, --head-dim or --embed, h dividing --embed, the sizes;
 * fills q->dims.  AC_EUSAGE. */
int ac_cond_cmd_rules(ac_condition_request *q, ac_err *err);
/* The memory the sweep needs, against the memory available: AC_EUSAGE
 * naming the sizes (doc/mathematics.md §5.8 for the sizes LAPACK takes). */
int ac_cond_cmd_memory(const ac_condition_request *q, ac_err *err);
/* The options of ac_cond_run for the sweep q. */
void ac_cond_cmd_opts_of(ac_cond_opts *o, const ac_condition_request *q);
/* The threads a sweep uses: --threads, or OpenMP's default. */
int ac_cond_cmd_threads(const ac_condition_request *q);

/* After the results of every h are complete (sweep, merge): the
 * certificate of claim C, the summed times, the arrays.  AC_EINTERNAL. */
int ac_cond_cmd_finish(ac_condition_result *res, const ac_condition_request *q, ac_err *err);

/* condition_json.c: the serialiser (q: the sweep's options), the arrays,
 * the exit status, the result's free. */
void ac_cond_cmd_write_json(ac_json *j, const ac_condition_request *q,
                            const ac_condition_result *res);
size_t ac_cond_cmd_arrays(const ac_condition_request *q, const ac_condition_result *res,
                          ac_out_array *out, size_t max);
int ac_cond_cmd_status(const ac_condition_result *res);
void ac_cond_cmd_result_free(void *res);

#endif
