/* test_verdict.c — the filtered-predicate engine, tested the way Arb tests
 * arb_mat_inv: on claims known to be false it never says PROVED; on claims
 * known to be true it says PROVED once the precision is high enough.
 *
 * The quantity is an ill-conditioned dot product (generated as in Ogita, Rump
 * & Oishi, "Accurate sum and dot product", SIAM J. Sci. Comput. 26 (2005),
 * Algorithm 6.1 in spirit): its exact value is known with MPFR at 2400 bits,
 * so the truth of every claim is known exactly, while double precision gets
 * the sign wrong.
 */
#include <config.h>

#include <float.h>
#include <math.h>
#include <mpfr.h>

#include "core/ac_arb.h"
#include "core/ball.h"
#include "attncheck/interval.h"
#include "attncheck/verdict.h"
#include "testutil.h"

#define NMAX 64

typedef struct {
    size_t n;
    double x[NMAX], y[NMAX];
    int stage0_calls, ball_calls;
} dot_ctx;

static int dot_stage0(void *vctx, double *lo, double *hi, ac_err *err)
{
    dot_ctx *c = vctx;
    double s = 0, a = 0;
    c->stage0_calls++;
    for (size_t i = 0; i < c->n; i++) {
        s += c->x[i] * c->y[i];
        a += fabs(c->x[i] * c->y[i]);
    }
    /* |fl(x.y) - x.y| <= gamma_n |x|.|y| (+ n eta/2 for underflow) and
     * |x|.|y| <= a / (1 - gamma_n) */
    double g = ac_gamma_up((double)c->n + 1);
    double e = ac_add_up(ac_mul_up(ac_div_up(g, ac_sub_dn(1, g)), a), (double)c->n * AC_ETA);
    *lo = ac_sub_dn(s, e);
    *hi = ac_add_up(s, e);
    return AC_OK;
}

static int dot_ball(void *vctx, long prec, mpfr_t lo, mpfr_t hi, ac_err *err)
{
    dot_ctx *c = vctx;
    c->ball_calls++;
    arb_ptr xv = _arb_vec_init((slong)c->n), yv = _arb_vec_init((slong)c->n);
    arb_t s;
    arb_init(s);
    for (size_t i = 0; i < c->n; i++) {
        arb_set_d(xv + i, c->x[i]);
        arb_set_d(yv + i, c->y[i]);
    }
    arb_dot(s, NULL, 0, xv, 1, yv, 1, (slong)c->n, prec);
    ac_arb_get_interval_mpfr(lo, hi, s);
    arb_clear(s);
    _arb_vec_clear(xv, (slong)c->n);
    _arb_vec_clear(yv, (slong)c->n);
    return AC_OK;
}

/* Generate an ill-conditioned dot product: the first half random with
 * exponents spread over `bits`, the second half chosen to cancel the running
 * sum, so that sum|x_i y_i| / |x.y| is about 2^bits. */
static void gen_dot(dot_ctx *c, size_t n, int bits, test_rng *r, mpfr_t exact)
{
    mpfr_t t;
    mpfr_init2(t, 2400);
    c->n = n;
    size_t h = n / 2;
    for (size_t i = 0; i < h; i++) {
        int e = (int)(test_rng_u64(r) % (unsigned)(bits / 2 + 1));
        c->x[i] = ldexp(test_rng_range(r, -1, 1), e);
        c->y[i] = ldexp(test_rng_range(r, -1, 1), e);
    }
    mpfr_set_zero(exact, 1);
    for (size_t i = 0; i < h; i++) {
        mpfr_set_d(t, c->x[i], MPFR_RNDN);
        mpfr_mul_d(t, t, c->y[i], MPFR_RNDN);
        mpfr_add(exact, exact, t, MPFR_RNDN);
    }
    for (size_t i = h; i < n; i++) {
        int e = (int)(bits / 2 * (double)(n - 1 - i) / (double)(n - h));
        c->x[i] = ldexp(test_rng_range(r, -1, 1), e);
        /* y = (random tiny - running sum) / x, rounded: cancels most of the sum */
        double tgt = ldexp(test_rng_range(r, -1, 1), e) - mpfr_get_d(exact, MPFR_RNDN);
        c->y[i] = tgt / c->x[i];
        mpfr_set_d(t, c->x[i], MPFR_RNDN);
        mpfr_mul_d(t, t, c->y[i], MPFR_RNDN);
        mpfr_add(exact, exact, t, MPFR_RNDN);
    }
    mpfr_clear(t);
}

