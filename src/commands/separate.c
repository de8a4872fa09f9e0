/* separate.c — the command separate (attncheck/commands.h): Theorem 2 of
 * paper 1 on one pair of layers (ac_t2_separate), the inclusion F in G
 * (--embed, ac_t2_embed_check), or the theorem on learned weights
 * (--student, ac_learn_t2_students).  The option table, the rules between
 * options, the layers (directories, arrays in memory, generated), the run,
 * the arrays of the result and its exit status; the JSON result is
 * separate_json.c's. */
#include <config.h>

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/commands.h"
#include "attncheck/npy.h"
#include "commands/cmd_impl.h"

#define Q(f) offsetof(ac_sep_request, f)
#define F(f) AC_OPT_FIELD(ac_sep_request, f)
#define S(f) AC_OPT_SET(ac_sep_request, f)
#define A(f) AC_OPT_ARRAY_AT(ac_sep_request, f)
#define NS AC_OPT_NOSET

/* Generated layers hold 4 h hs d doubles; keep them well inside memory. */
#define MAX_DIM 16384.0
/* --student trains every student: smaller limits */
#define STU_MAX_DIM 4096

/* ---- options ---------------------------------------------------------------------- */

/* --student-heads "1,2,4": the head counts (each 1 .. STU_MAX_DIM), at most
 * AC_LEARN_T2_MAX_HEADS of them. */
static int parse_heads(const char *s, size_t *heads, size_t *nheads, ac_err *err)
{
    const char *p = s;
    *nheads = 0;
    while (*p) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p || errno || v == 0 || v > STU_MAX_DIM || (*end && *end != ','))
            return ac_err_set(err, AC_EUSAGE, "--student-heads: '%s' is not a comma-separated "
                              "list of head counts >= 1", s);
        if (*nheads == AC_LEARN_T2_MAX_HEADS)
            return ac_err_set(err, AC_EUSAGE, "--student-heads: at most %d head counts",
                              AC_LEARN_T2_MAX_HEADS);
        heads[(*nheads)++] = (size_t)v;
        p = *end ? end + 1 : end;
        if (*end && !*p)
            return ac_err_set(err, AC_EUSAGE, "--student-heads: '%s' ends with a comma", s);
    }
    if (!*nheads)
        return ac_err_set(err, AC_EUSAGE, "--student-heads: empty list");
    return AC_OK;
}

static int check_heads(const ac_opt *o, const void *q, const char *text, ac_err *err)
{
    size_t heads[AC_LEARN_T2_MAX_HEADS], n;
    (void)o;
    (void)q;
    return parse_heads(text, heads, &n, err);
}

/* The in-memory layers: one library-only option per file of --w-dir and
 * --v-dir (Python's Wq ... Vo). */
