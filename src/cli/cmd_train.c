/* cmd_train.c — `attncheck train`: train the attention stack of nn.h on a
 * task and write checkpoints.  Here: the options, the configuration they
 * give (a task's defaults or a checkpoint's, then the options), and the
 * command; the run is in train_run.c (train_cli.h). */
#include <config.h>

#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/train.h"
#include "cli.h"
#include "plot.h"
#include "train_cli.h"

const char cmd_train_help[] =
    "Usage: attncheck train --task TASK [OPTIONS]\n"
    "\n"
    "Trains an attention stack (double precision, hand-written backward, AdamW)\n"
    "on a task and writes checkpoints NumPy and PyTorch can read.\n"
    "\n"
    "Tasks:\n"
    "  --task fit-p      Theorem 1 on learned weights: learn Wq, Wk (dk x d) so that\n"
    "                    Softmax((Wk X)^T (Wq X)/sqrt(dk)) = P; ends with a certified\n"
    "                    verdict on max|Softmax - P| <= --tol for the learned weights\n"
    "  --task teacher    regress onto the output of a given attention layer\n"
    "  --task listops    the ListOps task of the Long Range Arena (generated)\n"
    "  --task text       character-level language model of a text file\n"
    "Data:\n"
    "  --x FILE          fit-p: X, d x n (one column per token), float64 .npy\n"
    "  --p FILE          fit-p: P, n x n column-stochastic (as for rep-theorem)\n"
    "  --rows            fit-p: the --p file is row-stochastic (PyTorch's layout):\n"
    "                    fit its transpose\n"
    "  --n N, --d D      fit-p: size of the generated X (Gaussian) and P (Dirichlet)\n"
    "                    when --x / --p are not given (default n = 8, d = n)\n"
    "  --dk K            fit-p: head size (default d)\n"
    "  --teacher DIR     teacher: Wq.npy, Wk.npy, Wv.npy (h, s, d) and Wo.npy (h, d, s),\n"
    "                    as written by `attncheck separate` (inputs drawn N(0,1)),\n"
    "                    or X.npy (m, d, n) and Y.npy (m, e, n) pairs\n"
    "  --teacher-stack L teacher: read Lq.npy ... Lo.npy, L = V (the fixed-head\n"
    "                    layer g_V of a `separate` directory; the default when\n"
    "                    Vq.npy exists) or W (the standard layer f_W; the default\n"
    "                    otherwise)\n"
    "  --text FILE       text: any file; its bytes are the characters\n"
    "  --holdout F       fraction held out for evaluation (text, teacher pairs;\n"
    "                    default 0.1)\n"
    "  --listops-depth N, --listops-args N\n"
    "                    listops: operator nesting and arguments (default 10, 10)\n"
    "  --listops-min-len N, --listops-max-len N\n"
    "                    listops: expression length (default seq/4 .. seq-1)\n"
    "Model:\n"
    "  --arch A          transformer (default) or attention (teacher: one bare\n"
    "                    multi-head attention layer, the default for teacher)\n"
    "  --layers L        blocks (default 2)\n"
    "  --width C         width d (default 64)\n"
    "  --heads H         heads (default 4; teacher: the teacher's; fit-p: 1)\n"
    "  --attention K     standard (H heads of size C/H, default) or fixed\n"
    "  --head-dim DP     head size of fixed heads (default C/H); with DP >= C\n"
    "                    the layer runs merged heads (fewer products, same\n"
    "                    function and checkpoints)\n"
    "  --ffn-mult M      feed-forward width M x C (default 4)\n"
    "  --ln P            LayerNorm placement: pre (GPT-2, default) or post (paper 1)\n"
    "  --causal, --no-causal\n"
    "                    causal attention mask (default: on for text only)\n"
    "  --positions P     learned (default with tokens) or none\n"
    "  --pool P          listops: first (the CLS token, default), last or mean\n"
    "  --seq T           tokens per sequence (default 64; listops 128; teacher 8 or\n"
    "                    n of X.npy; fit-p n)\n"
    "  --init-std S      standard deviation of the initial weights (default 0.02;\n"
    "                    <= 0: 1/sqrt(fan-in), the default of teacher and fit-p)\n"
    "Optimisation:\n"
    "  --optimizer O     adamw (default) or bfgs (fit-p only, and its default:\n"
    "                    GSL's BFGS on the whole loss, one iteration per step,\n"
    "                    stopping early when no further progress is possible;\n"
    "                    the learning-rate, AdamW and clipping options do not apply)\n"
    "  --steps N         optimisation steps (default 1000; listops, teacher 2000;\n"
    "                    fit-p 3000)\n"
    "  --batch B         sequences per step (default 32; fit-p 1)\n"
    "  --lr LR           peak learning rate (default 1e-3; teacher 1e-2; fit-p 0.05)\n"
    "  --min-lr LR       learning rate at the last step (default lr/10)\n"
    "  --warmup N        linear warm-up steps (default steps/10)\n"
    "  --schedule S      cosine (default), linear or constant after warm-up\n"
    "  --weight-decay W  AdamW weight decay of the matrices (default 0.01; teacher,\n"
    "                    fit-p 0)\n"
    "  --beta1 B, --beta2 B, --adam-eps E\n"
    "                    AdamW (default 0.9, 0.999, 1e-8)\n"
    "  --clip G          clip the gradient norm at G (default 1; fit-p 0 = off)\n"
    "Run:\n"
    "  --seed S          seed of every random stream (default 1)\n"
    "  --eval-every N    evaluate every N steps and at the end (default steps/10)\n"
    "  --eval-batches N  batches per evaluation (default 4)\n"
    "  --save DIR        write a checkpoint to DIR at the end (atomically)\n"
    "  --save-every N    and every N steps\n"
    "  --resume DIR      continue from the checkpoint DIR, bit-identically\n"
    "  --stop-at STEP    stop after STEP steps (the schedule still spans --steps)\n"
    "  --log FILE        write per-step metrics to FILE (CSV, or JSON lines if FILE\n"
    "                    ends in .jsonl)\n"
    "  --log-format F    csv or jsonl\n"
    "  --plot FILE       loss and evaluation curves of the run (.svg, .png or\n"
    "                    .pdf) with gnuplot\n"
    "  --dump-grads DIR  write the weights, the next batch, its loss and every\n"
    "                    gradient to DIR and stop (for cross-checks)\n"
    "  --tol T           fit-p: tolerance of the certified claim (default 1e-3)\n"
    "  --max-prec BITS   fit-p: highest precision of the ball stages (default 512)\n"
    "  --quiet           no progress bar or evaluation lines\n"
    "  --json            print one JSON object (summary, evaluations, verdict)\n"
    "  --threads N       threads (default: all cores); results do not depend on it\n"
    "  -h, --help        show this help\n"
    "\n"
    "Exit status: 0 trained (fit-p: proved), 1 fit-p refuted, 2 fit-p undecided,\n"
    "64 usage error, 65 bad input data, 66 cannot open input, 70 internal error,\n"
    "73 cannot create output.\n";

