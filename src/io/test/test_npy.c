/* test_npy.c — tests of attncheck/npy.h (Check): arrays and round trips,
 * every layout and version NumPy writes, and bad, truncated, streamed and
 * randomly corrupted files (the output files: test_fileio.c; the helpers
 * and main: npy_testutil.h).
 */
#include <config.h>

#include "npy_testutil.h"

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
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return npy_test_main("test_npy", npy_suite);
}
