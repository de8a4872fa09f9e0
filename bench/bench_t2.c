/* bench_t2.c — Theorem 2 benchmarks (bench/bench_t2.sh runs it next to
 * its NumPy peer, bench/bench_t2.py):
 *   - the double-precision forward pass of f_W and g_V (ac_mh_forward with a
 *     reused workspace), per call;
 *   - certified separations per second: ac_t2_certify at stage 0 of a fixed
 *     X, and the case-1 construction of a fresh X followed by its
 *     certificate.
 * Every timing is the median of 7 batches of at least 0.1 s; the BLAS thread
 * count is OPENBLAS_NUM_THREADS (bench_t2.sh runs 1 and 2, as for the peer).  The layers and X are written to OUTDIR/cfgK/
 * for the peer (same .npy layout as `attncheck separate --out-dir`).
 *
 * usage: bench_t2 OUTDIR [--forward-only]
 * output: one "key value ..." line per measurement (parsed by bench_t2.sh). */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "attncheck/blas.h"
#include "attncheck/multihead.h"
#include "attncheck/npy.h"
#include "attncheck/theorem2.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef int (*bench_fn)(void *ctx, long i);

/* median seconds per call over 7 batches of >= 0.1 s; *fails counts calls
 * returning nonzero */
static double median_per_call(bench_fn fn, void *ctx, long *fails)
{
    long iters = 1;
    for (;;) {
        double t0 = ac_seconds();
        for (long i = 0; i < iters; i++)
            fn(ctx, i);
        double t = ac_seconds() - t0;
        if (t >= 0.1)
            break;
        iters = t > 0 ? (long)(iters * fmin(100.0, 0.12 / t)) + 1 : iters * 10;
    }
    double b[7];
    long f = 0;
    for (int k = 0; k < 7; k++) {
        double t0 = ac_seconds();
        for (long i = 0; i < iters; i++)
            f += fn(ctx, i) != 0;
        b[k] = (ac_seconds() - t0) / (double)iters;
    }
    qsort(b, 7, sizeof *b, cmp_double);
    if (fails)
        *fails = f;
    return b[3];
}

typedef struct {
    const ac_mh *W, *V;
    const ac_mat *X;
    ac_mat *Y;
    ac_mh_work *w;
    const ac_mh *L;
    size_t n;
} bctx;

static int do_forward(void *p, long i)
{
    bctx *c = p;
    (void)i;
    return ac_mh_forward(c->Y, c->L, c->X, c->w, NULL);
}

static int do_certify(void *p, long i)
{
    bctx *c = p;
    ac_t2_sep s;
    (void)i;
    memset(&s, 0, sizeof s);
    s.X = *c->X; /* borrowed: not freed */
    if (ac_t2_certify(&s, c->W, c->V, NULL, AC_T2_EMBED_TOL_DEFAULT, NULL) != AC_OK)
        return 1;
    return s.cert.verdict != AC_PROVED;
}

static int do_construct_certify(void *p, long i)
{
    bctx *c = p;
    ac_t2_sep s;
    memset(&s, 0, sizeof s);
    int bad = ac_t2_construct(&s.X, AC_T2_CON_1, c->W, c->V, c->n, 1, (size_t)(i % 1000), 0, NULL,
                              NULL) != AC_OK ||
              ac_t2_certify(&s, c->W, c->V, NULL, AC_T2_EMBED_TOL_DEFAULT, NULL) != AC_OK || s.cert.verdict != AC_PROVED;
    ac_t2_sep_free(&s);
    return bad;
}

