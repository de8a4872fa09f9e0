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
/* At most this many header characters are quoted in a message. */
#define SNIP_CHARS 40
#define SNIP_BUF (SNIP_CHARS * 4 + 8)
/* "(" + 8 * (20 digits + ", ") + ")" + NUL fits easily. */
#define SHAPE_BUF 256

/* ---------------------------------------------------------------------- */
/* Small helpers                                                           */

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char c;
    memcpy(&c, &one, 1);
    return c == 1;
}

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

/* Copy at most SNIP_CHARS characters of s[0..n-1] to out (of SNIP_BUF
 * bytes) for a message: printable ASCII as is, anything else as \xNN, and
 * "..." if cut short. */
static void snip(char *out, const char *s, size_t n)
{
    size_t o = 0;
    size_t m = n < SNIP_CHARS ? n : SNIP_CHARS;
    for (size_t i = 0; i < m; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out[o++] = (char)c;
        } else {
            snprintf(out + o, 5, "\\x%02x", c);
            o += 4;
        }
    }
    if (m < n) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
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
/* Header parser                                                           */

typedef struct {
    const char *path;
    const char *s;  /* header text without its final '\n' */
    size_t n;       /* its length */
    size_t i;       /* current position */
    ac_err *err;
    /* results */
    int big_endian;  /* data are big-endian */
    int fortran;     /* fortran_order True */
    size_t ndim;
    size_t shape[AC_NPY_MAXDIM];
} hparse;