enum {
    OPT_TASK = 256, OPT_X, OPT_P, OPT_ROWS, OPT_N, OPT_D, OPT_DK, OPT_TEACHER, OPT_TSTACK, OPT_TEXT, OPT_HOLDOUT,
    OPT_LDEPTH, OPT_LARGS, OPT_LMIN, OPT_LMAX, OPT_ARCH, OPT_LAYERS, OPT_WIDTH, OPT_HEADS,
    OPT_ATTENTION, OPT_HEADDIM, OPT_FFNMULT, OPT_LN, OPT_CAUSAL, OPT_NOCAUSAL, OPT_POSITIONS,
    OPT_POOL, OPT_SEQ, OPT_INITSTD, OPT_STEPS, OPT_BATCH, OPT_LR, OPT_MINLR, OPT_WARMUP,
    OPT_SCHEDULE, OPT_WD, OPT_BETA1, OPT_BETA2, OPT_ADAMEPS, OPT_CLIP, OPT_SEED, OPT_EVALEVERY,
    OPT_EVALBATCHES, OPT_SAVE, OPT_SAVEEVERY, OPT_RESUME, OPT_STOPAT, OPT_LOG, OPT_LOGFORMAT,
    OPT_DUMP, OPT_TOL, OPT_MAXPREC, OPT_QUIET, OPT_JSON, OPT_THREADS, OPT_OPTIMIZER, OPT_PLOT, OPT_COUNT
};

