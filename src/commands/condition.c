/* condition.c — the command condition (attncheck/commands.h): Theorem 3.2
 * of Saratchandran et al. (2025) (paper 2), sampled condition numbers of
 * the multi-head block against every prediction (attncheck/condition.h,
 * attncheck/rmt.h); one shard of a sweep (attncheck/shard.h); with --model
 * the blocks of a trained checkpoint (attncheck/learned.h).  The option
 * table, the rules between options, the runs; the JSON result and the
 * arrays are in condition_json.c. */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "attncheck/commands.h"
#include "attncheck/fileio.h"
#include "attncheck/shard.h"
#include "commands/cmd_impl.h"
#include "commands/cond_cmd.h"

#define Q(f) offsetof(ac_condition_request, f)
#define F(f) AC_OPT_FIELD(ac_condition_request, f)
#define S(f) AC_OPT_SET(ac_condition_request, f)
#define A(f) AC_OPT_ARRAY_AT(ac_condition_request, f)
#define NS AC_OPT_NOSET

/* Sizes: N, d, D = h d, E up to 2^24 (LAPACK's 32-bit indices bound the
 * products, checked by ac_cond_memory_need). */
#define MAX_DIM ((size_t)1 << 24)
/* --trials: up to 2^40 (the memory check refuses what does not fit), with
 * --model up to 2^20 */
#define MAX_TRIALS 1099511627776.0
#define MAX_MODEL_TRIALS ((size_t)1 << 20)
/* --shard I/K: K up to 10^6 */
#define MAX_SHARDS 1000000

/* ---- the options ------------------------------------------------------------------ */

/* --heads "1,2,4": whole numbers h >= 1, each once (checked before the
 * list is parsed, with the command's messages) */
static int check_heads(const ac_opt *o, const void *q, const char *s, ac_err *err)
{
    size_t seen[AC_OPT_SIZES_MAX], n = 0;
    const char *p = s;
    (void)o;
    (void)q;
    if (!*s)
        return ac_err_set(err, AC_EUSAGE, "--heads: the list is empty (give e.g. 1,2,4,8)");
    while (*p) {
        char *end;
        if (*p < '0' || *p > '9')
            return ac_err_set(err, AC_EUSAGE,
                              "--heads: '%s' is not a comma-separated list of whole numbers", s);
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (errno || v > MAX_DIM)
            return ac_err_set(err, AC_EUSAGE, "--heads: %.*s is too large", (int)(end - p), p);
        if (v == 0)
            return ac_err_set(err, AC_EUSAGE,
                              "--heads: h = 0 is not a number of heads (each h must be >= 1)");
        if (n == AC_OPT_SIZES_MAX)
            return ac_err_set(err, AC_EUSAGE, "--heads: at most %d values", AC_OPT_SIZES_MAX);
        for (size_t i = 0; i < n; i++)
            if (seen[i] == v)
                return ac_err_set(err, AC_EUSAGE, "--heads: h = %llu appears twice", v);
        seen[n++] = (size_t)v;
        p = end;
        if (*p == ',') {
            p++;
            if (!*p)
                return ac_err_set(err, AC_EUSAGE, "--heads: '%s' ends with a comma", s);
        } else if (*p) {
            return ac_err_set(err, AC_EUSAGE,
                              "--heads: '%s' is not a comma-separated list of whole numbers", s);
        }
    }
    return AC_OK;
}

static int check_mode(const ac_opt *o, const void *q, const char *s, ac_err *err)
{
    (void)o;
    (void)q;
    if (strcmp(s, "iid") != 0 && strcmp(s, "attention") != 0)
        return ac_err_set(err, AC_EUSAGE, "--mode: '%s' is not a mode (iid or attention)", s);
    return AC_OK;
}

static int check_shard(const ac_opt *o, const void *q, const char *s, ac_err *err)
{
    char *end;
    (void)o;
    (void)q;
    unsigned long long i = strtoull(s, &end, 10), k = 0;
    if (end != s && *end == '/')
        k = strtoull(end + 1, &end, 10);
    if (*end != '\0' || i < 1 || k < 1 || i > k || k > MAX_SHARDS)
        return ac_err_set(err, AC_EUSAGE, "--shard must be I/K with 1 <= I <= K <= %d, not '%s'",
                          MAX_SHARDS, s);
    return AC_OK;
}