static int is_ws(int c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int peek(const hparse *p)
{
    return p->i < p->n ? (unsigned char)p->s[p->i] : -1;
}

static void skip_ws(hparse *p)
{
    while (p->i < p->n && is_ws((unsigned char)p->s[p->i]))
        p->i++;
}

/* "malformed header: expected X at byte N of the header, found 'abc'". */
static int bad_syntax(const hparse *p, const char *expected)
{
    char found[SNIP_BUF + 8];
    if (p->i >= p->n) {
        snprintf(found, sizeof found, "the end of the header");
    } else {
        char sn[SNIP_BUF];
        size_t m = p->n - p->i;
        snip(sn, p->s + p->i, m < 12 ? m : 12);
        snprintf(found, sizeof found, "'%s'", sn);
    }
    return ac_err_set(p->err, AC_EDATA,
                      "%s: malformed header: expected %s at byte %zu of the header, found %s",
                      p->path, expected, p->i, found);
}

/* Parse a quoted string starting at the current position (which holds ' or
 * ").  Sets *start and *len to its contents (escapes are left as written). */
static int parse_string(hparse *p, size_t *start, size_t *len)
{
    char q = p->s[p->i];
    size_t i = p->i + 1;
    *start = i;
    for (;;) {
        if (i >= p->n || p->s[i] == '\n' || p->s[i] == '\r') {
            p->i = *start - 1;
            return ac_err_set(p->err, AC_EDATA,
                              "%s: malformed header: unterminated string at byte %zu of the "
                              "header",
                              p->path, p->i);
        }
        if (p->s[i] == '\\') {
            i += 2;
            continue;
        }
        if (p->s[i] == q)
            break;
        i++;
    }
    *len = i - *start;
    p->i = i + 1;
    return AC_OK;
}

/* Skip one Python literal (anything up to a ',', ':' or closing bracket at
 * nesting depth 0, with strings and nested brackets balanced) and give its
 * extent without trailing white space. */
static int skip_value(hparse *p, size_t *start, size_t *len)
{
    char stack[32];
    size_t depth = 0, s0, l0;

    *start = p->i;
    while (p->i < p->n) {
        char c = p->s[p->i];
        if (c == '\'' || c == '"') {
            int st = parse_string(p, &s0, &l0);
            if (st)
                return st;
            continue;
        }
        if (c == '(' || c == '[' || c == '{') {
            if (depth == sizeof stack)
                return ac_err_set(p->err, AC_EDATA,
                                  "%s: malformed header: brackets nested too deeply at byte "
                                  "%zu of the header",
                                  p->path, p->i);
            stack[depth++] = c == '(' ? ')' : c == '[' ? ']' : '}';
            p->i++;
            continue;
        }
        if (c == ')' || c == ']' || c == '}') {
            if (depth == 0)
                break;
            if (stack[depth - 1] != c) {
                char want[16];
                snprintf(want, sizeof want, "'%c'", stack[depth - 1]);
                return bad_syntax(p, want);
            }
            depth--;
            p->i++;
            continue;
        }
        if ((c == ',' || c == ':') && depth == 0)
            break;
        p->i++;
    }
    if (depth > 0) {
        char want[16];
        snprintf(want, sizeof want, "'%c'", stack[depth - 1]);
        return bad_syntax(p, want);
    }
    *len = p->i - *start;
    while (*len > 0 && is_ws((unsigned char)p->s[*start + *len - 1]))
        (*len)--;
    if (*len == 0)
        return bad_syntax(p, "a value");
    return AC_OK;
}

static int str_is(const hparse *p, size_t start, size_t len, const char *lit)
{
    return strlen(lit) == len && memcmp(p->s + start, lit, len) == 0;
}

/* The value of 'descr' is s[start..start+len-1]: accept the float64
 * spellings, reject anything else. */
static int check_descr(hparse *p, size_t start, size_t len)
{
    static const char *const little[] = {"<f8", "<d", NULL};
    static const char *const big[] = {">f8", ">d", NULL};
    static const char *const native[] = {"=f8", "=d", "|f8", "|d", "f8", "d",
                                         "float64", "double", "float", NULL};
    char sn[SNIP_BUF];
    char q = p->s[start];

    /* A single string literal without escapes? */
    if (len >= 2 && (q == '\'' || q == '"') && p->s[start + len - 1] == q &&
        !memchr(p->s + start + 1, q, len - 2) && !memchr(p->s + start + 1, '\\', len - 2)) {
        size_t cs = start + 1, cl = len - 2;
        for (int k = 0; little[k]; k++)
            if (str_is(p, cs, cl, little[k])) {
                p->big_endian = 0;
                return AC_OK;
            }
        for (int k = 0; big[k]; k++)
            if (str_is(p, cs, cl, big[k])) {
                p->big_endian = 1;
                return AC_OK;
            }
        for (int k = 0; native[k]; k++)
            if (str_is(p, cs, cl, native[k])) {
                p->big_endian = !host_is_little_endian();
                return AC_OK;
            }
    }
    snip(sn, p->s + start, len);
    return ac_err_set(p->err, AC_EDATA, "%s: dtype %s is not supported (expected float64, '<f8')",
                      p->path, sn);
}

/* The value of 'fortran_order' is s[start..start+len-1]. */
static int check_fortran(hparse *p, size_t start, size_t len)
{
    char sn[SNIP_BUF];

    if (str_is(p, start, len, "True")) {
        p->fortran = 1;
        return AC_OK;
    }
    if (str_is(p, start, len, "False")) {
        p->fortran = 0;
        return AC_OK;
    }
    snip(sn, p->s + start, len);
    return ac_err_set(p->err, AC_EDATA,
                      "%s: bad fortran_order value %s (expected True or False)", p->path, sn);
}

/* The value of 'shape' is s[start..start+len-1] (brackets and strings in it
 * are balanced): parse a tuple of non-negative integers. */
static int check_shape(hparse *p, size_t start, size_t len)
{
    char sv[SNIP_BUF], sn[SNIP_BUF];
    size_t save_n = p->n;
    int st = AC_OK;

    snip(sv, p->s + start, len);
    p->i = start;
    p->n = start + len; /* parse only the value */
    p->ndim = 0;
    if (peek(p) != '(') {
        st = ac_err_set(p->err, AC_EDATA, "%s: bad shape %s: not a tuple", p->path, sv);
        goto done;
    }
    p->i++;
    skip_ws(p);
    if (peek(p) == ')') {
        p->i++;
        goto end;
    }
    for (;;) {
        size_t tstart = p->i, v = 0;
        int neg = 0, overflow = 0, digits = 0, c;

        c = peek(p);
        if (c == '+' || c == '-') {
            neg = c == '-';
            p->i++;
        }
        while ((c = peek(p)) >= '0' && c <= '9') {
            size_t d = (size_t)(c - '0');
            if (v > (SIZE_MAX - d) / 10)
                overflow = 1;
            else
                v = v * 10 + d;
            digits++;
            p->i++;
        }
        if (digits > 0 && peek(p) == 'L') /* Python 2 long */
            p->i++;
        c = peek(p);
        if (digits == 0 || !(c == ',' || c == ')' || is_ws(c))) {
            while (p->i < p->n && (c = peek(p)) != ',' && c != ')' && !is_ws(c))
                p->i++;
            snip(sn, p->s + tstart, p->i - tstart);
            st = ac_err_set(p->err, AC_EDATA, "%s: bad shape %s: dimension '%s' is not an integer",
                            p->path, sv, sn);
            goto done;
        }
        if (neg && (v != 0 || overflow)) {
            snip(sn, p->s + tstart, p->i - tstart);
            st = ac_err_set(p->err, AC_EDATA, "%s: bad shape %s: negative dimension %s", p->path,
                            sv, sn);
            goto done;
        }
        if (overflow) {
            snip(sn, p->s + tstart, p->i - tstart);
            st = ac_err_set(p->err, AC_EDATA, "%s: bad shape %s: dimension %s is too large",
                            p->path, sv, sn);
            goto done;
        }
        if (p->ndim == AC_NPY_MAXDIM) {
            st = ac_err_set(p->err, AC_EDATA,
                            "%s: bad shape %s: more than %d dimensions are not supported",
                            p->path, sv, AC_NPY_MAXDIM);
            goto done;
        }
        p->shape[p->ndim++] = v;
        skip_ws(p);
        if (peek(p) == ',') {
            p->i++;
            skip_ws(p);
            if (peek(p) == ')') {
                p->i++;
                goto end;
            }
            continue;
        }
        if (peek(p) == ')') {
            p->i++;
            if (p->ndim == 1) { /* "(5)" is the integer 5, not a tuple */
                st = ac_err_set(p->err, AC_EDATA,
                                "%s: bad shape %s: not a tuple (a 1-tuple needs a trailing "
                                "comma)",
                                p->path, sv);
                goto done;
            }
            goto end;
        }
        st = bad_syntax(p, "',' or ')' in the shape");
        goto done;
    }
end:
    skip_ws(p);
    if (p->i < p->n)
        st = bad_syntax(p, "',' or '}' after the shape");
done:
    p->n = save_n;
    return st;
}

/* Parse the header: first its syntax (a dict literal with the three known
 * keys, each once, values balanced), then the values. */
static int parse_header(hparse *p)
{
    size_t vstart[3] = {0}, vlen[3] = {0};
    int have[3] = {0};
    static const char *const keys[3] = {"descr", "fortran_order", "shape"};
    int st;

    skip_ws(p);
    if (peek(p) != '{') {
        char sn[SNIP_BUF];
        snip(sn, p->s + p->i, p->n - p->i);
        return ac_err_set(p->err, AC_EDATA, "%s: header is not a dict literal: '%s'", p->path,
                          sn);
    }
    p->i++;
    skip_ws(p);
    for (;;) {
        size_t kstart, klen;
        int c = peek(p), k;

        if (c == '}') {
            p->i++;
            break;
        }
        if (c != '\'' && c != '"')
            return bad_syntax(p, "a quoted key or '}'");
        if ((st = parse_string(p, &kstart, &klen)))
            return st;
        for (k = 0; k < 3; k++)
            if (str_is(p, kstart, klen, keys[k]))
                break;
        if (k == 3) {
            char sn[SNIP_BUF];
            snip(sn, p->s + kstart, klen);
            return ac_err_set(p->err, AC_EDATA,
                              "%s: unknown key '%s' in header (expected 'descr', "
                              "'fortran_order' and 'shape')",
                              p->path, sn);
        }
        if (have[k])
            return ac_err_set(p->err, AC_EDATA, "%s: duplicate key '%s' in header", p->path,
                              keys[k]);
        have[k] = 1;
        skip_ws(p);
        if (peek(p) != ':')
            return bad_syntax(p, "':'");
        p->i++;
        skip_ws(p);
        if ((st = skip_value(p, &vstart[k], &vlen[k])))
            return st;
        c = peek(p);
        if (c == ',') {
            p->i++;
            skip_ws(p);
            continue;
        }
        if (c == '}') {
            p->i++;
            break;
        }
        return bad_syntax(p, "',' or '}'");
    }
    skip_ws(p);
    if (p->i < p->n)
        return bad_syntax(p, "only spaces after the dict");
    for (int k = 0; k < 3; k++)
        if (!have[k])
            return ac_err_set(p->err, AC_EDATA, "%s: header lacks the key '%s'", p->path,
                              keys[k]);
    if ((st = check_descr(p, vstart[0], vlen[0])) ||
        (st = check_fortran(p, vstart[1], vlen[1])) || (st = check_shape(p, vstart[2], vlen[2])))
        return st;
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

static int npy_read_fp(const char *path, FILE *fp, ac_array *a, ac_err *err)
{
    struct stat sb;
    unsigned char pre[12];
    size_t got, prelen, hlen, size, nbytes;
    unsigned major, minor;
    int known_size, st;
    uintmax_t fsize = 0;
    char *hdr = NULL;
    double *data = NULL;
    hparse p;

    if (fstat(fileno(fp), &sb) != 0) {
        int e = errno;
        return ac_err_set(err, AC_ENOINPUT, "%s: cannot open: %s", path, strerror(e));
    }
    if (S_ISDIR(sb.st_mode))
        return ac_err_set(err, AC_ENOINPUT, "%s: is a directory, not a .npy file", path);
    known_size = S_ISREG(sb.st_mode);
    if (known_size)
        fsize = sb.st_size > 0 ? (uintmax_t)sb.st_size : 0;

    /* Magic, version, header length. */
    got = read_full(fp, pre, 10);
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
    prelen = major == 1 ? 10 : 12;
    if (got == 10 && prelen == 12) {
        got += read_full(fp, pre + 10, 2);
        if (ferror(fp))
            return read_error(path, fp, err);
    }
    if (got < prelen)
        return ac_err_set(err, AC_EDATA,
                          "%s: truncated header: file ends after %zu bytes, inside the preamble",
                          path, got);
    if (major == 1)
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
    else
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 |
               (size_t)pre[11] << 24;
    if (hlen == 0)
        return ac_err_set(err, AC_EDATA, "%s: empty header", path);
    if (known_size && (uintmax_t)hlen > (fsize > prelen ? fsize - prelen : 0))
        return ac_err_set(err, AC_EDATA,
                          "%s: truncated header: header of %zu bytes announced, file has %ju "
                          "bytes after the preamble",
                          path, hlen, fsize > prelen ? fsize - prelen : 0);
    if (hlen > NPY_HEADER_MAX)
        return ac_err_set(err, AC_EDATA, "%s: header of %zu bytes is too large (limit %zu)",
                          path, hlen, NPY_HEADER_MAX);

    /* Header. */
    hdr = malloc(hlen);
    if (!hdr)
        return ac_err_set(err, AC_EINTERNAL, "%s: out of memory for the header", path);
    got = read_full(fp, hdr, hlen);
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
    memset(&p, 0, sizeof p);
    p.path = path;
    p.s = hdr;
    p.n = hlen - 1;
    p.err = err;
    st = parse_header(&p);
    free(hdr);
    p.s = NULL;
    if (st)
        return st;

    if (!shape_size(p.ndim, p.shape, &size)) {
        char buf[SHAPE_BUF];
        format_tuple(buf, sizeof buf, p.ndim, p.shape);
        return ac_err_set(err, AC_EDATA, "%s: bad shape %s: the array size overflows", path, buf);
    }
    nbytes = size * sizeof(double);

    /* Data. */
    st = read_data(path, fp, known_size, fsize > prelen + hlen ? fsize - prelen - hlen : 0,
                   nbytes, &data, err);
    if (st)
        return st;
    if (p.big_endian == host_is_little_endian())
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
    if (host_is_little_endian()) {
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
