/* cmd_separate.c — `attncheck separate`: Theorem 2 of paper 1 on one pair of
 * layers.  Parses the options, loads or builds the layers, runs the library
 * (ac_t2_separate or ac_t2_embed_check) and hands the result to the printers
 * (separate_text.c) and writers (separate_json.c). */
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "separate.h"
#include "separate_student.h"

const char cmd_separate_help[] =
    "Usage: attncheck separate [OPTIONS]\n"
    "\n"
    "Theorem 2 (Bhojanapalli et al. 2020): a FixedMultiHead layer g_V (h heads of\n"
    "size dp) with S_V = sum_i Vo_i Vv_i of full rank and Vk_i'Vq_i = U of rank dp\n"
    "for every head differs from every standard MultiHead layer f_W (h heads of\n"
    "size d/h) when n >= 2, d >= dp and h > d/dp: some X has f_W(X) != g_V(X).\n"
    "\"Every f_W\" is the paper's conclusion; the command checks the hypotheses\n"
    "(exactly) and the conclusion for this f_W: it decides whether f_W = g_V as\n"
    "functions (heads grouped by equal logits, value paths summed; exact),\n"
    "classifies f_W into the paper's case 1, 2 or 3 (exactly), builds X by the\n"
    "case's construction, searches all three constructions and maximises the\n"
    "relative gap, and certifies \"separated at X\":\n"
    "||f_W(X) - g_V(X)||_F > tol ||f_W(X)||_F, rigorously.\n"
    "X is d x n, one column per token; the softmax is over each column.\n"
    "\n"
    "Layers (files are float64 .npy stacks over the heads):\n"
    "  --v-dir DIR       g_V from DIR/Vq.npy, Vk.npy, Vv.npy (h, dp, d) and\n"
    "                    Vo.npy (h, d, dp); default: generated to satisfy the\n"
    "                    theorem's conditions\n"
    "  --w-dir DIR       f_W from DIR/Wq.npy, Wk.npy, Wv.npy (h, d/h, d) and\n"
    "                    Wo.npy (h, d, d/h); default: random Gaussian\n"
    "  --case K          build f_W in case K = 1, 2 or 3 (for 2 and 3 a generated\n"
    "                    g_V has small dyadic integer entries, so that S_W = S_V\n"
    "                    holds exactly; case 3 needs dp even)\n"
    "  --d D             model width of generated layers (default 16)\n"
    "  --h H             heads (default 4)\n"
    "  --dp DP           head size of g_V (default 8)\n"
    "  --n N             tokens, columns of X (default 4)\n"
    "  --seed S          seed of every random draw (default 1)\n"
    "Search:\n"
    "  --tries K         generic vectors per construction (default 3)\n"
    "  --optimize ITERS  BFGS iterations (GSL multimin) maximising the relative gap\n"
    "                    ||f-g||_F / (||f||_F + ||g||_F) (default 60; 0 = off), with\n"
    "                    at most 5 ITERS + 10 evaluations of the layers in all\n"
    "  --max-prec BITS   highest precision of the ball stages (default 512;\n"
    "                    0 = double precision stage only); one more stage is\n"
    "                    added when the logits need more bits\n"
    "Other checks:\n"
    "  --embed           the inclusion F in G: build g_V from f_W by padding and\n"
    "                    rescaling (needs dp >= d/h; or load it with --v-dir) and\n"
    "                    check ||g_V(X) - f_W(X)||_F <= tol ||f_W(X)||_F on sample\n"
    "                    inputs (exact equality head by head when it holds)\n"
    "  --samples K       sample inputs of --embed (default 3)\n"
    "  --tol T           relative tolerance of both claims: separated means\n"
    "                    ||f-g||_F > T ||f_W(X)||_F, --embed checks <= T\n"
    "                    (default 2^-26 = 1.49e-08; 0 = any difference)\n"
    "  --audit           exhibit the three gaps of the paper's proof on this\n"
    "                    instance: a v != 0 with {Wo_i Wv_i v} dependent, and\n"
    "                    (case 3) a v1 with no sign-separating v2~ and a v1 whose\n"
    "                    v2~ has Wv_i v2~ = 0\n"
    "Students (--student: Theorem 2 on learned weights, doc/mathematics.md §4.8):\n"
    "  --student         train standard-head students (h' heads of size d/h') and a\n"
    "                    fixed-head student (h heads of size dp) by regression onto\n"
    "                    g_V on fresh inputs X ~ N(0,1); print per student the\n"
    "                    held-out relative error |f-g|^2/|g|^2 (mean +- sd over the\n"
    "                    seeds), a certified |f-g|/|g| at its worst held-out X, the\n"
    "                    ratio to the fixed student, and the head counts h' for which\n"
    "                    a standard layer represents g_V exactly (exact ranks).\n"
    "                    Uses --v-dir, --d, --h, --dp, --n (default 8), --seed,\n"
    "                    --max-prec, --json, --threads and:\n"
    "  --student-heads L comma-separated h' of the standard students (default h)\n"
    "  --student-seeds K seeds per student: --seed .. --seed + K - 1 (default 3)\n"
    "  --student-steps N AdamW steps per student (default 2000)\n"
    "  --student-lr LR   peak learning rate (default 1e-2, cosine to LR/10)\n"
    "  --student-batch B inputs X per step (default 32)\n"
    "  --samples K       held-out inputs (default 64 with --student)\n"
    "  --csv FILE        the training curves (step, loss, held-out relative error)\n"
    "  --plot FILE       the curves with gnuplot (.svg, .png or .pdf)\n"
    "  --out-dir DIR     with --student: Vq.npy ... (g_V), samples.npy (k, d, n: the\n"
    "                    held-out X) and KIND_hH_seedS_Wq.npy ... per trained student\n"
    "Output:\n"
    "  --trace           print the proof's steps for the case, each with the\n"
    "                    quantity it claims and its certified value\n"
    "  --json            print one JSON object (verdict, certificate, ...)\n"
    "  --out-dir DIR     write X.npy (d x n), the parameters used (Wq.npy ...,\n"
    "                    Vq.npy ...) and certificate.json\n"
    "  --threads N       threads of the double forward passes of the search\n"
    "                    (default 1); the rest runs on one thread, and the result\n"
    "                    does not depend on N\n"
    "  -h, --help        show this help\n"
    "\n"
    "Verdicts: PROVED = separated at the X written, beyond tol (with --embed: the\n"
    "relative deviation is <= tol on every sample, exactly 0 when the heads\n"
    "agree exactly); REFUTED = f_W and g_V are the same function, so no X\n"
    "separates them (with --embed: some sample's relative deviation is\n"
    "certified > tol, which is all it says); UNDECIDED = neither could be\n"
    "certified.\n"
    "\n"
    "Exit status: 0 proved, 1 refuted, 2 undecided, 64 usage error, 65 bad input\n"
    "data, 66 cannot open input, 70 internal error, 73 cannot create output.\n"
    "With --student: 0 when the experiment ran (its outcome is in the table).\n";

