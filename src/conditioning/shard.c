/* shard.c — condition sweeps in shards: the samples file and the merge
 * (attncheck/shard.h).
 *
 * A shard file is one JSON object (format version 2):
 *
 *   {"format": "attncheck-condition-samples", "version": 2, "attncheck": "0.1.0",
 *    "words": ["--heads", "1,2", ...], "shard": [i, k], "trials": [lo, hi],
 *    "results": [{"h": .., "d": .., "N": .., "E": .., "mode": "iid", "seed": "..",
 *                 "T": .., "rtol": "0x1.5p-27", "spectrum": m or 0,
 *                 "samples": [[kappa, sigma1, sigmin, relerr, route, resolved, prec,
 *                              cert, cert_stage, cert_prec, s1_lo, s1_hi, smin_lo,
 *                              smin_hi, kappa_lo, kappa_hi, dev_lo, dev_hi], ...],
 *                 "eig": [[...], ...],
 *                 "time": [t_sample, t_reduce, t_solve, t_mpfr, t_certify, flops]}],
 *    "fnv1a64": "0123456789abcdef"}
 *
 * Doubles are strings in C's hexadecimal notation ("%a"; "inf", "nan"), so
 * that reading them back with strtod is exact and non-finite values need no
 * JSON extension.  The last member is the 64-bit FNV-1a checksum
 * (core/fnv.h) of every byte of the file before the text ,"fnv1a64": the
 * file ends ,"fnv1a64":"<16 lower-case hex digits>"} and a newline.
 * Version 1 is the same without the checksum; it is still read.
 *
 * Reading trusts nothing (attncheck-merge(1), CHECKS): a file that does not
 * parse, lacks its checksum or fails it is "corrupt" (not the file that
 * was written); one whose checksum holds (or that has none) but whose
 * numbers contradict each other or the ranges the options allow is
 * "inconsistent".  The derived numbers of a certified sample (the kappa
 * enclosure from the sigma enclosures, the dev enclosure and verdict from
 * kappa~ and the kappa enclosure) are recomputed by the functions that
 * made them (certify.c) and must agree bit for bit. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/fileio.h"
#include "attncheck/json.h"
#include "attncheck/shard.h"
#include "conditioning/cond_impl.h"
#include "core/fnv.h"
#include "io/jsonparse.h"
#include "io/sumjson.h"

#define SHARD_FORMAT "attncheck-condition-samples"
#define SHARD_VERSION 2
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

typedef struct {
    const char *const *words;
    size_t nwords, i, k, lo, hi, nres;
    const ac_cond_result *res;
    const ac_cond_opts *o;
} shard_doc;

static void compose(ac_json *j, void *ctx)
{
    const shard_doc *d = ctx;
    ac_json_begin_object(j);
    ac_json_kv_string(j, "format", SHARD_FORMAT);
    ac_json_kv_int(j, "version", SHARD_VERSION);
    ac_json_kv_string(j, "attncheck", PACKAGE_VERSION);
    ac_json_key(j, "words");
    ac_json_begin_array(j);
    for (size_t w = 0; w < d->nwords; w++)
        ac_json_string(j, d->words[w]);
    ac_json_end_array(j);
    ac_json_kv_int_pair(j, "shard", (long long)d->i, (long long)d->k);
    ac_json_kv_int_pair(j, "trials", (long long)d->lo, (long long)d->hi);
    ac_json_key(j, "results");
    ac_json_begin_array(j);
    for (size_t r = 0; r < d->nres; r++)
        result_json(j, &d->res[r], d->lo, d->hi, d->o);
    ac_json_end_array(j);
    ac_json_end_object(j);
}

int ac_cond_shard_write(const char *path, const char *const *words, size_t nwords, size_t i,
                        size_t k, const ac_cond_result *res, size_t nres, size_t lo, size_t hi,
                        const ac_cond_opts *o, ac_err *err)
{
    shard_doc d = {words, nwords, i, k, lo, hi, nres, res, o};
    return ac_sumjson_write(path, compose, &d, err);
}

/* ---- reading ---------------------------------------------------------------- */

