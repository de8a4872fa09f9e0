/* test_npy.c — tests of attncheck/npy.h and attncheck/fileio.h (Check).
 *
 * Files are written under a fresh directory made with mkdtemp in $TMPDIR
 * (or /tmp), removed at the end.  The randomised tests take their seed from
 * the environment variable ATTNCHECK_TEST_SEED (default 20240601); the seed
 * is printed when a test fails.
 */
#include <config.h>

/* POSIX.1-2008 + XSI (mkstemp, fchmod, fdopen, fileno, fsync, realpath...)
 * when the compiler runs in strict ISO C mode and config.h did not ask for
 * system extensions. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE) && !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 700
#endif

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attncheck/common.h"
#include "attncheck/fileio.h"
#include "attncheck/npy.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

static char g_dir[PATH_MAX];
static unsigned long long g_seed = 20240601ULL;

/* ---------------------------------------------------------------------- */
/* Helpers                                                                 */

/* g_dir/name, in one of 8 rotating buffers. */
static const char *tpath(const char *name)
{
    static char bufs[8][PATH_MAX + 64];
    static unsigned k;
    char *b = bufs[k++ % 8];
    snprintf(b, PATH_MAX + 64, "%s/%s", g_dir, name);
    return b;
}

static uint64_t rng_state;

static uint64_t rng_next(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static size_t rng_below(size_t n)
{
    return n ? (size_t)(rng_next() % n) : 0;
}

static void put_raw(const char *name, const void *buf, size_t n)
{
    FILE *fp = fopen(tpath(name), "wb");
    ck_assert_msg(fp != NULL, "cannot create %s: %s", tpath(name), strerror(errno));
    if (n)
        ck_assert(fwrite(buf, 1, n, fp) == n);
    ck_assert(fclose(fp) == 0);
}

/* Write a .npy file byte by byte: magic, version major.minor, header length
 * (u16 for major 1, else u32), the header text exactly as given, then
 * nbytes of data. */
static void put_npy(const char *name, int major, int minor, const char *hdr, const void *data,
                    size_t nbytes)
{
    size_t hl = strlen(hdr), pre = major == 1 ? 10 : 12;
    unsigned char *buf = malloc(pre + hl + nbytes + 1);
    ck_assert(buf != NULL);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = (unsigned char)minor;
    buf[8] = (unsigned char)(hl & 0xFF);
    buf[9] = (unsigned char)(hl >> 8 & 0xFF);
    if (pre == 12) {
        buf[10] = (unsigned char)(hl >> 16 & 0xFF);
        buf[11] = (unsigned char)(hl >> 24 & 0xFF);
    }
    memcpy(buf + pre, hdr, hl);
    if (nbytes)
        memcpy(buf + pre + hl, data, nbytes);
    put_raw(name, buf, pre + hl + nbytes);
    free(buf);
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    unsigned char *buf = NULL;
    size_t cap = 0, len = 0, r;
    ck_assert_msg(fp != NULL, "cannot open %s", path);
    do {
        if (len == cap) {
            cap = cap ? 2 * cap : 4096;
            buf = realloc(buf, cap);
            ck_assert(buf != NULL);
        }
        r = fread(buf + len, 1, cap - len, fp);
        len += r;
    } while (r > 0);
    fclose(fp);
    *n = len;
    return buf;
}

/* Number of directory entries other than . and .. */
static size_t count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t n = 0;
    ck_assert_msg(d != NULL, "cannot open directory %s", dir);
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static int same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static double from_bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* Read `name` expecting failure with `status` and a message that starts
 * with the path and contains `substr`. */
static void expect_read_fail(const char *name, int status, const char *substr)
{
    const char *p = tpath(name);
    ac_array a;
    ac_err err;
    int st;

    memset(&a, 0x5A, sizeof a);
    ac_err_clear(&err);
    st = ac_npy_read(p, &a, &err);
    ck_assert_msg(st == status, "%s: status %d, expected %d (message: %s)", name, st, status,
                  err.msg);
    ck_assert_msg(err.status == status, "%s: err.status %d", name, err.status);
    ck_assert_msg(strncmp(err.msg, p, strlen(p)) == 0, "%s: message '%s' does not start with the path",
                  name, err.msg);
    ck_assert_msg(strstr(err.msg, substr) != NULL, "%s: message '%s' lacks '%s'", name, err.msg,
                  substr);
    ck_assert_msg(strchr(err.msg, '\n') == NULL, "%s: message has a newline", name);
    ck_assert_msg(a.data == NULL && a.ndim == 0 && a.size == 0, "%s: array not zeroed", name);
}

/* Header text with a '\n' appended, as the malformed-header tests use. */
static void put_hdr(const char *name, const char *dict, size_t ndata)
{
    char hdr[1024];
    double zeros[64] = {0};
    ck_assert(ndata <= 64);
    snprintf(hdr, sizeof hdr, "%s\n", dict);
    put_npy(name, 1, 0, hdr, zeros, ndata * sizeof(double));
}

/* Write a, read it back, compare shape and bits. */
static void roundtrip(const char *name, const ac_array *a)
{
    ac_array b;
    ac_err err;
    int st = ac_npy_write(tpath(name), a, &err);
    ck_assert_msg(st == AC_OK, "write %s: %s", name, err.msg);
    st = ac_npy_read(tpath(name), &b, &err);
    ck_assert_msg(st == AC_OK, "read %s: %s", name, err.msg);
    ck_assert_uint_eq(b.ndim, a->ndim);
    for (size_t k = 0; k < a->ndim; k++)
        ck_assert_uint_eq(b.shape[k], a->shape[k]);
    ck_assert_uint_eq(b.size, a->size);
    ck_assert(b.data != NULL);
    for (size_t i = 0; i < a->size; i++)
        ck_assert_msg(same_bits(a->data[i], b.data[i]), "%s: entry %zu: %a != %a (seed %llu)",
                      name, i, a->data[i], b.data[i], g_seed);
    ac_array_free(&b);
}

/* Little-endian bytes of x. */
static void le_bytes(unsigned char *out, double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    for (int k = 0; k < 8; k++)
        out[k] = (unsigned char)(u >> (8 * k));
}

static void be_bytes(unsigned char *out, double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    for (int k = 0; k < 8; k++)
        out[7 - k] = (unsigned char)(u >> (8 * k));
}

/* ---------------------------------------------------------------------- */
/* Arrays and round trips                                                  */

START_TEST(test_array_init)
{
    ac_array a;
    ac_err err;
    size_t shape[9] = {2, 3, 1, 1, 1, 1, 1, 1, 1};
    size_t big[2] = {SIZE_MAX / 2, 3};
    size_t zbig[3] = {SIZE_MAX, 0, SIZE_MAX};

    ck_assert_int_eq(ac_array_init(&a, 2, shape, &err), AC_OK);
    ck_assert_uint_eq(a.size, 6);
    for (size_t i = 0; i < 6; i++)
        ck_assert(a.data[i] == 0.0);
    ac_array_free(&a);
    ck_assert(a.data == NULL);
    ac_array_free(&a); /* twice */
    ac_array_free(NULL);

    ck_assert_int_eq(ac_array_init(&a, 0, NULL, &err), AC_OK);
    ck_assert_uint_eq(a.size, 1);
    ac_array_free(&a);

    ck_assert_int_eq(ac_array_init(&a, 9, shape, &err), AC_EUSAGE);
    ck_assert(a.data == NULL);
    ck_assert_int_eq(ac_array_init(&a, 2, big, &err), AC_EUSAGE);
    ck_assert(a.data == NULL);
    ck_assert_int_eq(ac_array_init(&a, 2, big, NULL), AC_EUSAGE); /* err may be NULL */

    ck_assert_int_eq(ac_array_init(&a, 3, zbig, &err), AC_OK);
    ck_assert_uint_eq(a.size, 0);
    ck_assert(a.data != NULL);
    ac_array_free(&a);
}
END_TEST

START_TEST(test_roundtrip_shapes)
{
    static const size_t shapes[][4] = {
        {0}, {1, 7}, {1, 0}, {2, 3, 5}, {2, 0, 5}, {3, 2, 3, 4}, {3, 3, 0, 2}, {2, 1, 1},
    };
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
        ac_array a;
        ac_err err;
        char name[32];
        size_t ndim = shapes[t][0];
        ck_assert_int_eq(ac_array_init(&a, ndim, &shapes[t][1], &err), AC_OK);
        for (size_t i = 0; i < a.size; i++)
            a.data[i] = (double)i * 1.25 - 3.0;
        snprintf(name, sizeof name, "shape%zu.npy", t);
        roundtrip(name, &a);
        ac_array_free(&a);
    }
}
END_TEST

