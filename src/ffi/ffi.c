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
#include "attncheck/models.h"
#include "attncheck/multihead.h"
#include "attncheck/theorem1.h"
#include "attncheck/theorem2.h"
#include "nn/nn_impl.h"

int ac_ffi_version(void)
{
    return AC_FFI_VERSION;
}

size_t ac_ffi_sizeof(int which)
{
    switch (which) {
    case 0: return sizeof(ac_err);
    case 1: return sizeof(ac_cert);
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


/* ---- Pretrained checkpoints ----------------------------------------------- */

int ac_ffi_model_check(const char *dir, char *desc, size_t size, ac_err *err)
{
    ac_err_clear(err);
    if (!dir)
        return ac_err_set(err, AC_EUSAGE, "no checkpoint directory");
    ac_model_opts o;
    ac_model_opts_default(&o);
    o.checksum = 0;
    ac_model m = {0};
    int rc = ac_model_open(&m, dir, &o, err);
    for (size_t l = 0; rc == AC_OK && l < m.layers; l++) {
        ac_attn_layer L = {0};
        rc = ac_model_layer(&L, &m, l, err);
        ac_attn_layer_free(&L);
    }
    if (rc == AC_OK && desc && size)
        ac_model_describe(desc, size, &m);
    ac_model_close(&m);
    return rc;
}
