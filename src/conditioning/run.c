/* run.c — ac_cond_run: one h of Theorem 3.2 (paper 2) in named steps
 * (sizes, the samples in parallel, the statistics against the predictions,
 * the spectrum, the certificate of claim C), and the memory it needs.
 *
 * Parallelism: one OpenMP thread per sample with single-threaded BLAS; a
 * sample's stream is (seed, h, trial) and its route depends on itself and on
 * trial 0's route (trial 0 runs first and alone, or beside the others when
 * its route is predictable, with a recomputation after a wrong guess; see
 * run_samples), so results do not depend on the threads.
 */
#include <config.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/ac_arb.h"
#include "attncheck/blas.h"
#include "attncheck/fileio.h"
#include "attncheck/shard.h"
#include "cond_impl.h"

void ac_cond_result_free(ac_cond_result *r)
{
    if (!r)
        return;
    free(r->samples);
    free(r->eig);
    free(r->hist_lo);
    free(r->hist_hi);
    free(r->hist_density);
    free(r->hist_mp);
    memset(r, 0, sizeof *r);
}

/* ---- sizes and memory ------------------------------------------------------------ */



static int n_threads(const ac_cond_opts *o)
{
#ifdef _OPENMP
    return o->threads > 0 ? o->threads : omp_get_max_threads();
#else
    (void)o;
    return 1;
#endif
}

/* One home: the cgroup- and ulimit-aware measure of fileio.h. */
double ac_cond_memory_available(void)
{
    return ac_memory_available(NULL);
}

int ac_cond_memory_need(const ac_cond_opts *o, const size_t *h, const size_t *d, size_t nh,
                        double *bytes, ac_err *err)
{
    double total = 0, ws_max = 0;
    int st;
    for (size_t i = 0; i < nh; i++) {
        size_t E = cond_eff_E(o, h[i], d[i]);
        if ((st = cond_check_sizes(o->N, h[i], d[i], E, o, err)))
            return st;
        double D = (double)h[i] * (double)d[i], n = (double)o->N;
        double m = n < D ? n : D;
        double T = (double)o->trials;
        total += T * ((double)sizeof(ac_cond_sample) + 3 * sizeof(double));
        if (o->spectrum)
            total += 2 * T * m * sizeof(double) + 4.0 * (double)o->bins * sizeof(double);
        double w = cond_ws_bytes(o->N, h[i], d[i], E, o->mode);
        if (w > ws_max)
            ws_max = w;
    }
    total += (double)n_threads(o) * ws_max;
    *bytes = total;
    return AC_OK;
}

/* ---- the samples ----------------------------------------------------------------------- */

/* One sample: block, kappa, optional certify.  Returns status. */
static int do_sample(cond_ws *w, const ac_cond_opts *o, uint64_t trial, int start,
                     ac_cond_sample *s, double *eig, ac_err *err)
{
    /* i.i.d. blocks on the GRAM route: G straight from the sampler, A only
     * if a later route needs it (the same numbers either way) */
    if (o->mode == AC_COND_IID && start <= AC_COND_GRAM && !o->certify)
        cond_gram_iid(w, o, trial);
    else
        cond_sample_block(w, o, trial);
    int st = cond_kappa_ws(w, o->rtol, start, o->max_prec, s, eig, err);
    if (st)
        return st;
    if (o->certify) {
        double t0 = ac_seconds();
        st = cond_certify_sample(w, o, trial, s, err); /* certify_block.c */
        w->t_certify += ac_seconds() - t0;
    }
    return st;
}

static void accumulate(ac_cond_result *r, const cond_ws *w)
{
    r->t_sample += w->t_sample;
    r->t_reduce += w->t_reduce;
    r->t_solve += w->t_solve;
    r->t_mpfr += w->t_mpfr;
    r->t_certify += w->t_certify;
    r->flops += w->flops;
}


/* Step 1: sizes, the fields of r, the samples (and eigenvalues) and the
 * predictions of ac_rmt_predict.  On error r is freed. */
static int run_init(ac_cond_result *r, size_t h, size_t d, size_t E, const ac_cond_opts *o,
                    ac_err *err)
{
    size_t N = o->N;
    int st;
    if ((st = cond_check_sizes(N, h, d, E, o, err)))
        return st;
    r->h = h;
    r->d = d;
    r->D = h * d;
    r->N = N;
    r->E = o->mode == AC_COND_ATTENTION ? E : 0;
    r->m = N < r->D ? N : r->D;
    r->rank_bound = cond_rank_bound(o, N, h, d, E);
    r->trials = o->trials;
    r->mode = o->mode;
    r->seed = o->seed;
    r->rtol = o->rtol;
    r->bins = o->spectrum ? o->bins : 0;
    size_t T = o->trials, m = r->m;
    r->samples = calloc(T, sizeof *r->samples);
    if (o->spectrum)
        r->eig = malloc(T * m * sizeof(double));
    if (!r->samples || (o->spectrum && !r->eig)) {
        ac_cond_result_free(r);
        return ac_err_set(err, AC_EINTERNAL, "out of memory for %zu samples", T);
    }
    if ((st = ac_rmt_predict(&r->pred, N, r->D, err))) {
        ac_cond_result_free(r);
        return st;
    }
    return AC_OK;
}

