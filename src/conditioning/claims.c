/* claims.c — the claims of Theorem 3.2 (paper 2) decided from several
 * results, for the program and the report (doc/mathematics.md §5.9):
 *   claim C over every h of a sweep (one certificate);
 *   the median kappa decreases from one h to a larger one;
 *   a certified relative error within a tolerance, and the ratio of two
 *   certified medians within a tolerance.
 * Each is a three-valued verdict from rigorous enclosures of the seeded
 * sample: PROVED is sound, UNDECIDED where an enclosure is missing. */
#include <config.h>

#include <math.h>

#include "attncheck/interval.h"
#include "cond_impl.h"

void ac_cond_certificate(ac_cert *cert, const ac_cond_result *res, size_t n,
                         const ac_cond_opts *o, double seconds)
{
    /* claim C for every result = the judgement of the maximum of dev over
     * them (each result's dev is the maximum over its samples) */
    double lo = 0, hi = o->certify ? 0 : INFINITY;
    int stage = AC_STAGE_NONE;
    long prec = 0;
    for (size_t i = 0; i < n; i++) {
        lo = fmax(lo, res[i].dev_lo);
        hi = fmax(hi, res[i].dev_hi);
        if (res[i].max_stage > stage) {
            stage = res[i].max_stage;
            prec = res[i].max_stage_prec;
        }
    }
    int low_rank = 0;
    for (size_t i = 0; i < n; i++)
        low_rank |= res[i].rank_bound < res[i].m;
    const char *method =
        !o->certify ? "not certified (estimates only)"
        : low_rank  ? "rank A <= h min(N, E, d) < min(N, D) from the factors of every head "
                      "(doc/mathematics.md §5.10)"
        : o->mode == AC_COND_ATTENTION
            ? "the exact heads enclosed in Arb balls from the sampled X and weights; Weyl "
              "around a double SVD widened by the enclosure (stage 0), ball Cholesky of "
              "G - s I and Rayleigh quotients (Arb stages)"
            : "Weyl around a double SVD (stage 0), ball Cholesky of G - s I and Rayleigh "
              "quotients (Arb stages)";
    ac_cert_set(cert, "max over samples of |kappa/kappa~ - 1|", AC_LE, o->rtol,
                o->certify ? stage : AC_STAGE_NONE, o->certify ? prec : 0, lo, hi, method);
    if (o->certify)
        cert->verdict = ac_judge(lo, hi, AC_LE, o->rtol);
    else
        cert->verdict = AC_UNDECIDED;
    cert->seconds = seconds;
}

ac_verdict ac_cond_median_decreases(const ac_cond_result *a, const ac_cond_result *b)
{
    if (!a->cst.valid || !b->cst.valid)
        return AC_UNDECIDED;
    /* median(a) - median(b) > 0, enclosed from median_lo/hi rounded outward:
     * median_hi(b) < median_lo(a) proves the decrease */
    return ac_judge(ac_sub_dn(a->cst.median_lo, b->cst.median_hi),
                    ac_sub_up(a->cst.median_hi, b->cst.median_lo), AC_GT, 0.0);
}

ac_verdict ac_cond_within(double lo, double hi, double tol)
{
    if (lo != lo || hi != hi)
        return AC_UNDECIDED;
    double alo = (lo > 0) ? lo : ((hi < 0) ? -hi : 0.0); /* lower bound of |x| */
    double ahi = fmax(fabs(lo), fabs(hi));              /* upper bound of |x| */
    return ac_judge(alo, ahi, AC_LE, tol);
}

ac_verdict ac_cond_median_ratio_within(const ac_cond_result *a, const ac_cond_result *b,
                                       double tol)
{
    if (!a->cst.valid || !b->cst.valid)
        return AC_UNDECIDED;
    /* median(a) / median(b) - 1, enclosed (every median >= 1 > 0) */
    double lo = ac_sub_dn(ac_div_dn(a->cst.median_lo, b->cst.median_hi), 1.0);
    double hi = ac_sub_up(ac_div_up(a->cst.median_hi, b->cst.median_lo), 1.0);
    return ac_cond_within(lo, hi, tol);
}
