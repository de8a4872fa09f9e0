/* shard.c — condition sweeps in shards: the samples file and the merge
 * (attncheck/shard.h).
 *
 * A shard file is one JSON object:
 *
 *   {"format": "attncheck-condition-samples", "version": 1, "attncheck": "0.1.0",
 *    "words": ["--heads", "1,2", ...], "shard": [i, k], "trials": [lo, hi],
 *    "results": [{"h": .., "d": .., "N": .., "E": .., "mode": "iid", "seed": "..",
 *                 "T": .., "rtol": "0x1.5p-27", "spectrum": m or 0,
 *                 "samples": [[kappa, sigma1, sigmin, relerr, route, resolved, prec,
 *                              cert, cert_stage, cert_prec, s1_lo, s1_hi, smin_lo,
 *                              smin_hi, kappa_lo, kappa_hi, dev_lo, dev_hi], ...],
 *                 "eig": [[...], ...],
 *                 "time": [t_sample, t_reduce, t_solve, t_mpfr, t_certify, flops]}]}
 *
 * Doubles are strings in C's hexadecimal notation ("%a"; "inf", "nan"), so
 * that reading them back with strtod is exact and non-finite values need no
 * JSON extension. */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/fileio.h"
#include "attncheck/json.h"
#include "attncheck/shard.h"
#include "conditioning/cond_impl.h"
#include "io/jsonparse.h"

#define SHARD_FORMAT "attncheck-condition-samples"
#define SAMPLE_FIELDS 18

void ac_cond_shard_range(size_t trials, size_t i, size_t k, size_t *lo, size_t *hi)
{
    /* (i - 1) T / k without overflow for T, k < 2^32 (sizes are checked) */
    *lo = (size_t)(((unsigned long long)(i - 1) * trials) / k);
    *hi = (size_t)(((unsigned long long)i * trials) / k);
}

static void hexnum(ac_json *j, double x)
{
    char buf[40];
    snprintf(buf, sizeof buf, "%a", x);
    ac_json_string(j, buf);
}

static void sample_json(ac_json *j, const ac_cond_sample *s)
{
    ac_json_begin_array(j);
    hexnum(j, s->kappa);
    hexnum(j, s->sigma1);
    hexnum(j, s->sigmin);
    hexnum(j, s->relerr);
    ac_json_int(j, s->route);
    ac_json_int(j, s->resolved);
    ac_json_int(j, s->prec);
    ac_json_int(j, (long long)s->cert);
    ac_json_int(j, s->cert_stage);
    ac_json_int(j, s->cert_prec);
    const double *b[8] = {&s->s1_lo, &s->s1_hi, &s->smin_lo, &s->smin_hi,
                          &s->kappa_lo, &s->kappa_hi, &s->dev_lo, &s->dev_hi};
    for (int k = 0; k < 8; k++)
        hexnum(j, *b[k]);
    ac_json_end_array(j);
}

static void result_json(ac_json *j, const ac_cond_result *r, size_t lo, size_t hi,
                        const ac_cond_opts *o)
{
    char seed[24];
    snprintf(seed, sizeof seed, "%" PRIu64, r->seed);
    ac_json_begin_object(j);
    ac_json_kv_int(j, "h", (long long)r->h);
    ac_json_kv_int(j, "d", (long long)r->d);
    ac_json_kv_int(j, "N", (long long)r->N);
    ac_json_kv_int(j, "E", (long long)r->E);
    ac_json_kv_string(j, "mode", ac_cond_mode_name(r->mode));
    ac_json_kv_string(j, "seed", seed);
    ac_json_kv_int(j, "T", (long long)r->trials);
    ac_json_key(j, "rtol");
    hexnum(j, r->rtol);
    ac_json_kv_int(j, "spectrum", o->spectrum ? (long long)r->m : 0);
    ac_json_key(j, "samples");
    ac_json_begin_array(j);
    for (size_t t = lo; t < hi; t++)
        sample_json(j, &r->samples[t]);
    ac_json_end_array(j);
    if (o->spectrum) {
        ac_json_key(j, "eig");
        ac_json_begin_array(j);
        for (size_t t = lo; t < hi; t++) {
            ac_json_begin_array(j);
            for (size_t k = 0; k < r->m; k++)
                hexnum(j, r->eig[t * r->m + k]);
            ac_json_end_array(j);
        }
        ac_json_end_array(j);
    }
    ac_json_key(j, "time");
    ac_json_begin_array(j);
    const double tm[6] = {r->t_sample, r->t_reduce, r->t_solve, r->t_mpfr, r->t_certify,
                          r->flops};
    for (int k = 0; k < 6; k++)
        hexnum(j, tm[k]);
    ac_json_end_array(j);
    ac_json_end_object(j);
}

