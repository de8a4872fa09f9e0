/* test_rng_block.c — the block normals of rng.h (ac_rng_normal_block):
 * their ARS-7 words against Random123 and between the fast and portable
 * paths, and the fast block against its reference twin.  Their statistical
 * tests (moments, KS, exact tail, chi-square) are in test_rng.c, which runs
 * every normal test on both samplers. */
#include <config.h>

#include <check.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Random123's ARS (an independent implementation, Intel's AES intrinsics)
 * as an oracle of the block words: compiled for AES below, called only if
 * the CPU has it. */
#if defined(__x86_64__) && defined(__GNUC__)
#define TEST_R123_ARS 1
#define R123_USE_AES_NI 1
#pragma GCC push_options
#pragma GCC target("sse2,aes")
#include <Random123/ars.h>
static void r123_ars_block(uint64_t out[2], uint64_t seed, uint64_t a, uint64_t b, uint64_t q)
{
    ars4x32_key_t k = {{(uint32_t)seed, (uint32_t)(seed >> 32), (uint32_t)a, (uint32_t)(a >> 32)}};
    ars4x32_ctr_t c = {{(uint32_t)q, (uint32_t)(q >> 32), (uint32_t)b, (uint32_t)(b >> 32)}};
    ars4x32_ctr_t o = ars4x32_R(7, c, k);
    out[0] = o.v[0] | (uint64_t)o.v[1] << 32;
    out[1] = o.v[2] | (uint64_t)o.v[3] << 32;
}
#pragma GCC pop_options
#else
#define TEST_R123_ARS 0
#endif
#include "attncheck/rng.h"
#include "testutil.h"

static uint64_t g_seed = UINT64_C(20240521);

#define SEEDFMT " [seed %" PRIu64 "; rerun with ATTNCHECK_TEST_SEED=%" PRIu64 "]"
#define CHECKF(cond, fmt, ...) \
    ck_assert_msg((cond), fmt SEEDFMT, __VA_ARGS__, g_seed, g_seed)
#define CHECK(cond, msg) ck_assert_msg((cond), "%s" SEEDFMT, (msg), g_seed, g_seed)

static double *xmalloc_d(size_t n)
{
    double *p = malloc(n * sizeof *p);
    ck_assert_msg(p != NULL, "out of memory");
    return p;
}

/* ---- block normals: layout, oracles, reference twin ------------------------ */

START_TEST(test_block_words)
{
    /* fast words (VAES / AES-NI where the CPU has them) == portable AES,
     * at every offset and length around the 16-block VAES step */
    static const uint64_t pos0[] = {0, 1, 2, 31, 32, 33, UINT64_C(1) << 40, (UINT64_C(1) << 40) + 7};
    uint64_t a[300], b[300];
    int bad = 0;
    for (size_t k = 0; k < sizeof pos0 / sizeof pos0[0]; k++)
        for (size_t n = 0; n <= 300; n += (n < 70 ? 1 : 23)) {
            ac_rng_ars_words(a, n, g_seed, 5, 9, pos0[k]);
            ac_rng_ars_words_ref(b, n, g_seed, 5, 9, pos0[k]);
            bad += memcmp(a, b, n * sizeof *a) != 0;
            /* word p does not depend on the range asked */
            if (n > 3) {
                uint64_t one;
                ac_rng_ars_words(&one, 1, g_seed, 5, 9, pos0[k] + 3);
                bad += one != a[3];
            }
        }
    CHECKF(bad == 0, "ARS words: fast and portable differ in %d ranges (fast kind %d)", bad,
           ac_rng_ars_kind());
#if TEST_R123_ARS
    __builtin_cpu_init();
    if (__builtin_cpu_supports("aes")) {
        const uint64_t key[3][2] = {{0, 0}, {g_seed, 77}, {UINT64_MAX, UINT64_C(0x8000000000000001)}};
        for (int t = 0; t < 3; t++) {
            const uint64_t sb = t == 2 ? UINT64_MAX : (uint64_t)t * 12345;
            ac_rng_ars_words_ref(b, 200, key[t][0], key[t][1], sb, 0);
            for (uint64_t q = 0; q < 100; q++) {
                uint64_t o[2];
                r123_ars_block(o, key[t][0], key[t][1], sb, q);
                CHECKF(o[0] == b[2 * q] && o[1] == b[2 * q + 1],
                       "block %d: ARS word %" PRIu64 " differs from Random123 ars4x32_R(7)", t, 2 * q);
            }
        }
    }
#endif
}
END_TEST

START_TEST(test_block_twin)
{
    /* fast block == reference twin (portable AES, one entry at a time) for
     * edge lengths and offsets, and pieces == whole */
    const size_t nmax = 2100;
    double *x = xmalloc_d(nmax), *y = xmalloc_d(nmax);
    static const size_t len[] = {0, 1, 2, 3, 7, 255, 256, 257, 511, 1000, 2100};
    static const uint64_t pos0[] = {0, 1, 5, 256, UINT64_C(3) << 50};
    int bad = 0, slow = 0;
    for (size_t i = 0; i < sizeof len / sizeof len[0]; i++)
        for (size_t k = 0; k < sizeof pos0 / sizeof pos0[0]; k++) {
            ac_rng_normal_block(x, len[i], g_seed, 2, 3, pos0[k]);
            ac_rng_normal_block_ref(y, len[i], g_seed, 2, 3, pos0[k]);
            bad += memcmp(x, y, len[i] * sizeof *x) != 0;
        }
    CHECKF(bad == 0, "block normals: fast and reference differ in %d cases", bad);
    ac_rng_normal_block(x, nmax, g_seed, 4, 1, 0);
    for (size_t c = 0; c < nmax;) {
        size_t n = 1 + (c * 7919) % 301;
        if (c + n > nmax)
            n = nmax - c;
        ac_rng_normal_block(y + c, n, g_seed, 4, 1, c);
        c += n;
    }
    CHECK(memcmp(x, y, nmax * sizeof *x) == 0, "block normals drawn in pieces differ from the whole");
    /* about 1.5% of entries (some 30 here) take the slow path with their
     * auxiliary streams; the values beyond 2.5 show the range is covered */
    for (size_t i = 0; i < nmax; i++)
        slow += fabs(x[i]) > 2.5;
    CHECKF(slow > 5, "only %d large draws in %zu", slow, nmax);
    /* other streams differ */
    ac_rng_normal_block(y, 64, g_seed, 4, 2, 0);
    int same = 0;
    for (size_t i = 0; i < 64; i++)
        same += x[i] == y[i];
    CHECKF(same < 2, "streams (.., 4, 1) and (.., 4, 2) share %d of 64 values", same);
    free(x);
    free(y);
}
END_TEST

static Suite *rng_block_suite(void)
{
    Suite *s = suite_create("rng_block");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_block_words);
    tcase_add_test(tc, test_block_twin);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!test_seed_from_env("test_rng_block", &g_seed))
        return 2;
    test_seed_value = g_seed; /* printed by test_run_suite on failure */
    return test_run_suite(rng_block_suite());
}
