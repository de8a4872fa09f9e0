/* cmd_condition.c — `attncheck condition`: Theorem 3.2 of Saratchandran et
 * al. (2025) (paper 2), sampled condition numbers of the multi-head block
 * against every prediction (attncheck/condition.h, attncheck/rmt.h): the
 * options, the run over every h with the trace, the certificate of claim C
 * (from the library) and the outputs (cmd_condition.h lists the files). */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "attncheck/condition.h"
#include "attncheck/fileio.h"
#include "condition_cli.h"
#include "plot.h"
#include "tty_width.h"

const char cmd_condition_help[] =
    "Usage: attncheck condition [OPTIONS]\n"
    "\n"
    "Theorem 3.2 (Saratchandran et al. 2025): the multi-head block\n"
    "A = [A_1 ... A_h] (N x D, D = h d, A_i i.i.d. Gaussian) has\n"
    "kappa(A) = sigma_1/sigma_min ~ (sqrt D + sqrt N)/(sqrt D - sqrt N) -> 1 as h\n"
    "grows.  Samples kappa for each h and compares it with every prediction:\n"
    "first order (paper 2, eq. (6)), Tracy-Widom finite-size correction and\n"
    "5-95% band, the rigorous Gordon bounds, Edelman's law at D = N.\n"
    "All statistics are estimates; --certify adds rigorous enclosures and decides\n"
    "the claim C: every sampled block has full rank and every reported kappa is\n"
    "within rtol of the exact kappa of its block (PROVED is that claim for the\n"
    "sample, not Theorem 3.2's prediction, which the tables compare as estimates).\n"
    "\n"
    "Blocks:\n"
    "  --heads LIST      numbers of heads, comma-separated (default 1,2,4,8,16,32,64)\n"
    "  --seq N           sequence length: rows of A (default 128)\n"
    "  --head-dim d      columns per head (default 64); D = h d\n"
    "  --embed D         fixed width D instead; d = D/h (every h must divide D)\n"
    "  --mode MODE       iid: A_i i.i.d. N(0,1), the theorem's assumption (default);\n"
    "                    attention: A_i = Softmax(Q_i K_i^T/sqrt d) V_i from a\n"
    "                    Gaussian input X (N x E) and N(0, 1/E) projections\n"
    "  --input-dim E     attention: width of X (default D)\n"
    "  --trials T        samples per h (default 100)\n"
    "  --seed S          seed of the random streams (default 1); sample t of h\n"
    "                    uses the stream (S, h, t), whatever the threads\n"
    "Accuracy:\n"
    "  --rtol R          requested relative accuracy of each kappa (default 1e-08):\n"
    "                    Gram route, SVD, or the MPFR fallback, per sample\n"
    "  --max-prec BITS   highest MPFR precision of the fallback and of the\n"
    "                    certification stages (default 1024)\n"
    "  --certify         rigorous enclosures of sigma_1, sigma_min and kappa of\n"
    "                    every sample (Weyl, then Arb balls) and of the statistics\n"
    "Spectrum:\n"
    "  --spectrum        eigenvalues of (1/D) A A^T against the Marchenko-Pastur law:\n"
    "                    Kolmogorov-Smirnov distance and histogram\n"
    "  --bins K          histogram bins (default 24)\n"
    "Trained models (kappa on learned weights; doc/mathematics.md section 6.5):\n"
    "  --model DIR       a checkpoint of 'attncheck train' (task text or listops):\n"
    "                    per layer, kappa of [A_1 ... A_h] (the head outputs, one row\n"
    "                    per real token, padding dropped) on real sequences, its\n"
    "                    median and 5-95% range, beside the Gaussian prediction for\n"
    "                    the same N, D and attention heads with Gaussian weights of\n"
    "                    the same shapes (--trials samples, default 20 here).  Takes\n"
    "                    --data, --batches, --trials, --seed, --rtol, --max-prec,\n"
    "                    --json, --csv, --plot, --threads; exit status 2 (measured,\n"
    "                    nothing certified)\n"
    "  --data FILE       --model: sequences to use instead of the checkpoint's held-out\n"
    "                    data: text, any file in the checkpoint's vocabulary; listops,\n"
    "                    one expression per line in the LRA syntax\n"
    "  --batches N       --model: batches of the checkpoint's batch size (default 4)\n"
    "Output:\n"
    "  --json            print one JSON object (verdict, certificate, results)\n"
    "  --csv FILE        one row per h: statistics, predictions, errors, routes\n"
    "  --plot FILE       kappa against h (.svg, .png or .pdf) with gnuplot\n"
    "  --trace           print one line per sample\n"
    "  --threads N       number of threads (OpenMP; default: all cores)\n"
    "Shards (a sweep split by trials across processes or machines):\n"
    "  --shard I/K       compute only shard I of K of every h's trials\n"
    "  --samples-out FILE  write the shard's samples to FILE (with --shard); then\n"
    "                    `attncheck merge FILE...` gives exactly the whole result\n"
    "  -h, --help        show this help\n"
    "\n"
    "Exit status: 0 proved, 1 refuted, 2 undecided (always without --certify: no\n"
    "claim is certified), 64 usage error, 65 bad input data, 66 cannot open input,\n"
    "70 internal error, 73 cannot create output (also: --plot without gnuplot).\n";