START_TEST(test_roundtrip_values)
{
    const double vals[] = {
        0.0, -0.0, 1.0, -1.0, DBL_MAX, -DBL_MAX, DBL_MIN, -DBL_MIN,
        DBL_MIN / 3, -DBL_MIN / 7, 4.9406564584124654e-324, -4.9406564584124654e-324,
        1e308, 1e-308, 0.1, 1.0 / 3.0, HUGE_VAL, -HUGE_VAL, NAN, DBL_EPSILON,
    };
    size_t n = sizeof vals / sizeof vals[0];
    ac_array a;
    ac_err err;
    size_t shape[1] = {n};
    double *v;
    size_t vn;

    ck_assert_int_eq(ac_array_init(&a, 1, shape, &err), AC_OK);
    memcpy(a.data, vals, sizeof vals);
    a.data[n - 2] = from_bits(0x7FF8DEADBEEF0001ULL); /* NaN with a payload */
    roundtrip("values.npy", &a);

    /* The vector interface sees the same. */
    ck_assert_int_eq(ac_npy_read_vec(tpath("values.npy"), &v, &vn, &err), AC_OK);
    ck_assert_uint_eq(vn, n);
    for (size_t i = 0; i < n; i++)
        ck_assert(same_bits(v[i], a.data[i]));
    ck_assert(signbit(v[1]) && v[1] == 0.0);
    free(v);
    ac_array_free(&a);
}
END_TEST

START_TEST(test_roundtrip_mat_vec)
{
    ac_mat m, r;
    ac_err err;
    double v[3] = {1.5, -2.5, 1e-300}, *w;
    size_t n;

    ck_assert_int_eq(ac_mat_init(&m, 3, 5, &err), AC_OK);
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < 5; j++)
            AC_MAT(&m, i, j) = (double)(10 * i + j);
    ck_assert_int_eq(ac_npy_write_mat(tpath("m.npy"), &m, &err), AC_OK);
    ck_assert_int_eq(ac_npy_read_mat(tpath("m.npy"), &r, &err), AC_OK);
    ck_assert_uint_eq(r.rows, 3);
    ck_assert_uint_eq(r.cols, 5);
    ck_assert(memcmp(r.data, m.data, 15 * sizeof(double)) == 0);
    ac_mat_free(&r);
    ac_mat_free(&m);

    /* 0 x 4 matrix */
    ck_assert_int_eq(ac_mat_init(&m, 0, 4, &err), AC_OK);
    ck_assert_int_eq(ac_npy_write_mat(tpath("m0.npy"), &m, &err), AC_OK);
    ck_assert_int_eq(ac_npy_read_mat(tpath("m0.npy"), &r, &err), AC_OK);
    ck_assert_uint_eq(r.rows, 0);
    ck_assert_uint_eq(r.cols, 4);
    ac_mat_free(&r);
    ac_mat_free(&m);

    ck_assert_int_eq(ac_npy_write_vec(tpath("v.npy"), v, 3, &err), AC_OK);
    ck_assert_int_eq(ac_npy_read_vec(tpath("v.npy"), &w, &n, &err), AC_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert(memcmp(w, v, sizeof v) == 0);
    free(w);

    ck_assert_int_eq(ac_npy_write_vec(tpath("v0.npy"), NULL, 0, &err), AC_OK);
    ck_assert_int_eq(ac_npy_read_vec(tpath("v0.npy"), &w, &n, &err), AC_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert(w != NULL);
    free(w);

    /* Wrong number of dimensions. */
    ck_assert_int_eq(ac_npy_read_mat(tpath("v.npy"), &r, &err), AC_EDATA);
    ck_assert_msg(strstr(err.msg, "v.npy: expected a 2-D array, got shape (3,)"), "%s", err.msg);
    ck_assert(r.data == NULL);
    ck_assert_int_eq(ac_npy_read_vec(tpath("m.npy"), &w, &n, &err), AC_EDATA);
    ck_assert_msg(strstr(err.msg, "m.npy: expected a 1-D array, got shape (3, 5)"), "%s", err.msg);
    ck_assert(w == NULL && n == 0);
    ck_assert_int_eq(ac_npy_read_mat(tpath("shape-missing.npy"), &r, &err), AC_ENOINPUT);
}
END_TEST

START_TEST(test_roundtrip_random)
{
    rng_state = g_seed;
    for (int it = 0; it < 200; it++) {
        size_t ndim = rng_below(AC_NPY_MAXDIM + 1), shape[AC_NPY_MAXDIM];
        ac_array a;
        ac_err err;
        for (size_t k = 0; k < ndim; k++)
            shape[k] = rng_below(ndim > 4 ? 3 : 6);
        ck_assert_int_eq(ac_array_init(&a, ndim, shape, &err), AC_OK);
        for (size_t i = 0; i < a.size; i++)
            a.data[i] = from_bits(rng_next());
        roundtrip("random.npy", &a);
        ac_array_free(&a);
    }
}
END_TEST

START_TEST(test_write_layout)
{
    /* Exactly what numpy 1.24's np.save writes for a (3, 4) float64 array. */
    char expect[129];
    const char *dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }";
    ac_array a;
    ac_err err;
    size_t shape[2] = {3, 4}, n, pos;
    unsigned char *buf;

    memset(expect, ' ', 128);
    memcpy(expect, "\x93NUMPY\x01\x00\x76\x00", 10);
    memcpy(expect + 10, dict, strlen(dict));
    expect[127] = '\n';
    expect[128] = '\0';

    ck_assert_int_eq(ac_array_init(&a, 2, shape, &err), AC_OK);
    for (size_t i = 0; i < 12; i++)
        a.data[i] = (double)i;
    ck_assert_int_eq(ac_npy_write(tpath("layout.npy"), &a, &err), AC_OK);
    buf = slurp(tpath("layout.npy"), &n);
    ck_assert_uint_eq(n, 128 + 96);
    ck_assert(memcmp(buf, expect, 128) == 0);
    for (size_t i = 0; i < 12; i++) {
        unsigned char le[8];
        le_bytes(le, (double)i);
        ck_assert(memcmp(buf + 128 + 8 * i, le, 8) == 0);
    }
    free(buf);
    ac_array_free(&a);

    /* Every shape: data start at a multiple of 64, header ends in '\n'. */
    rng_state = g_seed ^ 0x1234;
    for (int it = 0; it < 50; it++) {
        size_t nd = rng_below(AC_NPY_MAXDIM + 1), sh[AC_NPY_MAXDIM];
        for (size_t k = 0; k < nd; k++)
            sh[k] = rng_below(2) ? rng_below(3) : (size_t)rng_next() >> (rng_below(64) | 1);
        for (size_t k = 0; k < nd; k++) /* keep the array empty if large */
            if (sh[k] > 3)
                sh[0] = 0;
        ck_assert_int_eq(ac_array_init(&a, nd, sh, &err), AC_OK);
        ck_assert_int_eq(ac_npy_write(tpath("layout2.npy"), &a, &err), AC_OK);
        buf = slurp(tpath("layout2.npy"), &n);
        pos = 10 + (size_t)buf[8] + ((size_t)buf[9] << 8);
        ck_assert_uint_eq(buf[6], 1);
        ck_assert_uint_eq(pos % 64, 0);
        ck_assert_uint_eq(buf[pos - 1], '\n');
        ck_assert_uint_eq(n, pos + 8 * a.size);
        free(buf);
        roundtrip("layout2.npy", &a);
        ac_array_free(&a);
    }
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Files written byte by byte                                              */

START_TEST(test_fortran_order)
{
    /* 2 x 3 matrix [[1,2,3],[4,5,6]] stored column by column. */
    const double colmajor[6] = {1, 4, 2, 5, 3, 6};
    unsigned char data[6 * 8], d3[24 * 8];
    ac_array a;
    ac_err err;

    for (int i = 0; i < 6; i++)
        le_bytes(data + 8 * i, colmajor[i]);
    put_npy("f2.npy", 1, 0, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }    \n",
            data, sizeof data);
    ck_assert_int_eq(ac_npy_read(tpath("f2.npy"), &a, &err), AC_OK);
    ck_assert_uint_eq(a.ndim, 2);
    for (int i = 0; i < 6; i++)
        ck_assert(a.data[i] == (double)(i + 1));
    ac_array_free(&a);

    /* 2 x 3 x 4: element (i,j,k) = 100i + 10j + k, at Fortran offset
     * i + 2j + 6k. */
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++)
                le_bytes(d3 + 8 * (i + 2 * j + 6 * k), 100.0 * i + 10.0 * j + k);
    put_npy("f3.npy", 1, 0, "{'descr':'<f8','fortran_order':True,'shape':(2,3,4)}\n", d3,
            sizeof d3);
    ck_assert_int_eq(ac_npy_read(tpath("f3.npy"), &a, &err), AC_OK);
    ck_assert_uint_eq(a.ndim, 3);
    ck_assert_uint_eq(a.shape[2], 4);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++)
                ck_assert(a.data[(i * 3 + j) * 4 + k] == 100.0 * i + 10.0 * j + k);
    ac_array_free(&a);

    /* Fortran order, 1-D, 0-d and 0-size are the same as C order. */
    put_npy("f1.npy", 1, 0, "{'descr': '<f8', 'fortran_order': True, 'shape': (6,), }\n", data,
            sizeof data);
    ck_assert_int_eq(ac_npy_read(tpath("f1.npy"), &a, &err), AC_OK);
    for (int i = 0; i < 6; i++)
        ck_assert(a.data[i] == colmajor[i]);
    ac_array_free(&a);
    put_npy("f0.npy", 1, 0, "{'descr': '<f8', 'fortran_order': True, 'shape': (0, 3), }\n",
            NULL, 0);
    ck_assert_int_eq(ac_npy_read(tpath("f0.npy"), &a, &err), AC_OK);
    ck_assert_uint_eq(a.size, 0);
    ac_array_free(&a);
}
END_TEST