static const char *const mode_names[] = {"iid", "attention", NULL};

const ac_opt ac_cond_cmd_opts[] = {
    {.name = "heads", .kind = AC_OPT_SIZES, F(heads), S(have_heads),
     .min = 1, .max = MAX_DIM, .def = "1,2,4,8,16,32,64", .arg = "LIST", .group = "Blocks:",
     .flags = AC_OPTF_CHECK_FIRST, .check = check_heads,
     .help = "numbers of heads, comma-separated (default)"},
    {.name = "seq", .kind = AC_OPT_SIZE, F(seq), S(have_seq), .min = 1,
     .max = MAX_DIM, .def = "128", .arg = "N", .help = "sequence length: rows of A (default)"},
    {.name = "head-dim", .kind = AC_OPT_SIZE, F(head_dim),
     S(have_head_dim), .min = 1, .max = MAX_DIM, .def = "64", .arg = "d",
     .help = "columns per head (default); D = h d"},
    {.name = "embed", .kind = AC_OPT_SIZE, F(embed), S(have_embed),
     .min = 1, .max = MAX_DIM, .arg = "D",
     .help = "fixed width D instead; d = D/h (every h must divide D)"},
    {.name = "mode", .kind = AC_OPT_CHOICE, F(mode), S(have_mode),
     .choices = mode_names, .arg = "MODE", .flags = AC_OPTF_CHECK_FIRST, .check = check_mode,
     .help = "iid: A_i i.i.d. N(0,1), the theorem's assumption (default);\nattention: A_i = "
             "Softmax(Q_i K_i^T/sqrt d) V_i from a Gaussian input X (N x E) and N(0, 1/E) "
             "projections"},
    {.name = "input-dim", .kind = AC_OPT_SIZE, F(input_dim),
     S(have_input_dim), .min = 1, .max = MAX_DIM, .arg = "E",
     .help = "attention: width of X (default D)"},
    {.name = "trials", .kind = AC_OPT_SIZE, F(trials), S(have_trials),
     .min = 1, .max = MAX_TRIALS, .def = "100", .arg = "T", .help = "samples per h (default)"},
    {.name = "seed", .kind = AC_OPT_U64, F(seed), S(have_seed),
     .def = "1", .arg = "S",
     .help = "seed of the random streams (default); sample t of h uses the stream (S, h, t), "
             "whatever the threads"},
    {.name = "rtol", .kind = AC_OPT_DOUBLE, F(rtol), S(have_rtol),
     .min = 1e-14, .max = 0.1, .def = "1e-8", .def_show = "1e-08", .arg = "R",
     .group = "Accuracy:",
     .help = "requested relative accuracy of each kappa (default): Gram route, SVD, or the MPFR "
             "fallback, per sample"},
    {.name = "max-prec", .kind = AC_OPT_LONG, F(max_prec),
     S(have_max_prec), .min = 128, .max = 1 << 16, .def = "1024", .arg = "BITS",
     .help = "highest MPFR precision of the fallback and of the certification stages "
             "(default)"},
    {.name = "certify", .kind = AC_OPT_FLAG, F(certify), .set_offset = NS,
     .help = "rigorous enclosures of sigma_1, sigma_min and kappa of every sample (Weyl, then "
             "Arb balls) and of the statistics"},
    {.name = "spectrum", .kind = AC_OPT_FLAG, F(spectrum), .set_offset = NS,
     .group = "Spectrum:",
     .help = "eigenvalues of (1/D) A A^T against the Marchenko-Pastur law: Kolmogorov-Smirnov "
             "distance and histogram"},
    {.name = "bins", .kind = AC_OPT_SIZE, F(bins), S(have_bins),
     .min = 1, .max = 100000, .def = "24", .arg = "K", .help = "histogram bins (default)"},
    {.name = "model", .kind = AC_OPT_STRING, F(model), .set_offset = NS, .arg = "DIR",
     .group = "Trained models (kappa on learned weights; doc/mathematics.md section 6.6):",
     .help = "a checkpoint of 'attncheck train' (task text or listops): per layer, kappa of "
             "[A_1 ... A_h] (the head outputs, one row per real token, padding dropped) on real "
             "sequences, its median and 5-95% range, beside the Gaussian prediction for the "
             "same N, D and attention heads with Gaussian weights of the same shapes (--trials "
             "samples, default 20 here).  Takes --data, --batches, --trials, --seed, --rtol, "
             "--max-prec, --json, --csv, --plot, --threads; exit status 2 (measured, nothing "
             "certified)"},
    {.name = "data", .kind = AC_OPT_STRING, F(data), .set_offset = NS, .arg = "FILE",
     .help = "--model: sequences to use instead of the checkpoint's held-out data: text, any "
             "file in the checkpoint's vocabulary; listops, one expression per line in the LRA "
             "syntax"},
    {.name = "batches", .kind = AC_OPT_SIZE, F(batches), S(have_batches),
     .min = 1, .max = 1 << 20, .def = "4", .arg = "N",
     .help = "--model: batches of the checkpoint's batch size (default)"},
    {.name = "json", .kind = AC_OPT_FLAG, F(json), .set_offset = NS,
     .flags = AC_OPTF_PROGRAM, .group = "Output:",
     .help = "print one JSON object (verdict, certificate, results)"},
    {.name = "csv", .kind = AC_OPT_STRING, F(csv), .set_offset = NS, .arg = "FILE",
     .flags = AC_OPTF_PROGRAM,
     .help = "one row per h: statistics, predictions, errors, routes"},
    {.name = "plot", .kind = AC_OPT_STRING, F(plot), .set_offset = NS, .arg = "FILE",
     .flags = AC_OPTF_PROGRAM, .check = ac_cmd_check_plot,
     .help = "kappa against h (.svg, .png or .pdf) with gnuplot"},
    {.name = "trace", .kind = AC_OPT_FLAG, F(trace), .set_offset = NS,
     .flags = AC_OPTF_PROGRAM, .help = "print one line per sample"},
    {.name = "threads", .kind = AC_OPT_LONG, F(threads), S(have_threads),
     .min = 1, .max = 1024, .arg = "N",
     .help = "number of threads (OpenMP; default: all cores)"},
    {.name = "shard", .kind = AC_OPT_SHARD, F(shard), S(have_shard),
     .max = MAX_SHARDS, .arg = "I/K", .flags = AC_OPTF_CHECK_FIRST,
     .check = check_shard,
     .group = "Shards (a sweep split by trials across processes or machines):",
     .help = "compute only shard I of K of every h's trials"},
    {.name = "samples-out", .kind = AC_OPT_STRING, F(samples_out), .set_offset = NS,
     .arg = "FILE",
     .help = "write the shard's samples to FILE (with --shard); then `attncheck merge FILE...` "
             "gives exactly the whole result"},
    {0},
};

