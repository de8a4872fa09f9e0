/* cmd_rep_theorem.c — `attncheck rep-theorem`: Theorem 1 on one instance. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/fileio.h"
#include "attncheck/npy.h"
#include "attncheck/theorem1.h"
#include "cli.h"
#include "json_contract.h"
#include "rep_learn.h"

const char cmd_rep_theorem_help[] =
    "Usage: attncheck rep-theorem [OPTIONS]\n"
    "\n"
    "Theorem 1 (Bhojanapalli et al. 2020) on one instance: can one attention head\n"
    "of size dk produce the context matrix P from the input X?\n"
    "    Softmax((Wk X)^T (Wq X) / sqrt(dk)) = P    (softmax over each column)\n"
    "Decides the claim \"some head has max|Softmax - P| <= TOL\" (the verdict and\n"
    "exit status): PROVED with weights whose error is certified (or by exact\n"
    "representability), REFUTED with a certified lower bound on the distance, or\n"
    "UNDECIDED.  On separate lines it answers whether P (column-normalised) is\n"
    "exactly representable by a head of size dk, and the smallest such dk as far as\n"
    "certified (\"threshold\").  rank X = n <= dk uses the paper's construction\n"
    "(paper 1, eqs. (4)-(7)); rank X = n with dk >= n - 1 is exactly representable\n"
    "too (doc/mathematics.md §3.5); other cases use the criterion of §3.4, whose\n"
    "certified obstructions refute and whose identities between logarithms are\n"
    "proved only in the exact cases of §3.4 (otherwise UNDECIDED).\n"
    "\n"
    "Input (X is d x n, one column per token; P is n x n, positive and\n"
    "column-stochastic, columns summing to 1 within 16*n*u):\n"
    "  --x FILE          X from a float64 .npy file (C or Fortran order)\n"
    "  --p FILE          P from a float64 .npy file\n"
    "  --d0 FILE         diagonal of D0 in paper 1, eq. (6): .npy vector of n positive numbers\n"
    "                    (default: the identity)\n"
    "  --normalize       divide each column of P by its sum before checking\n"
    "  --rows            P is row-stochastic (PyTorch's attention weights, one row\n"
    "                    per query): check its transpose, the column-stochastic P\n"
    "  --example paper   the paper's counterexample: d = 1, n = 2, X = [1, 0],\n"
    "                    P = [[0.5, 0.75], [0.5, 0.25]]\n"
    "Generated input (for whichever of X, P is not given):\n"
    "  --n N             tokens (default 8, or the size of the given X or P)\n"
    "  --d D             rows of X (default n)\n"
    "  --seed S          seed of the random streams (default 1): X i.i.d. N(0,1),\n"
    "                    columns of P i.i.d. Dirichlet(1,...,1)\n"
    "  --representable   generate P = Softmax(X'AX/sqrt(dk)) with A = Wk'Wq for\n"
    "                    random Gaussian Wk, Wq (dk x d): representable by design\n"
    "Check:\n"
    "  --dk K            head size (default d)\n"
    "  --tol T           tolerance of the claim (default 2^-26 = 1.49e-08; 0 = exact\n"
    "                    equality; a value that underflows to 0 is an error)\n"
    "  --max-prec BITS   highest precision of the ball stages (default 512;\n"
    "                    0 = double precision stage only); the decision stages run\n"
    "                    in double first, balls only where double cannot decide\n"
    "  --optimize ITERS  BFGS iterations refining the best approximation when P\n"
    "                    is not reached exactly (default 200; 0 = off), scaled\n"
    "                    down to a work budget (iterations x (n^2 dk + 2 n d dk)\n"
    "                    <= 2^33), skipped for n > 512; JSON \"refine\" says why\n"
    "                    it stopped\n"
    "  --wq FILE, --wk FILE  a head to certify (float64 .npy, dk x d each): its\n"
    "                    max|Softmax - P| is an upper bound on the distance, and\n"
    "                    it is written if it is the best head found\n"
    "Output:\n"
    "  --trace           print each proof step with its certified residual\n"
    "  --json            print one JSON object (verdict, certificate, ...)\n"
    "  --out-dir DIR     write Wq.npy, Wk.npy (dk x d), certificate.json, and the\n"
    "                    X.npy, P.npy that were checked if generated or changed\n"
    "  --threads N       number of BLAS threads (the check itself runs BLAS single-\n"
    "                    threaded: results are identical for any N)\n"
    "Learned weights (doc/mathematics.md §6.5):\n"
    "  --learn           for each dk of --dk-range: train one head (BFGS on\n"
    "                    KL(P || Softmax), the best iterate), certify it at --tol\n"
    "                    (default 1e-6 here), and run the exact check beside it;\n"
    "                    print the table and whether the learned transition is\n"
    "                    where the exact criterion puts it\n"
    "  --dk-range A:B    head sizes for --learn (default 1:n+1)\n"
    "  --csv FILE        --learn: the table as CSV\n"
    "  --plot FILE       --learn: learned error and certified lower bound against\n"
    "                    dk (.svg, .png or .pdf) with gnuplot\n"
    "  -h, --help        show this help\n"
    "\n"
    "Exit status: 0 proved, 1 refuted, 2 undecided, 64 usage error, 65 bad input\n"
    "data, 66 cannot open input, 70 internal error, 73 cannot create output.\n"
    "With --learn: 0 the transitions agree, 1 training misses a dk where C(tol) is\n"
    "proved, 2 some dk is decided by neither, 70 also for a learned error below the\n"
    "certified lower bound.\n";

enum {
    OPT_X = 256, OPT_P, OPT_D0, OPT_NORMALIZE, OPT_ROWS, OPT_EXAMPLE, OPT_N, OPT_D, OPT_SEED,
    OPT_REPRESENTABLE, OPT_DK, OPT_TOL, OPT_MAXPREC, OPT_OPTIMIZE, OPT_TRACE, OPT_JSON,
    OPT_OUTDIR, OPT_THREADS, OPT_LEARN, OPT_DKRANGE, OPT_CSV, OPT_PLOT, OPT_WQ, OPT_WK
};

static const struct option long_opts[] = {
    {"x", required_argument, NULL, OPT_X},
    {"p", required_argument, NULL, OPT_P},
    {"d0", required_argument, NULL, OPT_D0},
    {"normalize", no_argument, NULL, OPT_NORMALIZE},
    {"rows", no_argument, NULL, OPT_ROWS},
    {"example", required_argument, NULL, OPT_EXAMPLE},
    {"n", required_argument, NULL, OPT_N},
    {"d", required_argument, NULL, OPT_D},
    {"seed", required_argument, NULL, OPT_SEED},
    {"representable", no_argument, NULL, OPT_REPRESENTABLE},
    {"dk", required_argument, NULL, OPT_DK},
    {"tol", required_argument, NULL, OPT_TOL},
    {"max-prec", required_argument, NULL, OPT_MAXPREC},
    {"optimize", required_argument, NULL, OPT_OPTIMIZE},
    {"trace", no_argument, NULL, OPT_TRACE},
    {"json", no_argument, NULL, OPT_JSON},
    {"out-dir", required_argument, NULL, OPT_OUTDIR},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"learn", no_argument, NULL, OPT_LEARN},
    {"dk-range", required_argument, NULL, OPT_DKRANGE},
    {"csv", required_argument, NULL, OPT_CSV},
    {"plot", required_argument, NULL, OPT_PLOT},
    {"wq", required_argument, NULL, OPT_WQ},
    {"wk", required_argument, NULL, OPT_WK},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* How rep-theorem spells the parameters the library's messages name
 * (ac_err.fields). */
