/* inspect_shard.c — the shard files of inspect --shard I/K --shard-out FILE
 * and their checks (inspect_cmd.h, attncheck-merge(1)).
 *
 * A shard file is one JSON object (format version 1):
 *
 *   {"format": "attncheck-inspect-shard", "version": 1, "attncheck": "0.1.0",
 *    "words": ["--model", "DIR", "--tokens", "ids.npy", ...], "shard": [i, k],
 *    "pairs": [lo, hi], "total": P, "model": ["<sha256 of each file>", ...],
 *    "input": "<fnv1a64 of the input>",
 *    "heads": [{"layer": l, "head": h, "pattern": "<fnv1a64 of its pattern>",
 *               "kv_head": .., "dk": .., "d_class": .., "bias": 0|1, "masked": 0|1,
 *               "class": "..", "factor": "%a", "pmin": "%a", "pmax": "%a",
 *               "thr": [lo, hi, exact, dk_max], "thr_method": "..",
 *               "exact_rep": [lo, hi, none, if_any, exact], "exact_rep_method": "..",
 *               "evals": [[dk, verdict, "lo", "hi"], ...], "own": verdict,
 *               "dist": [[dk, verdict, "lo", "hi", "decades"], ...],
 *               "self": [verdict, rel, "tau", stage, prec, tried, "lo", "hi", "seconds"],
 *               "self_quantity": "..", "self_method": "..", "self_note": "..",
 *               "qk": [rank_lo, rank_hi, "eps", ["lo", ...], ["hi", ...]], "ov": [...],
 *               "time": ["seconds", "thr", "dist", "circuits"]}, ...],
 *    "fnv1a64": "0123456789abcdef"}
 *
 * Doubles are strings in C's hexadecimal notation ("%a"), read back exactly;
 * verdicts are the numbers of ac_verdict.  The last member is the 64-bit
 * FNV-1a checksum of every byte before ,"fnv1a64" (as condition's shards).
 * Reading trusts nothing: structure here, meaning in
 * ac_inspect_shard_check_head once the merge has recomputed the patterns. */
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
#include "commands/inspect_cmd.h"
#include "core/fnv.h"
#include "io/jsonparse.h"
#include "io/sumjson.h"

#define SHARD_VERSION 1
#define NOT_SHARD "not an inspect shard file"
#define CORRUPT "corrupt inspect shard file"
#define INCONSISTENT "inconsistent inspect shard file"

uint64_t ac_inspect_sum(const double *x, size_t n)
{
    return fnv_doubles(FNV_INIT, x, n);
}

/* ---- writing ------------------------------------------------------------------ */

static void hexnum(ac_json *j, double x)
{
    char buf[40];
    snprintf(buf, sizeof buf, "%a", x);
    ac_json_string(j, buf);
}

static void kv_hex(ac_json *j, const char *k, double x)
{
    ac_json_key(j, k);
    hexnum(j, x);
}

static void kv_sum(ac_json *j, const char *k, uint64_t x)
{
    char buf[20];
    snprintf(buf, sizeof buf, "%016" PRIx64, x);
    ac_json_kv_string(j, k, buf);
}

static void circuit_json(ac_json *j, const char *k, const ac_inspect_circuit *c)
{
    ac_json_key(j, k);
    ac_json_begin_array(j);
    ac_json_int(j, c->rank_lo);
    ac_json_int(j, c->rank_hi);
    hexnum(j, c->eps);
    for (int w = 0; w < 2; w++) {
        ac_json_begin_array(j);
        for (size_t i = 0; i < c->nsv; i++)
            hexnum(j, w ? c->hi[i] : c->lo[i]);
        ac_json_end_array(j);
    }
    ac_json_end_array(j);
}

