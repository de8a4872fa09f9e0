/* cmd_condition.c — `attncheck condition`: Theorem 3.2 of Saratchandran et
 * al. (2025), sampled condition numbers of the multi-head block against
 * every prediction (attncheck/condition.h, attncheck/rmt.h). */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "attncheck/condition.h"
#include "attncheck/fileio.h"
#include "attncheck/interval.h"
#include "cli.h"

const char cmd_condition_help[] =
    "Usage: attncheck condition [OPTIONS]\n"
    "\n"
    "Theorem 3.2 (Saratchandran et al. 2025): the multi-head block\n"
    "A = [A_1 ... A_h] (N x D, D = h d, A_i i.i.d. Gaussian) has\n"
    "kappa(A) = sigma_1/sigma_min ~ (sqrt D + sqrt N)/(sqrt D - sqrt N) -> 1 as h\n"
    "grows.  Samples kappa for each h and compares it with every prediction:\n"
    "first order (the paper's eq. 6), Tracy-Widom finite-size correction and\n"
    "5-95% band, the rigorous Gordon bounds, Edelman's law at D = N.\n"
    "All statistics are estimates; --certify adds rigorous enclosures and decides\n"
    "the claim C: every sampled block has full rank and every reported kappa is\n"
    "within rtol of the exact kappa of its block.\n"
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
    "Output:\n"
    "  --json            print one JSON object (verdict, certificate, results)\n"
    "  --csv FILE        one row per h: statistics, predictions, errors, routes\n"
    "  --plot FILE       kappa against h (.svg, .png or .pdf) with gnuplot\n"
    "  --trace           print one line per sample\n"
    "  --threads N       number of threads (OpenMP; default: all cores)\n"
    "  -h, --help        show this help\n"
    "\n"
    "Exit status: 0 proved, 1 refuted, 2 undecided (always without --certify: no\n"
    "claim is certified), 64 usage error, 65 bad input data, 66 cannot open input,\n"
    "70 internal error, 73 cannot create output (also: --plot without gnuplot).\n";

enum {
    OPT_HEADS = 256, OPT_SEQ, OPT_HEADDIM, OPT_EMBED, OPT_MODE, OPT_INPUTDIM, OPT_TRIALS,
    OPT_SEED, OPT_RTOL, OPT_MAXPREC, OPT_CERTIFY, OPT_SPECTRUM, OPT_BINS, OPT_JSON, OPT_CSV,
    OPT_PLOT, OPT_TRACE, OPT_THREADS
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
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

#define MAX_HEADS_LIST 64
#define MAX_DIM ((size_t)1 << 24)

typedef struct {
    size_t heads[MAX_HEADS_LIST], dims[MAX_HEADS_LIST], nh;
    size_t d, embed;
    int have_d, have_embed;
    const char *csv, *plot;
    int trace;
    ac_cond_opts o;
    cli_common common;
} cond_args;

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

static const char *plot_terminal(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (!dot)
        return NULL;
    if (strcmp(dot, ".svg") == 0)
        return "svg size 900,620 dynamic enhanced font 'Helvetica,13' background rgb 'white'";
    if (strcmp(dot, ".png") == 0)
        return "pngcairo size 1000,700 enhanced font 'Helvetica,12'";
    if (strcmp(dot, ".pdf") == 0)
        return "pdfcairo size 7in,4.8in enhanced font 'Helvetica,11'";
    return NULL;
}

/* The gnuplot program: $ATTNCHECK_GNUPLOT, else the one found by configure,
 * searched in PATH when it has no slash.  NULL if not executable. */
static const char *find_gnuplot(char *buf, size_t n)
{
    const char *g = getenv("ATTNCHECK_GNUPLOT");
    if (!g || !*g)
        g = GNUPLOT_DEFAULT;
    if (strchr(g, '/'))
        return access(g, X_OK) == 0 ? g : NULL;
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    while (*path) {
        const char *c = strchr(path, ':');
        size_t len = c ? (size_t)(c - path) : strlen(path);
        if (len > 0 && len + strlen(g) + 2 < n) {
            memcpy(buf, path, len);
            buf[len] = '/';
            strcpy(buf + len + 1, g);
            if (access(buf, X_OK) == 0)
                return buf;
        }
        if (!c)
            break;
        path = c + 1;
    }
    return NULL;
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
        case ':': return cli_usage("option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage("unknown option '%s'", argv[optind - 1]);
        }
        if (st)
            return st;
    }
    if (optind < argc)
        return cli_usage("unexpected argument '%s'", argv[optind]);
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
    if (a->plot && !plot_terminal(a->plot))
        return cli_usage("--plot %s: the file name must end in .svg, .png or .pdf", a->plot);
    a->o.max_prec = a->common.max_prec;
    a->o.sched = ac_schedule_upto(a->common.max_prec);
    a->o.threads = a->common.threads;
    return AC_OK;
}

/* ---- progress ------------------------------------------------------------------ */

typedef struct {
    int on;
    size_t idx, nh, h;
    double last;
    int drawn;
} progress_state;