static const cli_flag t1_flags[] = {
    {"normalize", "--normalize"},
    {"rows", "--rows"},
    {NULL, NULL},
};

/* Size limits: n x n matrices of doubles; 2^16 tokens is 32 GiB per matrix. */
#define MAX_DIM ((size_t)1 << 16)

typedef struct {
    const char *xfile, *pfile, *d0file, *example, *wqfile, *wkfile;
    int normalize, representable, rows;
    size_t n, d, dk;
    int have_n, have_d, have_dk, have_tol;
    rep_learn_opts learn;
    uint64_t seed;
    double tol;
    long optimize;
    cli_common common;
} t1_args;

/* --tol: a number in [0, 1] that double represents; one that underflows to
 * 0 (e.g. 1e-400) is an error, not silently the exact claim tol = 0. */
static int parse_tol(const char *arg, double *tol)
{
    int st = cli_parse_double("--tol", arg, 0.0, 1.0, tol);
    if (st == AC_OK && *tol == 0.0) {
        errno = 0;
        double v = strtod(arg, NULL);
        if (v == 0.0 && errno == ERANGE)
            return cli_usage("--tol: %s underflows to 0 in double precision (the smallest "
                                 "positive double is 4.9e-324); pass 0 for exact equality",
                                 arg);
    }
    return st;
}

