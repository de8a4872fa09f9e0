/* t1_mask_tool.c — Theorem 1 for masked heads and heads with biases on files,
 * for the oracle suite tests/t1_mask_hostile.py (doc/mathematics.md §3.8).
 * A test program: the command line of attncheck itself has no mask yet.
 *
 *   t1_mask_tool check X.npy P.npy [OPTIONS]      ac_t1_check, JSON on stdout
 *   t1_mask_tool threshold X.npy P.npy [OPTIONS]  ac_t1_threshold_at_tol
 *   t1_mask_tool certify X.npy P.npy Wk.npy Wq.npy [OPTIONS]
 *                                                 ac_head_certify_masked
 *   t1_mask_tool measure N R SEED [OPTIONS]       a causal pattern of rank-R
 *                                                 logits on X = I_N, the head
 *                                                 size at tol and its time
 * OPTIONS:
 *   --causal  --window W  --valid V.npy (n entries 0/1)  --keep M.npy (n x n
 *   0/1, row = key)  --bias  --dk K  --tol T  --at K  --optimize I
 *   --weights DIR (check: write DIR/Wk.npy, DIR/Wq.npy)
 * Exit status: 0, or the library's status with its message on stderr (64
 * for bad usage). */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/head.h"
#include "attncheck/json.h"
#include "attncheck/npy.h"
#include "attncheck/rng.h"
#include "attncheck/theorem1.h"

typedef struct {
    ac_t1_mask mask;
    int have_mask;
    unsigned char *valid, *keep;
    size_t dk, at;
    int bias, optimize;
    double tol;
    const char *wdir;
} tool_opts;

static int usage(void)
{
    fputs("usage: t1_mask_tool check|threshold X.npy P.npy [--causal] [--window W] "
          "[--valid V.npy] [--keep M.npy] [--bias] [--dk K] [--tol T] [--at K] "
          "[--optimize I] [--weights DIR]\n"
          "       t1_mask_tool certify X.npy P.npy Wk.npy Wq.npy [mask options] [--tol T]\n"
          "       t1_mask_tool measure N R SEED [--tol T]\n",
          stderr);
    return AC_EUSAGE;
}

static int fail(const ac_err *e)
{
    fprintf(stderr, "t1_mask_tool: %s\n", e->msg);
    return e->status ? e->status : AC_EINTERNAL;
}

/* 0/1 flags from a float64 file (any other value is bad input). */
static int read_flags(const char *path, unsigned char **out, size_t *cnt, ac_err *err)
{
    ac_array a = {0};
    int st = ac_npy_read(path, &a, err);
    if (st)
        return st;
    *cnt = 1;
    for (size_t k = 0; k < a.ndim; k++)
        *cnt *= a.shape[k];
    *out = malloc(*cnt ? *cnt : 1);
    for (size_t i = 0; i < *cnt && *out; i++) {
        double v = a.data[i];
        if (v != 0.0 && v != 1.0) {
            st = ac_err_set(err, AC_EDATA, "%s: entry %zu = %g is not 0 or 1", path, i, v);
            break;
        }
        (*out)[i] = v != 0.0;
    }
    if (!*out)
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
    ac_array_free(&a);
    return st;
}

static int parse(tool_opts *t, int argc, char **argv, int first, ac_err *err)
{
    memset(t, 0, sizeof *t);
    t->tol = AC_T1_TOL_DEFAULT;
    t->optimize = 200;
    t->mask.name = "mask";
    for (int i = first; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int st;
        if (!strcmp(a, "--causal"))
            t->mask.causal = t->have_mask = 1;
        else if (!strcmp(a, "--bias"))
            t->bias = 1;
        else if (v && !strcmp(a, "--window")) {
            t->mask.window = strtoul(v, NULL, 10);
            t->have_mask = 1;
            i++;
        } else if (v && !strcmp(a, "--valid")) {
            if ((st = read_flags(v, &t->valid, &t->mask.nvalid, err)))
                return st;
            t->mask.valid = t->valid;
            t->have_mask = 1;
            i++;
        } else if (v && !strcmp(a, "--keep")) {
            if ((st = read_flags(v, &t->keep, &t->mask.nkeep, err)))
                return st;
            t->mask.keep = t->keep;
            t->have_mask = 1;
            i++;
        } else if (v && !strcmp(a, "--dk"))
            t->dk = strtoul(v, NULL, 10), i++;
        else if (v && !strcmp(a, "--at"))
            t->at = strtoul(v, NULL, 10), i++;
        else if (v && !strcmp(a, "--tol"))
            t->tol = strtod(v, NULL), i++;
        else if (v && !strcmp(a, "--optimize"))
            t->optimize = atoi(v), i++;
        else if (v && !strcmp(a, "--weights"))
            t->wdir = v, i++;
        else
            return ac_err_set(err, AC_EUSAGE, "unknown or incomplete option '%s'", a);
    }
    return AC_OK;
}

