/* result.c — the result of a Theorem 1 check (attncheck/theorem1.h): its
 * proof steps, the certificate of the weights it writes (ac_head_certify,
 * attention/head.c), and freeing it.  Used by every route (construct.c,
 * decide.c, refine.c) and by the dispatcher (check.c). */
#include <config.h>

#include "attention/head_impl.h"
#include "theorem1/t1_impl.h"

void ac_t1_add_step(ac_t1_result *res, const char *name, const char *quantity, double lo,
                    double hi, int stage, long prec, const char *note)
{
    ac_step_add(res->steps, &res->nsteps, AC_T1_MAX_STEPS, name, quantity, lo, hi, stage, prec,
                note);
}

int ac_t1_certify_weights(ac_cert *cert, const ac_mat *X, const ac_mat *Wk, const ac_mat *Wq,
                          const ac_mat *P, const double *pre, const ac_t1_opts *o, ac_err *err)
{
    return ac_head_certify_pre(cert, X, Wk, Wq, P, pre, o->tol, &o->sched, err);
}

void ac_t1_result_free(ac_t1_result *res)
{
    if (!res)
        return;
    ac_mat_free(&res->Wk);
    ac_mat_free(&res->Wq);
}