static int parse_args(t1_args *a, int argc, char **argv)
{
    int c, st;
    memset(a, 0, sizeof *a);
    a->seed = 1;
    a->tol = AC_T1_TOL_DEFAULT;
    a->optimize = 200;
    cli_common_init(&a->common);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
        st = AC_OK;
        switch (c) {
        case OPT_X: a->xfile = optarg; break;
        case OPT_P: a->pfile = optarg; break;
        case OPT_D0: a->d0file = optarg; break;
        case OPT_NORMALIZE: a->normalize = 1; break;
        case OPT_ROWS: a->rows = 1; break;
        case OPT_EXAMPLE:
            if (strcmp(optarg, "paper") != 0)
                return cli_usage("--example: unknown example '%s' (the one example is 'paper')",
                                 optarg);
            a->example = optarg;
            break;
        case OPT_N: st = cli_parse_size("--n", optarg, 1, MAX_DIM, &a->n); a->have_n = 1; break;
        case OPT_D: st = cli_parse_size("--d", optarg, 1, MAX_DIM, &a->d); a->have_d = 1; break;
        case OPT_SEED: st = cli_parse_u64("--seed", optarg, &a->seed); break;
        case OPT_REPRESENTABLE: a->representable = 1; break;
        case OPT_DK: st = cli_parse_size("--dk", optarg, 1, MAX_DIM, &a->dk); a->have_dk = 1; break;
        case OPT_TOL: st = parse_tol(optarg, &a->tol); a->have_tol = 1; break;
        case OPT_MAXPREC: st = cli_parse_int("--max-prec", optarg, 0, 1L << 20, &a->common.max_prec); break;
        case OPT_OPTIMIZE: st = cli_parse_int("--optimize", optarg, 0, 1000000, &a->optimize); break;
        case OPT_TRACE: a->common.trace = 1; break;
        case OPT_JSON: a->common.json = 1; break;
        case OPT_OUTDIR: a->common.out_dir = optarg; break;
        case OPT_THREADS: st = cli_parse_threads(optarg, &a->common.threads); break;
        case OPT_LEARN: st = rep_learn_option(&a->learn, "learn", NULL); break;
        case OPT_DKRANGE: st = rep_learn_option(&a->learn, "dk-range", optarg); break;
        case OPT_CSV: st = rep_learn_option(&a->learn, "csv", optarg); break;
        case OPT_PLOT: st = rep_learn_option(&a->learn, "plot", optarg); break;
        case OPT_WQ: a->wqfile = optarg; break;
        case OPT_WK: a->wkfile = optarg; break;
        default: return cli_bad_option(c, argv);
        }
        if (st)
            return st;
    }
    if ((st = cli_no_operands(argc, argv)))
        return st;
    if (a->example && (a->xfile || a->pfile || a->have_n || a->have_d || a->representable))
        return cli_usage("--example paper fixes X and P; it cannot be combined with --x, --p, "
                         "--n, --d or --representable");
    if (!a->wqfile != !a->wkfile)
        return cli_usage("--wq and --wk give one head together; give both");
    if (a->rows && !a->pfile)
        return cli_usage("--rows needs --p FILE (it transposes the P read from the file)");
    if (a->pfile && a->representable)
        return cli_usage("--representable generates P; it cannot be combined with --p");
    return rep_learn_check(&a->learn, a->have_dk ? "--dk" : a->common.out_dir ? "--out-dir"
                                      : a->common.trace ? "--trace" : a->d0file ? "--d0" : NULL);
}