static const struct option long_opts[] = {
    {"task", required_argument, NULL, OPT_TASK},
    {"x", required_argument, NULL, OPT_X},
    {"p", required_argument, NULL, OPT_P},
    {"rows", no_argument, NULL, OPT_ROWS},
    {"n", required_argument, NULL, OPT_N},
    {"d", required_argument, NULL, OPT_D},
    {"dk", required_argument, NULL, OPT_DK},
    {"teacher", required_argument, NULL, OPT_TEACHER},
    {"teacher-stack", required_argument, NULL, OPT_TSTACK},
    {"text", required_argument, NULL, OPT_TEXT},
    {"holdout", required_argument, NULL, OPT_HOLDOUT},
    {"listops-depth", required_argument, NULL, OPT_LDEPTH},
    {"listops-args", required_argument, NULL, OPT_LARGS},
    {"listops-min-len", required_argument, NULL, OPT_LMIN},
    {"listops-max-len", required_argument, NULL, OPT_LMAX},
    {"arch", required_argument, NULL, OPT_ARCH},
    {"layers", required_argument, NULL, OPT_LAYERS},
    {"width", required_argument, NULL, OPT_WIDTH},
    {"heads", required_argument, NULL, OPT_HEADS},
    {"attention", required_argument, NULL, OPT_ATTENTION},
    {"head-dim", required_argument, NULL, OPT_HEADDIM},
    {"ffn-mult", required_argument, NULL, OPT_FFNMULT},
    {"ln", required_argument, NULL, OPT_LN},
    {"causal", no_argument, NULL, OPT_CAUSAL},
    {"no-causal", no_argument, NULL, OPT_NOCAUSAL},
    {"positions", required_argument, NULL, OPT_POSITIONS},
    {"pool", required_argument, NULL, OPT_POOL},
    {"seq", required_argument, NULL, OPT_SEQ},
    {"init-std", required_argument, NULL, OPT_INITSTD},
    {"steps", required_argument, NULL, OPT_STEPS},
    {"batch", required_argument, NULL, OPT_BATCH},
    {"lr", required_argument, NULL, OPT_LR},
    {"min-lr", required_argument, NULL, OPT_MINLR},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"schedule", required_argument, NULL, OPT_SCHEDULE},
    {"weight-decay", required_argument, NULL, OPT_WD},
    {"beta1", required_argument, NULL, OPT_BETA1},
    {"beta2", required_argument, NULL, OPT_BETA2},
    {"adam-eps", required_argument, NULL, OPT_ADAMEPS},
    {"clip", required_argument, NULL, OPT_CLIP},
    {"seed", required_argument, NULL, OPT_SEED},
    {"eval-every", required_argument, NULL, OPT_EVALEVERY},
    {"eval-batches", required_argument, NULL, OPT_EVALBATCHES},
    {"save", required_argument, NULL, OPT_SAVE},
    {"save-every", required_argument, NULL, OPT_SAVEEVERY},
    {"resume", required_argument, NULL, OPT_RESUME},
    {"stop-at", required_argument, NULL, OPT_STOPAT},
    {"log", required_argument, NULL, OPT_LOG},
    {"log-format", required_argument, NULL, OPT_LOGFORMAT},
    {"plot", required_argument, NULL, OPT_PLOT},
    {"dump-grads", required_argument, NULL, OPT_DUMP},
    {"tol", required_argument, NULL, OPT_TOL},
    {"max-prec", required_argument, NULL, OPT_MAXPREC},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"json", no_argument, NULL, OPT_JSON},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"optimizer", required_argument, NULL, OPT_OPTIMIZER},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

#define MAX_SIZE ((size_t)1 << 32)

/* How train spells the fields of the configuration (ac_train_config,
 * ac_nn_config) in messages: the options spelled otherwise than "--" +
 * field, and the fields a checkpoint fixes through another option or the
 * data (checkpoint mismatches name them). */
