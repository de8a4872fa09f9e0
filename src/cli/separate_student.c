/* separate_student.c — `attncheck separate --student`: Theorem 2 of paper 1
 * on learned weights (separate_student.h, doc/mathematics.md §4.8).  The
 * options, the teacher g_V (generated as `separate` does, or --v-dir), the
 * training of every student by the trainer of attncheck/train.h (task
 * teacher, the fixed-head stack of g_V), the held-out relative errors and the
 * certificate at each student's worst held-out X. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attncheck/fileio.h"
#include "attncheck/interval.h"
#include "attncheck/train.h"
#include "plot.h"
#include "separate_student.h"

enum {
    OPT_STUDENT = 256, OPT_VDIR, OPT_D, OPT_H, OPT_DP, OPT_N, OPT_SEED, OPT_SEEDS, OPT_HEADS,
    OPT_STEPS, OPT_LR, OPT_BATCH, OPT_SAMPLES, OPT_MAXPREC, OPT_JSON, OPT_CSV, OPT_PLOT,
    OPT_THREADS, OPT_OUTDIR, OPT_OTHER
};

static const struct option long_opts[] = {
    {"student", no_argument, NULL, OPT_STUDENT},
    {"v-dir", required_argument, NULL, OPT_VDIR},
    {"d", required_argument, NULL, OPT_D},
    {"h", required_argument, NULL, OPT_H},
    {"dp", required_argument, NULL, OPT_DP},
    {"n", required_argument, NULL, OPT_N},
    {"seed", required_argument, NULL, OPT_SEED},
    {"student-seeds", required_argument, NULL, OPT_SEEDS},
    {"student-heads", required_argument, NULL, OPT_HEADS},
    {"student-steps", required_argument, NULL, OPT_STEPS},
    {"student-lr", required_argument, NULL, OPT_LR},
    {"student-batch", required_argument, NULL, OPT_BATCH},
    {"samples", required_argument, NULL, OPT_SAMPLES},
    {"max-prec", required_argument, NULL, OPT_MAXPREC},
    {"json", no_argument, NULL, OPT_JSON},
    {"csv", required_argument, NULL, OPT_CSV},
    {"plot", required_argument, NULL, OPT_PLOT},
    {"threads", required_argument, NULL, OPT_THREADS},
    /* the separation's own options: refused with a message */
    {"w-dir", required_argument, NULL, OPT_OTHER},
    {"case", required_argument, NULL, OPT_OTHER},
    {"tries", required_argument, NULL, OPT_OTHER},
    {"optimize", required_argument, NULL, OPT_OTHER},
    {"embed", no_argument, NULL, OPT_OTHER},
    {"tol", required_argument, NULL, OPT_OTHER},
    {"audit", no_argument, NULL, OPT_OTHER},
    {"trace", no_argument, NULL, OPT_OTHER},
    {"out-dir", required_argument, NULL, OPT_OUTDIR},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

#define MAX_DIM ((size_t)1 << 12)

int sep_student_requested(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return 0;
        if (strcmp(argv[i], "--student") == 0)
            return 1;
    }
    return 0;
}

void stu_args_default(stu_args *a)
{
    memset(a, 0, sizeof *a);
    a->d = 16;
    a->h = 4;
    a->dp = 8;
    a->n = 8;
    a->seed = 1;
    a->seeds = 3;
    a->steps = 2000;
    a->batch = 32;
    a->lr = 1e-2;
    a->samples = 64;
    cli_common_init(&a->common);
}

/* --student-heads 1,2,4: a list of head counts */
static int parse_heads(stu_args *a, const char *s)
{
    const char *p = s;
    a->nheads = 0;
    while (*p) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p || errno || v == 0 || v > MAX_DIM || (*end && *end != ','))
            return cli_usage("--student-heads: '%s' is not a comma-separated list of head "
                             "counts >= 1", s);
        if (a->nheads == STU_MAX_HEADS)
            return cli_usage("--student-heads: at most %d head counts", STU_MAX_HEADS);
        a->heads[a->nheads++] = (size_t)v;
        p = *end ? end + 1 : end;
        if (*end && !*p)
            return cli_usage("--student-heads: '%s' ends with a comma", s);
    }
    if (!a->nheads)
        return cli_usage("--student-heads: empty list");
    return AC_OK;
}