/* Load or generate X and P. *generated_x / *generated_p report what to write. */
static int load_instance(t1_args *a, ac_mat *X, ac_mat *P, double **d0, size_t *nd0,
                         int *gen_x, int *gen_p, ac_err *err)
{
    int st;
    *gen_x = *gen_p = 0;
    if (a->example) {
        *gen_x = *gen_p = 1;
        return ac_t1_example_paper(X, P, err);
    }
    if (a->xfile && (st = ac_npy_read_mat(a->xfile, X, err)))
        return st;
    if (a->pfile && (st = ac_npy_read_mat(a->pfile, P, err)))
        return st;
    if (a->pfile && a->rows && (st = ac_mat_transpose(P, err)))
        return st;
    if (a->xfile) {
        if (a->have_n && a->n != X->cols)
            return ac_err_set(err, AC_EUSAGE, "--n %zu contradicts %s, which has n = %zu columns",
                              a->n, a->xfile, X->cols);
        if (a->have_d && a->d != X->rows)
            return ac_err_set(err, AC_EUSAGE, "--d %zu contradicts %s, which has d = %zu rows",
                              a->d, a->xfile, X->rows);
        if (X->cols == 0 || X->rows == 0)
            return ac_err_set(err, AC_EDATA, "%s: X is %zu x %zu; it needs at least one row and "
                              "one column", a->xfile, X->rows, X->cols);
    }
    if (a->pfile && !a->xfile && a->have_n && a->n != P->rows)
        return ac_err_set(err, AC_EUSAGE, "--n %zu contradicts %s, which is %zu x %zu", a->n,
                          a->pfile, P->rows, P->cols);
    size_t n = a->xfile ? X->cols : (a->pfile ? P->rows : (a->have_n ? a->n : 8));
    size_t d = a->xfile ? X->rows : (a->have_d ? a->d : n);
    if (!a->xfile) {
        ac_mat dummy = {0};
        if ((st = ac_t1_generate(X, &dummy, d, n, a->seed, err)))
            return st;
        ac_mat_free(&dummy);
        *gen_x = 1;
    }
    if (!a->pfile) {
        *gen_p = 1;
        if (a->representable) {
            size_t dk = a->have_dk ? a->dk : X->rows;
            if ((st = ac_t1_generate_representable(P, X, dk, a->seed, err)))
                return st;
        } else {
            ac_mat dummy = {0};
            if ((st = ac_t1_generate(&dummy, P, 1, X->cols, a->seed, err)))
                return st;
            ac_mat_free(&dummy);
        }
    }
    if (a->normalize && P->rows > 0) {
        ac_t1_normalize(P);
        *gen_p = 1;
    }
    if (a->d0file && (st = ac_npy_read_vec(a->d0file, d0, nd0, err)))
        return st;
    return AC_OK; /* validated by ac_t1_check, with the file names */
}

static void describe_instance(char *buf, size_t n, const t1_args *a, const ac_mat *X)
{
    if (a->example)
        snprintf(buf, n, "the paper's example (d = 1, n = 2, X = [1, 0])");
    else if (a->xfile && a->pfile)
        snprintf(buf, n, "X = %s (%zu x %zu), P = %s", a->xfile, X->rows, X->cols, a->pfile);
    else
        snprintf(buf, n, "X %s (%zu x %zu), P %s, seed %llu",
                 a->xfile ? a->xfile : "Gaussian", X->rows, X->cols,
                 a->pfile ? a->pfile : (a->representable ? "representable" : "Dirichlet"),
                 (unsigned long long)a->seed);
}

/* "threshold": the smallest head size representing P, certified range. */
/* "stage" (number, null when nothing was decided) and "stage_name". */
static void json_stage(ac_json *j, int stage, long prec)
{
    char sb[64];
    ac_json_key(j, "stage");
    if (stage == AC_STAGE_NONE)
        ac_json_null(j);
    else
        ac_json_int(j, stage);
    ac_json_kv_string(j, "stage_name",
                      stage == AC_STAGE_NONE ? "none" : cli_stage_name(sb, sizeof sb, stage, prec));
}

static void json_threshold(ac_json *j, const ac_t1_threshold *t)
{
    ac_json_key(j, "threshold");
    ac_json_begin_object(j);
    ac_json_key(j, "lo");
    if (t->lo >= 0)
        ac_json_int(j, t->lo);
    else
        ac_json_null(j);
    ac_json_key(j, "hi");
    if (t->hi >= 0)
        ac_json_int(j, t->hi);
    else
        ac_json_null(j);
    ac_json_kv_bool(j, "exact", t->exact);
    ac_json_kv_bool(j, "none", t->none);
    ac_json_kv_bool(j, "if_representable", t->if_any);
    ac_json_kv_string(j, "method", t->method);
    ac_json_end_object(j);
}

/* The threshold line: "smallest dk that represents P: ...". */
static void format_threshold(char *buf, size_t len, const ac_t1_threshold *t, size_t n)
{
    char hi[48] = "";
    if (t->none)
        snprintf(buf, len, "none (no head size represents P)");
    else if (t->lo < 0)
        snprintf(buf, len, "not determined");
    else {
        if (t->hi >= 0 && (size_t)t->hi + 1 == n)
            snprintf(hi, sizeof hi, " (n - 1)");
        if (t->hi >= 0 && t->lo == t->hi)
            snprintf(buf, len, "%ld%s%s", t->hi, hi,
                     t->if_any ? ", if P is representable at all" : "");
        else if (t->hi >= 0)
            snprintf(buf, len, ">= %ld and <= %ld%s%s", t->lo, t->hi, hi,
                     t->if_any ? ", if P is representable at all" : "");
        else
            snprintf(buf, len, ">= %ld", t->lo);
    }
}

