/* verdict.c — the filtered-predicate engine (attncheck/verdict.h). */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "attncheck/verdict.h"

const char *ac_verdict_name(ac_verdict v)
{
    switch (v) {
    case AC_PROVED: return "PROVED";
    case AC_REFUTED: return "REFUTED";
    default: return "UNDECIDED";
    }
}

const char *ac_relation_name(ac_relation r)
{
    switch (r) {
    case AC_LT: return "<";
    case AC_LE: return "<=";
    case AC_GT: return ">";
    default: return ">=";
    }
}

ac_schedule ac_schedule_default(void)
{
    ac_schedule s = {3, {128, 256, 512}};
    return s;
}

ac_schedule ac_schedule_upto(long max_bits)
{
    ac_schedule s;
    s.n = 0;
    if (max_bits <= 0)
        return s;
    if (max_bits < 64)
        max_bits = 64;
    for (long p = 128; s.n < AC_MAX_STAGES; p *= 2) {
        s.prec[s.n++] = p < max_bits ? p : max_bits;
        if (p >= max_bits)
            break;
    }
    return s;
}

ac_verdict ac_judge(double lo, double hi, ac_relation rel, double tau)
{
    if (lo != lo || hi != hi || tau != tau)
        return AC_UNDECIDED;
    switch (rel) {
    case AC_LT:
        if (hi < tau) return AC_PROVED;
        if (lo >= tau) return AC_REFUTED;
        break;
    case AC_LE:
        if (hi <= tau) return AC_PROVED;
        if (lo > tau) return AC_REFUTED;
        break;
    case AC_GT:
        if (lo > tau) return AC_PROVED;
        if (hi <= tau) return AC_REFUTED;
        break;
    case AC_GE:
        if (lo >= tau) return AC_PROVED;
        if (hi < tau) return AC_REFUTED;
        break;
    }
    return AC_UNDECIDED;
}

ac_verdict ac_judge_mpfr(const mpfr_t lo, const mpfr_t hi, ac_relation rel, double tau)
{
    if (mpfr_nan_p(lo) || mpfr_nan_p(hi) || tau != tau)
        return AC_UNDECIDED;
    /* mpfr_cmp_d compares exactly */
    int clo = mpfr_cmp_d(lo, tau), chi = mpfr_cmp_d(hi, tau);
    switch (rel) {
    case AC_LT:
        if (chi < 0) return AC_PROVED;
        if (clo >= 0) return AC_REFUTED;
        break;
    case AC_LE:
        if (chi <= 0) return AC_PROVED;
        if (clo > 0) return AC_REFUTED;
        break;
    case AC_GT:
        if (clo > 0) return AC_PROVED;
        if (chi <= 0) return AC_REFUTED;
        break;
    case AC_GE:
        if (clo >= 0) return AC_PROVED;
        if (chi < 0) return AC_REFUTED;
        break;
    }
    return AC_UNDECIDED;
}

void ac_cert_set(ac_cert *cert, const char *quantity, ac_relation rel, double tau, int stage,
                 long prec, double lo, double hi, const char *method)
{
    memset(cert, 0, sizeof *cert);
    snprintf(cert->quantity, sizeof cert->quantity, "%s", quantity ? quantity : "q");
    snprintf(cert->method, sizeof cert->method, "%s", method ? method : "");
    cert->rel = rel;
    cert->tau = tau;
    cert->stage = stage;
    cert->prec = prec;
    cert->stages_tried = stage == AC_STAGE_NONE ? 0 : 1;
    cert->lo = lo;
    cert->hi = hi;
    cert->verdict = ac_judge(lo, hi, rel, tau);
}

void ac_step_add(ac_step *steps, size_t *n, size_t max, const char *name, const char *quantity,
                 double lo, double hi, int stage, long prec, const char *note)
{
    if (*n >= max)
        return;
    ac_step *s = &steps[(*n)++];
    snprintf(s->name, sizeof s->name, "%s", name ? name : "");
    snprintf(s->quantity, sizeof s->quantity, "%s", quantity ? quantity : "");
    s->lo = lo;
    s->hi = hi;
    s->stage = stage;
    s->prec = prec;
    snprintf(s->note, sizeof s->note, "%s", note ? note : "");
}

ac_verdict ac_verdict_and(ac_verdict a, ac_verdict b)
{
    if (a == AC_REFUTED || b == AC_REFUTED)
        return AC_REFUTED;
    if (a == AC_UNDECIDED || b == AC_UNDECIDED)
        return AC_UNDECIDED;
    return AC_PROVED;
}

static void set_method(ac_cert *cert, const char *m)
{
    snprintf(cert->method, sizeof cert->method, "%s", m ? m : "");
}

int ac_decide(ac_cert *cert, const ac_quantity *q, ac_relation rel, double tau,
              const ac_schedule *sched, ac_err *err)
{
    double t0 = ac_seconds();
    int st = AC_OK;
    ac_cert_set(cert, q->name, rel, tau, AC_STAGE_NONE, 0, -INFINITY, INFINITY, "");
    cert->verdict = AC_UNDECIDED;

    if (q->stage0) {
        double lo = -INFINITY, hi = INFINITY;
        st = q->stage0(q->ctx, &lo, &hi, err);
        if (st)
            goto out;
        cert->stages_tried++;
        cert->stage = AC_STAGE_DOUBLE;
        cert->prec = 53;
        cert->lo = lo;
        cert->hi = hi;
        set_method(cert, q->method0 ? q->method0 : "double with a-priori error bound");
        cert->verdict = ac_judge(lo, hi, rel, tau);
        if (cert->verdict != AC_UNDECIDED)
            goto out;
    }
    if (q->ball && sched) {
        for (int s = 0; s < sched->n; s++) {
            long prec = sched->prec[s];
            mpfr_t lo, hi;
            mpfr_init2(lo, prec);
            mpfr_init2(hi, prec);
            mpfr_set_inf(lo, -1);
            mpfr_set_inf(hi, 1);
            st = q->ball(q->ctx, prec, lo, hi, err);
            if (st) {
                mpfr_clear(lo);
                mpfr_clear(hi);
                goto out;
            }
            cert->stages_tried++;
            cert->stage = s + 1;
            cert->prec = prec;
            cert->lo = mpfr_get_d(lo, MPFR_RNDD);
            cert->hi = mpfr_get_d(hi, MPFR_RNDU);
            set_method(cert, q->method_ball ? q->method_ball : "ball arithmetic (Arb)");
            cert->verdict = ac_judge_mpfr(lo, hi, rel, tau);
            mpfr_clear(lo);
            mpfr_clear(hi);
            if (cert->verdict != AC_UNDECIDED)
                goto out;
        }
    }
    if (q->exact) {
        ac_verdict v = AC_UNDECIDED;
        st = q->exact(q->ctx, rel, tau, &v, err);
        if (st)
            goto out;
        cert->stages_tried++;
        if (v != AC_UNDECIDED) {
            cert->stage = AC_STAGE_EXACT;
            cert->prec = 0;
            cert->verdict = v;
            set_method(cert, q->method_exact ? q->method_exact : "exact rational arithmetic");
        }
    }
out:
    if (st)
        cert->verdict = AC_UNDECIDED;
    cert->seconds = ac_seconds() - t0;
    return st;
}
