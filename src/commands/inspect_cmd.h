/* inspect_cmd.h — inspect's run and its shard files, shared by inspect.c,
 * inspect_shard.c and merge.c (internal to src/commands). */
#ifndef AC_COMMANDS_INSPECT_CMD_H
#define AC_COMMANDS_INSPECT_CMD_H

#include <stddef.h>
#include <stdint.h>

#include "attncheck/inspect.h"

#define AC_INSPECT_SHARD_FORMAT "attncheck-inspect-shard"

/* A shard file of inspect --shard I/K --shard-out FILE, as read (every
 * member present and of its type; the meaning of each head's record is
 * checked by ac_inspect_shard_check_head when the merge has the model, the
 * input and the patterns). */
typedef struct {
    char *attncheck;          /* the version that wrote it */
    char **words;             /* the run's options (the run is the same exactly when they are) */
    size_t nwords;
    size_t i, k;              /* shard i of k */
    size_t lo, hi, total;     /* pairs [lo, hi) of total */
    size_t nfiles;            /* the model's files: their SHA-256 in hex */
    char (*sha256)[65];
    uint64_t input;           /* FNV-1a of the input (ac_inspect_input_sum) */
    ac_inspect_head *heads;   /* hi - lo records, pair lo + j in heads[j] */
    uint64_t *pattern;        /* the FNV-1a of each head's pattern */
    size_t nheads;            /* records read so far (for freeing) */
} ac_inspect_shard;

/* inspect's option table (words of a shard: every option of the run but
 * --shard, --shard-out, --threads and the program's). */
extern const ac_opt ac_inspect_cmd_opts[];
int ac_inspect_cmd_run_option(const ac_opt *o);

/* The run of inspect; with shards (n files, names for messages), the merge:
 * every layer's patterns, kappa and Theorem 2 hypotheses computed, every
 * head's record taken from its shard after ac_inspect_shard_check_head. */
int ac_inspect_cmd_run(ac_inspect_result *res, const ac_inspect_request *q,
                       const ac_inspect_shard *sh, const char *const *names, size_t n,
                       ac_err *err);
void ac_inspect_cmd_write_json(ac_json *j, const void *q, const void *res);
size_t ac_inspect_cmd_arrays(const void *q, const void *res, ac_out_array *out, size_t max);
void ac_inspect_cmd_result_free(void *res);

/* FNV-1a of n doubles (the input, a pattern), as fnv_doubles. */
uint64_t ac_inspect_sum(const double *x, size_t n);

/* 1 when the file names the inspect shard format near its start. */
int ac_inspect_shard_is(const char *path);
/* Write shard i of k: the heads of layers ly[0 .. nl-1] (pairs [lo, hi) of
 * total, in order), the model's checksums, the input's; atomically. */
int ac_inspect_shard_write(const char *path, const char *const *words, size_t nwords, size_t i,
                           size_t k, size_t lo, size_t hi, size_t total, const ac_model *m,
                           uint64_t input, const ac_inspect_layer *ly, size_t nl, ac_err *err);
/* Read a shard file: AC_EDATA "FILE: corrupt inspect shard file: ..." (unparsable,
 * no checksum or a wrong one, a member missing or of the wrong type),
 * "FILE: not an inspect shard file: ...". */
int ac_inspect_shard_read(ac_inspect_shard *s, const char *path, ac_err *err);
void ac_inspect_shard_free(ac_inspect_shard *s);
/* The record hd of shard file name against what the merge recomputed:
 * layer l, head h of layer L, whose pattern P (n x n, under the attention
 * mask keep, NULL: none) has FNV-1a psum_want (the shard's: psum), at
 * tolerance tol.  AC_EDATA "FILE: inconsistent
 * inspect shard file: layer l, head h: WHY". */
int ac_inspect_shard_check_head(const ac_inspect_head *hd, uint64_t psum, size_t l, size_t h,
                                const ac_attn_layer *L, const double *P,
                                const unsigned char *keep, size_t n, double tol,
                                const char *name, ac_err *err);

#endif