static void write_json(ac_json *j, const t1_args *a, const char *instance, const ac_t1_result *r,
                       int gen_x, int gen_p)
{
    cli_json_envelope_begin(j, "rep-theorem", ac_verdict_name(r->verdict), &r->cert);
    cli_json_parameters_begin(j, a->seed);
    ac_json_kv_int(j, "dk", (long long)r->dk);
    ac_json_kv_number(j, "tol", a->tol);
    ac_json_kv_bool(j, "normalize", a->normalize);
    ac_json_kv_bool(j, "rows", a->rows);
    cli_json_parameters_end(j);
    cli_json_seconds(j, r->cert.seconds); /* stored: certificate.json equals --json */
    ac_json_kv_string(j, "claim", "some head of size dk has max|Softmax - P| <= tol");
    ac_json_kv_number(j, "tol", a->tol);
    ac_json_key(j, "instance");
    ac_json_begin_object(j);
    ac_json_kv_string(j, "description", instance);
    ac_json_kv_int(j, "d", (long long)r->d);
    ac_json_kv_int(j, "n", (long long)r->n);
    ac_json_kv_int(j, "dk", (long long)r->dk);
    if (a->xfile)
        ac_json_kv_string(j, "x", a->xfile);
    if (a->pfile)
        ac_json_kv_string(j, "p", a->pfile);
    if (gen_x || gen_p)
        ac_json_kv_uint(j, "seed", a->seed);
    ac_json_kv_bool(j, "x_generated", gen_x);
    ac_json_kv_bool(j, "p_generated_or_changed", gen_p);
    ac_json_end_object(j);
    ac_json_kv_string(j, "route", r->route == AC_T1_ROUTE_CONSTRUCT ? "construct" : "decide");
    ac_json_kv_string(j, "exact", ac_verdict_name(r->exact));
    ac_json_kv_string(j, "exact_claim",
                      "the column-normalised P is exactly representable by a head of size dk");
    ac_json_kv_string(j, "exact_method", r->exact_method);
    ac_json_key(j, "exact_stage"); /* the stage that decided "exact" */
    ac_json_begin_object(j);
    json_stage(j, r->exact_stage, r->exact_prec);
    ac_json_end_object(j);
    json_threshold(j, &r->threshold);
    ac_json_kv_int(j, "x_scale_pow2", r->x_scale);
    ac_json_kv_bool(j, "weights_unusable", r->weights_unusable);
    ac_json_kv_string(j, "summary", r->summary);
    ac_json_key(j, "rank");
    ac_json_begin_object(j);
    if (r->rank >= 0)
        ac_json_kv_int(j, "value", r->rank);
    else
        ac_json_kv_string(j, "value", "unknown");
    ac_json_kv_string(j, "method", r->rank_method);
    ac_json_kv_number(j, "sigma_min_lo", r->sigma_lo);
    json_stage(j, r->rank_stage, r->rank_prec);
    ac_json_end_object(j);
    ac_json_kv_number(j, "normalisation_gap", r->norm_gap);
    ac_json_key(j, "log_residual");
    if (isnan(r->rho_lo))
        ac_json_null(j);
    else {
        ac_json_begin_object(j);
        ac_json_kv_number(j, "lo", r->rho_lo);
        ac_json_kv_number(j, "hi", r->rho_hi);
        json_stage(j, r->rho_stage, r->rho_prec);
        ac_json_end_object(j);
    }
    ac_json_key(j, "rank_condition");
    if (isnan(r->lowrank_lo))
        ac_json_null(j);
    else {
        ac_json_begin_object(j);
        ac_json_kv_number(j, "lo", r->lowrank_lo);
        ac_json_kv_number(j, "hi", r->lowrank_hi);
        json_stage(j, r->lowrank_stage, r->lowrank_prec);
        ac_json_end_object(j);
    }
    ac_json_key(j, "distance");
    ac_json_begin_object(j);
    ac_json_kv_number(j, "lo", r->dist_lo);
    ac_json_kv_number(j, "hi", r->dist_hi);
    ac_json_kv_string(j, "lower_method", r->lower_method);
    ac_json_kv_string(j, "upper_method", r->upper_method);
    json_stage(j, r->lower_stage, r->lower_prec); /* of the lower bound */
    ac_json_end_object(j);
    ac_json_key(j, "refine");
    if (!r->refine_stop[0])
        ac_json_null(j);
    else {
        ac_json_begin_object(j);
        ac_json_kv_int(j, "iterations", r->refine_iters);
        ac_json_kv_string(j, "stopped", r->refine_stop);
        ac_json_end_object(j);
    }
    if (r->user_cert.stage != AC_STAGE_NONE && a->wqfile) {
        ac_json_key(j, "given_head");
        cli_json_cert(j, &r->user_cert);
    }
    ac_json_key(j, "weights");
    cli_json_cert(j, &r->weights_cert);
    ac_json_key(j, "trace");
    cli_json_steps(j, r->steps, r->nsteps);
    ac_json_end_object(j);
}

