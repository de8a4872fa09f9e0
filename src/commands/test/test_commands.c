/* test_commands.c — the option tables of the commands (attncheck/commands.h):
 * every command's table agrees with its request type (ac_command_validate),
 * and a table that stores a value in a field of another type is refused
 * before any request is made (the bug class of an int field read as a
 * pointer, which UBSan found once). */
#include <config.h>

#include <stddef.h>
#include <string.h>

#include "attncheck/commands.h"
#include "testutil.h"

typedef struct {
    int flag, have_name;
    size_t n, have_n_size;
    long threads;
    double tol;
    const char *name;
    ac_array mem;
    size_t range[2];
} toy_request;

#define F(f) AC_OPT_FIELD(toy_request, f)
#define S(f) AC_OPT_SET(toy_request, f)
#define A(f) AC_OPT_ARRAY_AT(toy_request, f)

static ac_command toy(const ac_opt *opts)
{
    ac_command c;
    memset(&c, 0, sizeof c);
    c.name = "toy";
    c.opts = opts;
    c.request_size = sizeof(toy_request);
    return c;
}

START_TEST(test_every_command_validates)
{
    size_t n = 0;
    for (size_t i = 0; ac_commands[i]; i++, n++) {
        ac_err err;
        ac_err_clear(&err);
        ck_assert_msg(ac_command_validate(ac_commands[i], &err) == AC_OK, "%s: %s",
                      ac_commands[i]->name, err.msg);
        /* and every option has its field's type recorded */
        for (const ac_opt *o = ac_commands[i]->opts; o->name; o++)
            ck_assert_msg(o->ctype != AC_OPT_T_UNKNOWN, "%s --%s", ac_commands[i]->name,
                          o->name);
    }
    ck_assert_uint_eq(n, 7); /* rep-theorem, separate, condition, merge, train, report, inspect */
}
END_TEST

START_TEST(test_good_toy)
{
    static const ac_opt opts[] = {
        {.name = "flag", .kind = AC_OPT_FLAG, F(flag), .set_offset = AC_OPT_NOSET},
        {.name = "n", .kind = AC_OPT_SIZE, F(n), .set_offset = AC_OPT_NOSET, .max = 9},
        {.name = "threads", .kind = AC_OPT_LONG, F(threads), .set_offset = AC_OPT_NOSET},
        {.name = "tol", .kind = AC_OPT_DOUBLE, F(tol), .set_offset = AC_OPT_NOSET, .max = 1},
        {.name = "name", .kind = AC_OPT_STRING, F(name), S(have_name), .flags = AC_OPTF_ARRAY,
         A(mem)},
        {.name = "range", .kind = AC_OPT_RANGE, F(range), .set_offset = AC_OPT_NOSET, .max = 9},
        {0},
    };
    ac_command c = toy(opts);
    ac_err err;
    ac_err_clear(&err);
    ck_assert_msg(ac_command_validate(&c, &err) == AC_OK, "%s", err.msg);
}
END_TEST

/* one bad option at a time, each refused with a message naming it */
START_TEST(test_bad_toys)
{
    static const ac_opt bad[][2] = {
        /* a string stored into an int */
        {{.name = "b0", .kind = AC_OPT_STRING, F(flag), .set_offset = AC_OPT_NOSET}},
        /* a size_t into a long */
        {{.name = "b1", .kind = AC_OPT_SIZE, F(threads), .set_offset = AC_OPT_NOSET}},
        /* a long into a size_t */
        {{.name = "b2", .kind = AC_OPT_LONG, F(n), .set_offset = AC_OPT_NOSET}},
        /* a flag into a double */
        {{.name = "b3", .kind = AC_OPT_FLAG, F(tol), .set_offset = AC_OPT_NOSET}},
        /* the type not recorded (a bare offset) */
        {{.name = "b4", .kind = AC_OPT_SIZE, .offset = offsetof(toy_request, n),
          .set_offset = AC_OPT_NOSET}},
        /* the given flag a size_t */
        {{.name = "b5", .kind = AC_OPT_SIZE, F(n), S(have_n_size)}},
        /* the array not an ac_array */
        {{.name = "b6", .kind = AC_OPT_STRING, F(name), .set_offset = AC_OPT_NOSET,
          .flags = AC_OPTF_ARRAY, A(range)}},
        /* a range into a size_t */
        {{.name = "b7", .kind = AC_OPT_RANGE, F(n), .set_offset = AC_OPT_NOSET}},
        /* a choice without its words */
        {{.name = "b8", .kind = AC_OPT_CHOICE, F(flag), .set_offset = AC_OPT_NOSET}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ac_command c = toy(bad[i]);
        ac_err err;
        ac_err_clear(&err);
        ck_assert_int_eq(ac_command_validate(&c, &err), AC_EINTERNAL);
        ck_assert_msg(strstr(err.msg, bad[i][0].name), "%zu: %s", i, err.msg);
    }
    /* two options of one name */
    static const ac_opt twice[] = {
        {.name = "n", .kind = AC_OPT_SIZE, F(n), .set_offset = AC_OPT_NOSET},
        {.name = "n", .kind = AC_OPT_SIZE, F(n), .set_offset = AC_OPT_NOSET},
        {0},
    };
    ac_command c = toy(twice);
    ac_err err;
    ac_err_clear(&err);
    ck_assert_int_eq(ac_command_validate(&c, &err), AC_EINTERNAL);
}
END_TEST

static Suite *commands_suite(void)
{
    TCase *tc;
    Suite *s = test_suite_one("commands", &tc);
    tcase_add_test(tc, test_every_command_validates);
    tcase_add_test(tc, test_good_toy);
    tcase_add_test(tc, test_bad_toys);
    return s;
}

int main(void)
{
    return test_run_suite(commands_suite());
}
