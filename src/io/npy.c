/* npy.c — NumPy .npy files of float64 arrays (attncheck/npy.h).
 *
 * File layout (numpy/lib/format.py, NEP 1):
 *   "\x93NUMPY" major minor HLEN HEADER DATA
 * HLEN is a little-endian u16 (version 1.0) or u32 (2.0, 3.0); HEADER is
 * HLEN bytes holding a Python dict literal with the keys 'descr',
 * 'fortran_order' and 'shape', padded with spaces and ended by '\n'.
 *
 * The reader treats every file as hostile: all lengths are checked against
 * what was actually read, the header is parsed by a small recursive-descent
 * parser that never looks past its buffer, and the data buffer is only
 * allocated once the file is known to hold that much data (for regular
 * files) or grown as data arrive (for pipes).
 */
#include <config.h>

/* POSIX.1-2008 + XSI (mkstemp, fchmod, fdopen, fileno, fsync, realpath...)
 * when the compiler runs in strict ISO C mode and config.h did not ask for
 * system extensions. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE) && !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 700
#endif

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "attncheck/common.h"
#include "attncheck/fileio.h"
#include "attncheck/npy.h"
#include "io/npy_impl.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64
/* Largest header accepted (numpy itself refuses more than 10000 bytes by
 * default); bounds the memory a hostile file can make us allocate. */
#define NPY_HEADER_MAX ((size_t)1 << 24)
/* numpy pads the header for in-place growth of the first axis by this many
 * digits minus the length of repr(shape[0]) (numpy >= 1.23). */
#define NPY_GROWTH_DIGITS 21
/* Chunk in which stream (non-regular file) data are read. */
#define NPY_STREAM_CHUNK ((size_t)1 << 20)
/* "(" + 8 * (20 digits + ", ") + ")" + NUL fits easily. */
#define SHAPE_BUF 256

/* ---------------------------------------------------------------------- */
/* Small helpers                                                           */

static uint64_t bswap64(uint64_t x)
{
#if defined(__GNUC__)
    return __builtin_bswap64(x);
#else
    x = ((x & 0x00000000FFFFFFFFull) << 32) | ((x & 0xFFFFFFFF00000000ull) >> 32);
    x = ((x & 0x0000FFFF0000FFFFull) << 16) | ((x & 0xFFFF0000FFFF0000ull) >> 16);
    x = ((x & 0x00FF00FF00FF00FFull) << 8) | ((x & 0xFF00FF00FF00FF00ull) >> 8);
    return x;
#endif
}

static void swap_doubles(double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t u;
        memcpy(&u, &x[i], sizeof u);
        u = bswap64(u);
        memcpy(&x[i], &u, sizeof u);
    }
}

/* Number of entries of an array of this shape: 0 if any dimension is 0
 * (whatever the others), else the product.  Returns 0 if the entries would
 * not fit in memory (size * sizeof(double) overflows). */
static int shape_size(size_t ndim, const size_t *shape, size_t *size)
{
    size_t n = 1;
    for (size_t k = 0; k < ndim; k++)
        if (shape[k] == 0) {
            *size = 0;
            return 1;
        }
    for (size_t k = 0; k < ndim; k++)
        if (!ac_size_mul(n, shape[k], &n))
            return 0;
    if (n > SIZE_MAX / sizeof(double))
        return 0;
    *size = n;
    return 1;
}

/* Format a shape or index as a Python tuple: "()", "(4,)", "(3, 4)". */
static void format_tuple(char *out, size_t outsz, size_t ndim, const size_t *v)
{
    size_t used = 0;
    int r;

    r = snprintf(out, outsz, "(");
    used = (size_t)r;
    for (size_t k = 0; k < ndim && used < outsz; k++) {
        r = snprintf(out + used, outsz - used, "%s%zu", k ? ", " : "", v[k]);
        if (r < 0)
            break;
        used += (size_t)r;
    }
    if (used < outsz)
        snprintf(out + used, outsz - used, ndim == 1 ? ",)" : ")");
}

/* Read up to n bytes; returns the number read (short only at EOF or on
 * error, which the caller tells apart with ferror). */
static size_t read_full(FILE *fp, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        size_t r = fread((unsigned char *)buf + got, 1, n - got, fp);
        if (r == 0)
            break;
        got += r;
    }
    return got;
}

/* ---------------------------------------------------------------------- */
/* Arrays                                                                  */