/* Step 2a: trial 0 alone; it fixes the first route of the others (*start:
 * GRAM if trial 0 took it, else SVD, unless o->start_route is set).  A
 * shard without trial 0 (keep = 0) computes it for the route and drops it,
 * so that every shard's samples are those of the whole run. */
static int run_first_sample(ac_cond_result *r, size_t E, const ac_cond_opts *o, int *start,
                            int keep, ac_err *err)
{
    cond_ws w0;
    if (cond_ws_init(&w0, r->N, r->h, r->d, E, o->mode))
        return ac_err_set(err, AC_EINTERNAL, "out of memory for the workspace (N = %zu, D = %zu)",
                          r->N, r->D);
    *start = o->start_route >= 0 ? o->start_route : AC_COND_GRAM;
    ac_cond_sample s0;
    double *eig0 = NULL;
    if (!keep && o->spectrum && !(eig0 = malloc(r->m * sizeof *eig0))) {
        cond_ws_free(&w0);
        return ac_err_set(err, AC_EINTERNAL, "out of memory for the workspace");
    }
    int st = do_sample(&w0, o, 0, *start, keep ? &r->samples[0] : &s0,
                       o->spectrum ? (keep ? r->eig : eig0) : NULL, err);
    free(eig0);
    accumulate(r, &w0);
    cond_ws_free(&w0);
    if (o->start_route < 0)
        *start = (keep ? r->samples[0] : s0).route == AC_COND_GRAM ? AC_COND_GRAM : AC_COND_SVD;
    return st;
}

/* Whether to start trial 0 beside the others (run_samples): i.i.d. blocks
 * whose first-order kappa says the GRAM route will very likely be taken:
 * its error bound is about M m u kappa^2 relative (attncheck/condition.h),
 * here below a twentieth of rtol/2.  A wrong guess costs time, not
 * results. */
static int cond_speculate(const ac_cond_result *r, const ac_cond_opts *o)
{
    double k = r->pred.first_order;
    if (o->mode != AC_COND_IID || r->trials < 2)
        return 0;
    /* test hook (src/conditioning/test/test_condition.c): guess always, so
     * that the recomputation after a wrong guess is exercised */
    const char *force = getenv("ATTNCHECK_COND_SPECULATE");
    if (force && *force == '1')
        return 1;
    if (!(k < INFINITY))
        return 0;
    return (double)r->m * (double)(r->N + r->D - r->m) * U53 * k * k < 0.025 * o->rtol;
}

/* Step 2b: trials from .. hi-1 in parallel, one workspace per thread, every
 * sample starting with route `start` (with redo: only the trials whose
 * sample took the GRAM route, recomputed; see run_samples).  *done counts
 * the samples completed (for o->progress); the first failure stops the
 * others and is returned with its message in *err. */
static int run_other_samples(ac_cond_result *r, size_t E, const ac_cond_opts *o, int start,
                             size_t lo, size_t from, size_t hi, int redo, size_t *done_p,
                             ac_err *err)
{
    size_t T = hi - lo, m = r->m, done = *done_p;
    int fail = 0, have_ferr = 0;
    ac_err ferr;
    ac_err_clear(&ferr);
    int nt = n_threads(o);
#pragma omp parallel num_threads(nt)
    {
        cond_ws w;
        ac_err lerr;
        ac_err_clear(&lerr);
        int lst = cond_ws_init(&w, r->N, r->h, r->d, E, o->mode);
        if (lst) {
            lst = ac_err_set(&lerr, AC_EINTERNAL, "out of memory for a thread's workspace");
#pragma omp atomic write
            fail = lst;
        }
#pragma omp for schedule(dynamic, 1)
        for (size_t t = from; t < hi; t++) {
            int f;
#pragma omp atomic read
            f = fail;
            if (lst || f || (redo && r->samples[t].route != AC_COND_GRAM))
                continue;
            lst = do_sample(&w, o, t, start, &r->samples[t], o->spectrum ? r->eig + t * m : NULL,
                            &lerr);
            if (lst) {
#pragma omp atomic write
                fail = lst;
            }
            if (redo)
                continue;
            size_t dn;
#pragma omp atomic capture
            dn = ++done;
#ifdef _OPENMP
            if (omp_get_thread_num() == 0 && o->progress)
                o->progress(o->progress_ctx, dn, T);
#else
            if (o->progress)
                o->progress(o->progress_ctx, dn, T);
#endif
        }
#pragma omp critical(ac_cond_reduce)
        {
            accumulate(r, &w);
            if (lst && !have_ferr) {
                ferr = lerr;
                have_ferr = 1;
                fail = lst;
            }
        }
        cond_ws_free(&w);
        flint_cleanup();
    }
    *done_p = done;
    if (fail && err)
        *err = ferr;
    return fail;
}

