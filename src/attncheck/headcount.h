/* attncheck/headcount.h — which standard MultiHead layers represent a given
 * attention layer exactly (paper 1, Theorem 2; doc/mathematics.md §4.8).
 *
 * A layer g(X) = sum_i Vo_i Vv_i X Softmax((Vk_i X)^T (Vq_i X)/sqrt(hs)) (any
 * head size hs, attncheck/multihead.h) has its heads grouped into logit
 * classes: heads with equal U_i = Vk_i^T Vq_i (exact comparison of the exact
 * products) have the same softmax for every X.  Class c contributes
 * S_c X Softmax(X^T U_c X / sqrt(hs)), S_c = sum_{i in c} Vo_i Vv_i; a class
 * with S_c = 0 contributes nothing ("inactive").  With r_c = rank U_c and
 * s_c = rank S_c (exact ranks over Q of the exact products):
 *
 *   construction (sufficient): a standard layer with h' heads of size
 *   m = d/h' (h' dividing d) equals g for every X when m >= r_c for every
 *   active class and sum_c ceil(s_c / m) <= h';
 *
 *   converse (proved when it applies): with n >= 2 tokens, one active class
 *   and rank S = d, no standard layer with m < r equals g for every X
 *   (the proof of Theorem 2, doc/mathematics.md §4.4-§4.6, with m for d/h
 *   and r for dp).  Then the head counts that represent g are exactly the
 *   divisors h' of d with d/h' >= r.
 *
 * Otherwise a head count the construction does not reach is "not decided":
 * the tool does not claim that no standard layer represents g.
 */
#ifndef ATTNCHECK_HEADCOUNT_H
#define ATTNCHECK_HEADCOUNT_H

#include <stddef.h>

#include "attncheck/common.h"
#include "attncheck/multihead.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per divisor h' of d: whether h' standard heads represent g exactly. */
typedef enum {
    AC_HC_NOT_DECIDED = -1, /* the construction does not apply; no proof either way */
    AC_HC_NO = 0,           /* proved: no standard layer with h' heads equals g */
    AC_HC_YES = 1           /* proved by the construction */
} ac_hc_answer;

typedef struct {
    size_t d, h, hs, n;
    int exact;              /* 1: decided in exact arithmetic; 0: entries too wide (the
                               fields below are not valid) */
    size_t nclasses;        /* logit classes (heads with equal U_i) */
    size_t nactive;         /* classes with S_c != 0 */
    size_t *class_of;       /* h entries: the class of head i (0-based, in order of first
                               appearance) */
    size_t *class_size;     /* nclasses entries: heads in the class */
    long *u_rank, *s_rank;  /* nclasses entries: r_c = rank U_c, s_c = rank S_c */
    long max_u_rank;        /* max r_c over the active classes (0 if none) */
    int iff;                /* 1: the converse applies (n >= 2, one active class, rank S = d):
                               the answers below are exact for every h' */
    size_t ndiv;            /* divisors of d, ascending */
    size_t *divisors;
    ac_hc_answer *answer;   /* ndiv entries */
    size_t h_min, h_max;    /* least / largest h' answered YES (0 if none) */
    char summary[400];
} ac_headcount;

/* Decide the above for the layer L (d, h, hs >= 1) and n tokens.  r must be
 * released with ac_headcount_free in every case.  AC_EUSAGE for an empty
 * layer; AC_EINTERNAL out of memory.  Entries too wide for exact arithmetic
 * (binary exponents spread over more than ~2000 bits) give r->exact = 0 and
 * a summary saying so (AC_OK). */
int ac_headcount_decide(ac_headcount *r, const ac_mh *L, size_t n, ac_err *err);
void ac_headcount_free(ac_headcount *r);

/* The answer for h' (AC_HC_NOT_DECIDED if h' does not divide d or r is not
 * exact). */
ac_hc_answer ac_headcount_answer(const ac_headcount *r, size_t hprime);
/* "yes", "no", "not decided" (the words of `separate --student`). */
const char *ac_hc_answer_name(ac_hc_answer a);

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_HEADCOUNT_H */
