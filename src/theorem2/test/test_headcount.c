/* test_headcount.c — ac_headcount_decide (attncheck/headcount.h,
 * doc/mathematics.md §4.8): the standard head counts that represent a layer
 * exactly, on constructed layers of every kind: heads sharing U (the
 * answer is exact both ways: d/h' >= rank U), generic heads (h classes),
 * inactive heads (S_c = 0), two classes, the zero layer; and the
 * construction of §4.8 itself, evaluated in double against g_V. */
#include <config.h>

#include <math.h>
#include <string.h>

#include "attncheck/headcount.h"
#include "attncheck/multihead.h"
#include "attncheck/theorem2.h"
#include "testutil.h"

static void check_shared(size_t d, size_t h, size_t dp, uint64_t seed)
{
    ac_mh V = {0};
    ac_headcount r;
    ac_err err;
    ck_assert_int_eq(ac_t2_generate_v(&V, d, h, dp, AC_T2_GEN_GAUSSIAN, seed, &err), AC_OK);
    ck_assert_int_eq(ac_headcount_decide(&r, &V, 4, &err), AC_OK);
    ck_assert_msg(r.exact && r.nclasses == 1 && r.nactive == 1 && r.iff,
                  "d=%zu h=%zu dp=%zu: %s", d, h, dp, r.summary);
    ck_assert_int_eq(r.max_u_rank, (long)dp);
    size_t hmax = 0;
    for (size_t hp = 1; hp <= d; hp++) {
        if (d % hp) {
            ck_assert_int_eq(ac_headcount_answer(&r, hp), AC_HC_NOT_DECIDED);
            continue;
        }
        ac_hc_answer want = d / hp >= dp ? AC_HC_YES : AC_HC_NO;
        ck_assert_msg(ac_headcount_answer(&r, hp) == want, "d=%zu h=%zu dp=%zu h'=%zu: %d",
                      d, h, dp, hp, (int)ac_headcount_answer(&r, hp));
        if (want == AC_HC_YES)
            hmax = hp;
    }
    ck_assert_uint_eq(r.h_min, 1);
    ck_assert_uint_eq(r.h_max, hmax);
    ac_headcount_free(&r);
    ac_mh_free(&V);
}

START_TEST(test_shared_u_sizes)
{
    static const size_t sz[][3] = {{16, 4, 8}, {16, 8, 4}, {12, 3, 6}, {12, 4, 4},
                                   {8, 4, 4},  {9, 3, 4},  {16, 16, 2}, {6, 2, 6}};
    for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++)
        for (uint64_t s = 1; s <= 2; s++)
            check_shared(sz[i][0], sz[i][1], sz[i][2], test_seed_value + s);
}
END_TEST

/* The construction of doc/mathematics.md §4.8 for m = d/h' >= dp: every head
 * has logits U sqrt(m/dp) (Wk' = [Vk_1; 0], Wq' = sqrt(m/dp) [Vq_1; 0]) and
 * value S_V E_j. */
static void build_standard(ac_mh *W, const ac_mh *V, size_t hp)
{
    size_t d = V->d, dp = V->hs, m = d / hp, hh = V->h * dp;
    ac_err err;
    double c = sqrt((double)m / (double)dp);
    ck_assert_int_eq(ac_mh_init(W, d, hp, m, &err), AC_OK);
    double *S = calloc(d * d, sizeof(double));
    for (size_t r = 0; r < d; r++)
        for (size_t k = 0; k < hh; k++)
            for (size_t col = 0; col < d; col++)
                S[r * d + col] += V->wo[r * hh + k] * V->wv[k * d + col];
    for (size_t j = 0; j < hp; j++)
        for (size_t a = 0; a < dp; a++)
            for (size_t col = 0; col < d; col++) {
                W->wk[(j * m + a) * d + col] = V->wk[a * d + col];
                W->wq[(j * m + a) * d + col] = c * V->wq[a * d + col];
            }
    for (size_t j = 0; j < hp; j++)
        for (size_t a = 0; a < m; a++) {
            W->wv[(j * m + a) * d + j * m + a] = 1.0;
            for (size_t r = 0; r < d; r++)
                *ac_mh_wo_at(W, j, r, a) = S[r * d + j * m + a];
        }
    free(S);
}

START_TEST(test_construction_matches)
{
    ac_mh V = {0};
    ac_err err;
    ck_assert_int_eq(ac_t2_generate_v(&V, 16, 4, 8, AC_T2_GEN_GAUSSIAN, test_seed_value, &err),
                     AC_OK);
    for (size_t hp = 1; hp <= 2; hp++) {
        ac_mh W = {0};
        build_standard(&W, &V, hp);
        for (size_t k = 0; k < 3; k++) {
            ac_mat X = {0}, F = {0}, G = {0};
            ck_assert_int_eq(ac_t2_sample_input(&X, 16, 6, test_seed_value, k, &err), AC_OK);
            ac_mat_init(&F, 16, 6, &err);
            ac_mat_init(&G, 16, 6, &err);
            ac_mh_forward(&F, &W, &X, NULL, &err);
            ac_mh_forward(&G, &V, &X, NULL, &err);
            double e = 0, g = 0;
            for (size_t i = 0; i < 96; i++) {
                e += (F.data[i] - G.data[i]) * (F.data[i] - G.data[i]);
                g += G.data[i] * G.data[i];
            }
            ck_assert_msg(sqrt(e / g) < 1e-13, "h'=%zu: relative deviation %g", hp, sqrt(e / g));
            ac_mat_free(&X);
            ac_mat_free(&F);
            ac_mat_free(&G);
        }
        ac_mh_free(&W);
    }
    ac_mh_free(&V);
}
END_TEST