/* Step 2: the samples of trials lo .. hi - 1 (all: 0 .. T - 1), with
 * single-threaded BLAS (restored afterwards). */
static int run_samples(ac_cond_result *r, size_t E, const ac_cond_opts *o, size_t lo, size_t hi,
                       ac_err *err)
{
    size_t T = hi - lo;
    int old_blas = ac_blas_get_threads();
    ac_blas_set_threads(1);
    int start, st;
    size_t done = 0;
    if (lo == 0 && (o->start_route >= 0 || cond_speculate(r, o))) {
        /* trial 0 in parallel with the others: with a fixed start route it
         * decides nothing; else the others start on GRAM, as they will if
         * trial 0 takes GRAM, and if it does not, the samples that took GRAM
         * are recomputed starting with SVD.  Same numbers as trial 0 first;
         * cond_speculate only guesses when that is cheaper. */
        start = o->start_route >= 0 ? o->start_route : AC_COND_GRAM;
        st = run_other_samples(r, E, o, start, 0, 0, hi, 0, &done, err);
        if (!st && o->start_route < 0 && r->samples[0].route != AC_COND_GRAM)
            st = run_other_samples(r, E, o, AC_COND_SVD, 0, 1, hi, 1, &done, err);
    } else {
        st = run_first_sample(r, E, o, &start, lo == 0, err);
        done = lo == 0;
        if (!st && o->progress && done)
            o->progress(o->progress_ctx, done, T);
        if (!st && hi > 1)
            st = run_other_samples(r, E, o, start, lo, lo > 1 ? lo : 1, hi, 0, &done, err);
    }
    ac_blas_set_threads(old_blas);
    if (!st && o->progress)
        o->progress(o->progress_ctx, T, T);
    return st;
}

/* ---- the statistics against the predictions ------------------------------------------- */

/* Step 3: the statistics of kappa (r->st), the routes, and the relative
 * errors and band coverages of the predictions (paper 2, eq. (6); the
 * Tracy-Widom correction; the Gordon bound; Edelman at D = N). */
