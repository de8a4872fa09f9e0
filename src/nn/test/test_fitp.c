/* test_fitp.c — fit-p's optimisation (attncheck/train.h, src/nn/fitp_opt.c):
 * the best iterate, BFGS, the reported KL, thread independence, the
 * optimiser in checkpoints and bad configurations.
 *
 * Oracles: the certified error of the returned weights (ac_head_certify)
 * and an independent evaluation of the head in long double (logits,
 * softmax and KL(P || S) summed over columns computed from X, Wq, Wk
 * without the model), so that the trainer's KL and max|S - P| are checked
 * against a computation that shares no code with them.
 */
#include <config.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "attncheck/blas.h"
#include "attncheck/head.h"
#include "attncheck/learned.h"
#include "attncheck/theorem1.h"
#include "attncheck/train.h"
#include "testutil.h"

/* max|S - P| and KL(P || S) summed over columns of the head (Wq, Wk) on X,
 * in long double, S the column softmax of (Wk X)^T (Wq X)/sqrt(dk). */
static void head_ld(const ac_mat *X, const ac_mat *P, const ac_mat *Wq, const ac_mat *Wk,
                    long double *maxdev, long double *kl)
{
    size_t d = X->rows, n = X->cols, dk = Wq->rows;
    long double *K = calloc(dk * n, sizeof *K), *Q = calloc(dk * n, sizeof *Q);
    long double *Z = calloc(n * n, sizeof *Z);
    ck_assert(K && Q && Z);
    for (size_t a = 0; a < dk; a++)
        for (size_t t = 0; t < n; t++)
            for (size_t k = 0; k < d; k++) {
                K[a * n + t] += (long double)AC_MAT(Wk, a, k) * AC_MAT(X, k, t);
                Q[a * n + t] += (long double)AC_MAT(Wq, a, k) * AC_MAT(X, k, t);
            }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            long double s = 0;
            for (size_t a = 0; a < dk; a++)
                s += K[a * n + i] * Q[a * n + j];
            Z[i * n + j] = s / sqrtl((long double)dk);
        }
    *maxdev = 0;
    *kl = 0;
    for (size_t j = 0; j < n; j++) { /* column j */
        long double mx = Z[j], sum = 0;
        for (size_t i = 1; i < n; i++)
            mx = fmaxl(mx, Z[i * n + j]);
        for (size_t i = 0; i < n; i++)
            sum += expl(Z[i * n + j] - mx);
        for (size_t i = 0; i < n; i++) {
            long double logs = Z[i * n + j] - mx - logl(sum), p = AC_MAT(P, i, j);
            *maxdev = fmaxl(*maxdev, fabsl(expl(logs) - p));
            *kl += p * (logl(p) - logs);
        }
    }
    free(K);
    free(Q);
    free(Z);
}

/* Train to the end (or until BFGS stops), evaluating every eval_every
 * steps and at the last; the largest max dev of any evaluation after the
 * best one is returned in *later (0 if none). */
static void run(ac_trainer *t, size_t eval_every, double *last_dev, double *later)
{
    ac_err err;
    ac_step_info si;
    ac_eval_info ev;
    size_t best_step = 0;
    double best = INFINITY;
    memset(&si, 0, sizeof si);
    *later = 0;
    while (t->step < t->cfg.steps && !si.done) {
        ck_assert(ac_trainer_step(t, &si, &err) == AC_OK);
        if (t->step % eval_every == 0 || t->step == t->cfg.steps || si.done) {
            ck_assert(ac_trainer_eval(t, &ev, &err) == AC_OK);
            *last_dev = ev.maxdev;
            if (ev.maxdev < best) {
                best = ev.maxdev;
                best_step = t->step;
                *later = 0;
            } else {
                *later = fmax(*later, ev.maxdev);
            }
        }
    }
    size_t bs;
    double bd;
    ck_assert(ac_trainer_fitp_best(t, &bs, &bd, NULL));
    ck_assert_uint_eq(bs, best_step);
    ck_assert(bd == best);
}

