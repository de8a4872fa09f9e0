/* ffi.c -- flat entry points for foreign-function interfaces (attncheck/ffi.h).
 *
 * Each function copies plain arrays into the library's structures, calls the
 * one library function that does the work, and copies the answer into a
 * fixed info structure.  The Python package (python/attncheck) is the user. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/condition.h"
#include "attncheck/ffi.h"
#include "attncheck/head.h"
#include "attncheck/multihead.h"
#include "attncheck/theorem1.h"
#include "attncheck/theorem2.h"
#include "nn/nn_impl.h"

struct ac_ffi_t1 {
    ac_t1_result res;
};

struct ac_ffi_t2 {
    ac_t2_result res;
};

int ac_ffi_version(void)
{
    return AC_FFI_VERSION;
}

size_t ac_ffi_sizeof(int which)
{
    switch (which) {
    case 0: return sizeof(ac_err);
    case 1: return sizeof(ac_cert);
    case 2: return sizeof(ac_ffi_t1_info);
    case 3: return sizeof(ac_ffi_t2_info);
    case 4: return sizeof(ac_ffi_cond_info);
    default: return 0;
    }
}

uint64_t ac_ffi_fnv1a64(const double *x, size_t n)
{
    return fnv_doubles(FNV_INIT, x, n);
}

/* A rows x cols matrix holding a copy of data (row-major). */
static int mat_from(ac_mat *m, const double *data, size_t rows, size_t cols, const char *name,
                    ac_err *err)
{
    if (!data && rows * cols > 0)
        return ac_err_set_field(err, AC_EUSAGE, "", "%s: no data", name);
    int rc = ac_mat_init(m, rows, cols, err);
    if (rc == AC_OK && rows * cols > 0)
        memcpy(m->data, data, rows * cols * sizeof *m->data);
    return rc;
}

/* ---- Theorem 1 ------------------------------------------------------------ */

int ac_ffi_t1_check(ac_ffi_t1 **out, const double *X, size_t d, size_t n, const double *P,
                    size_t dk, double tol, int normalize, ac_err *err)
{
    ac_err_clear(err);
    *out = calloc(1, sizeof **out);
    if (!*out)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    ac_mat Xm = {0}, Pm = {0};
    int rc = mat_from(&Xm, X, d, n, "X", err);
    if (rc == AC_OK)
        rc = mat_from(&Pm, P, n, n, "P", err);
    if (rc == AC_OK) {
        if (normalize)
            ac_t1_normalize(&Pm);
        ac_t1_opts o;
        ac_t1_opts_default(&o);
        o.dk = dk;
        if (tol >= 0)
            o.tol = tol;
        rc = ac_t1_check(&(*out)->res, &Xm, &Pm, &o, err);
    }
    ac_mat_free(&Xm);
    ac_mat_free(&Pm);
    return rc;
}

void ac_ffi_t1_get(const ac_ffi_t1 *r, ac_ffi_t1_info *info)
{
    const ac_t1_result *s = &r->res;
    memset(info, 0, sizeof *info);
    info->verdict = s->verdict;
    info->exact = s->exact;
    info->route = (int)s->route;
    info->rank = s->rank;
    info->d = s->d;
    info->n = s->n;
    info->dk = s->dk;
    info->dist_lo = s->dist_lo;
    info->dist_hi = s->dist_hi;
    info->rho_lo = s->rho_lo;
    info->rho_hi = s->rho_hi;
    info->lowrank_lo = s->lowrank_lo;
    info->lowrank_hi = s->lowrank_hi;
    info->cert = s->cert;
    info->weights_cert = s->weights_cert;
    info->has_weights = s->Wq.rows * s->Wq.cols > 0;
    memcpy(info->summary, s->summary, sizeof info->summary);
    info->summary[sizeof info->summary - 1] = '\0';
}

size_t ac_ffi_t1_weights(const ac_ffi_t1 *r, int which, double *out)
{
    const ac_mat *m = which == 0 ? &r->res.Wq : &r->res.Wk;
    size_t k = m->rows * m->cols;
    if (k && out)
        memcpy(out, m->data, k * sizeof *out);
    return k;
}

void ac_ffi_t1_free(ac_ffi_t1 *r)
{
    if (!r)
        return;
    ac_t1_result_free(&r->res);
    free(r);
}