static int parse_one(stu_args *a, int c, char **argv)
{
    switch (c) {
    case OPT_STUDENT: return AC_OK;
    case OPT_VDIR: a->vdir = optarg; return AC_OK;
    case OPT_D: a->have_d = 1; return cli_parse_size("--d", optarg, 1, MAX_DIM, &a->d);
    case OPT_H: a->have_h = 1; return cli_parse_size("--h", optarg, 1, MAX_DIM, &a->h);
    case OPT_DP: a->have_dp = 1; return cli_parse_size("--dp", optarg, 1, MAX_DIM, &a->dp);
    case OPT_N: return cli_parse_size("--n", optarg, 2, 4096, &a->n);
    case OPT_SEED: return cli_parse_u64("--seed", optarg, &a->seed);
    case OPT_SEEDS: return cli_parse_size("--student-seeds", optarg, 1, 100, &a->seeds);
    case OPT_HEADS: return parse_heads(a, optarg);
    case OPT_STEPS: return cli_parse_size("--student-steps", optarg, 1, 10000000, &a->steps);
    case OPT_LR: return cli_parse_double("--student-lr", optarg, 1e-12, 10.0, &a->lr);
    case OPT_BATCH: return cli_parse_size("--student-batch", optarg, 1, 65536, &a->batch);
    case OPT_SAMPLES: return cli_parse_size("--samples", optarg, 1, 100000, &a->samples);
    case OPT_MAXPREC: return cli_parse_int("--max-prec", optarg, 0, 1L << 20, &a->common.max_prec);
    case OPT_JSON: a->common.json = 1; return AC_OK;
    case OPT_CSV: a->csv = optarg; return AC_OK;
    case OPT_PLOT: a->plot = optarg; return AC_OK;
    case OPT_THREADS: return cli_parse_threads(optarg, &a->common.threads);
    case OPT_OUTDIR: a->common.out_dir = optarg; return AC_OK;
    case OPT_OTHER:
        return cli_usage("%s belongs to the separation of one f_W; it does not apply to "
                         "--student", argv[optind - 1]);
    default: return cli_bad_option(c, argv);
    }
}

static int parse_args(stu_args *a, int argc, char **argv)
{
    int c, st;
    stu_args_default(a);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
        if (c == 'h') {
            fputs(cmd_separate_help, stdout);
            return -1;
        }
        if ((st = parse_one(a, c, argv)))
            return st;
    }
    if ((st = cli_no_operands(argc, argv)))
        return st;
    if (a->plot && !cli_plot_terminal(a->plot))
        return cli_usage("--plot %s: the file name must end in .svg, .png or .pdf", a->plot);
    if (!a->vdir && a->dp > a->d)
        return cli_usage("--dp %zu exceeds --d %zu", a->dp, a->d);
    return AC_OK;
}

/* ---- the teacher ----------------------------------------------------------- */

static int load_teacher(stu_run *r, const stu_args *a, ac_err *err)
{
    int st;
    if (a->vdir) {
        if ((st = ac_mh_load_dir(&r->V, a->vdir, 'V', err)))
            return st;
        if ((a->have_d && a->d != r->V.d) || (a->have_h && a->h != r->V.h) ||
            (a->have_dp && a->dp != r->V.hs))
            return ac_err_set(err, AC_EUSAGE, "--d/--h/--dp contradict %s (d = %zu, h = %zu, "
                              "dp = %zu)", a->vdir, r->V.d, r->V.h, r->V.hs);
        snprintf(r->vdesc, sizeof r->vdesc, "loaded from %s", a->vdir);
        return AC_OK;
    }
    if ((st = ac_t2_generate_v(&r->V, a->d, a->h, a->dp, AC_T2_GEN_GAUSSIAN, a->seed, err)))
        return st;
    snprintf(r->vdesc, sizeof r->vdesc, "generated (Gaussian, heads sharing U), seed %llu",
             (unsigned long long)a->seed);
    return AC_OK;
}