START_TEST(test_versions)
{
    unsigned char data[3 * 8];
    ac_array a;
    ac_err err;
    char *big;
    size_t bl = 70000;

    for (int i = 0; i < 3; i++)
        le_bytes(data + 8 * i, 0.5 * i);
    put_npy("v2.npy", 2, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }\n", data,
            sizeof data);
    put_npy("v3.npy", 3, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }\n", data,
            sizeof data);
    ck_assert_int_eq(ac_npy_read(tpath("v2.npy"), &a, &err), AC_OK);
    ck_assert(a.ndim == 1 && a.shape[0] == 3 && a.data[2] == 1.0);
    ac_array_free(&a);
    ck_assert_int_eq(ac_npy_read(tpath("v3.npy"), &a, &err), AC_OK);
    ck_assert(a.ndim == 1 && a.shape[0] == 3 && a.data[1] == 0.5);
    ac_array_free(&a);

    /* Version 2.0 with a header longer than 65535 bytes. */
    big = malloc(bl + 1);
    ck_assert(big != NULL);
    memset(big, ' ', bl);
    memcpy(big, "{'shape': (3,), 'fortran_order': False, 'descr': '<f8'}", 55);
    big[bl - 1] = '\n';
    big[bl] = '\0';
    put_npy("v2big.npy", 2, 0, big, data, sizeof data);
    ck_assert_int_eq(ac_npy_read(tpath("v2big.npy"), &a, &err), AC_OK);
    ck_assert(a.ndim == 1 && a.shape[0] == 3 && a.data[2] == 1.0);
    ac_array_free(&a);
    free(big);
}
END_TEST

START_TEST(test_big_endian)
{
    unsigned char data[4 * 8];
    const double v[4] = {1.0, -2.5, DBL_MIN / 4, -0.0};
    ac_array a;
    ac_err err;

    for (int i = 0; i < 4; i++)
        be_bytes(data + 8 * i, v[i]);
    put_npy("be.npy", 1, 0, "{'descr': '>f8', 'fortran_order': False, 'shape': (2, 2), }\n", data,
            sizeof data);
    ck_assert_int_eq(ac_npy_read(tpath("be.npy"), &a, &err), AC_OK);
    for (int i = 0; i < 4; i++)
        ck_assert(same_bits(a.data[i], v[i]));
    ac_array_free(&a);

    /* Big-endian and Fortran order together: [[1, -2.5], [DBL_MIN/4, -0]]
     * stored by columns. */
    be_bytes(data + 8, v[2]);
    be_bytes(data + 16, v[1]);
    put_npy("bef.npy", 1, 0, "{'descr': '>f8', 'fortran_order': True, 'shape': (2, 2), }\n", data,
            sizeof data);
    ck_assert_int_eq(ac_npy_read(tpath("bef.npy"), &a, &err), AC_OK);
    for (int i = 0; i < 4; i++)
        ck_assert(same_bits(a.data[i], v[i]));
    ac_array_free(&a);
}
END_TEST

START_TEST(test_header_syntax_variants)
{
    static const char *const ok[] = {
        "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
        "{\"descr\": \"<f8\", \"fortran_order\": False, \"shape\": (2,)}",
        "{'shape':(2,),'fortran_order':False,'descr':'<f8'}",
        "  {  'fortran_order' :False ,  'shape' : ( 2 , ) , 'descr' : '<f8' ,  }   ",
        "{'descr': 'float64', 'fortran_order': False, 'shape': (2,)}",
        "{'descr': '<d', 'fortran_order': False, 'shape': (2,)}",
        "{'descr': '=f8', 'fortran_order': False, 'shape': (2,)}",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (2L,)}",
        "{'descr': '<f8',\n 'fortran_order': False,\t'shape': (2,)}",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (+2,)}",
    };
    unsigned char data[16];
    le_bytes(data, 7.0);
    le_bytes(data + 8, -7.0);
    for (size_t t = 0; t < sizeof ok / sizeof ok[0]; t++) {
        char hdr[512];
        ac_array a;
        ac_err err;
        snprintf(hdr, sizeof hdr, "%s\n", ok[t]);
        put_npy("syn.npy", 1, 0, hdr, data, sizeof data);
        ck_assert_msg(ac_npy_read(tpath("syn.npy"), &a, &err) == AC_OK, "header %s: %s", ok[t],
                      err.msg);
        ck_assert(a.ndim == 1 && a.shape[0] == 2 && a.data[0] == 7.0 && a.data[1] == -7.0);
        ac_array_free(&a);
    }
    {
        ac_array a;
        ac_err err;
        put_hdr("t0.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': ()}", 1);
        ck_assert_int_eq(ac_npy_read(tpath("t0.npy"), &a, &err), AC_OK);
        ck_assert(a.ndim == 0 && a.size == 1);
        ac_array_free(&a);
        put_hdr("t3.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (2,3,4,)}", 24);
        ck_assert_int_eq(ac_npy_read(tpath("t3.npy"), &a, &err), AC_OK);
        ck_assert(a.ndim == 3 && a.size == 24);
        ac_array_free(&a);
    }
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Malformed files                                                         */

START_TEST(test_bad_open)
{
    ac_array a;
    char dir[PATH_MAX + 64];

    expect_read_fail("no-such-file.npy", AC_ENOINPUT, "cannot open: No such file or directory");
    snprintf(dir, sizeof dir, "%s/adir.npy", g_dir);
    ck_assert(mkdir(dir, 0755) == 0);
    expect_read_fail("adir.npy", AC_ENOINPUT, "is a directory");
    rmdir(dir);
    /* A NULL err is allowed. */
    ck_assert_int_eq(ac_npy_read(tpath("no-such-file.npy"), &a, NULL), AC_ENOINPUT);
}
END_TEST