static void progress_cb(void *ctx, size_t done, size_t total)
{
    progress_state *p = ctx;
    double t = ac_seconds();
    if (!p->on || (done < total && t - p->last < 0.1))
        return;
    p->last = t;
    fprintf(stderr, "\rattncheck condition: h = %zu (%zu of %zu): %zu/%zu samples", p->h,
            p->idx + 1, p->nh, done, total);
    fflush(stderr);
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

/* ---- formatting -------------------------------------------------------------------- */

/* %.4g, "-" for NaN, "inf" */
static const char *fg(char *b, size_t n, double x)
{
    if (x != x)
        snprintf(b, n, "-");
    else if (isinf(x))
        snprintf(b, n, x > 0 ? "inf" : "-inf");
    else
        snprintf(b, n, "%.4g", x);
    return b;
}

/* a standard error: two digits */
static const char *fse(char *b, size_t n, double x)
{
    if (x != x)
        snprintf(b, n, "-");
    else
        snprintf(b, n, "%.2g", x);
    return b;
}

/* relative error as a signed percentage */
static const char *fpct(char *b, size_t n, double x)
{
    if (x != x)
        snprintf(b, n, "-");
    else
        snprintf(b, n, "%+.2f%%", 100 * x);
    return b;
}

static int is_square(const ac_cond_result *r)
{
    return r->D == r->N;
}

static void print_text(const cond_args *a, ac_cond_result *res, size_t nh, double wall,
                       int threads, const ac_cert *cert)
{
    char b[8][40];
    const ac_cond_opts *o = &a->o;
    printf("attncheck condition: Theorem 3.2, kappa of A = [A_1 ... A_h], N = %zu, ", o->N);
    if (a->have_embed)
        printf("D = %zu (d = D/h)\n", a->embed);
    else
        printf("d = %zu (D = h d)\n", a->d);
    if (o->mode == AC_COND_IID)
        printf("blocks: iid N(0,1)");
    else if (o->input_dim)
        printf("blocks: attention heads, X N x %zu Gaussian, N(0,1/E) projections", o->input_dim);
    else
        printf("blocks: attention heads, X N x D Gaussian, N(0,1/E) projections");
    printf("; %zu trials per h; seed %llu; rtol %s\n\n", o->trials, (unsigned long long)o->seed,
           fg(b[0], sizeof b[0], o->rtol));

    printf("samples (estimates; at D = N the mean is not reported: E kappa = inf)\n");
    printf("%5s %7s %-6s %9s %8s %9s %8s %9s %9s %8s %6s %5s %5s\n", "h", "D", "regime", "mean",
           "+-se", "median", "sd", "q05", "q95", "E log k", "gram", "svd", "mpfr");
    for (size_t i = 0; i < nh; i++) {
        const ac_cond_result *r = &res[i];
        int sq = is_square(r);
        printf("%5zu %7zu %-6s %9s %8s %9s %8s %9s %9s %8.4f %6zu %5zu %5zu\n", r->h, r->D,
               ac_rmt_regime_name(r->pred.regime), sq ? "-" : fg(b[0], 40, r->st.mean),
               sq ? "-" : fse(b[1], 40, r->st.se_mean), fg(b[2], 40, r->st.median),
               sq ? "-" : fg(b[3], 40, r->st.sd), fg(b[4], 40, r->st.q05),
               fg(b[5], 40, r->st.q95), r->st.elog, r->n_route[0], r->n_route[1], r->n_route[2]);
    }

    printf("\npredictions (relative error: first order and TW point vs the mean, TW median vs the "
           "median)\n");
    printf("%5s %7s  %-18s %-18s %-18s %-26s %s\n", "h", "D", "first order", "TW point",
           "TW median", "TW 5-95% band (coverage)", "Gordon95 (above)");
    for (size_t i = 0; i < nh; i++) {
        const ac_cond_result *r = &res[i];
        const ac_rmt_pred *p = &r->pred;
        char c1[64], c2[64], c3[64], c4[80], c5[64];
        if (is_square(r)) {
            printf("%5zu %7zu  %-18s Edelman (D = N): median %s (%s), E log k %.4f (%+.3f), "
                   "5-95%% [%s, %s] (%.0f%%)\n",
                   r->h, r->D, "inf", fg(b[0], 40, p->edelman_median),
                   fpct(b[1], 40, r->err_edelman_median), p->edelman_elog, r->diff_edelman_elog,
                   fg(b[2], 40, p->edelman_q05), fg(b[3], 40, p->edelman_q95),
                   100 * r->edelman_coverage);
            continue;
        }
        snprintf(c1, sizeof c1, "%s (%s)", fg(b[0], 40, p->first_order),
                 fpct(b[1], 40, r->err_first_order));
        if (isnan(p->tw_point)) {
            snprintf(c2, sizeof c2, "-");
            snprintf(c3, sizeof c3, "-");
            snprintf(c4, sizeof c4, "-");
        } else {
            snprintf(c2, sizeof c2, "%s (%s)", fg(b[2], 40, p->tw_point),
                     fpct(b[3], 40, r->err_tw_point));
            snprintf(c3, sizeof c3, "%s (%s)", fg(b[4], 40, p->tw_median),
                     fpct(b[5], 40, r->err_tw_median));
            snprintf(c4, sizeof c4, "[%s, %s] (%3.0f%%)", fg(b[6], 40, p->tw_q05),
                     fg(b[7], 40, p->tw_q95), 100 * r->tw_coverage);
        }
        snprintf(c5, sizeof c5, "%s (%.0f%%)", fg(b[0], 40, p->gordon_kappa95),
                 100 * r->gordon_exceed);
        printf("%5zu %7zu  %-18s %-18s %-18s %-26s %s%s\n", r->h, r->D, c1, c2, c3, c4, c5,
               r->pred.regime == AC_REGIME_SQUARE ? "  (D~N: unreliable)" : "");
    }

    if (o->mode == AC_COND_IID) {
        printf("\nsingular values against the Gordon bounds (E sigma_1 <= sqrt M + sqrt m, "
               "E sigma_min >= sqrt M - sqrt m)\n");
        printf("%5s %7s %12s %10s %12s %10s\n", "h", "D", "mean sig_1", "<= bound", "mean sig_min",
               ">= bound");
        for (size_t i = 0; i < nh; i++) {
            const ac_cond_result *r = &res[i];
            printf("%5zu %7zu %12.5g %10.5g %12.5g %10.5g\n", r->h, r->D, r->st.mean_sigma1,
                   r->pred.gordon_smax_hi, r->st.mean_sigmin, r->pred.gordon_smin_lo);
        }
    }

    if (o->spectrum) {
        printf("\nspectrum of (1/D) A A^T against Marchenko-Pastur (y = N/D)%s\n",
               o->mode == AC_COND_ATTENTION ? ", divided by the mean square entry" : "");
        for (size_t i = 0; i < nh; i++) {
            const ac_cond_result *r = &res[i];
            double y = (double)r->N / (double)r->D, lo, hi;
            ac_mp_edges(y, &lo, &hi);
            printf("h = %zu, D = %zu: y = %.4g, support [%.4g, %.4g], KS distance %.4f "
                   "(%zu eigenvalues)\n",
                   r->h, r->D, y, lo, hi, r->ks, r->trials * r->m);
            double mx = 0;
            for (size_t k = 0; k < r->bins; k++)
                mx = fmax(mx, fmax(r->hist_density[k], r->hist_mp[k]));
            for (size_t k = 0; k < r->bins; k++) {
                int w = mx > 0 ? (int)lround(30 * r->hist_density[k] / mx) : 0;
                int wm = mx > 0 ? (int)lround(30 * r->hist_mp[k] / mx) : 0;
                char bar[40];
                for (int q = 0; q < 31; q++)
                    bar[q] = q < w ? '#' : ' ';
                if (wm >= 0 && wm <= 30)
                    bar[wm] = '|';
                bar[31] = 0;
                for (int q = 30; q >= 0 && bar[q] == ' '; q--)
                    bar[q] = 0;
                printf("   [%9.4g, %9.4g)  %9.4f  MP %9.4f  %s\n", r->hist_lo[k], r->hist_hi[k],
                       r->hist_density[k], r->hist_mp[k], bar);
            }
        }
    }

    if (o->certify) {
        printf("\ncertified (rigorous enclosures for the seeded sample; dev = |kappa/kappa~ - 1|)\n");
        printf("%5s %7s %-9s %7s %7s %9s %-28s %-28s %-24s %s\n", "h", "D", "verdict", "proved",
               "undec.", "dev <=", "mean in", "median in", "first order err in",
               "TW point err in");
        for (size_t i = 0; i < nh; i++) {
            const ac_cond_result *r = &res[i];
            const ac_cond_certstats *c = &r->cst;
            char m1[64], m2[64], m3[64], m4[64];
            if (c->valid) {
                if (is_square(r))
                    snprintf(m1, sizeof m1, "- (E kappa = inf)");
                else
                    snprintf(m1, sizeof m1, "[%.10g, %.10g]", c->mean_lo, c->mean_hi);
                snprintf(m2, sizeof m2, "[%.10g, %.10g]", c->median_lo, c->median_hi);
                if (isnan(c->err_tw_point_lo))
                    snprintf(m3, sizeof m3, "-");
                else
                    snprintf(m3, sizeof m3, "[%+.4f%%, %+.4f%%]", 100 * c->err_tw_point_lo,
                             100 * c->err_tw_point_hi);
                if (isnan(c->err_first_order_lo))
                    snprintf(m4, sizeof m4, "-");
                else
                    snprintf(m4, sizeof m4, "[%+.4f%%, %+.4f%%]", 100 * c->err_first_order_lo,
                             100 * c->err_first_order_hi);
            } else {
                snprintf(m1, sizeof m1, "- (some sample unbounded)");
                snprintf(m2, sizeof m2, "-");
                snprintf(m3, sizeof m3, "-");
                snprintf(m4, sizeof m4, "-");
            }
            printf("%5zu %7zu %-9s %7zu %7zu %9s %-28s %-28s %-24s %s\n", r->h, r->D,
                   ac_verdict_name(r->verdict), r->n_proved, r->n_undecided,
                   fg(b[0], 40, r->dev_hi), m1, m2, m4, m3);
        }
    }

    /* findings */
    printf("\nfindings\n");
    {
        double lo = INFINITY, hi = -INFINITY, twmax = 0;
        size_t hlo = 0, hhi = 0, ntw = 0;
        for (size_t i = 0; i < nh; i++) {
            const ac_cond_result *r = &res[i];
            if (!isnan(r->err_first_order) && isfinite(r->err_first_order)) {
                if (r->err_first_order < lo) {
                    lo = r->err_first_order;
                    hlo = r->h;
                }
                if (r->err_first_order > hi) {
                    hi = r->err_first_order;
                    hhi = r->h;
                }
            }
            if (!isnan(r->err_tw_point) && r->pred.regime != AC_REGIME_SQUARE) {
                twmax = fmax(twmax, fabs(r->err_tw_point));
                ntw++;
            }
        }
        if (isfinite(lo))
            printf("  first order (paper, eq. 6): error %s (h = %zu) to %s (h = %zu) against the "
                   "sample mean%s\n",
                   fpct(b[0], 40, lo), hlo, fpct(b[1], 40, hi), hhi,
                   lo > 0 ? "; biased high at every h" : "");
        if (ntw)
            printf("  Tracy-Widom point estimate: |error| <= %.2f%% for every h with |D - N| >= "
                   "%d\n",
                   100 * twmax, AC_RMT_SQUARE_BAND);
        for (size_t i = 0; i < nh; i++) {
            const ac_cond_result *r = &res[i];
            if (is_square(r))
                printf("  D = N (h = %zu): first order is infinite; Edelman's median %s vs sample "
                       "%s, E log kappa %.4f vs %.4f\n",
                       r->h, fg(b[0], 40, r->pred.edelman_median), fg(b[1], 40, r->st.median),
                       r->pred.edelman_elog, r->st.elog);
        }
        const ac_cond_result *last = &res[nh - 1];
        printf("  largest h = %zu: median kappa %s (first order %s, TW %s)\n", last->h,
               fg(b[0], 40, last->st.median), fg(b[1], 40, last->pred.first_order),
               fg(b[2], 40, last->pred.tw_median));
        size_t nm = 0, nu = 0;
        for (size_t i = 0; i < nh; i++) {
            nm += res[i].n_route[AC_COND_MPFR];
            nu += res[i].n_unresolved;
        }
        printf("  high-precision (MPFR) fallback: %zu sample%s", nm, nm == 1 ? "" : "s");
        if (nu)
            printf(", %zu unresolved at %ld bits (kappa reported as inf)", nu, o->max_prec);
        printf("\n");
    }

    double ts = 0, tr = 0, tv = 0, tm = 0, tc = 0, fl = 0;
    for (size_t i = 0; i < nh; i++) {
        ts += res[i].t_sample;
        tr += res[i].t_reduce;
        tv += res[i].t_solve;
        tm += res[i].t_mpfr;
        tc += res[i].t_certify;
        fl += res[i].flops;
    }
    printf("\ntime       %.3f s on %d thread%s; thread-seconds: sampling %.3f, reduction %.3f, "
           "SVD/eigen %.3f, MPFR %.3f, certify %.3f; %.3g GFLOP, %.1f GFLOP/s\n",
           wall, threads, threads == 1 ? "" : "s", ts, tr, tv, tm, tc, fl * 1e-9,
           wall > 0 ? fl * 1e-9 / wall : 0.0);
    char sb[64];
    if (o->certify)
        printf("verdict    %s: dev = max |kappa/kappa~ - 1| in [%s, %s] <= rtol = %s, every "
               "block full rank  [%s]\n",
               ac_verdict_name(cert->verdict), fg(b[0], 40, cert->lo), fg(b[1], 40, cert->hi),
               fg(b[2], 40, o->rtol), cli_stage_name(sb, sizeof sb, cert->stage, cert->prec));
    else
        printf("verdict    UNDECIDED: claim C not checked (every number above is an estimate; "
               "add --certify)\n");
}

/* ---- JSON ------------------------------------------------------------------------------ */

static void jnum_or_null(ac_json *j, const char *k, double x)
{
    ac_json_key(j, k);
    if (x != x)
        ac_json_null(j);
    else
        ac_json_number(j, x);
}

static void json_result(ac_json *j, const ac_cond_result *r, int certify)
{
    const ac_rmt_pred *p = &r->pred;
    int sq = is_square(r);
    ac_json_begin_object(j);
    ac_json_kv_int(j, "h", (long long)r->h);
    ac_json_kv_int(j, "d", (long long)r->d);
    ac_json_kv_int(j, "D", (long long)r->D);
    ac_json_kv_int(j, "N", (long long)r->N);
    if (r->mode == AC_COND_ATTENTION)
        ac_json_kv_int(j, "E", (long long)r->E);
    ac_json_kv_int(j, "trials", (long long)r->trials);
    ac_json_kv_string(j, "regime", ac_rmt_regime_name(p->regime));
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
    ac_json_key(j, "routes");
    ac_json_begin_object(j);
    ac_json_kv_int(j, "gram", (long long)r->n_route[AC_COND_GRAM]);
    ac_json_kv_int(j, "svd", (long long)r->n_route[AC_COND_SVD]);
    ac_json_kv_int(j, "mpfr", (long long)r->n_route[AC_COND_MPFR]);
    ac_json_kv_int(j, "unresolved", (long long)r->n_unresolved);
    ac_json_end_object(j);
    if (r->bins) {
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
    if (certify) {
        const ac_cond_certstats *c = &r->cst;
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
        ac_json_kv_number(j, "dev_lo", r->dev_lo);
        ac_json_kv_number(j, "dev_hi", r->dev_hi);
        ac_json_kv_bool(j, "stats_valid", c->valid);
        if (c->valid) {
#define PAIR(name, lo, hi)                 \
    do {                                   \
        ac_json_key(j, name);              \
        if ((lo) != (lo)) {                \
            ac_json_null(j);               \
        } else {                           \
            ac_json_begin_array(j);        \
            ac_json_number(j, lo);         \
            ac_json_number(j, hi);         \
            ac_json_end_array(j);          \
        }                                  \
    } while (0)
            PAIR("mean", sq ? NAN : c->mean_lo, c->mean_hi);
            PAIR("median", c->median_lo, c->median_hi);
            PAIR("q05", c->q05_lo, c->q05_hi);
            PAIR("q95", c->q95_lo, c->q95_hi);
            PAIR("elog", c->elog_lo, c->elog_hi);
            PAIR("first_order_vs_mean", c->err_first_order_lo, c->err_first_order_hi);
            PAIR("tw_point_vs_mean", c->err_tw_point_lo, c->err_tw_point_hi);
            PAIR("tw_median_vs_median", c->err_tw_median_lo, c->err_tw_median_hi);
            PAIR("edelman_median_vs_median", c->err_edelman_median_lo, c->err_edelman_median_hi);
#undef PAIR
        }
        ac_json_end_object(j);
    }
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
    ac_json_end_object(j);
}

static void write_json(ac_json *j, const cond_args *a, const ac_cond_result *res, size_t nh,
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
    ac_json_key(j, "results");
    ac_json_begin_array(j);
    for (size_t i = 0; i < nh; i++)
        json_result(j, &res[i], o->certify);
    ac_json_end_array(j);
    double ts = 0, tr = 0, tv = 0, tm = 0, tc = 0, fl = 0;
    for (size_t i = 0; i < nh; i++) {
        ts += res[i].t_sample;
        tr += res[i].t_reduce;
        tv += res[i].t_solve;
        tm += res[i].t_mpfr;
        tc += res[i].t_certify;
        fl += res[i].flops;
    }
    ac_json_key(j, "time");
    ac_json_begin_object(j);
    ac_json_kv_number(j, "wall", wall);
    ac_json_kv_number(j, "sampling", ts);
    ac_json_kv_number(j, "reduction", tr);
    ac_json_kv_number(j, "svd", tv);
    ac_json_kv_number(j, "mpfr", tm);
    ac_json_kv_number(j, "certify", tc);
    ac_json_kv_number(j, "gflop", fl * 1e-9);
    ac_json_kv_number(j, "gflop_per_s", wall > 0 ? fl * 1e-9 / wall : 0.0);
    ac_json_end_object(j);
    ac_json_end_object(j);
}

/* ---- CSV ----------------------------------------------------------------------------------- */

static void csv_num(FILE *f, double x)
{
    char buf[AC_FMT_DOUBLE_BUFSIZE];
    ac_fmt_double(buf, sizeof buf, x);
    fprintf(f, ",%s", buf);
}

static void write_csv(FILE *f, const cond_args *a, const ac_cond_result *res, size_t nh)
{
    fputs("h,d,D,N,E,mode,trials,regime,mean,se_mean,median,sd,q05,q95,min,max,elog,se_elog,"
          "mean_sigma1,mean_sigmin,first_order,err_first_order,tw_point,err_tw_point,tw_median,"
          "err_tw_median,tw_q05,tw_q95,tw_coverage,gordon_kappa95,above_gordon,gordon_smax_hi,"
          "gordon_smin_lo,edelman_median,err_edelman_median,edelman_elog,diff_edelman_elog,"
          "edelman_q05,edelman_q95,edelman_coverage,n_gram,n_svd,n_mpfr,n_unresolved,ks,"
          "verdict,n_proved,n_undecided,n_refuted,dev_hi,cert_mean_lo,cert_mean_hi,"
          "cert_median_lo,cert_median_hi,wall\n",
          f);
    for (size_t i = 0; i < nh; i++) {
        const ac_cond_result *r = &res[i];
        const ac_rmt_pred *p = &r->pred;
        int sq = is_square(r);
        fprintf(f, "%zu,%zu,%zu,%zu,%zu,%s,%zu,%s", r->h, r->d, r->D, r->N, r->E,
                ac_cond_mode_name(r->mode), r->trials, ac_rmt_regime_name(p->regime));
        csv_num(f, sq ? NAN : r->st.mean);
        csv_num(f, sq ? NAN : r->st.se_mean);
        csv_num(f, r->st.median);
        csv_num(f, sq ? NAN : r->st.sd);
        csv_num(f, r->st.q05);
        csv_num(f, r->st.q95);
        csv_num(f, r->st.min);
        csv_num(f, r->st.max);
        csv_num(f, r->st.elog);
        csv_num(f, r->st.se_elog);
        csv_num(f, r->st.mean_sigma1);
        csv_num(f, r->st.mean_sigmin);
        csv_num(f, p->first_order);
        csv_num(f, r->err_first_order);
        csv_num(f, p->tw_point);
        csv_num(f, r->err_tw_point);
        csv_num(f, p->tw_median);
        csv_num(f, r->err_tw_median);
        csv_num(f, p->tw_q05);
        csv_num(f, p->tw_q95);
        csv_num(f, r->tw_coverage);
        csv_num(f, p->gordon_kappa95);
        csv_num(f, r->gordon_exceed);
        csv_num(f, p->gordon_smax_hi);
        csv_num(f, p->gordon_smin_lo);
        csv_num(f, p->edelman_median);
        csv_num(f, r->err_edelman_median);
        csv_num(f, p->edelman_elog);
        csv_num(f, r->diff_edelman_elog);
        csv_num(f, p->edelman_q05);
        csv_num(f, p->edelman_q95);
        csv_num(f, r->edelman_coverage);
        fprintf(f, ",%zu,%zu,%zu,%zu", r->n_route[0], r->n_route[1], r->n_route[2],
                r->n_unresolved);
        csv_num(f, r->bins ? r->ks : NAN);
        fprintf(f, ",%s,%zu,%zu,%zu", a->o.certify ? ac_verdict_name(r->verdict) : "",
                r->n_proved, r->n_undecided, r->n_refuted);
        csv_num(f, a->o.certify ? r->dev_hi : NAN);
        int cv = a->o.certify && r->cst.valid;
        csv_num(f, cv && !sq ? r->cst.mean_lo : NAN);
        csv_num(f, cv && !sq ? r->cst.mean_hi : NAN);
        csv_num(f, cv ? r->cst.median_lo : NAN);
        csv_num(f, cv ? r->cst.median_hi : NAN);
        csv_num(f, r->wall);
        fputc('\n', f);
    }
}

/* ---- plot ----------------------------------------------------------------------------------- */

/* gnuplot single-quoted string: a quote is written twice */
static void gp_quote(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        fputc(*s, f);
    }
    fputc('\'', f);
}

static void gp_val(FILE *f, double x)
{
    if (!isfinite(x))
        fputs(" NaN", f);
    else
        fprintf(f, " %.10g", x);
}

static void write_gnuplot_script(FILE *f, const cond_args *a, const ac_cond_result *res,
                                 size_t nh, const char *out)
{
    double ymin = INFINITY, ymax = 0;
    int have_ed = 0, have_tw = 0;
    fprintf(f, "set terminal %s\nset output ", plot_terminal(a->plot));
    gp_quote(f, out);
    /* NaN marks an undefined value: lines break there */
    fputs("\n$data << EOD\n", f);
    for (size_t i = 0; i < nh; i++) {
        const ac_cond_result *r = &res[i];
        const ac_rmt_pred *p = &r->pred;
        fprintf(f, "%zu", r->h);
        gp_val(f, r->st.median);
        gp_val(f, r->st.q05);
        gp_val(f, r->st.q95);
        gp_val(f, p->first_order);
        gp_val(f, p->tw_point);
        gp_val(f, p->tw_q05);
        gp_val(f, p->tw_q95);
        gp_val(f, p->gordon_kappa95);
        gp_val(f, p->edelman_median);
        fputc('\n', f);
        double v[] = {r->st.median, r->st.q05, r->st.q95, p->first_order, p->tw_point,
                      p->edelman_median};
        for (size_t k = 0; k < sizeof v / sizeof *v; k++)
            if (isfinite(v[k]) && v[k] > 0) {
                ymin = fmin(ymin, v[k]);
                ymax = fmax(ymax, v[k]);
            }
        have_ed |= isfinite(p->edelman_median);
        have_tw |= isfinite(p->tw_point);
    }
    fputs("EOD\n", f);
    fprintf(f, "set title 'Theorem 3.2: {/Symbol k}(A), N = %zu, %s, %s, %zu trials per h'\n",
            a->o.N, a->have_embed ? "fixed D" : "fixed d",
            a->o.mode == AC_COND_IID ? "i.i.d. Gaussian blocks" : "attention heads",
            a->o.trials);
    fputs("set xlabel 'heads h'\nset ylabel 'condition number {/Symbol k}'\n"
          "set logscale x 2\nset grid\nset key below maxrows 3 box\n",
          f);
    if (isfinite(ymin) && ymax / ymin > 8)
        fputs("set logscale y\n", f);
    fputs("plot $data using 1:3:4 with filledcurves lc rgb '#c6dbef' title 'sample 5-95%', \\\n"
          "     $data using 1:2 with linespoints pt 7 lw 2 lc rgb '#08519c' title 'sample median', \\\n"
          "     $data using 1:5 with linespoints pt 4 dt 2 lw 2 lc rgb '#d62728' "
          "title 'first order (paper, eq. 6)', \\\n"
          "     $data using 1:9 with lines dt 3 lw 2 lc rgb '#7f7f7f' title 'Gordon 95% bound'",
          f);
    if (have_tw)
        fputs(", \\\n     $data using 1:6 with linespoints pt 6 lw 2 lc rgb '#2ca02c' "
              "title 'Tracy-Widom', \\\n"
              "     $data using 1:7 with lines dt 4 lc rgb '#2ca02c' title 'TW 5-95%', \\\n"
              "     $data using 1:8 with lines dt 4 lc rgb '#2ca02c' notitle",
              f);
    if (have_ed)
        fputs(", \\\n     $data using 1:10 with points pt 5 ps 1.5 lc rgb '#9467bd' "
              "title 'Edelman median (D = N)'",
              f);
    fputs("\nset output\n", f);
}

/* Run gnuplot with the script on its standard input; returns its exit status
 * (or -1 if it could not be started). */
static int run_gnuplot(const char *gp, const cond_args *a, const ac_cond_result *res, size_t nh,
                       const char *out)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fd[0], 0);
        close(fd[0]);
        close(fd[1]);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 1); /* gnuplot prints nothing useful on stdout */
        execl(gp, "gnuplot", (char *)NULL);
        _exit(127);
    }
    close(fd[0]);
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);
    FILE *f = fdopen(fd[1], "w");
    if (f) {
        write_gnuplot_script(f, a, res, nh, out);
        fclose(f);
    } else {
        close(fd[1]);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    signal(SIGPIPE, old);
    if (!WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

/* ---- report rows --------------------------------------------------------------------------- */

static void cond_row(cli_report *rep, const char *claim, const char *instance, ac_verdict expected,
                     ac_verdict verdict, const char *bound, const char *detail, double seconds,
                     int error)
{
    cli_report_row *row = cli_report_add(rep);
    if (!row)
        return;
    snprintf(row->claim, sizeof row->claim, "%s", claim);
    snprintf(row->instance, sizeof row->instance, "%s", instance);
    row->expected = expected;
    row->verdict = verdict;
    snprintf(row->bound, sizeof row->bound, "%s", bound);
    snprintf(row->detail, sizeof row->detail, "%s", detail);
    row->seconds = seconds;
    row->error = error;
}

/* Claim "|pred/stat - 1| <= tol" from the certified enclosure [lo, hi] of pred/stat - 1. */
static ac_verdict within(double lo, double hi, double tol)
{
    if (lo != lo || hi != hi)
        return AC_UNDECIDED;
    double alo = (lo > 0) ? lo : ((hi < 0) ? -hi : 0.0); /* lower bound of |x| */
    double ahi = fmax(fabs(lo), fabs(hi));              /* upper bound of |x| */
    return ac_judge(alo, ahi, AC_LE, tol);
}

void report_rows_condition(cli_report *rep)
{
    ac_cond_opts o;
    ac_err err;
    char inst[96], bound[96], detail[256];
    int quick = rep->quick;
    ac_cond_opts_default(&o);
    o.seed = rep->seed;
    o.certify = 1;
    o.sched = ac_schedule_upto(512);

    /* 1. Lemma 3.3 / claim C on a sweep through every regime */
    {
        size_t N = quick ? 32 : 64, d = quick ? 16 : 32;
        size_t hs[4] = {1, 2, 4, 16};
        o.N = N;
        o.trials = quick ? 8 : 20;
        double t0 = ac_seconds();
        ac_verdict v = AC_PROVED;
        double dev = 0;
        int e = 0;
        for (size_t i = 0; i < 4 && !e; i++) {
            ac_cond_result r;
            ac_err_clear(&err);
            if ((e = ac_cond_run(&r, hs[i], d, &o, &err)))
                break;
            v = ac_verdict_and(v, r.verdict);
            dev = fmax(dev, r.dev_hi);
            ac_cond_result_free(&r);
        }
        snprintf(inst, sizeof inst, "iid N=%zu d=%zu h=1,2,4,16 T=%zu", N, d, o.trials);
        snprintf(bound, sizeof bound, "dev <= %.2g", dev);
        snprintf(detail, sizeof detail, "%.200s",
                 e ? err.msg
                   : "every sampled block has full rank and each reported kappa is within rtol "
                     "of its exact value (claim C)");
        cond_row(rep, "Thm 3.2: kappa certified, full rank", inst, AC_PROVED,
                 e ? AC_UNDECIDED : v, bound, detail, ac_seconds() - t0, e);
    }

    /* 2-3. the prediction check at a default size: first order vs Tracy-Widom */
    {
        size_t N = quick ? 64 : 128, d = quick ? 64 : 64, h = 4;
        o.N = N;
        o.trials = quick ? 60 : 200;
        ac_cond_result r;
        double t0 = ac_seconds();
        ac_err_clear(&err);
        int e = ac_cond_run(&r, h, d, &o, &err);
        double sec = ac_seconds() - t0;
        snprintf(inst, sizeof inst, "iid N=%zu D=%zu T=%zu (seeded sample)", N, h * d,
                 o.trials);
        if (e) {
            cond_row(rep, "Thm 3.2: first order within 2%", inst, AC_REFUTED, AC_UNDECIDED,
                     "error", err.msg, sec, e);
            cond_row(rep, "Thm 3.2: Tracy-Widom within 2%", inst, AC_PROVED, AC_UNDECIDED,
                     "error", err.msg, sec, e);
        } else {
            const ac_cond_certstats *c = &r.cst;
            snprintf(bound, sizeof bound, "[%+.2f,%+.2f]%%", 100 * c->err_first_order_lo,
                     100 * c->err_first_order_hi);
            snprintf(detail, sizeof detail,
                     "first order %.4g vs certified sample mean in [%.6g, %.6g]: biased high "
                     "by %.1f%% (estimate)",
                     r.pred.first_order, c->mean_lo, c->mean_hi, 100 * r.err_first_order);
            cond_row(rep, "Thm 3.2: first order within 2%", inst, AC_REFUTED,
                     within(c->err_first_order_lo, c->err_first_order_hi, 0.02), bound, detail,
                     sec / 2, 0);
            snprintf(bound, sizeof bound, "[%+.2f,%+.2f]%%", 100 * c->err_tw_point_lo,
                     100 * c->err_tw_point_hi);
            snprintf(detail, sizeof detail,
                     "Tracy-Widom %.5g vs certified sample mean in [%.6g, %.6g]", r.pred.tw_point,
                     c->mean_lo, c->mean_hi);
            cond_row(rep, "Thm 3.2: Tracy-Widom within 2%", inst, AC_PROVED,
                     within(c->err_tw_point_lo, c->err_tw_point_hi, 0.02), bound, detail,
                     sec / 2, 0);
            ac_cond_result_free(&r);
        }
    }

    /* 4-5. iid against attention heads */
    {
        size_t N = quick ? 32 : 64, d = quick ? 16 : 32, h1 = 2 * (N / d), h2 = 16 * (N / d);
        o.N = N;
        o.trials = quick ? 10 : 20;
        ac_cond_result ri, a1, a2;
        memset(&ri, 0, sizeof ri);
        memset(&a1, 0, sizeof a1);
        memset(&a2, 0, sizeof a2);
        double t0 = ac_seconds();
        ac_err_clear(&err);
        int e = ac_cond_run(&ri, h2, d, &o, &err);
        o.mode = AC_COND_ATTENTION;
        if (!e)
            e = ac_cond_run(&a1, h1, d, &o, &err);
        if (!e)
            e = ac_cond_run(&a2, h2, d, &o, &err);
        o.mode = AC_COND_IID;
        double sec = ac_seconds() - t0;
        snprintf(inst, sizeof inst, "attention N=%zu d=%zu h=%zu vs %zu T=%zu", N, d, h1, h2,
                 o.trials);
        if (e) {
            cond_row(rep, "Thm 3.2 attention: more h, lower k", inst, AC_PROVED,
                     AC_UNDECIDED, "error", err.msg, sec, e);
        } else {
            /* median_hi(h2) < median_lo(h1) proves the decrease */
            ac_verdict v = (a1.cst.valid && a2.cst.valid)
                               ? ac_judge(ac_sub_dn(a1.cst.median_lo, a2.cst.median_hi),
                                          ac_sub_up(a1.cst.median_hi, a2.cst.median_lo), AC_GT,
                                          0.0)
                               : AC_UNDECIDED;
            snprintf(bound, sizeof bound, "%.3g -> %.3g", a1.st.median, a2.st.median);
            snprintf(detail, sizeof detail,
                     "median kappa of attention blocks: %.4g at h = %zu, %.4g at h = %zu "
                     "(certified enclosures of the seeded sample)",
                     a1.st.median, h1, a2.st.median, h2);
            cond_row(rep, "Thm 3.2 attention: more h, lower k", inst, AC_PROVED, v,
                     bound, detail, sec / 2, 0);
            /* the Gaussian prediction for attention heads: within 25% of the iid median? */
            double lo = ac_sub_dn(ac_div_dn(a2.cst.median_lo, ri.cst.median_hi), 1.0);
            double hi = ac_sub_up(ac_div_up(a2.cst.median_hi, ri.cst.median_lo), 1.0);
            v = (a2.cst.valid && ri.cst.valid) ? within(lo, hi, 0.25) : AC_UNDECIDED;
            snprintf(inst, sizeof inst, "N=%zu D=%zu attention vs iid T=%zu", N, h2 * d,
                     o.trials);
            snprintf(bound, sizeof bound, "ratio %.3g", a2.st.median / ri.st.median);
            snprintf(detail, sizeof detail,
                     "median kappa %.4g (attention) vs %.4g (iid Gaussian, TW %.4g): the Gaussian "
                     "prediction does not describe attention heads",
                     a2.st.median, ri.st.median, ri.pred.tw_median);
            cond_row(rep, "Thm 3.2: attention k within 25% iid", inst, AC_REFUTED, v, bound,
                     detail, sec / 2, 0);
        }
        ac_cond_result_free(&ri);
        ac_cond_result_free(&a1);
        ac_cond_result_free(&a2);
    }
}

/* ---- the command ----------------------------------------------------------------------------- */

int cmd_condition(int argc, char **argv)
{
    cond_args a;
    ac_err err;
    int st;
    ac_cond_result *res = NULL;
    size_t nres = 0;
    ac_atomic csvf, plotf;
    char gpbuf[4096];
    const char *gp = NULL;
    memset(&csvf, 0, sizeof csvf);
    memset(&plotf, 0, sizeof plotf);
    ac_err_clear(&err);
    if ((st = parse_args(&a, argc, argv)))
        return st;
    cli_common_apply(&a.common);
    int threads = a.o.threads;
#ifdef _OPENMP
    if (threads <= 0)
        threads = omp_get_max_threads();
#else
    threads = 1;
#endif

    /* everything that can fail cheaply fails before the sampling starts */
    double need;
    if ((st = ac_cond_memory_need(&a.o, a.heads, a.dims, a.nh, &need, &err)))
        return st == AC_EUSAGE ? cli_usage("%s", err.msg) : cli_fail_err(&err);
    double avail = ac_cond_memory_available();
    if (avail > 0 && need > 0.9 * avail)
        return cli_usage("--trials %zu with these sizes needs %.3g GiB of memory; only %.3g GiB "
                         "are available (reduce --trials, --heads or --spectrum)",
                         a.o.trials, need / 1073741824.0, avail / 1073741824.0);
    if (a.plot) {
        gp = find_gnuplot(gpbuf, sizeof gpbuf);
        if (!gp)
            return cli_fail(AC_ECANTCREAT,
                            "--plot %s: gnuplot not found (install it: apt-get install "
                            "gnuplot-nox, or set ATTNCHECK_GNUPLOT); nothing was computed",
                            a.plot);
        if ((st = ac_atomic_open(&plotf, a.plot, &err)))
            return cli_fail_err(&err);
    }
    if (a.csv && (st = ac_atomic_open(&csvf, a.csv, &err))) {
        ac_atomic_abort(&plotf);
        return cli_fail_err(&err);
    }

    res = calloc(a.nh, sizeof *res);
    if (!res) {
        st = cli_fail(AC_EINTERNAL, "out of memory");
        goto out;
    }
    progress_state prog;
    memset(&prog, 0, sizeof prog);
    prog.on = isatty(2);
    prog.nh = a.nh;
    a.o.progress = progress_cb;
    a.o.progress_ctx = &prog;
    double t0 = ac_seconds();
    for (size_t i = 0; i < a.nh; i++) {
        prog.idx = i;
        prog.h = a.heads[i];
        if ((st = ac_cond_run(&res[i], a.heads[i], a.dims[i], &a.o, &err))) {
            progress_clear(&prog);
            st = cli_fail_err(&err);
            goto out;
        }
        nres++;
        if (a.trace) {
            progress_clear(&prog);
            const ac_cond_result *r = &res[i];
            for (size_t t = 0; t < r->trials; t++) {
                const ac_cond_sample *s = &r->samples[t];
                printf("h = %zu, trial %zu: kappa %.10g (sigma_1 %.10g, sigma_min %.10g), "
                       "route %s%s, relerr <= %.2g",
                       r->h, t, s->kappa, s->sigma1, s->sigmin,
                       ac_cond_route_name((ac_cond_route)s->route), s->resolved ? "" : " unresolved",
                       s->relerr);
                if (s->route == AC_COND_MPFR)
                    printf(", %ld bits", s->prec);
                if (a.o.certify)
                    printf("; %s at stage %d: kappa in [%.12g, %.12g]", ac_verdict_name(s->cert),
                           s->cert_stage, s->kappa_lo, s->kappa_hi);
                printf("\n");
            }
        }
    }
    double wall = ac_seconds() - t0;
    progress_clear(&prog);

    /* the certificate of claim C over every h */
    ac_cert cert;
    {
        double lo = 0, hi = a.o.certify ? 0 : INFINITY;
        int stage = AC_STAGE_NONE;
        long prec = 0;
        for (size_t i = 0; i < a.nh; i++) {
            lo = fmax(lo, res[i].dev_lo);
            hi = fmax(hi, res[i].dev_hi);
            if (res[i].max_stage > stage) {
                stage = res[i].max_stage;
                prec = res[i].max_stage_prec;
            }
        }
        ac_cert_set(&cert, "max over samples of |kappa/kappa~ - 1|", AC_LE, a.o.rtol,
                    a.o.certify ? stage : AC_STAGE_NONE, a.o.certify ? prec : 0, lo, hi,
                    a.o.certify ? "Weyl around a double SVD (stage 0), ball Cholesky of "
                                  "G - s I and Rayleigh quotients (Arb stages)"
                                : "not certified (estimates only)");
        if (a.o.certify)
            cert.verdict = ac_judge(lo, hi, AC_LE, a.o.rtol);
        else
            cert.verdict = AC_UNDECIDED;
        cert.seconds = wall;
    }

    /* the plot first (gnuplot may fail), then both files are committed */
    if (a.plot) {
        int gs = run_gnuplot(gp, &a, res, a.nh, plotf.tmp_path);
        if (gs != 0) {
            st = cli_fail(AC_ECANTCREAT, "--plot %s: gnuplot (%s) failed (status %d)", a.plot, gp,
                          gs);
            goto out;
        }
    }
    if (a.csv) {
        write_csv(csvf.fp, &a, res, a.nh);
        if ((st = ac_atomic_commit(&csvf, &err))) {
            st = cli_fail_err(&err);
            goto out;
        }
    }
    if (a.plot) {
        if ((st = ac_atomic_commit(&plotf, &err))) {
            st = cli_fail_err(&err);
            goto out;
        }
    }
    if (a.common.json) {
        ac_json *j = cli_json_stdout();
        write_json(j, &a, res, a.nh, wall, threads, &cert);
        if ((st = cli_json_finish(j)))
            goto out;
    } else {
        print_text(&a, res, a.nh, wall, threads, &cert);
    }
    st = cli_exit_of(cert.verdict);
out:
    ac_atomic_abort(&csvf);
    ac_atomic_abort(&plotf);
    for (size_t i = 0; i < nres; i++)
        ac_cond_result_free(&res[i]);
    free(res);
    return st;
}