int ac_array_init(ac_array *a, size_t ndim, const size_t *shape, ac_err *err)
{
    size_t size;

    memset(a, 0, sizeof *a);
    if (ndim > AC_NPY_MAXDIM)
        return ac_err_set(err, AC_EUSAGE, "array of %zu dimensions: at most %d are supported",
                          ndim, AC_NPY_MAXDIM);
    if (ndim > 0 && !shape)
        return ac_err_set(err, AC_EUSAGE, "array of %zu dimensions without a shape", ndim);
    if (!shape_size(ndim, shape, &size)) {
        char buf[SHAPE_BUF];
        format_tuple(buf, sizeof buf, ndim, shape);
        return ac_err_set(err, AC_EUSAGE, "array of shape %s is too large", buf);
    }
    a->data = calloc(size ? size : 1, sizeof(double));
    if (!a->data) {
        char buf[SHAPE_BUF];
        format_tuple(buf, sizeof buf, ndim, shape);
        return ac_err_set(err, AC_EINTERNAL, "out of memory allocating an array of shape %s",
                          buf);
    }
    a->ndim = ndim;
    for (size_t k = 0; k < ndim; k++)
        a->shape[k] = shape[k];
    a->size = size;
    return AC_OK;
}

void ac_array_free(ac_array *a)
{
    if (!a)
        return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

int ac_array_check_finite(const char *name, const double *x, size_t ndim,
                          const size_t *shape, ac_err *err)
{
    size_t size, idx[AC_NPY_MAXDIM];
    const char *what;
    char buf[SHAPE_BUF];

    if (!name)
        name = "array";
    if (ndim > AC_NPY_MAXDIM || (ndim > 0 && !shape))
        return ac_err_set(err, AC_EUSAGE, "%s: bad shape for a finiteness check", name);
    if (!shape_size(ndim, shape, &size))
        return ac_err_set(err, AC_EUSAGE, "%s: array is too large", name);
    if (size > 0 && !x)
        return ac_err_set(err, AC_EUSAGE, "%s: no data", name);
    for (size_t i = 0; i < size; i++) {
        if (isfinite(x[i]))
            continue;
        size_t rem = i;
        for (size_t k = ndim; k-- > 0;) {
            idx[k] = rem % shape[k];
            rem /= shape[k];
        }
        what = isnan(x[i]) ? "NaN" : x[i] > 0 ? "+Inf" : "-Inf";
        format_tuple(buf, sizeof buf, ndim, idx);
        return ac_err_set(err, AC_EDATA, "%s: entry %s is %s", name, buf, what);
    }
    return AC_OK;
}

/* ---------------------------------------------------------------------- */
/* Reading                                                                 */

/* Reorder the Fortran-order data `in` into C order in `out`. */
static void fortran_to_c(double *out, const double *in, size_t ndim, const size_t *shape,
                         size_t size)
{
    size_t idx[AC_NPY_MAXDIM] = {0}, fs[AC_NPY_MAXDIM];
    size_t off = 0;

    if (size == 0)
        return;
    for (size_t k = 0; k < ndim; k++)
        fs[k] = k ? fs[k - 1] * shape[k - 1] : 1;
    for (size_t c = 0; c < size; c++) {
        out[c] = in[off];
        if (c + 1 == size)
            break;
        /* Advance the C-order multi-index and the Fortran offset with it. */
        size_t k = ndim - 1;
        idx[k]++;
        off += fs[k];
        while (idx[k] == shape[k] && k > 0) {
            off -= fs[k] * shape[k];
            idx[k] = 0;
            k--;
            idx[k]++;
            off += fs[k];
        }
    }
}

static int read_error(const char *path, FILE *fp, ac_err *err)
{
    int e = errno;
    (void)fp;
    return ac_err_set(err, AC_ENOINPUT, "%s: cannot read: %s", path, strerror(e ? e : EIO));
}

/* Read nbytes of array data into a fresh buffer *out.  `avail` is the number
 * of bytes left in the file if it is regular (known_size != 0). */
static int read_data(const char *path, FILE *fp, int known_size, uintmax_t avail, size_t nbytes,
                     double **out, ac_err *err)
{
    unsigned char *buf = NULL;
    size_t got = 0;

    *out = NULL;
    if (known_size) {
        if (avail < nbytes)
            return ac_err_set(err, AC_EDATA, "%s: truncated: expected %zu bytes of data, found %ju",
                              path, nbytes, avail);
        if (avail > nbytes)
            return ac_err_set(err, AC_EDATA,
                              "%s: trailing bytes after the data: expected %zu bytes of data, "
                              "found %ju",
                              path, nbytes, avail);
        buf = malloc(nbytes ? nbytes : sizeof(double));
        if (!buf)
            return ac_err_set(err, AC_EINTERNAL, "%s: out of memory for %zu bytes of data", path,
                              nbytes);
        got = read_full(fp, buf, nbytes);
    } else {
        /* A pipe or device: grow the buffer as data arrive, so that a header
         * announcing a huge array cannot make us allocate it up front. */
        size_t cap = nbytes < NPY_STREAM_CHUNK ? nbytes : NPY_STREAM_CHUNK;
        buf = malloc(cap ? cap : sizeof(double));
        if (!buf)
            return ac_err_set(err, AC_EINTERNAL, "%s: out of memory for %zu bytes of data", path,
                              nbytes);
        for (;;) {
            got += read_full(fp, buf + got, cap - got);
            if (got < cap || cap == nbytes)
                break;
            size_t ncap = cap > (nbytes - cap) ? nbytes : 2 * cap;
            unsigned char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                return ac_err_set(err, AC_EINTERNAL, "%s: out of memory for %zu bytes of data",
                                  path, nbytes);
            }
            buf = nb;
            cap = ncap;
        }
    }
    if (ferror(fp)) {
        int st = read_error(path, fp, err);
        free(buf);
        return st;
    }
    if (got < nbytes) {
        free(buf);
        return ac_err_set(err, AC_EDATA, "%s: truncated: expected %zu bytes of data, found %zu",
                          path, nbytes, got);
    }
    if (fgetc(fp) != EOF) {
        free(buf);
        return ac_err_set(err, AC_EDATA, "%s: trailing bytes after the data: expected %zu bytes of data, "
                          "found more",
                          path, nbytes);
    }
    if (ferror(fp)) {
        int st = read_error(path, fp, err);
        free(buf);
        return st;
    }
    *out = (double *)(void *)buf;
    return AC_OK;
}