static void head_json(ac_json *j, const ac_inspect_head *hd, uint64_t psum)
{
    const ac_t1_tol_threshold *t = &hd->thr;
    ac_json_begin_object(j);
    ac_json_kv_int(j, "layer", (long long)hd->layer);
    ac_json_kv_int(j, "head", (long long)hd->head);
    kv_sum(j, "pattern", psum);
    ac_json_kv_int(j, "kv_head", (long long)hd->kv_head);
    ac_json_kv_int(j, "dk", (long long)hd->dk);
    ac_json_kv_int(j, "d_class", (long long)hd->dprime);
    ac_json_kv_int(j, "bias", hd->bias);
    ac_json_kv_int(j, "masked", hd->masked);
    ac_json_kv_string(j, "class", hd->klass);
    kv_hex(j, "factor", hd->factor);
    kv_hex(j, "pmin", hd->pmin);
    kv_hex(j, "pmax", hd->pmax);
    ac_json_key(j, "thr");
    ac_json_begin_array(j);
    ac_json_int(j, t->lo);
    ac_json_int(j, t->hi);
    ac_json_int(j, t->exact);
    ac_json_int(j, (long long)t->dk_max);
    ac_json_end_array(j);
    ac_json_kv_string(j, "thr_method", t->method);
    ac_json_key(j, "exact_rep");
    ac_json_begin_array(j);
    ac_json_int(j, t->exact_rep.lo);
    ac_json_int(j, t->exact_rep.hi);
    ac_json_int(j, t->exact_rep.none);
    ac_json_int(j, t->exact_rep.if_any);
    ac_json_int(j, t->exact_rep.exact);
    ac_json_end_array(j);
    ac_json_kv_string(j, "exact_rep_method", t->exact_rep.method);
    ac_json_key(j, "evals");
    ac_json_begin_array(j);
    for (size_t e = 0; e < t->nevals; e++) {
        ac_json_begin_array(j);
        ac_json_int(j, t->eval[e].dk);
        ac_json_int(j, (long long)t->eval[e].verdict);
        hexnum(j, t->eval[e].lo);
        hexnum(j, t->eval[e].hi);
        ac_json_end_array(j);
    }
    ac_json_end_array(j);
    ac_json_kv_int(j, "own", (long long)hd->own);
    ac_json_key(j, "dist");
    ac_json_begin_array(j);
    for (size_t k = 0; k < hd->ndist; k++) {
        const ac_inspect_dist *ds = &hd->dist[k];
        ac_json_begin_array(j);
        ac_json_int(j, (long long)ds->dk);
        ac_json_int(j, (long long)ds->verdict);
        hexnum(j, ds->lo);
        hexnum(j, ds->hi);
        hexnum(j, ds->decades);
        ac_json_end_array(j);
    }
    ac_json_end_array(j);
    const ac_cert *c = &hd->self;
    ac_json_key(j, "self");
    ac_json_begin_array(j);
    ac_json_int(j, (long long)c->verdict);
    ac_json_int(j, (long long)c->rel);
    hexnum(j, c->tau);
    ac_json_int(j, c->stage);
    ac_json_int(j, c->prec);
    ac_json_int(j, c->stages_tried);
    hexnum(j, c->lo);
    hexnum(j, c->hi);
    hexnum(j, c->seconds);
    ac_json_end_array(j);
    ac_json_kv_string(j, "self_quantity", c->quantity);
    ac_json_kv_string(j, "self_method", c->method);
    ac_json_kv_string(j, "self_note", hd->self_note);
    circuit_json(j, "qk", &hd->qk);
    circuit_json(j, "ov", &hd->ov);
    ac_json_key(j, "time");
    ac_json_begin_array(j);
    hexnum(j, hd->seconds);
    hexnum(j, t->seconds);
    hexnum(j, hd->t_dist);
    hexnum(j, hd->t_circuits);
    ac_json_end_array(j);
    ac_json_end_object(j);
}

typedef struct {
    const char *const *words;
    size_t nwords, i, k, lo, hi, total;
    const ac_model *m;
    uint64_t input;
    const ac_inspect_layer *ly;
    size_t nl;
} shard_doc;

