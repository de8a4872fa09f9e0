/* attncheck/npy.h — NumPy .npy files of float64 arrays.
 *
 * Reading accepts format versions 1.0, 2.0 and 3.0, little- or big-endian
 * float64 data (descr '<f8', '>f8', or a native-order spelling such as
 * 'float64' or '=f8') and float32 data ('<f4', '>f4', ..., widened to double
 * exactly), in C or Fortran order; the array is always returned as doubles
 * in C (row-major) order.  Any other dtype, and any malformed, truncated or
 * over-long file, is rejected with AC_EDATA and a message that starts with
 * the file name.
 *
 * Writing produces what np.save produces for a C-contiguous float64 array:
 * format version 1.0 (2.0 only if the header needed more than 65535 bytes),
 * descr '<f8', fortran_order False, the header padded with spaces so that the
 * data start at a multiple of 64 bytes, then the little-endian data.  Files
 * are written atomically (see attncheck/fileio.h).
 */
#ifndef ATTNCHECK_NPY_H
#define ATTNCHECK_NPY_H

#include <stddef.h>

#include "attncheck/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AC_NPY_MAXDIM 8

/* An n-dimensional float64 array that owns its data.  Element
 * (i_0, ..., i_{ndim-1}) is at data[((i_0 * shape[1] + i_1) * shape[2] + ...)]
 * (C order).  size is the product of shape[0..ndim-1] (1 when ndim == 0);
 * shape[k] for k >= ndim is 0.  After a successful init or read, data is
 * never NULL, even when size == 0.  A zeroed ac_array may be passed to
 * ac_array_free. */
typedef struct {
    size_t ndim;
    size_t shape[AC_NPY_MAXDIM];
    size_t size;
    double *data;
} ac_array;

/* Allocate an array of the given shape (shape[0..ndim-1]; shape may be NULL
 * when ndim == 0) filled with zeros.
 * Returns AC_OK; AC_EUSAGE if ndim > AC_NPY_MAXDIM or the size overflows;
 * AC_EINTERNAL if out of memory.  On failure a is zeroed. */
int ac_array_init(ac_array *a, size_t ndim, const size_t *shape, ac_err *err);

/* Free the data and zero a.  Accepts NULL and zeroed arrays. */
void ac_array_free(ac_array *a);

/* Read the .npy file `path` into a (which need not be initialised).
 * Returns AC_OK; AC_ENOINPUT "PATH: cannot open: <strerror>" if the file
 * cannot be opened, read, or is a directory; AC_EDATA for a file that is not
 * a well-formed float64 .npy file (bad magic, unsupported version, malformed
 * header, unsupported dtype, bad shape, truncated data, trailing bytes, ...);
 * AC_EINTERNAL if out of memory.  On failure a is zeroed. */
int ac_npy_read(const char *path, ac_array *a, ac_err *err);

/* Write a to `path` (atomically: temporary file + rename).
 * Returns AC_OK; AC_EUSAGE if a is inconsistent (ndim > AC_NPY_MAXDIM,
 * size not the product of the shape, data NULL); AC_ECANTCREAT
 * "PATH: cannot create: ..." / "PATH: cannot write: ..." on I/O failure,
 * in which case PATH is untouched; AC_EINTERNAL if out of memory. */
int ac_npy_write(const char *path, const ac_array *a, ac_err *err);

/* Read a 2-D array into the matrix m (which need not be initialised).
 * Errors as ac_npy_read, plus AC_EDATA "PATH: expected a 2-D array, got
 * shape (4,)" for any other number of dimensions.  On failure m is zeroed. */
int ac_npy_read_mat(const char *path, ac_mat *m, ac_err *err);

/* Write the matrix m as a 2-D array of shape (m->rows, m->cols).
 * Errors as ac_npy_write. */
int ac_npy_write_mat(const char *path, const ac_mat *m, ac_err *err);

/* Read a 1-D array: *v receives a malloc'ed vector of *n entries (never NULL
 * on success, even when *n == 0; release it with free()).  Errors as
 * ac_npy_read, plus AC_EDATA "PATH: expected a 1-D array, got shape (2, 3)".
 * On failure *v = NULL and *n = 0. */
int ac_npy_read_vec(const char *path, double **v, size_t *n, ac_err *err);

/* Write v[0..n-1] as a 1-D array of shape (n,).  v may be NULL when n == 0.
 * Errors as ac_npy_write. */
int ac_npy_write_vec(const char *path, const double *v, size_t n, ac_err *err);

/* Check that every entry of the C-order array x of the given shape
 * (shape[0..ndim-1], ndim <= AC_NPY_MAXDIM) is finite.
 * Returns AC_OK; AC_EDATA "NAME: entry (3, 4) is NaN" (or "is +Inf",
 * "is -Inf") for the first non-finite entry in C order, giving its
 * multi-index as a Python tuple ("()" for 0-d, "(3,)" for 1-d);
 * AC_EUSAGE if ndim > AC_NPY_MAXDIM, the size overflows, or x is NULL with
 * a nonzero size. */
int ac_array_check_finite(const char *name, const double *x, size_t ndim,
                          const size_t *shape, ac_err *err);

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_NPY_H */