enum {
    OPT_HEADS = 256, OPT_SEQ, OPT_HEADDIM, OPT_EMBED, OPT_MODE, OPT_INPUTDIM, OPT_TRIALS,
    OPT_SEED, OPT_RTOL, OPT_MAXPREC, OPT_CERTIFY, OPT_SPECTRUM, OPT_BINS, OPT_JSON, OPT_CSV,
    OPT_PLOT, OPT_TRACE, OPT_THREADS, OPT_SHARD, OPT_SAMPLES_OUT, OPT_MERGE_FROM
};

static const struct option long_opts[] = {
    {"heads", required_argument, NULL, OPT_HEADS},
    {"seq", required_argument, NULL, OPT_SEQ},
    {"head-dim", required_argument, NULL, OPT_HEADDIM},
    {"embed", required_argument, NULL, OPT_EMBED},
    {"mode", required_argument, NULL, OPT_MODE},
    {"input-dim", required_argument, NULL, OPT_INPUTDIM},
    {"trials", required_argument, NULL, OPT_TRIALS},
    {"seed", required_argument, NULL, OPT_SEED},
    {"rtol", required_argument, NULL, OPT_RTOL},
    {"max-prec", required_argument, NULL, OPT_MAXPREC},
    {"certify", no_argument, NULL, OPT_CERTIFY},
    {"spectrum", no_argument, NULL, OPT_SPECTRUM},
    {"bins", required_argument, NULL, OPT_BINS},
    {"json", no_argument, NULL, OPT_JSON},
    {"csv", required_argument, NULL, OPT_CSV},
    {"plot", required_argument, NULL, OPT_PLOT},
    {"trace", no_argument, NULL, OPT_TRACE},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"shard", required_argument, NULL, OPT_SHARD},
    {"samples-out", required_argument, NULL, OPT_SAMPLES_OUT},
    {"merge-from", required_argument, NULL, OPT_MERGE_FROM}, /* used by attncheck merge */
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

#define MAX_DIM ((size_t)1 << 24)

/* "1,2,4" -> list; usage error on anything else. */
static int parse_heads(cond_args *a, const char *s)
{
    const char *p = s;
    a->nh = 0;
    if (!s || !*s)
        return cli_usage("--heads: the list is empty (give e.g. 1,2,4,8)");
    while (*p) {
        char *end;
        if (*p < '0' || *p > '9')
            return cli_usage("--heads: '%s' is not a comma-separated list of whole numbers", s);
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (errno || v > MAX_DIM)
            return cli_usage("--heads: %.*s is too large", (int)(end - p), p);
        if (v == 0)
            return cli_usage("--heads: h = 0 is not a number of heads (each h must be >= 1)");
        if (a->nh == MAX_HEADS_LIST)
            return cli_usage("--heads: at most %d values", MAX_HEADS_LIST);
        for (size_t i = 0; i < a->nh; i++)
            if (a->heads[i] == v)
                return cli_usage("--heads: h = %llu appears twice", v);
        a->heads[a->nh++] = (size_t)v;
        p = end;
        if (*p == ',') {
            p++;
            if (!*p)
                return cli_usage("--heads: '%s' ends with a comma", s);
        } else if (*p) {
            return cli_usage("--heads: '%s' is not a comma-separated list of whole numbers", s);
        }
    }
    return AC_OK;
}