/* The trainer reads its teacher from a directory: --v-dir itself, or a
 * private temporary directory holding the generated g_V (removed after). */
static int teacher_dir(char *dir, size_t len, const stu_run *r, ac_err *err)
{
    static const ac_mh_param which[4] = {AC_MH_Q, AC_MH_K, AC_MH_V, AC_MH_O};
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, len, "%s/attncheck-student.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return ac_err_set(err, AC_ECANTCREAT, "%s: cannot create a temporary directory: %s",
                          dir, strerror(errno));
    for (int i = 0; i < 4; i++) {
        char name[16], path[4200];
        ac_array arr = {0};
        int st = ac_mh_get_array(&r->V, which[i], &arr, err);
        snprintf(path, sizeof path, "%s/%s", dir, ac_mh_file_name(name, sizeof name, 'V', which[i]));
        if (!st)
            st = ac_npy_write(path, &arr, err);
        ac_array_free(&arr);
        if (st)
            return st;
    }
    return AC_OK;
}

static void remove_teacher_dir(const char *dir)
{
    static const ac_mh_param which[4] = {AC_MH_Q, AC_MH_K, AC_MH_V, AC_MH_O};
    for (int i = 0; i < 4; i++) {
        char name[16], path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, ac_mh_file_name(name, sizeof name, 'V', which[i]));
        unlink(path);
    }
    rmdir(dir);
}

/* --out-dir: the layer L as PREFIXq.npy ... PREFIXo.npy ("Vq.npy" for the
 * teacher, "standard_h4_seed1_Wq.npy" for a student). */
static int write_layer(cli_outdir *od, const char *prefix, char letter, const ac_mh *L,
                       ac_err *err)
{
    static const ac_mh_param which[4] = {AC_MH_Q, AC_MH_K, AC_MH_V, AC_MH_O};
    for (int i = 0; i < 4; i++) {
        char name[16], file[256];
        ac_array arr = {0};
        snprintf(file, sizeof file, "%s%s", prefix, ac_mh_file_name(name, sizeof name, letter,
                                                                     which[i]));
        int st = ac_mh_get_array(L, which[i], &arr, err);
        if (!st)
            st = ac_npy_write(cli_outdir_path(od, file), &arr, err);
        ac_array_free(&arr);
        if (st)
            return st;
    }
    return AC_OK;
}

/* ---- one student ------------------------------------------------------------ */

/* The trained weights as a layer (the model's Wq, Wk, Wv (H,S,C), Wo (H,C,S)
 * are the stacks of attncheck/multihead.h). */
static int student_layer(ac_mh *S, const ac_trainer *tr, ac_err *err)
{
    static const char *const names[4] = {"Wq", "Wk", "Wv", "Wo"};
    static const char *const msg[4] = {"student Wq", "student Wk", "student Wv", "student Wo"};
    ac_array arr[4];
    int st = AC_OK;
    memset(arr, 0, sizeof arr);
    for (int i = 0; i < 4 && !st; i++) {
        const ac_nn_tensor *t = ac_nn_tensor_find(&tr->model, names[i]);
        if (!t)
            st = ac_err_set(err, AC_EINTERNAL, "student has no tensor %s", names[i]);
        else if (!(st = ac_array_init(&arr[i], t->ndim, t->shape, err)))
            memcpy(arr[i].data, tr->model.params + t->offset, t->size * sizeof(double));
    }
    if (!st)
        st = ac_mh_from_arrays(S, &arr[0], &arr[1], &arr[2], &arr[3], msg, err);
    for (int i = 0; i < 4; i++)
        ac_array_free(&arr[i]);
    return st;
}

/* Lower bound on ||g(X)||_F from the stage-0 enclosure. */
static double norm_lo(const ac_mh *L, const ac_mat *X, ac_err *err)
{
    ac_imat G = {0};
    if (ac_mh_enclose(&G, L, X, err))
        return 0.0;
    double s = 0;
    size_t N = G.rows * G.cols;
    for (size_t i = 0; i < N; i++) {
        double lo = ac_imat_lo(&G, i), hi = ac_imat_hi(&G, i);
        double m = lo > 0 ? lo : (hi < 0 ? -hi : 0.0);
        s += ac_mul_dn(m, m);
    }
    ac_imat_free(&G);
    /* the rounded sum of N nonnegative terms is at most (1 + gamma_N) times the exact one */
    double q = ac_div_dn(s, ac_add_up(1.0, ac_gamma_up((double)(N ? N : 1))));
    return isfinite(q) && q > 0 ? ac_sqrt_dn(q) : 0.0;
}

