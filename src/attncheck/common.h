/* attncheck/common.h — status codes, error reports and dense matrices shared
 * by every attncheck module.
 *
 * Conventions of the whole library (see attncheck(3)):
 *   - Functions return an int status (AC_OK or one of the codes below) and
 *     never print or exit.  The status values are the program's exit codes
 *     (sysexits.h), so the command-line front end passes them through.
 *   - A function that can fail takes a trailing `ac_err *err` (may be NULL)
 *     and fills it with a one-line message that names the file or object and
 *     the problem, e.g. "P.npy: column 3 sums to 1.25, not 1".
 *   - Sizes are size_t.  Matrices are dense, row-major (C order, as NumPy's
 *     default), double precision.
 *   - init/free pairs: every *_free accepts NULL or a zeroed object, and a
 *     failed init leaves nothing allocated.
 */
#ifndef ATTNCHECK_COMMON_H
#define ATTNCHECK_COMMON_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AC_VERSION_STRING "0.1.0"

/* Status codes == program exit codes (sysexits.h numbering). */
enum {
    AC_OK        = 0,
    AC_EUSAGE    = 64, /* impossible sizes or arguments (EX_USAGE) */
    AC_EDATA     = 65, /* input data malformed or out of domain (EX_DATAERR) */
    AC_ENOINPUT  = 66, /* an input file cannot be opened (EX_NOINPUT) */
    AC_EINTERNAL = 70, /* internal error, including out of memory (EX_SOFTWARE) */
    AC_ECANTCREAT = 73 /* an output file cannot be created (EX_CANTCREAT) */
};

#define AC_ERR_MSG_MAX 512

#define AC_ERR_FIELDS_MAX 64

typedef struct {
    int status;                 /* AC_OK or an error code above */
    char msg[AC_ERR_MSG_MAX];   /* one line, no trailing newline */
    char fields[AC_ERR_FIELDS_MAX]; /* the parameters the message is about, by the
                                   names of their struct fields, comma-separated in
                                   the order the message names them ("heads,width");
                                   "" if none.  A front end may map each to its own
                                   spelling (attncheck maps "width" to "--width"). */
} ac_err;

/* Record an error (when err != NULL) and return `status`.  printf-style. */
int ac_err_set(ac_err *err, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The same for a message about parameters: `fields` lists them
 * (comma-separated), and the message names each by that field name, as a
 * whole word, in that order: ac_err_set_field(err, AC_EUSAGE, "heads,width",
 * "heads %zu does not divide width %zu", h, c). */
int ac_err_set_field(ac_err *err, int status, const char *fields, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Reset err to AC_OK with an empty message. */
void ac_err_clear(ac_err *err);

/* Dense row-major matrix that owns its data.  A zeroed ac_mat is empty and
 * may be passed to ac_mat_free. */
typedef struct {
    size_t rows, cols;
    double *data;   /* rows*cols entries, element (i,j) at data[i*cols + j] */
} ac_mat;

/* Allocate a rows x cols matrix filled with zeros.  rows or cols may be 0.
 * Returns AC_OK, AC_EUSAGE if rows*cols overflows, AC_EINTERNAL if out of
 * memory. */
int ac_mat_init(ac_mat *m, size_t rows, size_t cols, ac_err *err);
void ac_mat_free(ac_mat *m);
/* Deep copy: dst must be zeroed or freed. */
int ac_mat_copy(ac_mat *dst, const ac_mat *src, ac_err *err);
/* The transpose of *m in place (reallocated; exact): e.g. a row-stochastic
 * P in PyTorch's layout made column-stochastic.  On error *m is unchanged. */
int ac_mat_transpose(ac_mat *m, ac_err *err);

#define AC_MAT(m, i, j) ((m)->data[(size_t)(i) * (m)->cols + (size_t)(j)])

/* Overflow-checked products for sizes. Return 0 on overflow. */
int ac_size_mul(size_t a, size_t b, size_t *out);

/* Seconds on a monotonic clock (CLOCK_MONOTONIC), for the time fields of
 * certificates and results: differences are elapsed wall time. */
double ac_seconds(void);

/* Library version string, e.g. "0.1.0". */
const char *ac_version(void);

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_COMMON_H */