static void set_opts(ac_t1_opts *o, const tool_opts *t)
{
    ac_t1_opts_default(o);
    o->dk = t->dk;
    o->tol = t->tol;
    o->bias = t->bias;
    o->optimize = t->optimize;
    o->mask = t->have_mask ? &t->mask : NULL;
}

static void json_threshold(ac_json *j, const char *key, const ac_t1_threshold *t)
{
    ac_json_key(j, key);
    ac_json_begin_object(j);
    ac_json_kv_int(j, "lo", t->lo);
    ac_json_kv_int(j, "hi", t->hi);
    ac_json_kv_bool(j, "none", t->none);
    ac_json_kv_bool(j, "if_any", t->if_any);
    ac_json_kv_bool(j, "exact", t->exact);
    ac_json_kv_string(j, "method", t->method);
    ac_json_end_object(j);
}

static int cmd_check(const ac_mat *X, const ac_mat *P, const tool_opts *t, ac_err *err)
{
    ac_t1_opts o;
    ac_t1_result res;
    set_opts(&o, t);
    int st = ac_t1_check(&res, X, P, &o, err);
    if (st) {
        ac_t1_result_free(&res);
        return st;
    }
    ac_json *j = ac_json_new(stdout, 0);
    ac_json_begin_object(j);
    ac_json_kv_string(j, "verdict", ac_verdict_name(res.verdict));
    ac_json_kv_string(j, "exact", ac_verdict_name(res.exact));
    ac_json_kv_string(j, "exact_method", res.exact_method);
    json_threshold(j, "threshold", &res.threshold);
    ac_json_kv_int(j, "rank", res.rank);
    ac_json_kv_int(j, "dk", (long long)res.dk);
    ac_json_kv_number(j, "tol", o.tol);
    ac_json_kv_number(j, "dist_lo", res.dist_lo);
    ac_json_kv_number(j, "dist_hi", res.dist_hi);
    ac_json_kv_string(j, "lower_method", res.lower_method);
    ac_json_kv_string(j, "upper_method", res.upper_method);
    ac_json_kv_number(j, "weights_lo", res.weights_cert.lo);
    ac_json_kv_number(j, "weights_hi", res.weights_cert.hi);
    ac_json_kv_int(j, "weights_stage", res.weights_cert.stage);
    ac_json_kv_bool(j, "weights_unusable", res.weights_unusable);
    ac_json_kv_number(j, "norm_gap", res.norm_gap);
    ac_json_kv_int(j, "x_scale", res.x_scale);
    ac_json_kv_bool(j, "staircase", res.staircase);
    ac_json_kv_int(j, "nblocks", (long long)res.nblocks);
    ac_json_kv_int(j, "nvisible", (long long)res.nvisible);
    ac_json_kv_string(j, "support", res.support);
    ac_json_kv_string(j, "summary", res.summary);
    ac_json_kv_int(j, "route", res.route);
    ac_json_end_object(j);
    st = ac_json_error(j);
    ac_json_free(j);
    printf("\n");
    if (!st && t->wdir && res.Wk.data) {
        char path[4096];
        snprintf(path, sizeof path, "%s/Wk.npy", t->wdir);
        if (!(st = ac_npy_write_mat(path, &res.Wk, err))) {
            snprintf(path, sizeof path, "%s/Wq.npy", t->wdir);
            st = ac_npy_write_mat(path, &res.Wq, err);
        }
    }
    ac_t1_result_free(&res);
    return st;
}