const cli_flag train_flags[] = {
    {"text_path", "--text"},
    {"teacher_dir", "--teacher"},
    {"x_path", "--x"},
    {"p_path", "--p"},
    {"p_rows", "--rows"},
    {"fitp_n", "--n"},
    {"fitp_d", "--d"},
    {"fitp_dk", "--dk"},
    {"eps", "--adam-eps"},
    {"listops_min", "--listops-min-len"},
    {"listops_max", "--listops-max-len"},
    {"max_seq", "--seq"},
    {"kind", "--attention"},
    {"ffn", "--ffn-mult"},
    {"input", "--arch"},
    {"head", "--task"},
    {"vocab", "the vocabulary"},
    {"in_dim", "the input dimension"},
    {"out_dim", "the number of outputs"},
    {NULL, NULL},
};

/* Options as given (value NULL for flags); applied to a configuration in a
 * second pass, so that a resumed run can apply them to the checkpoint's. */
typedef struct {
    const char *val[OPT_COUNT];
    int given[OPT_COUNT];
    train_run_opts run;
} train_args;

static int collect(train_args *a, int argc, char **argv)
{
    int c;
    memset(a, 0, sizeof *a);
    a->run.tol = 1e-3;
    a->run.max_prec = 512;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
        if (c < 256 || c >= OPT_COUNT)
            return cli_bad_option(c, argv);
        a->val[c] = optarg;
        a->given[c] = 1;
    }
    return cli_no_operands(argc, argv);
}

static int parse_choice(const char *opt, const char *s, const char *const *names, int n, int *out)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return AC_OK;
        }
    char list[160] = "";
    for (int i = 0; i < n; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                 names[i]);
    return cli_usage("%s: '%s' is not one of %s", opt, s, list);
}

static int copy_path(char *dst, const char *opt, const char *s)
{
    if (strlen(s) >= AC_TRAIN_PATH_MAX)
        return cli_usage("%s: path too long", opt);
    strcpy(dst, s);
    return AC_OK;
}

