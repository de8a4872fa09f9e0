/* data_text.c — the text task's data: a character-level language model of
 * a file (attncheck/train.h, "text").  The file's bytes are the characters;
 * the vocabulary is the set of bytes that occur, in byte order; the last
 * holdout fraction is held out for evaluation. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/fileio.h"
#include "attncheck/rng.h"
#include "nn/nn_impl.h"

int train_text_open(ac_train_data *d, ac_train_config *c, ac_err *err)
{
    unsigned char *buf;
    size_t n;
    int st;
    if (!c->text_path[0])
        return ac_err_set_field(err, AC_EUSAGE, "task,text_path", "task text needs text_path FILE");
    if ((st = ac_file_read(c->text_path, 0, &buf, &n, err)))
        return st;
    int seen[256] = {0};
    for (size_t i = 0; i < n; i++)
        seen[buf[i]] = 1;
    int map[256];
    d->nvocab = 0;
    for (int b = 0; b < 256; b++) {
        map[b] = -1;
        if (seen[b]) {
            map[b] = (int)d->nvocab;
            d->vocab[d->nvocab++] = (unsigned char)b;
        }
    }
    size_t T = c->seq;
    size_t nheld = (size_t)floor(c->holdout * (double)n);
    size_t ntrain = n - nheld;
    if (ntrain < T + 1 || (nheld > 0 && nheld < T + 1)) {
        free(buf);
        return ac_err_set_field(err, AC_EDATA, "holdout,seq",
                                "%s: %zu characters; the training part (%zu) and the held-out "
                                "part (%zu, holdout %g) each need at least seq + 1 = %zu",
                          c->text_path, n, ntrain, nheld, c->holdout, T + 1);
    }
    d->ids = malloc(n * sizeof *d->ids);
    if (!d->ids) {
        free(buf);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        d->ids[i] = map[buf[i]];
    d->checksum = fnv1a(FNV_INIT, buf, n);
    free(buf);
    d->nids = n;
    d->ntrain = ntrain;
    c->model.input = AC_NN_INPUT_TOKENS;
    c->model.vocab = d->nvocab;
    c->model.head = AC_NN_HEAD_LM;
    snprintf(d->summary, sizeof d->summary,
             "%s: %zu characters, %zu distinct; %zu for training, %zu held out", c->text_path, n,
             d->nvocab, ntrain, nheld);
    return AC_OK;
}

/* Training windows at random offsets of the training part; evaluation
 * windows evenly spaced over the held-out part (over the training part when
 * nothing is held out).  Targets are the inputs shifted by one. */
void train_text_batch(ac_train_data *d, const ac_train_config *c, int split, size_t index,
                      ac_nn_batch *b)
{
    size_t B = c->batch, T = c->seq;
    ac_rng r;
    ac_rng_init(&r, c->seed, STREAM_TEXT, index);
    size_t nheld = d->nids - d->ntrain, W = c->eval_batches * B;
    for (size_t i = 0; i < B; i++) {
        size_t off;
        if (split == 0) {
            off = (size_t)ac_rng_below(&r, d->ntrain - T);
        } else {
            size_t base = nheld ? d->ntrain : 0, len = nheld ? nheld : d->ntrain;
            size_t j = index * B + i;
            off = base + (W > 1 ? (size_t)((double)j * (double)(len - T - 1) / (double)(W - 1))
                                : 0);
        }
        memcpy(d->tokens + i * T, d->ids + off, T * sizeof *d->tokens);
        memcpy(d->targets + i * T, d->ids + off + 1, T * sizeof *d->targets);
    }
    b->tokens = d->tokens;
    b->targets = d->targets;
}