START_TEST(test_bad_preamble)
{
    unsigned char b[16];

    put_raw("empty.npy", "", 0);
    expect_read_fail("empty.npy", AC_EDATA, "empty file");
    put_raw("magic.npy", "PK\x03\x04 not numpy at all", 22);
    expect_read_fail("magic.npy", AC_EDATA, "bad magic");
    put_raw("magic2.npy", "\x93NUMPZ\x01\x00", 8);
    expect_read_fail("magic2.npy", AC_EDATA, "bad magic");
    put_raw("short.npy", "\x93NUM", 4);
    expect_read_fail("short.npy", AC_EDATA, "truncated header");
    put_raw("short2.npy", "\x93NUMPY\x01\x00\x10", 9);
    expect_read_fail("short2.npy", AC_EDATA, "truncated header");
    put_raw("short3.npy", "\x93NUMPY\x02\x00\x10\x00\x00", 11);
    expect_read_fail("short3.npy", AC_EDATA, "truncated header");

    memcpy(b, "\x93NUMPY\x04\x00\x10\x00", 10);
    put_raw("ver4.npy", b, 10);
    expect_read_fail("ver4.npy", AC_EDATA, "unsupported .npy format version 4.0");
    memcpy(b, "\x93NUMPY\x01\x01\x10\x00", 10);
    put_raw("ver11.npy", b, 10);
    expect_read_fail("ver11.npy", AC_EDATA, "unsupported .npy format version 1.1");

    /* Header length beyond the end of the file. */
    put_raw("hlen.npy", "\x93NUMPY\x01\x00\x40\x00{'descr'", 17);
    expect_read_fail("hlen.npy", AC_EDATA, "truncated header");
    put_raw("hlen2.npy", "\x93NUMPY\x02\x00\xff\xff\xff\xff{", 13);
    expect_read_fail("hlen2.npy", AC_EDATA, "truncated header");
    /* A header over the 16 MiB limit (sparse file). */
    put_raw("hbig.npy", "\x93NUMPY\x02\x00\x01\x00\x00\x01{", 13);
    ck_assert(truncate(tpath("hbig.npy"), 20 << 20) == 0);
    expect_read_fail("hbig.npy", AC_EDATA, "header of 16777217 bytes is too large");
    unlink(tpath("hbig.npy"));
    put_raw("hlen0.npy", "\x93NUMPY\x01\x00\x00\x00", 10);
    expect_read_fail("hlen0.npy", AC_EDATA, "empty header");
}
END_TEST

START_TEST(test_bad_header)
{
    static const struct {
        const char *dict;
        const char *msg;
    } cases[] = {
        /* not a dict */
        {"[('descr', '<f8')]", "header is not a dict literal"},
        {"", "header is not a dict literal"},
        /* keys */
        {"{'descr': '<f8', 'fortran_order': False}", "header lacks the key 'shape'"},
        {"{'shape': (2,), 'fortran_order': False}", "header lacks the key 'descr'"},
        {"{'descr': '<f8', 'shape': (2,)}", "header lacks the key 'fortran_order'"},
        {"{}", "header lacks the key"},
        {"{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (2,)}",
         "duplicate key 'descr'"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'extra': 1}",
         "unknown key 'extra'"},
        /* fortran_order */
        {"{'descr': '<f8', 'fortran_order': 'yes', 'shape': (2,)}",
         "bad fortran_order value 'yes' (expected True or False)"},
        {"{'descr': '<f8', 'fortran_order': 0, 'shape': (2,)}", "bad fortran_order value 0"},
        {"{'descr': '<f8', 'fortran_order': true, 'shape': (2,)}",
         "bad fortran_order value true"},
        /* shape */
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (-3, 4)}",
         "bad shape (-3, 4): negative dimension -3"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (3.0,)}",
         "dimension '3.0' is not an integer"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': ('a', 2)}",
         "dimension ''a'' is not an integer"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': [2]}", "bad shape [2]: not a tuple"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (2)}", "bad shape (2): not a tuple"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': 2}", "bad shape 2: not a tuple"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,2)}",
         "more than 8 dimensions"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16)}",
         "the array size overflows"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999999,)}",
         "dimension 99999999999999999999999 is too large"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,,)}", "is not an integer"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (,)}", "is not an integer"},
        /* dtype */
        {"{'descr': '<f2', 'fortran_order': False, 'shape': (2,)}",
         "dtype '<f2' is not supported (expected float64 '<f8' or float32 '<f4')"},
        {"{'descr': '>f4x', 'fortran_order': False, 'shape': (2,)}",
         "dtype '>f4x' is not supported"},
        {"{'descr': '<float32', 'fortran_order': False, 'shape': (2,)}",
         "dtype '<float32' is not supported"},
        {"{'descr': '<i8', 'fortran_order': False, 'shape': (2,)}", "dtype '<i8' is not supported"},
        {"{'descr': '<c16', 'fortran_order': False, 'shape': (2,)}",
         "dtype '<c16' is not supported"},
        {"{'descr': '|O', 'fortran_order': False, 'shape': (2,)}", "dtype '|O' is not supported"},
        {"{'descr': 'f', 'fortran_order': False, 'shape': (2,)}", "dtype 'f' is not supported"},
        {"{'descr': [('a', '<f8'), ('b', '<f8')], 'fortran_order': False, 'shape': (1,)}",
         "dtype [('a', '<f8'), ('b', '<f8')] is not supported"},
        /* syntax */
        {"{'descr' '<f8', 'fortran_order': False, 'shape': (2,)}", "malformed header: expected ':'"},
        {"{'descr': '<f8' 'fortran_order': False, 'shape': (2,)}",
         "malformed header: expected ',' or '}'"},
        {"{'descr': '<f8, 'fortran_order': False, 'shape': (2,)}", "malformed header"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,)", "malformed header"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,)} x", "malformed header"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,)}}", "malformed header"},
        {"{'descr': '<f8',, 'fortran_order': False, 'shape': (2,)}", "malformed header"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3}", "malformed header"},
        {"{'descr': '<f8\n', 'fortran_order': False, 'shape': (2,)}", "unterminated string"},
        {"{descr: '<f8', 'fortran_order': False, 'shape': (2,)}", "malformed header"},
        {"{'descr': , 'fortran_order': False, 'shape': (2,)}", "malformed header"},
        {"{'descr': [('a', '<f8'", "malformed header: expected ')'"},
        {"{'descr': [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
         "nested too deeply"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,) 3}",
         "malformed header: expected ',' or '}' after the shape"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'descr': '<f8'}",
         "duplicate key 'descr'"},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        char name[32];
        snprintf(name, sizeof name, "hdr%zu.npy", t);
        put_hdr(name, cases[t].dict, 2);
        expect_read_fail(name, AC_EDATA, cases[t].msg);
    }

    /* Not terminated by '\n'. */
    put_npy("nonl.npy", 1, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,)}    ",
            "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16);
    expect_read_fail("nonl.npy", AC_EDATA, "header is not terminated by a newline");
    /* Control and non-ASCII bytes in the header are shown escaped. */
    put_hdr("ctl.npy", "{'descr': '\x01\xff', 'fortran_order': False, 'shape': (2,)}", 2);
    expect_read_fail("ctl.npy", AC_EDATA, "dtype '\\x01\\xff' is not supported");
    /* NUL bytes in the header. */
    put_raw("nul.npy", "\x93NUMPY\x01\x00\x0a\x00{'d\0scr'}\n", 20);
    expect_read_fail("nul.npy", AC_EDATA, "unknown key 'd\\x00scr'");
}
END_TEST

START_TEST(test_bad_data_length)
{
    unsigned char data[13 * 8] = {0};
    put_npy("trunc.npy", 1, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }\n",
            data, 11 * 8);
    expect_read_fail("trunc.npy", AC_EDATA, "truncated: expected 96 bytes of data, found 88");
    put_npy("trunc2.npy", 1, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }\n",
            data, 12 * 8 - 1);
    expect_read_fail("trunc2.npy", AC_EDATA, "truncated: expected 96 bytes of data, found 95");
    put_npy("trunc3.npy", 1, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }\n", data,
            0);
    expect_read_fail("trunc3.npy", AC_EDATA, "truncated: expected 8 bytes of data, found 0");
    /* A huge shape in a small file must not make us allocate it. */
    put_npy("trunc4.npy", 1, 0,
            "{'descr': '<f8', 'fortran_order': False, 'shape': (100000000000, 10), }\n", data,
            8);
    expect_read_fail("trunc4.npy", AC_EDATA,
                     "truncated: expected 8000000000000 bytes of data, found 8");
    put_npy("trail.npy", 1, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }\n",
            data, 13 * 8);
    expect_read_fail("trail.npy", AC_EDATA, "trailing bytes");
    put_npy("trail0.npy", 1, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 4), }\n",
            data, 1);
    expect_read_fail("trail0.npy", AC_EDATA, "trailing bytes after the data: expected 0 bytes of data, found 1");
}
END_TEST