static void compose(ac_json *j, void *ctx)
{
    const shard_doc *d = ctx;
    char hex[65];
    ac_json_begin_object(j);
    ac_json_kv_string(j, "format", AC_INSPECT_SHARD_FORMAT);
    ac_json_kv_int(j, "version", SHARD_VERSION);
    ac_json_kv_string(j, "attncheck", PACKAGE_VERSION);
    ac_json_key(j, "words");
    ac_json_begin_array(j);
    for (size_t w = 0; w < d->nwords; w++)
        ac_json_string(j, d->words[w]);
    ac_json_end_array(j);
    ac_json_kv_int_pair(j, "shard", (long long)d->i, (long long)d->k);
    ac_json_kv_int_pair(j, "pairs", (long long)d->lo, (long long)d->hi);
    ac_json_kv_int(j, "total", (long long)d->total);
    ac_json_key(j, "model");
    ac_json_begin_array(j);
    for (size_t f = 0; f < d->m->st.nfiles; f++) {
        for (int b = 0; b < 32; b++)
            snprintf(hex + 2 * b, 3, "%02x", d->m->st.files[f].sha256[b]);
        ac_json_string(j, hex);
    }
    ac_json_end_array(j);
    kv_sum(j, "input", d->input);
    ac_json_key(j, "heads");
    ac_json_begin_array(j);
    for (size_t l = 0; l < d->nl; l++)
        for (size_t q = 0; q < d->ly[l].nheads; q++) {
            size_t n = d->ly[l].n, h = d->ly[l].heads[q].head;
            head_json(j, &d->ly[l].heads[q],
                      ac_inspect_sum(d->ly[l].patterns.data + h * n * n, n * n));
        }
    ac_json_end_array(j);
    ac_json_end_object(j);
}

int ac_inspect_shard_write(const char *path, const char *const *words, size_t nwords, size_t i,
                           size_t k, size_t lo, size_t hi, size_t total, const ac_model *m,
                           uint64_t input, const ac_inspect_layer *ly, size_t nl, ac_err *err)
{
    shard_doc d = {words, nwords, i, k, lo, hi, total, m, input, ly, nl};
    return ac_sumjson_write(path, compose, &d, err);
}

/* ---- reading ------------------------------------------------------------------ */

