/* attention/mh_gemm.h — the small matrix product of the double forward pass
 * of the multi-head layers (internal; mh_gemm.c).
 *
 * C = alpha A B with C m x n (row stride ldc), B k x n row-major (row stride
 * ldb) and A(i, p) = A[i ras + p cas] (so A may be read transposed in place:
 * K_i^T is A = K_i with ras = 1, cas = n).
 *
 * Every entry is computed the same way, whatever the tiling, the thread or
 * the machine's vector width:
 *     acc = 0; for p = 0 .. k-1: acc = AC_MADD(A(i, p), B(p, j), acc);
 *     C(i, j) = alpha acc
 * (AC_MADD from core/exp_kernel.h: one fused multiply-add where the target
 * has FMA, else a product and a sum).  So ac_mh_gemm and its naive twin
 * ac_mh_gemm_ref give the same bits, and any partition of C into blocks
 * shared out over threads gives the same result.
 *
 * ac_mh_gemm is register-tiled with AVX-512 when the compiler targets it
 * (AC_MH_GEMM_SIMD = 1: --enable-native on a CPU with AVX-512F), 8 rows x
 * 16 columns per tile, no packing: meant for the small products of the layer
 * (B up to about 64 K doubles, which stays in the L2 cache).  Without
 * AVX-512 it is the reference loop (AC_MH_GEMM_SIMD = 0), and the forward
 * pass keeps its BLAS path. */
#ifndef AC_ATTENTION_MH_GEMM_H
#define AC_ATTENTION_MH_GEMM_H

#include <stddef.h>

#if defined(__AVX512F__) && defined(__FMA__)
#define AC_MH_GEMM_SIMD 1
#else
#define AC_MH_GEMM_SIMD 0
#endif

void ac_mh_gemm(size_t m, size_t n, size_t k, double alpha, const double *A, size_t ras,
                size_t cas, const double *B, size_t ldb, double *C, size_t ldc);

/* The same by three plain loops (the reference twin). */
void ac_mh_gemm_ref(size_t m, size_t n, size_t k, double alpha, const double *A, size_t ras,
                    size_t cas, const double *B, size_t ldb, double *C, size_t ldc);

#endif /* AC_ATTENTION_MH_GEMM_H */