static int truth(const mpfr_t q, ac_relation rel, double tau)
{
    int c = mpfr_cmp_d(q, tau);
    switch (rel) {
    case AC_LT: return c < 0;
    case AC_LE: return c <= 0;
    case AC_GT: return c > 0;
    default: return c >= 0;
    }
}

START_TEST(test_engine_sound_and_complete)
{
    test_rng r;
    test_rng_init(&r, 11);
    mpfr_t exact, tmp;
    mpfr_init2(exact, 2400);
    mpfr_init2(tmp, 2400);
    ac_schedule sched = ac_schedule_upto(1024);
    int proved_true = 0, refuted_false = 0, total_true = 0, undecided_true_reachable = 0;
    int decided_by_ball = 0;
    for (int trial = 0; trial < 3000; trial++) {
        dot_ctx c = {0};
        int bits = 10 + (int)(test_rng_u64(&r) % 700);
        size_t n = 4 + 2 * (test_rng_u64(&r) % 20);
        gen_dot(&c, n, bits, &r, exact);
        /* tau near the exact value: equal (when representable), a few ulps
         * away, or a relative 2^-k away */
        double q = mpfr_get_d(exact, MPFR_RNDN);
        double tau;
        int kind = (int)(test_rng_u64(&r) % 4);
        if (kind == 0)
            tau = q;
        else if (kind == 1)
            tau = (test_rng_u64(&r) & 1) ? ac_up(q) : ac_dn(q);
        else if (kind == 2)
            tau = q + ldexp(test_rng_range(&r, -1, 1), -(int)(test_rng_u64(&r) % 60)) * fabs(q);
        else
            tau = 0.0;
        ac_relation rel = (ac_relation)(test_rng_u64(&r) % 4);
        ac_quantity qq = {"x.y", dot_stage0, dot_ball, NULL, &c, NULL, NULL, NULL};
        ac_cert cert;
        ck_assert(ac_decide(&cert, &qq, rel, tau, &sched, NULL) == AC_OK);
        int t = truth(exact, rel, tau);
        /* soundness: never PROVED when false, never REFUTED when true */
        ck_assert_msg(!(cert.verdict == AC_PROVED && !t),
                      "false claim x.y %s %a PROVED at stage %d", ac_relation_name(rel),
                      tau, cert.stage);
        ck_assert_msg(!(cert.verdict == AC_REFUTED && t),
                      "true claim x.y %s %a REFUTED at stage %d", ac_relation_name(rel),
                      tau, cert.stage);
        /* the certificate's enclosure contains the exact value */
        ck_assert_msg(mpfr_cmp_d(exact, cert.lo) >= 0 && mpfr_cmp_d(exact, cert.hi) <= 0,
                      "certificate bounds [%a, %a] miss the exact value", cert.lo, cert.hi);
        if (cert.stage >= 1)
            decided_by_ball++;
        /* completeness: a true claim with a margin far above 2^-900 sum|xy|
         * must be PROVED with 1024-bit balls */
        mpfr_sub_d(tmp, exact, tau, MPFR_RNDN);
        mpfr_abs(tmp, tmp, MPFR_RNDN);
        double margin = mpfr_get_d(tmp, MPFR_RNDN);
        double a = 0;
        for (size_t i = 0; i < c.n; i++)
            a += fabs(c.x[i] * c.y[i]);
        if (t) {
            total_true++;
            if (cert.verdict == AC_PROVED)
                proved_true++;
            else if (margin > ldexp(a, -900))
                undecided_true_reachable++;
        } else if (cert.verdict == AC_REFUTED) {
            refuted_false++;
        }
    }
    ck_assert_msg(undecided_true_reachable == 0,
                  "%d true claims with a clear margin were not proved",
                  undecided_true_reachable);
    ck_assert(proved_true > 100 && refuted_false > 100);
    ck_assert_msg(decided_by_ball > 100, "the ball stages were hardly exercised (%d)", decided_by_ball);
    mpfr_clear(exact);
    mpfr_clear(tmp);
}
END_TEST