START_TEST(test_generic_layers)
{
    ac_mh V = {0};
    ac_headcount r;
    ac_err err;
    /* head size 8 > d/h: h classes of rank 8, value ranks 8: no construction */
    ck_assert_int_eq(ac_mh_random(&V, 16, 4, 8, test_seed_value, 7, &err), AC_OK);
    ck_assert_int_eq(ac_headcount_decide(&r, &V, 4, &err), AC_OK);
    ck_assert(r.exact && r.nclasses == 4 && r.nactive == 4 && !r.iff);
    ck_assert_int_eq(r.max_u_rank, 8);
    ck_assert_uint_eq(r.h_max, 0);
    for (size_t k = 0; k < r.ndiv; k++)
        ck_assert_int_eq(r.answer[k], AC_HC_NOT_DECIDED);
    ac_headcount_free(&r);
    ac_mh_free(&V);
    /* head size 2 < d/h (the inclusion F in G read backwards): h' = h and h' = 8 */
    ck_assert_int_eq(ac_mh_random(&V, 16, 4, 2, test_seed_value, 8, &err), AC_OK);
    ck_assert_int_eq(ac_headcount_decide(&r, &V, 4, &err), AC_OK);
    ck_assert(r.exact && r.nclasses == 4 && !r.iff);
    ck_assert_uint_eq(r.h_min, 4);
    ck_assert_uint_eq(r.h_max, 8);
    ck_assert_int_eq(ac_headcount_answer(&r, 2), AC_HC_NOT_DECIDED);
    ck_assert_int_eq(ac_headcount_answer(&r, 16), AC_HC_NOT_DECIDED);
    ac_headcount_free(&r);
    ac_mh_free(&V);
}
END_TEST

START_TEST(test_inactive_two_classes_zero)
{
    ac_mh V = {0};
    ac_headcount r;
    ac_err err;
    /* heads 2..4 without output: one active class of value rank 8 < d */
    ck_assert_int_eq(ac_mh_random(&V, 16, 4, 8, test_seed_value, 9, &err), AC_OK);
    for (size_t i = 1; i < 4; i++)
        for (size_t rr = 0; rr < 16; rr++)
            for (size_t c = 0; c < 8; c++)
                *ac_mh_wo_at(&V, i, rr, c) = 0.0;
    ck_assert_int_eq(ac_headcount_decide(&r, &V, 4, &err), AC_OK);
    ck_assert(r.exact && r.nclasses == 4 && r.nactive == 1 && !r.iff);
    ck_assert_int_eq(r.s_rank[0], 8);
    ck_assert_int_eq(ac_headcount_answer(&r, 1), AC_HC_YES);
    ck_assert_int_eq(ac_headcount_answer(&r, 2), AC_HC_YES);
    ck_assert_int_eq(ac_headcount_answer(&r, 4), AC_HC_NOT_DECIDED);
    ac_headcount_free(&r);
    /* the zero layer: every h' */
    memset(V.params, 0, ac_mh_nparams(&V) * sizeof(double));
    ck_assert_int_eq(ac_headcount_decide(&r, &V, 4, &err), AC_OK);
    ck_assert(r.exact && r.nclasses == 1 && r.nactive == 0);
    ck_assert_uint_eq(r.h_min, 1);
    ck_assert_uint_eq(r.h_max, 16);
    ac_headcount_free(&r);
    ac_mh_free(&V);
    /* two classes: heads 3, 4 of a shared-U layer get the same other key map */
    ck_assert_int_eq(ac_t2_generate_v(&V, 16, 4, 8, AC_T2_GEN_GAUSSIAN, test_seed_value, &err),
                     AC_OK);
    for (size_t i = 2; i < 4; i++)
        for (size_t k = 0; k < 8 * 16; k++) {
            V.wk[i * 8 * 16 + k] = V.wk[k] * 0.5 + (k % 3 == 0 ? 0.25 : 0.0);
            V.wq[i * 8 * 16 + k] = V.wq[k];
        }
    ck_assert_int_eq(ac_headcount_decide(&r, &V, 4, &err), AC_OK);
    ck_assert(r.exact && r.nclasses == 2 && r.nactive == 2 && !r.iff);
    ck_assert(r.class_of[0] == 0 && r.class_of[1] == 0 && r.class_of[2] == 1 &&
              r.class_of[3] == 1);
    ac_headcount_free(&r);
    /* n = 1 token: the softmax is 1 and the converse is not claimed */
    ac_mh_free(&V);
    ck_assert_int_eq(ac_t2_generate_v(&V, 16, 4, 8, AC_T2_GEN_GAUSSIAN, test_seed_value, &err),
                     AC_OK);
    ck_assert_int_eq(ac_headcount_decide(&r, &V, 1, &err), AC_OK);
    ck_assert(!r.iff);
    ck_assert_int_eq(ac_headcount_answer(&r, 4), AC_HC_NOT_DECIDED);
    ac_headcount_free(&r);
    ac_mh_free(&V);
    /* an empty layer */
    ac_mh E = {0};
    ck_assert_int_eq(ac_headcount_decide(&r, &E, 4, &err), AC_EUSAGE);
    ac_headcount_free(&r);
}
END_TEST

int main(void)
{
    test_seed_init();
    Suite *s = suite_create("headcount");
    TCase *tc = tcase_create("core");
    test_no_timeout(tc);
    tcase_add_test(tc, test_shared_u_sizes);
    tcase_add_test(tc, test_construction_matches);
    tcase_add_test(tc, test_generic_layers);
    tcase_add_test(tc, test_inactive_two_classes_zero);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