int ac_ffi_head_certify(ac_cert *cert, const double *X, size_t d, size_t n, const double *Wq,
                        const double *Wk, size_t dk, const double *P, double tol, ac_err *err)
{
    ac_err_clear(err);
    ac_mat Xm = {0}, Qm = {0}, Km = {0}, Pm = {0};
    ac_schedule sched = ac_schedule_default();
    int rc = mat_from(&Xm, X, d, n, "X", err);
    if (rc == AC_OK)
        rc = mat_from(&Qm, Wq, dk, d, "Wq", err);
    if (rc == AC_OK)
        rc = mat_from(&Km, Wk, dk, d, "Wk", err);
    if (rc == AC_OK)
        rc = mat_from(&Pm, P, n, n, "P", err);
    if (rc == AC_OK)
        rc = ac_head_certify(cert, &Xm, &Km, &Qm, &Pm, tol, &sched, err);
    ac_mat_free(&Xm);
    ac_mat_free(&Qm);
    ac_mat_free(&Km);
    ac_mat_free(&Pm);
    return rc;
}

int ac_ffi_t1_generate(double *X, double *P, size_t d, size_t n, int kind, size_t dk,
                       uint64_t seed, ac_err *err)
{
    ac_err_clear(err);
    ac_mat Xm = {0}, Pm = {0};
    int rc = ac_t1_generate(&Xm, &Pm, d, n, seed, err);
    if (rc == AC_OK && kind == 1) {
        ac_mat_free(&Pm);
        rc = ac_t1_generate_representable(&Pm, &Xm, dk ? dk : d, seed, err);
    }
    if (rc == AC_OK) {
        memcpy(X, Xm.data, d * n * sizeof *X);
        memcpy(P, Pm.data, n * n * sizeof *P);
    }
    ac_mat_free(&Xm);
    ac_mat_free(&Pm);
    return rc;
}

/* ---- Theorem 2 ------------------------------------------------------------ */

static int mh_from(ac_mh *L, const double *params, size_t d, size_t h, size_t hs,
                   const char *name, ac_err *err)
{
    if (!params)
        return ac_err_set_field(err, AC_EUSAGE, "", "%s: no parameters", name);
    int rc = ac_mh_init(L, d, h, hs, err);
    if (rc == AC_OK)
        memcpy(L->params, params, ac_mh_nparams(L) * sizeof *params);
    return rc;
}

int ac_ffi_t2_separate(ac_ffi_t2 **out, const double *W, size_t hs_w, const double *V,
                       size_t hs_v, size_t d, size_t h, size_t n, uint64_t seed, ac_err *err)
{
    ac_err_clear(err);
    *out = calloc(1, sizeof **out);
    if (!*out)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    ac_mh Wl = {0}, Vl = {0};
    int rc = mh_from(&Wl, W, d, h, hs_w, "f_W", err);
    if (rc == AC_OK)
        rc = mh_from(&Vl, V, d, h, hs_v, "g_V", err);
    if (rc == AC_OK) {
        ac_t2_opts o;
        ac_t2_opts_default(&o);
        o.seed = seed;
        rc = ac_t2_separate(&(*out)->res, &Wl, &Vl, n, &o, err);
    }
    ac_mh_free(&Wl);
    ac_mh_free(&Vl);
    return rc;
}

void ac_ffi_t2_get(const ac_ffi_t2 *r, ac_ffi_t2_info *info)
{
    const ac_t2_result *s = &r->res;
    memset(info, 0, sizeof *info);
    info->verdict = s->verdict;
    info->kase = (int)s->cls.kase;
    info->hypotheses = s->hyp.applies;
    info->identical = s->identical;
    info->d = s->hyp.d;
    info->h = s->hyp.h;
    info->hs_w = s->hyp.h ? s->hyp.d / s->hyp.h : 0;
    info->hs_v = s->hyp.dp;
    info->n = s->hyp.n;
    info->cert = s->best.cert;
    info->rel_lo = s->best.rel_lo;
    info->has_x = s->best.X.rows * s->best.X.cols > 0;
    memcpy(info->summary, s->summary, sizeof info->summary);
    info->summary[sizeof info->summary - 1] = '\0';
}