/* The three kinds of refusal: "not a condition shard file" (some other
 * file), "corrupt" (not the file that was written), "inconsistent" (its
 * numbers contradict each other or the options' ranges). */
static int refuse(ac_err *err, const char *path, const char *kind, const char *fmt, ...)
{
    char what[AC_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ac_err_set(err, AC_EDATA, "%s: %s: %s", path, kind, what);
}

#define NOT_SHARD "not a condition shard file"
#define CORRUPT "corrupt shard file"
#define INCONSISTENT "inconsistent shard file"

#define jdouble ac_jv_hexdouble

static int jint(const ac_jv *v, long long *x)
{
    if (!v || v->type != AC_JV_NUMBER)
        return 0;
    char *end;
    errno = 0;
    *x = strtoll(v->s, &end, 10);
    return end != v->s && *end == '\0' && errno == 0;
}

/* A non-negative integer member; 0 if missing, negative or not whole. */
static int get_size(const ac_jv *o, const char *key, size_t *x)
{
    long long v;
    if (!jint(ac_jv_get(o, key), &v) || v < 0 || (unsigned long long)v > SIZE_MAX)
        return 0;
    *x = (size_t)v;
    return 1;
}

#define dup_key ac_jv_dup_key

static int read_sample(ac_cond_sample *s, const ac_jv *a)
{
    if (!a || a->type != AC_JV_ARRAY || a->n != SAMPLE_FIELDS)
        return 0;
    long long iv[6];
    int ok = jdouble(a->kids[0], &s->kappa) && jdouble(a->kids[1], &s->sigma1) &&
             jdouble(a->kids[2], &s->sigmin) && jdouble(a->kids[3], &s->relerr);
    for (int k = 0; ok && k < 6; k++) {
        ok = jint(a->kids[4 + k], &iv[k]);
        /* beyond every valid value either way: stays invalid, fits an int */
        iv[k] = iv[k] < -(1L << 30) ? -(1L << 30) : iv[k] > (1L << 30) ? (1L << 30) : iv[k];
    }
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
    return 1;
}

/* One element of "results": sizes and samples [lo, hi), read as written
 * (their meaning is checked by check_result).  *spectrum receives the
 * declared number of eigenvalues per sample. */
static int read_result(ac_cond_result *r, size_t *spectrum, const ac_jv *o, size_t lo, size_t hi,
                       const char *path, ac_err *err)
{
    const ac_jv *mode = ac_jv_get(o, "mode"), *seed = ac_jv_get(o, "seed");
    size_t n = hi - lo;
    if (!o || o->type != AC_JV_OBJECT)
        return refuse(err, path, CORRUPT, "a result is not an object");
    const char *dup = dup_key(o);
    if (dup)
        return refuse(err, path, CORRUPT, "a result has two members \"%s\"", dup);
    if (!get_size(o, "h", &r->h) || !get_size(o, "d", &r->d) || !get_size(o, "N", &r->N) ||
        !get_size(o, "E", &r->E) || !get_size(o, "T", &r->trials) ||
        !get_size(o, "spectrum", spectrum) || !jdouble(ac_jv_get(o, "rtol"), &r->rtol) ||
        !mode || mode->type != AC_JV_STRING || !seed || seed->type != AC_JV_STRING)
        return refuse(err, path, CORRUPT, "a result lacks its sizes");
    if (strcmp(mode->s, "iid") == 0)
        r->mode = AC_COND_IID;
    else if (strcmp(mode->s, "attention") == 0)
        r->mode = AC_COND_ATTENTION;
    else
        return refuse(err, path, CORRUPT, "h = %zu: mode \"%s\" is neither iid nor attention",
                      r->h, mode->s);
    char *end;
    errno = 0;
    r->seed = strtoull(seed->s, &end, 10);
    if (seed->s[0] < '0' || seed->s[0] > '9' || *end || errno)
        return refuse(err, path, CORRUPT, "h = %zu: seed \"%s\" is not a 64-bit whole number",
                      r->h, seed->s);
    const ac_jv *sa = ac_jv_get(o, "samples"), *ea = ac_jv_get(o, "eig"),
                *tm = ac_jv_get(o, "time");
    if (!sa || sa->type != AC_JV_ARRAY || sa->n != n)
        return refuse(err, path, CORRUPT, "h = %zu: %zu samples for the %zu trials [%zu, %zu)",
                      r->h, sa && sa->type == AC_JV_ARRAY ? sa->n : 0, n, lo, hi);
    if (*spectrum ? (!ea || ea->type != AC_JV_ARRAY || ea->n != n) : ea != NULL)
        return refuse(err, path, CORRUPT, "h = %zu: the spectrum does not match the trial range",
                      r->h);
    for (size_t t = 0; *spectrum && t < n; t++)
        if (ea->kids[t]->type != AC_JV_ARRAY || ea->kids[t]->n != *spectrum)
            return refuse(err, path, CORRUPT, "h = %zu, trial %zu: not %zu eigenvalues", r->h,
                          lo + t, *spectrum);
    /* sizes now bounded by the file's own length */
    r->samples = calloc(n, sizeof *r->samples);
    if (*spectrum)
        r->eig = malloc(n * *spectrum * sizeof *r->eig);
    if (!r->samples || (*spectrum && !r->eig))
        return ac_err_set(err, AC_EINTERNAL, "%s: out of memory", path);
    for (size_t t = 0; t < n; t++) {
        if (!read_sample(&r->samples[t], sa->kids[t]))
            return refuse(err, path, CORRUPT, "h = %zu, trial %zu: a malformed sample", r->h,
                          lo + t);
        for (size_t k = 0; k < *spectrum; k++)
            if (!jdouble(ea->kids[t]->kids[k], &r->eig[t * *spectrum + k]))
                return refuse(err, path, CORRUPT, "h = %zu, trial %zu: a malformed eigenvalue",
                              r->h, lo + t);
    }
    double *t6[6] = {&r->t_sample, &r->t_reduce, &r->t_solve, &r->t_mpfr, &r->t_certify,
                     &r->flops};
    if (!tm || tm->type != AC_JV_ARRAY || tm->n != 6)
        return refuse(err, path, CORRUPT, "h = %zu: no times", r->h);
    for (int k = 0; k < 6; k++)
        if (!jdouble(tm->kids[k], t6[k]))
            return refuse(err, path, CORRUPT, "h = %zu: a malformed time", r->h);
    return AC_OK;
}

static int read_header(ac_cond_shard *s, const ac_jv *v, const char *path, ac_err *err)
{
    const ac_jv *w = ac_jv_get(v, "words"), *sh = ac_jv_get(v, "shard"),
                *tr = ac_jv_get(v, "trials"), *ver = ac_jv_get(v, "attncheck");
    long long a[4];
    if (!ver || ver->type != AC_JV_STRING || !(s->attncheck = strdup(ver->s)))
        return ver ? ac_err_set(err, AC_EINTERNAL, "%s: out of memory", path)
                   : refuse(err, path, CORRUPT, "no \"attncheck\" version");
    if (!w || w->type != AC_JV_ARRAY || !sh || sh->type != AC_JV_ARRAY || sh->n != 2 || !tr ||
        tr->type != AC_JV_ARRAY || tr->n != 2 || !jint(sh->kids[0], &a[0]) ||
        !jint(sh->kids[1], &a[1]) || !jint(tr->kids[0], &a[2]) || !jint(tr->kids[1], &a[3]))
        return refuse(err, path, CORRUPT, "a malformed shard or trial range");
    if (a[1] < 1 || a[1] > (long long)AC_COND_MAX_SHARDS || a[0] < 1 || a[0] > a[1] ||
        a[2] < 0 || a[3] <= a[2] || (unsigned long long)a[3] > AC_COND_MAX_TRIALS)
        return refuse(err, path, INCONSISTENT,
                      "shard %lld/%lld of trials [%lld, %lld): impossible (1 <= I <= K <= %d, "
                      "0 <= lo < hi <= 2^40)",
                      a[0], a[1], a[2], a[3], AC_COND_MAX_SHARDS);
    s->i = (size_t)a[0];
    s->k = (size_t)a[1];
    s->lo = (size_t)a[2];
    s->hi = (size_t)a[3];
    s->words = calloc(w->n + 1, sizeof *s->words);
    if (!s->words)
        return ac_err_set(err, AC_EINTERNAL, "%s: out of memory", path);
    for (size_t k = 0; k < w->n; k++) {
        if (w->kids[k]->type != AC_JV_STRING)
            return refuse(err, path, CORRUPT, "a word of the command line is not a string");
        if (!(s->words[k] = strdup(w->kids[k]->s)))
            return ac_err_set(err, AC_EINTERNAL, "%s: out of memory", path);
        s->nwords = k + 1;
    }
    return AC_OK;
}

/* Version 2: the file ends ,"fnv1a64":"<16 hex>"} (and a newline), the
 * checksum of every byte before ,"fnv1a64". */
static int check_sum(const char *text, size_t n, const char *path, ac_err *err)
{
    char why[160];
    const char *bad = ac_sumjson_check(text, n, why, sizeof why);
    return bad ? refuse(err, path, CORRUPT, "%s", bad) : AC_OK;
}

/* Why sample s (of a result with rtol and mode) contradicts itself, or
 * NULL.  The estimates: kappa~ = sigma1~ / sigmin~ as every route computes
 * it (inf when sigmin~ = 0), or inf with relerr inf when unresolved (MPFR
 * only).  Not certified (stage none): every certified field zero and the
 * verdict UNDECIDED.  The rank refutation (attention): its fixed pattern.
 * Certified: enclosures free of NaN with 0 <= lo <= hi, and the kappa
 * enclosure, dev enclosure and verdict those certify.c computes from them. */
static const char *sample_contradiction(const ac_cond_sample *s, double rtol, ac_cond_mode mode)
{
    const double est[4] = {s->kappa, s->sigma1, s->sigmin, s->relerr};
    const double enc[8] = {s->s1_lo, s->s1_hi, s->smin_lo, s->smin_hi,
                           s->kappa_lo, s->kappa_hi, s->dev_lo, s->dev_hi};
    for (int k = 0; k < 4; k++)
        if (isnan(est[k]))
            return "an estimate (kappa, sigma1, sigmin or relerr) is NaN";
    for (int k = 0; k < 8; k++)
        if (isnan(enc[k]))
            return "an enclosure bound is NaN";
    if (s->route < 0 || s->route >= AC_COND_NROUTES)
        return "no such route";
    if (s->resolved != 0 && s->resolved != 1)
        return "resolved is neither 0 nor 1";
    if (!(isfinite(s->sigma1) && s->sigma1 >= 0 && isfinite(s->sigmin) && s->sigmin >= 0 &&
          s->relerr >= 0))
        return "sigma1~ or sigmin~ is not finite and >= 0, or relerr < 0";
    if (s->resolved ? s->kappa != (s->sigmin > 0 ? s->sigma1 / s->sigmin : INFINITY)
                    : s->route != AC_COND_MPFR || s->kappa != INFINITY || s->relerr != INFINITY)
        return "kappa~ is not sigma1~ / sigmin~ (or an unresolved sample is not inf on MPFR)";
    if (s->route == AC_COND_MPFR ? s->prec < 53 : s->prec != 53)
        return "the precision does not fit the route";
    if (s->cert < AC_PROVED || s->cert > AC_UNDECIDED)
        return "no such verdict";
    if (s->cert_stage == AC_STAGE_NONE) {
        for (int k = 0; k < 8; k++)
            if (enc[k] != 0)
                return "not certified, yet it has enclosures";
        return s->cert != AC_UNDECIDED || s->cert_prec != 0 ? "not certified, yet it has a verdict"
                                                            : NULL;
    }
    if (s->cert_stage == AC_STAGE_EXACT) {
        /* certify_block.c, refute_rank */
        const double want[8] = {0, INFINITY, 0, 0, INFINITY, INFINITY, INFINITY, INFINITY};
        if (mode != AC_COND_ATTENTION || s->cert != AC_REFUTED || s->cert_prec != 0 ||
            memcmp(want, enc, sizeof want) != 0)
            return "an exact-stage sample that is not the rank refutation";
        return NULL;
    }
    if (s->cert_stage < 0 || s->cert_stage > AC_MAX_STAGES)
        return "no such stage";
    if (s->cert_stage == AC_STAGE_DOUBLE ? s->cert_prec != 53 : s->cert_prec < 64)
        return "the precision does not fit the stage";
    for (int k = 0; k < 4; k += 2)
        if (!(enc[k] >= 0 && enc[k] <= enc[k + 1]))
            return k == 0 ? "its enclosure of sigma_1 is not 0 <= lo <= hi"
                          : "its enclosure of sigma_min is not 0 <= lo <= hi";
    if (!(s->kappa_lo <= s->kappa_hi))
        return "its enclosure of kappa has lo > hi";
    if (!(s->dev_lo >= 0 && s->dev_lo <= s->dev_hi))
        return "its enclosure of dev = |kappa / kappa~ - 1| is not 0 <= lo <= hi";
    ac_cond_sample t = *s;
    cond_kappa_bounds(&t);
    if (t.kappa_lo != s->kappa_lo || t.kappa_hi != s->kappa_hi)
        return "its kappa enclosure is not the one its sigma enclosures give";
    t.cert = cond_judge_kappa(&t, rtol);
    if (t.dev_lo != s->dev_lo || t.dev_hi != s->dev_hi)
        return "its dev enclosure is not the one kappa~ and its kappa enclosure give";
    if (t.cert != s->cert)
        return "its verdict is not the one its dev enclosure gives";
    return NULL;
}

/* The numbers of result r of shard s against each other and the ranges the
 * options allow (sizes of condition(1); the shard range; the samples). */
static int check_result(const ac_cond_shard *s, const ac_cond_result *r, size_t spectrum,
                        const char *path, ac_err *err)
{
    size_t h = r->h, d = r->d, N = r->N, E = r->E, T = r->trials, M = AC_COND_MAX_DIM;
    if (h < 1 || h > M || d < 1 || d > M || N < 1 || N > M || E > M || h * d > M)
        return refuse(err, path, INCONSISTENT,
                      "h = %zu, d = %zu, N = %zu, E = %zu: outside the sizes condition allows "
                      "(1 .. 2^24 each and for D = h d)",
                      h, d, N, E);
    if (T < 1 || T > AC_COND_MAX_TRIALS || s->k > T)
        return refuse(err, path, INCONSISTENT,
                      "h = %zu: %zu trials in %zu shards (1 <= K <= T <= 2^40)", h, T, s->k);
    ac_cond_opts o;
    ac_cond_opts_default(&o);
    o.N = N;
    o.mode = r->mode;
    o.trials = T;
    o.rtol = r->rtol;
    ac_err e2;
    ac_err_clear(&e2);
    if (cond_check_sizes(N, h, d, r->mode == AC_COND_ATTENTION ? E : h * d, &o, &e2) ||
        (r->mode == AC_COND_IID) != (E == 0))
        return refuse(err, path, INCONSISTENT, "h = %zu: %s", h,
                      e2.msg[0] ? e2.msg : "E must be 0 for iid blocks and >= 1 for attention");
    size_t lo, hi, m = N < h * d ? N : h * d;
    ac_cond_shard_range(T, s->i, s->k, &lo, &hi);
    if (s->lo != lo || s->hi != hi)
        return refuse(err, path, INCONSISTENT,
                      "shard %zu/%zu of %zu trials holds [%zu, %zu), not [%zu, %zu)", s->i,
                      s->k, T, s->lo, s->hi, lo, hi);
    if (spectrum != 0 && spectrum != m)
        return refuse(err, path, INCONSISTENT, "h = %zu: %zu eigenvalues per sample, not m = %zu",
                      h, spectrum, m);
    const ac_cond_result *r0 = &s->res[0];
    if (r->N != r0->N || r->trials != r0->trials || r->mode != r0->mode ||
        r->seed != r0->seed || r->rtol != r0->rtol || (r->eig == NULL) != (r0->eig == NULL))
        return refuse(err, path, INCONSISTENT,
                      "h = %zu: other options (N, trials, mode, seed, rtol or spectrum) than h = "
                      "%zu",
                      h, r0->h);
    for (size_t t = 0; t < hi - lo; t++) {
        const char *why = sample_contradiction(&r->samples[t], r->rtol, r->mode);
        if (why)
            return refuse(err, path, INCONSISTENT, "h = %zu, trial %zu: %s", h, lo + t, why);
        for (size_t k = 0; k < spectrum; k++)
            if (!isfinite(r->eig[t * m + k]))
                return refuse(err, path, INCONSISTENT, "h = %zu, trial %zu: eigenvalue %zu is "
                              "not finite", h, lo + t, k);
    }
    const double tm[6] = {r->t_sample, r->t_reduce, r->t_solve, r->t_mpfr, r->t_certify,
                          r->flops};
    for (int k = 0; k < 6; k++)
        if (!(isfinite(tm[k]) && tm[k] >= 0))
            return refuse(err, path, INCONSISTENT, "h = %zu: a time or flop count is not a "
                          "finite number >= 0", h);
    return AC_OK;
}

static int read_shard(ac_cond_shard *s, const char *text, size_t n, const char *path, ac_err *err)
{
    ac_jv *v = NULL;
    char name[AC_ERR_MSG_MAX];
    int damaged = ac_sumjson_names(text, n, SHARD_FORMAT);
    snprintf(name, sizeof name, "%s: %s", path,
             damaged ? CORRUPT " (truncated or damaged)" : NOT_SHARD);
    int st = ac_jparse(&v, text, n, name, err);
    if (st)
        return st;
    const ac_jv *fmt = ac_jv_get(v, "format");
    long long ver;
    if (v->type != AC_JV_OBJECT || !fmt || fmt->type != AC_JV_STRING ||
        strcmp(fmt->s, SHARD_FORMAT) != 0)
        st = refuse(err, path, NOT_SHARD, "no \"format\": \"" SHARD_FORMAT "\"");
    else if (!jint(ac_jv_get(v, "version"), &ver) || ver < 1 || ver > SHARD_VERSION)
        st = refuse(err, path, NOT_SHARD, "format version %s; this attncheck reads 1 and 2",
                    ac_jv_get(v, "version") ? ac_jv_get(v, "version")->s : "missing");
    else if ((s->version = (int)ver) == 2 && (st = check_sum(text, n, path, err)))
        ;
    else if (ver == 1 && ac_jv_get(v, "fnv1a64"))
        st = refuse(err, path, CORRUPT, "a version 1 file with a checksum");
    else if (dup_key(v))
        st = refuse(err, path, CORRUPT, "two members \"%s\"", dup_key(v));
    else
        st = read_header(s, v, path, err);
    const ac_jv *rs = st ? NULL : ac_jv_get(v, "results");
    size_t *spec = NULL;
    if (st == AC_OK && (!rs || rs->type != AC_JV_ARRAY || rs->n == 0))
        st = refuse(err, path, CORRUPT, "no results");
    else if (st == AC_OK && (!(s->res = calloc(rs->n, sizeof *s->res)) ||
                             !(spec = calloc(rs->n, sizeof *spec))))
        st = ac_err_set(err, AC_EINTERNAL, "%s: out of memory", path);
    for (size_t r = 0; st == AC_OK && r < rs->n; r++) {
        s->nres = r + 1;
        st = read_result(&s->res[r], &spec[r], rs->kids[r], s->lo, s->hi, path, err);
    }
    for (size_t r = 0; st == AC_OK && r < s->nres; r++)
        st = check_result(s, &s->res[r], spec[r], path, err);
    for (size_t r = 0; st == AC_OK && r < s->nres; r++) {
        /* the sizes run_init derives */
        ac_cond_result *x = &s->res[r];
        x->D = x->h * x->d;
        x->m = x->N < x->D ? x->N : x->D;
    }
    free(spec);
    ac_jv_free(v);
    return st;
}

int ac_cond_shard_read(ac_cond_shard *s, const char *path, ac_err *err)
{
    memset(s, 0, sizeof *s);
    unsigned char *text;
    size_t n;
    int st = ac_file_read(path, AC_JSON_PARSE_MAX_BYTES, &text, &n, err);
    if (st == AC_EDATA)
        return ac_err_set(err, AC_EDATA, "%s: too large for a condition shard file", path);
    if (st)
        return st;
    st = read_shard(s, (const char *)text, n, path, err);
    free(text);
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
    free(s->attncheck);
    for (size_t r = 0; r < s->nres; r++)
        ac_cond_result_free(&s->res[r]);
    free(s->res);
    memset(s, 0, sizeof *s);
}

/* ---- merging ---------------------------------------------------------------- */

static int same_sweep(const ac_cond_shard *a, const ac_cond_shard *b)
{
    if (a->version != b->version || strcmp(a->attncheck, b->attncheck) != 0 ||
        a->nwords != b->nwords || a->k != b->k || a->nres != b->nres)
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

/* Every i of 1 .. k exactly once, of one sweep and one version. */
static int check_set(const ac_cond_shard *sh, const char *const *names, size_t n, ac_err *err)
{
    size_t k = sh[0].k;
    for (size_t a = 0; a < n; a++) {
        if (sh[a].version != sh[0].version || strcmp(sh[a].attncheck, sh[0].attncheck) != 0)
            return ac_err_set(err, AC_EDATA,
                              "%s: written by attncheck %s (format %d), %s by %s (format %d)",
                              names[a], sh[a].attncheck, sh[a].version, names[0],
                              sh[0].attncheck, sh[0].version);
        if (!same_sweep(&sh[0], &sh[a]))
            return ac_err_set(err, AC_EDATA, "%s: a shard of another sweep than %s", names[a],
                              names[0]);
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

/* Why sample s contradicts the options o of the merge (r: its result), or
 * NULL: certified exactly when o->certify, at a stage and precision of
 * o->sched (a verdict left UNDECIDED only after the last stage), the rank
 * refutation exactly when the rank bound is below m, MPFR within
 * o->max_prec. */
static const char *sample_against_opts(const ac_cond_sample *s, const ac_cond_result *r,
                                       const ac_cond_opts *o)
{
    if (s->route == AC_COND_MPFR && s->prec > o->max_prec)
        return "an MPFR precision above --max-prec";
    if ((s->cert_stage != AC_STAGE_NONE) != (o->certify != 0))
        return o->certify ? "not certified in a --certify sweep" : "certified in a sweep without "
                                                                   "--certify";
    if (!o->certify)
        return NULL;
    int refuted = cond_rank_bound(o, r->N, r->h, r->d, r->E) < r->m;
    if ((s->cert_stage == AC_STAGE_EXACT) != refuted)
        return refuted ? "not the rank refutation its sizes give" : "a rank refutation its sizes "
                                                                    "do not give";
    if (refuted)
        return NULL;
    if (s->cert_stage > o->sched.n ||
        (s->cert_stage >= 1 && s->cert_prec != o->sched.prec[s->cert_stage - 1]))
        return "a stage or precision not in the schedule of --max-prec";
    if (s->cert == AC_UNDECIDED && s->cert_stage != o->sched.n)
        return "left UNDECIDED before the last stage";
    return NULL;
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
        for (size_t t = 0; t < hi - lo; t++) {
            const char *why = sample_against_opts(&r->samples[t], out, o);
            if (why) {
                ac_cond_result_free(out);
                return ac_err_set(err, AC_EDATA, "%s: " INCONSISTENT ": h = %zu, trial %zu: %s",
                                  names[a], r->h, lo + t, why);
            }
        }
        memcpy(out->samples + lo, r->samples, (hi - lo) * sizeof *out->samples);
        if (out->eig)
            memcpy(out->eig + lo * r->m, r->eig, (hi - lo) * r->m * sizeof *out->eig);
        out->t_sample += r->t_sample;
        out->t_reduce += r->t_reduce;
        out->t_solve += r->t_solve;
        out->t_mpfr += r->t_mpfr;
        out->t_certify += r->t_certify;
        out->flops += r->flops;
    }
    return AC_OK;
}