static void json_tol_threshold(ac_json *j, const ac_t1_tol_threshold *r)
{
    ac_json_kv_int(j, "lo", r->lo);
    ac_json_kv_int(j, "hi", r->hi);
    ac_json_kv_bool(j, "exact", r->exact);
    ac_json_kv_int(j, "dk_max", (long long)r->dk_max);
    ac_json_kv_string(j, "method", r->method);
    json_threshold(j, "exact_rep", &r->exact_rep);
    ac_json_key(j, "at");
    ac_json_begin_object(j);
    ac_json_kv_int(j, "dk", (long long)r->dk_at);
    ac_json_kv_string(j, "verdict", ac_verdict_name(r->at_verdict));
    ac_json_kv_number(j, "lo", r->at_lo);
    ac_json_kv_number(j, "hi", r->at_hi);
    ac_json_kv_string(j, "lower", r->at_lower);
    ac_json_kv_string(j, "upper", r->at_upper);
    ac_json_end_object(j);
    ac_json_key(j, "evals");
    ac_json_begin_array(j);
    for (size_t q = 0; q < r->nevals; q++) {
        ac_json_begin_object(j);
        ac_json_kv_int(j, "dk", r->eval[q].dk);
        ac_json_kv_string(j, "verdict", ac_verdict_name(r->eval[q].verdict));
        ac_json_kv_number(j, "lo", r->eval[q].lo);
        ac_json_kv_number(j, "hi", r->eval[q].hi);
        ac_json_end_object(j);
    }
    ac_json_end_array(j);
    ac_json_kv_number(j, "seconds", r->seconds);
}

static int cmd_threshold(const ac_mat *X, const ac_mat *P, const tool_opts *t, ac_err *err)
{
    ac_t1_opts o;
    ac_t1_tol_threshold r;
    set_opts(&o, t);
    int st = ac_t1_threshold_at_tol(&r, X, P, t->at, &o, err);
    if (st)
        return st;
    ac_json *j = ac_json_new(stdout, 0);
    ac_json_begin_object(j);
    ac_json_kv_number(j, "tol", o.tol);
    json_tol_threshold(j, &r);
    ac_json_end_object(j);
    st = ac_json_error(j);
    ac_json_free(j);
    printf("\n");
    return st;
}

static int cmd_certify(const ac_mat *X, const ac_mat *P, const ac_mat *Wk, const ac_mat *Wq,
                       const tool_opts *t, ac_err *err)
{
    size_t n = X->cols;
    unsigned char *om = malloc(n > 0 ? n * n : 1);
    ac_cert c;
    ac_schedule sched = ac_schedule_default();
    int st = om ? ac_t1_mask_support(om, n, t->have_mask ? &t->mask : NULL, err)
                : ac_err_set(err, AC_EINTERNAL, "out of memory");
    if (!st)
        st = ac_head_certify_masked(&c, X, Wk, Wq, P, om, t->tol, &sched, err);
    double lo0 = 0, hi0 = INFINITY;
    if (!st)
        st = ac_head_maxdev_enclose_masked(&lo0, &hi0, X, Wk, Wq, P, om, 0, err);
    if (!st) {
        ac_json *j = ac_json_new(stdout, 0);
        ac_json_begin_object(j);
        ac_json_kv_string(j, "verdict", ac_verdict_name(c.verdict));
        ac_json_kv_number(j, "lo", c.lo);
        ac_json_kv_number(j, "hi", c.hi);
        ac_json_kv_int(j, "stage", c.stage);
        ac_json_kv_number(j, "stage0_lo", lo0);
        ac_json_kv_number(j, "stage0_hi", hi0);
        ac_json_kv_string(j, "method", c.method);
        ac_json_end_object(j);
        st = ac_json_error(j);
        ac_json_free(j);
        printf("\n");
    }
    free(om);
    return st;
}

/* A causal pattern of rank-R logits: Z = A B / sqrt(R) scaled to unit
 * entries on average, A (N x R), B (R x N) Gaussian; X = I_N. */
