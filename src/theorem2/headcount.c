/* headcount.c — the standard head counts that represent a given attention
 * layer exactly (attncheck/headcount.h, doc/mathematics.md §4.8): logit
 * classes by exact comparison of U_i = Vk_i^T Vq_i, exact ranks of U_c and of
 * S_c = sum_{i in c} Vo_i Vv_i (dyadic.h, doc/mathematics.md §2.6), then the
 * construction's criterion per divisor of d and, when it applies, the
 * converse from the proof of Theorem 2. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/headcount.h"
#include "t2_impl.h"

void ac_headcount_free(ac_headcount *r)
{
    if (!r)
        return;
    free(r->class_of);
    free(r->class_size);
    free(r->u_rank);
    free(r->s_rank);
    free(r->divisors);
    free(r->answer);
    r->class_of = r->class_size = r->divisors = NULL;
    r->u_rank = r->s_rank = NULL;
    r->answer = NULL;
}

/* Group the heads by equal U_i (exact); U[c] receives the class's U.
 * Returns 0 when some U_i is too wide. */
static int hc_classes(ac_headcount *r, const ac_mh *L, ac_xmat *U)
{
    for (size_t i = 0; i < L->h; i++) {
        ac_xmat Ui;
        if (t2_x_qk(&Ui, L, i) != AC_XMAT_OK)
            return 0;
        size_t c = 0;
        while (c < r->nclasses && !ac_xmat_equal(&Ui, &U[c]))
            c++;
        if (c == r->nclasses) {
            U[c] = Ui;
            r->nclasses++;
        } else {
            ac_xmat_clear(&Ui);
        }
        r->class_of[i] = c;
        r->class_size[c]++;
    }
    return 1;
}

/* s_rank[c] = rank of S_c = sum of Vo_i Vv_i over the class (exact).
 * Returns 0 when some product is too wide. */
static int hc_value_ranks(ac_headcount *r, const ac_mh *L)
{
    for (size_t c = 0; c < r->nclasses; c++) {
        ac_xmat S, P, T;
        int have = 0;
        for (size_t i = 0; i < L->h; i++) {
            if (r->class_of[i] != c)
                continue;
            if (t2_x_ov(&P, L, i) != AC_XMAT_OK) {
                if (have)
                    ac_xmat_clear(&S);
                return 0;
            }
            if (!have) {
                S = P;
                have = 1;
            } else {
                ac_xmat_add(&T, &S, &P);
                ac_xmat_clear(&S);
                ac_xmat_clear(&P);
                S = T;
            }
        }
        r->s_rank[c] = (long)ac_xmat_rank(&S);
        ac_xmat_clear(&S);
    }
    return 1;
}

/* The answer for m = d/h' heads' size: the construction, or the converse. */
static ac_hc_answer hc_answer_for(const ac_headcount *r, size_t hp)
{
    size_t m = r->d / hp, need = 0;
    for (size_t c = 0; c < r->nclasses; c++) {
        if (r->s_rank[c] == 0)
            continue;
        need += ((size_t)r->s_rank[c] + m - 1) / m;
    }
    if ((long)m >= r->max_u_rank && need <= hp)
        return AC_HC_YES;
    return r->iff ? AC_HC_NO : AC_HC_NOT_DECIDED;
}

static void hc_summary(ac_headcount *r)
{
    char *s = r->summary;
    size_t len = sizeof r->summary, k;
    k = (size_t)snprintf(s, len, "%zu logit class%s (%zu active), max rank U_c = %ld: ",
                         r->nclasses, r->nclasses == 1 ? "" : "es", r->nactive, r->max_u_rank);
    if (k >= len)
        return;
    if (r->h_max)
        k += (size_t)snprintf(s + k, len - k, "a standard layer with h' = %zu..%zu heads "
                              "represents it exactly (h' | d, d/h' >= %ld)%s",
                              r->h_min, r->h_max, r->max_u_rank,
                              r->iff ? "; exactly these h' (proved both ways)"
                                     : "; other h' not decided");
    else
        k += (size_t)snprintf(s + k, len - k, "%s",
                              r->iff ? "no standard layer represents it (proved)"
                                     : "no standard layer by the construction; not decided "
                                       "whether another one exists");
    (void)k;
}

static int hc_alloc(ac_headcount *r, size_t h, size_t d, ac_err *err)
{
    r->class_of = calloc(h, sizeof *r->class_of);
    r->class_size = calloc(h, sizeof *r->class_size);
    r->u_rank = calloc(h, sizeof *r->u_rank);
    r->s_rank = calloc(h, sizeof *r->s_rank);
    r->divisors = calloc(d, sizeof *r->divisors);
    r->answer = calloc(d, sizeof *r->answer);
    if (!r->class_of || !r->class_size || !r->u_rank || !r->s_rank || !r->divisors ||
        !r->answer)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    return AC_OK;
}

int ac_headcount_decide(ac_headcount *r, const ac_mh *L, size_t n, ac_err *err)
{
    int st;
    memset(r, 0, sizeof *r);
    if (!L || !L->params || !L->d || !L->h || !L->hs)
        return ac_err_set(err, AC_EUSAGE, "head count: the layer is empty");
    r->d = L->d, r->h = L->h, r->hs = L->hs, r->n = n;
    if ((st = hc_alloc(r, L->h, L->d, err)))
        return st;
    ac_xmat *U = calloc(L->h, sizeof *U);
    if (!U)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    int ok = hc_classes(r, L, U);
    for (size_t c = 0; c < r->nclasses; c++) {
        if (ok)
            r->u_rank[c] = (long)ac_xmat_rank(&U[c]);
        ac_xmat_clear(&U[c]);
    }
    free(U);
    if (!ok || !hc_value_ranks(r, L)) {
        snprintf(r->summary, sizeof r->summary, "not decided: entries too wide for exact "
                 "arithmetic");
        return AC_OK;
    }
    r->exact = 1;
    size_t active = 0;
    for (size_t c = 0; c < r->nclasses; c++)
        if (r->s_rank[c] > 0) {
            r->nactive++;
            active = c;
            if (r->u_rank[c] > r->max_u_rank)
                r->max_u_rank = r->u_rank[c];
        }
    r->iff = n >= 2 && r->nactive == 1 && r->s_rank[active] == (long)r->d;
    for (size_t hp = 1; hp <= r->d; hp++) {
        if (r->d % hp)
            continue;
        r->divisors[r->ndiv] = hp;
        r->answer[r->ndiv] = hc_answer_for(r, hp);
        if (r->answer[r->ndiv] == AC_HC_YES) {
            if (!r->h_min)
                r->h_min = hp;
            r->h_max = hp;
        }
        r->ndiv++;
    }
    hc_summary(r);
    return AC_OK;
}

ac_hc_answer ac_headcount_answer(const ac_headcount *r, size_t hprime)
{
    if (!r->exact)
        return AC_HC_NOT_DECIDED;
    for (size_t k = 0; k < r->ndiv; k++)
        if (r->divisors[k] == hprime)
            return r->answer[k];
    return AC_HC_NOT_DECIDED;
}

const char *ac_hc_answer_name(ac_hc_answer a)
{
    return a == AC_HC_YES ? "yes" : a == AC_HC_NO ? "no" : "not decided";
}