/* The weights the trainer returns, checked against the oracle and
 * certified at tol; returns the verdict. */
static ac_verdict check_weights(const ac_trainer *t, double tol, double expect_dev)
{
    ac_mat X = {0}, P = {0}, Wq = {0}, Wk = {0};
    ac_err err;
    ac_cert cert;
    long double md, kl;
    ck_assert(ac_trainer_fitp_instance(t, &X, &P, &Wq, &Wk, &err) == AC_OK);
    head_ld(&X, &P, &Wq, &Wk, &md, &kl);
    /* the model's max dev (ac_nn_exp, relative error 2u) against long double */
    ck_assert_msg(fabsl(md - expect_dev) <= 1e-14L, "max dev %.17g, oracle %.17Lg", expect_dev,
                  md);
    ac_schedule s = ac_schedule_upto(512);
    ck_assert(ac_head_certify(&cert, &X, &Wk, &Wq, &P, tol, &s, &err) == AC_OK);
    ck_assert(cert.lo <= (double)md + 1e-15 && (double)md <= cert.hi + 1e-15);
    ac_mat_free(&X), ac_mat_free(&P), ac_mat_free(&Wq), ac_mat_free(&Wk);
    return cert.verdict;
}

/* ac_trainer_fitp_restore_best on a trainer whose best iterate (at step,
 * max dev best) is not its last: the state becomes the best iterate's (its
 * weights are the ones returned, its evaluation gives best again), a
 * checkpoint of it records it, and a trainer loading that checkpoint has it
 * as its best so far. */
static void restore_best(ac_trainer *t, size_t step, double best)
{
    ac_mat X = {0}, P = {0}, Wq = {0}, Wk = {0};
    ac_eval_info ev;
    ac_err err;
    size_t bstep;
    double bdev;
    char dir[256];
    ck_assert(ac_trainer_fitp_instance(t, &X, &P, &Wq, &Wk, &err) == AC_OK);
    ck_assert(t->step != step);
    ck_assert_int_eq(ac_trainer_fitp_restore_best(t), 1);
    ck_assert_uint_eq(t->step, step);
    const ac_nn_tensor *q = ac_nn_tensor_find(&t->model, "Wq");
    ck_assert(memcmp(t->model.params + q->offset, Wq.data, Wq.rows * Wq.cols * sizeof(double)) ==
              0);
    ck_assert(ac_trainer_eval(t, &ev, &err) == AC_OK);
    ck_assert(ev.maxdev == best);
    snprintf(dir, sizeof dir, "%s/test_fitp_best.%ld",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid());
    ck_assert(ac_trainer_save(t, dir, &err) == AC_OK);
    ac_trainer u;
    ck_assert(ac_learn_fitp_init(&u, &t->cfg, &X, &P, &err) == AC_OK);
    ck_assert_msg(ac_trainer_load(&u, dir, &err) == AC_OK, "%s", err.msg);
    ck_assert(ac_trainer_fitp_best(&u, &bstep, &bdev, NULL));
    ck_assert(bstep == step && bdev == best);
    ck_assert(memcmp(u.model.m, t->model.m, t->model.nparams * sizeof(double)) == 0);
    ac_trainer_free(&u);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert(system(cmd) == 0);
    ac_mat_free(&X), ac_mat_free(&P), ac_mat_free(&Wq), ac_mat_free(&Wk);
}

/* AdamW at a fixed learning rate oscillates: on this instance (n = 8,
 * seed 3, 20000 steps, the brief's case) the last evaluation is worse than
 * an earlier one; the trainer must return (and the certificate use) the
 * best one. */