/* Apply the collected options to cfg. */
static int apply(train_args *a, ac_train_config *c)
{
    static const char *const archs[] = {"transformer", "attention"};
    static const char *const kinds[] = {"standard", "fixed"};
    static const char *const lns[] = {"pre", "post"};
    static const char *const poss[] = {"none", "learned"};
    static const char *const pools[] = {"first", "last", "mean"};
    static const char *const scheds[] = {"cosine", "linear", "constant"};
    ac_nn_config *m = &c->model;
    train_run_opts *r = &a->run;
    int st = AC_OK, e;
    size_t mult = 0;
    for (int o = 256; o < OPT_COUNT && !st; o++) {
        if (!a->given[o])
            continue;
        const char *v = a->val[o];
        switch (o) {
        case OPT_TASK: break;
        case OPT_X: st = copy_path(c->x_path, "--x", v); break;
        case OPT_P: st = copy_path(c->p_path, "--p", v); break;
        case OPT_ROWS: c->p_rows = 1; break;
        case OPT_N: st = cli_parse_size("--n", v, 1, 1 << 14, &c->fitp_n); break;
        case OPT_D: st = cli_parse_size("--d", v, 1, 1 << 14, &c->fitp_d); break;
        case OPT_DK: st = cli_parse_size("--dk", v, 1, 1 << 14, &c->fitp_dk); break;
        case OPT_TEACHER: st = copy_path(c->teacher_dir, "--teacher", v); break;
        case OPT_TSTACK:
            if (strcmp(v, "W") && strcmp(v, "V"))
                st = cli_usage("--teacher-stack: '%s' is not W or V", v);
            else
                c->teacher_stack = v[0];
            break;
        case OPT_TEXT: st = copy_path(c->text_path, "--text", v); break;
        case OPT_HOLDOUT: st = cli_parse_double("--holdout", v, 0, 0.99, &c->holdout); break;
        case OPT_LDEPTH: st = cli_parse_size("--listops-depth", v, 1, 64, &c->listops_depth); break;
        case OPT_LARGS: st = cli_parse_size("--listops-args", v, 2, 1000, &c->listops_args); break;
        case OPT_LMIN: st = cli_parse_size("--listops-min-len", v, 1, MAX_SIZE, &c->listops_min); break;
        case OPT_LMAX: st = cli_parse_size("--listops-max-len", v, 1, MAX_SIZE, &c->listops_max); break;
        case OPT_ARCH:
            if (!(st = parse_choice("--arch", v, archs, 2, &e)))
                m->arch = (ac_nn_arch)e;
            break;
        case OPT_LAYERS: st = cli_parse_size("--layers", v, 1, 1024, &m->layers); break;
        case OPT_WIDTH: st = cli_parse_size("--width", v, 1, 1 << 16, &m->width); break;
        case OPT_HEADS: st = cli_parse_size("--heads", v, 1, 4096, &m->heads); break;
        case OPT_ATTENTION:
            if (!(st = parse_choice("--attention", v, kinds, 2, &e)))
                m->kind = (ac_nn_attn_kind)e;
            break;
        case OPT_HEADDIM: st = cli_parse_size("--head-dim", v, 1, 1 << 16, &m->head_dim); break;
        case OPT_FFNMULT: st = cli_parse_size("--ffn-mult", v, 1, 64, &mult); break;
        case OPT_LN:
            if (!(st = parse_choice("--ln", v, lns, 2, &e)))
                m->ln = (ac_nn_ln_place)e;
            break;
        case OPT_CAUSAL: m->causal = 1; break;
        case OPT_NOCAUSAL: m->causal = 0; break;
        case OPT_POSITIONS:
            if (!(st = parse_choice("--positions", v, poss, 2, &e)))
                m->positions = e;
            break;
        case OPT_POOL:
            if (!(st = parse_choice("--pool", v, pools, 3, &e)))
                m->pool = (ac_nn_pool)e;
            break;
        case OPT_SEQ: st = cli_parse_size("--seq", v, 1, 1 << 16, &c->seq); break;
        case OPT_INITSTD: st = cli_parse_double("--init-std", v, -1e3, 1e3, &c->init_std); break;
        case OPT_STEPS: st = cli_parse_size("--steps", v, 1, MAX_SIZE, &c->steps); break;
        case OPT_BATCH: st = cli_parse_size("--batch", v, 1, 1 << 20, &c->batch); break;
        case OPT_LR: st = cli_parse_double("--lr", v, 1e-300, 1e6, &c->lr); break;
        case OPT_MINLR: st = cli_parse_double("--min-lr", v, 0, 1e6, &c->min_lr); break;
        case OPT_WARMUP: st = cli_parse_size("--warmup", v, 0, MAX_SIZE, &c->warmup); break;
        case OPT_SCHEDULE:
            if (!(st = parse_choice("--schedule", v, scheds, 3, &e)))
                c->schedule = (ac_sched_kind)e;
            break;
        case OPT_WD: st = cli_parse_double("--weight-decay", v, 0, 1e6, &c->weight_decay); break;
        case OPT_BETA1: st = cli_parse_double("--beta1", v, 0, 0.999999999, &c->beta1); break;
        case OPT_BETA2: st = cli_parse_double("--beta2", v, 0, 0.999999999, &c->beta2); break;
        case OPT_ADAMEPS: st = cli_parse_double("--adam-eps", v, 1e-300, 1, &c->eps); break;
        case OPT_CLIP: st = cli_parse_double("--clip", v, 0, 1e300, &c->clip); break;
        case OPT_SEED: st = cli_parse_u64("--seed", v, &c->seed); break;
        case OPT_EVALEVERY: st = cli_parse_size("--eval-every", v, 1, MAX_SIZE, &c->eval_every); break;
        case OPT_EVALBATCHES: st = cli_parse_size("--eval-batches", v, 1, 1 << 20, &c->eval_batches); break;
        case OPT_SAVE: r->save = v; break;
        case OPT_SAVEEVERY: st = cli_parse_size("--save-every", v, 1, MAX_SIZE, &r->save_every); break;
        case OPT_RESUME: r->resume = v; break;
        case OPT_STOPAT:
            st = cli_parse_size("--stop-at", v, 1, MAX_SIZE, &r->stop_at);
            r->have_stop = 1;
            break;
        case OPT_LOG: r->log = v; break;
        case OPT_LOGFORMAT: {
            static const char *const fmts[] = {"csv", "jsonl"};
            if (!(st = parse_choice("--log-format", v, fmts, 2, &e)))
                r->log_jsonl = e;
            break;
        }
        case OPT_DUMP: r->dump = v; break;
        case OPT_PLOT:
            if (!cli_plot_terminal(v))
                st = cli_usage("--plot %s: the file name must end in .svg, .png or .pdf", v);
            r->plot = v;
            break;
        case OPT_TOL: st = cli_parse_double("--tol", v, 0, 1, &r->tol); break;
        case OPT_MAXPREC: st = cli_parse_int("--max-prec", v, 0, 1L << 20, &r->max_prec); break;
        case OPT_QUIET: r->quiet = 1; break;
        case OPT_JSON: r->json = 1; break;
        case OPT_THREADS: st = cli_parse_threads(v, &r->threads); break;
        case OPT_OPTIMIZER:
            if (ac_train_optimizer_parse(v, &c->optimizer))
                st = cli_usage("--optimizer: '%s' is not one of adamw, bfgs", v);
            break;
        }
    }
    if (st)
        return st;
    if (a->given[OPT_LOG] && !a->given[OPT_LOGFORMAT]) {
        size_t n = strlen(r->log);
        r->log_jsonl = n > 6 && strcmp(r->log + n - 6, ".jsonl") == 0;
    }
    if (mult)
        m->ffn = mult * m->width;
    return AC_OK;
}