/* The preamble: magic, version, header length.  *prelen receives its
 * length (10 or 12 bytes), *hlen the announced header length, checked
 * against the file size when it is known (fsize, for a regular file). */
static int read_preamble(const char *path, FILE *fp, int known_size, uintmax_t fsize,
                         size_t *prelen, size_t *hlen, ac_err *err)
{
    unsigned char pre[12];
    size_t got = read_full(fp, pre, 10);
    unsigned major, minor;
    if (ferror(fp))
        return read_error(path, fp, err);
    if (got == 0)
        return ac_err_set(err, AC_EDATA, "%s: empty file, not a .npy file", path);
    if (memcmp(pre, NPY_MAGIC, got < NPY_MAGIC_LEN ? got : NPY_MAGIC_LEN) != 0)
        return ac_err_set(err, AC_EDATA, "%s: not a .npy file (bad magic)", path);
    if (got < 8)
        return ac_err_set(err, AC_EDATA,
                          "%s: truncated header: file ends after %zu bytes, inside the preamble",
                          path, got);
    major = pre[6];
    minor = pre[7];
    if (!((major == 1 || major == 2 || major == 3) && minor == 0))
        return ac_err_set(err, AC_EDATA,
                          "%s: unsupported .npy format version %u.%u (supported: 1.0, 2.0, 3.0)",
                          path, major, minor);
    *prelen = major == 1 ? 10 : 12;
    if (got == 10 && *prelen == 12) {
        got += read_full(fp, pre + 10, 2);
        if (ferror(fp))
            return read_error(path, fp, err);
    }
    if (got < *prelen)
        return ac_err_set(err, AC_EDATA,
                          "%s: truncated header: file ends after %zu bytes, inside the preamble",
                          path, got);
    if (major == 1)
        *hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
    else
        *hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 |
                (size_t)pre[11] << 24;
    if (*hlen == 0)
        return ac_err_set(err, AC_EDATA, "%s: empty header", path);
    if (known_size && (uintmax_t)*hlen > (fsize > *prelen ? fsize - *prelen : 0))
        return ac_err_set(err, AC_EDATA,
                          "%s: truncated header: header of %zu bytes announced, file has %ju "
                          "bytes after the preamble",
                          path, *hlen, fsize > *prelen ? fsize - *prelen : 0);
    if (*hlen > NPY_HEADER_MAX)
        return ac_err_set(err, AC_EDATA, "%s: header of %zu bytes is too large (limit %zu)",
                          path, *hlen, NPY_HEADER_MAX);
    return AC_OK;
}

