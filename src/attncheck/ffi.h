/* attncheck/ffi.h -- flat entry points for foreign-function interfaces.
 *
 * The commands themselves reach bindings through attncheck/commands.h (a
 * request of options and arrays, a JSON result, the result's arrays).  This
 * header offers the few operations a binding needs besides them, on plain
 * row-major double arrays: certifying given weights, generating instances
 * and layers, a layer's forward pass and files, a checkpoint checksum.  The
 * sizes of the two structures a binding mirrors (ac_err, ac_cert) are
 * exported, so that a binding written with ctypes (the Python package
 * `attncheck`) can check at load time that it agrees with the library it
 * opened.  Nothing here decides anything itself: every function calls the
 * library function named in its comment.
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

/* The version of this interface: 2 (1 had ac_ffi_t1_check, ac_ffi_t2_separate
 * and ac_ffi_condition, replaced by the commands of attncheck/commands.h). */
#define AC_FFI_VERSION 2
int ac_ffi_version(void);

/* sizeof of the structures a binding mirrors: which = 0 ac_err, 1 ac_cert;
 * 0 otherwise. */
size_t ac_ffi_sizeof(int which);

/* The checksum of a checkpoint tensor (doc/mathematics.md §6.4): FNV-1a
 * (64 bits) over the little-endian bytes of the n doubles of x. */
uint64_t ac_ffi_fnv1a64(const double *x, size_t n);

/* ---- Theorem 1 (rep-theorem) ------------------------------------------ */

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

/* ---- Pretrained checkpoints (models.h) -------------------------------- */

/* Open the checkpoint directory dir as ac_model_open does (no checksum),
 * read every layer's attention (ac_model_layer: every weight it uses
 * converted, NaN/Inf refused) and close it; desc (size bytes, may be NULL)
 * gets ac_model_describe's line.  attncheck.from_torch checks what it
 * wrote with it before renaming the directory into place. */
int ac_ffi_model_check(const char *dir, char *desc, size_t size, ac_err *err);

#ifdef __cplusplus
}
#endif

#endif /* ATTNCHECK_FFI_H */