enum {
    OPT_VDIR = 256, OPT_WDIR, OPT_CASE, OPT_D, OPT_H, OPT_DP, OPT_N, OPT_SEED, OPT_TRIES,
    OPT_OPTIMIZE, OPT_MAXPREC, OPT_EMBED, OPT_SAMPLES, OPT_TOL, OPT_AUDIT, OPT_TRACE, OPT_JSON,
    OPT_OUTDIR, OPT_THREADS
};

static const struct option long_opts[] = {
    {"v-dir", required_argument, NULL, OPT_VDIR},
    {"w-dir", required_argument, NULL, OPT_WDIR},
    {"case", required_argument, NULL, OPT_CASE},
    {"d", required_argument, NULL, OPT_D},
    {"h", required_argument, NULL, OPT_H},
    {"dp", required_argument, NULL, OPT_DP},
    {"n", required_argument, NULL, OPT_N},
    {"seed", required_argument, NULL, OPT_SEED},
    {"tries", required_argument, NULL, OPT_TRIES},
    {"optimize", required_argument, NULL, OPT_OPTIMIZE},
    {"max-prec", required_argument, NULL, OPT_MAXPREC},
    {"embed", no_argument, NULL, OPT_EMBED},
    {"samples", required_argument, NULL, OPT_SAMPLES},
    {"tol", required_argument, NULL, OPT_TOL},
    {"audit", no_argument, NULL, OPT_AUDIT},
    {"trace", no_argument, NULL, OPT_TRACE},
    {"json", no_argument, NULL, OPT_JSON},
    {"out-dir", required_argument, NULL, OPT_OUTDIR},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Generated layers hold 4 h hs d doubles; keep them well inside memory. */
#define MAX_DIM ((size_t)1 << 14)

static int parse_args(sep_args *a, int argc, char **argv)
{
    int c, st;
    memset(a, 0, sizeof *a);
    a->d = 16;
    a->h = 4;
    a->dp = 8;
    a->n = 4;
    a->seed = 1;
    a->tries = 3;
    a->samples = 3;
    a->tol = AC_T2_EMBED_TOL_DEFAULT;
    a->optimize = 60;
    cli_common_init(&a->common);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
        st = AC_OK;
        switch (c) {
        case OPT_VDIR: a->vdir = optarg; break;
        case OPT_WDIR: a->wdir = optarg; break;
        case OPT_CASE: st = cli_parse_int("--case", optarg, 1, 3, &a->kase); break;
        case OPT_D: st = cli_parse_size("--d", optarg, 1, MAX_DIM, &a->d); a->have_d = 1; break;
        case OPT_H: st = cli_parse_size("--h", optarg, 1, MAX_DIM, &a->h); a->have_h = 1; break;
        case OPT_DP: st = cli_parse_size("--dp", optarg, 1, MAX_DIM, &a->dp); a->have_dp = 1; break;
        case OPT_N: st = cli_parse_size("--n", optarg, 1, MAX_DIM, &a->n); break;
        case OPT_SEED: st = cli_parse_u64("--seed", optarg, &a->seed); break;
        case OPT_TRIES: st = cli_parse_size("--tries", optarg, 1, 1000, &a->tries); break;
        case OPT_OPTIMIZE: st = cli_parse_int("--optimize", optarg, 0, 1000000, &a->optimize); break;
        case OPT_MAXPREC: st = cli_parse_int("--max-prec", optarg, 0, 1L << 20, &a->common.max_prec); break;
        case OPT_EMBED: a->embed = 1; break;
        case OPT_SAMPLES:
            st = cli_parse_size("--samples", optarg, 1, 1000, &a->samples);
            a->have_samples = 1;
            break;
        case OPT_TOL:
            st = cli_parse_double("--tol", optarg, 0.0, 1.0, &a->tol);
            a->have_tol = 1;
            break;
        case OPT_AUDIT: a->audit = 1; break;
        case OPT_TRACE: a->common.trace = 1; break;
        case OPT_JSON: a->common.json = 1; break;
        case OPT_OUTDIR: a->common.out_dir = optarg; break;
        case OPT_THREADS: st = cli_parse_threads(optarg, &a->common.threads); break;
        default: return cli_bad_option(c, argv);
        }
        if (st)
            return st;
    }
    if ((st = cli_no_operands(argc, argv)))
        return st;
    if (a->embed && a->kase)
        return cli_usage("--embed builds g_V from f_W; it cannot be combined with --case");
    if (a->embed && (a->audit || a->common.trace))
        return cli_usage("--audit and --trace concern the separation proof; they do not apply to "
                         "--embed");
    if (a->have_samples && !a->embed)
        return cli_usage("--samples sets the sample inputs of --embed");
    if (a->wdir && a->kase)
        return cli_usage("--case builds f_W; it cannot be combined with --w-dir");
    if (!a->vdir && !a->wdir && a->d % a->h)
        return cli_usage("--h %zu does not divide --d %zu: f_W needs head size d/h", a->h, a->d);
    return AC_OK;
}

