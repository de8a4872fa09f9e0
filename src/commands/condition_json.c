/* condition_json.c — the one JSON object of condition's result (and of
 * merge's, the same sweep read back from its shards): the program's --json
 * and the Python package's results (cond_cmd.h).  A sweep: the verdict, the
 * certificate of claim C, the parameters and one result per h; a shard: its
 * trial range and file; --model: the trained blocks per layer beside the
 * Gaussian comparison.  Then the arrays of the result, its exit status and
 * its free. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/commands.h"
#include "commands/cmd_impl.h"
#include "commands/cond_cmd.h"

static void jnum_or_null(ac_json *j, const char *k, double x)
{
    ac_json_key(j, k);
    if (x != x)
        ac_json_null(j);
    else
        ac_json_number(j, x);
}

/* "name": [lo, hi], or null when lo is NaN */
static void jpair(ac_json *j, const char *name, double lo, double hi)
{
    ac_json_key(j, name);
    if (lo != lo) {
        ac_json_null(j);
    } else {
        ac_json_begin_array(j);
        ac_json_number(j, lo);
        ac_json_number(j, hi);
        ac_json_end_array(j);
    }
}

static void json_stats(ac_json *j, const ac_cond_result *r, const ac_condition_h *hi)
{
    int sq = !hi->mean_reported;
    ac_json_key(j, "stats");
    ac_json_begin_object(j);
    jnum_or_null(j, "mean", sq ? NAN : r->st.mean);
    jnum_or_null(j, "se_mean", sq ? NAN : r->st.se_mean);
    jnum_or_null(j, "sd", sq ? NAN : r->st.sd);
    ac_json_kv_number(j, "median", r->st.median);
    ac_json_kv_number(j, "q05", r->st.q05);
    ac_json_kv_number(j, "q95", r->st.q95);
    ac_json_kv_number(j, "min", r->st.min);
    ac_json_kv_number(j, "max", r->st.max);
    ac_json_kv_number(j, "elog", r->st.elog);
    jnum_or_null(j, "se_elog", r->st.se_elog);
    ac_json_kv_number(j, "mean_sigma1", r->st.mean_sigma1);
    ac_json_kv_number(j, "mean_sigmin", r->st.mean_sigmin);
    ac_json_end_object(j);
}

static void json_predictions(ac_json *j, const ac_rmt_pred *p)
{
    ac_json_key(j, "predictions");
    ac_json_begin_object(j);
    ac_json_kv_number(j, "first_order", p->first_order);
    jnum_or_null(j, "tw_point", p->tw_point);
    jnum_or_null(j, "tw_median", p->tw_median);
    jnum_or_null(j, "tw_q05", p->tw_q05);
    jnum_or_null(j, "tw_q95", p->tw_q95);
    ac_json_kv_number(j, "gordon_smax_hi", p->gordon_smax_hi);
    ac_json_kv_number(j, "gordon_smin_lo", p->gordon_smin_lo);
    ac_json_kv_number(j, "gordon_kappa95", p->gordon_kappa95);
    jnum_or_null(j, "edelman_median", p->edelman_median);
    jnum_or_null(j, "edelman_q05", p->edelman_q05);
    jnum_or_null(j, "edelman_q95", p->edelman_q95);
    jnum_or_null(j, "edelman_elog", p->edelman_elog);
    ac_json_end_object(j);
}

static void json_errors(ac_json *j, const ac_cond_result *r)
{
    ac_json_key(j, "errors");
    ac_json_begin_object(j);
    jnum_or_null(j, "first_order_vs_mean", r->err_first_order);
    jnum_or_null(j, "tw_point_vs_mean", r->err_tw_point);
    jnum_or_null(j, "tw_median_vs_median", r->err_tw_median);
    jnum_or_null(j, "tw_band_coverage", r->tw_coverage);
    ac_json_kv_number(j, "above_gordon_kappa95", r->gordon_exceed);
    jnum_or_null(j, "edelman_median_vs_median", r->err_edelman_median);
    jnum_or_null(j, "edelman_elog_minus_elog", r->diff_edelman_elog);
    jnum_or_null(j, "edelman_band_coverage", r->edelman_coverage);
    ac_json_end_object(j);
}

