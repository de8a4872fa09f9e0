/* io/npy_impl.h — internals of the .npy reader shared by npy.c (arrays,
 * data, writing), npy_header.c (the parser of the header dict) and npz.c
 * (one member of an .npz archive). */
#ifndef ATTNCHECK_IO_NPY_IMPL_H
#define ATTNCHECK_IO_NPY_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "attncheck/common.h"
#include "attncheck/npy.h"

/* At most this many header characters are quoted in a message. */
#define SNIP_CHARS 40
#define SNIP_BUF (SNIP_CHARS * 4 + 8)

/* The state and results of parsing one header. */
typedef struct {
    const char *path;
    const char *s;  /* header text without its final '\n' */
    size_t n;       /* its length */
    size_t i;       /* current position */
    ac_err *err;
    /* results */
    int big_endian;  /* data are big-endian */
    int single;      /* float32 ('<f4'): widened to double on reading (exactly) */
    int fortran;     /* fortran_order True */
    size_t ndim;
    size_t shape[AC_NPY_MAXDIM];
} hparse;

/* Parse the header p->s[0 .. p->n - 1]: first its syntax (a dict literal
 * with the keys 'descr', 'fortran_order' and 'shape', each once, values
 * balanced), then the values.  AC_OK or AC_EDATA with a message in p->err
 * naming p->path. */
int npy_parse_header(hparse *p);

/* Copy at most SNIP_CHARS characters of s[0..n-1] to out (of SNIP_BUF
 * bytes) for a message: printable ASCII as is, anything else as \xNN, and
 * "..." if cut short. */
void npy_snip(char *out, const char *s, size_t n);

/* 1 on a little-endian host. */
int npy_host_is_little_endian(void);

/* npy.c: parse a .npy stream; known_size: fsize is the number of bytes
 * the stream holds (a regular file, a member in memory), else read to EOF. */
int npy_read_stream(const char *path, FILE *fp, int known_size, uintmax_t fsize, ac_array *a,
                    ac_err *err);

/* npz.c: "FILE.npz:NAME" names the array NAME of an archive (1, with the
 * length of FILE.npz and NAME), anything else a plain path (0). */
int npz_split(const char *path, size_t *file_len, const char **member);
/* Read array member ("NAME.npy") of the archive path[0 .. file_len - 1]. */
int npz_read(const char *path, size_t file_len, const char *member, ac_array *a, ac_err *err);

#endif /* ATTNCHECK_IO_NPY_IMPL_H */