/* The held-out inputs X_k (ac_t2_sample_input with the teacher's seed) and
 * g_V(X_k), the same for every student. */
typedef struct {
    size_t k;
    ac_mat *X, *G;
} heldout;

static void heldout_free(heldout *h)
{
    for (size_t i = 0; h->X && i < h->k; i++) {
        ac_mat_free(&h->X[i]);
        ac_mat_free(&h->G[i]);
    }
    free(h->X);
    free(h->G);
}

static int heldout_init(heldout *h, const stu_run *r, ac_err *err)
{
    const stu_args *a = r->a;
    int st;
    h->k = a->samples;
    h->X = calloc(h->k, sizeof *h->X);
    h->G = calloc(h->k, sizeof *h->G);
    if (!h->X || !h->G)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (size_t i = 0; i < h->k; i++) {
        if ((st = ac_t2_sample_input(&h->X[i], r->V.d, a->n, a->seed, i, err)) ||
            (st = ac_mat_init(&h->G[i], r->V.d, a->n, err)) ||
            (st = ac_mh_forward(&h->G[i], &r->V, &h->X[i], NULL, err)))
            return st;
    }
    return AC_OK;
}

/* Held-out error of the trained student S, its worst X, and the certificate
 * there (seed j of row w). */
static int assess(stu_row *w, size_t j, const ac_mh *S, const stu_run *r, const heldout *ho,
                  ac_err *err)
{
    ac_mat F = {0};
    int st = ac_mat_init(&F, r->V.d, r->a->n, err);
    double sse = 0, syy = 0, worst = -1;
    size_t wk = 0;
    for (size_t k = 0; k < ho->k && !st; k++) {
        if ((st = ac_mh_forward(&F, S, &ho->X[k], NULL, err)))
            break;
        double e = 0, y = 0;
        for (size_t i = 0; i < F.rows * F.cols; i++) {
            double t = F.data[i] - ho->G[k].data[i];
            e += t * t;
            y += ho->G[k].data[i] * ho->G[k].data[i];
        }
        sse += e;
        syy += y;
        double q = y > 0 ? e / y : (e > 0 ? INFINITY : 0);
        if (q > worst)
            worst = q, wk = k;
    }
    ac_mat_free(&F);
    if (st)
        return st;
    w->rel[j] = syy > 0 ? sse / syy : NAN;
    w->worst_k[j] = wk;
    w->worst_est[j] = sqrt(worst);
    ac_t2_sep s;
    memset(&s, 0, sizeof s);
    ac_schedule sched = cli_schedule(&r->a->common);
    if ((st = ac_mat_copy(&s.X, &ho->X[wk], err)) ||
        (st = ac_t2_certify(&s, S, &r->V, &sched, 0.0, err))) {
        ac_t2_sep_free(&s);
        return st;
    }
    w->sep[j] = s.cert.verdict;
    double glo = norm_lo(&r->V, &s.X, err);
    w->cert_lo[j] = s.cert.verdict == AC_PROVED && isfinite(s.g_hi) && s.g_hi > 0
                        ? ac_div_dn(s.gap_lo, s.g_hi) : 0.0;
    w->cert_hi[j] = glo > 0 && isfinite(s.gap_hi) ? ac_div_up(s.gap_hi, glo) : INFINITY;
    ac_t2_sep_free(&s);
    return AC_OK;
}