static void json_routes(ac_json *j, const ac_cond_result *r)
{
    ac_json_key(j, "routes");
    ac_json_begin_object(j);
    ac_json_kv_int(j, "gram", (long long)r->n_route[AC_COND_GRAM]);
    ac_json_kv_int(j, "svd", (long long)r->n_route[AC_COND_SVD]);
    ac_json_kv_int(j, "mpfr", (long long)r->n_route[AC_COND_MPFR]);
    ac_json_kv_int(j, "unresolved", (long long)r->n_unresolved);
    ac_json_end_object(j);
}

static void json_spectrum(ac_json *j, const ac_cond_result *r)
{
    ac_json_key(j, "spectrum");
    ac_json_begin_object(j);
    ac_json_kv_number(j, "y", (double)r->N / (double)r->D);
    ac_json_kv_number(j, "ks", r->ks);
    ac_json_key(j, "histogram");
    ac_json_begin_array(j);
    for (size_t k = 0; k < r->bins; k++) {
        ac_json_begin_object(j);
        ac_json_kv_number(j, "lo", r->hist_lo[k]);
        ac_json_kv_number(j, "hi", r->hist_hi[k]);
        ac_json_kv_number(j, "density", r->hist_density[k]);
        ac_json_kv_number(j, "mp_density", r->hist_mp[k]);
        ac_json_end_object(j);
    }
    ac_json_end_array(j);
    ac_json_end_object(j);
}

static void json_certified(ac_json *j, const ac_cond_result *r, const ac_condition_h *hi)
{
    const ac_cond_certstats *c = &r->cst;
    int sq = !hi->mean_reported;
    ac_json_key(j, "certified");
    ac_json_begin_object(j);
    ac_json_kv_string(j, "verdict", ac_verdict_name(r->verdict));
    ac_json_kv_int(j, "proved", (long long)r->n_proved);
    ac_json_kv_int(j, "undecided", (long long)r->n_undecided);
    ac_json_kv_int(j, "refuted", (long long)r->n_refuted);
    ac_json_key(j, "decided_at_stage");
    ac_json_begin_array(j);
    for (int k = 0; k <= AC_MAX_STAGES; k++)
        ac_json_int(j, (long long)r->n_stage[k]);
    ac_json_end_array(j);
    ac_json_kv_int(j, "rank_bound", (long long)r->rank_bound);
    ac_json_kv_bool(j, "full_rank_possible", hi->full_rank_possible);
    ac_json_kv_string(j, "block", r->mode == AC_COND_ATTENTION
                                      ? "exact heads of the sampled X and weights"
                                      : "the sampled doubles");
    ac_json_kv_number(j, "dev_lo", r->dev_lo);
    ac_json_kv_number(j, "dev_hi", r->dev_hi);
    ac_json_kv_bool(j, "stats_valid", c->valid);
    if (c->valid) {
        jpair(j, "mean", sq ? NAN : c->mean_lo, c->mean_hi);
        jpair(j, "median", c->median_lo, c->median_hi);
        jpair(j, "q05", c->q05_lo, c->q05_hi);
        jpair(j, "q95", c->q95_lo, c->q95_hi);
        jpair(j, "elog", c->elog_lo, c->elog_hi);
        jpair(j, "first_order_vs_mean", c->err_first_order_lo, c->err_first_order_hi);
        jpair(j, "tw_point_vs_mean", c->err_tw_point_lo, c->err_tw_point_hi);
        jpair(j, "tw_median_vs_median", c->err_tw_median_lo, c->err_tw_median_hi);
        jpair(j, "edelman_median_vs_median", c->err_edelman_median_lo, c->err_edelman_median_hi);
    }
    ac_json_end_object(j);
}

static void json_result_time(ac_json *j, const ac_cond_result *r)
{
    ac_json_key(j, "time");
    ac_json_begin_object(j);
    ac_json_kv_number(j, "wall", r->wall);
    ac_json_kv_number(j, "sampling", r->t_sample);
    ac_json_kv_number(j, "reduction", r->t_reduce);
    ac_json_kv_number(j, "svd", r->t_solve);
    ac_json_kv_number(j, "mpfr", r->t_mpfr);
    ac_json_kv_number(j, "certify", r->t_certify);
    ac_json_kv_number(j, "flops", r->flops);
    ac_json_end_object(j);
}