START_TEST(test_best_iterate)
{
    ac_train_config c;
    ac_trainer t;
    ac_err err;
    double last, later;
    ac_train_config_default(&c, AC_TASK_FIT_P);
    c.optimizer = AC_OPT_ADAMW;
    c.steps = 20000;
    c.warmup = 2000;
    c.min_lr = c.lr / 10;
    c.seed = 3;
    ck_assert(ac_learn_fitp_init(&t, &c, NULL, NULL, &err) == AC_OK);
    size_t step;
    ck_assert(!ac_trainer_fitp_best(&t, &step, NULL, NULL)); /* no evaluation yet */
    run(&t, 2000, &last, &later);
    double best;
    ck_assert(ac_trainer_fitp_best(&t, &step, &best, NULL));
    ck_assert_msg(last > 2 * best && step < c.steps,
                  "the case needs a last iterate worse than the best: last %g, best %g at %zu",
                  last, best, step);
    /* the returned weights are the best iterate's, not the last */
    ck_assert_int_eq(check_weights(&t, 2 * best, best), AC_PROVED);
    ck_assert_int_eq(check_weights(&t, 0.5 * last, best), AC_PROVED);
    restore_best(&t, step, best);
    ac_trainer_free(&t);
}
END_TEST

/* BFGS (the default) reaches max|S - P| <= 1e-6, certified, on
 * representable instances: d = dk = n (Theorem 1) for several n and seeds,
 * dk = n - 1 (doc/mathematics.md §3.5), d > n, and a P generated by a head
 * of size 2 < d < n. */
START_TEST(test_bfgs_representable)
{
    const struct {
        size_t n, d, dk;
        uint64_t seed;
    } cases[] = {{4, 4, 4, 1}, {4, 4, 4, 2}, {8, 8, 8, 1}, {8, 8, 8, 2}, {8, 8, 8, 3},
                 {12, 12, 12, 1}, {12, 12, 12, 4}, {16, 16, 16, 1}, {16, 16, 16, 5},
                 {8, 8, 7, 1}, {8, 8, 7, 2}, {12, 12, 11, 3}, {6, 12, 6, 1}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        ac_train_config c;
        ac_trainer t;
        ac_err err;
        double last, later;
        ac_train_config_default(&c, AC_TASK_FIT_P);
        ck_assert_int_eq(c.optimizer, AC_OPT_BFGS);
        c.fitp_n = cases[k].n;
        c.fitp_d = cases[k].d;
        c.fitp_dk = cases[k].dk;
        c.seed = cases[k].seed;
        ck_assert(ac_learn_fitp_init(&t, &c, NULL, NULL, &err) == AC_OK);
        run(&t, 100, &last, &later);
        double best;
        ck_assert(ac_trainer_fitp_best(&t, NULL, &best, NULL));
        ck_assert_msg(check_weights(&t, 1e-6, best) == AC_PROVED,
                      "n %zu d %zu dk %zu seed %llu: best max dev %g", cases[k].n, cases[k].d,
                      cases[k].dk, (unsigned long long)cases[k].seed, best);
        ac_trainer_free(&t);
    }
    /* P from a random head of size 2 on X (4 x 8): representable with dk = 2 < d < n */
    ac_mat X = {0}, P = {0}, Pd = {0};
    ac_err err;
    ck_assert(ac_t1_generate(&X, &Pd, 4, 8, 7, &err) == AC_OK);
    ck_assert(ac_t1_generate_representable(&P, &X, 2, 7, &err) == AC_OK);
    ac_train_config c;
    ac_trainer t;
    double last, later, best;
    ac_train_config_default(&c, AC_TASK_FIT_P);
    c.fitp_dk = 2;
    ck_assert(ac_learn_fitp_init(&t, &c, &X, &P, &err) == AC_OK);
    run(&t, 100, &last, &later);
    ck_assert(ac_trainer_fitp_best(&t, NULL, &best, NULL));
    ck_assert_msg(check_weights(&t, 1e-6, best) == AC_PROVED, "dk = 2 < d: max dev %g", best);
    ac_trainer_free(&t);
    ac_mat_free(&X), ac_mat_free(&P), ac_mat_free(&Pd);
}
END_TEST

/* The reported loss is KL(P || S) summed over the columns, accurate also
 * near S = P, where cross-entropy minus entropy loses every digit (KL
 * ~ 1e-14 against an entropy ~ 2.7): the long-double oracle must agree to
 * 1e-4 relative there (error analysis in fitp_opt.c: about 2u|z|/|delta|
 * ~ 1e-7 relative), and to 1e-12 at the initial weights. */
