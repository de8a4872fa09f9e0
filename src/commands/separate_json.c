/* separate_json.c — the JSON result of `attncheck separate` (attncheck(1),
 * JSON; schema/separate.json): the one object of a separation, of --embed
 * or of --student, for the program's --json and certificate.json and for
 * Python's results. */
#include <config.h>

#include <string.h>

#include "attncheck/commands.h"
#include "commands/cmd_impl.h"

static void json_verdict_kv(ac_json *j, const char *k, ac_verdict v)
{
    ac_json_kv_string(j, k, ac_verdict_name(v));
}

/* ---- the separation ------------------------------------------------------------------ */

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
    ac_json_cert(j, &s->cert);
    ac_json_end_object(j);
}

/* "instance": the sizes, the seed and how each layer was made */
static void json_instance(ac_json *j, const ac_sep_request *q, const ac_sep_result *res)
{
    ac_json_key(j, "instance");
    ac_json_begin_object(j);
    ac_json_kv_int(j, "d", (long long)res->W.d);
    ac_json_kv_int(j, "h", (long long)res->W.h);
    ac_json_kv_int(j, "dh", (long long)res->W.hs);
    ac_json_kv_int(j, "dp", (long long)res->V.hs);
    ac_json_kv_int(j, "n", (long long)res->n);
    ac_json_kv_uint(j, "seed", q->seed);
    if (res->mode == AC_SEP_EMBED) {
        ac_json_kv_string(j, "f_W", res->wdesc);
        ac_json_kv_string(j, "g_V", res->vdesc);
    } else {
        ac_json_kv_string(j, "g_V", res->vdesc);
        ac_json_kv_string(j, "f_W", res->wdesc);
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
    ac_json_kv_int(j, "within_reach", (long long)r->nreach);
    ac_json_kv_number(j, "value_bound", r->value_bound);
    ac_json_kv_number(j, "multimin_from", r->opt_from);
    ac_json_kv_number(j, "multimin_to", r->opt_to);
    ac_json_kv_int(j, "multimin_evaluations", r->opt_evals);
    ac_json_end_object(j);
}

static void json_doubles(ac_json *j, const char *key, const double *v, size_t n)
{
    ac_json_key(j, key);
    ac_json_begin_array(j);
    for (size_t i = 0; v && i < n; i++)
        ac_json_number(j, v[i]);
    ac_json_end_array(j);
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
    json_doubles(j, "dependent_v_normalised", au->dep_vec, au->dep_len);
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
    json_doubles(j, "v2_v1_normalised", au->v2_v, au->v2_len);
    ac_json_kv_string(j, "v2_note", au->v2_note);
    ac_json_end_object(j);
}

/* The options that define a separation or an embedding check. */
static void json_parameters(ac_json *j, const ac_sep_request *q, const ac_sep_result *res)
{
    ac_json_parameters_begin(j, q->seed);
    ac_json_kv_int(j, "case", q->kase);
    ac_json_kv_int(j, "tries", (long long)q->tries);
    ac_json_kv_int(j, "samples", (long long)res->samples);
    ac_json_kv_number(j, "tol", q->tol);
    ac_json_kv_bool(j, "embed", q->embed);
    ac_json_parameters_end(j);
}

static void write_separation(ac_json *j, const ac_sep_request *q, const ac_sep_result *res)
{
    const ac_t2_result *r = &res->t2;
    ac_json_envelope_begin(j, "separate", ac_verdict_name(r->verdict), &r->best.cert);
    json_parameters(j, q, res);
    ac_json_kv_string(j, "claim", "some X has ||f_W(X) - g_V(X)||_F > tol ||f_W(X)||_F");
    ac_json_kv_number(j, "tol", r->tol);
    json_instance(j, q, res);
    json_hypotheses(j, &r->hyp);
    json_case(j, &r->cls);
    ac_json_kv_string(j, "equal_as_functions",
                      r->identical == 1   ? "yes"
                      : r->identical == 0 ? "criterion fails"
                                          : "unknown");
    ac_json_kv_string(j, "identity", r->identity_note);
    json_search(j, r);
    ac_json_key(j, "trace");
    ac_json_steps(j, r->steps, r->nsteps);
    json_audit(j, &r->audit);
    ac_json_kv_string(j, "summary", r->summary);
    ac_json_kv_number(j, "seconds", r->seconds);
    ac_json_end_object(j);
}

/* ---- --embed ------------------------------------------------------------------------------ */

#define EMBED_CLAIM "on every sample input X, ||g_V(X) - f_W(X)||_F <= tol ||f_W(X)||_F"

static void write_embed(ac_json *j, const ac_sep_request *q, const ac_sep_result *res)
{
    const ac_t2_embed_result *e = &res->embed;
    ac_json_envelope_begin(j, "separate", ac_verdict_name(e->verdict), &e->cert);
    json_parameters(j, q, res);
    ac_json_kv_number(j, "seconds", e->cert.seconds);
    ac_json_kv_string(j, "mode", "embed");
    ac_json_kv_string(j, "claim", EMBED_CLAIM);
    ac_json_kv_number(j, "tol", e->tol);
    ac_json_kv_bool(j, "exact", e->exact);
    json_instance(j, q, res);
    ac_json_kv_string(j, "rescaling", res->embnote);
    ac_json_kv_string(j, "parameters_identical_head_by_head",
                      e->params_identical == 1   ? "yes"
                      : e->params_identical == 0 ? "no"
                                                 : "unknown");
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

/* ---- --student ----------------------------------------------------------------------------- */

static void json_headcount(ac_json *j, const ac_headcount *hc)
{
    ac_json_begin_object(j);
    ac_json_kv_bool(j, "exact", hc->exact);
    ac_json_kv_int(j, "classes", (long long)hc->nclasses);
    ac_json_kv_int(j, "active_classes", (long long)hc->nactive);
    ac_json_kv_int(j, "max_rank_u", hc->max_u_rank);
    ac_json_kv_bool(j, "proved_both_ways", hc->iff);
    ac_json_kv_int(j, "h_min", (long long)hc->h_min);
    ac_json_kv_int(j, "h_max", (long long)hc->h_max);
    ac_json_key(j, "per_head_count");
    ac_json_begin_array(j);
    for (size_t k = 0; k < hc->ndiv; k++) {
        ac_json_begin_object(j);
        ac_json_kv_int(j, "heads", (long long)hc->divisors[k]);
        ac_json_kv_string(j, "represents", ac_hc_answer_name(hc->answer[k]));
        ac_json_end_object(j);
    }
    ac_json_end_array(j);
    ac_json_key(j, "classes_detail");
    ac_json_begin_array(j);
    for (size_t c = 0; c < hc->nclasses; c++) {
        ac_json_begin_object(j);
        ac_json_kv_int(j, "heads", (long long)hc->class_size[c]);
        ac_json_kv_int(j, "rank_u", hc->u_rank[c]);
        ac_json_kv_int(j, "rank_s", hc->s_rank[c]);
        ac_json_end_object(j);
    }
    ac_json_end_array(j);
    ac_json_kv_string(j, "summary", hc->summary);
    ac_json_end_object(j);
}

static void json_seed(ac_json *j, uint64_t seed, const ac_learn_t2_row *w, size_t s)
{
    ac_json_begin_object(j);
    ac_json_kv_uint(j, "seed", seed + s); /* wraps mod 2^64 as the run does */
    ac_json_kv_number(j, "rel_error", w->rel[s]);
    ac_json_kv_int(j, "worst_sample", (long long)w->worst_k[s]);
    ac_json_kv_number(j, "worst_rel_estimate", w->worst_est[s]);
    ac_json_kv_string(j, "separated", ac_verdict_name(w->sep[s]));
    ac_json_kv_number(j, "worst_rel_certified_lo", w->cert_lo[s]);
    ac_json_kv_number(j, "worst_rel_certified_hi", w->cert_hi[s]);
    ac_json_kv_number(j, "seconds", w->seconds[s]);
    ac_json_key(j, "curve");
    ac_json_begin_array(j);
    for (size_t p = 0; p < w->ncurve; p++) {
        if (!w->curve_step[p])
            continue;
        ac_json_begin_object(j);
        ac_json_kv_int(j, "step", (long long)w->curve_step[p]);
        ac_json_kv_number(j, "loss", w->curve_loss[s * w->ncurve + p]);
        ac_json_kv_number(j, "eval_rel_error", w->curve_rel[s * w->ncurve + p]);
        ac_json_end_object(j);
    }
    ac_json_end_array(j);
    ac_json_end_object(j);
}

static void write_student(ac_json *j, const ac_sep_request *q, const ac_sep_result *res)
{
    const ac_learn_t2_result *r = &res->stu;
    /* a measurement: one certificate per student and seed, under "students" */
    ac_json_envelope_begin(j, "separate", NULL, NULL);
    ac_json_parameters_begin(j, q->seed);
    ac_json_kv_bool(j, "student", 1);
    ac_json_kv_int(j, "seeds", (long long)q->student_seeds);
    ac_json_kv_int(j, "steps", (long long)q->student_steps);
    ac_json_kv_int(j, "batch", (long long)q->student_batch);
    ac_json_kv_number(j, "lr", q->student_lr);
    ac_json_kv_int(j, "samples", (long long)res->samples);
    ac_json_parameters_end(j);
    ac_json_kv_string(j, "mode", "student");
    ac_json_key(j, "teacher");
    ac_json_begin_object(j);
    ac_json_kv_int(j, "d", (long long)res->V.d);
    ac_json_kv_int(j, "h", (long long)res->V.h);
    ac_json_kv_int(j, "dp", (long long)res->V.hs);
    ac_json_kv_int(j, "n", (long long)res->n);
    ac_json_kv_string(j, "source", res->vdesc);
    ac_json_kv_string(j, "theorem2_hypotheses", ac_verdict_name(r->hyp.applies));
    ac_json_end_object(j);
    ac_json_key(j, "headcount");
    json_headcount(j, &r->hc);
    ac_json_key(j, "training");
    ac_json_begin_object(j);
    ac_json_kv_int(j, "steps", (long long)q->student_steps);
    ac_json_kv_number(j, "lr", q->student_lr);
    ac_json_kv_int(j, "batch", (long long)q->student_batch);
    ac_json_kv_int(j, "seeds", (long long)q->student_seeds);
    ac_json_kv_int(j, "heldout_samples", (long long)res->samples);
    ac_json_end_object(j);
    ac_json_key(j, "students");
    ac_json_begin_array(j);
    for (size_t i = 0; i < r->nrows; i++) {
        const ac_learn_t2_row *w = &r->rows[i];
        ac_json_begin_object(j);
        ac_json_kv_string(j, "kind", w->fixed ? "fixed" : "standard");
        ac_json_kv_int(j, "heads", (long long)w->heads);
        ac_json_kv_int(j, "head_size", (long long)w->hs);
        ac_json_kv_int(j, "params", (long long)w->nparams);
        ac_json_kv_string(j, "represents_exactly", ac_hc_answer_name(w->expect));
        ac_json_kv_number(j, "rel_error_mean", w->mean);
        ac_json_kv_number(j, "rel_error_sd", w->sd);
        ac_json_kv_number(j, "rel_error_min", w->min);
        ac_json_kv_number(j, "rel_error_max", w->max);
        ac_json_kv_number(j, "ratio_to_fixed", w->ratio);
        ac_json_kv_number(j, "worst_rel_certified_lo", w->cert_lo_min);
        ac_json_kv_number(j, "worst_rel_certified_hi", w->cert_hi_max);
        ac_json_kv_string(j, "outcome", ac_learn_t2_outcome_name(w->outcome));
        ac_json_key(j, "seeds");
        ac_json_begin_array(j);
        for (size_t s = 0; s < w->nseeds; s++)
            json_seed(j, q->seed, w, s);
        ac_json_end_array(j);
        ac_json_end_object(j);
    }
    ac_json_end_array(j);
    ac_json_kv_number(j, "seconds", r->seconds);
    ac_json_end_object(j);
}

void ac_sep_write_json(ac_json *j, const void *qv, const void *rv)
{
    const ac_sep_result *res = rv;
    if (res->mode == AC_SEP_STUDENT)
        write_student(j, qv, res);
    else if (res->mode == AC_SEP_EMBED)
        write_embed(j, qv, res);
    else
        write_separation(j, qv, res);
}
