/* condition_json.c — `attncheck condition --json`: one object with the
 * verdict, the certificate of claim C, the parameters and one result per h. */
#include <config.h>

#include <math.h>

#include "condition_cli.h"

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

static void json_stats(ac_json *j, const ac_cond_result *r)
{
    int sq = cond_is_square(r);
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

static void json_certified(ac_json *j, const ac_cond_result *r)
{
    const ac_cond_certstats *c = &r->cst;
    int sq = cond_is_square(r);
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
    ac_json_kv_bool(j, "full_rank_possible", r->rank_bound >= r->m);
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
static void json_result(ac_json *j, const ac_cond_result *r, int certify)
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
    json_stats(j, r);
    json_predictions(j, &r->pred);
    json_errors(j, r);
    json_routes(j, r);
    if (r->bins)
        json_spectrum(j, r);
    if (certify)
        json_certified(j, r);
    json_result_time(j, r);
    ac_json_end_object(j);
}

static void json_parameters(ac_json *j, const cond_args *a, int threads)
{
    const ac_cond_opts *o = &a->o;
    ac_json_key(j, "parameters");
    ac_json_begin_object(j);
    ac_json_kv_int(j, "N", (long long)o->N);
    if (a->have_embed)
        ac_json_kv_int(j, "embed", (long long)a->embed);
    else
        ac_json_kv_int(j, "head_dim", (long long)a->d);
    ac_json_kv_string(j, "mode", ac_cond_mode_name(o->mode));
    if (o->mode == AC_COND_ATTENTION)
        ac_json_kv_int(j, "input_dim", (long long)o->input_dim);
    ac_json_kv_int(j, "trials", (long long)o->trials);
    ac_json_kv_int(j, "seed", (long long)o->seed);
    ac_json_kv_number(j, "rtol", o->rtol);
    ac_json_kv_int(j, "max_prec", o->max_prec);
    ac_json_kv_int(j, "threads", threads);
    ac_json_end_object(j);
}

void cond_write_json(ac_json *j, const cond_args *a, const ac_cond_result *res, size_t nh,
                     double wall, int threads, const ac_cert *cert)
{
    const ac_cond_opts *o = &a->o;
    ac_json_begin_object(j);
    ac_json_kv_string(j, "command", "condition");
    ac_json_kv_string(j, "version", PACKAGE_VERSION);
    ac_json_kv_string(j, "verdict", ac_verdict_name(cert->verdict));
    ac_json_kv_string(j, "claim",
                      "every sampled block has full rank and every reported kappa is within "
                      "rtol of the exact kappa of its block");
    ac_json_kv_bool(j, "certified", o->certify);
    ac_json_key(j, "certificate");
    cli_json_cert(j, cert);
    json_parameters(j, a, threads);
    ac_json_key(j, "results");
    ac_json_begin_array(j);
    for (size_t i = 0; i < nh; i++)
        json_result(j, &res[i], o->certify);
    ac_json_end_array(j);
    cond_times t = cond_sum_times(res, nh);
    ac_json_key(j, "time");
    ac_json_begin_object(j);
    ac_json_kv_number(j, "wall", wall);
    ac_json_kv_number(j, "sampling", t.sample);
    ac_json_kv_number(j, "reduction", t.reduce);
    ac_json_kv_number(j, "svd", t.solve);
    ac_json_kv_number(j, "mpfr", t.mpfr);
    ac_json_kv_number(j, "certify", t.certify);
    ac_json_kv_number(j, "gflop", t.flops * 1e-9);
    ac_json_kv_number(j, "gflop_per_s", wall > 0 ? t.flops * 1e-9 / wall : 0.0);
    ac_json_end_object(j);
    ac_json_end_object(j);
}
