/* test_fileio.c — tests of the writing side of attncheck/npy.h and of
 * attncheck/fileio.h (Check): unwritable outputs and write errors,
 * overwriting and file modes, atomic files, reading whole files, staged
 * directories, mkdir -p, the finite check and misuse (the helpers and main:
 * npy_testutil.h).
 */
#include <config.h>

#include "npy_testutil.h"

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

static Suite *fileio_suite(void)
{
    Suite *s = suite_create("fileio");
    TCase *tc = tcase_create("output");

    tcase_set_timeout(tc, 0); /* no wall-clock limit: tests/testutil.h, test_no_timeout */
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
    return npy_test_main("test_fileio", fileio_suite);
}