/* One element of "results": the sizes, then one object per part. */
static void json_result(ac_json *j, const ac_cond_result *r, const ac_condition_h *hi,
                        int certify)
{
    ac_json_begin_object(j);
    ac_json_kv_int(j, "h", (long long)r->h);
    ac_json_kv_int(j, "d", (long long)r->d);
    ac_json_kv_int(j, "D", (long long)r->D);
    ac_json_kv_int(j, "N", (long long)r->N);
    if (r->mode == AC_COND_ATTENTION)
        ac_json_kv_int(j, "E", (long long)r->E);
    ac_json_kv_int(j, "trials", (long long)r->trials);
    ac_json_kv_string(j, "regime", ac_rmt_regime_name(r->pred.regime));
    json_stats(j, r, hi);
    json_predictions(j, &r->pred);
    json_errors(j, r);
    json_routes(j, r);
    if (r->bins)
        json_spectrum(j, r);
    if (certify)
        json_certified(j, r, hi);
    json_result_time(j, r);
    ac_json_end_object(j);
}

static void json_parameters(ac_json *j, const ac_condition_request *q, int threads)
{
    ac_json_parameters_begin(j, q->seed);
    ac_json_kv_int(j, "N", (long long)q->seq);
    if (q->have_embed)
        ac_json_kv_int(j, "embed", (long long)q->embed);
    else
        ac_json_kv_int(j, "head_dim", (long long)q->head_dim);
    ac_json_kv_string(j, "mode", ac_cond_mode_name((ac_cond_mode)q->mode));
    if (q->mode == AC_COND_ATTENTION)
        ac_json_kv_int(j, "input_dim", (long long)(q->have_input_dim ? q->input_dim : 0));
    ac_json_kv_int(j, "trials", (long long)q->trials);
    ac_json_kv_number(j, "rtol", q->rtol);
    ac_json_kv_int(j, "max_prec", q->max_prec);
    ac_json_kv_int(j, "threads", threads);
    ac_json_parameters_end(j);
}

static void write_sweep(ac_json *j, const ac_condition_request *q, const ac_condition_result *res)
{
    const ac_condition_times *t = &res->times;
    double wall = res->wall;
    ac_json_envelope_begin(j, "condition", ac_verdict_name(res->cert.verdict), &res->cert);
    ac_json_kv_number(j, "seconds", wall);
    ac_json_kv_string(j, "claim",
                      "every sampled block has full rank and every reported kappa is within "
                      "rtol of the exact kappa of its block");
    ac_json_kv_bool(j, "certified", q->certify);
    json_parameters(j, q, res->threads);
    ac_json_key(j, "results");
    ac_json_begin_array(j);
    for (size_t i = 0; i < res->nh; i++)
        json_result(j, &res->res[i], &res->hs[i], q->certify);
    ac_json_end_array(j);
    ac_json_key(j, "time");
    ac_json_begin_object(j);
    ac_json_kv_number(j, "wall", wall);
    ac_json_kv_number(j, "sampling", t->sample);
    ac_json_kv_number(j, "reduction", t->reduce);
    ac_json_kv_number(j, "svd", t->solve);
    ac_json_kv_number(j, "mpfr", t->mpfr);
    ac_json_kv_number(j, "certify", t->certify);
    ac_json_kv_number(j, "gflop", t->flops * 1e-9);
    ac_json_kv_number(j, "gflop_per_s", wall > 0 ? t->flops * 1e-9 / wall : 0.0);
    ac_json_end_object(j);
    ac_json_end_object(j);
}

/* --shard: one shard decides nothing (its verdict comes with merge) */
static void write_shard(ac_json *j, const ac_condition_request *q, const ac_condition_result *res)
{
    ac_json_envelope_begin(j, "condition", NULL, NULL);
    ac_json_parameters_begin(j, q->seed);
    ac_json_kv_int(j, "trials", (long long)q->trials);
    ac_json_kv_string(j, "samples_out", q->samples_out);
    ac_json_parameters_end(j);
    ac_json_kv_number(j, "seconds", res->seconds);
    ac_json_kv_int_pair(j, "shard", (long long)q->shard[0], (long long)q->shard[1]);
    ac_json_kv_int_pair(j, "trials", (long long)res->lo, (long long)res->hi);
    ac_json_kv_string(j, "samples_out", q->samples_out);
    ac_json_end_object(j);
}

/* ---- --model ------------------------------------------------------------------------- */

