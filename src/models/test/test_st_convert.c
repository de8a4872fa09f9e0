/* test_st_convert.c — the element conversions of safetensors data to
 * double (st_convert.c) against ldexp formulas: every F16 and BF16 bit
 * pattern, one at a time and in bulk from every start and alignment; F32's
 * classes (zeros, subnormals, normals, both signs) in bulk; the NaN/Inf
 * flag and its position at every lane of the vector loops, for F64, F32,
 * F16 and BF16.  (The readers and the families: test_models.c.)
 *
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

#include "attncheck/models.h"
#include "models/models_impl.h"
#include "testutil.h"

/* ---------------------------------------------------------------- conversions */

/* The value of 16-bit pattern h of a float with ebits exponent bits (bias
 * 2^(ebits-1) - 1) and 15 - ebits fraction bits, by ldexp: m 2^(1 - bias -
 * fb) for exponent field 0, (2^fb + m) 2^(E - bias - fb) otherwise; for the
 * all-ones exponent 0 and *kind the kind md_first_nonfinite gives (1 NaN,
 * 2 +Inf, 3 -Inf), else *kind = 0. */
static double half_want(unsigned h, int ebits, int *kind)
{
    int fb = 15 - ebits, bias = (1 << (ebits - 1)) - 1;
    unsigned emax = (1u << ebits) - 1;
    unsigned e = (h >> fb) & emax, m = h & ((1u << fb) - 1);
    if (e == emax) {
        *kind = m ? 1 : (h & 0x8000) ? 3 : 2;
        return 0;
    }
    *kind = 0;
    double want =
        e ? ldexp((double)((1u << fb) + m), (int)e - bias - fb) : ldexp((double)m, 1 - bias - fb);
    return (h & 0x8000) ? -want : want;
}

/* x is want, bit for bit (the sign of zero included). */
static int same(double x, double want)
{
    return x == want && !signbit(x) == !signbit(want);
}

/* Every pattern, one element at a time (the loops' scalar tails): the
 * value, or the flag and the kind of the non-finite ones. */
static void check_half(ac_st_dtype t, int ebits)
{
    for (unsigned h = 0; h < 65536; h++) {
        unsigned char b[2] = {(unsigned char)h, (unsigned char)(h >> 8)};
        double x;
        int bad = md_convert(&x, b, 1, t), kind, k2;
        double want = half_want(h, ebits, &kind);
        if (kind) {
            ck_assert_msg(bad == 1, "%s %04x not flagged", ac_st_dtype_name(t), h);
            ck_assert_uint_eq(md_first_nonfinite(b, 1, t, &k2), 0);
            ck_assert_int_eq(k2, kind);
            continue;
        }
        ck_assert_msg(bad == 0 && same(x, want), "%s %04x: %a, want %a", ac_st_dtype_name(t), h, x,
                      want);
    }
}

/* Every pattern in one call, from every start offset 0..40 (and one byte
 * off the elements' alignment), so that the vectorised loops' bodies, not
 * only their tails, convert each class: the finite ones (zeros,
 * subnormals, normals, both signs) exactly and unflagged; with the
 * all-ones exponents included the flag is raised and every finite entry
 * is still exact. */
