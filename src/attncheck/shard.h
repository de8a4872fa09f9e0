/* attncheck/shard.h — condition sweeps split by trials across processes or
 * machines, and merged into exactly the result of the whole run.
 *
 * The samples of `attncheck condition` are keyed by (seed, h, trial): the
 * block of trial t is the same whichever process draws it, and so is its
 * kappa (every sample starts with the route trial 0 chose, and a shard
 * without trial 0 recomputes trial 0 for that choice).  A shard computes a
 * range of trials for every h of the sweep (ac_cond_run_range) and writes
 * their samples to a file; merging a complete set of shards restores every
 * sample and computes the statistics, predictions and certificates
 * (ac_cond_finish) exactly as ac_cond_run does. */
#ifndef ATTNCHECK_SHARD_H
#define ATTNCHECK_SHARD_H

#include <stddef.h>

#include "attncheck/condition.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Trials [*lo, *hi) of shard i of k (1 <= i <= k): lo = floor((i-1) T / k),
 * hi = floor(i T / k).  The k ranges partition 0 .. T - 1. */
void ac_cond_shard_range(size_t trials, size_t i, size_t k, size_t *lo, size_t *hi);

/* ac_cond_run for trials [lo, hi) only: r holds those samples (the others
 * zero) and no statistics.  AC_EUSAGE for an empty range. */
int ac_cond_run_range(ac_cond_result *r, size_t h, size_t d, const ac_cond_opts *o, size_t lo,
                      size_t hi, ac_err *err);
/* The statistics, spectrum and certificate of a result whose samples are
 * all present (the second half of ac_cond_run).  On error r is freed. */
int ac_cond_finish(ac_cond_result *r, const ac_cond_opts *o, ac_err *err);

/* The most shards a sweep may be split into (condition --shard I/K). */
#define AC_COND_MAX_SHARDS 1000000

/* A shard file: the sweep's options as the words of a command line (the
 * sweep is the same exactly when they are), shard i of k, and per h the
 * samples of its trial range.  Every double is written in hexadecimal
 * ("%a"), so a merged result is bit for bit the unsharded one.  Format
 * version 2 ends with an FNV-1a checksum of the file's bytes; version 1
 * (no checksum) is still read. */
typedef struct {
    int version;         /* format version: 1 or 2 */
    char *attncheck;     /* the version of attncheck that wrote it */
    char **words;        /* the sweep's options (nwords), NUL-terminated strings */
    size_t nwords;
    size_t i, k;         /* shard i of k */
    size_t nres;
    ac_cond_result *res; /* per h: sizes and the samples of [lo, hi): trial
                            lo + j is samples[j] (hi - lo entries; eig
                            likewise, hi - lo rows of m) */
    size_t lo, hi;       /* the trial range (the same for every h) */
} ac_cond_shard;

/* Write the shard atomically (temporary file, then rename).  res[0 .. nres-1]
 * came from ac_cond_run_range on [lo, hi) with options o. */
int ac_cond_shard_write(const char *path, const char *const *words, size_t nwords, size_t i,
                        size_t k, const ac_cond_result *res, size_t nres, size_t lo, size_t hi,
                        const ac_cond_opts *o, ac_err *err);
/* Read a shard file and check it: AC_EDATA naming the file, "corrupt"
 * when it is not the file that was written (unparsable, truncated, or its
 * checksum fails), "inconsistent" when its numbers contradict each other
 * or lie outside the ranges the options allow (naming h and the trial),
 * "not a condition shard file" otherwise.  Every sample is checked: its
 * estimates finite where they must be and kappa~ = sigma1~ / sigmin~, its
 * enclosures ordered and free of NaN, its kappa enclosure, dev enclosure
 * and verdict exactly those its sigma enclosures imply (attncheck-merge(1),
 * CHECKS). */
int ac_cond_shard_read(ac_cond_shard *s, const char *path, ac_err *err);
void ac_cond_shard_free(ac_cond_shard *s);

/* Check that shards[0 .. n-1] are one complete set (the same format and
 * attncheck versions, words, k and sizes; every i of 1 .. k exactly once;
 * samples made with the options o: certified exactly when o->certify, at
 * the stages and precisions of o->sched, MPFR within o->max_prec, the
 * rank refutation exactly when the rank bound is below min(N, D);
 * AC_EDATA naming the file and sample otherwise) and put the samples of
 * result `which` (the index of h in the sweep) into out, ready for
 * ac_cond_finish.  names[] are the files, for the messages. */
int ac_cond_shard_merge(ac_cond_result *out, const ac_cond_shard *shards,
                        const char *const *names, size_t n, size_t which, const ac_cond_opts *o,
                        ac_err *err);

#ifdef __cplusplus
}
#endif

#endif /* ATTNCHECK_SHARD_H */
