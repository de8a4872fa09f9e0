/* rep_theorem_demo.c — Theorem 1 through the attncheck library.
 *
 * Builds an instance (or reads X.npy and P.npy given on the command line),
 * decides "some head of size dk has max|Softmax - P| <= tol", prints the
 * certificate, and saves the weights.
 *
 *   cc rep_theorem_demo.c $(pkg-config --cflags --libs attncheck) -o demo
 *   ./demo                 # a generated 32 x 32 instance
 *   ./demo X.npy P.npy 16  # your own, with dk = 16
 */
#include <stdio.h>
#include <stdlib.h>

#include <attncheck/blas.h>
#include <attncheck/npy.h>
#include <attncheck/theorem1.h>

int main(int argc, char **argv)
{
    ac_mat X = {0}, P = {0};
    ac_err err;
    int st;

    ac_blas_fix_core(argv); /* fast OpenBLAS kernels even if it misdetects the CPU */
    if (argc >= 3) {
        if ((st = ac_npy_read_mat(argv[1], &X, &err)) || (st = ac_npy_read_mat(argv[2], &P, &err))) {
            fprintf(stderr, "demo: %s\n", err.msg);
            return st;
        }
    } else if ((st = ac_t1_generate(&X, &P, 32, 32, 1, &err))) {
        fprintf(stderr, "demo: %s\n", err.msg);
        return st;
    }

    ac_t1_opts opts;
    ac_t1_opts_default(&opts);
    opts.dk = argc >= 4 ? (size_t)atol(argv[3]) : X.rows;

    ac_t1_result res;
    if ((st = ac_t1_check(&res, &X, &P, &opts, &err))) {
        fprintf(stderr, "demo: %s\n", err.msg);
        ac_t1_result_free(&res);
        return st;
    }
    printf("%s: %s\n", ac_verdict_name(res.verdict), res.summary);
    printf("  dist in [%g, %g], decided by %s (stage %d, %ld bits)\n", res.cert.lo, res.cert.hi,
           res.cert.method, res.cert.stage, res.cert.prec);
    for (size_t i = 0; i < res.nsteps; i++)
        printf("  %-48s %s in [%g, %g]\n", res.steps[i].name, res.steps[i].quantity,
               res.steps[i].lo, res.steps[i].hi);
    if (res.Wk.data && ((st = ac_npy_write_mat("Wk.npy", &res.Wk, &err)) ||
                        (st = ac_npy_write_mat("Wq.npy", &res.Wq, &err))))
        fprintf(stderr, "demo: %s\n", err.msg);
    int verdict = res.verdict;
    ac_t1_result_free(&res);
    ac_mat_free(&X);
    ac_mat_free(&P);
    return st ? st : verdict;
}