static void check_half_bulk(ac_st_dtype t, int ebits)
{
    size_t n = 65536, nfin = 0;
    unsigned char *all = malloc(2 * n + 1), *fin = malloc(2 * n + 1);
    uint16_t *hfin = malloc(2 * n);
    double *out = malloc(8 * n), *want = malloc(8 * n);
    int *kind = malloc(sizeof *kind * n);
    ck_assert(all && fin && hfin && out && want && kind);
    for (unsigned h = 0; h < n; h++) {
        all[2 * h] = (unsigned char)h;
        all[2 * h + 1] = (unsigned char)(h >> 8);
        want[h] = half_want(h, ebits, &kind[h]);
        if (!kind[h])
            hfin[nfin++] = (uint16_t)h;
    }
    for (size_t i = 0; i < nfin; i++) {
        fin[2 * i] = (unsigned char)hfin[i];
        fin[2 * i + 1] = (unsigned char)(hfin[i] >> 8);
    }
    for (int mis = 0; mis < 2; mis++) {
        const unsigned char *a = all + mis, *f = fin + mis;
        if (mis) { /* the same patterns one byte off their alignment */
            memmove(all + 1, all, 2 * n);
            memmove(fin + 1, fin, 2 * nfin);
        }
        for (size_t s = 0; s <= 40; s++) {
            ck_assert_int_eq(md_convert(out, a + 2 * s, n - s, t), 1);
            for (size_t i = s; i < n; i++)
                if (!(kind[i] || same(out[i - s], want[i])))
                    ck_abort_msg("%s bulk from %zu (misaligned %d): %04zx gives %a, want %a",
                                 ac_st_dtype_name(t), s, mis, i, out[i - s], want[i]);
            ck_assert_int_eq(md_convert(out, f + 2 * s, nfin - s, t), 0);
            for (size_t i = s; i < nfin; i++)
                if (!same(out[i - s], want[hfin[i]]))
                    ck_abort_msg("%s finite bulk from %zu (misaligned %d): %04x gives %a, want %a",
                                 ac_st_dtype_name(t), s, mis, hfin[i], out[i - s], want[hfin[i]]);
        }
    }
    free(all);
    free(fin);
    free(hfin);
    free(out);
    free(want);
    free(kind);
}

START_TEST(test_convert_f16_all)
{
    check_half(AC_ST_F16, 5); /* IEEE binary16 */
    check_half_bulk(AC_ST_F16, 5);
}
END_TEST

START_TEST(test_convert_bf16_all)
{
    check_half(AC_ST_BF16, 8); /* bfloat16: float32's upper half */
    check_half_bulk(AC_ST_BF16, 8);
}
END_TEST

START_TEST(test_convert_f32_f64)
{
    test_rng r;
    test_rng_init(&r, 11);
    for (int it = 0; it < 200000; it++) {
        uint32_t u = (uint32_t)test_rng_u64(&r);
        if (it % 4 == 0)
            u &= 0x807fffffu; /* subnormals and zeros */
        unsigned char b[4] = {(unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16),
                              (unsigned char)(u >> 24)};
        double x;
        int bad = md_convert(&x, b, 1, AC_ST_F32);
        unsigned e = (u >> 23) & 255, m = u & 0x7fffff;
        if (e == 255) {
            ck_assert(bad == 1);
            continue;
        }
        double want = e ? ldexp(8388608.0 + m, (int)e - 150) : ldexp((double)m, -149);
        if (u >> 31)
            want = -want;
        if (!(bad == 0 && x == want && !signbit(x) == !signbit(want)))
            ck_abort_msg("F32 %08x", u);
        uint64_t v = test_rng_u64(&r);
        unsigned char c[8];
        for (int i = 0; i < 8; i++)
            c[i] = (unsigned char)(v >> (8 * i));
        bad = md_convert(&x, c, 1, AC_ST_F64);
        uint64_t back;
        memcpy(&back, &x, 8);
        ck_assert(bad == (((v >> 52) & 0x7ff) == 0x7ff));
        if (!bad)
            ck_assert(back == v);
    }
    /* the flag over a long vector: one NaN at the end */
    float f[1001];
    for (int i = 0; i < 1001; i++)
        f[i] = (float)i;
    f[1000] = NAN;
    double out[1001];
    ck_assert_int_eq(md_convert(out, (const unsigned char *)f, 1001, AC_ST_F32), 1);
    int kind;
    ck_assert_uint_eq(md_first_nonfinite((const unsigned char *)f, 1001, AC_ST_F32, &kind), 1000);
    ck_assert_int_eq(kind, 1);
    ck_assert_int_eq(md_convert(out, (const unsigned char *)f, 1000, AC_ST_F32), 0);
    ck_assert_int_eq(md_convert(out, (const unsigned char *)f, 1, AC_ST_I8), -1);
}
END_TEST

/* The value of the element of type t at b by ldexp (F64: its bits), or 0
 * and *kind as half_want's for NaN and Inf. */
