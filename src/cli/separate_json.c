/* separate_json.c — `attncheck separate --json` and --out-dir: the JSON
 * object of a separation (sep_json) or of an embedding check
 * (sep_json_embed), and the staged output directory (sep_write_outputs). */
#include <config.h>

#include <string.h>

#include "attncheck/fileio.h"
#include "separate.h"

static void json_sep(ac_json *j, const ac_t2_sep *s)
{
    ac_json_begin_object(j);
    ac_json_kv_string(j, "construction", ac_t2_construction_name(s->construction));
    ac_json_kv_int(j, "construction_id", s->construction);
    ac_json_kv_int(j, "vector_index", (long long)s->index);
    ac_json_kv_int(j, "head", (long long)s->head);
    ac_json_kv_number(j, "alpha", s->alpha);
    ac_json_kv_number(j, "gap_estimate", s->est_gap);
    ac_json_kv_number(j, "relative_gap_estimate", s->est_rel);
    ac_json_kv_number(j, "difference_lo", s->gap_lo);
    ac_json_kv_number(j, "difference_hi", s->gap_hi);
    ac_json_kv_number(j, "relative_gap_lo", s->rel_lo);
    ac_json_kv_number(j, "norm_f_hi", s->f_hi);
    ac_json_kv_number(j, "norm_g_hi", s->g_hi);
    ac_json_key(j, "certificate");
    cli_json_cert(j, &s->cert);
    ac_json_end_object(j);
}

static void json_verdict_kv(ac_json *j, const char *k, ac_verdict v)
{
    ac_json_kv_string(j, k, ac_verdict_name(v));
}

/* "instance": the sizes, the seed and how each layer was made */
static void json_instance(ac_json *j, const sep_out *c, int embed)
{
    ac_json_key(j, "instance");
    ac_json_begin_object(j);
    ac_json_kv_int(j, "d", (long long)c->W->d);
    ac_json_kv_int(j, "h", (long long)c->W->h);
    ac_json_kv_int(j, "dh", (long long)c->W->hs);
    ac_json_kv_int(j, "dp", (long long)c->V->hs);
    ac_json_kv_int(j, "n", (long long)c->a->n);
    ac_json_kv_int(j, "seed", (long long)c->a->seed);
    if (embed) {
        ac_json_kv_string(j, "f_W", c->wdesc);
        ac_json_kv_string(j, "g_V", c->vdesc);
    } else {
        ac_json_kv_string(j, "g_V", c->vdesc);
        ac_json_kv_string(j, "f_W", c->wdesc);
    }
    ac_json_end_object(j);
}

static void json_hypotheses(ac_json *j, const ac_t2_hyp *hyp)
{
    ac_json_key(j, "hypotheses");
    ac_json_begin_object(j);
    json_verdict_kv(j, "sizes", hyp->sizes);
    ac_json_kv_string(j, "sizes_note", hyp->sizes_note);
    json_verdict_kv(j, "sv_full_rank", hyp->sv_rank);
    ac_json_kv_int(j, "sv_rank", hyp->sv_rank_value);
    ac_json_kv_string(j, "sv_method", hyp->sv_method);
    json_verdict_kv(j, "u_shared", hyp->u_shared);
    ac_json_kv_int(j, "u_first_different_head", (long long)hyp->u_first_bad);
    json_verdict_kv(j, "u_rank_dp", hyp->u_rank);
    ac_json_kv_int(j, "u_rank", hyp->u_rank_value);
    ac_json_kv_string(j, "u_method", hyp->u_method);
    json_verdict_kv(j, "theorem_applies", hyp->applies);
    ac_json_end_object(j);
}

static void json_case(ac_json *j, const ac_t2_class *cls)
{
    ac_json_key(j, "case");
    ac_json_begin_object(j);
    ac_json_kv_int(j, "number", (long long)cls->kase);
    ac_json_kv_string(j, "name", ac_t2_case_name(cls->kase));
    json_verdict_kv(j, "sw_equals_sv", cls->sw_equals_sv);
    ac_json_kv_int(j, "nonskew_heads", (long long)cls->nonskew);
    ac_json_kv_string(j, "note", cls->note);
    ac_json_end_object(j);
}

