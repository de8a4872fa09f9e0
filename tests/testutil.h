/* testutil.h — shared helpers for attncheck's Check test programs.
 *
 * Randomised tests take their seed from the environment variable
 * ATTNCHECK_TEST_SEED (a fixed default otherwise) and print it with every
 * failure, so a failing case can be replayed exactly.
 */
#ifndef AC_TESTUTIL_H
#define AC_TESTUTIL_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t test_seed_value = 20261121u;

/* If ATTNCHECK_TEST_SEED is set, parse it into *seed and print it (prog
 * names the test).  Returns 0 if it is not an integer (the test should then
 * exit with status 2), 1 otherwise. */
static inline int test_seed_from_env(const char *prog, uint64_t *seed)
{
    const char *s = getenv("ATTNCHECK_TEST_SEED");
    if (!s || !*s)
        return 1;
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*end) {
        fprintf(stderr, "%s: ATTNCHECK_TEST_SEED=%s is not an integer\n", prog, s);
        return 0;
    }
    *seed = (uint64_t)v;
    printf("%s: ATTNCHECK_TEST_SEED=%llu\n", prog, v);
    return 1;
}

static inline void test_seed_init(void)
{
    if (!test_seed_from_env("test", &test_seed_value))
        exit(2);
}

/* splitmix64: a small, fast generator for test data (not the library RNG). */
typedef struct { uint64_t s; } test_rng;

static inline void test_rng_init(test_rng *r, uint64_t stream)
{
    r->s = test_seed_value * 0x9E3779B97F4A7C15ull + stream * 0xD1B54A32D192ED03ull + 1;
}

static inline uint64_t test_rng_u64(test_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* uniform in [0, 1) with 53 bits */
static inline double test_rng_unif(test_rng *r)
{
    return (double)(test_rng_u64(r) >> 11) * 0x1p-53;
}

/* uniform in [a, b) */
static inline double test_rng_range(test_rng *r, double a, double b)
{
    return a + (b - a) * test_rng_unif(r);
}

/* approximately standard normal (sum of uniforms is enough for test data) */
static inline double test_rng_gauss(test_rng *r)
{
    double s = 0;
    for (int i = 0; i < 12; i++)
        s += test_rng_unif(r);
    return s - 6.0;
}

/* n doubles set to 0 (at least one allocated), or the test fails */
static inline double *test_vec(size_t n)
{
    double *p = calloc(n ? n : 1, sizeof *p);
    ck_assert(p != NULL);
    return p;
}

/* x[0..n) = s times approximately standard normal numbers */
static inline void test_gauss(test_rng *r, double *x, size_t n, double s)
{
    for (size_t i = 0; i < n; i++)
        x[i] = s * test_rng_gauss(r);
}


/* No wall-clock limit on a test case.  Check kills a test that runs longer
 * than its case's timeout (4 s when none is set), so a correct test would
 * fail on a loaded or slow machine, or under the sanitizers: a test is
 * judged by its assertions, never by the machine's speed.  Every TCase of
 * the unit programs calls this; a test that hangs is stopped by whoever
 * runs the suite (Ctrl-C, or a CI job's own limit). */
static inline void test_no_timeout(TCase *tc)
{
    tcase_set_timeout(tc, 0);
}

/* A suite of one test case, "core", with no time limit: the shape of most
 * unit programs (add the tests to *tc, then test_run_suite). */
static inline Suite *test_suite_one(const char *name, TCase **tc)
{
    Suite *s = suite_create(name);
    *tc = tcase_create("core");
    test_no_timeout(*tc);
    suite_add_tcase(s, *tc);
    return s;
}

/* Run a suite; exit status 0 only if every test passed. */
static inline int test_run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (failed)
        fprintf(stderr, "failures with ATTNCHECK_TEST_SEED=%llu\n",
                (unsigned long long)test_seed_value);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
