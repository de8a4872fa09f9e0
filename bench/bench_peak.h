/* bench_peak.h — the machine's dgemm peak under the current load, shared by
 * the benchmark drivers' --peak option (bench/condition.c, bench/train.c),
 * so that every script sets its rates against the same measurement.
 *
 * Prints "dgemm_peak_gflops X cpu_gflops Y": the best of 5 single-threaded
 * 512^3 dgemms by the wall clock (X) and by the calling thread's CPU time
 * (Y, the rate while it runs; idle OpenBLAS workers may spin).  Returns the
 * driver's exit status (70 when out of memory). */
#ifndef AC_BENCH_PEAK_H
#define AC_BENCH_PEAK_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <cblas.h>

#include "attncheck/blas.h"
#include "attncheck/common.h"

static double bench_thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int bench_dgemm_peak(void)
{
    size_t n = 512;
    double *a = malloc(3 * n * n * sizeof *a);
    if (!a)
        return 70;
    for (size_t i = 0; i < 3 * n * n; i++)
        a[i] = (double)(i % 97) / 97.0 - 0.5;
    ac_blas_set_threads(1);
    double best = 1e30, bestc = 1e30;
    for (int r = 0; r < 5; r++) {
        double t = ac_seconds(), c = bench_thread_cpu();
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)n, (blasint)n, (blasint)n,
                    1.0, a, (blasint)n, a + n * n, (blasint)n, 0.0, a + 2 * n * n, (blasint)n);
        t = ac_seconds() - t;
        c = bench_thread_cpu() - c;
        best = t < best ? t : best;
        bestc = c < bestc ? c : bestc;
    }
    double fl = 2.0 * (double)n * (double)n * (double)n;
    printf("dgemm_peak_gflops %.2f cpu_gflops %.2f\n", fl / best * 1e-9, fl / bestc * 1e-9);
    free(a);
    return 0;
}

#endif