static const char cond_description[] =
    "Theorem 3.2 (Saratchandran et al. 2025): the multi-head block\n"
    "A = [A_1 ... A_h] (N x D, D = h d, A_i i.i.d. Gaussian) has\n"
    "kappa(A) = sigma_1/sigma_min ~ (sqrt D + sqrt N)/(sqrt D - sqrt N) -> 1 as h\n"
    "grows.  Samples kappa for each h and compares it with every prediction:\n"
    "first order (paper 2, eq. (6)), Tracy-Widom finite-size correction and\n"
    "5-95% band, the rigorous Gordon bounds, Edelman's law at D = N.\n"
    "All statistics are estimates; --certify adds rigorous enclosures and decides\n"
    "the claim C: every sampled block has full rank and every reported kappa is\n"
    "within rtol of the exact kappa of its block (PROVED is that claim for the\n"
    "sample, not Theorem 3.2's prediction, which the tables compare as estimates).";

static const char cond_epilogue[] =
    "Exit status: 0 proved, 1 refuted, 2 undecided (always without --certify: no\n"
    "claim is certified), 64 usage error, 65 bad input data, 66 cannot open input,\n"
    "70 internal error, 73 cannot create output (also: --plot without gnuplot).";

/* ---- the rules ----------------------------------------------------------------------- */

int ac_cond_cmd_sweep_option(const ac_opt *o)
{
    static const char *const not_sweep[] = {"threads", "shard",   "samples-out",
                                            "model",   "data",    "batches", NULL};
    if (o->flags & AC_OPTF_PROGRAM)
        return 0;
    for (size_t i = 0; not_sweep[i]; i++)
        if (strcmp(o->name, not_sweep[i]) == 0)
            return 0;
    return 1;
}