/* The header dict of hlen bytes, parsed into p (npy_header.c). */
static int read_header(const char *path, FILE *fp, size_t hlen, hparse *p, ac_err *err)
{
    char *hdr = malloc(hlen);
    int st;
    if (!hdr)
        return ac_err_set(err, AC_EINTERNAL, "%s: out of memory for the header", path);
    size_t got = read_full(fp, hdr, hlen);
    if (ferror(fp)) {
        free(hdr);
        return read_error(path, fp, err);
    }
    if (got < hlen) {
        free(hdr);
        return ac_err_set(err, AC_EDATA,
                          "%s: truncated header: expected %zu header bytes, found %zu", path, hlen,
                          got);
    }
    if (hdr[hlen - 1] != '\n') {
        free(hdr);
        return ac_err_set(err, AC_EDATA, "%s: header is not terminated by a newline", path);
    }
    memset(p, 0, sizeof *p);
    p->path = path;
    p->s = hdr;
    p->n = hlen - 1;
    p->err = err;
    st = npy_parse_header(p);
    free(hdr);
    p->s = NULL;
    return st;
}

/* float32 data (size values in the buffer *data, of the file's byte order)
 * widened to doubles in a new buffer: exact, every float is a double. */
static int widen_singles(const char *path, double **data, size_t size, int big_endian,
                         ac_err *err)
{
    double *w = malloc(size ? size * sizeof *w : 1);
    if (!w) {
        free(*data);
        *data = NULL;
        return ac_err_set(err, AC_EINTERNAL, "%s: out of memory for %zu values", path, size);
    }
    const unsigned char *b = (const unsigned char *)*data;
    for (size_t i = 0; i < size; i++) {
        uint32_t u = 0;
        for (int k = 0; k < 4; k++) {
            uint32_t byte = b[4 * i + (size_t)k];
            u |= byte << (big_endian ? 8 * (3 - k) : 8 * k);
        }
        float f;
        memcpy(&f, &u, sizeof f);
        w[i] = (double)f;
    }
    free(*data);
    *data = w;
    return AC_OK;
}

static int npy_read_fp(const char *path, FILE *fp, ac_array *a, ac_err *err)
{
    struct stat sb;

    if (fstat(fileno(fp), &sb) != 0) {
        int e = errno;
        return ac_err_set(err, AC_ENOINPUT, "%s: cannot open: %s", path, strerror(e));
    }
    if (S_ISDIR(sb.st_mode))
        return ac_err_set(err, AC_ENOINPUT, "%s: is a directory, not a .npy file", path);
    if (!S_ISREG(sb.st_mode))
        return npy_read_stream(path, fp, 0, 0, a, err);
    return npy_read_stream(path, fp, 1, sb.st_size > 0 ? (uintmax_t)sb.st_size : 0, a, err);
}

int npy_read_stream(const char *path, FILE *fp, int known_size, uintmax_t fsize, ac_array *a,
                    ac_err *err)
{
    size_t prelen = 0, hlen = 0, size, nbytes;
    int st;
    double *data = NULL;
    hparse p;

    if ((st = read_preamble(path, fp, known_size, fsize, &prelen, &hlen, err)) ||
        (st = read_header(path, fp, hlen, &p, err)))
        return st;
    if (!shape_size(p.ndim, p.shape, &size)) {
        char buf[SHAPE_BUF];
        format_tuple(buf, sizeof buf, p.ndim, p.shape);
        return ac_err_set(err, AC_EDATA, "%s: bad shape %s: the array size overflows", path, buf);
    }
    nbytes = size * (p.single ? sizeof(float) : sizeof(double));

    /* Data. */
    st = read_data(path, fp, known_size, fsize > prelen + hlen ? fsize - prelen - hlen : 0,
                   nbytes, &data, err);
    if (st)
        return st;
    if (p.single) {
        if ((st = widen_singles(path, &data, size, p.big_endian, err)))
            return st;
        nbytes = size * sizeof(double);
    } else if (p.big_endian == npy_host_is_little_endian())
        swap_doubles(data, size);
    if (p.fortran && p.ndim >= 2 && size > 1) {
        double *c = malloc(nbytes);
        if (!c) {
            free(data);
            return ac_err_set(err, AC_EINTERNAL, "%s: out of memory for %zu bytes of data", path,
                              nbytes);
        }
        fortran_to_c(c, data, p.ndim, p.shape, size);
        free(data);
        data = c;
    }
    a->ndim = p.ndim;
    for (size_t k = 0; k < p.ndim; k++)
        a->shape[k] = p.shape[k];
    a->size = size;
    a->data = data;
    return AC_OK;
}