/* After the options: the mode, the alternatives, the (h, d) list, the plot
 * file name and the options the library takes from the common ones. */
static int finish_args(cond_args *a, const char *mode, int have_input_dim, size_t input_dim)
{
    if (mode) {
        if (strcmp(mode, "iid") == 0)
            a->o.mode = AC_COND_IID;
        else if (strcmp(mode, "attention") == 0)
            a->o.mode = AC_COND_ATTENTION;
        else
            return cli_usage("--mode: '%s' is not a mode (iid or attention)", mode);
    }
    if (have_input_dim && a->o.mode != AC_COND_ATTENTION)
        return cli_usage("--input-dim applies to --mode attention only");
    a->o.input_dim = input_dim;
    if (a->have_d && a->have_embed)
        return cli_usage("--head-dim and --embed are alternatives; give one of them");
    for (size_t i = 0; i < a->nh; i++) {
        if (a->have_embed) {
            if (a->embed % a->heads[i])
                return cli_usage("--embed %zu: h = %zu does not divide D (d = D/h must be whole)",
                                 a->embed, a->heads[i]);
            a->dims[i] = a->embed / a->heads[i];
        } else {
            a->dims[i] = a->d;
        }
        if ((double)a->heads[i] * (double)a->dims[i] > (double)MAX_DIM)
            return cli_usage("h = %zu, d = %zu: D = h d is too large", a->heads[i], a->dims[i]);
    }
    if (a->plot && !cli_plot_terminal(a->plot))
        return cli_usage("--plot %s: the file name must end in .svg, .png or .pdf", a->plot);
    a->o.max_prec = a->common.max_prec;
    a->o.sched = ac_schedule_upto(a->common.max_prec);
    a->o.threads = a->common.threads;
    return AC_OK;
}