/* --model: the options it takes (condition --help, "Trained models") */
static int check_model(const ac_condition_request *q, ac_err *err)
{
    static const char *const takes[] = {"model", "data",   "batches", "trials", "seed", "rtol",
                                        "max-prec", "json", "csv",   "plot",   "threads", NULL};
    for (const ac_opt *o = ac_cond_cmd_opts; o->name; o++) {
        int ok = 0;
        for (size_t i = 0; takes[i] && !ok; i++)
            ok = strcmp(o->name, takes[i]) == 0;
        if (!ok && ac_cmd_opt_given(o, q))
            return ac_err_set(err, AC_EUSAGE, "--%s does not apply with --model (see "
                              "'attncheck condition --help', \"Trained models\")", o->name);
    }
    if (q->trials > MAX_MODEL_TRIALS)
        return ac_err_set(err, AC_EUSAGE, "--trials: %zu is out of range [1, %zu]", q->trials,
                          MAX_MODEL_TRIALS);
    return AC_OK;
}

int ac_cond_cmd_rules(ac_condition_request *q, ac_err *err)
{
    if (q->have_input_dim && q->mode != AC_COND_ATTENTION)
        return ac_err_set(err, AC_EUSAGE, "--input-dim applies to --mode attention only");
    if (q->have_head_dim && q->have_embed)
        return ac_err_set(err, AC_EUSAGE,
                          "--head-dim and --embed are alternatives; give one of them");
    for (size_t i = 0; i < q->heads.n; i++) {
        size_t h = q->heads.v[i];
        if (q->have_embed) {
            if (q->embed % h)
                return ac_err_set(err, AC_EUSAGE, "--embed %zu: h = %zu does not divide D (d = "
                                  "D/h must be whole)", q->embed, h);
            q->dims[i] = q->embed / h;
        } else {
            q->dims[i] = q->head_dim;
        }
        if ((double)h * (double)q->dims[i] > (double)MAX_DIM)
            return ac_err_set(err, AC_EUSAGE, "h = %zu, d = %zu: D = h d is too large", h,
                              q->dims[i]);
    }
    return AC_OK;
}

void ac_cond_cmd_opts_of(ac_cond_opts *o, const ac_condition_request *q)
{
    ac_cond_opts_default(o);
    o->N = q->seq;
    o->mode = (ac_cond_mode)q->mode;
    o->input_dim = q->have_input_dim ? q->input_dim : 0;
    o->seed = q->seed;
    o->trials = q->trials;
    o->rtol = q->rtol;
    o->certify = q->certify;
    o->spectrum = q->spectrum;
    o->bins = q->bins;
    o->max_prec = q->max_prec;
    o->sched = ac_schedule_upto(q->max_prec);
    o->threads = (int)q->threads;
}

int ac_cond_cmd_threads(const ac_condition_request *q)
{
#ifdef _OPENMP
    return q->threads > 0 ? (int)q->threads : omp_get_max_threads();
#else
    (void)q;
    return 1;
#endif
}

int ac_cond_cmd_memory(const ac_condition_request *q, ac_err *err)
{
    ac_cond_opts o;
    double need;
    ac_cond_cmd_opts_of(&o, q);
    int st = ac_cond_memory_need(&o, q->heads.v, q->dims, q->heads.n, &need, err);
    if (st)
        return st;
    double avail = ac_memory_available(NULL); /* MemAvailable, cgroup, ulimit -v */
    if (avail > 0 && need > 0.9 * avail)
        return ac_err_set(err, AC_EUSAGE, "--trials %zu with these sizes needs %.3g GiB of "
                          "memory; only %.3g GiB are available (reduce --trials, --heads or "
                          "--spectrum)", q->trials, need / 1073741824.0, avail / 1073741824.0);
    return AC_OK;
}

/* The rules, in the order the program has always checked them, then the
 * memory (before any work). */
