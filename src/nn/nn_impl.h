/* nn_impl.h — internals of src/nn shared between its files (not installed).
 *
 *   the trainer (attncheck/train.h): config.c (defaults, names, schedule),
 *     one file per data source — data_text.c, data_listops.c,
 *     data_teacher.c, data_fitp.c: each opens its data (completing the
 *     configuration) and fills batches —, trainer.c (init, steps,
 *     evaluation) and checkpoint.c (config.json, the staged directory swap,
 *     loading);
 *   the model (attncheck/nn.h): model.c (configuration check, tensor table,
 *     allocation, initial weights), forward.c, backward.c, adamw.c.
 */
#ifndef AC_NN_IMPL_H
#define AC_NN_IMPL_H

#include <stdint.h>
#include <string.h>

#include "attncheck/linalg.h"
#include "attncheck/nn.h"
#include "attncheck/train.h"

/* ================================================================ trainer */

/* Random stream ids (stream_a of ac_rng_init), one per use. */
#define STREAM_TEXT 0x74657874ull          /* "text": training windows */
#define STREAM_LISTOPS 0x6c6f7073ull       /* "lops": training examples */
#define STREAM_LISTOPS_EVAL 0x6c6f7065ull  /* "lope": held-out examples */
#define STREAM_TEACH 0x74636872ull         /* "tchr": teacher inputs / samples */
#define STREAM_TEACH_EVAL 0x74636865ull    /* "tche": teacher held-out inputs */

/* The task's data and the buffers of one batch. */
struct ac_train_data {
    char summary[2 * AC_TRAIN_PATH_MAX + 320];
    uint64_t checksum;      /* of the input files / instance (0: generated on the fly) */
    /* one batch (B x T), in the row layout of nn.h */
    size_t B, T;
    int32_t *tokens, *targets;
    double *x, *y;
    /* text */
    int32_t *ids;
    size_t nids, ntrain;
    size_t nvocab;
    unsigned char vocab[256];
    /* listops */
    int32_t *expr;
    /* teacher */
    int gen;                /* generator mode */
    ac_nn_model teacher;
    double *tx, *ty;        /* dataset mode: (m, n, d), (m, n, e) */
    size_t tm, td, te, ttrain;
    /* fit-p */
    ac_mat X, P;
};

/* Each data source: *_open reads or generates the data and completes c
 * (sizes the data fix: vocabulary, widths, n and d, ...); *_batch fills b
 * (whose B and T are set, the rest zeroed) with split 0 = the training
 * batch of step `index` (1-based), split 1 = evaluation batch `index`
 * (0-based), drawing from the streams above keyed by the seed. */
int train_text_open(ac_train_data *d, ac_train_config *c, ac_err *err);
void train_text_batch(ac_train_data *d, const ac_train_config *c, int split, size_t index,
                      ac_nn_batch *b);
int train_listops_open(ac_train_data *d, ac_train_config *c, ac_err *err);
int train_listops_batch(ac_train_data *d, const ac_train_config *c, int split, size_t index,
                        ac_nn_batch *b, ac_err *err);
int train_teacher_open(ac_train_data *d, ac_train_config *c, ac_err *err);
int train_teacher_batch(ac_train_data *d, const ac_train_config *c, int split, size_t index,
                        ac_nn_batch *b, ac_err *err);
int train_fitp_open(ac_train_data *d, ac_train_config *c, ac_err *err);
void train_fitp_batch(ac_train_data *d, const ac_train_config *c, ac_nn_batch *b);

/* The batch of (split, index) for the trainer's task (trainer.c). */
int train_fill_batch(ac_trainer *tr, int split, size_t index, ac_nn_batch *b, ac_err *err);

/* Head size of a configuration: width/heads (standard) or head_dim (fixed). */
size_t train_head_size(const ac_nn_config *m);

/* ---- checksums: FNV-1a, 64 bits, over bytes (Fowler, Noll, Vo); doubles
 * are hashed as their little-endian IEEE bytes. */
#define FNV_INIT 0xcbf29ce484222325ull

static inline uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static inline uint64_t fnv_doubles(uint64_t h, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t u;
        memcpy(&u, &x[i], sizeof u);
        unsigned char b[8];
        for (int k = 0; k < 8; k++)
            b[k] = (unsigned char)(u >> (8 * k));
        h = fnv1a(h, b, 8);
    }
    return h;
}

#endif /* AC_NN_IMPL_H */