static double elem_want(const unsigned char *b, ac_st_dtype t, int *kind)
{
    uint64_t u = 0;
    unsigned bytes = ac_st_dtype_bits(t) / 8;
    for (unsigned i = 0; i < bytes; i++)
        u |= (uint64_t)b[i] << (8 * i);
    if (t == AC_ST_F16)
        return half_want((unsigned)u, 5, kind);
    if (t == AC_ST_BF16)
        return half_want((unsigned)u, 8, kind);
    if (t == AC_ST_F32) {
        unsigned e = (unsigned)(u >> 23) & 255, m = (unsigned)u & 0x7fffff;
        *kind = e < 255 ? 0 : m ? 1 : (u >> 31) ? 3 : 2;
        double x = e ? ldexp(8388608.0 + m, (int)e - 150) : ldexp((double)m, -149);
        return e == 255 ? 0 : (u >> 31) ? -x : x;
    }
    unsigned e = (unsigned)(u >> 52) & 0x7ff;
    *kind = e < 0x7ff ? 0 : (u & 0xfffffffffffffull) ? 1 : (u >> 63) ? 3 : 2;
    double x;
    memcpy(&x, &u, 8);
    return e == 0x7ff ? 0 : x;
}

static void put_elem(unsigned char *b, uint64_t u, unsigned bytes)
{
    for (unsigned i = 0; i < bytes; i++)
        b[i] = (unsigned char)(u >> (8 * i));
}

/* F32's classes in bulk (zeros, the least and greatest subnormals, random
 * subnormals, the least and greatest normals, random normals, both signs)
 * from every start 0..40 and one byte off alignment: exact and unflagged;
 * then each non-finite class (+-Inf, quiet, signalling and payload NaNs
 * of both signs) at every position of a vector of them, flagged and
 * located with its kind, the finite entries still exact. */
START_TEST(test_convert_f32_classes)
{
    test_rng r;
    test_rng_init(&r, 12);
    enum { N = 4096 };
    static const uint32_t fixed[] = {0,          1,          2,          0x7fffff,
                                     0x400000,   0x800000,   0x800001,   0x7f7fffff,
                                     0x3f800000, 0x00ffffff, 0x33800000, 0x7effffff};
    static const uint32_t nonfinite[] = {0x7f800000, 0x7fc00000, 0x7f800001, 0x7fffffff,
                                         0x7fa00000};
    unsigned char *b = malloc(4 * N + 1);
    double *out = malloc(8 * N);
    ck_assert(b && out);
    for (size_t i = 0; i < N; i++) {
        uint32_t u;
        if (i < 2 * (sizeof fixed / sizeof *fixed))
            u = fixed[i / 2];
        else if (i % 3 == 0)
            u = (uint32_t)test_rng_u64(&r) & 0x7fffff; /* subnormal or zero */
        else
            u = (uint32_t)(test_rng_u64(&r) % 0x7f000000u) + 0x800000u; /* normal */
        put_elem(b + 4 * i, u | (uint32_t)(i & 1) << 31, 4);
    }
    for (int mis = 0; mis < 2; mis++) {
        if (mis)
            memmove(b + 1, b, 4 * N);
        for (size_t s = 0; s <= 40; s++) {
            ck_assert_int_eq(md_convert(out, b + mis + 4 * s, N - s, AC_ST_F32), 0);
            for (size_t i = s; i < N; i++) {
                int kind;
                double want = elem_want(b + mis + 4 * i, AC_ST_F32, &kind);
                if (!(!kind && same(out[i - s], want)))
                    ck_abort_msg("F32 bulk from %zu (byte offset %d) entry %zu: %a, want %a", s,
                                 mis, i, out[i - s], want);
            }
        }
        if (mis)
            memmove(b, b + 1, 4 * N);
    }
    for (size_t k = 0; k < 2 * (sizeof nonfinite / sizeof *nonfinite); k++) {
        uint32_t bad = nonfinite[k / 2] | (uint32_t)(k & 1) << 31;
        for (size_t pos = 0; pos < 200; pos++) {
            unsigned char save[4];
            memcpy(save, b + 4 * pos, 4);
            put_elem(b + 4 * pos, bad, 4);
            int kind, want_kind;
            ck_assert_int_eq(md_convert(out, b, 200, AC_ST_F32), 1);
            elem_want(b + 4 * pos, AC_ST_F32, &want_kind);
            ck_assert_uint_eq(md_first_nonfinite(b, 200, AC_ST_F32, &kind), pos);
            ck_assert_int_eq(kind, want_kind);
            for (size_t i = 0; i < 200; i++)
                if (!(i == pos || same(out[i], elem_want(b + 4 * i, AC_ST_F32, &kind))))
                    ck_abort_msg("F32 %08x at %zu: entry %zu wrong", bad, pos, i);
            memcpy(b + 4 * pos, save, 4);
        }
    }
    free(b);
    free(out);
}
END_TEST