START_TEST(test_kl_oracle)
{
    ac_train_config c;
    ac_trainer t;
    ac_err err;
    ac_eval_info ev;
    ac_mat X = {0}, P = {0}, Wq = {0}, Wk = {0};
    long double md, kl;
    double last, later;
    ac_train_config_default(&c, AC_TASK_FIT_P);
    c.fitp_n = 16;
    c.seed = 11;
    ck_assert(ac_learn_fitp_init(&t, &c, NULL, NULL, &err) == AC_OK);
    ck_assert(ac_trainer_eval(&t, &ev, &err) == AC_OK);
    ck_assert(ac_trainer_fitp_instance(&t, &X, &P, &Wq, &Wk, &err) == AC_OK);
    head_ld(&X, &P, &Wq, &Wk, &md, &kl);
    ck_assert_msg(fabsl(ev.loss - kl) <= 1e-12L * kl, "KL %.17g, oracle %.17Lg", ev.loss, kl);
    ac_mat_free(&X), ac_mat_free(&P), ac_mat_free(&Wq), ac_mat_free(&Wk);
    run(&t, 1, &last, &later);
    double bkl;
    ck_assert(ac_trainer_fitp_best(&t, NULL, NULL, &bkl)); /* KL of the returned weights */
    ck_assert(ac_trainer_fitp_instance(&t, &X, &P, &Wq, &Wk, &err) == AC_OK);
    head_ld(&X, &P, &Wq, &Wk, &md, &kl);
    ck_assert_msg(kl < 1e-11L, "BFGS ended at KL %Lg", kl);
    /* The two KLs are computed in different orders (double vs long double);
     * each term p log(p/s) carries a rounding error of about eps |p log p|,
     * so near KL = 0 they agree only to an absolute 4 eps sum|p log p| <=
     * 4 eps n log n (n columns of entropy <= log n), not to a relative 1e-4. */
    double kl_abs = 4.0 * DBL_EPSILON * (double)c.fitp_n * log((double)c.fitp_n);
    ck_assert_msg(fabsl(bkl - kl) <= 1e-4L * kl + kl_abs, "KL %.17g, oracle %.17Lg", bkl, kl);
    ac_mat_free(&X), ac_mat_free(&P), ac_mat_free(&Wq), ac_mat_free(&Wk);
    ac_trainer_free(&t);
}
END_TEST

/* BFGS gives bit-identical weights with 1 and 2 threads. */
START_TEST(test_threads)
{
#ifdef _OPENMP
    double *w[2];
    size_t np = 0;
    for (int k = 0; k < 2; k++) {
        ac_train_config c;
        ac_trainer t;
        ac_err err;
        double last, later;
        omp_set_num_threads(k + 1);
        ac_train_config_default(&c, AC_TASK_FIT_P);
        c.fitp_n = 12;
        c.fitp_dk = 10;
        ck_assert(ac_learn_fitp_init(&t, &c, NULL, NULL, &err) == AC_OK);
        run(&t, 7, &last, &later);
        np = t.model.nparams;
        w[k] = malloc(np * sizeof(double));
        memcpy(w[k], t.model.params, np * sizeof(double));
        ac_trainer_free(&t);
    }
    ck_assert(memcmp(w[0], w[1], np * sizeof(double)) == 0);
    free(w[0]);
    free(w[1]);
#endif
}
END_TEST

