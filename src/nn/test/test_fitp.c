/* test_fitp.c — fit-p's optimisation (attncheck/train.h, src/nn/fitp_opt.c):
 * the best iterate, BFGS, the reported KL, thread independence, the
 * optimiser in checkpoints and bad configurations.
 *
 * Oracles: the certified error of the returned weights (ac_head_certify)
 * and an independent evaluation of the head in long double (logits,
 * softmax and KL(P || S) summed over columns computed from X, Wq, Wk
 * without the model), so that the trainer's KL and max|S - P| are checked
 * against a computation that shares no code with them.
 *
 * Masked heads (doc/mathematics.md §3.8): the masked loss and its gradient
 * of the scores model (ac_nn_batch's keep) against central finite
 * differences and a long double evaluation of the masked softmax; the
 * trainer's masked KL and max|S - P| against the same oracle; training
 * under each class of mask (causal, window, padding, any boolean, with
 * and without bias) reaching a masked pattern of a head of size dk.  The
 * PyTorch cross-check of the same loss is tests/fitp_mask_torch.sh.
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
#include "attncheck/nn.h"
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


/* ---- masked heads (doc/mathematics.md §3.8) ----------------------------------------- */

/* The support of mask class kind for n tokens (row = key i, column = query
 * j): 0 every pair, 1 causal (i <= j), 2 window |i - j| < 2, 3 padding (keys
 * hidden from every query; key 0 never), 4 any boolean pattern (the
 * diagonal visible, so that every query sees a key). */
static void mask_class(unsigned char *om, size_t n, int kind, test_rng *r)
{
    unsigned char pad[64];
    for (size_t i = 0; i < n && i < 64; i++)
        pad[i] = i == 0 || test_rng_unif(r) < 0.6;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            size_t dist = i > j ? i - j : j - i;
            om[i * n + j] = kind == 0   ? 1
                            : kind == 1 ? i <= j
                            : kind == 2 ? dist < 2
                            : kind == 3 ? pad[i]
                                        : i == j || test_rng_unif(r) < 0.5;
        }
}

static const char *const mask_names[] = {"none", "causal", "window:2", "padding", "boolean"};

/* The masked head on X in long double: Z = (Wk X)^T (Wq X)/sqrt(dk), S the
 * softmax of each column over its visible keys (0 elsewhere): max|S - P|
 * over every entry, KL(P || S) over the visible entries summed over the
 * columns, and the mean over the columns of the cross-entropy
 * -sum_{i visible} P_ij log S_ij (the scores model's loss). */
static void head_ld_masked(const ac_mat *X, const ac_mat *P, const ac_mat *Wq, const ac_mat *Wk,
                           const unsigned char *om, long double *maxdev, long double *kl,
                           long double *xent)
{
    size_t d = X->rows, n = X->cols, dk = Wq->rows;
    *maxdev = *kl = *xent = 0;
    for (size_t j = 0; j < n; j++) {
        long double z[64], mx = -INFINITY, sum = 0;
        for (size_t i = 0; i < n; i++) {
            long double zz = 0;
            for (size_t a = 0; a < dk; a++) {
                long double k = 0, q = 0;
                for (size_t c = 0; c < d; c++) {
                    k += (long double)AC_MAT(Wk, a, c) * AC_MAT(X, c, i);
                    q += (long double)AC_MAT(Wq, a, c) * AC_MAT(X, c, j);
                }
                zz += k * q;
            }
            z[i] = zz / sqrtl((long double)dk);
            if (om[i * n + j])
                mx = fmaxl(mx, z[i]);
        }
        for (size_t i = 0; i < n; i++)
            if (om[i * n + j])
                sum += expl(z[i] - mx);
        for (size_t i = 0; i < n; i++) {
            long double p = AC_MAT(P, i, j);
            if (!om[i * n + j]) {
                *maxdev = fmaxl(*maxdev, fabsl(p));
                continue;
            }
            long double logs = z[i] - mx - logl(sum);
            *maxdev = fmaxl(*maxdev, fabsl(expl(logs) - p));
            *kl += p * (logl(p) - logs);
            *xent -= p * logs / (long double)n;
        }
    }
}

