/* data_fitp.c — the fit-p task's data (attncheck/train.h, "fit-p"):
 * Theorem 1 of paper 1 on learned weights.  The instance X (d x n), P
 * (n x n, column-stochastic) is read or generated (Gaussian X, Dirichlet P,
 * as rep-theorem's); the one batch is the instance in the row layout of
 * nn.h (doc/mathematics.md §1.2): tokens X^T, target rows P^T. */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "attncheck/npy.h"
#include "attncheck/theorem1.h"
#include "nn/nn_impl.h"

/* Validate the instance in d (n tokens, d rows) and complete c: the sizes,
 * the model (one head of size dk on the scores architecture), the summary.
 * xname, pname name the inputs in messages and in the summary. */
static int fitp_finish(ac_train_data *d, ac_train_config *c, size_t n, size_t dd,
                       const char *xname, const char *pname, ac_err *err)
{
    int st;
    size_t dk = c->fitp_dk ? c->fitp_dk : dd;
    if ((st = ac_t1_validate(&d->X, xname, &d->P, pname, NULL, 0, "D0", dk, err)))
        return st;
    if (c->seq && c->seq != n)
        return ac_err_set_field(err, AC_EUSAGE, "seq", "seq %zu contradicts the instance's n = %zu",
                                c->seq, n);
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

int train_fitp_open(ac_train_data *d, ac_train_config *c, const ac_mat *Xm, const ac_mat *Pm,
                    ac_err *err)
{
    int st;
    if (Xm && Pm) { /* in memory (ac_trainer_init_fitp): validated below */
        if ((st = ac_mat_copy(&d->X, Xm, err)) || (st = ac_mat_copy(&d->P, Pm, err)))
            return st;
        if (c->fitp_d && c->fitp_d != Xm->rows)
            return ac_err_set_field(err, AC_EUSAGE, "fitp_d", "fitp_d %zu contradicts X, which "
                                    "has d = %zu rows", c->fitp_d, Xm->rows);
        return fitp_finish(d, c, Xm->cols, Xm->rows, "X", "P", err);
    }
    if (c->x_path[0]) {
        if ((st = ac_npy_read_mat(c->x_path, &d->X, err)))
            return st;
    }
    if (c->p_path[0]) {
        if ((st = ac_npy_read_mat(c->p_path, &d->P, err)))
            return st;
        /* row-stochastic file: the column-stochastic P is its transpose */
        if (c->p_rows && (st = ac_mat_transpose(&d->P, err)))
            return st;
    } else if (c->p_rows) {
        return ac_err_set_field(err, AC_EUSAGE, "p_rows,p_path",
                                "p_rows needs a P file (p_path): it transposes the P read");
    }
    size_t n = c->x_path[0] ? d->X.cols : (c->p_path[0] ? d->P.rows : c->fitp_n);
    size_t dd = c->x_path[0] ? d->X.rows : (c->fitp_d ? c->fitp_d : n);
    if (c->x_path[0] && (d->X.rows == 0 || d->X.cols == 0))
        return ac_err_set(err, AC_EDATA, "%s: X is %zu x %zu; it needs at least one row and one "
                          "column", c->x_path, d->X.rows, d->X.cols);
    if (c->x_path[0] && c->fitp_d && c->fitp_d != dd)
        return ac_err_set_field(err, AC_EUSAGE, "fitp_d", "fitp_d %zu contradicts %s, which has "
                                "d = %zu rows", c->fitp_d, c->x_path, dd);
    if (n == 0 || dd == 0)
        return ac_err_set_field(err, AC_EUSAGE, "fitp_n,fitp_d",
                                "fitp_n and fitp_d must be at least 1");
    if (!c->x_path[0] || !c->p_path[0]) {
        ac_mat X = {0}, P = {0};
        if ((st = ac_t1_generate(&X, &P, dd, n, c->seed, err))) {
            ac_mat_free(&X);
            ac_mat_free(&P);
            return st;
        }
        if (!c->x_path[0]) {
            d->X = X;
            X.data = NULL;
        }
        if (!c->p_path[0]) {
            d->P = P;
            P.data = NULL;
        }
        ac_mat_free(&X);
        ac_mat_free(&P);
    }
    return fitp_finish(d, c, n, dd, c->x_path[0] ? c->x_path : "Gaussian",
                       c->p_path[0] ? c->p_path : "Dirichlet", err);
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
}