static int cond_check(void *qv, ac_err *err)
{
    ac_condition_request *q = qv;
    if (q->model)
        return check_model(q, err);
    if (q->data || q->have_batches)
        return ac_err_set(err, AC_EUSAGE, "--%s needs --model", q->data ? "data" : "batches");
    int st = ac_cond_cmd_rules(q, err);
    if (st)
        return st;
    if (q->have_shard != (q->samples_out != NULL))
        return ac_err_set(err, AC_EUSAGE, "--shard I/K and --samples-out FILE go together");
    if (q->have_shard && (q->csv || q->plot))
        return ac_err_set(err, AC_EUSAGE,
                          "--csv and --plot need the whole sweep: give them to `attncheck merge`");
    if (q->have_shard && q->shard[1] > q->trials)
        return ac_err_set(err, AC_EUSAGE, "--shard %zu/%zu: more shards than --trials %zu",
                          q->shard[0], q->shard[1], q->trials);
    return ac_cond_cmd_memory(q, err);
}

/* ---- the runs ------------------------------------------------------------------------ */

/* ac_cond_opts.progress for the i-th h: the command's hook with the index */
typedef struct {
    const ac_condition_hooks *hooks;
    size_t i;
} progress_ctx;

static void progress_of(void *ctx, size_t done, size_t total)
{
    const progress_ctx *p = ctx;
    p->hooks->progress(p->hooks->ctx, p->i, done, total);
}

static int alloc_results(ac_condition_result *res, size_t nh, ac_err *err)
{
    if (!(res->res = calloc(nh ? nh : 1, sizeof *res->res)))
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    return AC_OK;
}

/* Every h of the list (ac_cond_run), then claim C over all of them. */
static int run_sweep(ac_condition_result *res, const ac_condition_request *q,
                     const ac_condition_hooks *hooks, ac_err *err)
{
    ac_cond_opts o;
    progress_ctx pc = {hooks, 0};
    ac_cond_cmd_opts_of(&o, q);
    if (hooks && hooks->progress) {
        o.progress = progress_of;
        o.progress_ctx = &pc;
    }
    double t0 = ac_seconds();
    for (size_t i = 0; i < q->heads.n; i++) {
        pc.i = i;
        int st = ac_cond_run(&res->res[i], q->heads.v[i], q->dims[i], &o, err);
        if (st)
            return st;
        res->nh++;
        if (hooks && hooks->done)
            hooks->done(hooks->ctx, i, &res->res[i]);
    }
    res->wall = ac_seconds() - t0;
    return ac_cond_cmd_finish(res, q, err);
}

/* --shard I/K: the trials of shard I of every h, written to --samples-out
 * with the sweep's options (the words merge reads back).  One shard
 * decides nothing: its verdict comes with merge. */
static int run_shard(ac_condition_result *res, const ac_condition_request *q, ac_err *err)
{
    ac_cond_opts o;
    char **words = NULL;
    size_t nwords = 0;
    ac_cond_cmd_opts_of(&o, q);
    res->shard = 1;
    ac_cond_shard_range(q->trials, q->shard[0], q->shard[1], &res->lo, &res->hi);
    for (size_t i = 0; i < q->heads.n; i++) {
        int st = ac_cond_run_range(&res->res[i], q->heads.v[i], q->dims[i], &o, res->lo,
                                   res->hi, err);
        if (st)
            return st;
        res->nh++;
    }
    int st = ac_cmd_words(&words, &nwords, ac_cond_cmd_opts, q, ac_cond_cmd_sweep_option, err);
    if (!st)
        st = ac_cond_shard_write(q->samples_out, (const char *const *)words, nwords,
                                 q->shard[0], q->shard[1], res->res, res->nh, res->lo, res->hi,
                                 &o, err);
    ac_cmd_words_free(words, nwords);
    return st;
}