/* How this command spells the library's parameters (ac_err.fields and the
 * fields of the trace's notes, AC_T2_STEP_FIELDS). */
static const cli_flag sep_flags[] = {
    {"kase", "--case"},
    {NULL, NULL},
};

/* ---- the layers -------------------------------------------------------------- */

/* --w-dir and --v-dir: the given layers, checked against --d, --h, --dp */
static int load_given(const sep_args *a, ac_mh *W, ac_mh *V, char *vdesc, char *wdesc,
                      size_t len, ac_err *err)
{
    char name[4096];
    int st;
    if (a->wdir) {
        if ((st = ac_mh_load_dir(W, a->wdir, 'W', err)))
            return st;
        snprintf(name, sizeof name, "%s/Wq.npy", a->wdir);
        if ((st = ac_t2_validate_w(W, name, err)))
            return st;
        if ((a->have_d && a->d != W->d) || (a->have_h && a->h != W->h))
            return ac_err_set(err, AC_EUSAGE, "--d/--h contradict %s (d = %zu, h = %zu)",
                              a->wdir, W->d, W->h);
        snprintf(wdesc, len, "loaded from %s", a->wdir);
    }
    if (a->vdir) {
        if ((st = ac_mh_load_dir(V, a->vdir, 'V', err)))
            return st;
        if ((a->have_d && a->d != V->d) || (a->have_h && a->h != V->h) ||
            (a->have_dp && a->dp != V->hs))
            return ac_err_set(err, AC_EUSAGE, "--d/--h/--dp contradict %s (d = %zu, h = %zu, "
                              "dp = %zu)", a->vdir, V->d, V->h, V->hs);
        snprintf(vdesc, len, "loaded from %s", a->vdir);
    }
    return AC_OK;
}