/* X (d x n, with a last row of ones when bias), a P positive on om and 0
 * off it with columns summing to 1 (each visible entry in [0.2, 1] before
 * normalising). */
static void masked_instance(ac_mat *X, ac_mat *P, const unsigned char *om, size_t d, size_t n,
                            int bias, test_rng *r)
{
    ac_err err;
    ck_assert(ac_mat_init(X, d, n, &err) == AC_OK && ac_mat_init(P, n, n, &err) == AC_OK);
    for (size_t i = 0; i < d * n; i++)
        X->data[i] = test_rng_gauss(r);
    for (size_t j = 0; bias && j < n; j++)
        AC_MAT(X, d - 1, j) = 1.0;
    for (size_t j = 0; j < n; j++) {
        double s = 0;
        for (size_t i = 0; i < n; i++)
            s += AC_MAT(P, i, j) = om[i * n + j] ? test_rng_range(r, 0.2, 1.0) : 0.0;
        for (size_t i = 0; i < n; i++)
            AC_MAT(P, i, j) /= s;
    }
}

typedef struct {
    ac_nn_model *m;
    const ac_nn_batch *b;
} masked_ctx;

static double masked_loss(void *v)
{
    masked_ctx *c = v;
    ac_nn_stats st;
    ac_err err;
    ck_assert(ac_nn_forward(c->m, c->b, &st, &err) == AC_OK);
    return st.loss;
}

/* The scores model with a keep mask: its loss against the long double
 * masked cross-entropy, its gradient against central finite differences
 * (Richardson extrapolation of steps h and h/2), for every class of mask,
 * with and without bias, n = 1 .. 7 and non-square X. */
