/* test_json.c — unit tests of the streaming JSON writer (json.h).
 *
 * Exact output for small documents, escaping and UTF-8 repair, number
 * formatting (round trip of 10^5 random doubles, shortest forms), misuse
 * and write-error detection, and validation of large random documents by
 * Python's json module when /usr/bin/python3 (or $PYTHON3) is available.
 * Random inputs use a fixed seed unless ATTNCHECK_TEST_SEED is set; failure
 * messages print the seed.  To exercise a locale whose decimal point is a
 * comma, set ATTNCHECK_TEST_COMMA_LOCALE (e.g. de_DE.UTF-8; default: try
 * de_DE.UTF-8, fr_FR.UTF-8 and skip if none is installed).
 */
#include <config.h>

#include <check.h>
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attncheck/common.h"
#include "attncheck/json.h"
#include "testutil.h"

static uint64_t g_seed = UINT64_C(20240522);

#define SEEDFMT " [seed %" PRIu64 "; rerun with ATTNCHECK_TEST_SEED=%" PRIu64 "]"
#define CHECKF(cond, fmt, ...) \
    ck_assert_msg((cond), fmt SEEDFMT, __VA_ARGS__, g_seed, g_seed)

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* ---- capture output in memory ------------------------------------------- */

typedef struct {
    char *buf;
    size_t len;
    FILE *fp;
    ac_json *j;
} cap;

static void cap_open(cap *c, int indent)
{
    c->buf = NULL;
    c->len = 0;
    c->fp = open_memstream(&c->buf, &c->len);
    ck_assert_msg(c->fp != NULL, "open_memstream failed");
    c->j = ac_json_new(c->fp, indent);
    ck_assert_msg(c->j != NULL, "ac_json_new failed");
}

/* Returns the status of the writer; the text is in c->buf (free it). */
static int cap_close(cap *c)
{
    const int st = ac_json_error(c->j);
    ac_json_free(c->j);
    fclose(c->fp);
    return st;
}

#define EXPECT_TEXT(c, expected)                                                   \
    ck_assert_msg(strcmp((c)->buf, (expected)) == 0, "got\n%s\nexpected\n%s", (c)->buf, \
                  (expected))

/* JSON number grammar (RFC 8259 section 6). */
static int is_json_number(const char *s)
{
    if (*s == '-')
        s++;
    if (*s == '0')
        s++;
    else if (*s >= '1' && *s <= '9')
        while (*s >= '0' && *s <= '9')
            s++;
    else
        return 0;
    if (*s == '.') {
        s++;
        if (!(*s >= '0' && *s <= '9'))
            return 0;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!(*s >= '0' && *s <= '9'))
            return 0;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return *s == '\0';
}

/* Significant digits of a formatted number: from the first to the last
 * nonzero digit of the mantissa. */
static int sig_digits(const char *s)
{
    int n = 0, first = -1, last = -1;
    for (; *s && *s != 'e'; s++) {
        if (*s < '0' || *s > '9')
            continue;
        if (*s != '0') {
            if (first < 0)
                first = n;
            last = n;
        }
        n++;
    }
    return first < 0 ? 0 : last - first + 1;
}

/* ---- exact small documents ---------------------------------------------- */

static void small_doc(ac_json *j)
{
    ac_json_begin_object(j);
    ac_json_kv_int(j, "a", 1);
    ac_json_key(j, "b");
    ac_json_begin_array(j);
    ac_json_int(j, 1);
    ac_json_number(j, 2.5);
    ac_json_string(j, "x");
    ac_json_bool(j, 1);
    ac_json_bool(j, 0);
    ac_json_null(j);
    ac_json_end_array(j);
    ac_json_key(j, "c");
    ac_json_begin_object(j);
    ac_json_end_object(j);
    ac_json_key(j, "d");
    ac_json_begin_array(j);
    ac_json_end_array(j);
    ac_json_key(j, "e");
    ac_json_begin_object(j);
    ac_json_kv_string(j, "f", NULL);
    ac_json_kv_number(j, "g", -0.125);
    ac_json_kv_bool(j, "h", 7);
    ac_json_key(j, "i");
    ac_json_begin_array(j);
    ac_json_begin_array(j);
    ac_json_end_array(j);
    ac_json_end_array(j);
    ac_json_end_object(j);
    ac_json_end_object(j);
}