/* The optimiser in checkpoints; bad configurations. */
START_TEST(test_config)
{
    ac_train_config c, r;
    ac_trainer t;
    ac_err err;
    char dir[256];
    size_t step;
    ac_train_optimizer o;
    ck_assert_str_eq(ac_train_optimizer_name(AC_OPT_BFGS), "bfgs");
    ck_assert(ac_train_optimizer_parse("adamw", &o) == AC_OK && o == AC_OPT_ADAMW);
    ck_assert(ac_train_optimizer_parse("sgd", &o) == AC_EUSAGE);
    ac_train_config_default(&c, AC_TASK_FIT_P);
    c.fitp_n = 4;
    c.steps = 5;
    c.warmup = 0; /* a checkpoint's warmup is at most its steps */
    snprintf(dir, sizeof dir, "%s/test_fitp.%ld", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (long)getpid());
    ck_assert(ac_learn_fitp_init(&t, &c, NULL, NULL, &err) == AC_OK);
    ck_assert(ac_trainer_step(&t, NULL, &err) == AC_OK);
    ck_assert(ac_trainer_save(&t, dir, &err) == AC_OK);
    ck_assert(ac_train_config_read(dir, &r, &step, &err) == AC_OK);
    ck_assert_int_eq(r.optimizer, AC_OPT_BFGS);
    ck_assert(ac_train_config_diff(&t.cfg, &r) == NULL);
    r.optimizer = AC_OPT_ADAMW;
    ck_assert_str_eq(ac_train_config_diff(&t.cfg, &r), "optimizer");
    ac_trainer_free(&t);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert(system(cmd) == 0);
    /* BFGS is for fit-p only */
    ac_train_config_default(&c, AC_TASK_LISTOPS);
    c.optimizer = AC_OPT_BFGS;
    ck_assert_int_eq(ac_trainer_init(&t, &c, &err), AC_EUSAGE);
    ck_assert_str_eq(err.fields, "optimizer");
    ac_trainer_free(&t);
    /* in-memory instances: the training stack takes fit-p's instance only
     * in memory, checks its shapes and the sizes given; the values are
     * validated above it (ac_learn_fitp_init) */
    ac_mat X = {0}, P = {0}, P4 = {0};
    ck_assert(ac_t1_generate(&X, &P, 3, 5, 1, &err) == AC_OK);
    ac_train_config_default(&c, AC_TASK_FIT_P);
    ck_assert_int_eq(ac_trainer_init(&t, &c, &err), AC_EUSAGE); /* no instance */
    ck_assert(strstr(err.msg, "in memory") != NULL);
    ac_trainer_free(&t);
    ck_assert(ac_mat_init(&P4, 4, 4, &err) == AC_OK);
    ck_assert_int_eq(ac_trainer_init_fitp(&t, &c, &X, "X", &P4, "P4", &err), AC_EDATA);
    ck_assert(strstr(err.msg, "P4") != NULL);
    ac_trainer_free(&t);
    c.fitp_d = 4;
    ck_assert_int_eq(ac_trainer_init_fitp(&t, &c, &X, NULL, &P, NULL, &err), AC_EUSAGE);
    ac_trainer_free(&t);
    ck_assert_int_eq(ac_learn_fitp_init(&t, &c, &X, &P, &err), AC_EUSAGE);
    ck_assert_str_eq(err.fields, "fitp_d");
    ac_trainer_free(&t);
    c.fitp_d = 0;
    AC_MAT(&P, 0, 0) += 0.25; /* a column summing to 1.25 */
    ck_assert_int_eq(ac_learn_fitp_init(&t, &c, &X, &P, &err), AC_EDATA);
    ac_trainer_free(&t);
    c.p_rows = 1; /* the transpose of P, a row-stochastic P, is validated */
    AC_MAT(&P, 0, 0) -= 0.25;
    ck_assert_int_eq(ac_learn_fitp_init(&t, &c, &X, &P, &err), AC_EDATA);
    ac_trainer_free(&t);
    ac_mat_free(&X), ac_mat_free(&P), ac_mat_free(&P4);
}
END_TEST

int main(void)
{
    test_seed_init();
    ac_blas_set_threads(1);
    Suite *s = suite_create("fitp");
    TCase *tc = tcase_create("fitp");
    test_no_timeout(tc);
    tcase_add_test(tc, test_best_iterate);
    tcase_add_test(tc, test_bfgs_representable);
    tcase_add_test(tc, test_kl_oracle);
    tcase_add_test(tc, test_threads);
    tcase_add_test(tc, test_config);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