int ac_npy_read(const char *path, ac_array *a, ac_err *err)
{
    FILE *fp;
    int st;

    memset(a, 0, sizeof *a);
    if (!path)
        return ac_err_set(err, AC_EUSAGE, "no file name given");
    size_t flen;
    const char *member;
    if (npz_split(path, &flen, &member)) {
        st = npz_read(path, flen, member, a, err);
        if (st)
            memset(a, 0, sizeof *a);
        return st;
    }
    if (strcmp(path, "-") == 0) {
        st = npy_read_fp("-", stdin, a, err);
        if (st)
            memset(a, 0, sizeof *a);
        return st;
    }
    fp = fopen(path, "rb");
    if (!fp) {
        int e = errno;
        return ac_err_set(err, AC_ENOINPUT, "%s: cannot open: %s", path, strerror(e));
    }
    st = npy_read_fp(path, fp, a, err);
    fclose(fp);
    if (st)
        memset(a, 0, sizeof *a);
    return st;
}

int ac_npy_read_mat(const char *path, ac_mat *m, ac_err *err)
{
    ac_array a;
    int st;

    m->rows = m->cols = 0;
    m->data = NULL;
    st = ac_npy_read(path, &a, err);
    if (st)
        return st;
    if (a.ndim != 2) {
        char buf[SHAPE_BUF];
        format_tuple(buf, sizeof buf, a.ndim, a.shape);
        ac_array_free(&a);
        return ac_err_set(err, AC_EDATA, "%s: expected a 2-D array, got shape %s", path, buf);
    }
    m->rows = a.shape[0];
    m->cols = a.shape[1];
    m->data = a.data;
    return AC_OK;
}

int ac_npy_read_vec(const char *path, double **v, size_t *n, ac_err *err)
{
    ac_array a;
    int st;

    *v = NULL;
    *n = 0;
    st = ac_npy_read(path, &a, err);
    if (st)
        return st;
    if (a.ndim != 1) {
        char buf[SHAPE_BUF];
        format_tuple(buf, sizeof buf, a.ndim, a.shape);
        ac_array_free(&a);
        return ac_err_set(err, AC_EDATA, "%s: expected a 1-D array, got shape %s", path, buf);
    }
    *v = a.data;
    *n = a.shape[0];
    return AC_OK;
}

/* ---------------------------------------------------------------------- */
/* Writing                                                                 */

/* Build the preamble + header np.save writes for a C-order '<f8' array of
 * this shape into out (of outsz bytes); returns its length, 0 if it does
 * not fit (cannot happen for ndim <= AC_NPY_MAXDIM and outsz >= 1024). */
static size_t build_header(unsigned char *out, size_t outsz, size_t ndim, const size_t *shape)
{
    char dict[SHAPE_BUF + 128], tup[SHAPE_BUF];
    size_t dlen, prelen, hl, pad, total, field;
    int r;

    format_tuple(tup, sizeof tup, ndim, shape);
    r = snprintf(dict, sizeof dict, "{'descr': '<f8', 'fortran_order': False, 'shape': %s, }",
                 tup);
    if (r < 0 || (size_t)r >= sizeof dict)
        return 0;
    dlen = (size_t)r;
    if (ndim > 0) {
        char d0[32];
        int l0 = snprintf(d0, sizeof d0, "%zu", shape[0]);
        size_t grow = l0 > 0 && l0 < NPY_GROWTH_DIGITS ? (size_t)(NPY_GROWTH_DIGITS - l0) : 0;
        if (dlen + grow >= sizeof dict)
            return 0;
        memset(dict + dlen, ' ', grow);
        dlen += grow;
    }
    /* Version 1.0 unless the header length does not fit in 16 bits. */
    prelen = 10;
    hl = dlen + 1;
    pad = NPY_ALIGN - (prelen + hl) % NPY_ALIGN;
    if (hl + pad > 0xFFFF) {
        prelen = 12;
        pad = NPY_ALIGN - (prelen + hl) % NPY_ALIGN;
    }
    field = hl + pad;
    total = prelen + field;
    if (total > outsz)
        return 0;
    memcpy(out, NPY_MAGIC, NPY_MAGIC_LEN);
    out[6] = prelen == 10 ? 1 : 2;
    out[7] = 0;
    out[8] = (unsigned char)(field & 0xFF);
    out[9] = (unsigned char)(field >> 8 & 0xFF);
    if (prelen == 12) {
        out[10] = (unsigned char)(field >> 16 & 0xFF);
        out[11] = (unsigned char)(field >> 24 & 0xFF);
    }
    memcpy(out + prelen, dict, dlen);
    memset(out + prelen + dlen, ' ', pad);
    out[total - 1] = '\n';
    return total;
}