/* Train student row w with seed j on the teacher in dir. */
static int train_one(stu_row *w, size_t j, const char *dir, const stu_run *r, const heldout *ho,
                     ac_err *err)
{
    const stu_args *a = r->a;
    ac_train_config c;
    ac_trainer tr;
    ac_mh S = {0};
    int st;
    memset(&tr, 0, sizeof tr);
    ac_train_config_default(&c, AC_TASK_TEACHER);
    size_t dl = strlen(dir);
    if (dl >= sizeof c.teacher_dir)
        return ac_err_set(err, AC_EUSAGE, "%.64s...: teacher directory name longer than %zu bytes",
                          dir, sizeof c.teacher_dir - 1);
    memcpy(c.teacher_dir, dir, dl + 1);
    c.teacher_stack = 'V';
    c.seq = a->n;
    c.batch = a->batch;
    c.steps = a->steps;
    c.lr = a->lr;
    c.min_lr = a->lr / 10;
    c.warmup = a->steps / 10;
    c.seed = a->seed + j;
    c.model.heads = w->heads;
    c.model.kind = w->fixed ? AC_NN_ATTN_FIXED : AC_NN_ATTN_STANDARD;
    c.model.head_dim = w->fixed ? w->hs : 0;
    double t0 = ac_seconds();
    if ((st = ac_trainer_init(&tr, &c, err)))
        goto out;
    w->nparams = tr.model.nparams;
    size_t every = a->steps / (w->ncurve - 1), pt = 0;
    for (size_t s = 1; s <= a->steps && !st; s++) {
        ac_step_info si;
        if ((st = ac_trainer_step(&tr, &si, err)))
            break;
        if (s == 1 || s % every == 0 || s == a->steps) {
            if (pt >= w->ncurve || (pt > 0 && w->curve_step[pt - 1] == s))
                continue;
            ac_eval_info ev;
            if ((st = ac_trainer_eval(&tr, &ev, err)))
                break;
            w->curve_step[pt] = s;
            w->curve_loss[j * w->ncurve + pt] = si.loss;
            w->curve_rel[j * w->ncurve + pt] = ev.rel_mse;
            pt++;
        }
    }
    w->seconds[j] = ac_seconds() - t0;
    if (!st && !(st = student_layer(&S, &tr, err)))
        st = assess(w, j, &S, r, ho, err);
    if (!st && r->od) {
        char prefix[96];
        snprintf(prefix, sizeof prefix, "%s_h%zu_seed%llu_", w->fixed ? "fixed" : "standard",
                 w->heads, (unsigned long long)c.seed);
        st = write_layer(r->od, prefix, 'W', &S, err);
    }
out:
    ac_mh_free(&S);
    ac_trainer_free(&tr);
    return st;
}

/* ---- the rows ---------------------------------------------------------------- */

static int row_alloc(stu_row *w, size_t nseeds, size_t steps, ac_err *err)
{
    w->nseeds = nseeds;
    w->ncurve = steps >= 20 ? 21 : steps + 1;
    size_t K = nseeds, C = nseeds * w->ncurve;
    w->rel = calloc(K, sizeof(double));
    w->worst_est = calloc(K, sizeof(double));
    w->worst_k = calloc(K, sizeof(size_t));
    w->cert_lo = calloc(K, sizeof(double));
    w->cert_hi = calloc(K, sizeof(double));
    w->sep = calloc(K, sizeof(ac_verdict));
    w->seconds = calloc(K, sizeof(double));
    w->curve_step = calloc(w->ncurve, sizeof(size_t));
    w->curve_loss = calloc(C, sizeof(double));
    w->curve_rel = calloc(C, sizeof(double));
    if (!w->rel || !w->worst_est || !w->worst_k || !w->cert_lo || !w->cert_hi || !w->sep ||
        !w->seconds || !w->curve_step || !w->curve_loss || !w->curve_rel)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (size_t i = 0; i < C; i++)
        w->curve_loss[i] = w->curve_rel[i] = NAN;
    return AC_OK;
}

static void row_free(stu_row *w)
{
    free(w->rel);
    free(w->worst_est);
    free(w->worst_k);
    free(w->cert_lo);
    free(w->cert_hi);
    free(w->sep);
    free(w->seconds);
    free(w->curve_step);
    free(w->curve_loss);
    free(w->curve_rel);
}