/* --embed: f_W given or random, g_V given or its embedding (dp) */
static int build_embedding(const sep_args *a, ac_mh *W, ac_mh *V, char *vdesc, char *wdesc,
                           char *embnote, size_t len, ac_err *err)
{
    int st;
    if (!a->wdir) {
        size_t d = a->vdir ? V->d : a->d, h = a->vdir ? V->h : a->h;
        if (d % h)
            return ac_err_set(err, a->vdir ? AC_EDATA : AC_EUSAGE, "%s%sh = %zu does not "
                              "divide d = %zu: f_W needs head size d/h", a->vdir ? a->vdir : "",
                              a->vdir ? "/Vq.npy: " : "", h, d);
        if ((st = ac_t2_random_w(W, d, h, a->seed, err)))
            return st;
        snprintf(wdesc, len, "random Gaussian, seed %llu", (unsigned long long)a->seed);
    }
    if (a->vdir) {
        /* a given g_V, checked as it is (e.g. an embedding made elsewhere) */
        snprintf(embnote, AC_T2_EMBED_NOTE_LEN, "none here: g_V is loaded from %s and checked as given",
                 a->vdir);
        return ac_t2_validate(W, a->wdir ? a->wdir : "f_W", V, a->vdir, err);
    }
    if ((st = ac_t2_embed(V, W, a->dp, embnote, AC_T2_EMBED_NOTE_LEN, err)))
        return st;
    snprintf(vdesc, len, "the embedding of f_W (padding to dp = %zu, query rescaled)", a->dp);
    return AC_OK;
}

/* g_V generated for --case (unless given), f_W built for it (unless given) */
static int build_generated(const sep_args *a, ac_mh *W, ac_mh *V, char *vdesc, char *wdesc,
                           size_t len, ac_err *err)
{
    int st;
    if (!a->vdir) {
        size_t d = a->wdir ? W->d : a->d, h = a->wdir ? W->h : a->h;
        ac_t2_gen kind = ac_t2_gen_for_case((int)a->kase);
        if ((st = ac_t2_generate_v(V, d, h, a->dp, kind, a->seed, err)))
            return st;
        snprintf(vdesc, len, "generated (%s), seed %llu",
                 kind == AC_T2_GEN_GAUSSIAN ? "Gaussian, heads sharing U"
                 : kind == AC_T2_GEN_INTEGER ? "small dyadic integers, heads sharing U"
                                             : "small dyadic integers, skew-symmetric shared U",
                 (unsigned long long)a->seed);
    }
    if (a->wdir)
        return AC_OK;
    if ((st = ac_t2_generate_w(W, V, (int)a->kase, a->seed, err))) {
        if (a->vdir) {
            /* name the files the problem is about */
            char m[2 * AC_ERR_MSG_MAX];
            cli_err_message(m, sizeof m, err);
            ac_err_set(err, st, "%s/Vo.npy, Vv.npy, Vk.npy, Vq.npy: %s", a->vdir,
                       strncmp(m, "g_V: ", 5) == 0 ? m + 5 : m);
        }
        return st;
    }
    if (a->kase)
        snprintf(wdesc, len, "built for case %ld, seed %llu", a->kase,
                 (unsigned long long)a->seed);
    else
        snprintf(wdesc, len, "random Gaussian, seed %llu", (unsigned long long)a->seed);
    return AC_OK;
}

/* Load or build the two layers.  Descriptions go to vdesc / wdesc.  For the
 * separation their shapes are checked by ac_t2_separate, which names the
 * directories (opts.wname, opts.vname). */
static int load_layers(const sep_args *a, ac_mh *W, ac_mh *V, char *vdesc, char *wdesc,
                       char *embnote, size_t len, ac_err *err)
{
    int st;
    if ((st = load_given(a, W, V, vdesc, wdesc, len, err)))
        return st;
    if (a->embed)
        return build_embedding(a, W, V, vdesc, wdesc, embnote, len, err);
    return build_generated(a, W, V, vdesc, wdesc, len, err);
}