static int write_fail(ac_atomic *f, const char *path, ac_err *err)
{
    int e = errno;
    ac_atomic_abort(f);
    return ac_err_set(err, AC_ECANTCREAT, "%s: cannot write: %s", path, strerror(e ? e : EIO));
}

static int npy_write(const char *path, size_t ndim, const size_t *shape, const double *data,
                     size_t size, ac_err *err)
{
    unsigned char hdr[1024];
    size_t hlen;
    ac_atomic f;
    int st;

    if (!path)
        return ac_err_set(err, AC_EUSAGE, "no file name given");
    hlen = build_header(hdr, sizeof hdr, ndim, shape);
    if (hlen == 0)
        return ac_err_set(err, AC_EINTERNAL, "%s: cannot format the .npy header", path);
    st = ac_atomic_open(&f, path, err);
    if (st)
        return st;
    errno = 0;
    if (fwrite(hdr, 1, hlen, f.fp) != hlen)
        return write_fail(&f, path, err);
    if (npy_host_is_little_endian()) {
        if (size > 0 && fwrite(data, sizeof(double), size, f.fp) != size)
            return write_fail(&f, path, err);
    } else {
        double chunk[512];
        for (size_t i = 0; i < size;) {
            size_t m = size - i < 512 ? size - i : 512;
            memcpy(chunk, data + i, m * sizeof(double));
            swap_doubles(chunk, m);
            if (fwrite(chunk, sizeof(double), m, f.fp) != m)
                return write_fail(&f, path, err);
            i += m;
        }
    }
    return ac_atomic_commit(&f, err);
}

int ac_npy_write(const char *path, const ac_array *a, ac_err *err)
{
    size_t size;

    if (!a || a->ndim > AC_NPY_MAXDIM)
        return ac_err_set(err, AC_EUSAGE, "%s: cannot write an array of more than %d dimensions",
                          path ? path : "(null)", AC_NPY_MAXDIM);
    if (!shape_size(a->ndim, a->shape, &size) || size != a->size)
        return ac_err_set(err, AC_EUSAGE, "%s: array size %zu does not match its shape",
                          path ? path : "(null)", a->size);
    if (size > 0 && !a->data)
        return ac_err_set(err, AC_EUSAGE, "%s: array has no data", path ? path : "(null)");
    return npy_write(path, a->ndim, a->shape, a->data, size, err);
}

int ac_npy_write_mat(const char *path, const ac_mat *m, ac_err *err)
{
    size_t shape[2], size;

    if (!m)
        return ac_err_set(err, AC_EUSAGE, "%s: no matrix", path ? path : "(null)");
    shape[0] = m->rows;
    shape[1] = m->cols;
    if (!shape_size(2, shape, &size))
        return ac_err_set(err, AC_EUSAGE, "%s: matrix of %zu x %zu entries is too large",
                          path ? path : "(null)", m->rows, m->cols);
    if (size > 0 && !m->data)
        return ac_err_set(err, AC_EUSAGE, "%s: matrix has no data", path ? path : "(null)");
    return npy_write(path, 2, shape, m->data, size, err);
}

int ac_npy_write_vec(const char *path, const double *v, size_t n, ac_err *err)
{
    size_t size;

    if (!shape_size(1, &n, &size))
        return ac_err_set(err, AC_EUSAGE, "%s: vector of %zu entries is too large",
                          path ? path : "(null)", n);
    if (n > 0 && !v)
        return ac_err_set(err, AC_EUSAGE, "%s: vector has no data", path ? path : "(null)");
    return npy_write(path, 1, &n, v, n, err);
}
