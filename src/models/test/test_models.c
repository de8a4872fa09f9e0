/* test_models.c — tests of src/models (attncheck/models.h) that need no
 * PyTorch: SHA-256 against FIPS 180-4's examples, the safetensors reader on
 * every class of malformed header and index, and the per-head patterns on
 * structure that fixes them exactly (masks, grouped heads, RoPE's
 * dependence on relative positions only, the two pairings as a
 * permutation of the weights, Theorem 1's form).  The torch comparisons
 * of the families are tests/models_torch.py.
 *
 * Files go to a fresh directory under $TMPDIR (removed at the end).
 * Randomised tests take their seed from ATTNCHECK_TEST_SEED (printed on
 * failure).
 */
#include <config.h>

#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attncheck/head.h"
#include "attncheck/models.h"
#include "models/models_impl.h"
#include "testutil.h"

#define U 0x1p-53

static char g_dir[512];

static const char *tpath(const char *name)
{
    static char bufs[8][640];
    static unsigned k;
    char *b = bufs[k++ % 8];
    snprintf(b, 640, "%s/%s", g_dir, name);
    return b;
}

static void put(const char *name, const void *buf, size_t n)
{
    FILE *f = fopen(tpath(name), "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* A safetensors file: 8-byte length, the header text, then `data` bytes
 * (pattern 0..255 unless given). */
static void put_st(const char *name, const char *header, const void *data, size_t ndata)
{
    size_t h = strlen(header), n = 8 + h + ndata;
    unsigned char *b = malloc(n + 1);
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(b + 8, header, h);
    for (size_t i = 0; i < ndata; i++)
        b[8 + h + i] = data ? ((const unsigned char *)data)[i] : (unsigned char)i;
    put(name, b, n);
    free(b);
}

/* ac_st_open of a file must fail with status st and a message holding
 * `what` and the file's name. */
static void expect_fail(const char *path, int want, const char *what)
{
    ac_st s;
    ac_err e;
    ac_err_clear(&e);
    int st = ac_st_open(&s, path, 0, &e);
    ck_assert_msg(st == want, "%s: status %d, want %d (%s)", path, st, want, e.msg);
    ck_assert_msg(strstr(e.msg, what), "%s: message \"%s\" lacks \"%s\"", path, e.msg, what);
    ck_assert_msg(strstr(e.msg, path) || strstr(e.msg, g_dir), "message \"%s\" names no file",
                  e.msg);
    ck_assert_msg(!strchr(e.msg, '\n'), "message \"%s\" is not one line", e.msg);
    ck_assert_ptr_null(s.tensors);
}

/* ---------------------------------------------------------------- SHA-256 */

static void hex_of(char *out, const void *d, size_t n)
{
    unsigned char h[32];
    md_sha256(h, d, n);
    md_hex(out, h, 32);
}

START_TEST(test_sha256_fips)
{
    /* FIPS 180-4 examples (NIST CSRC "SHA256.pdf", "SHA2_Additional.pdf") */
    char hx[65];
    hex_of(hx, "abc", 3);
    ck_assert_str_eq(hx, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    hex_of(hx, "", 0);
    ck_assert_str_eq(hx, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *m2 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    hex_of(hx, m2, strlen(m2));
    ck_assert_str_eq(hx, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    char *a = malloc(1000000);
    memset(a, 'a', 1000000);
    hex_of(hx, a, 1000000);
    ck_assert_str_eq(hx, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    /* the same in random pieces */
    test_rng r;
    test_rng_init(&r, 7);
    md_sha256_ctx s;
    md_sha256_init(&s);
    for (size_t p = 0; p < 1000000;) {
        size_t k = (size_t)(test_rng_u64(&r) % 200);
        if (k > 1000000 - p)
            k = 1000000 - p;
        md_sha256_update(&s, a + p, k);
        p += k;
    }
    unsigned char h[32];
    md_sha256_final(&s, h);
    md_hex(hx, h, 32);
    ck_assert_str_eq(hx, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(a);
}
END_TEST


START_TEST(test_utf8)
{
    static const struct {
        const char *s;
        size_t bad;
    } cases[] = {
        {"plain", 5},      {"caf\xc3\xa9", 5},  {"\xe2\x82\xac", 3}, {"\xf0\x9f\x98\x80", 4},
        {"\xc0\xaf", 0},   {"\xe0\x80\xaf", 0}, {"\xed\xa0\x80", 0}, {"a\xf4\x90\x80\x80", 1},
        {"ab\xe2\x82", 2}, {"\x80", 0},         {"x\xff", 1},        {"\xf5\x80\x80\x80", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        ck_assert_msg(md_utf8_check((const unsigned char *)cases[i].s, strlen(cases[i].s)) ==
                          cases[i].bad,
                      "case %zu", i);
}
END_TEST

/* ---------------------------------------------------------------- headers */

START_TEST(test_st_valid)
{
    /* two F32 tensors listed out of order, a 0-d F64, an empty BF16, metadata */
    float a[6] = {1, -2, 3.5f, 0x1p-149f, -0.0f, 65504};
    double s = -0.25;
    float bt[2] = {7, 8};
    unsigned char data[24 + 8 + 8];
    memcpy(data, a, 24);
    memcpy(data + 24, &s, 8);
    memcpy(data + 32, bt, 8);
    put_st("ok.safetensors",
           "{\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[32,40]},"
           "\"__metadata__\":{\"format\":\"pt\"},"
           "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
           "\"e\":{\"dtype\":\"BF16\",\"shape\":[0,4],\"data_offsets\":[32,32]},"
           "\"s\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[24,32]}}  ",
           data, sizeof data);
    ac_st st;
    ac_err e;
    ck_assert_int_eq(ac_st_open(&st, tpath("ok.safetensors"), AC_ST_SHA256, &e), AC_OK);
    ck_assert_uint_eq(st.ntensors, 4);
    ck_assert_str_eq(st.tensors[0].name, "a");
    ck_assert_uint_eq(st.files[0].nmeta, 1);
    ck_assert_str_eq(st.files[0].meta_val[0], "pt");
    ck_assert(st.files[0].have_sha256);
    const ac_st_tensor *t = ac_st_find(&st, "a");
    double out[6];
    ck_assert_int_eq(ac_st_read(out, &st, t, &e), AC_OK);
    for (int i = 0; i < 6; i++)
        ck_assert(out[i] == (double)a[i] && !signbit(out[i]) == !signbit(a[i]));
    size_t rows[2] = {1, 0};
    ck_assert_int_eq(ac_st_read_rows(out, &st, t, rows, 2, &e), AC_OK);
    ck_assert(out[0] == (double)a[3] && out[3] == 1.0);
    rows[0] = 2;
    ck_assert_int_eq(ac_st_read_rows(out, &st, t, rows, 1, &e), AC_EUSAGE);
    t = ac_st_find(&st, "s");
    ck_assert_uint_eq(t->ndim, 0);
    ck_assert_uint_eq(t->numel, 1);
    ck_assert_int_eq(ac_st_read(out, &st, t, &e), AC_OK);
    ck_assert(out[0] == -0.25);
    ck_assert_ptr_null(ac_st_find(&st, "zz"));
    ck_assert_uint_eq(ac_st_find(&st, "e")->numel, 0);
    ac_st_close(&st);
    ac_st_close(&st); /* zeroed: again is fine */
    /* a header of whitespace around {} and no data */
    put_st("empty.safetensors", " {} ", NULL, 0);
    ck_assert_int_eq(ac_st_open(&st, tpath("empty.safetensors"), 0, &e), AC_OK);
    ck_assert_uint_eq(st.ntensors, 0);
    ac_st_close(&st);
}
END_TEST

START_TEST(test_st_hostile_headers)
{
    static const struct {
        const char *header;
        size_t ndata;
        const char *what;
    } cases[] = {
        {"[]", 0, "not a JSON object"},
        {"{\"a\":", 0, "header: line 1"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "duplicate key \"a\""},
        {"{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
         "duplicate key \"dtype\""},
        {"{\"a\":{\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "unknown dtype"},
        {"{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "missing \"dtype\""},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"q\":1}}", 4,
         "unknown field \"q\""},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "not a non-negative"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", 4,
         "not a non-negative"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[18446744073709551616],\"data_offsets\":[0,4]}}", 4,
         "not a non-negative"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4, "two non-negative"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
         "is 8 bytes, data_offsets [0, 4] span 4"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4, "end before"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,4]}}",
         4, "overflows"},
        {"{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", 2,
         "not a whole number of bytes"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "overlap"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12, "leave a gap"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "must start at 0"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 6,
         "cover 4 bytes of data, the file has 6"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 6,
         "cover 8 bytes of data, the file has 6"},
        {"{\"__metadata__\":{\"k\":1}}", 0, "is not a string"},
        {"{\"__metadata__\":[]}", 0, "not an object of strings"},
        {"{\"a\":[]}", 0, "not a JSON object"},
        {"{\"a\":\"\xc0\xaf\"}", 0, "not valid UTF-8"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char name[32];
        snprintf(name, sizeof name, "bad%zu.safetensors", i);
        put_st(name, cases[i].header, NULL, cases[i].ndata);
        expect_fail(tpath(name), AC_EDATA, cases[i].what);
    }
    /* the length field: short file, over the limit, past the end */
    put("short.safetensors", "\x05\0\0\0", 4);
    expect_fail(tpath("short.safetensors"), AC_EDATA, "too short");
    unsigned char big[16] = {0x01, 0xe1, 0xf5, 0x05}; /* 100000001 */
    put("big.safetensors", big, sizeof big);
    expect_fail(tpath("big.safetensors"), AC_EDATA, "exceeds the limit of 100000000");
    unsigned char past[12] = {200, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' '};
    put("past.safetensors", past, sizeof past);
    expect_fail(tpath("past.safetensors"), AC_EDATA, "runs past the end");
    put("zero.safetensors", "", 0);
    expect_fail(tpath("zero.safetensors"), AC_EDATA, "too short");
    expect_fail(tpath("missing.safetensors"), AC_ENOINPUT, "cannot open");
    expect_fail(g_dir, AC_ENOINPUT, "no model.safetensors");
}
END_TEST

START_TEST(test_st_read_refusals)
{
    /* F8 and I8 tensors are listed but not read; a NaN is named by index */
    float v[6] = {0, 1, 2, 3, 4, 5};
    v[4] = -INFINITY;
    unsigned char data[24 + 4];
    memcpy(data, v, 24);
    memset(data + 24, 0x38, 4);
    put_st("q.safetensors",
           "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
           "\"q\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,2],\"data_offsets\":[24,28]}}",
           data, sizeof data);
    ac_st st;
    ac_err e;
    ck_assert_int_eq(ac_st_open(&st, tpath("q.safetensors"), 0, &e), AC_OK);
    double out[6];
    ck_assert_int_eq(ac_st_read(out, &st, ac_st_find(&st, "q"), &e), AC_EDATA);
    ck_assert_msg(strstr(e.msg, "tensor q: dtype F8_E4M3 is not read"), "%s", e.msg);
    ck_assert_int_eq(ac_st_read(out, &st, ac_st_find(&st, "w"), &e), AC_EDATA);
    ck_assert_msg(strstr(e.msg, "tensor w: entry (1, 1) is -Inf"), "%s", e.msg);
    size_t r0 = 0;
    ck_assert_int_eq(ac_st_read_rows(out, &st, ac_st_find(&st, "w"), &r0, 1, &e), AC_OK);
    ac_st_close(&st);
}
END_TEST

static void put_shard(const char *name, const char *tensor, float v)
{
    char h[200];
    snprintf(h, sizeof h, "{\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
             tensor);
    put_st(name, h, &v, 4);
}

START_TEST(test_st_index)
{
    put_shard("s1.safetensors", "x", 1.5f);
    put_shard("s2.safetensors", "y", -3.0f);
    const char *ix = "{\"metadata\":{\"total_size\":8},\"weight_map\":{\"x\":\"s1.safetensors\","
                     "\"y\":\"s2.safetensors\"}}";
    put("ok.index.json", ix, strlen(ix));
    ac_st st;
    ac_err e;
    ck_assert_int_eq(ac_st_open(&st, tpath("ok.index.json"), 0, &e), AC_OK);
    ck_assert_uint_eq(st.nfiles, 2);
    double v;
    ck_assert_int_eq(ac_st_read(&v, &st, ac_st_find(&st, "y"), &e), AC_OK);
    ck_assert(v == -3.0);
    ac_st_close(&st);
    static const struct {
        const char *text;
        const char *what;
    } cases[] = {
        {"{\"weight_map\":{\"x\":\"s1.safetensors\",\"y\":\"s3.safetensors\"}}",
         "names shard s3.safetensors, which does not exist"},
        {"{\"weight_map\":{\"x\":\"../s1.safetensors\"}}", "must be a file name"},
        {"{\"weight_map\":{\"x\":\"s1.safetensors\",\"x\":\"s1.safetensors\"}}",
         "duplicate key \"x\""},
        {"{\"weight_map\":{\"x\":\"s2.safetensors\",\"y\":\"s2.safetensors\"}}",
         "tensor x is not in shard s2.safetensors"},
        {"{\"weight_map\":{\"x\":\"s1.safetensors\"},\"w\":{}}", "x"},
        {"{\"weight_map\":{\"x\":\"s1.safetensors\",\"y\":\"s1.safetensors\","
         "\"q\":\"s2.safetensors\"}}",
         "tensor y is not in shard s1.safetensors, it is in"},
        {"{\"weights\":{}}", "no \"weight_map\""},
        {"{\"weight_map\":{\"x\":1}}", "must be a file name"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char name[32];
        snprintf(name, sizeof name, "bad%zu.index.json", i);
        put(name, cases[i].text, strlen(cases[i].text));
        if (i == 4) { /* a shard tensor the index does not list: s1 holds x only; fine */
            ck_assert_int_eq(ac_st_open(&st, tpath(name), 0, &e), AC_OK);
            ac_st_close(&st);
            continue;
        }
        expect_fail(tpath(name), AC_EDATA, cases[i].what);
    }
    /* a shard holding a tensor the index does not list */
    char h[300];
    snprintf(h, sizeof h, "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                          "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}");
    float two[2] = {1, 2};
    put_st("s4.safetensors", h, two, 8);
    const char *t4 = "{\"weight_map\":{\"x\":\"s4.safetensors\"}}";
    put("unlisted.index.json", t4, strlen(t4));
    expect_fail(tpath("unlisted.index.json"), AC_EDATA, "holds tensor w, which the index does "
                "not list");
    /* one tensor in two shards */
    const char *t5 = "{\"weight_map\":{\"x\":\"s1.safetensors\",\"w\":\"s4.safetensors\"}}";
    put("twice.index.json", t5, strlen(t5));
    expect_fail(tpath("twice.index.json"), AC_EDATA, "tensor x is in two shards");
}
END_TEST

/* ---------------------------------------------------------------- patterns */

/* A layer with random weights (entries in [-1, 1)), h heads, hkv kv heads. */
static void rand_layer(ac_attn_layer *L, size_t d, size_t h, size_t hkv, size_t dk, int bias,
                       test_rng *r)
{
    memset(L, 0, sizeof *L);
    size_t n = (h + 2 * hkv) * dk * d + d * h * dk + (h + 2 * hkv) * dk + d;
    L->block = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++)
        L->block[i] = test_rng_range(r, -1, 1);
    L->d = d;
    L->h = h;
    L->hkv = hkv;
    L->dk = dk;
    L->wq = L->block;
    L->wk = L->wq + h * dk * d;
    L->wv = L->wk + hkv * dk * d;
    L->wo = L->wv + hkv * dk * d;
    double *b = L->wo + d * h * dk;
    if (bias) {
        L->bq = b;
        L->bk = b + h * dk;
        L->bv = L->bk + hkv * dk;
        L->bo = L->bv + hkv * dk;
    }
    L->scale = 1.0 / sqrt((double)dk);
    snprintf(L->scale_rule, sizeof L->scale_rule, "1/sqrt(%zu)", dk);
}

static void rand_x(ac_mat *X, size_t n, size_t d, test_rng *r)
{
    ac_mat_init(X, n, d, NULL);
    for (size_t i = 0; i < n * d; i++)
        X->data[i] = test_rng_range(r, -1, 1);
}

/* Rows are distributions; masked entries exactly 0. */
static void check_rows(const ac_array *P, const ac_attn_layer *L, const unsigned char *keep)
{
    size_t n = P->shape[1];
    for (size_t i = 0; i < L->h; i++)
        for (size_t q = 0; q < n; q++) {
            double s = 0;
            for (size_t k = 0; k < n; k++) {
                double p = P->data[(i * n + q) * n + k];
                int vis = (!keep || keep[k]) && (L->mask != AC_MASK_CAUSAL || k <= q) &&
                          (!L->window || k > q || q - k < L->window);
                ck_assert_msg(vis ? p > 0 : p == 0, "head %zu (%zu, %zu): %g", i, q, k, p);
                s += p;
            }
            ck_assert_msg(fabs(s - 1) <= 4 * n * U, "row sum %.17g", s);
        }
}

START_TEST(test_patterns_masks)
{
    test_rng r;
    test_rng_init(&r, 21);
    ac_err e;
    for (int c = 0; c < 4; c++) {
        ac_attn_layer L;
        rand_layer(&L, 6, 4, 2, 3, c & 1, &r);
        L.mask = c >= 2 ? AC_MASK_CAUSAL : AC_MASK_NONE;
        L.window = c == 3 ? 2 : 0;
        ac_mat X;
        rand_x(&X, 7, 6, &r);
        unsigned char keep[7] = {1, 1, 1, 1, 1, 1, 0};
        ac_array P;
        ck_assert_int_eq(ac_attn_patterns(&P, &L, &X, NULL, &e), AC_OK);
        ck_assert_uint_eq(P.ndim, 3);
        ck_assert_uint_eq(P.shape[0], 4);
        check_rows(&P, &L, NULL);
        ac_array_free(&P);
        ck_assert_int_eq(ac_attn_patterns(&P, &L, &X, keep, &e), AC_OK);
        check_rows(&P, &L, keep);
        ac_array_free(&P);
        /* a query with no visible key is refused (causal, key 0 padding) */
        unsigned char left[7] = {0, 1, 1, 1, 1, 1, 1};
        int st = ac_attn_patterns(&P, &L, &X, left, &e);
        ck_assert_int_eq(st, c >= 2 ? AC_EDATA : AC_OK);
        if (st)
            ck_assert_msg(strstr(e.msg, "query 0 has no key"), "%s", e.msg);
        ac_array_free(&P);
        ac_mat_free(&X);
        ac_attn_layer_free(&L);
    }
}
END_TEST

START_TEST(test_patterns_gqa)
{
    /* query heads 0, 1 share key head 0: with equal Wq_0 = Wq_1 (and
     * biases) their patterns are equal to the bit; heads 2, 3 read key
     * head 1: a different key head gives a different pattern */
    test_rng r;
    test_rng_init(&r, 22);
    ac_attn_layer L;
    rand_layer(&L, 8, 4, 2, 4, 1, &r);
    memcpy(L.wq + 4 * 8, L.wq, 4 * 8 * sizeof(double));
    memcpy(L.bq + 4, L.bq, 4 * sizeof(double));
    memcpy(L.wq + 2 * 4 * 8, L.wq, 4 * 8 * sizeof(double));
    memcpy(L.bq + 8, L.bq, 4 * sizeof(double));
    ck_assert_uint_eq(ac_attn_kv_head(&L, 1), 0);
    ck_assert_uint_eq(ac_attn_kv_head(&L, 2), 1);
    ac_mat X;
    rand_x(&X, 5, 8, &r);
    ac_array P;
    ac_err e;
    ck_assert_int_eq(ac_attn_patterns(&P, &L, &X, NULL, &e), AC_OK);
    ck_assert(!memcmp(P.data, P.data + 25, 25 * sizeof(double)));
    ck_assert(memcmp(P.data, P.data + 50, 25 * sizeof(double)));
    ac_array_free(&P);
    ac_mat_free(&X);
    ac_attn_layer_free(&L);
}
END_TEST

START_TEST(test_patterns_rope)
{
    /* (a) RoPE logits depend on q - k only: with every token the same
     * vector x, P[q][k] for q, k >= s equals P[q-s][k-s] up to the
     * softmax normalisation over the other keys: compare logit
     * differences via log P.  Simpler and exact in structure: with no mask
     * and identical tokens, the pattern is a function of (q, k) that must
     * be a Toeplitz matrix of logits, so log P[q][k] - log P[q][q] depends
     * on q - k only.
     * (b) the interleaved pairing on W equals the rotate_half pairing on
     * W with rows permuted as Hugging Face's conversion script does:
     * row (2j + s) of a head -> row (j + s dk/2). */
    test_rng r;
    test_rng_init(&r, 23);
    ac_err e;
    ac_attn_layer L;
    size_t d = 6, dk = 4, n = 9;
    rand_layer(&L, d, 2, 1, dk, 0, &r);
    L.rope = AC_ROPE_HALF;
    L.rope_theta = 10.0;
    ac_mat X;
    rand_x(&X, n, d, &r);
    for (size_t t = 1; t < n; t++)
        memcpy(X.data + t * d, X.data, d * sizeof(double));
    ac_array P;
    ck_assert_int_eq(ac_attn_patterns(&P, &L, &X, NULL, &e), AC_OK);
    for (size_t q = 0; q < n; q++)
        for (size_t k = 0; k < n; k++) {
            /* log P[q][k] - log P[q][0] = z(q-k) - z(q): compare with row q' */
            double a = log(P.data[q * n + k]) - log(P.data[q * n + q]);
            size_t q2 = (q + 3) % n, k2 = (k + 3) % n;
            if ((q2 >= k2) != (q >= k) || q2 - k2 != q - k)
                continue;
            double b = log(P.data[q2 * n + k2]) - log(P.data[q2 * n + q2]);
            /* entries of X, W in [-1, 1): |q_j|, |k_j| <= d; a logit sums dk
             * products, each from sums of d terms rotated (4 roundings):
             * |dz| <= (d + 8) u dk d^2 per logit; a and b are differences of
             * two logs of the softmax of such logits: 4 |dz| each */
            double tol = 8 * (double)((d + 8) * dk * d * d) * U * (1 + fabs(a));
            ck_assert_msg(fabs(a - b) <= tol, "Toeplitz (%zu,%zu): %g %g", q, k, a, b);
        }
    /* (b) */
    ac_array P2;
    ac_attn_layer M = L;
    M.block = malloc((3 * dk * d) * sizeof(double));
    M.wq = M.block;
    M.wk = M.wq + 2 * dk * d;
    for (size_t hd = 0; hd < 3; hd++) {
        const double *src = hd < 2 ? L.wq + hd * dk * d : L.wk;
        double *dst = (hd < 2 ? M.wq + hd * dk * d : M.wk);
        for (size_t j = 0; j < dk / 2; j++)
            for (size_t s = 0; s < 2; s++) /* Meta row 2j+s is HF row j + s dk/2 */
                memcpy(dst + (2 * j + s) * d, src + (j + s * dk / 2) * d, d * sizeof(double));
    }
    M.rope = AC_ROPE_INTERLEAVED;
    ac_mat_free(&X);
    rand_x(&X, n, d, &r);
    ac_array_free(&P);
    ck_assert_int_eq(ac_attn_patterns(&P, &L, &X, NULL, &e), AC_OK);
    ck_assert_int_eq(ac_attn_patterns(&P2, &M, &X, NULL, &e), AC_OK);
    /* the same numbers summed in another order: the bound of (a) on the
     * logits, 2 |dz| relative on each probability, both sides */
    for (size_t i = 0; i < P.size; i++)
        ck_assert_msg(fabs(P.data[i] - P2.data[i]) <=
                          4 * (double)((d + 8) * dk * d * d) * U * P.data[i],
                      "entry %zu: %.17g %.17g", i, P.data[i], P2.data[i]);
    free(M.block);
    ac_array_free(&P);
    ac_array_free(&P2);
    ac_mat_free(&X);
    ac_attn_layer_free(&L);
}
END_TEST

START_TEST(test_head_t1)
{
    /* the Theorem 1 form gives the same pattern (transposed) through the
     * library's own head (ac_head_softmax), factor 1 at scale 1/sqrt(dk) */
    test_rng r;
    test_rng_init(&r, 24);
    ac_err e;
    for (int bias = 0; bias < 2; bias++) {
        ac_attn_layer L;
        rand_layer(&L, 5, 2, 2, 3, bias, &r);
        ac_mat X, Xt, Wq, Wk, S;
        rand_x(&X, 6, 5, &r);
        ac_array P;
        ck_assert_int_eq(ac_attn_patterns(&P, &L, &X, NULL, &e), AC_OK);
        double f;
        ck_assert_int_eq(ac_attn_head_t1(&Xt, &Wq, &Wk, &f, &L, 1, &X, &e), AC_OK);
        ck_assert(f == L.scale * sqrt(3.0));
        ck_assert_uint_eq(Xt.rows, 5 + (size_t)bias);
        S = (ac_mat){0};
        ck_assert_int_eq(ac_head_softmax(&S, &Xt, &Wk, &Wq, &e), AC_OK);
        for (size_t q = 0; q < 6; q++)
            for (size_t k = 0; k < 6; k++) {
                double a = P.data[36 + q * 6 + k], b = AC_MAT(&S, k, q);
                /* two summation orders of logits with |terms| <= dk (d+1)^2:
                 * |dz| <= (d + dk + 2) u dk (d+1)^2 each; p moves by at most
                 * 2 |dz| relative, twice (both sides) */
                double tol = 4 * (5 + 3 + 2) * 3 * 36 * U * a;
                ck_assert_msg(fabs(a - b) <= tol, "(%zu,%zu) %.17g %.17g", q, k, a, b);
            }
        L.rope = AC_ROPE_HALF;
        ac_mat_free(&Xt);
        ac_mat_free(&Wq);
        ac_mat_free(&Wk);
        ck_assert_int_eq(ac_attn_head_t1(&Xt, &Wq, &Wk, &f, &L, 1, &X, &e), AC_EUSAGE);
        ck_assert(strstr(e.msg, "RoPE"));
        ac_mat_free(&S);
        ac_array_free(&P);
        ac_mat_free(&X);
        ac_attn_layer_free(&L);
    }
}
END_TEST

START_TEST(test_describe)
{
    test_rng r;
    test_rng_init(&r, 25);
    ac_attn_layer L;
    rand_layer(&L, 4, 4, 2, 2, 0, &r);
    L.mask = AC_MASK_CAUSAL;
    L.window = 3;
    L.rope = AC_ROPE_INTERLEAVED;
    L.rope_theta = 10000;
    char b[1024];
    ac_attn_describe(b, sizeof b, &L);
    ck_assert_msg(strstr(b, "interleaved pairing") && strstr(b, "sliding window of 3") &&
                      strstr(b, "2 key/value heads") && strstr(b, "biases: none") &&
                      strstr(b, "1/sqrt(2)") && strstr(b, "weights as stored"),
                  "%s", b);
    ac_attn_layer_free(&L);
}
END_TEST

/* The fixtures of tests/models (top_srcdir from the test environment). */
static int fixture(char *buf, size_t size, const char *name)
{
    const char *top = getenv("top_srcdir");
    snprintf(buf, size, "%s/tests/models/%s", top && *top ? top : ".", name);
    struct stat sb;
    return stat(buf, &sb) == 0;
}

START_TEST(test_model_api)
{
    char dir[700], line[4096];
    ac_model m;
    ac_attn_layer L;
    ac_mat R;
    ac_err e;
    if (!fixture(dir, sizeof dir, "gpt2")) {
        fprintf(stderr, "test_models: %s missing; model API test skipped\n", dir);
        return;
    }
    ck_assert_int_eq(ac_model_open(&m, dir, NULL, &e), AC_OK);
    ck_assert_int_eq(m.family, AC_MODEL_GPT2);
    ck_assert_str_eq(ac_model_family_name(m.family), "gpt2");
    ck_assert_uint_eq(m.layers, 3);
    ck_assert(m.st.files[0].have_sha256);
    ac_model_describe(line, sizeof line, &m);
    ck_assert_msg(strstr(line, "model.safetensors sha256 ") && strstr(line, "3 layers"), "%s",
                  line);
    ck_assert_int_eq(ac_model_layer(&L, &m, 3, &e), AC_EUSAGE);
    ck_assert_int_eq(ac_model_layer(&L, &m, 2, &e), AC_OK);
    ck_assert(L.scale == 0.5 / 3.0 || fabs(L.scale - 1.0 / 6.0) <= U);
    ck_assert(strstr(L.scale_rule, "scale_attn_by_inverse_layer_idx"));
    ac_attn_layer_free(&L);
    /* the residual stream after the last block (l = layers), and beyond */
    int32_t ids[4] = {1, 2, 3, 4};
    ac_model_input in = {4, ids, NULL, NULL, NULL};
    ck_assert_int_eq(ac_model_run(&R, &m, 3, &in, &e), AC_OK);
    ck_assert_uint_eq(R.rows, 4);
    ck_assert_uint_eq(R.cols, 8);
    for (size_t i = 0; i < 32; i++)
        ck_assert(isfinite(R.data[i]));
    ac_mat_free(&R);
    ck_assert_int_eq(ac_model_run(&R, &m, 4, &in, &e), AC_EUSAGE);
    in.n = 0;
    ck_assert_int_eq(ac_model_run(&R, &m, 1, &in, &e), AC_EUSAGE);
    ac_model_close(&m);
    ac_model_close(&m);
    /* a generic layer has nothing to run; a ViT takes pixels */
    ck_assert(fixture(dir, sizeof dir, "layer"));
    ac_model_opts o;
    ac_model_opts_default(&o);
    o.checksum = 0;
    ck_assert_int_eq(ac_model_open(&m, dir, &o, &e), AC_OK);
    ck_assert(!m.st.files[0].have_sha256);
    ac_model_describe(line, sizeof line, &m);
    ck_assert(strstr(line, "not computed"));
    in.n = 4;
    ck_assert_int_eq(ac_model_run(&R, &m, 0, &in, &e), AC_EUSAGE);
    ck_assert_int_eq(ac_model_layer(&L, &m, 0, &e), AC_OK);
    ck_assert(L.rope == AC_ROPE_INTERLEAVED && L.window == 4 && L.norm == AC_NORM_RMS &&
              L.scale == 0.3 && L.bq && L.bk && !L.bv && !L.bo);
    ac_attn_layer_free(&L);
    ac_model_close(&m);
    ck_assert(fixture(dir, sizeof dir, "vit"));
    ck_assert_int_eq(ac_model_open(&m, dir, &o, &e), AC_OK);
    ck_assert_int_eq(ac_model_run(&R, &m, 0, &in, &e), AC_EUSAGE);
    ck_assert_msg(strstr(e.msg, "5 tokens"), "%s", e.msg);
    ac_model_close(&m);
    ck_assert_int_eq(ac_model_open(&m, "/nonexistent/model", NULL, &e), AC_ENOINPUT);
    ck_assert_ptr_null(m.priv);
}
END_TEST

/* ac_model_run_from: the stream entering block `from`, advanced to block l,
 * is ac_model_run's to the bit, for every 0 <= from <= l <= layers, on the
 * token families of tests/models/ with and without padding; and refused
 * when from > l or R has the wrong shape (R freed). */
START_TEST(test_model_run_from)
{
    static const char *const names[] = {"gpt2", "nanogpt", "bert", "roberta", "distilbert",
                                        "llama", "mistral", "qwen2"};
    int32_t ids[6] = {3, 5, 7, 2, 9, 4};
    unsigned char keep[6] = {1, 1, 1, 1, 0, 0};
    char dir[700];
    ac_err e;
    size_t runs = 0;
    for (size_t f = 0; f < sizeof names / sizeof names[0]; f++) {
        ac_model m;
        if (!fixture(dir, sizeof dir, names[f])) {
            fprintf(stderr, "test_models: %s missing; skipped\n", dir);
            continue;
        }
        ck_assert_int_eq(ac_model_open(&m, dir, NULL, &e), AC_OK);
        for (int pad = 0; pad < 2; pad++) {
            ac_model_input in = {6, ids, NULL, pad ? keep : NULL, NULL};
            for (size_t l = 0; l <= m.layers; l++) {
                ac_mat want;
                ck_assert_int_eq(ac_model_run(&want, &m, l, &in, &e), AC_OK);
                for (size_t from = 0; from <= l; from++) {
                    ac_mat R;
                    ck_assert_int_eq(ac_model_run(&R, &m, from, &in, &e), AC_OK);
                    ck_assert_int_eq(ac_model_run_from(&R, &m, from, l, &in, &e), AC_OK);
                    ck_assert_msg(memcmp(R.data, want.data, 6 * m.d * sizeof(double)) == 0,
                                  "%s pad %d: blocks %zu .. %zu differ", names[f], pad, from, l);
                    ac_mat_free(&R);
                    runs++;
                }
                ac_mat_free(&want);
            }
            ac_mat R;
            ck_assert_int_eq(ac_model_run(&R, &m, 1, &in, &e), AC_OK);
            ck_assert_int_eq(ac_model_run_from(&R, &m, 1, 0, &in, &e), AC_EUSAGE);
            ck_assert_ptr_null(R.data);
            ck_assert_int_eq(ac_model_run(&R, &m, 0, &in, &e), AC_OK);
            R.rows = 5;
            ck_assert_int_eq(ac_model_run_from(&R, &m, 0, 1, &in, &e), AC_EUSAGE);
            ck_assert_ptr_null(R.data);
        }
        ac_model_close(&m);
    }
    ck_assert_uint_ge(runs, 8 * 2 * 6);
}
END_TEST

static void rm_rf(const char *d)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    if (system(cmd) != 0)
        fprintf(stderr, "test_models: could not remove %s\n", d);
}

int main(void)
{
    test_seed_init();
    const char *t = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/test_models.XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 99;
    }
    Suite *s = suite_create("models");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_sha256_fips);
    tcase_add_test(tc, test_utf8);
    tcase_add_test(tc, test_st_valid);
    tcase_add_test(tc, test_st_hostile_headers);
    tcase_add_test(tc, test_st_read_refusals);
    tcase_add_test(tc, test_st_index);
    tcase_add_test(tc, test_patterns_masks);
    tcase_add_test(tc, test_patterns_gqa);
    tcase_add_test(tc, test_patterns_rope);
    tcase_add_test(tc, test_head_t1);
    tcase_add_test(tc, test_describe);
    tcase_add_test(tc, test_model_api);
    tcase_add_test(tc, test_model_run_from);
    suite_add_tcase(s, tc);
    int rc = test_run_suite(s);
    rm_rf(g_dir);
    return rc;
}