/* Options that only make sense for some tasks. */
static int check_task_options(const train_args *a, ac_task_kind t)
{
    static const struct {
        int opt;
        const char *name;
        unsigned tasks; /* bit per task */
    } only[] = {
        {OPT_X, "--x", 1u << AC_TASK_FIT_P},
        {OPT_P, "--p", 1u << AC_TASK_FIT_P},
        {OPT_ROWS, "--rows", 1u << AC_TASK_FIT_P},
        {OPT_N, "--n", 1u << AC_TASK_FIT_P},
        {OPT_D, "--d", 1u << AC_TASK_FIT_P},
        {OPT_DK, "--dk", 1u << AC_TASK_FIT_P},
        {OPT_TOL, "--tol", 1u << AC_TASK_FIT_P},
        {OPT_MAXPREC, "--max-prec", 1u << AC_TASK_FIT_P},
        {OPT_TEACHER, "--teacher", 1u << AC_TASK_TEACHER},
        {OPT_TSTACK, "--teacher-stack", 1u << AC_TASK_TEACHER},
        {OPT_TEXT, "--text", 1u << AC_TASK_TEXT},
        {OPT_HOLDOUT, "--holdout", (1u << AC_TASK_TEXT) | (1u << AC_TASK_TEACHER)},
        {OPT_LDEPTH, "--listops-depth", 1u << AC_TASK_LISTOPS},
        {OPT_LARGS, "--listops-args", 1u << AC_TASK_LISTOPS},
        {OPT_LMIN, "--listops-min-len", 1u << AC_TASK_LISTOPS},
        {OPT_LMAX, "--listops-max-len", 1u << AC_TASK_LISTOPS},
        {OPT_POOL, "--pool", 1u << AC_TASK_LISTOPS},
        {OPT_ARCH, "--arch", 1u << AC_TASK_TEACHER},
        {OPT_BATCH, "--batch", ~(1u << AC_TASK_FIT_P)},
        {OPT_LAYERS, "--layers", (1u << AC_TASK_TEACHER) | (1u << AC_TASK_LISTOPS) |
                                     (1u << AC_TASK_TEXT)},
        {OPT_FFNMULT, "--ffn-mult", (1u << AC_TASK_TEACHER) | (1u << AC_TASK_LISTOPS) |
                                        (1u << AC_TASK_TEXT)},
        {OPT_LN, "--ln", (1u << AC_TASK_TEACHER) | (1u << AC_TASK_LISTOPS) | (1u << AC_TASK_TEXT)},
        {OPT_POSITIONS, "--positions", (1u << AC_TASK_TEACHER) | (1u << AC_TASK_LISTOPS) |
                                           (1u << AC_TASK_TEXT)},
        {OPT_WIDTH, "--width", (1u << AC_TASK_TEACHER) | (1u << AC_TASK_LISTOPS) |
                                   (1u << AC_TASK_TEXT)},
        {OPT_HEADS, "--heads", ~(1u << AC_TASK_FIT_P)},
        {OPT_ATTENTION, "--attention", ~(1u << AC_TASK_FIT_P)},
        {OPT_HEADDIM, "--head-dim", ~(1u << AC_TASK_FIT_P)},
        {OPT_CAUSAL, "--causal", ~(1u << AC_TASK_FIT_P)},
    };
    for (size_t i = 0; i < sizeof only / sizeof *only; i++)
        if (a->given[only[i].opt] && !(only[i].tasks & (1u << t)))
            return cli_usage("%s does not apply to --task %s", only[i].name, ac_task_name(t));
    return AC_OK;
}

