/* test_jsonparse.c — the JSON reader of checkpoint configurations
 * (io/jsonparse.h): a document with every kind of value (nested arrays and
 * objects, escapes and surrogate pairs, 2^64 - 1 read exactly as an
 * integer and as a double), typed lookups and their errors (a missing key
 * named in the message), and malformed documents (truncated, trailing
 * commas, bad numbers, bad escapes, lone surrogates, U+0000, control
 * characters, trailing data, non-string keys, nesting deeper than the
 * limit), each refused with its line and column and no tree. */
#include <config.h>

#include <stdint.h>
#include <string.h>

#include "io/jsonparse.h"
#include "testutil.h"

START_TEST(test_jsonparse)
{
    ac_jv *v;
    ac_err err;
    const char *doc = " {\"a\": [1, -2.5e3, true, false, null], \"s\": \"x\\u00e9\\ud83d\\ude00\\n\","
                      " \"big\": 18446744073709551615, \"o\": {}, \"e\": []} ";
    ck_assert(ac_jparse(&v, doc, strlen(doc), "t", &err) == AC_OK);
    const ac_jv *a = ac_jv_get(v, "a");
    ck_assert(a && a->type == AC_JV_ARRAY && a->n == 5);
    ck_assert(a->kids[2]->type == AC_JV_BOOL && a->kids[2]->b == 1);
    ck_assert(a->kids[4]->type == AC_JV_NULL);
    const char *s;
    ck_assert(ac_jv_get_string(v, "s", &s, "t", &err) == AC_OK);
    ck_assert_str_eq(s, "x\xc3\xa9\xf0\x9f\x98\x80\n");
    uint64_t u;
    ck_assert(ac_jv_get_u64(v, "big", &u, "t", &err) == AC_OK && u == UINT64_MAX);
    double d;
    ck_assert(ac_jv_get_double(v, "big", &d, "t", &err) == AC_OK);
    ck_assert_int_eq(ac_jv_get_double(v, "s", &d, "t", &err), AC_EDATA);
    ck_assert_int_eq(ac_jv_get_size(v, "nothing", &u, "t", &err), AC_EDATA);
    ck_assert(strstr(err.msg, "missing \"nothing\"") != NULL);
    ac_jv_free(v);
    static const char *bad[] = {"", "{", "[1,]", "{\"a\" 1}", "{\"a\":1,}", "01", "1.", "-",
                                "\"abc", "\"\\x\"", "\"\\ud800\"", "\"\\u0000\"", "tru", "[1] 2",
                                "\"a\tb\"", "{1: 2}", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                                "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
                                "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        v = NULL;
        ck_assert_msg(ac_jparse(&v, bad[i], strlen(bad[i]), "t", &err) == AC_EDATA,
                      "accepted '%s'", bad[i]);
        ck_assert(v == NULL);
        ck_assert(strncmp(err.msg, "t: line 1, column", 17) == 0);
    }
}
END_TEST

int main(void)
{
    test_seed_init();
    TCase *tc;
    Suite *s = test_suite_one("jsonparse", &tc);
    tcase_add_test(tc, test_jsonparse);
    return test_run_suite(s);
}