/* Feed `bytes` to the reader through a FIFO (a non-regular file). */
static int read_via_fifo(const unsigned char *bytes, size_t n, ac_array *a, ac_err *err)
{
    const char *fifo = tpath("fifo.npy");
    pid_t pid;
    int st, ws;

    unlink(fifo);
    ck_assert(mkfifo(fifo, 0600) == 0);
    pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        int fd = open(fifo, O_WRONLY);
        size_t off = 0;
        signal(SIGPIPE, SIG_IGN);
        if (fd < 0)
            _exit(1);
        while (off < n) {
            ssize_t w = write(fd, bytes + off, n - off > 1000 ? 1000 : n - off);
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        close(fd);
        _exit(0);
    }
    st = ac_npy_read(fifo, a, err);
    ck_assert(waitpid(pid, &ws, 0) == pid);
    unlink(fifo);
    return st;
}

START_TEST(test_stream_input)
{
    const char *hdr = "{'descr': '<f8', 'fortran_order': False, 'shape': (300, 7), }\n";
    size_t hl = strlen(hdr), n = 10 + hl + 2100 * 8;
    unsigned char *buf = calloc(n + 8, 1);
    ac_array a;
    ac_err err;
    int st;

    ck_assert(buf != NULL);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)hl;
    buf[9] = 0;
    memcpy(buf + 10, hdr, hl);
    for (size_t i = 0; i < 2100; i++)
        le_bytes(buf + 10 + hl + 8 * i, (double)i);
    st = read_via_fifo(buf, n, &a, &err);
    ck_assert_msg(st == AC_OK, "%s", err.msg);
    ck_assert(a.size == 2100 && a.data[2099] == 2099.0);
    ac_array_free(&a);

    st = read_via_fifo(buf, n - 3, &a, &err);
    ck_assert_int_eq(st, AC_EDATA);
    ck_assert_msg(strstr(err.msg, "truncated: expected 16800 bytes of data, found 16797"), "%s",
                  err.msg);
    st = read_via_fifo(buf, n + 8, &a, &err);
    ck_assert_int_eq(st, AC_EDATA);
    ck_assert_msg(strstr(err.msg, "trailing bytes"), "%s", err.msg);
    st = read_via_fifo(buf, 10 + hl - 5, &a, &err);
    ck_assert_int_eq(st, AC_EDATA);
    ck_assert_msg(strstr(err.msg, "truncated header: expected 62 header bytes, found 57"), "%s",
                  err.msg);
    free(buf);

    /* More than one read chunk (1 MiB) of data. */
    {
        const char *h2 = "{'descr': '<f8', 'fortran_order': False, 'shape': (300001,), }\n";
        size_t h2l = strlen(h2), cnt = 300001, n2 = 10 + h2l + cnt * 8;
        buf = calloc(n2, 1);
        ck_assert(buf != NULL);
        memcpy(buf, "\x93NUMPY\x01\x00", 8);
        buf[8] = (unsigned char)h2l;
        memcpy(buf + 10, h2, h2l);
        for (size_t i = 0; i < cnt; i++)
            le_bytes(buf + 10 + h2l + 8 * i, (double)i - 5.0);
        st = read_via_fifo(buf, n2, &a, &err);
        ck_assert_msg(st == AC_OK, "%s", err.msg);
        ck_assert(a.size == cnt && a.data[cnt - 1] == (double)cnt - 6.0 && a.data[0] == -5.0);
        ac_array_free(&a);
        st = read_via_fifo(buf, n2 - 1, &a, &err);
        ck_assert_int_eq(st, AC_EDATA);
        ck_assert_msg(strstr(err.msg, "truncated: expected 2400008 bytes of data, found 2400007"),
                      "%s", err.msg);
        /* A huge shape announced on a pipe: we read what comes, no more. */
        {
            const char *h3 = "{'descr': '<f8', 'fortran_order': False, 'shape': (10000000000,), }\n";
            memcpy(buf + 10, h3, strlen(h3));
            buf[8] = (unsigned char)strlen(h3);
        }
        st = read_via_fifo(buf, n2, &a, &err);
        ck_assert_int_eq(st, AC_EDATA);
        ck_assert_msg(strstr(err.msg, "truncated: expected 80000000000 bytes of data"), "%s",
                      err.msg);
        free(buf);
    }
}
END_TEST

/* Random corruptions of valid files: the reader must fail cleanly or
 * succeed, never crash (run this under ASan/UBSan). */