/* For each dtype and every length 1..72 and 257: one NaN, +Inf or -Inf at
 * every position of finite random elements (subnormals included) raises
 * the flag of the whole vector, md_first_nonfinite names that position and
 * kind (also with a second non-finite element later), and every other
 * entry is exact; the clean vector converts unflagged.  The flag is the OR
 * over the vector loops' lanes and their tails: this reaches every lane. */
START_TEST(test_convert_flag_positions)
{
    static const ac_st_dtype ts[] = {AC_ST_F64, AC_ST_F32, AC_ST_F16, AC_ST_BF16};
    test_rng r;
    test_rng_init(&r, 13);
    enum { NMAX = 257 };
    unsigned char b[8 * NMAX];
    double out[NMAX];
    for (size_t k = 0; k < sizeof ts / sizeof *ts; k++) {
        ac_st_dtype t = ts[k];
        unsigned bytes = ac_st_dtype_bits(t) / 8;
        uint64_t expo = t == AC_ST_F64   ? 0x7ff0000000000000ull
                        : t == AC_ST_F32 ? 0x7f800000u
                        : t == AC_ST_F16 ? 0x7c00u
                                         : 0x7f80u;
        uint64_t sign = 1ull << (8 * bytes - 1);
        uint64_t bads[3] = {expo | (expo >> 1 & ~expo) | 1, expo, expo | sign}; /* NaN, +-Inf */
        for (size_t n = 1; n <= NMAX; n = n < 72     ? n + 1
                                          : n < NMAX ? NMAX
                                                     : NMAX + 1) { /* 1..72, NMAX */
            for (size_t i = 0; i < n; i++) {
                uint64_t u = test_rng_u64(&r);
                if (i % 4 == 0)
                    u &= ~expo; /* zero or subnormal */
                else if ((u & expo) == expo)
                    u ^= expo >> 1 & expo; /* finite: one exponent bit cleared */
                put_elem(b + bytes * i, u, bytes);
            }
            ck_assert_int_eq(md_convert(out, b, n, t), 0);
            for (size_t pos = 0; pos < n; pos++) {
                for (int c = 0; c < 3; c++) {
                    unsigned char save[8], save2[8];
                    memcpy(save, b + bytes * pos, bytes);
                    put_elem(b + bytes * pos, bads[c], bytes);
                    size_t pos2 = pos + 1 + (pos + 7) % 5;
                    if (pos2 < n) { /* a second one after it */
                        memcpy(save2, b + bytes * pos2, bytes);
                        put_elem(b + bytes * pos2, bads[(c + 1) % 3], bytes);
                    }
                    int kind;
                    int flag = md_convert(out, b, n, t);
                    size_t at = md_first_nonfinite(b, n, t, &kind);
                    if (flag != 1 || at != pos || kind != c + 1)
                        ck_abort_msg("%s n %zu: kind %d at %zu: flag %d, found kind %d at %zu",
                                     ac_st_dtype_name(t), n, c + 1, pos, flag, kind, at);
                    for (size_t i = 0; i < n; i++) {
                        int ki;
                        double want = elem_want(b + bytes * i, t, &ki);
                        if (!(ki || same(out[i], want)))
                            ck_abort_msg("%s n %zu: entry %zu %a, want %a", ac_st_dtype_name(t), n,
                                         i, out[i], want);
                    }
                    memcpy(b + bytes * pos, save, bytes);
                    if (pos2 < n)
                        memcpy(b + bytes * pos2, save2, bytes);
                }
            }
        }
    }
}
END_TEST

int main(void)
{
    test_seed_init();
    TCase *tc;
    Suite *s = test_suite_one("st_convert", &tc);
    tcase_add_test(tc, test_convert_f16_all);
    tcase_add_test(tc, test_convert_bf16_all);
    tcase_add_test(tc, test_convert_f32_f64);
    tcase_add_test(tc, test_convert_f32_classes);
    tcase_add_test(tc, test_convert_flag_positions);
    return test_run_suite(s);
}