static void print_text(const t1_args *a, const char *instance, const ac_t1_result *r)
{
    char b1[32], b2[32], sb[64];
    printf("instance   %s, dk = %zu\n", instance, r->dk);
    printf("route      %s\n", r->route == AC_T1_ROUTE_CONSTRUCT
                                  ? "Theorem 1 construction, paper 1, eqs. (4)-(7)"
                                  : "decision procedure (doc/mathematics.md §3.4)");
    if (r->rank >= 0)
        printf("rank X     %ld (%s)\n", r->rank, r->rank_method);
    else
        printf("rank X     not certified\n");
    if (!isnan(r->rho_lo))
        printf("residual   rho in [%s, %s]  (log-domain, min over c), %s\n",
               cli_num(b1, sizeof b1, r->rho_lo), cli_num(b2, sizeof b2, r->rho_hi),
               cli_stage_name(sb, sizeof sb, r->rho_stage, r->rho_prec));
    if (!isnan(r->lowrank_lo))
        printf("rank cond. sigma_{dk+1} in [%s, %s], %s\n", cli_num(b1, sizeof b1, r->lowrank_lo),
               cli_num(b2, sizeof b2, r->lowrank_hi),
               cli_stage_name(sb, sizeof sb, r->lowrank_stage, r->lowrank_prec));
    char thr[128];
    format_threshold(thr, sizeof thr, &r->threshold, r->n);
    printf("exact      %s (%s)\n",
           r->exact == AC_PROVED    ? "PROVED: P (column-normalised) is exactly representable"
           : r->exact == AC_REFUTED ? "REFUTED: P is not exactly representable"
                                    : "UNDECIDED: exact representability not decided",
           r->exact_method[0] ? r->exact_method : "no criterion applies");
    printf("threshold  smallest dk that represents P: %s\n", thr);
    if (r->weights_unusable)
        printf("weights    none written: they exist in exact arithmetic but overflow double at "
               "this scale of X\n");
    else
        printf("weights    max|Softmax - P| in [%s, %s], %s\n",
               cli_num(b1, sizeof b1, r->weights_cert.lo), cli_num(b2, sizeof b2, r->weights_cert.hi),
               cli_stage_name(sb, sizeof sb, r->weights_cert.stage, r->weights_cert.prec));
    printf("distance   inf over heads of max|Softmax - P| in [%s, %s]\n",
           cli_num(b1, sizeof b1, r->dist_lo), cli_num(b2, sizeof b2, r->dist_hi));
    printf("  lower    %s\n", r->lower_method[0] ? r->lower_method : "none");
    printf("  upper    %s\n", r->upper_method[0] ? r->upper_method : "none");
    if (r->refine_stop[0])
        printf("  refine   %s\n", r->refine_stop);
    if (a->common.trace) {
        printf("trace\n");
        cli_print_steps(r->steps, r->nsteps);
    }
    printf("summary    %s\n", r->summary);
    printf("approx.    %s: some head of size %zu has max|Softmax - P| <= tol = %s\n",
           ac_verdict_name(r->verdict), r->dk, cli_num(b1, sizeof b1, a->tol));
    printf("verdict    %s: dist <= tol = %s  [%s, %.3g s]\n", ac_verdict_name(r->verdict),
           cli_num(b1, sizeof b1, a->tol), r->cert.method, r->cert.seconds);
}

/* What certificate.json is written from. */
typedef struct {
    const t1_args *a;
    const char *instance;
    const ac_t1_result *r;
    int gen_x, gen_p;
} t1_json_ctx;