/* --model DIR: the trained blocks beside the Gaussian comparison. */
static int run_model(ac_condition_result *res, const ac_condition_request *q, ac_err *err)
{
    ac_learn_kappa_compare_opts mo;
    res->model = 1;
    ac_learn_kappa_opts_default(&mo.kappa);
    mo.kappa.initial = 1;
    mo.kappa.data_path = q->data;
    mo.kappa.batches = q->batches;
    mo.kappa.rtol = q->rtol;
    mo.kappa.max_prec = q->max_prec;
    mo.kappa.threads = (int)q->threads;
    mo.trials = q->have_trials ? q->trials : 20;
    mo.seed = q->seed;
    int st = ac_learn_kappa_compare_run(&res->compare, q->model, &mo, err);
    if (st)
        return st;
    /* the arrays: kappa of every block, trained and initial, per layer */
    const ac_learn_kappa_compare *c = &res->compare;
    size_t L = c->r.L, n = c->r.sequences, T = c->gauss.trials;
    size_t Ln = L * n > 0 ? L * n : 1;
    res->kappa = malloc(Ln * sizeof *res->kappa);
    res->init_kappa = malloc(Ln * sizeof *res->init_kappa);
    res->gauss_kappa = malloc((T ? T : 1) * sizeof *res->gauss_kappa);
    if (!res->kappa || !res->init_kappa || !res->gauss_kappa)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (size_t l = 0; l < L; l++) {
        memcpy(res->kappa + l * n, c->r.layers[l].kappa, n * sizeof *res->kappa);
        memcpy(res->init_kappa + l * n, c->r.init[l].kappa, n * sizeof *res->kappa);
    }
    for (size_t t = 0; t < T; t++)
        res->gauss_kappa[t] = c->gauss.samples[t].kappa;
    return AC_OK;
}

static int cond_run(void *rv, const void *qv, void *hooks, ac_err *err)
{
    ac_condition_result *res = rv;
    const ac_condition_request *q = qv;
    double t0 = ac_seconds();
    int st;
    if (q->model) {
        st = run_model(res, q, err);
    } else {
        ac_cmd_apply_threads(q->threads);
        res->threads = ac_cond_cmd_threads(q);
        if (!(st = alloc_results(res, q->heads.n, err)))
            st = q->have_shard ? run_shard(res, q, err) : run_sweep(res, q, hooks, err);
    }
    res->seconds = ac_seconds() - t0;
    return st;
}

/* ---- the end of a sweep ---------------------------------------------------------------- */

/* the nh x trials array of one member of the samples */
static double *samples_array(const ac_condition_result *res, size_t T, size_t member)
{
    size_t size = res->nh * T > 0 ? res->nh * T : 1;
    double *a = malloc(size * sizeof *a);
    for (size_t i = 0; a && i < res->nh; i++)
        for (size_t t = 0; t < T; t++)
            a[i * T + t] = *(const double *)((const char *)&res->res[i].samples[t] + member);
    return a;
}

/* Standard error of the mean of the finite sample values of sigma_1 (smin
 * 0) or sigma_min (NaN with fewer than two). */
static double se_of(const ac_cond_result *r, int smin)
{
    double s = 0, ss = 0;
    size_t n = 0;
    for (size_t t = 0; t < r->trials; t++) {
        double x = smin ? r->samples[t].sigmin : r->samples[t].sigma1;
        if (isfinite(x)) {
            s += x;
            n++;
        }
    }
    if (n < 2)
        return NAN;
    double mu = s / (double)n;
    for (size_t t = 0; t < r->trials; t++) {
        double x = smin ? r->samples[t].sigmin : r->samples[t].sigma1;
        if (isfinite(x))
            ss += (x - mu) * (x - mu);
    }
    return sqrt(ss / (double)(n - 1) / (double)n);
}

/* What the result says of h beyond ac_cond_result. */
static void h_info(ac_condition_h *hi, const ac_cond_result *r)
{
    hi->mean_reported = !(r->D == r->N && r->N >= 2);
    hi->full_rank_possible = r->rank_bound >= r->m;
    hi->se_sigma1 = se_of(r, 0);
    hi->se_sigmin = se_of(r, 1);
    hi->se_edelman_median = NAN;
    if (!hi->mean_reported && !isnan(r->pred.edelman_median)) {
        /* standard error of a sample median under Edelman's law, relative:
         * sqrt(1/(4T)) / (f(x) x) at the median x, f = F (2/x^2 + 4/x^3) */
        double x = r->pred.edelman_median / (double)r->N;
        double f = 0.5 * (2 / (x * x) + 4 / (x * x * x));
        hi->se_edelman_median = sqrt(0.25 / (double)r->trials) / (f * x);
    }
}

/* The findings over every h: the range of the first-order error, the
 * largest TW error away from D ~ N, the fallback, the rank. */
