/* npy_testutil.h — the scratch directory, seeded generator, file helpers
 * and main of the io unit tests that write files (test_npy.c,
 * test_fileio.c).
 *
 * Files are written under a fresh directory made with mkdtemp in $TMPDIR
 * (or /tmp), removed at the end.  The randomised tests take their seed from
 * the environment variable ATTNCHECK_TEST_SEED (default 20240601); the seed
 * is printed when a test fails.  Included by one test program each: every
 * definition is static.
 */
#ifndef AC_IO_TEST_NPY_TESTUTIL_H
#define AC_IO_TEST_NPY_TESTUTIL_H

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
static inline const char *tpath(const char *name)
{
    static char bufs[8][PATH_MAX + 64];
    static unsigned k;
    char *b = bufs[k++ % 8];
    snprintf(b, PATH_MAX + 64, "%s/%s", g_dir, name);
    return b;
}

static uint64_t rng_state;

static inline uint64_t rng_next(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static inline size_t rng_below(size_t n)
{
    return n ? (size_t)(rng_next() % n) : 0;
}

static inline void put_raw(const char *name, const void *buf, size_t n)
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
static inline void put_npy(const char *name, int major, int minor, const char *hdr, const void *data,
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

static inline unsigned char *slurp(const char *path, size_t *n)
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
static inline size_t count_entries(const char *dir)
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

static inline int same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static inline double from_bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* Read `name` expecting failure with `status` and a message that starts
 * with the path and contains `substr`. */
static inline void expect_read_fail(const char *name, int status, const char *substr)
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
static inline void put_hdr(const char *name, const char *dict, size_t ndata)
{
    char hdr[1024];
    double zeros[64] = {0};
    ck_assert(ndata <= 64);
    snprintf(hdr, sizeof hdr, "%s\n", dict);
    put_npy(name, 1, 0, hdr, zeros, ndata * sizeof(double));
}

/* Write a, read it back, compare shape and bits. */
static inline void roundtrip(const char *name, const ac_array *a)
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
static inline void le_bytes(unsigned char *out, double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    for (int k = 0; k < 8; k++)
        out[k] = (unsigned char)(u >> (8 * k));
}

static inline void be_bytes(unsigned char *out, double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    for (int k = 0; k < 8; k++)
        out[7 - k] = (unsigned char)(u >> (8 * k));
}


/* rm -rf dir (without following symbolic links). */
static inline void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    if (d) {
        while ((e = readdir(d))) {
            char sub[PATH_MAX + 300];
            struct stat sb;
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            if (snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name) >= (int)sizeof sub)
                continue; /* not ours: every name here is short */
            if (lstat(sub, &sb) == 0 && S_ISDIR(sb.st_mode))
                remove_tree(sub);
            else
                unlink(sub);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Run the suite in a fresh directory g_dir under $TMPDIR with the seed of
 * ATTNCHECK_TEST_SEED; the exit status of a Check program. */
static inline int npy_test_main(const char *prog, Suite *(*suite)(void))
{
    const char *tmp = getenv("TMPDIR"), *seed = getenv("ATTNCHECK_TEST_SEED");
    SRunner *sr;
    int failed;

    if (seed && *seed) {
        char *end;
        errno = 0;
        g_seed = strtoull(seed, &end, 0);
        if (errno || *end) {
            fprintf(stderr, "%s: bad ATTNCHECK_TEST_SEED '%s'\n", prog, seed);
            return 2;
        }
    }
    if (!tmp || !*tmp)
        tmp = "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s/%s.XXXXXX", tmp, prog);
    if (!mkdtemp(g_dir)) {
        fprintf(stderr, "%s: cannot create a directory under %s: %s\n", prog, tmp,
                strerror(errno));
        return 99;
    }
    {
        /* Absolute, since some tests change the working directory. */
        char *abs = realpath(g_dir, NULL);
        if (!abs || strlen(abs) >= sizeof g_dir) {
            fprintf(stderr, "%s: realpath %s failed\n", prog, g_dir);
            rmdir(g_dir);
            free(abs);
            return 99;
        }
        strcpy(g_dir, abs);
        free(abs);
    }

    sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);

    remove_tree(g_dir);
    if (failed)
        fprintf(stderr, "%s: %d test(s) failed; ATTNCHECK_TEST_SEED=%llu\n", prog,
                failed, g_seed);
    return failed ? 1 : 0;
}

#endif /* AC_IO_TEST_NPY_TESTUTIL_H */