static void write_json_cb(ac_json *j, const void *ctx)
{
    const t1_json_ctx *c = ctx;
    write_json(j, c->a, c->instance, c->r, c->gen_x, c->gen_p);
}

/* --out-dir: Wq.npy, Wk.npy, the generated X.npy and P.npy, and
 * certificate.json, staged so that all appear or none. */
static int write_outputs(const t1_args *a, const ac_mat *X, const ac_mat *P,
                         const ac_t1_result *r, int gen_x, int gen_p, const char *instance)
{
    cli_outdir o;
    ac_err err;
    int st;
    ac_err_clear(&err);
    if ((st = cli_outdir_begin(&o, a->common.out_dir, &err)))
        return cli_fail_err(&err);
    t1_json_ctx c = {a, instance, r, gen_x, gen_p};
    if ((r->Wq.data && ((st = cli_outdir_write_mat(&o, "Wq.npy", &r->Wq, &err)) ||
                        (st = cli_outdir_write_mat(&o, "Wk.npy", &r->Wk, &err)))) ||
        (gen_x && (st = cli_outdir_write_mat(&o, "X.npy", X, &err))) ||
        (gen_p && (st = cli_outdir_write_mat(&o, "P.npy", P, &err))) ||
        (st = cli_outdir_write_json(&o, "certificate.json", write_json_cb, &c, &err)) ||
        (st = cli_outdir_commit(&o, &err))) {
        cli_outdir_abort(&o);
        return cli_fail_err(&err);
    }
    return AC_OK;
}

int cmd_rep_theorem(int argc, char **argv)
{
    t1_args a;
    ac_mat X = {0}, P = {0};
    double *d0 = NULL;
    size_t nd0 = 0;
    int gen_x, gen_p, st;
    ac_err err;
    ac_t1_result r;
    ac_mat Wq = {0}, Wk = {0};
    char instance[256];
    memset(&r, 0, sizeof r);
    ac_err_clear(&err);
    if ((st = parse_args(&a, argc, argv)))
        return st;
    cli_common_apply(&a.common);
    cli_set_flags(t1_flags);
    if (!a.xfile && !a.pfile && !a.example && a.have_n &&
        (st = cli_memory_check(cli_mem_rep_theorem(a.have_d ? a.d : a.n, a.n), AC_EUSAGE,
                               "--n %zu", a.n)))
        return st;
    if ((st = load_instance(&a, &X, &P, &d0, &nd0, &gen_x, &gen_p, &err))) {
        st = cli_fail_err(&err);
        goto out;
    }
    if ((a.xfile || a.pfile) &&
        (st = cli_memory_check(cli_mem_rep_theorem(X.rows, X.cols), AC_EDATA, "%s (n = %zu)",
                               a.xfile ? a.xfile : a.pfile, X.cols)))
        goto out;
    describe_instance(instance, sizeof instance, &a, &X);
    if (a.learn.on) {
        st = rep_learn_run(&a.learn, &X, &P, a.xfile ? a.xfile : "X", a.pfile ? a.pfile : "P",
                           instance, a.seed, a.have_tol ? a.tol : 1e-6, &a.common,
                           (int)a.optimize);
        goto out;
    }
    ac_t1_opts o;
    ac_t1_opts_default(&o);
    o.dk = a.have_dk ? a.dk : X.rows;
    o.d0 = d0;
    o.nd0 = nd0;
    o.xname = a.xfile ? a.xfile : "X";
    o.pname = a.pfile ? a.pfile : "P";
    o.d0name = a.d0file ? a.d0file : "D0";
    o.tol = a.tol;
    o.sched = cli_schedule(&a.common);
    o.optimize = (int)a.optimize;
    if (a.wqfile && ((st = ac_npy_read_mat(a.wqfile, &Wq, &err)) ||
                     (st = ac_npy_read_mat(a.wkfile, &Wk, &err)))) {
        st = cli_fail_err(&err);
        goto out;
    }
    o.user_wq = a.wqfile ? &Wq : NULL;
    o.user_wk = a.wkfile ? &Wk : NULL;
    o.wqname = a.wqfile;
    o.wkname = a.wkfile;
    if ((st = ac_t1_check(&r, &X, &P, &o, &err))) {
        st = cli_fail_err(&err);
        goto out;
    }
    if (a.common.out_dir && (st = write_outputs(&a, &X, &P, &r, gen_x, gen_p, instance)))
        goto out;
    if (a.common.json) {
        ac_json *j = cli_json_stdout();
        write_json(j, &a, instance, &r, gen_x, gen_p);
        if ((st = cli_json_finish(j)))
            goto out;
    } else {
        print_text(&a, instance, &r);
    }
    st = cli_exit_of(r.verdict);
out:
    ac_t1_result_free(&r);
    ac_mat_free(&X);
    ac_mat_free(&P);
    ac_mat_free(&Wq);
    ac_mat_free(&Wk);
    free(d0);
    return st;
}

