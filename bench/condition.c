/* condition.c — benchmark driver for Theorem 3.2 (`attncheck condition`):
 * the library call ac_cond_run over a sweep of h, repeated, with the time
 * split into sampling, reduction (Gram matrix) and SVD/eigenvalues.
 *
 * usage: condition [N d T reps heads]   (default 128 64 100 5 1,2,4,8,16,32,64)
 * Prints one line per repetition and a median line:
 *   median <wall s> sampling <s> reduction <s> svd <s> mpfr <s> gflop <G> gflops <G/s> threads <n>
 * (thread-seconds for the parts; flops are the nominal counts of the double
 * kernels: m^2 M per Gram matrix, 4/3 m^3 per tridiagonalisation,
 * 4 m^2 M - 4/3 m^3 per SVD).
 *
 * usage: condition --peak   prints "dgemm_peak_gflops X cpu_gflops Y"
 * (bench/bench_peak.h): the machine's dgemm peak under the same load, to
 * set the sweep's rate against. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include <cblas.h>

#include "attncheck/blas.h"
#include "bench_peak.h"
#include "attncheck/condition.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    ac_blas_fix_core(argv);
    if (argc == 2 && !strcmp(argv[1], "--peak"))
        return bench_dgemm_peak();
    size_t N = argc > 1 ? strtoul(argv[1], NULL, 10) : 128;
    size_t d = argc > 2 ? strtoul(argv[2], NULL, 10) : 64;
    size_t T = argc > 3 ? strtoul(argv[3], NULL, 10) : 100;
    int reps = argc > 4 ? atoi(argv[4]) : 5;
    const char *hl = argc > 5 ? argv[5] : "1,2,4,8,16,32,64";
    size_t heads[64], nh = 0;
    for (const char *p = hl; *p && nh < 64;) {
        char *e;
        heads[nh++] = strtoul(p, &e, 10);
        p = *e == ',' ? e + 1 : e;
        if (e == p && *p)
            break;
    }
    if (reps < 1 || reps > 99 || nh == 0) {
        fprintf(stderr, "usage: condition [N d T reps heads]\n");
        return 64;
    }
    ac_cond_opts o;
    ac_cond_opts_default(&o);
    o.N = N;
    o.trials = T;
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    double wall[99], ts[99], tr[99], tv[99], tm[99], fl = 0;
    /* the TW1 table is built once per process; build it before timing, as
     * the first sweep of a long run would */
    ac_rmt_pred warm;
    ac_rmt_predict(&warm, N, N + 64, NULL);
    for (int r = 0; r < reps; r++) {
        ts[r] = tr[r] = tv[r] = tm[r] = 0;
        fl = 0;
        double t0 = ac_seconds();
        for (size_t i = 0; i < nh; i++) {
            ac_cond_result res;
            ac_err err;
            if (ac_cond_run(&res, heads[i], d, &o, &err)) {
                fprintf(stderr, "condition: %s\n", err.msg);
                return 70;
            }
            ts[r] += res.t_sample;
            tr[r] += res.t_reduce;
            tv[r] += res.t_solve;
            tm[r] += res.t_mpfr;
            fl += res.flops;
            ac_cond_result_free(&res);
        }
        wall[r] = ac_seconds() - t0;
        printf("run %d: %.3f s (sampling %.3f, reduction %.3f, svd %.3f, mpfr %.3f thread-s)\n",
               r + 1, wall[r], ts[r], tr[r], tv[r], tm[r]);
    }
    double w[99];
    memcpy(w, wall, (size_t)reps * sizeof(double));
    qsort(w, (size_t)reps, sizeof(double), cmp);
    double med = w[reps / 2];
    int k = 0; /* the run whose wall time is the median, for its breakdown */
    for (int r = 0; r < reps; r++)
        if (wall[r] == med)
            k = r;
    printf("median %.4f sampling %.4f reduction %.4f svd %.4f mpfr %.4f gflop %.3f gflops %.1f "
           "threads %d core %s\n",
           med, ts[k], tr[k], tv[k], tm[k], fl * 1e-9, fl * 1e-9 / med, threads,
           ac_blas_corename());
    return 0;
}
