/* identity.c — Theorem 2 of paper 1: are f_W and g_V the same function?
 * (doc/mathematics.md §4.9, the class-sum criterion).
 *
 * Head i of a layer is the map X -> O_i X Softmax(X' L_i X) with value path
 * O_i = Wo_i Wv_i and logit matrix L_i = Wk_i' Wq_i / sqrt(head size).  Two
 * layers written differently can be the same function: heads in another
 * order, heads with O_i = 0, value paths moved between heads with equal
 * logit matrices.  The criterion: put the heads of both layers (value paths
 * of g_V with a minus sign) into classes of equal L; if the signed sum of the
 * value paths is 0 in every class, f_W(X) = g_V(X) for every X.  For n = 1
 * every softmax is the scalar 1, so f_W(x) = S_W x and g_V(x) = S_V x: equal
 * iff S_W = S_V.  Everything is exact (dyadic.h; the factors 1/sqrt(hs)
 * compared through squares). */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t2_impl.h"

/* one head of either layer */
typedef struct {
    ac_xmat O, L;      /* value path, Wk'Wq (logits = L / sqrt(hs)) */
    unsigned long hs;  /* head size */
    int sign;          /* +1 for f_W, -1 for g_V */
    int cls;           /* class index, -1 = not yet assigned */
} id_head;

static int load_heads(id_head *H, size_t *nh, const ac_mh *L, int sign, size_t *nzero)
{
    for (size_t i = 0; i < L->h; i++) {
        id_head *x = &H[*nh];
        if (t2_x_ov(&x->O, L, i) != AC_XMAT_OK)
            return -1;
        if (ac_xmat_is_zero(&x->O)) { /* contributes nothing, whatever its logits */
            ac_xmat_clear(&x->O);
            (*nzero)++;
            continue;
        }
        if (t2_x_qk(&x->L, L, i) != AC_XMAT_OK) {
            ac_xmat_clear(&x->O);
            return -1;
        }
        x->hs = (unsigned long)L->hs;
        x->sign = sign;
        x->cls = -1;
        (*nh)++;
    }
    return 0;
}

/* L_a / sqrt(hs_a) == L_b / sqrt(hs_b)  <=>  sqrt(hs_b) L_a == sqrt(hs_a) L_b */
static int same_logits(const id_head *a, const id_head *b)
{
    return ac_xmat_scaled_equal(&a->L, b->hs, &b->L, a->hs);
}

/* The classes of equal logits; returns the number of classes whose signed
 * sum of value paths is not 0 (0 = equal as functions). */
static size_t class_sums(id_head *H, size_t nh, size_t *nclasses, int *balanced)
{
    size_t bad = 0;
    *nclasses = 0;
    *balanced = 1;
    for (size_t i = 0; i < nh; i++) {
        if (H[i].cls >= 0)
            continue;
        H[i].cls = (int)*nclasses;
        ac_xmat sum, t;
        long heads = 0; /* f_W's heads minus g_V's in the class */
        ac_xmat_init_zero(&sum, ac_xmat_rows(&H[i].O), ac_xmat_cols(&H[i].O));
        for (size_t j = i; j < nh; j++) {
            if (j > i && (H[j].cls >= 0 || !same_logits(&H[i], &H[j])))
                continue;
            H[j].cls = (int)*nclasses;
            heads += H[j].sign;
            if (H[j].sign > 0)
                ac_xmat_add(&t, &sum, &H[j].O);
            else
                ac_xmat_sub(&t, &sum, &H[j].O);
            ac_xmat_clear(&sum);
            sum = t;
        }
        if (!ac_xmat_is_zero(&sum))
            bad++;
        if (heads != 0)
            *balanced = 0;
        ac_xmat_clear(&sum);
        (*nclasses)++;
    }
    return bad;
}

/* n = 1: f_W(x) = S_W x, g_V(x) = S_V x */
static int equal_one_token(int *same, const ac_mh *W, const ac_mh *V, char *note, size_t len)
{
    ac_xmat SW, SV;
    *same = -1;
    if (t2_x_S(&SW, W) != AC_XMAT_OK)
        return 0;
    if (t2_x_S(&SV, V) != AC_XMAT_OK) {
        ac_xmat_clear(&SW);
        return 0;
    }
    *same = ac_xmat_equal(&SW, &SV);
    ac_xmat_clear(&SW);
    ac_xmat_clear(&SV);
    snprintf(note, len, "n = 1: every softmax is 1, so f_W(x) = S_W x and g_V(x) = S_V x; "
             "S_W %s S_V exactly", *same ? "=" : "!=");
    return 0;
}

int t2_equal_functions(int *same, const ac_mh *W, const ac_mh *V, size_t n, char *note,
                       size_t len, int *logits_pair)
{
    size_t nh = 0, nzero = 0, ncls = 0;
    int balanced = 0;
    if (logits_pair)
        *logits_pair = -1;
    snprintf(note, len, "entries too wide to compare exactly");
    if (n == 1)
        return equal_one_token(same, W, V, note, len);
    *same = -1;
    id_head *H = calloc(W->h + V->h, sizeof *H);
    if (!H)
        return -1;
    if (load_heads(H, &nh, W, +1, &nzero) == 0 && load_heads(H, &nh, V, -1, &nzero) == 0) {
        size_t bad = class_sums(H, nh, &ncls, &balanced);
        *same = bad == 0;
        if (logits_pair)
            *logits_pair = balanced;
        if (bad == 0)
            snprintf(note, len, "equal as functions: the %zu heads with a nonzero value path "
                     "fall into %zu classes of equal logit matrices, and in each the value "
                     "paths of f_W and of g_V have the same sum (exact; %zu heads with a zero "
                     "value path dropped)", nh, ncls, nzero);
        else
            snprintf(note, len, "the class-sum criterion fails: %zu of %zu classes of equal "
                     "logit matrices have different sums of value paths (exact)", bad, ncls);
    }
    for (size_t i = 0; i < nh; i++) {
        ac_xmat_clear(&H[i].O);
        ac_xmat_clear(&H[i].L);
    }
    free(H);
    return 0;
}
