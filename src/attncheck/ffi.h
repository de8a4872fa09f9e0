/* attncheck/ffi.h -- flat entry points for foreign-function interfaces.
 *
 * The checks of theorem1.h, theorem2.h and condition.h take and return
 * structures that grow between versions.  This header offers the same
 * checks on plain row-major double arrays, with results copied into small
 * fixed structures (ac_ffi_*_info) whose size is exported, so that a binding
 * written with ctypes (the Python package `attncheck`) can check at load time
 * that it agrees with the library it opened.  Nothing here decides anything
 * itself: every function calls the library function named in its comment.
 *
 * Errors: every function returns AC_OK or an ac_err status (common.h) and
 * fills *err (which may not be NULL) with the library's one-line message.
 */
#ifndef ATTNCHECK_FFI_H
#define ATTNCHECK_FFI_H

#include <stddef.h>
#include <stdint.h>

#include "attncheck/common.h"
#include "attncheck/verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this interface: 1.  Appending a field to an info
 * structure keeps the version and changes its size. */
#define AC_FFI_VERSION 1
int ac_ffi_version(void);

/* sizeof of the structures a binding mirrors: which = 0 ac_err, 1 ac_cert,
 * 2 ac_ffi_t1_info, 3 ac_ffi_t2_info, 4 ac_ffi_cond_info; 0 otherwise. */
size_t ac_ffi_sizeof(int which);

/* The checksum of a checkpoint tensor (doc/mathematics.md §6.4): FNV-1a
 * (64 bits) over the little-endian bytes of the n doubles of x. */
uint64_t ac_ffi_fnv1a64(const double *x, size_t n);

/* ---- Theorem 1 (rep-theorem) ------------------------------------------ */

typedef struct {
    ac_verdict verdict;     /* C(tol): some head has max|Softmax - P| <= tol */
    ac_verdict exact;       /* the column-normalised P is exactly representable */
    int route;              /* ac_t1_route: 0 construction, 1 decision procedure */
    long rank;              /* certified rank of X (-1: not certified) */
    size_t d, n, dk;
    double dist_lo, dist_hi; /* enclosure of inf over heads of max|Softmax - P| */
    double rho_lo, rho_hi;   /* log-domain residual (NaN: not applicable) */
    double lowrank_lo, lowrank_hi; /* sigma_{dk+1}(K Pi L Pi) (NaN: not applicable) */
    ac_cert cert;           /* the claim dist <= tol */
    ac_cert weights_cert;   /* the claim for the returned weights */
    int has_weights;        /* Wq, Wk are dk x d (else empty) */
    char summary[320];
} ac_ffi_t1_info;

typedef struct ac_ffi_t1 ac_ffi_t1; /* an ac_t1_result */

/* ac_t1_check on X (d x n) and P (n x n), both row-major; dk = 0 means
 * dk = d; tol < 0 means the default AC_T1_TOL_DEFAULT; normalize != 0
 * divides each column of P by its sum first (ac_t1_normalize).  *out
 * receives a result to be freed with ac_ffi_t1_free (also on error). */
int ac_ffi_t1_check(ac_ffi_t1 **out, const double *X, size_t d, size_t n, const double *P,
                    size_t dk, double tol, int normalize, ac_err *err);
void ac_ffi_t1_get(const ac_ffi_t1 *r, ac_ffi_t1_info *info);
/* Copy the written weights (dk x d, row-major): which = 0 Wq, 1 Wk.
 * Returns the number of doubles copied (0 if there are none). */
size_t ac_ffi_t1_weights(const ac_ffi_t1 *r, int which, double *out);
void ac_ffi_t1_free(ac_ffi_t1 *r);

/* ac_head_certify (head.h) with the default ball stages: decide
 * max|Softmax((Wk X)^T (Wq X)/sqrt(dk)) - P| <= tol for given weights
 * Wq, Wk (dk x d), X (d x n), P (n x n), all row-major. */