/* ---- the configuration ---- */

/* The base configuration: the checkpoint's (--resume), or the task's
 * defaults. */
static int base_config(const train_args *a, ac_train_config *cfg, ac_task_kind *task)
{
    ac_err err;
    size_t ck_step = 0;
    ac_err_clear(&err);
    if (a->given[OPT_RESUME]) {
        if (ac_train_config_read(a->val[OPT_RESUME], cfg, &ck_step, &err))
            return cli_fail_err(&err);
        *task = cfg->task;
        if (a->given[OPT_TASK]) {
            ac_task_kind t;
            if (ac_task_parse(a->val[OPT_TASK], &t))
                return cli_usage("--task: '%s' is not one of fit-p, teacher, listops, text",
                                 a->val[OPT_TASK]);
            if (t != *task)
                return cli_usage("--task %s contradicts the checkpoint %s (task %s)",
                                 a->val[OPT_TASK], a->val[OPT_RESUME], ac_task_name(*task));
        }
        return AC_OK;
    }
    if (!a->given[OPT_TASK])
        return cli_usage("--task is required (fit-p, teacher, listops or text)");
    if (ac_task_parse(a->val[OPT_TASK], task))
        return cli_usage("--task: '%s' is not one of fit-p, teacher, listops, text",
                         a->val[OPT_TASK]);
    ac_train_config_default(cfg, *task);
    if (*task == AC_TASK_TEACHER)
        cfg->model.heads = 0; /* the teacher's, resolved with the data */
    return AC_OK;
}

/* A new run: the defaults that follow other options. */
static void derived_defaults(const train_args *a, ac_train_config *cfg, ac_task_kind task)
{
    ac_nn_config *m = &cfg->model;
    if (!a->given[OPT_FFNMULT])
        m->ffn = 4 * m->width;
    if (!a->given[OPT_WARMUP])
        cfg->warmup = cfg->steps / 10;
    if (!a->given[OPT_MINLR])
        cfg->min_lr = cfg->lr / 10;
    if (!a->given[OPT_EVALEVERY])
        cfg->eval_every = cfg->steps / 10 ? cfg->steps / 10 : 1;
    if (!a->given[OPT_POSITIONS] && m->arch == AC_NN_ARCH_TRANSFORMER && task == AC_TASK_TEACHER)
        m->positions = 0;
    if (task == AC_TASK_TEACHER && m->heads == 0 && m->arch == AC_NN_ARCH_TRANSFORMER)
        m->heads = 4;
    if (m->arch == AC_NN_ARCH_TRANSFORMER && m->kind == AC_NN_ATTN_FIXED && m->head_dim == 0 &&
        m->heads)
        m->head_dim = m->width / m->heads;
    if (m->arch == AC_NN_ARCH_TRANSFORMER && task == AC_TASK_TEACHER) {
        m->input = AC_NN_INPUT_VECTORS;
        cfg->init_std = a->given[OPT_INITSTD] ? cfg->init_std : 0.02;
    }
}