size_t ac_ffi_t2_x(const ac_ffi_t2 *r, double *out)
{
    const ac_mat *m = &r->res.best.X;
    size_t k = m->rows * m->cols;
    if (k && out)
        memcpy(out, m->data, k * sizeof *out);
    return k;
}

void ac_ffi_t2_free(ac_ffi_t2 *r)
{
    if (!r)
        return;
    ac_t2_result_free(&r->res);
    free(r);
}

int ac_ffi_t2_generate(double *W, double *V, size_t d, size_t h, size_t dp, int kase,
                       uint64_t seed, ac_err *err)
{
    ac_err_clear(err);
    ac_mh Wl = {0}, Vl = {0};
    int rc = ac_t2_generate_v(&Vl, d, h, dp, ac_t2_gen_for_case(kase), seed, err);
    if (rc == AC_OK)
        rc = ac_t2_generate_w(&Wl, &Vl, kase, seed, err);
    if (rc == AC_OK) {
        memcpy(W, Wl.params, ac_mh_nparams(&Wl) * sizeof *W);
        memcpy(V, Vl.params, ac_mh_nparams(&Vl) * sizeof *V);
    }
    ac_mh_free(&Wl);
    ac_mh_free(&Vl);
    return rc;
}

int ac_ffi_mh_forward(double *Y, const double *params, size_t d, size_t h, size_t hs,
                      const double *X, size_t n, ac_err *err)
{
    ac_err_clear(err);
    ac_mh L = {0};
    ac_mat Xm = {0}, Ym = {0};
    int rc = mh_from(&L, params, d, h, hs, "the layer", err);
    if (rc == AC_OK)
        rc = ac_mat_init(&Xm, d, n, err);
    if (rc == AC_OK)
        rc = ac_mat_init(&Ym, d, n, err);
    if (rc == AC_OK) {
        memcpy(Xm.data, X, d * n * sizeof *X);
        rc = ac_mh_forward(&Ym, &L, &Xm, NULL, err);
    }
    if (rc == AC_OK)
        memcpy(Y, Ym.data, d * n * sizeof *Y);
    ac_mat_free(&Xm);
    ac_mat_free(&Ym);
    ac_mh_free(&L);
    return rc;
}

int ac_ffi_mh_save_dir(const double *params, size_t d, size_t h, size_t hs, const char *dir,
                       char prefix, ac_err *err)
{
    ac_err_clear(err);
    ac_mh L = {0};
    int rc = mh_from(&L, params, d, h, hs, "the layer", err);
    if (rc == AC_OK)
        rc = ac_mh_save_dir(&L, dir, prefix, err);
    ac_mh_free(&L);
    return rc;
}

/* ---- Theorem 3.2 ------------------------------------------------------------ */

int ac_ffi_condition(ac_ffi_cond_info *info, double *kappa, size_t h, size_t head_dim, size_t N,
                     size_t input_dim, int mode, size_t trials, uint64_t seed, ac_err *err)
{
    ac_err_clear(err);
    memset(info, 0, sizeof *info);
    if (mode != 0 && mode != 1)
        return ac_err_set_field(err, AC_EUSAGE, "mode", "mode must be 0 (iid) or 1 (attention)");
    ac_cond_opts o;
    ac_cond_opts_default(&o);
    o.N = N;
    o.input_dim = input_dim;
    o.mode = mode ? AC_COND_ATTENTION : AC_COND_IID;
    o.trials = trials;
    o.seed = seed;
    o.threads = 1;
    ac_cond_result r;
    memset(&r, 0, sizeof r);
    int rc = ac_cond_run(&r, h, head_dim, &o, err);
    if (rc == AC_OK) {
        info->h = r.h;
        info->D = r.D;
        info->N = r.N;
        info->trials = r.trials;
        info->median = r.st.median;
        info->mean = r.st.mean;
        info->q05 = r.st.q05;
        info->q95 = r.st.q95;
        info->elog = r.st.elog;
        info->first_order = r.pred.first_order;
        info->tw_median = r.pred.tw_median;
        info->n_unresolved = r.n_unresolved;
        if (kappa)
            for (size_t t = 0; t < r.trials; t++)
                kappa[t] = r.samples[t].kappa;
    }
    ac_cond_result_free(&r);
    return rc;
}