/* "case_construction", "best" (null without an X) and "search" */
static void json_search(ac_json *j, const ac_t2_result *r)
{
    ac_json_key(j, "case_construction");
    if (r->by_case.X.data)
        json_sep(j, &r->by_case);
    else
        ac_json_null(j);
    ac_json_key(j, "best");
    if (r->best.X.data)
        json_sep(j, &r->best);
    else
        ac_json_null(j);
    ac_json_key(j, "search");
    ac_json_begin_object(j);
    ac_json_kv_int(j, "candidates", (long long)r->ncand);
    ac_json_kv_int(j, "certified", (long long)r->ncert);
    ac_json_kv_number(j, "multimin_from", r->opt_from);
    ac_json_kv_number(j, "multimin_to", r->opt_to);
    ac_json_kv_int(j, "multimin_evaluations", r->opt_evals);
    ac_json_end_object(j);
}

/* "audit": null unless --audit */
static void json_audit(ac_json *j, const ac_t2_audit *au)
{
    ac_json_key(j, "audit");
    if (!au->done) {
        ac_json_null(j);
        return;
    }
    ac_json_begin_object(j);
    json_verdict_kv(j, "dependent_v", au->dep);
    ac_json_kv_int(j, "dependent_head", (long long)au->dep_head);
    ac_json_kv_int(j, "dependent_v_bits", au->dep_bits);
    ac_json_key(j, "dependent_v_normalised");
    ac_json_begin_array(j);
    for (size_t i = 0; au->dep_vec && i < au->dep_len; i++)
        ac_json_number(j, au->dep_vec[i]);
    ac_json_end_array(j);
    json_verdict_kv(j, "generic_v_independent", au->indep);
    ac_json_kv_number(j, "generic_sigma_h_lo", au->indep_sigma_lo);
    json_verdict_kv(j, "no_sign_separating_v2", au->parallel);
    ac_json_kv_int(j, "parallel_head", (long long)au->par_head);
    ac_json_kv_int(j, "parallel_coordinate", (long long)au->par_coord);
    ac_json_kv_string(j, "parallel_note", au->par_note);
    json_verdict_kv(j, "v2_in_null_space_of_wv", au->v2null);
    ac_json_kv_int(j, "v2_head", (long long)au->v2_head);
    ac_json_kv_int(j, "v2_null_space_dimension", (long long)au->v2_dim);
    ac_json_kv_number(j, "v2_m_v1_over_v1_lo", au->v2_mnorm);
    ac_json_key(j, "v2_v1_normalised");
    ac_json_begin_array(j);
    for (size_t i = 0; au->v2_v && i < au->v2_len; i++)
        ac_json_number(j, au->v2_v[i]);
    ac_json_end_array(j);
    ac_json_kv_string(j, "v2_note", au->v2_note);
    ac_json_end_object(j);
}

void sep_json(ac_json *j, const sep_out *c)
{
    const ac_t2_result *r = c->r;
    ac_json_begin_object(j);
    ac_json_kv_string(j, "command", "separate");
    ac_json_kv_string(j, "version", PACKAGE_VERSION);
    ac_json_kv_string(j, "verdict", ac_verdict_name(r->verdict));
    ac_json_kv_string(j, "claim", "some X has ||f_W(X) - g_V(X)||_F > tol ||f_W(X)||_F");
    ac_json_kv_number(j, "tol", r->tol);
    ac_json_key(j, "certificate");
    cli_json_cert(j, &r->best.cert);
    json_instance(j, c, 0);
    json_hypotheses(j, &r->hyp);
    json_case(j, &r->cls);
    ac_json_kv_string(j, "equal_as_functions",
                      r->identical == 1 ? "yes" : r->identical == 0 ? "criterion fails" : "unknown");
    ac_json_kv_string(j, "identity", r->identity_note);
    json_search(j, r);
    ac_json_key(j, "trace");
    cli_json_steps(j, r->steps, r->nsteps);
    json_audit(j, &r->audit);
    ac_json_kv_string(j, "summary", r->summary);
    ac_json_kv_number(j, "seconds", r->seconds);
    ac_json_end_object(j);
}

#define EMBED_CLAIM "on every sample input X, ||g_V(X) - f_W(X)||_F <= tol ||f_W(X)||_F"