START_TEST(test_compact_exact)
{
    cap c;
    cap_open(&c, 0);
    small_doc(c.j);
    ck_assert_int_eq(cap_close(&c), AC_OK);
    EXPECT_TEXT(&c, "{\"a\":1,\"b\":[1,2.5,\"x\",true,false,null],\"c\":{},\"d\":[],"
                    "\"e\":{\"f\":null,\"g\":-0.125,\"h\":true,\"i\":[[]]}}\n");
    free(c.buf);

    /* Scalars at top level. */
    cap_open(&c, 0);
    ac_json_int(c.j, LLONG_MIN);
    ck_assert_int_eq(cap_close(&c), AC_OK);
    EXPECT_TEXT(&c, "-9223372036854775808\n");
    free(c.buf);
    cap_open(&c, 4);
    ac_json_string(c.j, "");
    ck_assert_int_eq(cap_close(&c), AC_OK);
    EXPECT_TEXT(&c, "\"\"\n");
    free(c.buf);
}
END_TEST

START_TEST(test_pretty_exact)
{
    cap c;
    cap_open(&c, 2);
    small_doc(c.j);
    ck_assert_int_eq(cap_close(&c), AC_OK);
    EXPECT_TEXT(&c, "{\n"
                    "  \"a\": 1,\n"
                    "  \"b\": [\n"
                    "    1,\n"
                    "    2.5,\n"
                    "    \"x\",\n"
                    "    true,\n"
                    "    false,\n"
                    "    null\n"
                    "  ],\n"
                    "  \"c\": {},\n"
                    "  \"d\": [],\n"
                    "  \"e\": {\n"
                    "    \"f\": null,\n"
                    "    \"g\": -0.125,\n"
                    "    \"h\": true,\n"
                    "    \"i\": [\n"
                    "      []\n"
                    "    ]\n"
                    "  }\n"
                    "}\n");
    free(c.buf);

    /* Large indents are capped at 16; negative means one line. */
    cap_open(&c, 100);
    ac_json_begin_array(c.j);
    ac_json_int(c.j, 1);
    ac_json_end_array(c.j);
    ck_assert_int_eq(cap_close(&c), AC_OK);
    EXPECT_TEXT(&c, "[\n                1\n]\n");
    free(c.buf);
    cap_open(&c, -3);
    ac_json_begin_array(c.j);
    ac_json_int(c.j, 1);
    ac_json_int(c.j, 2);
    ac_json_end_array(c.j);
    ck_assert_int_eq(cap_close(&c), AC_OK);
    EXPECT_TEXT(&c, "[1,2]\n");
    free(c.buf);
}
END_TEST

/* ---- strings ------------------------------------------------------------ */

static void check_string(const char *in, const char *expected_json)
{
    cap c;
    cap_open(&c, 0);
    ac_json_string(c.j, in);
    ck_assert_int_eq(cap_close(&c), AC_OK);
    char *want = malloc(strlen(expected_json) + 4);
    ck_assert_ptr_nonnull(want);
    sprintf(want, "\"%s\"\n", expected_json);
    ck_assert_msg(strcmp(c.buf, want) == 0, "string escaped as %s, expected %s", c.buf, want);
    free(want);
    free(c.buf);
}