/* ---- running ---------------------------------------------------------------- */

/* The notes of the trace name options by field (AC_T2_STEP_FIELDS): spell
 * them as this command's options. */
static void spell_step_notes(ac_t2_step *steps, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ac_err e;
        char buf[2 * AC_ERR_MSG_MAX];
        if (!steps[i].note[0])
            continue;
        ac_err_clear(&e);
        snprintf(e.msg, sizeof e.msg, "%s", steps[i].note);
        snprintf(e.fields, sizeof e.fields, "%s", AC_T2_STEP_FIELDS);
        snprintf(steps[i].note, sizeof steps[i].note, "%s", cli_err_message(buf, sizeof buf, &e));
    }
}

static int run_embed(const sep_out *c)
{
    const sep_args *a = c->a;
    ac_t2_embed_result e;
    ac_err err;
    ac_schedule sched = cli_schedule(&a->common);
    int st;
    ac_err_clear(&err);
    if ((st = ac_t2_embed_check(&e, c->W, c->V, a->n, a->samples, a->seed, a->tol, &sched, &err)))
        return cli_fail_err(&err);
    sep_out o = *c;
    o.e = &e;
    if (a->common.out_dir) {
        ac_array S;
        memset(&S, 0, sizeof S);
        if ((st = sep_embed_samples(&S, c->W, a->n, a->samples, a->seed, &err)))
            return cli_fail_err(&err);
        st = sep_write_outputs(&o, NULL, &S);
        ac_array_free(&S);
        if (st)
            return st;
    }
    if (a->common.json) {
        ac_json *j = cli_json_stdout();
        sep_json_embed(j, &o);
        if ((st = cli_json_finish(j)))
            return st;
    } else {
        sep_print_embed(&o);
    }
    return cli_exit_of(e.verdict);
}

static int run_separate(const sep_out *c)
{
    const sep_args *a = c->a;
    ac_t2_result r;
    ac_err err;
    ac_t2_opts o;
    int st;
    memset(&r, 0, sizeof r);
    ac_err_clear(&err);
    ac_t2_opts_default(&o);
    o.seed = a->seed;
    o.tries = a->tries;
    o.optimize = (int)a->optimize;
    o.trace = a->common.trace;
    o.audit = a->audit;
    o.sched = cli_schedule(&a->common);
    o.threads = a->common.threads > 0 ? a->common.threads : 1;
    o.tol = a->tol;
    o.wname = a->wdir ? a->wdir : "f_W";
    o.vname = a->vdir ? a->vdir : "g_V";
    if ((st = ac_t2_separate(&r, c->W, c->V, a->n, &o, &err))) {
        st = cli_fail_err(&err);
        goto out;
    }
    spell_step_notes(r.steps, r.nsteps);
    sep_out so = *c;
    so.r = &r;
    if (a->common.out_dir && (st = sep_write_outputs(&so, r.best.X.data ? &r.best.X : NULL, NULL)))
        goto out;
    if (a->common.json) {
        ac_json *j = cli_json_stdout();
        sep_json(j, &so);
        if ((st = cli_json_finish(j)))
            goto out;
    } else {
        sep_print(&so);
    }
    st = cli_exit_of(r.verdict);
out:
    ac_t2_result_free(&r);
    return st;
}

int cmd_separate(int argc, char **argv)
{
    sep_args a;
    ac_mh W = {0}, V = {0};
    ac_err err;
    char vdesc[200] = "", wdesc[200] = "", embnote[AC_T2_EMBED_NOTE_LEN] = "";
    int st;
    ac_err_clear(&err);
    if (sep_student_requested(argc, argv))
        return cmd_separate_student(argc, argv);
    cli_set_flags(sep_flags);
    if ((st = parse_args(&a, argc, argv)))
        return st;
    cli_common_apply(&a.common);
    if ((st = load_layers(&a, &W, &V, vdesc, wdesc, embnote, sizeof vdesc, &err))) {
        st = cli_fail_err(&err);
        goto out;
    }
    sep_out c = {&a, vdesc, wdesc, &W, &V, NULL, NULL, embnote};
    st = a.embed ? run_embed(&c) : run_separate(&c);
out:
    ac_mh_free(&W);
    ac_mh_free(&V);
    return st;
}