int ac_cond_shard_write(const char *path, const char *const *words, size_t nwords, size_t i,
                        size_t k, const ac_cond_result *res, size_t nres, size_t lo, size_t hi,
                        const ac_cond_opts *o, ac_err *err)
{
    ac_atomic f;
    int st = ac_atomic_open(&f, path, err);
    if (st)
        return st;
    ac_json *j = ac_json_new(f.fp, 0);
    if (!j) {
        ac_atomic_abort(&f);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    ac_json_begin_object(j);
    ac_json_kv_string(j, "format", SHARD_FORMAT);
    ac_json_kv_int(j, "version", 1);
    ac_json_kv_string(j, "attncheck", PACKAGE_VERSION);
    ac_json_key(j, "words");
    ac_json_begin_array(j);
    for (size_t w = 0; w < nwords; w++)
        ac_json_string(j, words[w]);
    ac_json_end_array(j);
    ac_json_kv_int_pair(j, "shard", (long long)i, (long long)k);
    ac_json_kv_int_pair(j, "trials", (long long)lo, (long long)hi);
    ac_json_key(j, "results");
    ac_json_begin_array(j);
    for (size_t r = 0; r < nres; r++)
        result_json(j, &res[r], lo, hi, o);
    ac_json_end_array(j);
    ac_json_end_object(j);
    fputc('\n', f.fp);
    int jst = ac_json_error(j);
    ac_json_free(j);
    if (jst) {
        ac_atomic_abort(&f);
        return ac_err_set(err, AC_ECANTCREAT, "%s: cannot write", path);
    }
    return ac_atomic_commit(&f, err);
}

/* ---- reading ---------------------------------------------------------------- */

static int bad(ac_err *err, const char *path, const char *what)
{
    return ac_err_set(err, AC_EDATA, "%s: not a condition shard file: %s", path, what);
}

static int jdouble(const ac_jv *v, double *x)
{
    if (!v || v->type != AC_JV_STRING)
        return 0;
    char *end;
    *x = strtod(v->s, &end);
    return end != v->s && *end == '\0';
}

static int jint(const ac_jv *v, long long *x)
{
    if (!v || v->type != AC_JV_NUMBER)
        return 0;
    char *end;
    *x = strtoll(v->s, &end, 10);
    return end != v->s && *end == '\0';
}

static int read_sample(ac_cond_sample *s, const ac_jv *a)
{
    if (!a || a->type != AC_JV_ARRAY || a->n != SAMPLE_FIELDS)
        return 0;
    long long iv[6];
    int ok = jdouble(a->kids[0], &s->kappa) && jdouble(a->kids[1], &s->sigma1) &&
             jdouble(a->kids[2], &s->sigmin) && jdouble(a->kids[3], &s->relerr);
    for (int k = 0; ok && k < 6; k++)
        ok = jint(a->kids[4 + k], &iv[k]);
    if (!ok)
        return 0;
    s->route = (int)iv[0];
    s->resolved = (int)iv[1];
    s->prec = (long)iv[2];
    s->cert = (ac_verdict)iv[3];
    s->cert_stage = (int)iv[4];
    s->cert_prec = (long)iv[5];
    double *b[8] = {&s->s1_lo, &s->s1_hi, &s->smin_lo, &s->smin_hi,
                    &s->kappa_lo, &s->kappa_hi, &s->dev_lo, &s->dev_hi};
    for (int k = 0; k < 8; k++)
        if (!jdouble(a->kids[10 + k], b[k]))
            return 0;
    return s->route >= 0 && s->route < AC_COND_NROUTES && iv[3] >= 0 && iv[3] <= 2;
}

static int get_size(const ac_jv *o, const char *key, size_t *x)
{
    long long v;
    if (!jint(ac_jv_get(o, key), &v) || v < 0)
        return 0;
    *x = (size_t)v;
    return 1;
}

/* One element of "results": sizes and samples [lo, hi). */
static int read_result(ac_cond_result *r, const ac_jv *o, size_t lo, size_t hi, const char *path,
                       ac_err *err)
{
    const char *mode, *seed;
    size_t spectrum;
    double rtol;
    if (!o || o->type != AC_JV_OBJECT || !get_size(o, "h", &r->h) || !get_size(o, "d", &r->d) ||
        !get_size(o, "N", &r->N) || !get_size(o, "E", &r->E) || !get_size(o, "T", &r->trials) ||
        !get_size(o, "spectrum", &spectrum) || !jdouble(ac_jv_get(o, "rtol"), &rtol) ||
        ac_jv_get_string(o, "mode", &mode, path, err) ||
        ac_jv_get_string(o, "seed", &seed, path, err))
        return bad(err, path, "a result lacks its sizes");
    if (r->h == 0 || r->d == 0 || r->N == 0 || r->h > SIZE_MAX / r->d || hi > r->trials ||
        (spectrum && spectrum != (r->N < r->h * r->d ? r->N : r->h * r->d)))
        return bad(err, path, "impossible sizes");
    r->D = r->h * r->d;
    r->m = r->N < r->D ? r->N : r->D;
    r->rtol = rtol;
    r->mode = strcmp(mode, "attention") == 0 ? AC_COND_ATTENTION : AC_COND_IID;
    r->seed = strtoull(seed, NULL, 10);
    const ac_jv *sa = ac_jv_get(o, "samples"), *ea = ac_jv_get(o, "eig"),
                *tm = ac_jv_get(o, "time");
    if (!sa || sa->type != AC_JV_ARRAY || sa->n != hi - lo)
        return bad(err, path, "the samples do not match the trial range");
    if (spectrum && (!ea || ea->type != AC_JV_ARRAY || ea->n != hi - lo))
        return bad(err, path, "the spectrum does not match the trial range");
    r->samples = calloc(r->trials, sizeof *r->samples);
    if (spectrum)
        r->eig = calloc(r->trials * r->m, sizeof *r->eig);
    if (!r->samples || (spectrum && !r->eig))
        return ac_err_set(err, AC_EINTERNAL, "%s: out of memory", path);
    for (size_t t = lo; t < hi; t++) {
        if (!read_sample(&r->samples[t], sa->kids[t - lo]))
            return bad(err, path, "a malformed sample");
        if (spectrum) {
            const ac_jv *row = ea->kids[t - lo];
            if (row->type != AC_JV_ARRAY || row->n != r->m)
                return bad(err, path, "a malformed spectrum");
            for (size_t k = 0; k < r->m; k++)
                if (!jdouble(row->kids[k], &r->eig[t * r->m + k]))
                    return bad(err, path, "a malformed eigenvalue");
        }
    }
    double *t6[6] = {&r->t_sample, &r->t_reduce, &r->t_solve, &r->t_mpfr, &r->t_certify,
                     &r->flops};
    if (!tm || tm->type != AC_JV_ARRAY || tm->n != 6)
        return bad(err, path, "no times");
    for (int k = 0; k < 6; k++)
        if (!jdouble(tm->kids[k], t6[k]))
            return bad(err, path, "a malformed time");
    return AC_OK;
}

static int read_header(ac_cond_shard *s, const ac_jv *v, const char *path, ac_err *err)
{
    const char *fmt;
    if (v->type != AC_JV_OBJECT || ac_jv_get_string(v, "format", &fmt, path, err) ||
        strcmp(fmt, SHARD_FORMAT) != 0)
        return bad(err, path, "no \"format\": \"" SHARD_FORMAT "\"");
    const ac_jv *w = ac_jv_get(v, "words"), *sh = ac_jv_get(v, "shard"),
                *tr = ac_jv_get(v, "trials");
    long long a[4];
    if (!w || w->type != AC_JV_ARRAY || !sh || sh->type != AC_JV_ARRAY || sh->n != 2 || !tr ||
        tr->type != AC_JV_ARRAY || tr->n != 2 || !jint(sh->kids[0], &a[0]) ||
        !jint(sh->kids[1], &a[1]) || !jint(tr->kids[0], &a[2]) || !jint(tr->kids[1], &a[3]) ||
        a[1] < 1 || a[0] < 1 || a[0] > a[1] || a[2] < 0 || a[3] <= a[2])
        return bad(err, path, "a malformed shard or trial range");
    s->i = (size_t)a[0];
    s->k = (size_t)a[1];
    s->lo = (size_t)a[2];
    s->hi = (size_t)a[3];
    s->words = calloc(w->n + 1, sizeof *s->words);
    if (!s->words)
        return ac_err_set(err, AC_EINTERNAL, "%s: out of memory", path);
    for (size_t k = 0; k < w->n; k++) {
        if (w->kids[k]->type != AC_JV_STRING)
            return bad(err, path, "a word of the command line is not a string");
        if (!(s->words[k] = strdup(w->kids[k]->s)))
            return ac_err_set(err, AC_EINTERNAL, "%s: out of memory", path);
        s->nwords = k + 1;
    }
    return AC_OK;
}

int ac_cond_shard_read(ac_cond_shard *s, const char *path, ac_err *err)
{
    memset(s, 0, sizeof *s);
    ac_jv *v = NULL;
    int st = ac_jparse_file(&v, path, err);
    if (st)
        return st;
    if ((st = read_header(s, v, path, err)) == AC_OK) {
        const ac_jv *rs = ac_jv_get(v, "results");
        if (!rs || rs->type != AC_JV_ARRAY || rs->n == 0)
            st = bad(err, path, "no results");
        else if (!(s->res = calloc(rs->n, sizeof *s->res)))
            st = ac_err_set(err, AC_EINTERNAL, "%s: out of memory", path);
        for (size_t r = 0; st == AC_OK && r < rs->n; r++) {
            s->nres = r + 1;
            st = read_result(&s->res[r], rs->kids[r], s->lo, s->hi, path, err);
        }
    }
    ac_jv_free(v);
    if (st)
        ac_cond_shard_free(s);
    return st;
}

void ac_cond_shard_free(ac_cond_shard *s)
{
    if (!s)
        return;
    for (size_t k = 0; k < s->nwords; k++)
        free(s->words[k]);
    free(s->words);
    for (size_t r = 0; r < s->nres; r++)
        ac_cond_result_free(&s->res[r]);
    free(s->res);
    memset(s, 0, sizeof *s);
}

/* ---- merging ---------------------------------------------------------------- */

static int same_sweep(const ac_cond_shard *a, const ac_cond_shard *b)
{
    if (a->nwords != b->nwords || a->k != b->k || a->nres != b->nres)
        return 0;
    for (size_t w = 0; w < a->nwords; w++)
        if (strcmp(a->words[w], b->words[w]) != 0)
            return 0;
    for (size_t r = 0; r < a->nres; r++) {
        const ac_cond_result *x = &a->res[r], *y = &b->res[r];
        if (x->h != y->h || x->d != y->d || x->N != y->N || x->E != y->E ||
            x->trials != y->trials || x->mode != y->mode || x->seed != y->seed ||
            x->rtol != y->rtol || (x->eig == NULL) != (y->eig == NULL))
            return 0;
    }
    return 1;
}

/* Every i of 1 .. k exactly once, with the ranges of ac_cond_shard_range. */
static int check_set(const ac_cond_shard *sh, const char *const *names, size_t n, ac_err *err)
{
    size_t k = sh[0].k, T = sh[0].res[0].trials;
    for (size_t a = 0; a < n; a++) {
        if (!same_sweep(&sh[0], &sh[a]))
            return ac_err_set(err, AC_EDATA, "%s: a shard of another sweep than %s", names[a],
                              names[0]);
        size_t lo, hi;
        ac_cond_shard_range(T, sh[a].i, k, &lo, &hi);
        if (sh[a].lo != lo || sh[a].hi != hi)
            return ac_err_set(err, AC_EDATA, "%s: shard %zu/%zu holds trials [%zu, %zu), not "
                              "[%zu, %zu)", names[a], sh[a].i, k, sh[a].lo, sh[a].hi, lo, hi);
        for (size_t b = 0; b < a; b++)
            if (sh[b].i == sh[a].i)
                return ac_err_set(err, AC_EDATA, "%s: shard %zu/%zu given twice (also %s)",
                                  names[a], sh[a].i, k, names[b]);
    }
    if (n != k) {
        for (size_t i = 1; i <= k; i++) {
            size_t a = 0;
            while (a < n && sh[a].i != i)
                a++;
            if (a == n)
                return ac_err_set(err, AC_EDATA, "%s: shard %zu/%zu of this sweep is missing",
                                  names[0], i, k);
        }
    }
    return AC_OK;
}

int ac_cond_shard_merge(ac_cond_result *out, const ac_cond_shard *shards,
                        const char *const *names, size_t n, size_t which, const ac_cond_opts *o,
                        ac_err *err)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return ac_err_set(err, AC_EUSAGE, "no shard files");
    int st = check_set(shards, names, n, err);
    if (st)
        return st;
    if (which >= shards[0].nres)
        return ac_err_set(err, AC_EUSAGE, "no result %zu in the shards", which);
    const ac_cond_result *r0 = &shards[0].res[which];
    if (r0->N != o->N || r0->trials != o->trials || r0->mode != o->mode || r0->seed != o->seed ||
        r0->rtol != o->rtol || (r0->eig != NULL) != (o->spectrum != 0))
        return ac_err_set(err, AC_EDATA, "%s: the shards were made with other options", names[0]);
    if ((st = cond_result_init(out, r0->h, r0->d, o, err)))
        return st;
    if (out->E != r0->E || out->m != r0->m) {
        ac_cond_result_free(out);
        return ac_err_set(err, AC_EDATA, "%s: the shards were made with other sizes", names[0]);
    }
    for (size_t a = 0; a < n; a++) {
        const ac_cond_result *r = &shards[a].res[which];
        size_t lo = shards[a].lo, hi = shards[a].hi;
        memcpy(out->samples + lo, r->samples + lo, (hi - lo) * sizeof *out->samples);
        if (out->eig)
            memcpy(out->eig + lo * r->m, r->eig + lo * r->m, (hi - lo) * r->m * sizeof *out->eig);
        out->t_sample += r->t_sample;
        out->t_reduce += r->t_reduce;
        out->t_solve += r->t_solve;
        out->t_mpfr += r->t_mpfr;
        out->t_certify += r->t_certify;
        out->flops += r->flops;
    }
    return AC_OK;
}