/* A resumed run may change only --steps and the evaluation: compare the
 * configuration with the options applied (paths made absolute, as the
 * checkpoint stores them) with the checkpoint's. */
static int check_resume(const train_args *a, const ac_train_config *base,
                        const ac_train_config *cfg)
{
    ac_train_config mine = *cfg;
    char *paths[] = {mine.x_path, mine.p_path, mine.teacher_dir, mine.text_path};
    const int popts[] = {OPT_X, OPT_P, OPT_TEACHER, OPT_TEXT};
    for (int i = 0; i < 4; i++)
        if (a->given[popts[i]]) {
            char buf[PATH_MAX];
            if (!realpath(paths[i], buf) || strlen(buf) >= AC_TRAIN_PATH_MAX)
                return cli_fail(AC_ENOINPUT, "%s: cannot open", paths[i]);
            strcpy(paths[i], buf);
        }
    mine.steps = base->steps;
    mine.eval_every = base->eval_every;
    mine.eval_batches = base->eval_batches;
    const char *f = ac_train_config_diff(base, &mine);
    if (f) {
        ac_err e;
        char buf[2 * AC_ERR_MSG_MAX];
        ac_err_set_field(&e, AC_EUSAGE, f, "%s contradicts the checkpoint %s; a resumed run may "
                         "change only --steps, --eval-every and --eval-batches", f,
                         a->val[OPT_RESUME]);
        return cli_usage("%s", cli_err_message(buf, sizeof buf, &e));
    }
    return AC_OK;
}

/* Options the configuration cannot honour. */
static int check_consistent(const train_args *a, const ac_train_config *cfg, ac_task_kind task)
{
    if (task == AC_TASK_TEACHER && cfg->model.arch == AC_NN_ARCH_ATTENTION) {
        static const struct {
            int opt;
            const char *name;
        } tf_only[] = {{OPT_WIDTH, "--width"}, {OPT_LAYERS, "--layers"},
                       {OPT_FFNMULT, "--ffn-mult"}, {OPT_LN, "--ln"},
                       {OPT_POSITIONS, "--positions"}};
        for (size_t i = 0; i < sizeof tf_only / sizeof *tf_only; i++)
            if (a->given[tf_only[i].opt])
                return cli_usage("%s does not apply to the bare attention layer (--arch "
                                 "attention, whose width is the teacher's d); use --arch "
                                 "transformer", tf_only[i].name);
    }
    if (cfg->optimizer == AC_OPT_BFGS && task != AC_TASK_FIT_P)
        return cli_usage("--optimizer bfgs applies to --task fit-p only");
    if (cfg->optimizer == AC_OPT_BFGS && a->given[OPT_RESUME])
        return cli_usage("--resume: %s was trained with BFGS, whose curvature estimate is "
                         "not saved in checkpoints; run it again from the start", a->val[OPT_RESUME]);
    if (a->run.have_stop && a->run.stop_at > cfg->steps)
        return cli_usage("--stop-at %zu is beyond --steps %zu", a->run.stop_at, cfg->steps);
    if (cfg->warmup > cfg->steps)
        return cli_usage("--warmup %zu exceeds --steps %zu", cfg->warmup, cfg->steps);
    if (a->run.plot && a->run.dump)
        return cli_usage("--plot does not apply to --dump-grads (no training is run)");
    return AC_OK;
}

/* The configuration of the run from the options. */
static int configure(train_args *a, ac_train_config *cfg)
{
    ac_task_kind task;
    int st;
    if ((st = base_config(a, cfg, &task)) || (st = check_task_options(a, task)))
        return st;
    ac_train_config base = *cfg;
    if ((st = apply(a, cfg)))
        return st;
    if (!a->given[OPT_RESUME])
        derived_defaults(a, cfg, task);
    else if ((st = check_resume(a, &base, cfg)))
        return st;
    return check_consistent(a, cfg, task);
}

int cmd_train(int argc, char **argv)
{
    train_args a;
    ac_train_config cfg;
    int st;
    cli_set_flags(train_flags);
    if ((st = collect(&a, argc, argv)) || (st = configure(&a, &cfg)))
        return st;
    return train_run(&a.run, &cfg);
}