static int run_summary(ac_cond_result *r, ac_err *err)
{
    size_t T = r->trials;
    double *k = malloc(T * sizeof(double)), *s1 = malloc(T * sizeof(double)),
           *sm = malloc(T * sizeof(double));
    if (!k || !s1 || !sm) {
        free(k);
        free(s1);
        free(sm);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    size_t in_tw = 0, in_ed = 0, above_g = 0;
    for (size_t t = 0; t < T; t++) {
        const ac_cond_sample *s = &r->samples[t];
        k[t] = s->kappa;
        s1[t] = s->sigma1;
        sm[t] = s->sigmin;
        r->n_route[s->route]++;
        if (!s->resolved)
            r->n_unresolved++;
        if (s->kappa >= r->pred.tw_q05 && s->kappa <= r->pred.tw_q95)
            in_tw++;
        if (s->kappa >= r->pred.edelman_q05 && s->kappa <= r->pred.edelman_q95)
            in_ed++;
        if (s->kappa > r->pred.gordon_kappa95)
            above_g++;
    }
    int st = ac_cond_stats_compute(&r->st, k, s1, sm, T, err);
    free(k);
    free(s1);
    free(sm);
    if (st)
        return st;
    const ac_rmt_pred *p = &r->pred;
    double nan = NAN;
    int square = (r->D == r->N);
    r->err_first_order = square ? nan : p->first_order / r->st.mean - 1;
    r->err_tw_point = isnan(p->tw_point) ? nan : p->tw_point / r->st.mean - 1;
    r->err_tw_median = isnan(p->tw_median) ? nan : p->tw_median / r->st.median - 1;
    r->tw_coverage = isnan(p->tw_q05) ? nan : (double)in_tw / (double)T;
    r->gordon_exceed = (double)above_g / (double)T;
    r->err_edelman_median = square ? p->edelman_median / r->st.median - 1 : nan;
    r->diff_edelman_elog = square ? p->edelman_elog - r->st.elog : nan;
    r->edelman_coverage = !isnan(p->edelman_q05) ? (double)in_ed / (double)T : nan;
    return AC_OK;
}

/* Step 4: eigenvalues of G -> of (1/D) A A^T; in attention mode also
 * divided by the mean square entry, so that the shape is compared with
 * Marchenko-Pastur (doc/mathematics.md §5.6); then KS and histogram. */
static int run_spectrum(ac_cond_result *r, const ac_cond_opts *o, ac_err *err)
{
    size_t T = r->trials, m = r->m;
    if (!o->spectrum) {
        r->ks = NAN;
        return AC_OK;
    }
    for (size_t t = 0; t < T; t++) {
        double *e = r->eig + t * m, sc = 1.0 / (double)r->D;
        if (o->mode == AC_COND_ATTENTION) {
            double tr = 0;
            for (size_t i = 0; i < m; i++)
                tr += e[i];
            sc = tr > 0 ? (double)r->N / tr : sc; /* tr / (N D) = mean square entry */
        }
        for (size_t i = 0; i < m; i++)
            e[i] *= sc;
    }
    return cond_spectrum_stats(r, err);
}

/* Step 5: claim C over this h's samples (doc/mathematics.md §5.9): dev =
 * max over samples of |kappa/kappa~ - 1| enclosed, the conjunction over
 * samples being the judgement of the maximum; the stages used; and the
 * certified statistics.  Without certify: UNDECIDED, dev in [0, inf]. */
static int run_certificate(ac_cond_result *r, const ac_cond_opts *o, ac_err *err)
{
    r->max_stage = AC_STAGE_NONE;
    if (!o->certify) {
        r->verdict = AC_UNDECIDED;
        r->dev_lo = 0;
        r->dev_hi = INFINITY;
        return AC_OK;
    }
    r->dev_lo = 0;
    r->dev_hi = 0;
    for (size_t t = 0; t < r->trials; t++) {
        const ac_cond_sample *s = &r->samples[t];
        r->dev_lo = fmax(r->dev_lo, s->dev_lo);
        r->dev_hi = isnan(s->dev_hi) ? INFINITY : fmax(r->dev_hi, s->dev_hi);
        if (s->cert_stage > r->max_stage) {
            r->max_stage = s->cert_stage;
            r->max_stage_prec = s->cert_prec;
        }
        if (s->cert == AC_PROVED)
            r->n_proved++;
        else if (s->cert == AC_REFUTED)
            r->n_refuted++;
        else
            r->n_undecided++;
        if (s->cert != AC_UNDECIDED && s->cert_stage >= 0 && s->cert_stage <= AC_MAX_STAGES)
            r->n_stage[s->cert_stage]++;
    }
    r->verdict = ac_judge(r->dev_lo, r->dev_hi, AC_LE, r->rtol);
    return cond_cert_stats(r, err);
}

int cond_result_init(ac_cond_result *r, size_t h, size_t d, const ac_cond_opts *o, ac_err *err)
{
    memset(r, 0, sizeof *r);
    return run_init(r, h, d, cond_eff_E(o, h, d), o, err);
}

int ac_cond_run_range(ac_cond_result *r, size_t h, size_t d, const ac_cond_opts *o, size_t lo,
                      size_t hi, ac_err *err)
{
    size_t E = cond_eff_E(o, h, d);
    int st;
    memset(r, 0, sizeof *r);
    if (lo >= hi || hi > o->trials)
        return ac_err_set_field(err, AC_EUSAGE, "trials",
                                "trial range [%zu, %zu) is empty or beyond trials %zu", lo, hi,
                                o->trials);
    double t_start = ac_seconds();
    if ((st = run_init(r, h, d, E, o, err)))
        return st;
    if ((st = run_samples(r, E, o, lo, hi, err))) {
        ac_cond_result_free(r);
        return st;
    }
    r->wall = ac_seconds() - t_start;
    return AC_OK;
}

int ac_cond_finish(ac_cond_result *r, const ac_cond_opts *o, ac_err *err)
{
    double t_start = ac_seconds();
    int st;
    if ((st = run_summary(r, err)) || (st = run_spectrum(r, o, err)) ||
        (st = run_certificate(r, o, err))) {
        ac_cond_result_free(r);
        return st;
    }
    r->wall += ac_seconds() - t_start;
    return AC_OK;
}

int ac_cond_run(ac_cond_result *r, size_t h, size_t d, const ac_cond_opts *o, ac_err *err)
{
    int st = ac_cond_run_range(r, h, d, o, 0, o->trials, err);
    return st ? st : ac_cond_finish(r, o, err);
}