#define LAYER_OPT(nm, py, t, W, help_)                                                        \
    {.name = nm, .kind = AC_OPT_STRING, F(W##_file[t]), S(have_##W[t]), \
     .arg = "ARRAY", .flags = AC_OPTF_ARRAY | AC_OPTF_LIBRARY, A(W##_mem[t]),      \
     .pyname = py, .help = help_}

static const ac_opt sep_opts[] = {
    {.name = "v-dir", .kind = AC_OPT_STRING, F(v_dir), .set_offset = NS, .arg = "DIR",
     .group = "Layers (files are float64 .npy stacks over the heads):",
     .help = "g_V from DIR/Vq.npy, Vk.npy, Vv.npy (h, dp, d) and Vo.npy (h, d, dp); default: "
             "generated to satisfy the theorem's conditions"},
    {.name = "w-dir", .kind = AC_OPT_STRING, F(w_dir), .set_offset = NS, .arg = "DIR",
     .help = "f_W from DIR/Wq.npy, Wk.npy, Wv.npy (h, d/h, d) and Wo.npy (h, d, d/h); default: "
             "random Gaussian"},
    LAYER_OPT("wq", "Wq", 0, w, "f_W's Wq (h, d/h, d), in memory (the program: --w-dir)"),
    LAYER_OPT("wk", "Wk", 1, w, "f_W's Wk (h, d/h, d)"),
    LAYER_OPT("wv", "Wv", 2, w, "f_W's Wv (h, d/h, d)"),
    LAYER_OPT("wo", "Wo", 3, w, "f_W's Wo (h, d, d/h)"),
    LAYER_OPT("vq", "Vq", 0, v, "g_V's Vq (h, dp, d), in memory (the program: --v-dir)"),
    LAYER_OPT("vk", "Vk", 1, v, "g_V's Vk (h, dp, d)"),
    LAYER_OPT("vv", "Vv", 2, v, "g_V's Vv (h, dp, d)"),
    LAYER_OPT("vo", "Vo", 3, v, "g_V's Vo (h, d, dp)"),
    {.name = "case", .kind = AC_OPT_LONG, F(kase), S(have_case),
     .min = 1, .max = 3, .arg = "K",
     .help = "build f_W in case K = 1, 2 or 3 (for 2 and 3 a generated g_V has small dyadic "
             "integer entries, so that S_W = S_V holds exactly; case 3 needs dp even)"},
    {.name = "d", .kind = AC_OPT_SIZE, F(d), S(have_d), .min = 1,
     .max = MAX_DIM, .def = "16", .arg = "D", .help = "model width of generated layers"},
    {.name = "h", .kind = AC_OPT_SIZE, F(h), S(have_h), .min = 1,
     .max = MAX_DIM, .def = "4", .arg = "H", .help = "heads"},
    {.name = "dp", .kind = AC_OPT_SIZE, F(dp), S(have_dp), .min = 1,
     .max = MAX_DIM, .def = "8", .arg = "DP", .help = "head size of g_V"},
    {.name = "n", .kind = AC_OPT_SIZE, F(n), S(have_n), .min = 1,
     .max = MAX_DIM, .arg = "N", .help = "tokens, columns of X (default 4; 8 with --student)"},
    {.name = "seed", .kind = AC_OPT_U64, F(seed), .set_offset = NS, .def = "1",
     .arg = "S", .help = "seed of every random draw"},
    {.name = "tries", .kind = AC_OPT_SIZE, F(tries), S(have_tries),
     .min = 1, .max = 1000, .def = "3", .arg = "K", .group = "Search:",
     .help = "generic vectors per construction"},
    {.name = "optimize", .kind = AC_OPT_LONG, F(optimize),
     S(have_optimize), .min = 0, .max = 1000000, .def = "60", .arg = "ITERS",
     .help = "BFGS iterations (GSL multimin) maximising the relative gap ||f-g||_F / (||f||_F + "
             "||g||_F) (default; 0 = off), with at most 5 ITERS + 10 evaluations of the layers "
             "in all"},
    {.name = "max-prec", .kind = AC_OPT_LONG, F(max_prec), .set_offset = NS, .min = 0,
     .max = 1 << 20, .def = "512", .arg = "BITS",
     .help = "highest precision of the ball stages (default; 0 = double precision stage only); "
             "one more stage is added when the logits need more bits"},
    {.name = "embed", .kind = AC_OPT_FLAG, F(embed), .set_offset = NS,
     .group = "Other checks:",
     .help = "the inclusion F in G: build g_V from f_W by padding and rescaling (needs dp >= "
             "d/h; or load it with --v-dir) and check ||g_V(X) - f_W(X)||_F <= tol "
             "||f_W(X)||_F on sample inputs (exact equality head by head when it holds)"},
    {.name = "samples", .kind = AC_OPT_SIZE, F(samples), S(have_samples),
     .min = 1, .max = 100000, .arg = "K",
     .help = "sample inputs of --embed (default 3, at most 1000); with --student the held-out "
             "inputs (default 64)"},
    {.name = "tol", .kind = AC_OPT_DOUBLE, F(tol), S(have_tol), .min = 0,
     .max = 1, .def = "0x1p-26", .def_show = "2^-26 = 1.49e-08", .arg = "T",
     .help = "relative tolerance of both claims: separated means ||f-g||_F > T ||f_W(X)||_F, "
             "--embed checks <= T (default; 0 = any difference)"},
    {.name = "audit", .kind = AC_OPT_FLAG, F(audit), .set_offset = NS,
     .help = "exhibit the three gaps of the paper's proof on this instance: a v != 0 with "
             "{Wo_i Wv_i v} dependent, and (case 3) a v1 with no sign-separating v2~ and a v1 "
             "whose v2~ has Wv_i v2~ = 0"},
    {.name = "student", .kind = AC_OPT_FLAG, F(student), .set_offset = NS,
     .group = "Students (--student: Theorem 2 on learned weights, doc/mathematics.md §4.8):",
     .help = "train standard-head students (h' heads of size d/h') and a fixed-head student (h "
             "heads of size dp) by regression onto g_V on fresh inputs X ~ N(0,1); print per "
             "student the held-out relative error |f-g|^2/|g|^2 (mean +- sd over the seeds), a "
             "certified |f-g|/|g| at its worst held-out X, the ratio to the fixed student, and "
             "the head counts h' for which a standard layer represents g_V exactly (exact "
             "ranks).  Uses --v-dir, --d, --h, --dp, --n (default 8), --seed, --samples "
             "(default 64), --max-prec, --json, --out-dir, --threads and:"},
    {.name = "student-heads", .kind = AC_OPT_STRING, F(student_heads),
     S(have_student_heads), .arg = "L", .check = check_heads,
     .help = "comma-separated h' of the standard students (default h)"},
    {.name = "student-seeds", .kind = AC_OPT_SIZE, F(student_seeds),
     S(have_student_seeds), .min = 1, .max = 100, .def = "3", .arg = "K",
     .help = "seeds per student: --seed .. --seed + K - 1"},
    {.name = "student-steps", .kind = AC_OPT_SIZE, F(student_steps),
     S(have_student_steps), .min = 1, .max = 10000000, .def = "2000", .arg = "N",
     .help = "AdamW steps per student"},
    {.name = "student-lr", .kind = AC_OPT_DOUBLE, F(student_lr),
     S(have_student_lr), .min = 1e-12, .max = 10, .def = "1e-2", .arg = "LR",
     .help = "peak learning rate (default, cosine to LR/10)"},
    {.name = "student-batch", .kind = AC_OPT_SIZE, F(student_batch),
     S(have_student_batch), .min = 1, .max = 65536, .def = "32", .arg = "B",
     .help = "inputs X per step"},
    {.name = "csv", .kind = AC_OPT_STRING, F(csv), .set_offset = NS, .arg = "FILE",
     .flags = AC_OPTF_PROGRAM,
     .help = "--student: the training curves (step, loss, held-out relative error)"},
    {.name = "plot", .kind = AC_OPT_STRING, F(plot), .set_offset = NS, .arg = "FILE",
     .flags = AC_OPTF_PROGRAM, .check = ac_cmd_check_plot,
     .help = "--student: the curves with gnuplot (.svg, .png or .pdf)"},
    {.name = "trace", .kind = AC_OPT_FLAG, F(trace), .set_offset = NS,
     .group = "Output:",
     .help = "print the proof's steps for the case, each with the quantity it claims and its "
             "certified value"},
    {.name = "json", .kind = AC_OPT_FLAG, F(json), .set_offset = NS,
     .flags = AC_OPTF_PROGRAM, .help = "print one JSON object (verdict, certificate, ...)"},
    {.name = "out-dir", .kind = AC_OPT_STRING, F(out_dir), .set_offset = NS,
     .arg = "DIR", .flags = AC_OPTF_PROGRAM,
     .help = "write X.npy (d x n), the parameters used (Wq.npy ..., Vq.npy ...) and "
             "certificate.json (--embed: samples.npy (k, d, n), the sample inputs, instead of "
             "X.npy); with --student: Vq.npy ... (g_V), samples.npy (k, d, n: the held-out X) "
             "and KIND_hH_seedS_Wq.npy ... per trained student"},
    {.name = "threads", .kind = AC_OPT_LONG, F(threads), .set_offset = NS, .min = 1,
     .max = 1024, .arg = "N",
     .help = "threads of the double forward passes of the search (default 1); the rest runs "
             "on one thread, and the result does not depend on N"},
    {0},
};

static const char sep_description[] =
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
    "X is d x n, one column per token; the softmax is over each column.";

static const char sep_epilogue[] =
    "Verdicts: PROVED = separated at the X written, beyond tol (with --embed: the\n"
    "relative deviation is <= tol on every sample, exactly 0 when the heads\n"
    "agree exactly); REFUTED = f_W and g_V are the same function, so no X\n"
    "separates them (with --embed: some sample's relative deviation is\n"
    "certified > tol, which is all it says); UNDECIDED = neither could be\n"
    "certified.\n"
    "\n"
    "Exit status: 0 proved, 1 refuted, 2 undecided, 64 usage error, 65 bad input\n"
    "data, 66 cannot open input, 70 internal error, 73 cannot create output.\n"
    "With --student: 0 when the experiment ran (its outcome is in the table).";

/* ---- the rules between options ------------------------------------------------------ */

static int any4(const int have[4])
{
    return have[0] || have[1] || have[2] || have[3];
}

static int all4(const int have[4])
{
    return have[0] && have[1] && have[2] && have[3];
}

/* the options of the separation of one f_W, refused with --student */
static const char *separation_option(const ac_sep_request *q)
{
    return q->w_dir ? "--w-dir" : any4(q->have_w) ? "Wq" : q->have_case ? "--case"
         : q->have_tries ? "--tries" : q->have_optimize ? "--optimize" : q->embed ? "--embed"
         : q->have_tol ? "--tol" : q->audit ? "--audit" : q->trace ? "--trace" : NULL;
}

static int check_student(const ac_sep_request *q, ac_err *err)
{
    const char *other = separation_option(q);
    if (other)
        return ac_err_set(err, AC_EUSAGE, "%s belongs to the separation of one f_W; it does not "
                          "apply to --student", other);
    const char *names[3] = {"d", "h", "dp"};
    const size_t v[3] = {q->d, q->h, q->dp};
    const int have[3] = {q->have_d, q->have_h, q->have_dp};
    for (int i = 0; i < 3; i++)
        if (have[i] && v[i] > STU_MAX_DIM)
            return ac_err_set(err, AC_EUSAGE, "--%s: %zu is out of range [1, %d]", names[i], v[i],
                              STU_MAX_DIM);
    if (q->have_n && (q->n < 2 || q->n > STU_MAX_DIM))
        return ac_err_set(err, AC_EUSAGE, "--n: %zu is out of range [2, %d]", q->n, STU_MAX_DIM);
    if (!q->v_dir && !any4(q->have_v) && q->dp > q->d)
        return ac_err_set(err, AC_EUSAGE, "--dp %zu exceeds --d %zu", q->dp, q->d);
    return AC_OK;
}

/* the options of --student, refused without it */
static const char *student_option(const ac_sep_request *q)
{
    return q->have_student_heads ? "--student-heads" : q->have_student_seeds ? "--student-seeds"
         : q->have_student_steps ? "--student-steps" : q->have_student_lr ? "--student-lr"
         : q->have_student_batch ? "--student-batch" : q->csv ? "--csv"
         : q->plot ? "--plot" : NULL;
}

static int sep_check(void *qv, ac_err *err)
{
    const ac_sep_request *q = qv;
    for (int l = 0; l < 2; l++) {
        const int *have = l ? q->have_v : q->have_w;
        const char *dir = l ? q->v_dir : q->w_dir;
        const char *L = l ? "V" : "W", *name = l ? "g_V" : "f_W";
        if (any4(have) && !all4(have))
            return ac_err_set(err, AC_EUSAGE, "%sq, %sk, %sv, %so give %s together: give all "
                              "four", L, L, L, L, name);
        if (any4(have) && dir)
            return ac_err_set(err, AC_EUSAGE, "%s is given twice: --%s-dir and the arrays "
                              "%sq ... %so", name, l ? "v" : "w", L, L);
    }
    if (q->student)
        return check_student(q, err);
    const char *stu = student_option(q);
    if (stu)
        return ac_err_set(err, AC_EUSAGE, "%s needs --student", stu);
    if (q->have_samples && q->samples > 1000)
        return ac_err_set(err, AC_EUSAGE, "--samples: %zu is out of range [1, 1000]",
                          q->samples);
    int wgiven = q->w_dir || any4(q->have_w), vgiven = q->v_dir || any4(q->have_v);
    if (q->embed && q->have_case)
        return ac_err_set(err, AC_EUSAGE,
                          "--embed builds g_V from f_W; it cannot be combined with --case");
    if (q->embed && (q->audit || q->trace))
        return ac_err_set(err, AC_EUSAGE, "--audit and --trace concern the separation proof; "
                          "they do not apply to --embed");
    if (q->have_samples && !q->embed)
        return ac_err_set(err, AC_EUSAGE, "--samples sets the sample inputs of --embed");
    if (wgiven && q->have_case)
        return ac_err_set(err, AC_EUSAGE,
                          "--case builds f_W; it cannot be combined with --w-dir");
    if (!vgiven && !wgiven && q->d % q->h)
        return ac_err_set(err, AC_EUSAGE,
                          "--h %zu does not divide --d %zu: f_W needs head size d/h", q->h, q->d);
    return AC_OK;
}

/* ---- the layers ---------------------------------------------------------------------- */

/* A layer given: the directory, or the four arrays (in memory or .npy
 * files); l = 0 f_W, 1 g_V.  *src receives the name of the layer's source
 * in messages (the directory, or "the arrays Wq ... Wo"). */
static int input_layer(ac_mh *L, const ac_sep_request *q, int l, ac_err *err)
{
    static const char *const mem_names[2][4] = {{"Wq", "Wk", "Wv", "Wo"},
                                                {"Vq", "Vk", "Vv", "Vo"}};
    const char *dir = l ? q->v_dir : q->w_dir;
    const char *const *file = l ? q->v_file : q->w_file;
    const ac_array *mem = l ? q->v_mem : q->w_mem;
    if (dir)
        return ac_mh_load_dir(L, dir, l ? 'V' : 'W', err);
    ac_array a[4];
    const char *names[4];
    int st = AC_OK;
    memset(a, 0, sizeof a);
    for (int t = 0; t < 4 && !st; t++) {
        names[t] = mem[t].data ? mem_names[l][t] : file[t];
        if (mem[t].data)
            a[t] = mem[t]; /* a view: not freed below */
        else
            st = ac_npy_read(file[t], &a[t], err);
    }
    if (!st)
        st = ac_mh_from_arrays(L, &a[0], &a[1], &a[2], &a[3], names, err);
    for (int t = 0; t < 4; t++)
        if (!mem[t].data)
            ac_array_free(&a[t]);
    return st;
}

/* The name of a given layer in messages and descriptions. */
static const char *layer_source(const ac_sep_request *q, int l)
{
    const char *dir = l ? q->v_dir : q->w_dir;
    return dir ? dir : l ? "the arrays Vq, Vk, Vv, Vo" : "the arrays Wq, Wk, Wv, Wo";
}

/* g_V given (--v-dir or its arrays), checked against --d, --h, --dp */
static int load_given_v(ac_sep_result *res, const ac_sep_request *q, ac_err *err)
{
    int st = input_layer(&res->V, q, 1, err);
    if (st)
        return st;
    if ((q->have_d && q->d != res->V.d) || (q->have_h && q->h != res->V.h) ||
        (q->have_dp && q->dp != res->V.hs))
        return ac_err_set(err, AC_EUSAGE, "--d/--h/--dp contradict %s (d = %zu, h = %zu, "
                          "dp = %zu)", layer_source(q, 1), res->V.d, res->V.h, res->V.hs);
    snprintf(res->vdesc, sizeof res->vdesc, "loaded from %s", layer_source(q, 1));
    return AC_OK;
}

/* --w-dir, --v-dir (or their arrays): the given layers, checked against
 * --d, --h, --dp */
static int load_given(ac_sep_result *res, const ac_sep_request *q, ac_err *err)
{
    int st;
    if (res->w_given) {
        if ((st = input_layer(&res->W, q, 0, err)))
            return st;
        char name[4096];
        if (q->w_dir)
            snprintf(name, sizeof name, "%s/Wq.npy", q->w_dir);
        else
            snprintf(name, sizeof name, "%s", q->w_mem[0].data ? "Wq" : q->w_file[0]);
        if ((st = ac_t2_validate_w(&res->W, name, err)))
            return st;
        if ((q->have_d && q->d != res->W.d) || (q->have_h && q->h != res->W.h))
            return ac_err_set(err, AC_EUSAGE, "--d/--h contradict %s (d = %zu, h = %zu)",
                              layer_source(q, 0), res->W.d, res->W.h);
        snprintf(res->wdesc, sizeof res->wdesc, "loaded from %s", layer_source(q, 0));
    }
    return res->v_given ? load_given_v(res, q, err) : AC_OK;
}

/* --embed: f_W given or random, g_V given or its embedding (dp) */
static int build_embedding(ac_sep_result *res, const ac_sep_request *q, ac_err *err)
{
    int st;
    if (!res->w_given) {
        size_t d = res->v_given ? res->V.d : q->d, h = res->v_given ? res->V.h : q->h;
        if (d % h)
            return ac_err_set(err, res->v_given ? AC_EDATA : AC_EUSAGE, "%s%sh = %zu does not "
                              "divide d = %zu: f_W needs head size d/h",
                              q->v_dir ? q->v_dir : res->v_given ? "Vq" : "",
                              q->v_dir ? "/Vq.npy: " : res->v_given ? ": " : "", h, d);
        if ((st = ac_t2_random_w(&res->W, d, h, q->seed, err)))
            return st;
        snprintf(res->wdesc, sizeof res->wdesc, "random Gaussian, seed %llu",
                 (unsigned long long)q->seed);
    }
    if (res->v_given) {
        /* a given g_V, checked as it is (e.g. an embedding made elsewhere) */
        snprintf(res->embnote, sizeof res->embnote, "none here: g_V is loaded from %s and "
                 "checked as given", layer_source(q, 1));
        return ac_t2_validate(&res->W, q->w_dir ? q->w_dir : "f_W", &res->V,
                              q->v_dir ? q->v_dir : "g_V", err);
    }
    if ((st = ac_t2_embed(&res->V, &res->W, q->dp, res->embnote, sizeof res->embnote, err)))
        return st;
    snprintf(res->vdesc, sizeof res->vdesc,
             "the embedding of f_W (padding to dp = %zu, query rescaled)", q->dp);
    return AC_OK;
}

/* g_V generated for --case (unless given), f_W built for it (unless given) */
static int build_generated(ac_sep_result *res, const ac_sep_request *q, ac_err *err)
{
    int st;
    if (!res->v_given) {
        size_t d = res->w_given ? res->W.d : q->d, h = res->w_given ? res->W.h : q->h;
        ac_t2_gen kind = ac_t2_gen_for_case((int)q->kase);
        if ((st = ac_t2_generate_v(&res->V, d, h, q->dp, kind, q->seed, err)))
            return st;
        snprintf(res->vdesc, sizeof res->vdesc, "generated (%s), seed %llu",
                 kind == AC_T2_GEN_GAUSSIAN ? "Gaussian, heads sharing U"
                 : kind == AC_T2_GEN_INTEGER ? "small dyadic integers, heads sharing U"
                                             : "small dyadic integers, skew-symmetric shared U",
                 (unsigned long long)q->seed);
    }
    if (res->w_given)
        return AC_OK;
    if ((st = ac_t2_generate_w(&res->W, &res->V, (int)q->kase, q->seed, err))) {
        if (res->v_given) {
            /* name the files the problem is about (the parameters it names, in
             * err->fields, stay for the front end to spell) */
            char m[AC_ERR_MSG_MAX], fields[AC_ERR_FIELDS_MAX];
            snprintf(m, sizeof m, "%s", err->msg);
            snprintf(fields, sizeof fields, "%s", err->fields);
            const char *body = strncmp(m, "g_V: ", 5) == 0 ? m + 5 : m;
            if (q->v_dir)
                ac_err_set_field(err, st, fields, "%s/Vo.npy, Vv.npy, Vk.npy, Vq.npy: %s",
                                 q->v_dir, body);
            else
                ac_err_set_field(err, st, fields, "Vo, Vv, Vk, Vq: %s", body);
        }
        return st;
    }
    if (q->kase)
        snprintf(res->wdesc, sizeof res->wdesc, "built for case %ld, seed %llu", q->kase,
                 (unsigned long long)q->seed);
    else
        snprintf(res->wdesc, sizeof res->wdesc, "random Gaussian, seed %llu",
                 (unsigned long long)q->seed);
    return AC_OK;
}

/* ---- running ------------------------------------------------------------------------- */

/* How this command spells the parameters the notes of the trace name
 * (AC_T2_STEP_FIELDS): the same in the program's output and in Python's
 * result (the one JSON object). */
static const char *const sep_note_flags[] = {"audit", "--audit", NULL};

static void spell_step_notes(ac_t2_step *steps, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ac_err e;
        ac_report_row row;
        if (!steps[i].note[0])
            continue;
        ac_err_clear(&e);
        snprintf(e.msg, sizeof e.msg, "%s", steps[i].note);
        snprintf(e.fields, sizeof e.fields, "%s", AC_T2_STEP_FIELDS);
        ac_report_fail(&row, AC_OK, &e, sep_note_flags); /* the message, spelled */
        snprintf(steps[i].note, sizeof steps[i].note, "%.*s", (int)sizeof steps[i].note - 1,
                 row.detail);
    }
}

/* k inputs (d x n each) as one (k, d, n) array */
static int stack_inputs(ac_array *S, const ac_mat *X, size_t k, size_t d, size_t n, ac_err *err)
{
    size_t shape[3] = {k, d, n};
    int st = ac_array_init(S, 3, shape, err);
    for (size_t s = 0; s < k && !st; s++)
        memcpy(S->data + s * d * n, X[s].data, d * n * sizeof(double));
    return st;
}

static int run_embed(ac_sep_result *res, const ac_sep_request *q, ac_err *err)
{
    ac_schedule sched = ac_schedule_upto(q->max_prec);
    size_t k = res->samples, d = res->W.d, n = res->n;
    int st = ac_t2_embed_check(&res->embed, &res->W, &res->V, n, k, q->seed, q->tol, &sched,
                               err);
    ac_mat *X = st ? NULL : calloc(k, sizeof *X);
    if (!st && !X)
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (size_t s = 0; s < k && !st; s++)
        st = ac_t2_sample_input(&X[s], d, n, q->seed, s, err);
    if (!st)
        st = stack_inputs(&res->inputs, X, k, d, n, err);
    for (size_t s = 0; X && s < k; s++)
        ac_mat_free(&X[s]);
    free(X);
    return st;
}

static int run_separate(ac_sep_result *res, const ac_sep_request *q, ac_err *err)
{
    ac_t2_opts o;
    ac_t2_opts_default(&o);
    o.seed = q->seed;
    o.tries = q->tries;
    o.optimize = (int)q->optimize;
    o.trace = q->trace;
    o.audit = q->audit;
    o.sched = ac_schedule_upto(q->max_prec);
    o.threads = q->threads > 0 ? (int)q->threads : 1;
    o.tol = q->tol;
    o.wname = q->w_dir ? q->w_dir : "f_W";
    o.vname = q->v_dir ? q->v_dir : "g_V";
    int st = ac_t2_separate(&res->t2, &res->W, &res->V, res->n, &o, err);
    if (!st)
        spell_step_notes(res->t2.steps, res->t2.nsteps);
    return st;
}

/* --student: the teacher g_V (given or generated as the separation's), the
 * students, the arrays of the result */
static int run_student(ac_sep_result *res, const ac_sep_request *q, void *hooks, ac_err *err)
{
    const ac_cmd_progress *pr = hooks;
    ac_learn_t2_opts o;
    int st;
    res->mode = AC_SEP_STUDENT;
    if (res->v_given) {
        if ((st = load_given_v(res, q, err)))
            return st;
    } else {
        if ((st = ac_t2_generate_v(&res->V, q->d, q->h, q->dp, AC_T2_GEN_GAUSSIAN, q->seed,
                                   err)))
            return st;
        snprintf(res->vdesc, sizeof res->vdesc, "generated (Gaussian, heads sharing U), seed %llu",
                 (unsigned long long)q->seed);
    }
    ac_learn_t2_opts_default(&o);
    if (q->have_student_heads && (st = parse_heads(q->student_heads, o.heads, &o.nheads, err)))
        return st;
    o.n = res->n;
    o.seeds = q->student_seeds;
    o.steps = q->student_steps;
    o.batch = q->student_batch;
    o.lr = q->student_lr;
    o.samples = res->samples;
    o.seed = q->seed;
    o.sched = ac_schedule_upto(q->max_prec);
    o.progress = pr ? pr->fn : NULL;
    o.progress_ctx = pr ? pr->ctx : NULL;
    if ((st = ac_learn_t2_students(&res->stu, &res->V, &o, err)) ||
        (st = stack_inputs(&res->inputs, res->stu.X, res->stu.samples, res->V.d, res->n, err)))
        return st;
    /* the students' files: KIND_hH_seedS_Wq ... */
    size_t ns = 0;
    for (size_t i = 0; i < res->stu.nrows; i++)
        ns += res->stu.rows[i].nseeds;
    if (!(res->stu_files = calloc(ns ? 4 * ns : 1, sizeof *res->stu_files)))
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (size_t i = 0; i < res->stu.nrows; i++) {
        const ac_learn_t2_row *w = &res->stu.rows[i];
        for (size_t j = 0; j < w->nseeds; j++) {
            char stem[96];
            snprintf(stem, sizeof stem, "%s_h%zu_seed%llu_", w->fixed ? "fixed" : "standard",
                     w->heads, (unsigned long long)(q->seed + j));
            if ((st = ac_mh_files(&res->stu_files[res->nstu_files], &w->layers[j], stem, 'W',
                                  err)))
                return st;
            res->nstu_files += 4;
        }
    }
    return ac_mh_files(res->v_files, &res->V, "", 'V', err);
}

static int sep_run(void *rv, const void *qv, void *hooks, ac_err *err)
{
    ac_sep_result *res = rv;
    const ac_sep_request *q = qv;
    int st;
    ac_cmd_apply_threads(q->threads);
    res->w_given = q->w_dir || any4(q->have_w);
    res->v_given = q->v_dir || any4(q->have_v);
    res->n = q->have_n ? q->n : q->student ? 8 : 4;
    res->samples = q->have_samples ? q->samples : q->student ? 64 : 3;
    if (q->student)
        return run_student(res, q, hooks, err);
    res->mode = q->embed ? AC_SEP_EMBED : AC_SEP_SEPARATE;
    size_t k = q->embed ? res->samples : 0;
    if (!res->w_given && !res->v_given &&
        (st = ac_cmd_memory_check(ac_cmd_mem_separate(q->d, q->h, q->d / q->h, q->dp, res->n, k),
                                  AC_EUSAGE, err, "--d %zu --h %zu --dp %zu --n %zu", q->d, q->h,
                                  q->dp, res->n)))
        return st;
    if ((st = load_given(res, q, err)) ||
        (st = q->embed ? build_embedding(res, q, err) : build_generated(res, q, err)))
        return st;
    if ((res->w_given || res->v_given) &&
        (st = ac_cmd_memory_check(ac_cmd_mem_separate(res->W.d, res->W.h, res->W.hs, res->V.hs,
                                                      res->n, k),
                                  AC_EDATA, err, "the layers of %s (d = %zu)",
                                  layer_source(q, !res->w_given), res->W.d)))
        return st;
    if ((st = q->embed ? run_embed(res, q, err) : run_separate(res, q, err)))
        return st;
    if ((st = ac_mh_files(res->w_files, &res->W, "", 'W', err)))
        return st;
    return ac_mh_files(res->v_files, &res->V, "", 'V', err);
}

/* ---- the arrays, the exit status ------------------------------------------------------ */

static size_t out_file(ac_out_array *out, size_t k, size_t max, const ac_mh_file *f)
{
    if (k < max) {
        memset(&out[k], 0, sizeof out[k]);
        out[k].name = f->name;
        out[k].ndim = f->a.ndim;
        for (size_t i = 0; i < f->a.ndim; i++)
            out[k].shape[i] = f->a.shape[i];
        out[k].data = f->a.data;
    }
    return k + 1;
}

static size_t out_inputs(ac_out_array *out, size_t k, size_t max, const ac_array *a)
{
    if (k < max) {
        memset(&out[k], 0, sizeof out[k]);
        out[k].name = "samples";
        out[k].ndim = a->ndim;
        for (size_t i = 0; i < a->ndim; i++)
            out[k].shape[i] = a->shape[i];
        out[k].data = a->data;
    }
    return k + 1;
}

/* --out-dir and Python: X (the best X of a separation), samples (the sample
 * or held-out inputs), Wq ... Wo, Vq ... Vo (the layers used; --student:
 * the teacher's), and with --student KIND_hH_seedS_Wq ... per student */
static size_t sep_arrays(const void *qv, const void *rv, ac_out_array *out, size_t max)
{
    const ac_sep_result *res = rv;
    size_t k = 0;
    (void)qv;
    if (res->mode == AC_SEP_SEPARATE && res->t2.best.X.data)
        k = ac_cmd_out_mat(out, k, max, "X", &res->t2.best.X);
    if (res->mode != AC_SEP_STUDENT)
        for (int t = 0; t < 4; t++)
            k = out_file(out, k, max, &res->w_files[t]);
    for (int t = 0; t < 4; t++)
        if (res->v_files[t].a.data)
            k = out_file(out, k, max, &res->v_files[t]);
    if (res->inputs.data)
        k = out_inputs(out, k, max, &res->inputs);
    for (size_t i = 0; i < res->nstu_files; i++)
        k = out_file(out, k, max, &res->stu_files[i]);
    return k;
}

static int sep_status(const void *qv, const void *rv)
{
    const ac_sep_result *res = rv;
    (void)qv;
    if (res->mode == AC_SEP_STUDENT)
        return 0; /* a measurement: its outcome is in the table */
    return ac_verdict_status(res->mode == AC_SEP_EMBED ? res->embed.verdict : res->t2.verdict);
}

static void sep_result_free(void *rv)
{
    ac_sep_result *res = rv;
    ac_t2_result_free(&res->t2);
    ac_learn_t2_result_free(&res->stu);
    ac_array_free(&res->inputs);
    ac_mh_files_free(res->w_files);
    ac_mh_files_free(res->v_files);
    for (size_t i = 0; res->stu_files && i < res->nstu_files; i += 4)
        ac_mh_files_free(&res->stu_files[i]);
    free(res->stu_files);
    ac_mh_free(&res->W);
    ac_mh_free(&res->V);
}

const ac_command ac_cmd_separate = {
    .name = "separate",
    .summary = "Theorem 2: find and certify an X where MultiHead f_W differs from "
               "FixedMultiHead g_V",
    .synopsis = "attncheck separate [OPTIONS]",
    .description = sep_description,
    .epilogue = sep_epilogue,
    .opts = sep_opts,
    .request_size = sizeof(ac_sep_request),
    .result_size = sizeof(ac_sep_result),
    .check = sep_check,
    .run = sep_run,
    .write_json = ac_sep_write_json,
    .arrays = sep_arrays,
    .status = sep_status,
    .result_free = sep_result_free,
};