static int parse_args(cond_args *a, int argc, char **argv)
{
    int c, st;
    memset(a, 0, sizeof *a);
    ac_cond_opts_default(&a->o);
    cli_common_init(&a->common);
    a->common.max_prec = 1024;
    static const size_t def_heads[] = {1, 2, 4, 8, 16, 32, 64};
    a->nh = sizeof def_heads / sizeof *def_heads;
    memcpy(a->heads, def_heads, sizeof def_heads);
    a->d = 64;
    const char *mode = NULL;
    size_t input_dim = 0;
    int have_input_dim = 0;
    optind = 1;
    opterr = 0;
    if ((st = cond_shard_words(a, argc, argv, long_opts)))
        return st;
    if (!(a->merge = calloc((size_t)argc + 1, sizeof *a->merge)))
        return cli_fail(AC_EINTERNAL, "out of memory");
    while ((c = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
        st = AC_OK;
        switch (c) {
        case OPT_HEADS: st = parse_heads(a, optarg); break;
        case OPT_SEQ: st = cli_parse_size("--seq", optarg, 1, MAX_DIM, &a->o.N); break;
        case OPT_HEADDIM:
            st = cli_parse_size("--head-dim", optarg, 1, MAX_DIM, &a->d);
            a->have_d = 1;
            break;
        case OPT_EMBED:
            st = cli_parse_size("--embed", optarg, 1, MAX_DIM, &a->embed);
            a->have_embed = 1;
            break;
        case OPT_MODE: mode = optarg; break;
        case OPT_INPUTDIM:
            st = cli_parse_size("--input-dim", optarg, 1, MAX_DIM, &input_dim);
            have_input_dim = 1;
            break;
        case OPT_TRIALS:
            st = cli_parse_size("--trials", optarg, 1, (size_t)1 << 40, &a->o.trials);
            break;
        case OPT_SEED: st = cli_parse_u64("--seed", optarg, &a->o.seed); break;
        case OPT_RTOL: st = cli_parse_double("--rtol", optarg, 1e-14, 0.1, &a->o.rtol); break;
        case OPT_MAXPREC:
            st = cli_parse_int("--max-prec", optarg, 128, 1L << 16, &a->common.max_prec);
            break;
        case OPT_CERTIFY: a->o.certify = 1; break;
        case OPT_SPECTRUM: a->o.spectrum = 1; break;
        case OPT_BINS: st = cli_parse_size("--bins", optarg, 1, 100000, &a->o.bins); break;
        case OPT_JSON: a->common.json = 1; break;
        case OPT_CSV: a->csv = optarg; break;
        case OPT_PLOT: a->plot = optarg; break;
        case OPT_TRACE: a->trace = 1; break;
        case OPT_THREADS: st = cli_parse_threads(optarg, &a->common.threads); break;
        case OPT_SHARD: st = cond_parse_shard(a, optarg); break;
        case OPT_SAMPLES_OUT: a->samples_out = optarg; break;
        case OPT_MERGE_FROM: a->merge[a->nmerge++] = optarg; break;
        default: return cli_bad_option(c, argv);
        }
        if (st)
            return st;
    }
    if ((st = cli_no_operands(argc, argv)))
        return st;
    if ((st = finish_args(a, mode, have_input_dim, input_dim)))
        return st;
    return cond_check_shard_args(a);
}

/* ---- progress ------------------------------------------------------------------ */

typedef struct {
    int on;
    size_t idx, nh, h;
    double last;
    int drawn;
    const cond_args *a; /* the (h, d) list and the sizes, for the ETA */
    double t0;          /* when the run started */
} progress_state;

/* The work of one sample of the i-th h, in the units of the ETA: the SVD
 * or Gram eigenvalues of an N x D block cost about N D min(N, D) flops,
 * drawing and reducing it about 32 per entry (measured: 15-50 ns per
 * entry against about 1 ns per flop). */
static double progress_work(const cond_args *a, size_t i)
{
    double N = (double)a->o.N, D = (double)a->heads[i] * (double)a->dims[i];
    return N * D * (fmin(N, D) + 32);
}

/* The progress line, cut to the terminal's width: the h, the samples done
 * and an ETA from the time so far, the samples still to run weighted by
 * progress_work (an estimate: the routes differ in cost). */
static void progress_cb(void *ctx, size_t done, size_t total)
{
    progress_state *p = ctx;
    double t = ac_seconds();
    if (!p->on || (done < total && t - p->last < 0.1))
        return;
    p->last = t;
    double wdone = 0, wall = 0;
    for (size_t i = 0; p->a && i < p->nh; i++) {
        double w = progress_work(p->a, i) * (double)total;
        wall += w;
        if (i < p->idx)
            wdone += w;
        else if (i == p->idx)
            wdone += w * (double)done / (double)(total ? total : 1);
    }
    char eb[32], line[256];
    /* none in the first half second, which start-up costs dominate */
    cli_fmt_duration(eb, sizeof eb,
                     wdone > 0 && t > p->t0 + 0.5 ? (t - p->t0) / wdone * (wall - wdone) : NAN);
    snprintf(line, sizeof line, "attncheck condition: h = %zu (%zu of %zu): %zu/%zu samples, "
             "ETA %s", p->h, p->idx + 1, p->nh, done, total, eb);
    cli_tty_line(stderr, line, cli_tty_columns(2));
    p->drawn = 1;
}

static void progress_clear(progress_state *p)
{
    if (p->on && p->drawn) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        p->drawn = 0;
    }
}


/* ---- the run --------------------------------------------------------------------------- */