/* ---- report rows ---------------------------------------------------------- */

static void t1_row(cli_report *rep, const char *claim, const char *instance, ac_verdict expected,
                   const ac_mat *X, const ac_mat *P, size_t dk)
{
    cli_report_row *row = cli_report_add(rep);
    ac_t1_result r;
    ac_err err;
    char b1[32], b2[32];
    if (!row)
        return;
    snprintf(row->claim, sizeof row->claim, "%s", claim);
    snprintf(row->instance, sizeof row->instance, "%s", instance);
    row->expected = expected;
    ac_t1_opts o;
    ac_t1_opts_default(&o);
    o.dk = dk;
    double t0 = ac_seconds();
    ac_err_clear(&err);
    int st = ac_t1_check(&r, X, P, &o, &err);
    row->seconds = ac_seconds() - t0;
    if (st) {
        cli_report_fail(row, st, &err, t1_flags);
    } else {
        row->verdict = r.verdict;
        cli_report_bounds(row, "max|Softmax - P| over heads of size dk", r.dist_lo, r.dist_hi);
        if (r.verdict == AC_REFUTED)
            snprintf(row->bound, sizeof row->bound, "dist >= %s", cli_num(b1, sizeof b1, r.dist_lo));
        else
            snprintf(row->bound, sizeof row->bound, "dist <= %s",
                     cli_num(b2, sizeof b2, r.dist_hi));
        snprintf(row->detail, sizeof row->detail, "%.255s", r.summary);
    }
    ac_t1_result_free(&r);
}

void report_rows_theorem1(cli_report *rep)
{
    ac_mat X = {0}, P = {0}, Xr = {0};
    ac_err err;
    char inst[96];
    uint64_t seed = rep->seed;
    /* Theorem 1, d >= n: proved by construction */
    size_t n = rep->quick ? 16 : 256;
    if (ac_t1_generate(&X, &P, n, n, seed, &err) == AC_OK) {
        snprintf(inst, sizeof inst, "d=n=dk=%zu, Gaussian X, Dirichlet P", n);
        t1_row(rep, "Thm 1: head of size n represents P", inst, AC_PROVED, &X, &P, n);
    }
    ac_mat_free(&X);
    ac_mat_free(&P);
    /* the refined threshold (doc/mathematics.md §3.5): n - 1 suffices, n - 2 does not */
    if (ac_t1_generate(&X, &P, 16, 8, seed, &err) == AC_OK) {
        t1_row(rep, "Thm 1 refined: dk = n - 1 suffices", "d=16, n=8, dk=7, Dirichlet P",
               AC_PROVED, &X, &P, 7);
        t1_row(rep, "Thm 1 refined: dk = n - 2 fails", "d=16, n=8, dk=6, Dirichlet P",
               AC_REFUTED, &X, &P, 6);
    }
    ac_mat_free(&X);
    ac_mat_free(&P);
    /* the paper's counterexample */
    if (ac_t1_example_paper(&X, &P, &err) == AC_OK)
        t1_row(rep, "Thm 1: d < n bottleneck (paper)", "d=1, n=2, X=[1, 0]", AC_REFUTED,
               &X, &P, 1);
    ac_mat_free(&X);
    ac_mat_free(&P);
    /* a random d < n instance */
    if (ac_t1_generate(&X, &P, 4, 8, seed, &err) == AC_OK)
        t1_row(rep, "Thm 1: d < n, random P", "d=dk=4, n=8, Dirichlet P", AC_REFUTED, &X,
               &P, 4);
    ac_mat_free(&X);
    ac_mat_free(&P);
    /* a constructed representable d < n instance */
    if (ac_t1_generate(&Xr, &P, 4, 8, seed + 1, &err) == AC_OK) {
        ac_mat_free(&P);
        if (ac_t1_generate_representable(&P, &Xr, 2, seed + 1, &err) == AC_OK)
            t1_row(rep, "Thm 1: d < n, representable P", "d=4, n=8, dk=2, P from a random head",
                   AC_PROVED, &Xr, &P, 2);
    }
    ac_mat_free(&Xr);
    ac_mat_free(&P);
}
