/* fitp_mask_tool.c — helper for the PyTorch cross-check of fit-p under a
 * mask (tests/fitp_mask_torch.sh, doc/mathematics.md §3.8).
 *
 *   fitp_mask_tool X.npy P.npy OMEGA.npy DK SEED STEPS DIR
 *
 * builds the fit-p trainer of the masked head (ac_trainer_init_fitp_masked:
 * X d x n, P n x n column-stochastic on the mask, OMEGA n x n of 0/1 flags,
 * row = key, column = query), takes STEPS optimiser steps (so that the
 * weights are not the initial ones) and writes ac_trainer_dump_grads into
 * DIR: the weights, the batch (batch.x, batch.y, batch.keep), the loss and
 * its gradients, which tests/train_torch.py recomputes in PyTorch.
 *
 * Exit status: 0 on success, the library's status code on failure (with
 * the message on stderr), 64 on bad usage.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/common.h"
#include "attncheck/npy.h"
#include "attncheck/train.h"

int main(int argc, char **argv)
{
    ac_mat X = {0}, P = {0}, O = {0};
    ac_trainer tr;
    ac_train_config c;
    ac_step_info si;
    ac_err err;
    unsigned char *om = NULL;
    int st;
    ac_err_clear(&err);
    if (argc != 8) {
        fputs("usage: fitp_mask_tool X.npy P.npy OMEGA.npy DK SEED STEPS DIR\n", stderr);
        return AC_EUSAGE;
    }
    memset(&tr, 0, sizeof tr);
    if ((st = ac_npy_read_mat(argv[1], &X, &err)) || (st = ac_npy_read_mat(argv[2], &P, &err)) ||
        (st = ac_npy_read_mat(argv[3], &O, &err)))
        goto out;
    if (!(om = malloc(O.rows * O.cols + 1))) {
        st = ac_err_set(&err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < O.rows * O.cols; i++)
        om[i] = O.data[i] != 0;
    ac_train_config_default(&c, AC_TASK_FIT_P);
    c.fitp_dk = (size_t)strtoul(argv[4], NULL, 10);
    c.seed = strtoull(argv[5], NULL, 10);
    unsigned long steps = strtoul(argv[6], NULL, 10);
    if ((st = ac_trainer_init_fitp_masked(&tr, &c, &X, argv[1], &P, argv[2], om, &err)))
        goto out;
    for (unsigned long k = 0; k < steps && !st; k++)
        st = ac_trainer_step(&tr, &si, &err);
    if (!st)
        st = ac_trainer_dump_grads(&tr, argv[7], NULL, &err);
out:
    if (st)
        fprintf(stderr, "fitp_mask_tool: %s\n", err.msg);
    ac_trainer_free(&tr);
    ac_mat_free(&X);
    ac_mat_free(&P);
    ac_mat_free(&O);
    free(om);
    return st;
}