START_TEST(test_escaping)
{
    check_string("plain", "plain");
    check_string("a\"b\\c/d", "a\\\"b\\\\c/d");
    check_string("\b\f\n\r\t", "\\b\\f\\n\\r\\t");
    check_string("\x01\x02\x1f x\x7f", "\\u0001\\u0002\\u001f x\x7f");
    /* Keys are escaped too. */
    cap c;
    cap_open(&c, 0);
    ac_json_begin_object(c.j);
    ac_json_kv_int(c.j, "k\"\n\x01", 1);
    ac_json_end_object(c.j);
    ck_assert_int_eq(cap_close(&c), AC_OK);
    EXPECT_TEXT(&c, "{\"k\\\"\\n\\u0001\":1}\n");
    free(c.buf);
}
END_TEST

#define FFFD "\xEF\xBF\xBD"

START_TEST(test_utf8)
{
    /* Valid UTF-8 passes through: 2-, 3-, 4-byte forms and the extremes. */
    check_string("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
    check_string("\xC2\x80\xDF\xBF\xE0\xA0\x80\xEF\xBF\xBF\xF0\x90\x80\x80\xF4\x8F\xBF\xBF",
                 "\xC2\x80\xDF\xBF\xE0\xA0\x80\xEF\xBF\xBF\xF0\x90\x80\x80\xF4\x8F\xBF\xBF");
    check_string("\xED\x9F\xBF\xEE\x80\x80", "\xED\x9F\xBF\xEE\x80\x80"); /* around surrogates */
    /* Ill-formed: one U+FFFD per maximal subpart. */
    check_string("\xFF", FFFD);
    check_string("\x80", FFFD);
    check_string("a\x80\x80z", "a" FFFD FFFD "z");
    check_string("\xC0\x80", FFFD FFFD);             /* overlong NUL */
    check_string("\xC1\xBF", FFFD FFFD);             /* overlong */
    check_string("\xE0\x9F\x80", FFFD FFFD FFFD);    /* overlong 3-byte */
    check_string("\xED\xA0\x80", FFFD FFFD FFFD);    /* surrogate U+D800 */
    check_string("\xF4\x90\x80\x80", FFFD FFFD FFFD FFFD); /* above U+10FFFF */
    check_string("\xF5\x80", FFFD FFFD);
    check_string("a\xE2\x82", "a" FFFD);             /* truncated at end */
    check_string("\xE2\x82\x41", FFFD "A");          /* truncated before ASCII */
    check_string("\xF0\x9F\x98x", FFFD "x");         /* truncated 4-byte */
    check_string("\xF0\x9F\x98\xE2\x82\xAC", FFFD "\xE2\x82\xAC");
    check_string("\xC3\"", FFFD "\\\"");
    check_string("\xE2\x82\n", FFFD "\\n");
}
END_TEST

/* ---- numbers ------------------------------------------------------------ */

static void check_fmt(double x, const char *want)
{
    char b[AC_FMT_DOUBLE_BUFSIZE];
    const int n = ac_fmt_double(b, sizeof b, x);
    ck_assert_msg(strcmp(b, want) == 0, "ac_fmt_double(%.17g) = \"%s\", expected \"%s\"", x, b, want);
    ck_assert_int_eq(n, (int)strlen(want));
}

START_TEST(test_numbers_exact)
{
    check_fmt(0.0, "0");
    check_fmt(-0.0, "-0");
    check_fmt(1.0, "1");
    check_fmt(100.0, "100");
    check_fmt(-2.5, "-2.5");
    check_fmt(0.1, "0.1");
    check_fmt(1.0 / 3.0, "0.3333333333333333");
    check_fmt(0.1 + 0.2, "0.30000000000000004");
    check_fmt(1.5e-7, "1.5e-07");
    check_fmt(1e300, "1e+300");
    check_fmt(9007199254740992.0, "9007199254740992");
    check_fmt(123456789012345680.0, "1.2345678901234568e+17");
    check_fmt(DBL_MAX, "1.7976931348623157e+308");
    check_fmt(DBL_MIN, "2.2250738585072014e-308");
    check_fmt(5e-324, "5e-324");
    check_fmt(-1e-310, "-1e-310");
    check_fmt(INFINITY, "inf");
    check_fmt(-INFINITY, "-inf");
    check_fmt(NAN, "nan");

    /* snprintf-like truncation. */
    char b[8];
    ck_assert_int_eq(ac_fmt_double(b, 4, 0.1 + 0.2), 19);
    ck_assert_str_eq(b, "0.3");
    ck_assert_int_eq(ac_fmt_double(NULL, 0, 1.0 / 3.0), 18);
    ck_assert_int_eq(ac_fmt_double(b, 1, 1.0), 1);
    ck_assert_str_eq(b, "");

    /* Non-finite values become strings in JSON. */
    cap c;
    cap_open(&c, 0);
    ac_json_begin_array(c.j);
    ac_json_number(c.j, INFINITY);
    ac_json_number(c.j, -INFINITY);
    ac_json_number(c.j, NAN);
    ac_json_number(c.j, 1e-5);
    ac_json_int(c.j, LLONG_MAX);
    ac_json_uint(c.j, UINT64_MAX);
    ac_json_uint(c.j, 0);
    ac_json_end_array(c.j);
    ck_assert_int_eq(cap_close(&c), AC_OK);
    EXPECT_TEXT(&c, "[null,null,null,1e-05,9223372036854775807,18446744073709551615,0]\n");
    free(c.buf);
}
END_TEST

START_TEST(test_roundtrip_random)
{
    uint64_t s = g_seed;
    const int n = 100000;
    int bad_rt = 0, bad_grammar = 0, bad_len = 0;
    double first_bad = 0;
    for (int i = 0; i < n; i++) {
        uint64_t bits;
        double x;
        do {
            bits = splitmix64(&s);
            memcpy(&x, &bits, sizeof x);
        } while (!isfinite(x));
        char b[AC_FMT_DOUBLE_BUFSIZE];
        const int len = ac_fmt_double(b, sizeof b, x);
        const double y = strtod(b, NULL);
        if (memcmp(&x, &y, sizeof x) != 0) {
            if (!bad_rt)
                first_bad = x;
            bad_rt++;
        }
        bad_grammar += !is_json_number(b);
        bad_len += len > 24 || len != (int)strlen(b);
    }
    CHECKF(bad_rt == 0, "%d of %d random doubles do not round-trip (first %a)", bad_rt, n, first_bad);
    CHECKF(bad_grammar == 0, "%d of %d formatted doubles are not JSON numbers", bad_grammar, n);
    CHECKF(bad_len == 0, "%d of %d formatted doubles have a wrong length", bad_len, n);

    /* Shortness: a decimal with d <= 15 significant digits comes back with
     * at most d digits (and is the same number). */
    int bad_short = 0;
    char worst[128] = "";
    for (int i = 0; i < 20000; i++) {
        const int d = 1 + (int)(splitmix64(&s) % 15);
        uint64_t p = 1;
        for (int k = 0; k < d; k++)
            p *= 10;
        const uint64_t m = splitmix64(&s) % p;
        const int e = (int)(splitmix64(&s) % 601) - 300;
        char in[64];
        snprintf(in, sizeof in, "%" PRIu64 "e%d", m, e);
        const double x = strtod(in, NULL);
        char b[AC_FMT_DOUBLE_BUFSIZE];
        ac_fmt_double(b, sizeof b, x);
        if (sig_digits(b) > d && x != 0) {
            if (!bad_short)
                snprintf(worst, sizeof worst, "%s -> %s", in, b);
            bad_short++;
        }
    }
    CHECKF(bad_short == 0, "%d short decimals formatted with extra digits (first %s)", bad_short, worst);
}
END_TEST

/* A locale whose decimal point is ',' must not leak into the output. */
START_TEST(test_locale)
{
    const char *env = getenv("ATTNCHECK_TEST_COMMA_LOCALE");
    const char *cands[] = {env, "de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8"};
    const char *got = NULL;
    for (size_t i = 0; i < sizeof cands / sizeof cands[0] && !got; i++)
        if (cands[i] && setlocale(LC_NUMERIC, cands[i]))
            got = cands[i];
    if (!got || strcmp(localeconv()->decimal_point, ".") == 0) {
        printf("test_json: no comma-decimal locale installed, locale test skipped\n");
        setlocale(LC_NUMERIC, "C");
        return;
    }
    char b[AC_FMT_DOUBLE_BUFSIZE];
    ac_fmt_double(b, sizeof b, 0.1 + 0.2);
    ck_assert_msg(strcmp(b, "0.30000000000000004") == 0, "in locale %s: %s", got, b);
    ac_fmt_double(b, sizeof b, -2.5e-300);
    ck_assert_msg(strcmp(b, "-2.5e-300") == 0, "in locale %s: %s", got, b);
    cap c;
    cap_open(&c, 0);
    ac_json_begin_array(c.j);
    ac_json_number(c.j, 1.25);
    ac_json_number(c.j, 1.0 / 3.0);
    ac_json_end_array(c.j);
    ck_assert_int_eq(cap_close(&c), AC_OK);
    EXPECT_TEXT(&c, "[1.25,0.3333333333333333]\n");
    free(c.buf);
    setlocale(LC_NUMERIC, "C");
}
END_TEST

/* ---- misuse and errors -------------------------------------------------- */

START_TEST(test_misuse)
{
    cap c;

    /* Value without a key in an object: nothing written, flagged. */
    cap_open(&c, 0);
    ac_json_begin_object(c.j);
    ac_json_number(c.j, 1.0);
    ac_json_string(c.j, "x");
    ac_json_end_object(c.j);
    ck_assert_int_eq(cap_close(&c), AC_EINTERNAL);
    EXPECT_TEXT(&c, "{}\n");
    free(c.buf);

    /* Key in an array; kv helper in an array writes nothing. */
    cap_open(&c, 0);
    ac_json_begin_array(c.j);
    ac_json_key(c.j, "a");
    ac_json_int(c.j, 1);
    ac_json_kv_int(c.j, "b", 2);
    ac_json_end_array(c.j);
    ck_assert_int_eq(cap_close(&c), AC_EINTERNAL);
    EXPECT_TEXT(&c, "[1]\n");
    free(c.buf);

    /* Mismatched end. */
    cap_open(&c, 0);
    ac_json_begin_object(c.j);
    ac_json_end_array(c.j);
    ac_json_end_object(c.j);
    ck_assert_int_eq(cap_close(&c), AC_EINTERNAL);
    EXPECT_TEXT(&c, "{}\n");
    free(c.buf);

    /* Two keys in a row; the second kv helper writes no value. */
    cap_open(&c, 0);
    ac_json_begin_object(c.j);
    ac_json_key(c.j, "a");
    ac_json_kv_int(c.j, "b", 2);
    ac_json_int(c.j, 1);
    ac_json_end_object(c.j);
    ck_assert_int_eq(cap_close(&c), AC_EINTERNAL);
    EXPECT_TEXT(&c, "{\"a\":1}\n");
    free(c.buf);

    /* Key followed by end. */
    cap_open(&c, 0);
    ac_json_begin_object(c.j);
    ac_json_key(c.j, "a");
    ac_json_end_object(c.j);
    ck_assert_int_eq(ac_json_error(c.j), AC_EINTERNAL);
    ac_json_null(c.j);
    ac_json_end_object(c.j);
    ck_assert_int_eq(cap_close(&c), AC_EINTERNAL); /* sticky */
    EXPECT_TEXT(&c, "{\"a\":null}\n");
    free(c.buf);

    /* NULL key. */
    cap_open(&c, 0);
    ac_json_begin_object(c.j);
    ac_json_key(c.j, NULL);
    ac_json_end_object(c.j);
    ck_assert_int_eq(cap_close(&c), AC_EINTERNAL);
    free(c.buf);

    /* Second top-level value; end at depth 0. */
    cap_open(&c, 0);
    ac_json_int(c.j, 1);
    ac_json_int(c.j, 2);
    ac_json_end_array(c.j);
    ck_assert_int_eq(cap_close(&c), AC_EINTERNAL);
    EXPECT_TEXT(&c, "1\n");
    free(c.buf);

    /* Incomplete documents are reported, but not sticky. */
    cap_open(&c, 0);
    ck_assert_int_eq(ac_json_error(c.j), AC_EINTERNAL); /* nothing yet */
    ac_json_begin_object(c.j);
    ac_json_key(c.j, "a");
    ck_assert_int_eq(ac_json_error(c.j), AC_EINTERNAL);
    ac_json_begin_array(c.j);
    ck_assert_int_eq(ac_json_error(c.j), AC_EINTERNAL);
    ac_json_end_array(c.j);
    ac_json_end_object(c.j);
    ck_assert_int_eq(cap_close(&c), AC_OK);
    EXPECT_TEXT(&c, "{\"a\":[]}\n");
    free(c.buf);

    /* NULL writer and NULL file. */
    ck_assert_ptr_null(ac_json_new(NULL, 0));
    ck_assert_int_eq(ac_json_error(NULL), AC_EINTERNAL);
    ac_json_begin_object(NULL);
    ac_json_end_object(NULL);
    ac_json_begin_array(NULL);
    ac_json_end_array(NULL);
    ac_json_key(NULL, "a");
    ac_json_string(NULL, "a");
    ac_json_number(NULL, 1);
    ac_json_int(NULL, 1);
    ac_json_bool(NULL, 1);
    ac_json_null(NULL);
    ac_json_kv_string(NULL, "a", "b");
    ac_json_kv_number(NULL, "a", 1);
    ac_json_kv_int(NULL, "a", 1);
    ac_json_kv_bool(NULL, "a", 1);
    ac_json_free(NULL);
}
END_TEST

START_TEST(test_depth)
{
    cap c;
    cap_open(&c, 0);
    for (int i = 0; i < AC_JSON_MAX_DEPTH; i++)
        ac_json_begin_array(c.j);
    for (int i = 0; i < AC_JSON_MAX_DEPTH; i++)
        ac_json_end_array(c.j);
    ck_assert_int_eq(cap_close(&c), AC_OK);
    ck_assert_uint_eq(strlen(c.buf), 2 * AC_JSON_MAX_DEPTH + 1);
    free(c.buf);

    cap_open(&c, 1);
    for (int i = 0; i < AC_JSON_MAX_DEPTH; i++) {
        ac_json_begin_object(c.j);
        ac_json_key(c.j, "k");
    }
    ac_json_begin_object(c.j); /* one too many */
    ck_assert_int_eq(ac_json_error(c.j), AC_EINTERNAL);
    ac_json_null(c.j);
    for (int i = 0; i < AC_JSON_MAX_DEPTH; i++)
        ac_json_end_object(c.j);
    ck_assert_int_eq(cap_close(&c), AC_EINTERNAL);
    free(c.buf);
}
END_TEST

START_TEST(test_write_error)
{
    FILE *fp = fopen("/dev/full", "w");
    if (!fp) {
        printf("test_json: /dev/full not available, write-error test skipped\n");
        return;
    }
    /* Unbuffered: the first write fails. */
    setvbuf(fp, NULL, _IONBF, 0);
    ac_json *j = ac_json_new(fp, 0);
    ac_json_begin_array(j);
    ac_json_int(j, 1);
    ac_json_end_array(j);
    ck_assert_int_eq(ac_json_error(j), AC_ECANTCREAT);
    ac_json_free(j);
    fclose(fp);

    /* Buffered: the failure shows after fflush through ferror(fp). */
    fp = fopen("/dev/full", "w");
    ck_assert_ptr_nonnull(fp);
    j = ac_json_new(fp, 2);
    ac_json_begin_object(j);
    ac_json_kv_string(j, "a", "b");
    ac_json_end_object(j);
    ck_assert_int_eq(ac_json_error(j), AC_OK);
    ck_assert_int_ne(fflush(fp), 0);
    ck_assert_int_eq(ac_json_error(j), AC_ECANTCREAT);
    ac_json_free(j);
    fclose(fp);
}
END_TEST

/* ---- random documents validated by Python ------------------------------- */

/* Emit the same random document to every writer in w[0..nw-1]. */
typedef struct {
    ac_json *w[2];
    uint64_t s;
    int floats; /* include doubles */
} gen;

static void gen_string(gen *g, char *out, size_t cap_)
{
    const size_t len = splitmix64(&g->s) % (cap_ < 13 ? cap_ : 13);
    for (size_t i = 0; i < len; i++) {
        const uint64_t r = splitmix64(&g->s);
        /* Mostly ASCII, some controls, some high bytes (often ill-formed). */
        unsigned c;
        switch (r % 4) {
        case 0: c = 1 + (unsigned)((r >> 8) % 31); break;
        case 1: c = 0x80 + (unsigned)((r >> 8) % 128); break;
        default: c = 32 + (unsigned)((r >> 8) % 95);
        }
        out[i] = (char)c;
    }
    out[len] = '\0';
}

static void gen_value(gen *g, int depth)
{
    const uint64_t r = splitmix64(&g->s);
    const int kind = depth >= 6 ? (int)(r % 6) : (int)(r % 8);
    char str[16];
    switch (kind) {
    case 0: {
        const long long v = (long long)splitmix64(&g->s);
        for (int k = 0; k < 2; k++)
            ac_json_int(g->w[k], v);
        break;
    }
    case 1:
        gen_string(g, str, sizeof str);
        for (int k = 0; k < 2; k++)
            ac_json_string(g->w[k], str);
        break;
    case 2:
        for (int k = 0; k < 2; k++)
            ac_json_bool(g->w[k], (int)(r >> 8) & 1);
        break;
    case 3:
        for (int k = 0; k < 2; k++)
            ac_json_null(g->w[k]);
        break;
    case 4:
    case 5: {
        double x = 0;
        if (g->floats) {
            uint64_t bits = splitmix64(&g->s);
            memcpy(&x, &bits, sizeof x); /* includes inf/nan -> null */
        }
        for (int k = 0; k < 2; k++) {
            if (g->floats)
                ac_json_number(g->w[k], x);
            else
                ac_json_string(g->w[k], "no float");
        }
        break;
    }
    case 6: {
        const int n = (int)(splitmix64(&g->s) % 6);
        for (int k = 0; k < 2; k++)
            ac_json_begin_array(g->w[k]);
        for (int i = 0; i < n; i++)
            gen_value(g, depth + 1);
        for (int k = 0; k < 2; k++)
            ac_json_end_array(g->w[k]);
        break;
    }
    default: {
        const int n = (int)(splitmix64(&g->s) % 6);
        for (int k = 0; k < 2; k++)
            ac_json_begin_object(g->w[k]);
        for (int i = 0; i < n; i++) {
            char key[32];
            gen_string(g, str, sizeof str);
            snprintf(key, sizeof key, "%d%s", i, str); /* unique per object */
            for (int k = 0; k < 2; k++)
                ac_json_key(g->w[k], key);
            gen_value(g, depth + 1);
        }
        for (int k = 0; k < 2; k++)
            ac_json_end_object(g->w[k]);
    }
    }
}

static const char *python3_path(void)
{
    const char *p = getenv("PYTHON3");
    if (p && *p && access(p, X_OK) == 0)
        return p;
    return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : NULL;
}

/* Python check: both files parse (strict UTF-8), have equal contents, and
 * the pretty file has exactly json.dumps(indent=2) layout unless it has
 * floats (Python writes 1.0 where we write 1). */
static const char py_check[] =
    "import json,sys\n"
    "a=json.load(open(sys.argv[1],encoding='utf-8'))\n"
    "t=open(sys.argv[2],encoding='utf-8').read()\n"
    "b=json.loads(t)\n"
    "assert a==b, 'compact and pretty documents differ'\n"
    "if sys.argv[3]=='layout':\n"
    "    assert t==json.dumps(b,indent=2,ensure_ascii=False)+'\\n', 'layout differs from Python'\n";

START_TEST(test_python_validate)
{
    const char *py = python3_path();
    if (!py) {
        printf("test_json: python3 not found, Python validation skipped\n");
        return;
    }
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    for (int doc = 0; doc < 40; doc++) {
        char f1[512], f2[512], f3[512];
        snprintf(f1, sizeof f1, "%s/test_json_c_XXXXXX", tmp);
        snprintf(f2, sizeof f2, "%s/test_json_p_XXXXXX", tmp);
        snprintf(f3, sizeof f3, "%s/test_json_s_XXXXXX", tmp);
        const int d1 = mkstemp(f1), d2 = mkstemp(f2), d3 = mkstemp(f3);
        ck_assert_msg(d1 >= 0 && d2 >= 0 && d3 >= 0, "mkstemp in %s failed", tmp);
        FILE *fp1 = fdopen(d1, "w"), *fp2 = fdopen(d2, "w"), *fp3 = fdopen(d3, "w");
        ck_assert_msg(fp1 && fp2 && fp3, "fdopen failed");
        fputs(py_check, fp3);
        fclose(fp3);

        gen g;
        g.w[0] = ac_json_new(fp1, 0);
        g.w[1] = ac_json_new(fp2, 2);
        g.s = g_seed + (uint64_t)doc * 1000003u;
        g.floats = doc % 2;
        /* Top level: an object or array so that documents are large. */
        for (int k = 0; k < 2; k++)
            ac_json_begin_object(g.w[k]);
        for (int i = 0; i < 8; i++) {
            char key[16];
            snprintf(key, sizeof key, "m%d", i);
            for (int k = 0; k < 2; k++)
                ac_json_key(g.w[k], key);
            gen_value(&g, 1);
        }
        for (int k = 0; k < 2; k++)
            ac_json_end_object(g.w[k]);
        for (int k = 0; k < 2; k++) {
            CHECKF(ac_json_error(g.w[k]) == AC_OK, "document %d writer %d in error", doc, k);
            ac_json_free(g.w[k]);
        }
        ck_assert_int_eq(fclose(fp1), 0);
        ck_assert_int_eq(fclose(fp2), 0);

        char cmd[2400];
        snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' '%s' %s", py, f3, f1, f2,
                 g.floats ? "nolayout" : "layout");
        const int st = system(cmd);
        CHECKF(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
               "Python rejected document %d (files kept: %s %s)", doc, f1, f2);
        unlink(f1);
        unlink(f2);
        unlink(f3);
    }
}
END_TEST

static Suite *json_suite(void)
{
    Suite *s = suite_create("json");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_compact_exact);
    tcase_add_test(tc, test_pretty_exact);
    tcase_add_test(tc, test_escaping);
    tcase_add_test(tc, test_utf8);
    tcase_add_test(tc, test_numbers_exact);
    tcase_add_test(tc, test_roundtrip_random);
    tcase_add_test(tc, test_locale);
    tcase_add_test(tc, test_misuse);
    tcase_add_test(tc, test_depth);
    tcase_add_test(tc, test_write_error);
    tcase_add_test(tc, test_python_validate);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!test_seed_from_env("test_json", &g_seed))
        return 2;
    test_seed_value = g_seed; /* printed by test_run_suite on failure */
    return test_run_suite(json_suite());
}