void sep_json_embed(ac_json *j, const sep_out *c)
{
    const ac_t2_embed_result *e = c->e;
    ac_json_begin_object(j);
    ac_json_kv_string(j, "command", "separate");
    ac_json_kv_string(j, "mode", "embed");
    ac_json_kv_string(j, "version", PACKAGE_VERSION);
    ac_json_kv_string(j, "verdict", ac_verdict_name(e->verdict));
    ac_json_kv_string(j, "claim", EMBED_CLAIM);
    ac_json_kv_number(j, "tol", e->tol);
    ac_json_kv_bool(j, "exact", e->exact);
    ac_json_key(j, "certificate");
    cli_json_cert(j, &e->cert);
    json_instance(j, c, 1);
    ac_json_kv_string(j, "rescaling", c->embnote);
    ac_json_kv_string(j, "parameters_identical_head_by_head",
                      e->params_identical == 1 ? "yes" : e->params_identical == 0 ? "no" : "unknown");
    ac_json_kv_string(j, "equal_as_functions",
                      e->equal_functions == 1 ? "yes"
                      : e->equal_functions == 0 ? "criterion fails" : "unknown");
    ac_json_kv_int(j, "samples", (long long)e->samples);
    ac_json_kv_int(j, "equal_samples", (long long)e->equal_samples);
    ac_json_kv_int(j, "within_tol_samples", (long long)e->within_samples);
    ac_json_kv_number(j, "relative_deviation_lo", e->rel_lo);
    ac_json_kv_number(j, "relative_deviation_hi", e->rel_hi);
    ac_json_kv_number(j, "difference_hi", e->diff_hi);
    ac_json_kv_int(j, "refuting_sample", (long long)e->refuted_sample);
    ac_json_kv_string(j, "summary", e->summary);
    ac_json_end_object(j);
}

/* ---- --out-dir ------------------------------------------------------------- */

static int write_layer(cli_outdir *o, const ac_mh *L, char prefix, ac_err *err)
{
    for (int t = 0; t < 4; t++) {
        char fn[16];
        ac_array arr;
        memset(&arr, 0, sizeof arr);
        const char *path = cli_outdir_path(o, ac_mh_file_name(fn, sizeof fn, prefix, (ac_mh_param)t));
        if (!path)
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
        int st = ac_mh_get_array(L, (ac_mh_param)t, &arr, err);
        if (!st)
            st = ac_npy_write(path, &arr, err);
        ac_array_free(&arr);
        if (st)
            return st;
    }
    return AC_OK;
}

/* certificate.json: the object of the separation or of the embedding check */
static void write_json_cb(ac_json *j, const void *ctx)
{
    const sep_out *c = ctx;
    if (c->e)
        sep_json_embed(j, c);
    else
        sep_json(j, c);
}

int sep_write_outputs(const sep_out *c, const ac_mat *X, const ac_array *samples)
{
    cli_outdir o;
    ac_err err;
    int st;
    ac_err_clear(&err);
    if ((st = cli_outdir_begin(&o, c->a->common.out_dir, &err)))
        return cli_fail_err(&err);
    const char *path;
    if (X && X->data &&
        (!(path = cli_outdir_path(&o, "X.npy")) || (st = ac_npy_write_mat(path, X, &err))))
        goto fail;
    if (samples && samples->data &&
        (!(path = cli_outdir_path(&o, "samples.npy")) || (st = ac_npy_write(path, samples, &err))))
        goto fail;
    if ((st = write_layer(&o, c->W, 'W', &err)) || (st = write_layer(&o, c->V, 'V', &err)))
        goto fail;
    if ((st = cli_outdir_write_json(&o, "certificate.json", write_json_cb, c, &err)))
        goto fail;
    if ((st = cli_outdir_commit(&o, &err)))
        return cli_fail_err(&err);
    return AC_OK;
fail:
    cli_outdir_abort(&o);
    if (!st)
        st = ac_err_set(&err, AC_EINTERNAL, "out of memory");
    return cli_fail_err(&err);
}

int sep_embed_samples(ac_array *S, const ac_mh *W, size_t n, size_t k, uint64_t seed,
                      ac_err *err)
{
    size_t shape[3] = {k, W->d, n};
    int st = ac_array_init(S, 3, shape, err);
    for (size_t s = 0; s < k && !st; s++) {
        ac_mat X = {0};
        if ((st = ac_t2_sample_input(&X, W->d, n, seed, s, err)))
            break;
        memcpy(S->data + s * W->d * n, X.data, W->d * n * sizeof(double));
        ac_mat_free(&X);
    }
    if (st)
        ac_array_free(S);
    return st;
}
