/* nn/nn_tgemm.h — the register-tiled matrix product of the training stack
 * (internal; nn_tgemm.c).
 *
 * C (m x n, row stride ldc) = alpha (init + A B), where
 *   A(i, p) = A[i ras + p cas]          (so A may be read transposed in place),
 *   B(p, j) = B[p ldb + j]              (btrans = 0: B row-major, k x n), or
 *   B(p, j) = B[j ldb + p]              (btrans = 1: B is W^T for a row-major
 *                                        n x k matrix W, e.g. a linear layer's
 *                                        weight in out = inp W^T),
 *   init = 0 (NN_TG_ZERO), bias[j] (NN_TG_BIAS) or the old C(i, j) (NN_TG_ADD).
 *
 * Every entry is computed the same way, whatever the tiling, the blocking of
 * k, the thread or the vector width:
 *     acc = init; for p = 0 .. k-1: acc = AC_MADD(A(i, p), B(p, j), acc);
 *     C(i, j) = alpha acc
 * (AC_MADD from core/exp_kernel.h: one fused multiply-add where the target has
 * FMA).  A partial sum stored to C and loaded again is the same double, so
 * cutting k into blocks does not change a bit.  nn_tgemm and its naive twin
 * nn_tgemm_ref therefore give the same bits, and any partition of C into
 * pieces shared out over threads gives the same result.
 *
 * nn_tgemm is register-tiled with AVX-512 when the compiler targets it
 * (NN_TGEMM_SIMD = 1: --enable-native on a CPU with AVX-512F): 8 rows x 24
 * columns per tile, A read in place, B read in place (btrans = 0) or copied
 * per panel of 24 columns x 128 rows into a small transposed buffer
 * (btrans = 1).  It is meant for the products of small width (k and n up to
 * a few hundred) where a BLAS spends much of its time copying.  Without
 * AVX-512 it is the reference loop, and the callers keep their BLAS path. */
#ifndef AC_NN_TGEMM_H
#define AC_NN_TGEMM_H

#include <stddef.h>

#if defined(__AVX512F__) && defined(__FMA__)
#define NN_TGEMM_SIMD 1
#else
#define NN_TGEMM_SIMD 0
#endif

enum { NN_TG_ZERO = 0, NN_TG_BIAS = 1, NN_TG_ADD = 2 };

void nn_tgemm(size_t m, size_t n, size_t k, double alpha, const double *A, size_t ras,
              size_t cas, const double *B, size_t ldb, int btrans, double *C, size_t ldc,
              int init, const double *bias);

/* The same by three plain loops (the reference twin). */
void nn_tgemm_ref(size_t m, size_t n, size_t k, double alpha, const double *A, size_t ras,
                  size_t cas, const double *B, size_t ldb, int btrans, double *C, size_t ldc,
                  int init, const double *bias);

/* Triangular parts, for causal attention: init = 0, and with i0 = 8
 * floor(i / 8) the start of row i's strip of NN_TGEMM_MR = 8 rows,
 *   NN_TRI_COLS  row i writes only its entries j < i0 + 8 (the others are
 *                left as they were), each summed over all of p;
 *   NN_TRI_KHI   every entry of row i sums over p < min(k, i0 + 8) only;
 *   NN_TRI_KLO   every entry of row i sums over p >= i0 only;
 * each sum in index order from 0, as above.  When the skipped terms are
 * exact zeros times finite numbers (the entries above the diagonal of a
 * causal softmax), the result equals the full product's sum: a zero term
 * leaves a partial sum started from +0 unchanged, bit for bit. */
#define NN_TGEMM_MR 8
enum { NN_TRI_NONE = 0, NN_TRI_COLS = 1, NN_TRI_KHI = 2, NN_TRI_KLO = 3 };

void nn_tgemm_tri(size_t m, size_t n, size_t k, double alpha, const double *A, size_t ras,
                  size_t cas, const double *B, size_t ldb, int btrans, double *C, size_t ldc,
                  int tri);
void nn_tgemm_tri_ref(size_t m, size_t n, size_t k, double alpha, const double *A, size_t ras,
                      size_t cas, const double *B, size_t ldb, int btrans, double *C, size_t ldc,
                      int tri);

#endif /* AC_NN_TGEMM_H */