START_TEST(test_masked_loss_grad)
{
    static const size_t sizes[][3] = {{1, 1, 1}, {4, 3, 2}, {7, 2, 3}, {6, 5, 1}}; /* n, d, dk */
    const double u = 0x1p-53;
    for (int kind = 0; kind < 5; kind++)
        for (int bias = 0; bias < 2; bias++)
            for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
                size_t n = sizes[z][0], d = sizes[z][1] + (size_t)bias, dk = sizes[z][2];
                test_rng r;
                test_rng_init(&r, 1000 + 100 * (uint64_t)kind + 10 * (uint64_t)bias + z);
                unsigned char om[64], keep[64];
                mask_class(om, n, kind, &r);
                ac_mat X = {0}, P = {0}, Wq = {0}, Wk = {0};
                ac_err err;
                masked_instance(&X, &P, om, d, n, bias, &r);
                ac_nn_config c;
                memset(&c, 0, sizeof c);
                c.arch = AC_NN_ARCH_SCORES;
                c.width = d;
                c.heads = 1;
                c.kind = AC_NN_ATTN_FIXED;
                c.head_dim = dk;
                c.max_seq = n;
                c.head = AC_NN_HEAD_SCORES;
                ac_nn_model m;
                ck_assert(ac_nn_model_init(&m, &c, 1, n, &err) == AC_OK);
                for (size_t i = 0; i < m.nparams; i++)
                    m.params[i] = 0.7 * test_rng_gauss(&r);
                double x[64], y[64];
                for (size_t t = 0; t < n; t++) {
                    for (size_t k = 0; k < d; k++)
                        x[t * d + k] = AC_MAT(&X, k, t);
                    for (size_t j = 0; j < n; j++) {
                        y[t * n + j] = AC_MAT(&P, j, t);
                        keep[t * n + j] = om[j * n + t];
                    }
                }
                ac_nn_batch b = {.B = 1, .T = n, .x = x, .y = y, .keep = keep};
                masked_ctx ctx = {&m, &b};
                double L = masked_loss(&ctx);
                ac_nn_zero_grad(&m);
                ac_nn_backward(&m);
                double g[64];
                memcpy(g, m.grads, m.nparams * sizeof *g);
                /* the oracle, from the model's own weights */
                const ac_nn_tensor *tq = ac_nn_tensor_find(&m, "Wq"), *tk = ac_nn_tensor_find(&m, "Wk");
                ck_assert(tq && tk);
                ck_assert(ac_mat_init(&Wq, dk, d, &err) == AC_OK);
                ck_assert(ac_mat_init(&Wk, dk, d, &err) == AC_OK);
                memcpy(Wq.data, m.params + tq->offset, dk * d * sizeof(double));
                memcpy(Wk.data, m.params + tk->offset, dk * d * sizeof(double));
                long double md, kl, xe;
                head_ld_masked(&X, &P, &Wq, &Wk, om, &md, &kl, &xe);
                /* each logit carries (d + dk + 2) u relative to the sum of |terms|
                 * (Higham 3.5), the log-sum-exp of n of them n u more, a loss term
                 * their sum; the factor 16 covers |logits| <~ 10 here */
                double scale = 1.0 + fabsl(xe), tol = 16.0 * (double)(d + dk + n + 4) * u * scale * 10;
                ck_assert_msg(fabsl(L - xe) <= tol, "%s mask, bias %d, n %zu: loss %.17g, long "
                              "double %.17Lg (seed %llu)", mask_names[kind], bias, n, L, xe,
                              (unsigned long long)test_seed_value);
                /* finite differences: every parameter */
                size_t bad = 0;
                for (size_t i = 0; i < m.nparams; i++) {
                    double p0 = m.params[i], h = 1e-3, f[4];
                    const double step[4] = {h, -h, h / 2, -h / 2};
                    for (int k = 0; k < 4; k++) {
                        m.params[i] = p0 + step[k];
                        f[k] = masked_loss(&ctx);
                    }
                    m.params[i] = p0;
                    double D1 = (f[0] - f[1]) / (2 * h), D2 = (f[2] - f[3]) / h;
                    double R = (4 * D2 - D1) / 3;
                    /* truncation: |D1 - D2| bounds the O(h^2) term of D2; rounding:
                     * 4 evaluations of error ef each, divided by h */
                    double ef = 64.0 * (double)(n * n + d * dk) * u * scale;
                    double ftol = fabs(D1 - D2) + 8 * ef / h;
                    if (!(fabs(g[i] - R) <= ftol)) {
                        fprintf(stderr, "%s mask, bias %d, n %zu: dparam[%zu] %.17g, finite "
                                "differences %.17g (tol %.3g)\n", mask_names[kind], bias, n, i,
                                g[i], R, ftol);
                        bad++;
                    }
                }
                ck_assert_msg(bad == 0, "%s mask, bias %d, n %zu: %zu gradient entries disagree "
                              "(seed %llu)", mask_names[kind], bias, n, bad,
                              (unsigned long long)test_seed_value);
                ac_nn_model_free(&m);
                ac_mat_free(&X), ac_mat_free(&P), ac_mat_free(&Wq), ac_mat_free(&Wk);
            }
}
END_TEST

/* The trainer under a mask: its KL and max|S - P| against the long double
 * oracle at the initial weights; then BFGS (head size dk + 1) on a pattern
 * that a head of size dk produces under the mask (logits of rank dk): the
 * learned head's certified masked error (ac_head_certify_masked) is within
 * tol = 1e-5, for each class of mask, with and without bias. */