/* How this command spells the library's parameters (ac_err.fields); the
 * others are "--" + the field name (trials, rtol, max_prec, bins). */
static const cli_flag cond_flags[] = {
    {"N", "--seq"}, {"h", "--heads"}, {"d", "--head-dim"}, {NULL, NULL}};

/* --trace: one line per sample of r. */
static void print_trace(const ac_cond_result *r, int certify)
{
    for (size_t t = 0; t < r->trials; t++) {
        const ac_cond_sample *s = &r->samples[t];
        printf("h = %zu, trial %zu: kappa %.10g (sigma_1 %.10g, sigma_min %.10g), "
               "route %s%s, relerr <= %.2g",
               r->h, t, s->kappa, s->sigma1, s->sigmin,
               ac_cond_route_name((ac_cond_route)s->route), s->resolved ? "" : " unresolved",
               s->relerr);
        if (s->route == AC_COND_MPFR)
            printf(", %ld bits", s->prec);
        if (certify)
            printf("; %s at stage %d: kappa in [%.12g, %.12g]", ac_verdict_name(s->cert),
                   s->cert_stage, s->kappa_lo, s->kappa_hi);
        printf("\n");
    }
}

/* The output files of the run: staged, committed only when complete. */
typedef struct {
    ac_atomic csv, plot;
    char gpbuf[4096];
    const char *gp; /* the gnuplot program (--plot) */
} cond_files;

/* Everything that can fail cheaply fails before the sampling starts: the
 * sizes and the memory, gnuplot, the output files. */
static int prepare(const cond_args *a, cond_files *f)
{
    ac_err err;
    int st;
    char buf[2 * AC_ERR_MSG_MAX];
    double need;
    ac_err_clear(&err);
    if ((st = ac_cond_memory_need(&a->o, a->heads, a->dims, a->nh, &need, &err)))
        return st == AC_EUSAGE ? cli_usage("%s", cli_err_message(buf, sizeof buf, &err))
                               : cli_fail_err(&err);
    double avail = ac_memory_available(NULL); /* MemAvailable, cgroup, ulimit -v */
    if (avail > 0 && need > 0.9 * avail)
        return cli_usage("--trials %zu with these sizes needs %.3g GiB of memory; only %.3g GiB "
                         "are available (reduce --trials, --heads or --spectrum)",
                         a->o.trials, need / 1073741824.0, avail / 1073741824.0);
    if (a->plot) {
        f->gp = cli_find_gnuplot(f->gpbuf, sizeof f->gpbuf);
        if (!f->gp)
            return cli_fail(AC_ECANTCREAT,
                            "--plot %s: gnuplot not found (install it: apt-get install "
                            "gnuplot-nox, or set ATTNCHECK_GNUPLOT); nothing was computed",
                            a->plot);
        if ((st = ac_atomic_open(&f->plot, a->plot, &err)))
            return cli_fail_err(&err);
    }
    if (a->csv && (st = ac_atomic_open(&f->csv, a->csv, &err))) {
        ac_atomic_abort(&f->plot);
        return cli_fail_err(&err);
    }
    return AC_OK;
}

/* ac_cond_run for every h of the list, with the progress line on a
 * terminal and the trace; res[0..*nres-1] are the results run so far. */
static int run_all(cond_args *a, ac_cond_result *res, size_t *nres, double *wall)
{
    ac_err err;
    progress_state prog;
    ac_err_clear(&err);
    memset(&prog, 0, sizeof prog);
    prog.on = isatty(2);
    prog.nh = a->nh;
    prog.a = a;
    prog.t0 = ac_seconds();
    a->o.progress = progress_cb;
    a->o.progress_ctx = &prog;
    double t0 = ac_seconds();
    for (size_t i = 0; i < a->nh; i++) {
        prog.idx = i;
        prog.h = a->heads[i];
        if (ac_cond_run(&res[i], a->heads[i], a->dims[i], &a->o, &err)) {
            progress_clear(&prog);
            return cli_fail_err(&err);
        }
        (*nres)++;
        if (a->trace) {
            progress_clear(&prog);
            print_trace(&res[i], a->o.certify);
        }
    }
    *wall = ac_seconds() - t0;
    progress_clear(&prog);
    return AC_OK;
}

