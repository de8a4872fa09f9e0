/* data_fitp.c — the fit-p task's data (attncheck/train.h, "fit-p"):
 * Theorem 1 of paper 1 on learned weights.  The instance X (d x n), P
 * (n x n, column-stochastic) is given in memory, read or generated and
 * validated above the training stack (attncheck/learned.h,
 * ac_learn_fitp_init), so that src/nn depends on no theorem; the one batch
 * is the instance in the row layout of nn.h (doc/mathematics.md §1.2):
 * tokens X^T, target rows P^T. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn_impl.h"

/* The instance (X d x n, P n x n, copied into d) completes c: the sizes,
 * the model (one head of size dk on the scores architecture), the
 * summary.  Its values were validated by the caller (attncheck/learned.h,
 * ac_learn_fitp_init: Theorem 1's checks of X and P); here only the shapes
 * the model needs.  xname, pname name the inputs in messages and in the
 * summary. */
int train_fitp_open(ac_train_data *d, ac_train_config *c, const ac_mat *X, const char *xname,
                    const ac_mat *P, const char *pname, ac_err *err)
{
    int st;
    if (!X || !P)
        return ac_err_set(err, AC_EUSAGE, "the fit-p task's instance X, P is given in memory "
                          "(ac_trainer_init_fitp; ac_learn_fitp_init reads or generates it)");
    size_t n = X->cols, dd = X->rows;
    if (n == 0 || dd == 0)
        return ac_err_set(err, AC_EDATA, "%s: X is %zu x %zu; it needs at least one row and one "
                          "column", xname, dd, n);
    if (P->rows != n || P->cols != n)
        return ac_err_set(err, AC_EDATA, "%s: P is %zu x %zu; X (%s) has n = %zu columns", pname,
                          P->rows, P->cols, xname, n);
    if (c->fitp_d && c->fitp_d != dd)
        return ac_err_set_field(err, AC_EUSAGE, "fitp_d", "fitp_d %zu contradicts %s, which has "
                                "d = %zu rows", c->fitp_d, xname, dd);
    if (c->seq && c->seq != n)
        return ac_err_set_field(err, AC_EUSAGE, "seq", "seq %zu contradicts the instance's n = %zu",
                                c->seq, n);
    if ((st = ac_mat_copy(&d->X, X, err)) || (st = ac_mat_copy(&d->P, P, err)))
        return st;
    size_t dk = c->fitp_dk ? c->fitp_dk : dd;
    c->seq = n;
    c->fitp_n = n;
    c->fitp_d = dd;
    c->fitp_dk = dk;
    c->batch = 1;
    ac_nn_config *m = &c->model;
    m->arch = AC_NN_ARCH_SCORES;
    m->input = AC_NN_INPUT_VECTORS;
    m->head = AC_NN_HEAD_SCORES;
    m->width = dd;
    m->heads = 1;
    m->kind = AC_NN_ATTN_FIXED;
    m->head_dim = dk;
    m->causal = 0;
    d->checksum = fnv_doubles(fnv_doubles(FNV_INIT, d->X.data, dd * n), d->P.data, n * n);
    snprintf(d->summary, sizeof d->summary, "X %s (%zu x %zu), P %s, head size dk = %zu", xname,
             dd, n, pname, dk);
    return AC_OK;
}

void train_fitp_batch(ac_train_data *d, const ac_train_config *c, ac_nn_batch *b)
{
    size_t n = c->seq, dd = d->X.rows;
    /* tokens are the columns of X; target row t is column t of P */
    for (size_t t = 0; t < n; t++) {
        for (size_t k = 0; k < dd; k++)
            d->x[t * dd + k] = AC_MAT(&d->X, k, t);
        for (size_t j = 0; j < n; j++)
            d->y[t * n + j] = AC_MAT(&d->P, j, t);
    }
    b->B = 1;
    b->x = d->x;
    b->y = d->y;
    b->keep = d->keep;
}

/* The mask of a masked head (doc/mathematics.md §3.8): omega (n x n, row =
 * key i, column = query j, as P) becomes the batch's keep in the row layout
 * (row = query), recorded in the checksum and the summary.  The caller
 * (attncheck/learned.h) validated P on omega; here every query must see a
 * key (AC_EDATA). */
int train_fitp_mask(ac_train_data *d, const unsigned char *omega, ac_err *err)
{
    size_t n = d->P.rows, nvis = 0;
    if (!(d->keep = malloc(n * n)))
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (size_t t = 0; t < n; t++) {
        size_t seen = 0;
        for (size_t j = 0; j < n; j++)
            seen += d->keep[t * n + j] = omega[j * n + t] != 0;
        if (!seen)
            return ac_err_set(err, AC_EDATA, "the mask hides every key from query %zu (its "
                              "softmax is undefined)", t);
        nvis += seen;
    }
    d->checksum = fnv1a(d->checksum, d->keep, n * n);
    size_t k = strlen(d->summary);
    snprintf(d->summary + k, sizeof d->summary - k, ", masked (%zu of %zu pairs visible)", nvis,
             n * n);
    return AC_OK;
}