static void json_layer(ac_json *j, const ac_learn_kappa_compare *c, size_t l)
{
    const ac_learn_kappa_layer *ly = &c->r.layers[l], *init = &c->r.init[l];
    ac_json_begin_object(j);
    ac_json_kv_int(j, "layer", (long long)ly->layer);
    ac_json_kv_int(j, "blocks", (long long)ly->n);
    ac_json_kv_int(j, "N_min", (long long)ly->N_min);
    ac_json_kv_int(j, "N_median", (long long)ly->N_med);
    ac_json_kv_int(j, "N_max", (long long)ly->N_max);
    ac_json_kv_int(j, "D", (long long)ly->D);
    ac_json_kv_number(j, "kappa_median", ly->st.median);
    ac_json_kv_number(j, "kappa_q05", ly->st.q05);
    ac_json_kv_number(j, "kappa_q95", ly->st.q95);
    ac_json_kv_number(j, "kappa_mean", ly->st.mean);
    ac_json_kv_number(j, "kappa_min", ly->st.min);
    ac_json_kv_number(j, "kappa_max", ly->st.max);
    ac_json_kv_number(j, "elog_kappa", ly->st.elog);
    ac_json_kv_int(j, "unresolved", (long long)ly->n_unresolved);
    ac_json_kv_number(j, "ratio_gauss_pred", c->ratio_pred[l]);
    ac_json_kv_number(j, "ratio_gauss_attention", c->ratio_gauss[l]);
    ac_json_kv_number(j, "init_kappa_median", init->st.median);
    ac_json_kv_number(j, "init_kappa_q05", init->st.q05);
    ac_json_kv_number(j, "init_kappa_q95", init->st.q95);
    ac_json_key(j, "kappa");
    ac_json_begin_array(j);
    for (size_t i = 0; i < ly->n; i++)
        ac_json_number(j, ly->kappa[i]);
    ac_json_end_array(j);
    ac_json_end_object(j);
}

static void write_model(ac_json *j, const ac_condition_request *q, const ac_condition_result *res)
{
    const ac_learn_kappa_compare *c = &res->compare;
    const ac_learn_kappa_result *r = &c->r;
    const ac_rmt_pred *p = &c->pred;
    /* measured, not certified: no verdict */
    ac_json_envelope_begin(j, "condition", NULL, NULL);
    ac_json_parameters_begin(j, q->seed);
    ac_json_kv_string(j, "model", q->model);
    ac_json_kv_int(j, "trials", (long long)c->gauss.trials);
    ac_json_kv_number(j, "rtol", q->rtol);
    ac_json_kv_int(j, "max_prec", q->max_prec);
    ac_json_parameters_end(j);
    ac_json_kv_number(j, "seconds", res->seconds);
    ac_json_kv_string(j, "mode", "model");
    ac_json_kv_string(j, "model", q->model);
    ac_json_kv_string(j, "task", ac_task_name(r->cfg.task));
    ac_json_kv_int(j, "step", (long long)r->step);
    ac_json_kv_int(j, "params", (long long)r->nparams);
    ac_json_kv_int(j, "num_layers", (long long)r->L); /* "layers" is the array below */
    ac_json_kv_int(j, "width", (long long)r->width);
    ac_json_kv_int(j, "heads", (long long)r->layers[0].H);
    ac_json_kv_int(j, "head_dim", (long long)r->layers[0].S);
    ac_json_kv_string(j, "attention",
                      r->cfg.model.kind == AC_NN_ATTN_FIXED ? "fixed" : "standard");
    ac_json_kv_string(j, "data", r->source);
    ac_json_kv_int(j, "sequences", (long long)r->sequences);
    ac_json_kv_number(j, "loss", r->loss);
    ac_json_kv_number(j, "accuracy", r->accuracy);
    ac_json_kv_number(j, "init_loss", r->init_loss);
    ac_json_kv_number(j, "init_accuracy", r->init_accuracy);
    ac_json_kv_number(j, "init_std", r->cfg.init_std);
    ac_json_kv_number(j, "rtol", q->rtol);
    ac_json_kv_bool(j, "certified", 0);
    ac_json_key(j, "gaussian");
    ac_json_begin_object(j);
    ac_json_kv_int(j, "N", (long long)p->N);
    ac_json_kv_int(j, "D", (long long)p->D);
    ac_json_kv_string(j, "regime", ac_rmt_regime_name(p->regime));
    ac_json_kv_number(j, "first_order", p->first_order);
    ac_json_kv_number(j, "tw_point", p->tw_point);
    ac_json_kv_number(j, "tw_median", p->tw_median);
    ac_json_kv_number(j, "tw_q05", p->tw_q05);
    ac_json_kv_number(j, "tw_q95", p->tw_q95);
    ac_json_kv_number(j, "edelman_median", p->edelman_median);
    ac_json_kv_number(j, "prediction_median", c->pred_median);
    ac_json_kv_int(j, "attention_trials", (long long)c->gauss.trials);
    ac_json_kv_uint(j, "attention_seed", q->seed);
    ac_json_kv_number(j, "attention_median", c->gauss.st.median);
    ac_json_kv_number(j, "attention_q05", c->gauss.st.q05);
    ac_json_kv_number(j, "attention_q95", c->gauss.st.q95);
    ac_json_end_object(j);
    ac_json_key(j, "layers");
    ac_json_begin_array(j);
    for (size_t l = 0; l < r->L; l++)
        json_layer(j, c, l);
    ac_json_end_array(j);
    ac_json_end_object(j);
}