START_TEST(test_engine_stage_order)
{
    /* a well-conditioned claim is decided at stage 0 without calling Arb */
    dot_ctx c = {0};
    c.n = 2;
    c.x[0] = 1;
    c.y[0] = 1;
    c.x[1] = 1;
    c.y[1] = 1;
    ac_schedule sched = ac_schedule_default();
    ac_quantity q = {"x.y", dot_stage0, dot_ball, NULL, &c, NULL, NULL, NULL};
    ac_cert cert;
    ac_decide(&cert, &q, AC_GT, 1.5, &sched, NULL);
    ck_assert_int_eq(cert.verdict, AC_PROVED);
    ck_assert_int_eq(cert.stage, AC_STAGE_DOUBLE);
    ck_assert_int_eq(c.ball_calls, 0);
    /* q == tau exactly: "q < tau" must never be PROVED, "q <= tau" can only be
     * proved by an exact ball */
    ac_decide(&cert, &q, AC_LT, 2.0, &sched, NULL);
    ck_assert(cert.verdict != AC_PROVED);
    ac_decide(&cert, &q, AC_LE, 2.0, &sched, NULL);
    ck_assert(cert.verdict != AC_REFUTED);
    /* no ball stage: stays undecided rather than guessing */
    ac_schedule none = ac_schedule_upto(0);
    c.x[1] = 0x1p-60;
    ac_decide(&cert, &q, AC_GT, 1.0, &none, NULL);
    ck_assert_int_eq(cert.verdict, AC_UNDECIDED);
    ac_decide(&cert, &q, AC_GT, 1.0, &sched, NULL);
    ck_assert_int_eq(cert.verdict, AC_PROVED);
    ck_assert(cert.stage >= 1 && cert.prec >= 128);
}
END_TEST

START_TEST(test_judge)
{
    ck_assert_int_eq(ac_judge(0, 1, AC_LT, 2), AC_PROVED);
    ck_assert_int_eq(ac_judge(0, 2, AC_LT, 2), AC_UNDECIDED);
    ck_assert_int_eq(ac_judge(0, 2, AC_LE, 2), AC_PROVED);
    ck_assert_int_eq(ac_judge(2, 3, AC_LT, 2), AC_REFUTED);
    ck_assert_int_eq(ac_judge(2, 3, AC_LE, 2), AC_UNDECIDED);
    ck_assert_int_eq(ac_judge(2, 3, AC_GE, 2), AC_PROVED);
    ck_assert_int_eq(ac_judge(2, 3, AC_GT, 2), AC_UNDECIDED);
    ck_assert_int_eq(ac_judge(-INFINITY, INFINITY, AC_GT, 0), AC_UNDECIDED);
    ck_assert_int_eq(ac_judge(NAN, 1, AC_LT, 2), AC_UNDECIDED);
    ck_assert_int_eq(ac_judge(0, 1, AC_LT, NAN), AC_UNDECIDED);
    ck_assert_int_eq(ac_verdict_and(AC_PROVED, AC_PROVED), AC_PROVED);
    ck_assert_int_eq(ac_verdict_and(AC_PROVED, AC_UNDECIDED), AC_UNDECIDED);
    ck_assert_int_eq(ac_verdict_and(AC_UNDECIDED, AC_REFUTED), AC_REFUTED);
    ac_schedule s = ac_schedule_upto(512);
    ck_assert_int_eq(s.n, 3);
    ck_assert_int_eq(s.prec[2], 512);
    s = ac_schedule_upto(300);
    ck_assert_int_eq(s.prec[s.n - 1], 300);
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("verdict");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_judge);
    tcase_add_test(tc, test_engine_stage_order);
    tcase_add_test(tc, test_engine_sound_and_complete);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
