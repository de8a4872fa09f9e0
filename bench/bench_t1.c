/* bench_t1.c — Theorem 1 at n tokens, d rows (default d = n = 1024):
 *   (a) certified: ac_t1_check (construction + certified rank + stage-0
 *       certificate of the written weights + the proof-step residuals);
 *   (b) plain: the same construction in double + the double check
 *       max|Softmax((Wk X)'(Wq X)/sqrt(dk)) - P| without any bound.
 * Prints the median of REPS runs of each, in seconds, one per line:
 *   certified <s>
 *   plain <s>
 * and the median CPU seconds of the process during each (certified_cpu,
 * plain_cpu: all threads; the steadier number on a loaded machine)
 * and the stage and method that certified the weights.
 * Usage: bench_t1 [n] [reps] [seed] [d]
 */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CPU seconds of the whole process (all threads): under load, where wall
 * times are noise, this is the steadier number (with OPENBLAS_NUM_THREADS=1
 * it is the work itself). */
static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#include "attncheck/blas.h"
#include "attncheck/linalg.h"
#include "attncheck/theorem1.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The plain path: paper 1, eqs. (4)-(6) in double, then the double check. */
static double plain_cpu_last;

static double plain(const ac_mat *X, const ac_mat *P, double *err_out)
{
    /* dk = n: the construction's nonzero rows only (the certified run uses
     * dk = d, whose rows beyond n are zero and cost nothing in exact terms) */
    size_t d = X->rows, n = X->cols, dk = n;
    ac_mat Y = {0}, Wt = {0}, Wq = {0}, S = {0};
    double t0 = ac_seconds(), c0 = cpu_seconds();
    ac_approx_pinv_fullcol(&Y, X, NULL);
    ac_mat_init(&Wt, n, n, NULL);
    double sq = sqrt((double)dk);
    for (size_t i = 0; i < n * n; i++)
        Wt.data[i] = sq * log(P->data[i]);
    ac_mat Wk = Y; /* Wk = X^+ (dk = n) */
    ac_mat_init(&Wq, dk, d, NULL);
    ac_gemm(&Wq, AC_NOTRANS, &Wt, AC_NOTRANS, &Y, NULL);
    ac_head_softmax(&S, X, &Wk, &Wq, NULL);
    double e = 0;
    for (size_t i = 0; i < n * n; i++)
        e = fmax(e, fabs(S.data[i] - P->data[i]));
    double t = ac_seconds() - t0;
    plain_cpu_last = cpu_seconds() - c0;
    *err_out = e;
    ac_mat_free(&Y);
    ac_mat_free(&Wt);
    ac_mat_free(&Wq);
    ac_mat_free(&S);
    return t;
}

int main(int argc, char **argv)
{
    ac_blas_fix_core(argv);
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 1024;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    uint64_t seed = argc > 3 ? (uint64_t)atoll(argv[3]) : 1;
    size_t d = argc > 4 ? (size_t)atol(argv[4]) : n;
    ac_mat X = {0}, P = {0};
    if (ac_t1_generate(&X, &P, d, n, seed, NULL))
        return 70;
    double *tc = malloc(reps * sizeof(double)), *tp = malloc(reps * sizeof(double));
    double *cc = malloc(reps * sizeof(double)), *cp = malloc(reps * sizeof(double));
    double err = 0, bound = 0;
    int stage = 0;
    char method[sizeof(((ac_cert *)0)->method)] = "";
    ac_t1_opts o;
    ac_t1_opts_default(&o);
    o.dk = n; /* as the plain and NumPy sides (for d = n the default dk = d) */
    for (int r = 0; r < reps; r++) {
        tp[r] = plain(&X, &P, &err);
        cp[r] = plain_cpu_last;
        ac_t1_result res;
        double t0 = ac_seconds(), c0 = cpu_seconds();
        int st = ac_t1_check(&res, &X, &P, &o, NULL);
        tc[r] = ac_seconds() - t0;
        cc[r] = cpu_seconds() - c0;
        if (st || res.verdict != AC_PROVED) {
            fprintf(stderr, "bench_t1: certified run did not prove (status %d)\n", st);
            return 70;
        }
        bound = res.weights_cert.hi;
        stage = res.weights_cert.stage;
        snprintf(method, sizeof method, "%s", res.weights_cert.method);
        ac_t1_result_free(&res);
    }
    qsort(tc, reps, sizeof *tc, cmp);
    qsort(tp, reps, sizeof *tp, cmp);
    qsort(cc, reps, sizeof *cc, cmp);
    qsort(cp, reps, sizeof *cp, cmp);
    printf("n %zu d %zu blas %s threads %d\n", n, d, ac_blas_corename(), ac_blas_get_threads());
    printf("certified %.4f\n", tc[reps / 2]);
    printf("plain %.4f\n", tp[reps / 2]);
    printf("certified_cpu %.4f\n", cc[reps / 2]);
    printf("plain_cpu %.4f\n", cp[reps / 2]);
    printf("plain_max_error %.3g\n", err);
    printf("certified_bound %.3g\n", bound);
    printf("weights_stage %d (%s)\n", stage, method);
    free(tc);
    free(tp);
    free(cc);
    free(cp);
    ac_mat_free(&X);
    ac_mat_free(&P);
    return 0;
}