void ac_cond_cmd_write_json(ac_json *j, const ac_condition_request *q,
                            const ac_condition_result *res)
{
    if (res->model)
        write_model(j, q, res);
    else if (res->shard)
        write_shard(j, q, res);
    else
        write_sweep(j, q, res);
}

/* ---- arrays, status, free ------------------------------------------------------------- */

static size_t out_array(ac_out_array *out, size_t k, size_t max, const char *name,
                        const double *data, size_t rows, size_t cols)
{
    if (k < max && data) {
        memset(&out[k], 0, sizeof out[k]);
        out[k].name = name;
        out[k].ndim = 2;
        out[k].shape[0] = rows;
        out[k].shape[1] = cols;
        out[k].data = data;
    }
    return data ? k + 1 : k;
}

/* A sweep: kappa, sigma1, sigmin (h x trials, one row per h of the list),
 * with --certify kappa_lo, kappa_hi, with --spectrum eig_h<h> (trials x
 * min(N, D): the eigenvalues of (1/D) A A^T of each sample).  --model: per
 * layer the kappa of the trained and of the initial blocks (layers x
 * blocks), and the Gaussian-weight heads' kappa (1 x trials). */
size_t ac_cond_cmd_arrays(const ac_condition_request *q, const ac_condition_result *res,
                          ac_out_array *out, size_t max)
{
    size_t k = 0;
    (void)q;
    if (res->model) {
        const ac_learn_kappa_compare *c = &res->compare;
        k = out_array(out, k, max, "kappa", res->kappa, c->r.L, c->r.sequences);
        k = out_array(out, k, max, "init_kappa", res->init_kappa, c->r.L, c->r.sequences);
        return out_array(out, k, max, "gauss_kappa", res->gauss_kappa, 1, c->gauss.trials);
    }
    if (res->shard || !res->kappa)
        return 0;
    size_t T = res->nh ? res->res[0].trials : 0;
    k = out_array(out, k, max, "kappa", res->kappa, res->nh, T);
    k = out_array(out, k, max, "sigma1", res->sigma1, res->nh, T);
    k = out_array(out, k, max, "sigmin", res->sigmin, res->nh, T);
    k = out_array(out, k, max, "kappa_lo", res->kappa_lo, res->nh, T);
    k = out_array(out, k, max, "kappa_hi", res->kappa_hi, res->nh, T);
    for (size_t i = 0; i < res->nh; i++)
        k = out_array(out, k, max, res->names[i], res->res[i].eig, T, res->res[i].m);
    return k;
}

int ac_cond_cmd_status(const ac_condition_result *res)
{
    if (res->model)
        return ac_verdict_status(res->compare.verdict);
    if (res->shard)
        return 0; /* the shard was written; merge decides */
    return ac_verdict_status(res->cert.verdict);
}

void ac_cond_cmd_result_free(void *rv)
{
    ac_condition_result *res = rv;
    for (size_t i = 0; res->res && i < res->nh; i++)
        ac_cond_result_free(&res->res[i]);
    free(res->res);
    ac_learn_kappa_compare_free(&res->compare);
    free(res->kappa);
    free(res->sigma1);
    free(res->sigmin);
    free(res->kappa_lo);
    free(res->kappa_hi);
    free(res->init_kappa);
    free(res->gauss_kappa);
    free(res->names);
    free(res->hs);
    ac_cmd_words_free(res->words, res->nwords);
    ac_opts_free(ac_cond_cmd_opts, &res->sweep);
}