START_TEST(test_corrupt_random)
{
    ac_array a;
    ac_err err;
    size_t shape[3] = {2, 3, 2}, n;
    unsigned char *good, *bad;

    ck_assert_int_eq(ac_array_init(&a, 3, shape, &err), AC_OK);
    ck_assert_int_eq(ac_npy_write(tpath("good.npy"), &a, &err), AC_OK);
    ac_array_free(&a);
    good = slurp(tpath("good.npy"), &n);
    bad = malloc(n + 64);
    ck_assert(bad != NULL);
    rng_state = g_seed ^ 0xC0FFEE;
    for (int it = 0; it < 3000; it++) {
        size_t m = n;
        int st;
        memcpy(bad, good, n);
        switch (rng_below(4)) {
        case 0: /* flip bytes */
            for (size_t k = 0, f = 1 + rng_below(4); k < f; k++)
                bad[rng_below(n)] = (unsigned char)rng_next();
            break;
        case 1: /* truncate */
            m = rng_below(n);
            break;
        case 2: /* extend */
            m = n + 1 + rng_below(63);
            for (size_t k = n; k < m; k++)
                bad[k] = (unsigned char)rng_next();
            break;
        default: /* header character replaced by punctuation */
            bad[10 + rng_below(118)] = (unsigned char)"(){}[],:'\" \n-0123456789Lx\\"[rng_below(27)];
            break;
        }
        put_raw("corrupt.npy", bad, m);
        st = ac_npy_read(tpath("corrupt.npy"), &a, &err);
        ck_assert_msg(st == AC_OK || st == AC_EDATA, "iteration %d: status %d: %s (seed %llu)",
                      it, st, err.msg, g_seed);
        if (st == AC_OK)
            ac_array_free(&a);
        else
            ck_assert(a.data == NULL);
    }
    free(bad);
    free(good);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Output files                                                            */

START_TEST(test_unwritable_output)
{
    ac_array a;
    ac_err err;
    size_t shape[1] = {4};
    char sub[PATH_MAX + 64], out[PATH_MAX + 128];

    ck_assert_int_eq(ac_array_init(&a, 1, shape, &err), AC_OK);
    snprintf(sub, sizeof sub, "%s/outdir", g_dir);
    ck_assert(mkdir(sub, 0755) == 0);

    /* Under a directory that does not exist. */
    snprintf(out, sizeof out, "%s/missing/x.npy", sub);
    ck_assert_int_eq(ac_npy_write(out, &a, &err), AC_ECANTCREAT);
    ck_assert_msg(strstr(err.msg, "x.npy: cannot create: No such file or directory"), "%s",
                  err.msg);
    ck_assert_uint_eq(count_entries(sub), 0);

    /* The path is an existing directory. */
    snprintf(out, sizeof out, "%s/isdir.npy", sub);
    ck_assert(mkdir(out, 0755) == 0);
    ck_assert_int_eq(ac_npy_write(out, &a, &err), AC_ECANTCREAT);
    ck_assert_msg(strstr(err.msg, "isdir.npy: cannot create: Is a directory"), "%s", err.msg);
    ck_assert_uint_eq(count_entries(sub), 1);
    ck_assert_uint_eq(count_entries(out), 0);
    rmdir(out);

    /* A path ending in '/'. */
    snprintf(out, sizeof out, "%s/", sub);
    ck_assert_int_eq(ac_npy_write(out, &a, &err), AC_ECANTCREAT);
    ck_assert_uint_eq(count_entries(sub), 0);

    /* A component that is a regular file. */
    snprintf(out, sizeof out, "%s/file", sub);
    put_raw("outdir/file", "x", 1);
    snprintf(out, sizeof out, "%s/file/x.npy", sub);
    ck_assert_int_eq(ac_npy_write(out, &a, &err), AC_ECANTCREAT);
    ck_assert_msg(strstr(err.msg, "cannot create: Not a directory"), "%s", err.msg);
    ck_assert_uint_eq(count_entries(sub), 1);

    ac_array_free(&a);
    ck_assert_int_eq(ac_npy_write_vec(tpath("outdir/ok.npy"), NULL, 0, &err), AC_OK);
    ck_assert_uint_eq(count_entries(sub), 2);
}
END_TEST

/* Writes that fail half-way (file size limit): the target keeps its old
 * contents and no temporary is left. */
START_TEST(test_write_errors)
{
    ac_array a;
    ac_err err;
    size_t shape[1] = {200000}, n;
    char sub[PATH_MAX + 64], out[PATH_MAX + 128];
    struct rlimit old, lim;
    void (*oldsig)(int);
    unsigned char *buf;
    char msg1[AC_ERR_MSG_MAX];
    int st1, st2;

    snprintf(sub, sizeof sub, "%s/fsize", g_dir);
    ck_assert(mkdir(sub, 0755) == 0);
    snprintf(out, sizeof out, "%s/big.npy", sub);
    put_raw("fsize/big.npy", "old", 3);
    ck_assert_int_eq(ac_array_init(&a, 1, shape, &err), AC_OK);

    ck_assert(getrlimit(RLIMIT_FSIZE, &old) == 0);
    lim = old;
    lim.rlim_cur = 100;
    oldsig = signal(SIGXFSZ, SIG_IGN);
    ck_assert(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    /* Fails in fwrite. */
    st1 = ac_npy_write(out, &a, &err);
    memcpy(msg1, err.msg, sizeof msg1);
    /* Fails when the buffered data are flushed at commit. */
    st2 = ac_npy_write_vec(out, a.data, 20, &err);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, oldsig);

    ck_assert_int_eq(st1, AC_ECANTCREAT);
    ck_assert_msg(strstr(msg1, "big.npy: cannot write: File too large"), "%s", msg1);
    ck_assert_int_eq(st2, AC_ECANTCREAT);
    ck_assert_msg(strstr(err.msg, "big.npy: cannot write: File too large"), "%s", err.msg);
    ck_assert_uint_eq(count_entries(sub), 1);
    buf = slurp(out, &n);
    ck_assert(n == 3 && memcmp(buf, "old", 3) == 0);
    free(buf);
    ac_array_free(&a);
}
END_TEST

START_TEST(test_overwrite_and_mode)
{
    ac_err err;
    double v[2] = {1, 2}, *w;
    size_t n;
    struct stat sb;
    mode_t old = umask(022);

    put_raw("over.npy", "old contents", 12);
    ck_assert(chmod(tpath("over.npy"), 0600) == 0);
    ck_assert_int_eq(ac_npy_write_vec(tpath("over.npy"), v, 2, &err), AC_OK);
    ck_assert_int_eq(ac_npy_read_vec(tpath("over.npy"), &w, &n, &err), AC_OK);
    ck_assert(n == 2 && w[1] == 2.0);
    free(w);
    ck_assert(stat(tpath("over.npy"), &sb) == 0);
    ck_assert_uint_eq(sb.st_mode & 07777, 0644);

    umask(027);
    ck_assert_int_eq(ac_npy_write_vec(tpath("mode.npy"), v, 2, &err), AC_OK);
    ck_assert(stat(tpath("mode.npy"), &sb) == 0);
    ck_assert_uint_eq(sb.st_mode & 07777, 0640);
    umask(old);
}
END_TEST

START_TEST(test_atomic)
{
    ac_atomic f, z;
    ac_err err;
    char sub[PATH_MAX + 64], out[PATH_MAX + 128];
    size_t n;
    unsigned char *buf;

    snprintf(sub, sizeof sub, "%s/atomic", g_dir);
    ck_assert(mkdir(sub, 0755) == 0);
    snprintf(out, sizeof out, "%s/a.txt", sub);

    /* Abort leaves nothing. */
    ck_assert_int_eq(ac_atomic_open(&f, out, &err), AC_OK);
    ck_assert(f.fp && f.tmp_path && f.path);
    ck_assert_uint_eq(count_entries(sub), 1); /* the temporary */
    fputs("partial", f.fp);
    ac_atomic_abort(&f);
    ck_assert(f.fp == NULL && f.tmp_path == NULL && f.path == NULL);
    ck_assert_uint_eq(count_entries(sub), 0);
    ac_atomic_abort(&f); /* again: no-op */
    ac_atomic_abort(NULL);
    memset(&z, 0, sizeof z);
    ac_atomic_abort(&z);
    ck_assert_int_eq(ac_atomic_commit(&z, &err), AC_ECANTCREAT);

    /* Commit replaces the file; nothing visible before. */
    put_raw("atomic/a.txt", "old", 3);
    ck_assert_int_eq(ac_atomic_open(&f, out, &err), AC_OK);
    fputs("new contents", f.fp);
    buf = slurp(out, &n);
    ck_assert(n == 3 && memcmp(buf, "old", 3) == 0);
    free(buf);
    ck_assert_int_eq(ac_atomic_commit(&f, &err), AC_OK);
    ck_assert(f.fp == NULL && f.tmp_path == NULL);
    buf = slurp(out, &n);
    ck_assert(n == 12 && memcmp(buf, "new contents", 12) == 0);
    free(buf);
    ck_assert_uint_eq(count_entries(sub), 1);
    ck_assert_int_eq(ac_atomic_commit(&f, &err), AC_ECANTCREAT); /* already finished */

    /* A relative path in the current directory. */
    ck_assert(chdir(sub) == 0);
    ck_assert_int_eq(ac_atomic_open(&f, "rel.txt", &err), AC_OK);
    fputs("x", f.fp);
    ck_assert_int_eq(ac_atomic_commit(&f, &err), AC_OK);
    ck_assert_uint_eq(count_entries("."), 2);

    /* The target became a directory between open and commit: the rename
     * fails, the temporary is removed. */
    ck_assert_int_eq(ac_atomic_open(&f, "late", &err), AC_OK);
    ck_assert(mkdir("late", 0755) == 0);
    fputs("x", f.fp);
    ck_assert_int_eq(ac_atomic_commit(&f, &err), AC_ECANTCREAT);
    ck_assert_msg(strstr(err.msg, "late: cannot create: "), "%s", err.msg);
    ck_assert_uint_eq(count_entries("."), 3);
    ck_assert(chdir("/") == 0);

    /* A name close to NAME_MAX (255 on common file systems). */
    {
        char longname[251];
        memset(longname, 'n', 250);
        longname[250] = '\0';
        ck_assert(chdir(sub) == 0);
        ck_assert_msg(ac_atomic_open(&f, longname, &err) == AC_OK, "%s", err.msg);
        fputs("x", f.fp);
        ck_assert_int_eq(ac_atomic_commit(&f, &err), AC_OK);
        ck_assert(access(longname, F_OK) == 0);
        ck_assert_uint_eq(count_entries("."), 4);
        ck_assert(chdir("/") == 0);
    }

    /* Empty path. */
    ck_assert_int_eq(ac_atomic_open(&f, "", &err), AC_ECANTCREAT);
    ck_assert(f.fp == NULL && f.tmp_path == NULL && f.path == NULL);
}
END_TEST

START_TEST(test_file_read)
{
    ac_err err;
    unsigned char *buf;
    size_t n;
    char sub[PATH_MAX + 64], big[PATH_MAX + 128];

    put_raw("fr.txt", "abc\0def", 7);
    ck_assert_int_eq(ac_file_read(tpath("fr.txt"), 0, &buf, &n, &err), AC_OK);
    ck_assert(n == 7 && memcmp(buf, "abc\0def", 7) == 0 && buf[7] == 0);
    free(buf);
    /* the bound: 7 bytes fit in 7, not in 6 */
    ck_assert_int_eq(ac_file_read(tpath("fr.txt"), 7, &buf, &n, &err), AC_OK);
    free(buf);
    ck_assert_int_eq(ac_file_read(tpath("fr.txt"), 6, &buf, &n, &err), AC_EDATA);
    ck_assert(buf == NULL && n == 0);
    ck_assert_msg(strstr(err.msg, "larger than 6 bytes"), "%s", err.msg);
    /* empty; larger than the first buffer */
    put_raw("fr0.txt", "", 0);
    ck_assert_int_eq(ac_file_read(tpath("fr0.txt"), 0, &buf, &n, &err), AC_OK);
    ck_assert(n == 0 && buf && buf[0] == 0);
    free(buf);
    snprintf(big, sizeof big, "%s/frbig.bin", g_dir);
    {
        size_t m = 200000;
        unsigned char *b = malloc(m);
        ck_assert(b);
        for (size_t i = 0; i < m; i++)
            b[i] = (unsigned char)(i * 7);
        put_raw("frbig.bin", b, m);
        ck_assert_int_eq(ac_file_read(big, 0, &buf, &n, &err), AC_OK);
        ck_assert(n == m && memcmp(buf, b, m) == 0);
        free(buf);
        free(b);
    }
    /* missing file, directory */
    ck_assert_int_eq(ac_file_read(tpath("nosuch.txt"), 0, &buf, &n, &err), AC_ENOINPUT);
    ck_assert_msg(strstr(err.msg, "nosuch.txt: cannot open: "), "%s", err.msg);
    snprintf(sub, sizeof sub, "%s/frdir", g_dir);
    ck_assert(mkdir(sub, 0755) == 0);
    ck_assert_int_eq(ac_file_read(sub, 0, &buf, &n, &err), AC_ENOINPUT);
    ck_assert_msg(strstr(err.msg, "frdir: cannot open: "), "%s", err.msg);
    ck_assert(buf == NULL && n == 0);
}
END_TEST

/* For test_stagedir: refuse directories holding "keep". */
static int refuse_keep(const char *dir, ac_err *err)
{
    char p[PATH_MAX + 16];
    snprintf(p, sizeof p, "%s/keep", dir);
    if (access(p, F_OK) == 0)
        return ac_err_set(err, AC_ECANTCREAT, "%s: holds keep", dir);
    return AC_OK;
}

START_TEST(test_stagedir)
{
    ac_stagedir s, z;
    ac_err err;
    char dir[PATH_MAX + 64], p[PATH_MAX + 128];
    const char *path;
    size_t n;
    unsigned char *buf;

    /* merge: files appear next to the existing ones at commit */
    snprintf(dir, sizeof dir, "%s/merge/out", g_dir);
    ck_assert_int_eq(ac_stagedir_begin(&s, dir, &err), AC_OK);
    put_raw("merge/out/old.txt", "old", 3);
    ck_assert_uint_eq(count_entries(dir), 2); /* old.txt, the staging directory */
    ck_assert((path = ac_stagedir_path(&s, "a.txt")) != NULL);
    ck_assert(strncmp(path, s.tmp, strlen(s.tmp)) == 0);
    put_raw("merge/out/tmp-a", "", 0);
    snprintf(p, sizeof p, "%s/tmp-a", dir);
    ck_assert(rename(p, path) == 0);
    ck_assert_int_eq(ac_stagedir_commit(&s, &err), AC_OK);
    ck_assert(s.tmp == NULL && s.names == NULL);
    ck_assert_uint_eq(count_entries(dir), 2); /* old.txt, a.txt */
    /* merge abort leaves nothing */
    ck_assert_int_eq(ac_stagedir_begin(&s, dir, &err), AC_OK);
    ck_assert(ac_stagedir_path(&s, "b.txt") != NULL);
    ac_stagedir_abort(&s);
    ck_assert_uint_eq(count_entries(dir), 2);
    ac_stagedir_abort(&s);
    ac_stagedir_abort(NULL);
    memset(&z, 0, sizeof z);
    ac_stagedir_abort(&z);

    /* replace: the directory is swapped whole */
    snprintf(dir, sizeof dir, "%s/repl/ck/", g_dir); /* a trailing slash */
    ck_assert_int_eq(ac_stagedir_begin_replace(&s, dir, "test directory", refuse_keep, &err),
                     AC_OK);
    snprintf(p, sizeof p, "%s/repl", g_dir);
    ck_assert_uint_eq(count_entries(p), 1); /* the sibling staging directory */
    path = ac_stagedir_path(&s, "one.txt");
    ck_assert(path != NULL);
    {
        FILE *fp = fopen(path, "w");
        ck_assert(fp != NULL && fclose(fp) == 0);
    }
    ck_assert_int_eq(ac_stagedir_commit(&s, &err), AC_OK);
    ck_assert_uint_eq(count_entries(p), 1);
    ck_assert_uint_eq(count_entries(dir), 1);
    put_raw("repl/ck/stale.txt", "x", 1);
    ck_assert_int_eq(ac_stagedir_begin_replace(&s, dir, "test directory", refuse_keep, &err),
                     AC_OK);
    put_raw("repl/two.txt", "2", 1);
    snprintf(p, sizeof p, "%s/repl/two.txt", g_dir);
    ck_assert(rename(p, ac_stagedir_path(&s, "two.txt")) == 0);
    ck_assert_int_eq(ac_stagedir_commit(&s, &err), AC_OK);
    snprintf(p, sizeof p, "%s/repl/ck/two.txt", g_dir);
    ck_assert_int_eq(ac_file_read(p, 0, &buf, &n, &err), AC_OK);
    ck_assert(n == 1 && buf[0] == '2');
    free(buf);
    ck_assert_uint_eq(count_entries(dir), 1); /* stale.txt and one.txt are gone */
    snprintf(p, sizeof p, "%s/repl", g_dir);
    ck_assert_uint_eq(count_entries(p), 1);
    /* abort: the old directory stays */
    ck_assert_int_eq(ac_stagedir_begin_replace(&s, dir, "test directory", NULL, &err), AC_OK);
    ac_stagedir_abort(&s);
    ck_assert_uint_eq(count_entries(p), 1);
    ck_assert_uint_eq(count_entries(dir), 1);
    /* refusals */
    put_raw("repl/ck/keep", "", 0);
    ck_assert_int_eq(ac_stagedir_begin_replace(&s, dir, "test directory", refuse_keep, &err),
                     AC_ECANTCREAT);
    ck_assert_msg(strstr(err.msg, "holds keep"), "%s", err.msg);
    ck_assert(s.tmp == NULL && s.dir == NULL);
    snprintf(p, sizeof p, "%s/repl/ck/.", g_dir);
    ck_assert_int_eq(ac_stagedir_begin_replace(&s, p, "test directory", NULL, &err),
                     AC_ECANTCREAT);
    ck_assert_msg(strstr(err.msg, "name the test directory itself"), "%s", err.msg);
    snprintf(p, sizeof p, "%s/repl/ck/keep", g_dir);
    ck_assert_int_eq(ac_stagedir_begin_replace(&s, p, "test directory", NULL, &err),
                     AC_ECANTCREAT);
    ck_assert_msg(strstr(err.msg, "exists and is not a directory"), "%s", err.msg);
    ck_assert_int_eq(ac_stagedir_begin_replace(&s, "", "test directory", NULL, &err),
                     AC_ECANTCREAT);
    ck_assert_msg(strstr(err.msg, "bad test directory name"), "%s", err.msg);
    snprintf(p, sizeof p, "%s/repl", g_dir);
    ck_assert_uint_eq(count_entries(p), 1);
}
END_TEST

START_TEST(test_atomic_write_error)
{
    /* Writes that fail (ENOSPC via /dev/full cannot be used for a
     * temporary), so simulate with a stream whose error flag is set. */
    ac_atomic f;
    ac_err err;
    char sub[PATH_MAX + 64], out[PATH_MAX + 128];

    snprintf(sub, sizeof sub, "%s/werr", g_dir);
    ck_assert(mkdir(sub, 0755) == 0);
    snprintf(out, sizeof out, "%s/w.npy", sub);
    ck_assert_int_eq(ac_atomic_open(&f, out, &err), AC_OK);
    /* Reading from a write-only stream sets its error flag. */
    (void)fgetc(f.fp);
    ck_assert(ferror(f.fp));
    ck_assert_int_eq(ac_atomic_commit(&f, &err), AC_ECANTCREAT);
    ck_assert_msg(strstr(err.msg, "w.npy: cannot write"), "%s", err.msg);
    ck_assert_uint_eq(count_entries(sub), 0);
}
END_TEST

START_TEST(test_mkdir_p)
{
    ac_err err;
    char d[PATH_MAX + 128];
    struct stat sb;

    snprintf(d, sizeof d, "%s/mk/a//b/c/", g_dir);
    ck_assert_int_eq(ac_mkdir_p(d, &err), AC_OK);
    ck_assert(stat(d, &sb) == 0 && S_ISDIR(sb.st_mode));
    ck_assert_int_eq(ac_mkdir_p(d, &err), AC_OK); /* exists */
    ck_assert_int_eq(ac_mkdir_p(g_dir, &err), AC_OK);
    ck_assert_int_eq(ac_mkdir_p("/", &err), AC_OK);

    put_raw("mk/file", "x", 1);
    snprintf(d, sizeof d, "%s/mk/file/sub", g_dir);
    ck_assert_int_eq(ac_mkdir_p(d, &err), AC_ECANTCREAT);
    ck_assert_msg(strstr(err.msg, "mk/file/sub: cannot create directory: Not a directory"), "%s",
                  err.msg);
    snprintf(d, sizeof d, "%s/mk/file", g_dir);
    ck_assert_int_eq(ac_mkdir_p(d, &err), AC_ECANTCREAT);
    ck_assert_msg(strstr(err.msg, "cannot create directory: Not a directory"), "%s", err.msg);
    ck_assert_int_eq(ac_mkdir_p("", &err), AC_ECANTCREAT);

    /* Relative path. */
    ck_assert(chdir(g_dir) == 0);
    ck_assert_int_eq(ac_mkdir_p("rel1/rel2", &err), AC_OK);
    ck_assert(stat("rel1/rel2", &sb) == 0 && S_ISDIR(sb.st_mode));
    ck_assert(chdir("/") == 0);
}
END_TEST

START_TEST(test_check_finite)
{
    ac_err err;
    double x[30] = {0};
    size_t s2[2] = {5, 6}, s1[1] = {30}, s0[1] = {0}, s3[3] = {2, 3, 5};

    ck_assert_int_eq(ac_array_check_finite("X.npy", x, 2, s2, &err), AC_OK);
    x[3 * 6 + 4] = NAN;
    x[4 * 6 + 5] = HUGE_VAL;
    ck_assert_int_eq(ac_array_check_finite("X.npy", x, 2, s2, &err), AC_EDATA);
    ck_assert_str_eq(err.msg, "X.npy: entry (3, 4) is NaN");
    ck_assert_int_eq(ac_array_check_finite("v.npy", x, 1, s1, &err), AC_EDATA);
    ck_assert_str_eq(err.msg, "v.npy: entry (22,) is NaN");
    x[22] = 0;
    ck_assert_int_eq(ac_array_check_finite("v.npy", x, 1, s1, &err), AC_EDATA);
    ck_assert_str_eq(err.msg, "v.npy: entry (29,) is +Inf");
    ck_assert_int_eq(ac_array_check_finite("T.npy", x, 3, s3, &err), AC_EDATA);
    ck_assert_str_eq(err.msg, "T.npy: entry (1, 2, 4) is +Inf");
    x[0] = -HUGE_VAL;
    ck_assert_int_eq(ac_array_check_finite("s.npy", x, 0, NULL, &err), AC_EDATA);
    ck_assert_str_eq(err.msg, "s.npy: entry () is -Inf");
    ck_assert_int_eq(ac_array_check_finite("e.npy", NULL, 1, s0, &err), AC_OK);
    ck_assert_int_eq(ac_array_check_finite("e.npy", NULL, 1, s1, &err), AC_EUSAGE);
    ck_assert_int_eq(ac_array_check_finite("e.npy", x, 9, s1, NULL), AC_EUSAGE);
}
END_TEST

START_TEST(test_write_usage)
{
    ac_array a;
    ac_err err;

    memset(&a, 0, sizeof a);
    a.ndim = 9;
    ck_assert_int_eq(ac_npy_write(tpath("u.npy"), &a, &err), AC_EUSAGE);
    a.ndim = 1;
    a.shape[0] = 3;
    a.size = 2;
    ck_assert_int_eq(ac_npy_write(tpath("u.npy"), &a, &err), AC_EUSAGE);
    a.size = 3;
    ck_assert_int_eq(ac_npy_write(tpath("u.npy"), &a, &err), AC_EUSAGE); /* no data */
    ck_assert_int_eq(ac_npy_write_vec(tpath("u.npy"), NULL, 2, &err), AC_EUSAGE);
    ck_assert(access(tpath("u.npy"), F_OK) != 0);
}
END_TEST

/* ---------------------------------------------------------------------- */

/* rm -rf dir (without following symbolic links). */
static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    if (d) {
        while ((e = readdir(d))) {
            char sub[PATH_MAX + 300];
            struct stat sb;
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
            if (lstat(sub, &sb) == 0 && S_ISDIR(sb.st_mode))
                remove_tree(sub);
            else
                unlink(sub);
        }
        closedir(d);
    }
    rmdir(dir);
}