static int cmd_measure(size_t n, size_t r, unsigned long long seed, const tool_opts *t,
                       ac_err *err)
{
    ac_mat X = {0}, P = {0}, A = {0}, B = {0};
    ac_rng g;
    int st;
    if ((st = ac_mat_init(&X, n, n, err)) || (st = ac_mat_init(&P, n, n, err)) ||
        (st = ac_mat_init(&A, n, r, err)) || (st = ac_mat_init(&B, r, n, err)))
        goto out;
    ac_rng_init(&g, seed, 11, 0);
    ac_rng_normal_fill(&g, A.data, n * r);
    ac_rng_normal_fill(&g, B.data, r * n);
    for (size_t i = 0; i < n; i++)
        AC_MAT(&X, i, i) = 1.0;
    for (size_t j = 0; j < n; j++) {
        double m = -INFINITY, s = 0;
        for (size_t i = 0; i <= j; i++) {
            double z = 0;
            for (size_t k = 0; k < r; k++)
                z += AC_MAT(&A, i, k) * AC_MAT(&B, k, j);
            AC_MAT(&P, i, j) = z / sqrt((double)r);
            m = fmax(m, AC_MAT(&P, i, j));
        }
        for (size_t i = 0; i <= j; i++)
            s += (AC_MAT(&P, i, j) = exp(AC_MAT(&P, i, j) - m));
        for (size_t i = 0; i <= j; i++)
            AC_MAT(&P, i, j) /= s;
    }
    tool_opts tt = *t;
    tt.mask.causal = tt.have_mask = 1;
    ac_t1_opts o;
    ac_t1_tol_threshold res;
    set_opts(&o, &tt);
    if ((st = ac_t1_threshold_at_tol(&res, &X, &P, 0, &o, err)))
        goto out;
    ac_json *j = ac_json_new(stdout, 0);
    ac_json_begin_object(j);
    ac_json_kv_int(j, "n", (long long)n);
    ac_json_kv_int(j, "r", (long long)r);
    ac_json_kv_uint(j, "seed", seed);
    ac_json_kv_number(j, "tol", o.tol);
    json_tol_threshold(j, &res);
    ac_json_end_object(j);
    st = ac_json_error(j);
    ac_json_free(j);
    printf("\n");
out:
    ac_mat_free(&X);
    ac_mat_free(&P);
    ac_mat_free(&A);
    ac_mat_free(&B);
    return st;
}

int main(int argc, char **argv)
{
    ac_mat X = {0}, P = {0}, Wk = {0}, Wq = {0};
    tool_opts t;
    ac_err err;
    int st;
    ac_err_clear(&err);
    memset(&t, 0, sizeof t);
    if (argc < 3)
        return usage();
    const char *cmd = argv[1];
    if (!strcmp(cmd, "measure")) {
        if (argc < 5)
            return usage();
        if ((st = parse(&t, argc, argv, 5, &err)) ||
            (st = cmd_measure(strtoul(argv[2], NULL, 10), strtoul(argv[3], NULL, 10),
                              strtoull(argv[4], NULL, 10), &t, &err)))
            st = fail(&err);
        goto done;
    }
    if (argc < 4)
        return usage();
    int first = !strcmp(cmd, "certify") ? 6 : 4;
    if (argc < first)
        return usage();
    if ((st = ac_npy_read_mat(argv[2], &X, &err)) || (st = ac_npy_read_mat(argv[3], &P, &err)) ||
        (st = parse(&t, argc, argv, first, &err)))
        goto out;
    if (!strcmp(cmd, "check"))
        st = cmd_check(&X, &P, &t, &err);
    else if (!strcmp(cmd, "threshold"))
        st = cmd_threshold(&X, &P, &t, &err);
    else if (!strcmp(cmd, "certify")) {
        if (!(st = ac_npy_read_mat(argv[4], &Wk, &err)) &&
            !(st = ac_npy_read_mat(argv[5], &Wq, &err)))
            st = cmd_certify(&X, &P, &Wk, &Wq, &t, &err);
    } else {
        st = usage();
        goto done;
    }
out:
    if (st)
        st = fail(&err);
done:
    free(t.valid);
    free(t.keep);
    ac_mat_free(&X);
    ac_mat_free(&P);
    ac_mat_free(&Wk);
    ac_mat_free(&Wq);
    return st;
}