static void row_stats(stu_row *w)
{
    double s = 0, q = 0;
    w->min = INFINITY;
    w->max = -INFINITY;
    for (size_t j = 0; j < w->nseeds; j++) {
        s += w->rel[j];
        w->min = fmin(w->min, w->rel[j]);
        w->max = fmax(w->max, w->rel[j]);
    }
    w->mean = s / (double)w->nseeds;
    for (size_t j = 0; j < w->nseeds; j++)
        q += (w->rel[j] - w->mean) * (w->rel[j] - w->mean);
    w->sd = w->nseeds > 1 ? sqrt(q / (double)(w->nseeds - 1)) : 0.0;
}

/* The rows: one standard student per --student-heads (default: the
 * teacher's h), then the fixed student (the teacher's shape). */
static int make_rows(stu_run *r, ac_err *err)
{
    const stu_args *a = r->a;
    size_t d = r->V.d;
    size_t list[STU_MAX_HEADS], nl = a->nheads;
    if (nl)
        memcpy(list, a->heads, nl * sizeof *list);
    else
        list[0] = r->V.h, nl = 1;
    for (size_t i = 0; i < nl; i++)
        if (d % list[i])
            return ac_err_set_field(err, AC_EUSAGE, "student_heads", "%zu heads do not divide "
                                    "d = %zu: a standard student has head size d/h'", list[i], d);
    r->rows = calloc(nl + 1, sizeof *r->rows);
    if (!r->rows)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (size_t i = 0; i <= nl; i++) {
        stu_row *w = &r->rows[r->nrows++];
        int st = row_alloc(w, a->seeds, a->steps, err);
        if (st)
            return st;
        w->fixed = i == nl;
        w->heads = w->fixed ? r->V.h : list[i];
        w->hs = w->fixed ? r->V.hs : d / list[i];
        w->expect = w->fixed ? AC_HC_YES : ac_headcount_answer(&r->hc, w->heads);
    }
    return AC_OK;
}

double stu_ratio_to_fixed(const stu_run *r, const stu_row *row)
{
    for (size_t i = 0; i < r->nrows; i++)
        if (r->rows[i].fixed)
            return r->rows[i].mean > 0 ? row->mean / r->rows[i].mean : NAN;
    return NAN;
}

void stu_run_free(stu_run *r)
{
    for (size_t i = 0; i < r->nrows; i++)
        row_free(&r->rows[i]);
    free(r->rows);
    ac_headcount_free(&r->hc);
    ac_mh_free(&r->V);
    memset(r, 0, sizeof *r);
}

/* --out-dir: the teacher (Vq.npy ...) and the held-out inputs samples.npy
 * (k, d, n). */
static int write_inputs(const stu_run *r, const heldout *ho, ac_err *err)
{
    ac_array S = {0};
    size_t d = r->V.d, n = r->a->n, shape[3] = {ho->k, d, n};
    int st = write_layer(r->od, "", 'V', &r->V, err);
    if (!st)
        st = ac_array_init(&S, 3, shape, err);
    for (size_t k = 0; k < ho->k && !st; k++)
        memcpy(S.data + k * d * n, ho->X[k].data, d * n * sizeof(double));
    if (!st)
        st = ac_npy_write(cli_outdir_path(r->od, "samples.npy"), &S, err);
    ac_array_free(&S);
    return st;
}

int stu_run_all(stu_run *r, const stu_args *a, cli_outdir *od, ac_err *err)
{
    char dir[4096] = "";
    heldout ho;
    int st;
    memset(r, 0, sizeof *r);
    memset(&ho, 0, sizeof ho);
    r->a = a;
    r->od = od;
    double t0 = ac_seconds();
    if ((st = load_teacher(r, a, err)) || (st = ac_t2_hypotheses(&r->hyp, &r->V, a->n, err)) ||
        (st = ac_headcount_decide(&r->hc, &r->V, a->n, err)) || (st = make_rows(r, err)) ||
        (st = heldout_init(&ho, r, err)) || (od && (st = write_inputs(r, &ho, err))))
        goto out;
    if (a->vdir)
        snprintf(dir, sizeof dir, "%s", a->vdir);
    else if ((st = teacher_dir(dir, sizeof dir, r, err)))
        goto out;
    for (size_t i = 0; i < r->nrows && !st; i++) {
        for (size_t j = 0; j < a->seeds && !st; j++)
            st = train_one(&r->rows[i], j, dir, r, &ho, err);
        row_stats(&r->rows[i]);
    }
out:
    if (dir[0] && !a->vdir)
        remove_teacher_dir(dir);
    heldout_free(&ho);
    r->wall = ac_seconds() - t0;
    return st;
}