static int write_layer(const char *dir, const ac_mh *L, char prefix)
{
    for (int t = 0; t < 4; t++) {
        char fn[16], path[1024];
        ac_array a;
        memset(&a, 0, sizeof a);
        snprintf(path, sizeof path, "%s/%s", dir, ac_mh_file_name(fn, sizeof fn, prefix, (ac_mh_param)t));
        if (ac_mh_get_array(L, (ac_mh_param)t, &a, NULL) || ac_npy_write(path, &a, NULL)) {
            ac_array_free(&a);
            return 1;
        }
        ac_array_free(&a);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const size_t cfg[][4] = {{64, 8, 32, 16}, {256, 16, 64, 64}};
    ac_blas_fix_core(argv);
    if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "--forward-only") != 0)) {
        fprintf(stderr, "usage: bench_t2 OUTDIR [--forward-only]\n");
        return 64;
    }
    int forward_only = argc == 3;
    printf("blas_core %s\n", ac_blas_corename());
    for (size_t k = 0; k < sizeof cfg / sizeof *cfg; k++) {
        size_t d = cfg[k][0], h = cfg[k][1], dp = cfg[k][2], n = cfg[k][3];
        ac_mh W, V;
        ac_mat X = {0}, Y = {0};
        char dir[1024];
        if (ac_t2_generate_v(&V, d, h, dp, AC_T2_GEN_GAUSSIAN, 1, NULL) ||
            ac_t2_generate_w(&W, &V, 1, 1, NULL) ||
            ac_t2_construct(&X, AC_T2_CON_1, &W, &V, n, 1, 0, 0, NULL, NULL) ||
            ac_mat_init(&Y, d, n, NULL)) {
            fprintf(stderr, "bench_t2: setup failed\n");
            return 70;
        }
        /* the peer's inputs: a Gaussian X (softmax not degenerate) */
        ac_mat Xg = {0};
        ac_t2_sample_input(&Xg, d, n, 1, 0, NULL);
        snprintf(dir, sizeof dir, "%s/cfg%zu", argv[1], k);
        mkdir(dir, 0777);
        char xp[1100];
        snprintf(xp, sizeof xp, "%s/X.npy", dir);
        if (write_layer(dir, &W, 'W') || write_layer(dir, &V, 'V') || ac_npy_write_mat(xp, &Xg, NULL)) {
            fprintf(stderr, "bench_t2: cannot write to %s\n", dir);
            return 73;
        }
        printf("config %zu d %zu h %zu dp %zu n %zu\n", k, d, h, dp, n);
        {
            /* threads: OPENBLAS_NUM_THREADS, as for the peer */
            int threads = ac_blas_get_threads();
            ac_mh_work ww, wv;
            ac_mh_work_init(&ww, &W, n, NULL);
            ac_mh_work_init(&wv, &V, n, NULL);
            bctx cf = {&W, &V, &Xg, &Y, &ww, &W, n}, cg = {&W, &V, &Xg, &Y, &wv, &V, n};
            double tf = median_per_call(do_forward, &cf, NULL);
            double tg = median_per_call(do_forward, &cg, NULL);
            printf("forward_f %zu %d %.6e\n", k, threads, tf);
            printf("forward_g %zu %d %.6e\n", k, threads, tg);
            if (!forward_only) {
                bctx cc = {&W, &V, &X, &Y, NULL, NULL, n};
                long f1 = 0, f2 = 0;
                double tc = median_per_call(do_certify, &cc, &f1);
                double tcc = median_per_call(do_construct_certify, &cc, &f2);
                printf("certify %zu %d %.6e %ld\n", k, threads, tc, f1);
                printf("construct_certify %zu %d %.6e %ld\n", k, threads, tcc, f2);
            }
            fflush(stdout);
            ac_mh_work_free(&ww);
            ac_mh_work_free(&wv);
        }
        /* the forward result the peer compares against */
        ac_mh_forward(&Y, &W, &Xg, NULL, NULL);
        snprintf(xp, sizeof xp, "%s/Yf.npy", dir);
        ac_npy_write_mat(xp, &Y, NULL);
        ac_mh_forward(&Y, &V, &Xg, NULL, NULL);
        snprintf(xp, sizeof xp, "%s/Yg.npy", dir);
        ac_npy_write_mat(xp, &Y, NULL);
        ac_mh_free(&W);
        ac_mh_free(&V);
        ac_mat_free(&X);
        ac_mat_free(&Xg);
        ac_mat_free(&Y);
    }
    return 0;
}