static void findings(ac_condition_findings *fd, const ac_cond_result *res, size_t nh)
{
    double lo = INFINITY, hi = -INFINITY;
    memset(fd, 0, sizeof *fd);
    fd->low_rank = nh;
    for (size_t i = 0; i < nh; i++) {
        const ac_cond_result *r = &res[i];
        if (isfinite(r->err_first_order)) {
            fd->fo_n++;
            if (r->err_first_order < lo) {
                lo = r->err_first_order;
                fd->fo_h_lo = r->h;
            }
            if (r->err_first_order > hi) {
                hi = r->err_first_order;
                fd->fo_h_hi = r->h;
            }
        }
        if (!isnan(r->err_tw_point) && r->pred.regime != AC_REGIME_SQUARE) {
            fd->tw_max = fmax(fd->tw_max, fabs(r->err_tw_point));
            fd->tw_n++;
        }
        fd->n_mpfr += r->n_route[AC_COND_MPFR];
        fd->n_unresolved += r->n_unresolved;
        if (fd->low_rank == nh && r->rank_bound < r->m)
            fd->low_rank = i;
    }
    fd->fo_lo = fd->fo_n ? lo : NAN;
    fd->fo_hi = fd->fo_n ? hi : NAN;
    fd->fo_above = fd->fo_n && lo > 0;
}

int ac_cond_cmd_finish(ac_condition_result *res, const ac_condition_request *q, ac_err *err)
{
    ac_cond_opts o;
    ac_cond_cmd_opts_of(&o, q);
    ac_cond_certificate(&res->cert, res->res, res->nh, &o, res->wall);
    if (!(res->hs = calloc(res->nh ? res->nh : 1, sizeof *res->hs)))
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (size_t i = 0; i < res->nh; i++)
        h_info(&res->hs[i], &res->res[i]);
    findings(&res->findings, res->res, res->nh);
    ac_condition_times *t = &res->times;
    for (size_t i = 0; i < res->nh; i++) {
        const ac_cond_result *r = &res->res[i];
        t->sample += r->t_sample;
        t->reduce += r->t_reduce;
        t->solve += r->t_solve;
        t->mpfr += r->t_mpfr;
        t->certify += r->t_certify;
        t->flops += r->flops;
    }
    size_t T = q->trials;
    res->kappa = samples_array(res, T, offsetof(ac_cond_sample, kappa));
    res->sigma1 = samples_array(res, T, offsetof(ac_cond_sample, sigma1));
    res->sigmin = samples_array(res, T, offsetof(ac_cond_sample, sigmin));
    if (q->certify) {
        res->kappa_lo = samples_array(res, T, offsetof(ac_cond_sample, kappa_lo));
        res->kappa_hi = samples_array(res, T, offsetof(ac_cond_sample, kappa_hi));
    }
    res->names = calloc(res->nh ? res->nh : 1, sizeof *res->names);
    if (!res->kappa || !res->sigma1 || !res->sigmin || !res->names ||
        (q->certify && (!res->kappa_lo || !res->kappa_hi)))
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (size_t i = 0; i < res->nh; i++)
        snprintf(res->names[i], sizeof res->names[i], "eig_h%zu", res->res[i].h);
    return AC_OK;
}

/* ---- the command ----------------------------------------------------------------------- */

static void cond_write_json(ac_json *j, const void *qv, const void *rv)
{
    ac_cond_cmd_write_json(j, qv, rv);
}

static size_t cond_arrays(const void *qv, const void *rv, ac_out_array *out, size_t max)
{
    return ac_cond_cmd_arrays(qv, rv, out, max);
}

static int cond_status(const void *qv, const void *rv)
{
    (void)qv;
    return ac_cond_cmd_status(rv);
}

const ac_command ac_cmd_condition = {
    .name = "condition",
    .summary = "Theorem 3.2: sampled condition numbers of the multi-head block against every "
               "prediction",
    .synopsis = "attncheck condition [OPTIONS]",
    .description = cond_description,
    .epilogue = cond_epilogue,
    .opts = ac_cond_cmd_opts,
    .request_size = sizeof(ac_condition_request),
    .result_size = sizeof(ac_condition_result),
    .check = cond_check,
    .run = cond_run,
    .write_json = cond_write_json,
    .arrays = cond_arrays,
    .status = cond_status,
    .result_free = ac_cond_cmd_result_free,
};