START_TEST(test_masked_trainer)
{
    const size_t n = 8, d0 = 6, dk = 2;
    for (int kind = 0; kind < 5; kind++)
        for (int bias = 0; bias < 2; bias++) {
            size_t d = d0 + (size_t)bias;
            test_rng r;
            test_rng_init(&r, 2000 + 10 * (uint64_t)kind + (uint64_t)bias);
            unsigned char om[64];
            mask_class(om, n, kind, &r);
            ac_mat X = {0}, P = {0}, Wq = {0}, Wk = {0}, Xc = {0}, Pc = {0}, S = {0};
            ac_err err;
            masked_instance(&X, &P, om, d, n, bias, &r);
            /* P: the masked softmax of a random head of size dk on X */
            ck_assert(ac_mat_init(&Wq, dk, d, &err) == AC_OK && ac_mat_init(&Wk, dk, d, &err) == AC_OK);
            for (size_t i = 0; i < dk * d; i++) {
                Wq.data[i] = test_rng_gauss(&r) / sqrt((double)d);
                Wk.data[i] = test_rng_gauss(&r) / sqrt((double)d);
            }
            ck_assert(ac_head_softmax_masked(&S, &X, &Wk, &Wq, om, &err) == AC_OK);
            memcpy(P.data, S.data, n * n * sizeof(double));
            ac_t1_normalize(&P);
            ac_mat_free(&Wq), ac_mat_free(&Wk), ac_mat_free(&S);
            ac_train_config c;
            ac_trainer t;
            ac_eval_info ev;
            ac_train_config_default(&c, AC_TASK_FIT_P);
            c.fitp_dk = dk + 1; /* one spare dimension: fewer poor local minima */
            c.seed = 7 + (uint64_t)kind;
            ck_assert_msg(ac_trainer_init_fitp_masked(&t, &c, &X, "X", &P, "P", om, &err) == AC_OK,
                          "%s", err.msg);
            ck_assert(ac_trainer_eval(&t, &ev, &err) == AC_OK);
            ck_assert(ac_trainer_fitp_instance(&t, &Xc, &Pc, &Wq, &Wk, &err) == AC_OK);
            long double md, kl, xe;
            head_ld_masked(&X, &P, &Wq, &Wk, om, &md, &kl, &xe);
            ck_assert_msg(fabsl(ev.loss - kl) <= 1e-12L * kl, "%s mask, bias %d: KL %.17g, "
                          "oracle %.17Lg", mask_names[kind], bias, ev.loss, kl);
            ck_assert_msg(fabsl(ev.maxdev - md) <= 1e-13L, "%s mask, bias %d: maxdev %.17g, "
                          "oracle %.17Lg", mask_names[kind], bias, ev.maxdev, md);
            ac_mat_free(&Xc), ac_mat_free(&Pc), ac_mat_free(&Wq), ac_mat_free(&Wk);
            double last, later;
            run(&t, 1, &last, &later);
            ck_assert(ac_trainer_fitp_instance(&t, &Xc, &Pc, &Wq, &Wk, &err) == AC_OK);
            ac_cert cert;
            ac_schedule sched = ac_schedule_upto(256);
            /* tol: BFGS stops where the line search sees no decrease of KL,
             * KL ~ 1e-13 .. 1e-12 on these instances, i.e. max|S - P| ~
             * sqrt(KL) <~ 1e-6; 1e-5 leaves a factor 10 */
            ck_assert(ac_head_certify_masked(&cert, &X, &Wk, &Wq, &P, om, 1e-5, &sched, &err) ==
                      AC_OK);
            ck_assert_msg(cert.verdict == AC_PROVED, "%s mask, bias %d: the learned head's "
                          "certified masked error is [%g, %g] (seed %llu)", mask_names[kind],
                          bias, cert.lo, cert.hi, (unsigned long long)test_seed_value);
            ac_mat_free(&Xc), ac_mat_free(&Pc), ac_mat_free(&Wq), ac_mat_free(&Wk);
            ac_mat_free(&X), ac_mat_free(&P);
            ac_trainer_free(&t);
        }
    /* a query that sees no key: refused */
    {
        test_rng r;
        test_rng_init(&r, 3000);
        unsigned char om[64];
        ac_mat X = {0}, P = {0};
        ac_err err;
        ac_train_config c;
        ac_trainer t;
        mask_class(om, 4, 1, &r);
        masked_instance(&X, &P, om, 3, 4, 0, &r);
        om[0 * 4 + 2] = om[1 * 4 + 2] = om[2 * 4 + 2] = 0; /* query 2 sees nothing */
        ac_train_config_default(&c, AC_TASK_FIT_P);
        ck_assert(ac_trainer_init_fitp_masked(&t, &c, &X, "X", &P, "P", om, &err) == AC_EDATA);
        ck_assert(strstr(err.msg, "query 2") != NULL);
        ac_trainer_free(&t);
        ac_mat_free(&X), ac_mat_free(&P);
    }
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
    tcase_add_test(tc, test_masked_loss_grad);
    tcase_add_test(tc, test_masked_trainer);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