int ac_ffi_head_certify(ac_cert *cert, const double *X, size_t d, size_t n, const double *Wq,
                        const double *Wk, size_t dk, const double *P, double tol, ac_err *err);

/* The instances of rep-theorem: kind = 0 Gaussian X (d x n) with Dirichlet
 * P (ac_t1_generate), 1 the same X with a P representable at head size dk
 * (ac_t1_generate_representable). */
int ac_ffi_t1_generate(double *X, double *P, size_t d, size_t n, int kind, size_t dk,
                       uint64_t seed, ac_err *err);

/* ---- Theorem 2 (separate) --------------------------------------------- */

/* A layer as one block of 4 h hs d doubles, wq | wk | wv | wo, in the
 * layout of ac_mh (multihead.h): wq, wk, wv are (h hs) x d, wo d x (h hs). */

typedef struct {
    ac_verdict verdict;     /* PROVED: an X with f_W(X) != g_V(X) certified */
    int kase;               /* the case of the paper's proof (ac_t2_case) */
    ac_verdict hypotheses;  /* Theorem 2's hypotheses on g_V hold */
    int identical;          /* head-wise identity: 1, 0, or -1 unknown */
    size_t d, h, hs_w, hs_v, n;
    ac_cert cert;           /* the certificate of the best X */
    double rel_lo;          /* certified lower bound on ||f-g|| / (||f|| + ||g||) */
    int has_x;              /* a separating X (d x n) is available */
    char summary[400];
} ac_ffi_t2_info;

typedef struct ac_ffi_t2 ac_ffi_t2; /* an ac_t2_result */

/* ac_t2_separate on f_W (head size hs_w) and g_V (head size hs_v). */
int ac_ffi_t2_separate(ac_ffi_t2 **out, const double *W, size_t hs_w, const double *V,
                       size_t hs_v, size_t d, size_t h, size_t n, uint64_t seed, ac_err *err);
void ac_ffi_t2_get(const ac_ffi_t2 *r, ac_ffi_t2_info *info);
size_t ac_ffi_t2_x(const ac_ffi_t2 *r, double *out);
void ac_ffi_t2_free(ac_ffi_t2 *r);

/* g_V (ac_t2_generate_v with the kind ac_t2_gen_for_case(kase)) into V
 * (4 h dp d doubles) and f_W for that case (ac_t2_generate_w) into W
 * (4 d d doubles, head size d/h). */
int ac_ffi_t2_generate(double *W, double *V, size_t d, size_t h, size_t dp, int kase,
                       uint64_t seed, ac_err *err);
/* The layer of the block params (head size hs) on X (d x n, row-major): Y
 * (d x n) = y(X) in double by ac_mh_forward (multihead.h). */
int ac_ffi_mh_forward(double *Y, const double *params, size_t d, size_t h, size_t hs,
                      const double *X, size_t n, ac_err *err);
/* The layer's files DIR/<prefix>q.npy ... <prefix>o.npy (ac_mh_save_dir). */
int ac_ffi_mh_save_dir(const double *params, size_t d, size_t h, size_t hs, const char *dir,
                       char prefix, ac_err *err);

/* ---- Theorem 3.2 (condition) ------------------------------------------ */

typedef struct {
    size_t h, D, N, trials;
    double median, mean, q05, q95, elog; /* of the sampled kappa */
    double first_order;    /* Bai-Yin prediction of kappa */
    double tw_median;      /* Tracy-Widom corrected median (NaN: n/a) */
    size_t n_unresolved;
} ac_ffi_cond_info;

/* ac_cond_run for one h: mode 0 i.i.d. Gaussian N x D blocks, 1 attention
 * heads with Gaussian weights (input width input_dim, 0 = D); head_dim is
 * d of D = h d.  kappa receives the trials sampled values (may be NULL). */
int ac_ffi_condition(ac_ffi_cond_info *info, double *kappa, size_t h, size_t head_dim, size_t N,
                     size_t input_dim, int mode, size_t trials, uint64_t seed, ac_err *err);

#ifdef __cplusplus
}
#endif

#endif /* ATTNCHECK_FFI_H */