typedef struct {
    const cond_args *a;
    const ac_cond_result *res;
    const char *out;
} plot_ctx;

static void write_plot(FILE *f, void *ctx)
{
    const plot_ctx *p = ctx;
    cond_write_gnuplot_script(f, p->a, p->res, p->a->nh, p->out);
}

/* The plot first (gnuplot may fail), then both files are committed, then
 * the text or JSON on stdout. */
static int write_outputs(const cond_args *a, const ac_cond_result *res, cond_files *f,
                         double wall, int threads, const ac_cert *cert)
{
    ac_err err;
    int st;
    ac_err_clear(&err);
    if (a->plot) {
        plot_ctx pc = {a, res, NULL}; /* no file name in the script (plot.h) */
        fflush(f->plot.fp);
        int gs = cli_run_gnuplot(f->gp, fileno(f->plot.fp), write_plot, &pc);
        if (gs != 0)
            return cli_fail(AC_ECANTCREAT, "--plot %s: gnuplot (%s) failed (status %d)", a->plot,
                            f->gp, gs);
        struct stat sb; /* gnuplot does not report every failed write */
        if (fstat(fileno(f->plot.fp), &sb) != 0 || sb.st_size == 0)
            return cli_fail(AC_ECANTCREAT, "--plot %s: gnuplot (%s) wrote nothing", a->plot,
                            f->gp);
    }
    if (a->csv) {
        cond_write_csv(f->csv.fp, a, res, a->nh);
        if ((st = ac_atomic_commit(&f->csv, &err)))
            return cli_fail_err(&err);
    }
    if (a->plot && (st = ac_atomic_commit(&f->plot, &err)))
        return cli_fail_err(&err);
    if (a->common.json) {
        ac_json *j = cli_json_stdout();
        cond_write_json(j, a, res, a->nh, wall, threads, cert);
        if ((st = cli_json_finish(j)))
            return st;
    } else {
        cond_print_text(a, res, a->nh, wall, threads, cert);
    }
    return AC_OK;
}

int cmd_condition(int argc, char **argv)
{
    cond_args a;
    cond_files files;
    int st;
    ac_cond_result *res = NULL;
    size_t nres = 0;
    /* --model: trained heads (condition_model.c) */
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--model") == 0 || strncmp(argv[i], "--model=", 8) == 0)
            return cmd_condition_model(argc, argv);
    memset(&files, 0, sizeof files);
    if ((st = parse_args(&a, argc, argv))) {
        free(a.words);
        free(a.merge);
        return st;
    }
    cli_common_apply(&a.common);
    cli_set_flags(cond_flags);
    int threads = a.o.threads;
#ifdef _OPENMP
    if (threads <= 0)
        threads = omp_get_max_threads();
#else
    threads = 1;
#endif
    if ((st = prepare(&a, &files)))
        goto out;
    res = calloc(a.nh, sizeof *res);
    if (!res) {
        st = cli_fail(AC_EINTERNAL, "out of memory");
        goto out;
    }
    double wall = 0;
    if (a.shard_k) {
        st = cond_run_shard(&a, res, &nres);
        goto out;
    }
    if ((st = a.nmerge ? cond_merge_all(&a, res, &nres, &wall) : run_all(&a, res, &nres, &wall)))
        goto out;
    /* the certificate of claim C over every h */
    ac_cert cert;
    ac_cond_certificate(&cert, res, a.nh, &a.o, wall);
    if ((st = write_outputs(&a, res, &files, wall, threads, &cert)))
        goto out;
    st = cli_exit_of(cert.verdict);
out:
    ac_atomic_abort(&files.csv);
    ac_atomic_abort(&files.plot);
    for (size_t i = 0; i < nres; i++)
        ac_cond_result_free(&res[i]);
    free(res);
    free(a.words);
    free(a.merge);
    return st;
}