/* ---- the command --------------------------------------------------------------- */

static const cli_flag stu_flags[] = {
    {"student_heads", "--student-heads"},
    {"batch", "--student-batch"},
    {"lr,min_lr", "--student-lr"},
    {"seq", "--n"},
    {NULL, NULL},
};

typedef struct {
    const stu_run *r;
    const char *out;
} plot_ctx;

static void write_plot(FILE *f, void *ctx)
{
    const plot_ctx *p = ctx;
    stu_write_gnuplot(f, p->r, p->out);
}

/* The plot first (gnuplot may fail), then the CSV, then stdout. */
static int write_outputs(const stu_run *r, ac_atomic *csv, ac_atomic *plot, const char *gp)
{
    const stu_args *a = r->a;
    ac_err err;
    int st;
    ac_err_clear(&err);
    if (a->plot) {
        plot_ctx pc = {r, plot->tmp_path};
        int gs = cli_run_gnuplot(gp, fileno(plot->fp), write_plot, &pc);
        if (gs != 0)
            return cli_fail(AC_ECANTCREAT, "--plot %s: gnuplot (%s) failed (status %d)", a->plot,
                            gp, gs);
    }
    if (a->csv) {
        stu_write_csv(csv->fp, r);
        if ((st = ac_atomic_commit(csv, &err)))
            return cli_fail_err(&err);
    }
    if (a->plot && (st = ac_atomic_commit(plot, &err)))
        return cli_fail_err(&err);
    if (a->common.json) {
        ac_json *j = cli_json_stdout();
        stu_json(j, r);
        return cli_json_finish(j);
    }
    stu_print(r);
    return AC_OK;
}

int cmd_separate_student(int argc, char **argv)
{
    stu_args a;
    stu_run r;
    ac_atomic csv, plot;
    char gpbuf[4096];
    const char *gp = NULL;
    ac_err err;
    int st;
    memset(&csv, 0, sizeof csv);
    memset(&plot, 0, sizeof plot);
    memset(&r, 0, sizeof r);
    ac_err_clear(&err);
    cli_set_flags(stu_flags);
    if ((st = parse_args(&a, argc, argv)))
        return st < 0 ? 0 : st;
    cli_common_apply(&a.common);
    if (a.plot) {
        if (!(gp = cli_find_gnuplot(gpbuf, sizeof gpbuf)))
            return cli_fail(AC_ECANTCREAT, "--plot %s: gnuplot not found (install it: apt-get "
                            "install gnuplot-nox, or set ATTNCHECK_GNUPLOT); nothing was "
                            "computed", a.plot);
        if ((st = ac_atomic_open(&plot, a.plot, &err)))
            return cli_fail_err(&err);
    }
    if (a.csv && (st = ac_atomic_open(&csv, a.csv, &err))) {
        ac_atomic_abort(&plot);
        return cli_fail_err(&err);
    }
    cli_outdir od;
    memset(&od, 0, sizeof od);
    if (a.common.out_dir && (st = cli_outdir_begin(&od, a.common.out_dir, &err))) {
        ac_atomic_abort(&csv);
        ac_atomic_abort(&plot);
        return cli_fail_err(&err);
    }
    if ((st = stu_run_all(&r, &a, a.common.out_dir ? &od : NULL, &err)) ||
        (a.common.out_dir && (st = cli_outdir_commit(&od, &err))))
        st = cli_fail_err(&err);
    else
        st = write_outputs(&r, &csv, &plot, gp);
    if (a.common.out_dir)
        cli_outdir_abort(&od);
    ac_atomic_abort(&csv);
    ac_atomic_abort(&plot);
    stu_run_free(&r);
    return st;
}
