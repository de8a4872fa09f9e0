/* attncheck/blas.h — the BLAS underneath attncheck: core detection, threads.
 *
 * Debian's OpenBLAS 0.3.21 (a DYNAMIC_ARCH build) picks its kernels when it is
 * loaded; on some virtual machines it misidentifies a modern CPU as an old
 * generic core ("Prescott") and runs ~5x slower (doc/mathematics.md §7).  The choice can
 * only be overridden by the environment variable OPENBLAS_CORETYPE, read when
 * the library loads, so a program must set it and restart itself:
 * ac_blas_fix_core() does exactly that (the attncheck program calls it first
 * thing).  Set ATTNCHECK_NO_BLAS_FIX=1 to disable it.
 */
#ifndef ATTNCHECK_BLAS_H
#define ATTNCHECK_BLAS_H

#ifdef __cplusplus
extern "C" {
#endif

/* The kernel set OpenBLAS chose ("Haswell", "SkylakeX", ...), or "generic"
 * when the CBLAS is not OpenBLAS. */
const char *ac_blas_corename(void);

/* The OPENBLAS_CORETYPE to use instead of `corename` on a CPU with the given
 * features, or NULL when corename is fine.  Pure function (tested). */
const char *ac_blas_better_core(const char *corename, int has_avx512, int has_avx2, int has_avx);

/* If OpenBLAS picked a generic core on a CPU that has better kernels, and
 * OPENBLAS_CORETYPE is not already set: set it and re-execute the running
 * program (/proc/self/exe) with the same argv.  Returns 0 when nothing was
 * needed or possible (the program continues); does not return on success. */
int ac_blas_fix_core(char **argv);

/* Number of BLAS threads (OpenBLAS; no-op otherwise). */
void ac_blas_set_threads(int n);
int ac_blas_get_threads(void);

#ifdef __cplusplus
}
#endif
#endif