static int refuse(ac_err *err, const char *path, const char *kind, const char *fmt, ...)
{
    char what[AC_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ac_err_set(err, AC_EDATA, "%s: %s: %s", path, kind, what);
}

#define jdouble ac_jv_hexdouble
#define dup_key ac_jv_dup_key

static int jlong(const ac_jv *v, long *x)
{
    if (!v || v->type != AC_JV_NUMBER)
        return 0;
    char *end;
    errno = 0;
    long long y = strtoll(v->s, &end, 10);
    if (end == v->s || *end || errno || y < -(1LL << 40) || y > (1LL << 40))
        return 0;
    *x = (long)y;
    return 1;
}

static int jsize(const ac_jv *v, size_t *x)
{
    long y;
    if (!jlong(v, &y) || y < 0)
        return 0;
    *x = (size_t)y;
    return 1;
}

static int jint(const ac_jv *v, int *x)
{
    long y;
    if (!jlong(v, &y) || y < -(1L << 30) || y > (1L << 30))
        return 0;
    *x = (int)y;
    return 1;
}

static int jsum(const ac_jv *v, uint64_t *x)
{
    if (!v || v->type != AC_JV_STRING || strlen(v->s) != 16)
        return 0;
    *x = 0;
    for (int k = 0; k < 16; k++) {
        int c = v->s[k], d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                                                                     : -1;
        if (d < 0)
            return 0;
        *x = *x << 4 | (uint64_t)d;
    }
    return 1;
}

/* a string member copied into buf of n bytes (it must fit) */
static int jstr(const ac_jv *o, const char *key, char *buf, size_t n)
{
    const ac_jv *v = ac_jv_get(o, key);
    if (!v || v->type != AC_JV_STRING || strlen(v->s) >= n)
        return 0;
    memcpy(buf, v->s, strlen(v->s) + 1);
    return 1;
}

static const ac_jv *jarr(const ac_jv *o, const char *key, size_t n)
{
    const ac_jv *v = ac_jv_get(o, key);
    return v && v->type == AC_JV_ARRAY && (n == (size_t)-1 || v->n == n) ? v : NULL;
}

static int read_circuit(ac_inspect_circuit *c, const ac_jv *a)
{
    if (!a || a->type != AC_JV_ARRAY || a->n != 5 || !jlong(a->kids[0], &c->rank_lo) ||
        !jlong(a->kids[1], &c->rank_hi) || !jdouble(a->kids[2], &c->eps) ||
        a->kids[3]->type != AC_JV_ARRAY || a->kids[4]->type != AC_JV_ARRAY ||
        a->kids[3]->n != a->kids[4]->n)
        return 0;
    c->nsv = a->kids[3]->n;
    c->lo = malloc((c->nsv ? c->nsv : 1) * sizeof *c->lo);
    c->hi = malloc((c->nsv ? c->nsv : 1) * sizeof *c->hi);
    if (!c->lo || !c->hi)
        return 0;
    for (size_t i = 0; i < c->nsv; i++)
        if (!jdouble(a->kids[3]->kids[i], &c->lo[i]) || !jdouble(a->kids[4]->kids[i], &c->hi[i]))
            return 0;
    return 1;
}

/* One record: 1, or 0 when a member is missing or malformed. */
static int read_head(ac_inspect_head *hd, uint64_t *psum, const ac_jv *o)
{
    ac_t1_tol_threshold *t = &hd->thr;
    const ac_jv *a;
    if (!o || o->type != AC_JV_OBJECT || dup_key(o) ||
        !jsize(ac_jv_get(o, "layer"), &hd->layer) || !jsize(ac_jv_get(o, "head"), &hd->head) ||
        !jsum(ac_jv_get(o, "pattern"), psum) || !jsize(ac_jv_get(o, "kv_head"), &hd->kv_head) ||
        !jsize(ac_jv_get(o, "dk"), &hd->dk) || !jsize(ac_jv_get(o, "d_class"), &hd->dprime) ||
        !jint(ac_jv_get(o, "bias"), &hd->bias) || !jint(ac_jv_get(o, "masked"), &hd->masked) ||
        !jstr(o, "class", hd->klass, sizeof hd->klass) ||
        !jdouble(ac_jv_get(o, "factor"), &hd->factor) ||
        !jdouble(ac_jv_get(o, "pmin"), &hd->pmin) || !jdouble(ac_jv_get(o, "pmax"), &hd->pmax))
        return 0;
    if (!(a = jarr(o, "thr", 4)) || !jlong(a->kids[0], &t->lo) || !jlong(a->kids[1], &t->hi) ||
        !jint(a->kids[2], &t->exact) || !jsize(a->kids[3], &t->dk_max) ||
        !jstr(o, "thr_method", t->method, sizeof t->method))
        return 0;
    if (!(a = jarr(o, "exact_rep", 5)) || !jlong(a->kids[0], &t->exact_rep.lo) ||
        !jlong(a->kids[1], &t->exact_rep.hi) || !jint(a->kids[2], &t->exact_rep.none) ||
        !jint(a->kids[3], &t->exact_rep.if_any) || !jint(a->kids[4], &t->exact_rep.exact) ||
        !jstr(o, "exact_rep_method", t->exact_rep.method, sizeof t->exact_rep.method))
        return 0;
    if (!(a = jarr(o, "evals", (size_t)-1)) || a->n > AC_T1_MAX_EVALS)
        return 0;
    t->nevals = a->n;
    for (size_t e = 0; e < a->n; e++) {
        const ac_jv *x = a->kids[e];
        int v;
        if (x->type != AC_JV_ARRAY || x->n != 4 || !jlong(x->kids[0], &t->eval[e].dk) ||
            !jint(x->kids[1], &v) || !jdouble(x->kids[2], &t->eval[e].lo) ||
            !jdouble(x->kids[3], &t->eval[e].hi))
            return 0;
        t->eval[e].verdict = (ac_verdict)v;
    }
    int v;
    if (!jint(ac_jv_get(o, "own"), &v))
        return 0;
    hd->own = (ac_verdict)v;
    if (!(a = jarr(o, "dist", (size_t)-1)) || a->n > AC_INSPECT_MAX_DKP)
        return 0;
    hd->ndist = a->n;
    for (size_t k = 0; k < a->n; k++) {
        const ac_jv *x = a->kids[k];
        ac_inspect_dist *ds = &hd->dist[k];
        if (x->type != AC_JV_ARRAY || x->n != 5 || !jsize(x->kids[0], &ds->dk) ||
            !jint(x->kids[1], &v) || !jdouble(x->kids[2], &ds->lo) ||
            !jdouble(x->kids[3], &ds->hi) || !jdouble(x->kids[4], &ds->decades))
            return 0;
        ds->verdict = (ac_verdict)v;
    }
    ac_cert *c = &hd->self;
    int rel;
    if (!(a = jarr(o, "self", 9)) || !jint(a->kids[0], &v) || !jint(a->kids[1], &rel) ||
        !jdouble(a->kids[2], &c->tau) || !jint(a->kids[3], &c->stage) ||
        !jlong(a->kids[4], &c->prec) || !jint(a->kids[5], &c->stages_tried) ||
        !jdouble(a->kids[6], &c->lo) || !jdouble(a->kids[7], &c->hi) ||
        !jdouble(a->kids[8], &c->seconds) ||
        !jstr(o, "self_quantity", c->quantity, sizeof c->quantity) ||
        !jstr(o, "self_method", c->method, sizeof c->method) ||
        !jstr(o, "self_note", hd->self_note, sizeof hd->self_note))
        return 0;
    c->verdict = (ac_verdict)v;
    c->rel = (ac_relation)rel;
    if (!read_circuit(&hd->qk, ac_jv_get(o, "qk")) || !read_circuit(&hd->ov, ac_jv_get(o, "ov")))
        return 0;
    if (!(a = jarr(o, "time", 4)) || !jdouble(a->kids[0], &hd->seconds) ||
        !jdouble(a->kids[1], &t->seconds) || !jdouble(a->kids[2], &hd->t_dist) ||
        !jdouble(a->kids[3], &hd->t_circuits))
        return 0;
    return 1;
}

int ac_inspect_shard_is(const char *path)
{
    char buf[200];
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return ac_sumjson_names(buf, n, AC_INSPECT_SHARD_FORMAT);
}

static int read_top(ac_inspect_shard *s, const ac_jv *v, const char *path, ac_err *err)
{
    const ac_jv *w = jarr(v, "words", (size_t)-1), *sh = jarr(v, "shard", 2),
                *pr = jarr(v, "pairs", 2), *md = jarr(v, "model", (size_t)-1),
                *hs = jarr(v, "heads", (size_t)-1), *ver = ac_jv_get(v, "attncheck");
    if (!ver || ver->type != AC_JV_STRING)
        return refuse(err, path, CORRUPT, "no \"attncheck\" version");
    if (!(s->attncheck = strdup(ver->s)))
        return ac_err_set(err, AC_EINTERNAL, "%s: out of memory", path);
    if (!w || !sh || !pr || !md || !hs || !jsize(sh->kids[0], &s->i) ||
        !jsize(sh->kids[1], &s->k) || !jsize(pr->kids[0], &s->lo) ||
        !jsize(pr->kids[1], &s->hi) || !jsize(ac_jv_get(v, "total"), &s->total) ||
        !jsum(ac_jv_get(v, "input"), &s->input))
        return refuse(err, path, CORRUPT, "a member (words, shard, pairs, total, model, input "
                      "or heads) is missing or malformed");
    size_t plo, phi;
    if (s->k < 1 || s->i < 1 || s->i > s->k || s->k > s->total)
        return refuse(err, path, INCONSISTENT, "shard %zu/%zu of %zu pairs: impossible (1 <= I "
                      "<= K <= pairs)", s->i, s->k, s->total);
    ac_cond_shard_range(s->total, s->i, s->k, &plo, &phi);
    if (s->lo != plo || s->hi != phi)
        return refuse(err, path, INCONSISTENT, "shard %zu/%zu of %zu pairs holds [%zu, %zu), "
                      "not [%zu, %zu)", s->i, s->k, s->total, s->lo, s->hi, plo, phi);
    if (hs->n != s->hi - s->lo)
        return refuse(err, path, INCONSISTENT, "%zu head records for the %zu pairs [%zu, %zu)",
                      hs->n, s->hi - s->lo, s->lo, s->hi);
    if (!(s->words = calloc(w->n + 1, sizeof *s->words)) ||
        !(s->sha256 = calloc(md->n + 1, sizeof *s->sha256)) ||
        !(s->heads = calloc(hs->n + 1, sizeof *s->heads)) ||
        !(s->pattern = calloc(hs->n + 1, sizeof *s->pattern)))
        return ac_err_set(err, AC_EINTERNAL, "%s: out of memory", path);
    for (size_t k = 0; k < w->n; k++) {
        if (w->kids[k]->type != AC_JV_STRING)
            return refuse(err, path, CORRUPT, "a word of the command line is not a string");
        if (!(s->words[k] = strdup(w->kids[k]->s)))
            return ac_err_set(err, AC_EINTERNAL, "%s: out of memory", path);
        s->nwords = k + 1;
    }
    s->nfiles = md->n;
    for (size_t f = 0; f < md->n; f++)
        if (md->kids[f]->type != AC_JV_STRING || strlen(md->kids[f]->s) != 64)
            return refuse(err, path, CORRUPT, "a model checksum is not 64 hexadecimal digits");
        else
            memcpy(s->sha256[f], md->kids[f]->s, 65);
    for (size_t q = 0; q < hs->n; q++) {
        s->nheads = q + 1;
        if (!read_head(&s->heads[q], &s->pattern[q], hs->kids[q]))
            return refuse(err, path, CORRUPT, "head record %zu (pair %zu) is malformed", q,
                          s->lo + q);
    }
    return AC_OK;
}

int ac_inspect_shard_read(ac_inspect_shard *s, const char *path, ac_err *err)
{
    memset(s, 0, sizeof *s);
    unsigned char *text;
    size_t n;
    ac_jv *v = NULL;
    int st = ac_file_read(path, AC_JSON_PARSE_MAX_BYTES, &text, &n, err);
    if (st == AC_EDATA)
        return ac_err_set(err, AC_EDATA, "%s: too large for an inspect shard file", path);
    if (st)
        return st;
    char name[AC_ERR_MSG_MAX], why[160];
    const char *bad;
    snprintf(name, sizeof name, "%s: %s", path,
             ac_sumjson_names((char *)text, n, AC_INSPECT_SHARD_FORMAT) ? CORRUPT " (truncated or damaged)" : NOT_SHARD);
    if ((st = ac_jparse(&v, (char *)text, n, name, err)))
        goto out;
    const ac_jv *fmt = ac_jv_get(v, "format"), *ver = ac_jv_get(v, "version");
    if (v->type != AC_JV_OBJECT || !fmt || fmt->type != AC_JV_STRING ||
        strcmp(fmt->s, AC_INSPECT_SHARD_FORMAT) != 0)
        st = refuse(err, path, NOT_SHARD, "no \"format\": \"" AC_INSPECT_SHARD_FORMAT "\"");
    else if (!ver || ver->type != AC_JV_NUMBER || strcmp(ver->s, "1") != 0)
        st = refuse(err, path, NOT_SHARD, "format version %s; this attncheck reads 1",
                    ver && ver->s ? ver->s : "missing");
    else if ((bad = ac_sumjson_check((char *)text, n, why, sizeof why)))
        st = refuse(err, path, CORRUPT, "%s", bad);
    else if (dup_key(v))
        st = refuse(err, path, CORRUPT, "two members \"%s\"", dup_key(v));
    else
        st = read_top(s, v, path, err);
out:
    ac_jv_free(v);
    free(text);
    if (st)
        ac_inspect_shard_free(s);
    return st;
}

void ac_inspect_shard_free(ac_inspect_shard *s)
{
    if (!s)
        return;
    for (size_t k = 0; k < s->nwords; k++)
        free(s->words[k]);
    free(s->words);
    free(s->attncheck);
    free(s->sha256);
    for (size_t q = 0; q < s->nheads; q++) {
        free(s->heads[q].qk.lo);
        free(s->heads[q].qk.hi);
        free(s->heads[q].ov.lo);
        free(s->heads[q].ov.hi);
    }
    free(s->heads);
    free(s->pattern);
    memset(s, 0, sizeof *s);
}

/* ---- the meaning of a record ------------------------------------------------------- */

static int verdict_ok(ac_verdict v)
{
    return v == AC_PROVED || v == AC_REFUTED || v == AC_UNDECIDED;
}

/* Why an enclosure [lo, hi] of a distance and its verdict on "<= tol"
 * contradict each other, or NULL: no NaN, 0 <= lo <= hi, PROVED only with
 * hi <= tol, REFUTED only with lo > tol. */
static const char *enclosure_why(double lo, double hi, ac_verdict v, double tol)
{
    if (isnan(lo) || isnan(hi))
        return "a bound is NaN";
    if (!(lo >= 0 && lo <= hi))
        return "its enclosure is not 0 <= lo <= hi";
    if (!verdict_ok(v))
        return "no such verdict";
    if (v == AC_PROVED && !(hi <= tol))
        return "PROVED with hi > tol";
    if (v == AC_REFUTED && !(lo > tol))
        return "REFUTED with lo <= tol";
    return NULL;
}

static const char *circuit_why(const ac_inspect_circuit *c, size_t dk, size_t d)
{
    long nlo = 0, nhi = 0;
    if (c->nsv != (dk < d ? dk : d))
        return "not min(dk, d) singular values";
    if (isnan(c->eps) || !(c->eps >= 0))
        return "its radius eps is not >= 0";
    for (size_t i = 0; i < c->nsv; i++) {
        if (isnan(c->lo[i]) || isnan(c->hi[i]))
            return "a singular value bound is NaN";
        if (!(c->lo[i] >= 0 && c->lo[i] <= c->hi[i]))
            return "a singular value enclosure is not 0 <= lo <= hi";
        nlo += c->lo[i] > 0;
        nhi += c->hi[i] > 0;
    }
    if (c->rank_lo != nlo || c->rank_hi != (nhi < (long)dk ? nhi : (long)dk))
        return "its rank range is not the one its enclosures give";
    return NULL;
}

static const char *head_why(const ac_inspect_head *hd, const ac_attn_layer *L, const double *P,
                            const unsigned char *keep, size_t n, double tol)
{
    const ac_t1_tol_threshold *t = &hd->thr;
    if (hd->kv_head != ac_attn_kv_head(L, hd->head) || hd->dk != L->dk ||
        hd->bias != (L->bq || L->bk) || hd->masked != ac_inspect_masked(L, keep, n) ||
        hd->dprime != L->d + (size_t)hd->bias)
        return "its sizes or class (kv_head, dk, d', bias, mask) are not the layer's";
    double pmin = INFINITY, pmax = 0;
    for (size_t k = 0; k < n * n; k++)
        if (P[k] > 0) {
            pmin = P[k] < pmin ? P[k] : pmin;
            pmax = P[k] > pmax ? P[k] : pmax;
        }
    if (hd->pmin != pmin || hd->pmax != pmax)
        return "its smallest or largest pattern weight is not the pattern's";
    if (!(isfinite(hd->factor) && hd->factor >= 0))
        return "its scale factor is not finite and >= 0"; /* 0: a rotary head, not decided */
    if (t->lo < -1 || t->hi < -1 || t->lo > (long)t->dk_max || t->hi > (long)t->dk_max ||
        (t->hi >= 0 && t->lo > t->hi) || t->exact != (t->lo >= 0 && t->lo == t->hi))
        return "its threshold range is impossible (lo > hi, beyond dk_max, or exact wrongly)";
    for (size_t e = 0; e < t->nevals; e++) {
        if (t->eval[e].dk < 1 || t->eval[e].dk > (long)t->dk_max)
            return "an evaluated head size is outside 1 .. dk_max";
        const char *why = enclosure_why(t->eval[e].lo, t->eval[e].hi, t->eval[e].verdict, tol);
        if (why)
            return why;
        /* REFUTED below lo, PROVED from hi: dist is non-increasing in dk */
        if ((t->eval[e].verdict == AC_PROVED && t->eval[e].dk < t->lo) ||
            (t->eval[e].verdict == AC_REFUTED && t->hi >= 0 && t->eval[e].dk >= t->hi))
            return "an evaluated size contradicts the threshold range";
    }
    ac_verdict own = t->hi > 0 && (long)hd->dk >= t->hi ? AC_PROVED
                     : (long)hd->dk < t->lo            ? AC_REFUTED
                                                      : AC_UNDECIDED;
    if (hd->own != own)
        return "its verdict at its own dk is not the one its threshold gives";
    for (size_t k = 0; k < hd->ndist; k++) {
        const ac_inspect_dist *ds = &hd->dist[k];
        const char *why = enclosure_why(ds->lo, ds->hi, ds->verdict, tol);
        if (ds->dk < 1 || ds->dk > hd->dk)
            return "a distance's head size is outside 1 .. dk";
        if (why)
            return why;
        double dec = ds->lo > 0 ? log10(ds->hi / ds->lo) : INFINITY;
        if (ds->decades != dec)
            return "a distance's decades are not log10(hi / lo)";
    }
    const ac_cert *c = &hd->self;
    if (c->stage == AC_STAGE_NONE) { /* not computed (a rotary head) */
        if (c->verdict != AC_UNDECIDED || c->lo != 0 || c->hi != 0)
            return "its self-check was not computed, yet it has a verdict or bounds";
    } else if (isnan(c->lo) || isnan(c->hi) || c->lo > c->hi || !verdict_ok(c->verdict) ||
        c->rel != AC_LE || c->tau != tol ||
        (c->verdict == AC_PROVED && !(c->hi <= tol)) ||
        (c->verdict == AC_REFUTED && !(c->lo > tol)))
        return "its self-check certificate contradicts itself or tol (NaN, lo > hi, or a "
               "verdict its enclosure does not give)";
    const char *why = circuit_why(&hd->qk, hd->dk, L->d);
    if (!why)
        why = circuit_why(&hd->ov, hd->dk, L->d);
    if (why)
        return why;
    const double tm[5] = {hd->seconds, t->seconds, hd->t_dist, hd->t_circuits, c->seconds};
    for (int k = 0; k < 5; k++)
        if (!(isfinite(tm[k]) && tm[k] >= 0))
            return "a time is not a finite number >= 0";
    return NULL;
}

int ac_inspect_shard_check_head(const ac_inspect_head *hd, uint64_t psum, size_t l, size_t h,
                                const ac_attn_layer *L, const double *P,
                                const unsigned char *keep, size_t n, double tol,
                                const char *name, ac_err *err)
{
    if (hd->layer != l || hd->head != h)
        return refuse(err, name, INCONSISTENT, "it holds layer %zu, head %zu where layer %zu, "
                      "head %zu belongs (pairs overlap, repeat or are out of order)", hd->layer,
                      hd->head, l, h);
    if (psum != ac_inspect_sum(P, n * n))
        return refuse(err, name, INCONSISTENT, "layer %zu, head %zu: its pattern is not the one "
                      "this model and input give (checksum %016" PRIx64 ", here %016" PRIx64 ")",
                      l, h, psum, ac_inspect_sum(P, n * n));
    const char *why = head_why(hd, L, P, keep, n, tol);
    if (why)
        return refuse(err, name, INCONSISTENT, "layer %zu, head %zu: %s", l, h, why);
    return AC_OK;
}
