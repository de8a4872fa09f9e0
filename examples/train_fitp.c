/* train_fitp.c — an example of the training library: learn one attention
 * head that reproduces a context matrix P (Theorem 1 on learned weights),
 * then certify how close the learned doubles are.
 *
 *   cc examples/train_fitp.c $(pkg-config --cflags --libs attncheck) -lmpfr
 *   ./a.out [STEPS]
 */
#include <stdio.h>
#include <stdlib.h>

#include <attncheck/blas.h>
#include <attncheck/learned.h>
#include <attncheck/theorem1.h>
#include <attncheck/train.h>

int main(int argc, char **argv)
{
    ac_blas_fix_core(argv); /* the right OpenBLAS kernels (may re-execute) */
    ac_train_config cfg;
    ac_trainer tr;
    ac_err err;
    ac_train_config_default(&cfg, AC_TASK_FIT_P);
    cfg.fitp_n = 6;  /* tokens */
    cfg.fitp_d = 12; /* rows of X; the head size dk defaults to d */
    cfg.steps = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 3000;
    if (cfg.steps == 0)
        cfg.steps = 1;
    if (ac_learn_fitp_init(&tr, &cfg, NULL, NULL, &err)) { /* generated X, P */
        fprintf(stderr, "train_fitp: %s\n", err.msg);
        ac_trainer_free(&tr);
        return err.status;
    }
    printf("%s\n", ac_trainer_data_summary(&tr));
    for (size_t s = 0; s < cfg.steps; s++) {
        ac_step_info si;
        if (ac_trainer_step(&tr, &si, &err)) {
            fprintf(stderr, "train_fitp: %s\n", err.msg);
            ac_trainer_free(&tr);
            return err.status;
        }
        if (si.step % 500 == 0 || si.step == cfg.steps || si.done)
            printf("step %5zu  KL(P || S) %.3g  max|S - P| %.3g\n", si.step, si.loss,
                   si.maxdev);
        if (si.done) /* BFGS (the default): no further progress possible */
            break;
    }
    /* a rigorous enclosure of max|Softmax((Wk X)^T (Wq X)/sqrt(dk)) - P| */
    ac_mat X = {0}, P = {0}, Wq = {0}, Wk = {0};
    double lo, hi;
    int st = ac_trainer_fitp_instance(&tr, &X, &P, &Wq, &Wk, &err);
    if (!st)
        st = ac_head_maxdev_enclose(&lo, &hi, &X, &Wk, &Wq, &P, 0, &err);
    if (st)
        fprintf(stderr, "train_fitp: %s\n", err.msg);
    else
        printf("learned head: max|Softmax - P| in [%.3g, %.3g] (certified)\n", lo, hi);
    ac_mat_free(&X);
    ac_mat_free(&P);
    ac_mat_free(&Wq);
    ac_mat_free(&Wk);
    ac_trainer_free(&tr);
    return st;
}