static Suite *npy_suite(void)
{
    Suite *s = suite_create("npy");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 0); /* no wall-clock limit: tests/testutil.h, test_no_timeout */
    tcase_add_test(tc, test_array_init);
    tcase_add_test(tc, test_roundtrip_shapes);
    tcase_add_test(tc, test_roundtrip_values);
    tcase_add_test(tc, test_roundtrip_mat_vec);
    tcase_add_test(tc, test_roundtrip_random);
    tcase_add_test(tc, test_write_layout);
    tcase_add_test(tc, test_fortran_order);
    tcase_add_test(tc, test_versions);
    tcase_add_test(tc, test_big_endian);
    tcase_add_test(tc, test_header_syntax_variants);
    tcase_add_test(tc, test_bad_open);
    tcase_add_test(tc, test_bad_preamble);
    tcase_add_test(tc, test_bad_header);
    tcase_add_test(tc, test_bad_data_length);
    tcase_add_test(tc, test_stream_input);
    tcase_add_test(tc, test_corrupt_random);
    tcase_add_test(tc, test_unwritable_output);
    tcase_add_test(tc, test_write_errors);
    tcase_add_test(tc, test_overwrite_and_mode);
    tcase_add_test(tc, test_atomic);
    tcase_add_test(tc, test_atomic_write_error);
    tcase_add_test(tc, test_file_read);
    tcase_add_test(tc, test_stagedir);
    tcase_add_test(tc, test_mkdir_p);
    tcase_add_test(tc, test_check_finite);
    tcase_add_test(tc, test_write_usage);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    const char *tmp = getenv("TMPDIR"), *seed = getenv("ATTNCHECK_TEST_SEED");
    SRunner *sr;
    int failed;

    if (seed && *seed) {
        char *end;
        errno = 0;
        g_seed = strtoull(seed, &end, 0);
        if (errno || *end) {
            fprintf(stderr, "test_npy: bad ATTNCHECK_TEST_SEED '%s'\n", seed);
            return 2;
        }
    }
    if (!tmp || !*tmp)
        tmp = "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s/test_npy.XXXXXX", tmp);
    if (!mkdtemp(g_dir)) {
        fprintf(stderr, "test_npy: cannot create a directory under %s: %s\n", tmp,
                strerror(errno));
        return 99;
    }
    {
        /* Absolute, since some tests change the working directory. */
        char *abs = realpath(g_dir, NULL);
        if (!abs || strlen(abs) >= sizeof g_dir) {
            fprintf(stderr, "test_npy: realpath %s failed\n", g_dir);
            rmdir(g_dir);
            free(abs);
            return 99;
        }
        strcpy(g_dir, abs);
        free(abs);
    }

    sr = srunner_create(npy_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);

    remove_tree(g_dir);
    if (failed)
        fprintf(stderr, "test_npy: %d test(s) failed; ATTNCHECK_TEST_SEED=%llu\n", failed,
                g_seed);
    return failed ? 1 : 0;
}
