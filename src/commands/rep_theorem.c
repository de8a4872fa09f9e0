/* rep_theorem.c — the command rep-theorem (attncheck/commands.h): Theorem 1
 * of paper 1 on one instance, or with --learn on learned weights across
 * head sizes.  The option table, the instance (files, arrays, generated),
 * the run, the JSON result and its arrays. */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/commands.h"
#include "attncheck/npy.h"
#include "commands/cmd_impl.h"

#define Q(f) offsetof(ac_rt_request, f)
#define F(f) AC_OPT_FIELD(ac_rt_request, f)
#define S(f) AC_OPT_SET(ac_rt_request, f)
#define A(f) AC_OPT_ARRAY_AT(ac_rt_request, f)
#define NS AC_OPT_NOSET

/* Size limits: n x n matrices of doubles; 2^16 tokens is 32 GiB per matrix. */
#define MAX_DIM 65536.0

static int check_example(const ac_opt *o, const void *q, const char *text, ac_err *err)
{
    (void)o;
    (void)q;
    if (strcmp(text, "paper") != 0)
        return ac_err_set(err, AC_EUSAGE,
                          "--example: unknown example '%s' (the one example is 'paper')", text);
    return AC_OK;
}

/* ---- --mask SPEC (doc/mathematics.md §3.8) ----------------------------------------
 *
 * SPEC is a comma-separated list of parts: "causal" (key i visible to query j
 * iff i <= j), "window:W" (|i - j| < W; with causal the W keys j-W+1 .. j),
 * and at most one .npy file of 0/1 flags, 1 = visible: a vector of n flags
 * is a padding mask (the same keys hidden from every query), an n x n array
 * any mask, in P's layout (transposed with --rows, as P is).  A SPEC none of
 * whose parts is a word is one file name (which may then hold commas). */
typedef struct {
    int causal;
    size_t window;
    const char *file; /* the file part in text (not terminated when len < strlen) */
    size_t file_len;
} mask_spec;

static int is_part(const char *s, size_t len, const char *word)
{
    return strlen(word) == len && memcmp(s, word, len) == 0;
}

static int parse_mask_spec(mask_spec *m, const char *text, ac_err *err)
{
    memset(m, 0, sizeof *m);
    int words = 0;
    for (const char *s = text;;) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        words += is_part(s, len, "causal") || (len > 7 && memcmp(s, "window:", 7) == 0);
        if (!e)
            break;
        s = e + 1;
    }
    if (!words) { /* one file */
        if (!text[0])
            return ac_err_set(err, AC_EUSAGE, "--mask: empty (expected causal, window:W or a "
                              ".npy file)");
        m->file = text;
        m->file_len = strlen(text);
        return AC_OK;
    }
    for (const char *s = text;;) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (is_part(s, len, "causal")) {
            if (m->causal)
                return ac_err_set(err, AC_EUSAGE, "--mask '%s': causal given twice", text);
            m->causal = 1;
        } else if (len > 7 && memcmp(s, "window:", 7) == 0) {
            char buf[32], *end;
            if (m->window || len - 7 >= sizeof buf)
                return ac_err_set(err, AC_EUSAGE, "--mask '%s': one window:W, W a whole "
                                  "number >= 1", text);
            memcpy(buf, s + 7, len - 7);
            buf[len - 7] = 0;
            errno = 0;
            unsigned long long w = strtoull(buf, &end, 10);
            if (*end || buf[0] < '0' || buf[0] > '9' || w < 1 || errno || w > MAX_DIM)
                return ac_err_set(err, AC_EUSAGE, "--mask '%s': window:%s is not a whole "
                                  "number in [1, %.0f]", text, buf, MAX_DIM);
            m->window = (size_t)w;
        } else if (len == 0) {
            return ac_err_set(err, AC_EUSAGE, "--mask '%s': empty part", text);
        } else {
            if (m->file)
                return ac_err_set(err, AC_EUSAGE, "--mask '%s': more than one file (one mask "
                                  "array; the words are causal and window:W)", text);
            m->file = s;
            m->file_len = len;
        }
        if (!e)
            break;
        s = e + 1;
    }
    return AC_OK;
}

static int check_mask(const ac_opt *o, const void *q, const char *text, ac_err *err)
{
    mask_spec m;
    (void)o;
    (void)q;
    return parse_mask_spec(&m, text, err);
}

/* The 0/1 flags of a mask array (from the file, or in memory): a vector of
 * n key flags (padding) or an n x n array in P's layout, transposed when
 * rows.  AC_EDATA naming name for another shape, NaN or a value not 0/1. */
static int mask_flags(unsigned char **flags, size_t *nflags, size_t *ndim, const char *path,
                      const ac_array *mem, const char *name, size_t n, int rows, ac_err *err)
{
    ac_array file = {0};
    const ac_array *a = mem;
    int st = AC_OK;
    *flags = NULL;
    *nflags = *ndim = 0;
    if (!mem->data) {
        if ((st = ac_npy_read(path, &file, err)))
            return st;
        a = &file;
    }
    if (a->ndim == 1 ? a->shape[0] != n : a->ndim != 2 || a->shape[0] != n || a->shape[1] != n) {
        char sb[96];
        size_t k = 0;
        k += (size_t)snprintf(sb, sizeof sb, "(");
        for (size_t i = 0; i < a->ndim && k < sizeof sb - 24; i++)
            k += (size_t)snprintf(sb + k, sizeof sb - k, i ? ", %zu" : "%zu", a->shape[i]);
        snprintf(sb + k, sizeof sb - k, a->ndim == 1 ? ",)" : ")");
        st = ac_err_set(err, AC_EDATA, "%s: the mask has shape %s; expected (%zu,) (a padding "
                        "mask: one flag per key) or (%zu, %zu) (P's layout), n = %zu tokens",
                        name, sb, n, n, n, n);
        goto out;
    }
    if (!(*flags = malloc(a->size ? a->size : 1))) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < a->size; i++) {
        double v = a->data[i];
        if (v != 0.0 && v != 1.0) {
            if (a->ndim == 2)
                st = ac_err_set(err, AC_EDATA, "%s: mask entry (%zu, %zu) = %g is not 0 or 1 "
                                "(1 = visible, 0 = hidden)", name, i / n, i % n, v);
            else
                st = ac_err_set(err, AC_EDATA, "%s: mask entry %zu = %g is not 0 or 1 "
                                "(1 = visible key, 0 = padding)", name, i, v);
            free(*flags);
            *flags = NULL;
            goto out;
        }
        /* row-stochastic layout: entry (query, key) is the keep flag of (key, query) */
        size_t to = a->ndim == 2 && rows ? (i % n) * n + i / n : i;
        (*flags)[to] = v == 1.0;
    }
    *nflags = a->size;
    *ndim = a->ndim;
out:
    ac_array_free(&file);
    return st;
}

/* The mask of --mask (m's arrays malloc'ed: free m->valid, m->keep), its
 * parts recorded in res. */
static int load_mask(ac_t1_mask *m, ac_rt_result *res, const ac_rt_request *q, size_t n,
                     ac_err *err)
{
    mask_spec sp = {0};
    char *path = NULL;
    unsigned char *flags = NULL;
    size_t nflags = 0, ndim = 0;
    int st;
    memset(m, 0, sizeof *m);
    m->name = ac_cmd_input_name(q->mask, &q->mask_mem, "mask");
    if (!q->mask_mem.data && (st = parse_mask_spec(&sp, q->mask, err)))
        return st;
    if (sp.file && !(path = malloc(sp.file_len + 1)))
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    if (path) {
        memcpy(path, sp.file, sp.file_len);
        path[sp.file_len] = 0;
    }
    if ((q->mask_mem.data || path) &&
        (st = mask_flags(&flags, &nflags, &ndim, path, &q->mask_mem,
                         q->mask_mem.data ? "mask" : path, n, q->rows, err))) {
        free(path);
        return st;
    }
    free(path);
    m->causal = sp.causal;
    m->window = sp.window;
    if (ndim == 1) {
        m->valid = flags;
        m->nvalid = nflags;
    } else if (ndim == 2) {
        m->keep = flags;
        m->nkeep = nflags;
    }
    res->mask_causal = sp.causal;
    res->mask_window = sp.window;
    res->mask_ndim = ndim;
    return AC_OK;
}

static const ac_opt rt_opts[] = {
    {.name = "x", .kind = AC_OPT_STRING, F(x), S(have_x), .arg = "FILE",
     .flags = AC_OPTF_ARRAY | AC_OPTF_POSITIONAL, A(x_mem), .pyname = "X",
     .group = "Input (X is d x n, one column per token; P is n x n, positive and\n"
              "column-stochastic, columns summing to 1 within 16*n*u):",
     .help = "X from a .npy file (float64 or float32, C or Fortran order; FILE.npz:NAME "
             "for an array of an archive; - for standard input)"},
    {.name = "p", .kind = AC_OPT_STRING, F(p), S(have_p), .arg = "FILE",
     .flags = AC_OPTF_ARRAY | AC_OPTF_POSITIONAL, A(p_mem), .pyname = "P",
     .help = "P from a .npy file (as --x)"},
    {.name = "d0", .kind = AC_OPT_STRING, F(d0), S(have_d0),
     .arg = "FILE", .flags = AC_OPTF_ARRAY, A(d0_mem),
     .help = "diagonal of D0 in paper 1, eq. (6): .npy vector of n positive numbers "
             "(default: the identity)"},
    {.name = "normalize", .kind = AC_OPT_FLAG, F(normalize), .set_offset = NS,
     .help = "divide each column of P by its sum before checking"},
    {.name = "rows", .kind = AC_OPT_FLAG, F(rows), .set_offset = NS,
     .help = "P is row-stochastic (PyTorch's attention weights, one row per query): check its "
             "transpose, the column-stochastic P"},
    {.name = "example", .kind = AC_OPT_STRING, F(example), S(have_example),
     .arg = "paper", .check = check_example,
     .help = "the paper's counterexample: d = 1, n = 2, X = [1, 0], "
             "P = [[0.5, 0.75], [0.5, 0.25]]"},
    {.name = "n", .kind = AC_OPT_SIZE, F(n), S(have_n), .min = 1,
     .max = MAX_DIM, .arg = "N", .group = "Generated input (for whichever of X, P is not given):",
     .help = "tokens (default 8, or the size of the given X or P)"},
    {.name = "d", .kind = AC_OPT_SIZE, F(d), S(have_d), .min = 1,
     .max = MAX_DIM, .arg = "D", .help = "rows of X (default n)"},
    {.name = "seed", .kind = AC_OPT_U64, F(seed), .set_offset = NS, .def = "1",
     .arg = "S",
     .help = "seed of the random streams: X i.i.d. N(0,1), columns of P i.i.d. "
             "Dirichlet(1,...,1)"},
    {.name = "representable", .kind = AC_OPT_FLAG, F(representable), .set_offset = NS,
     .help = "generate P = Softmax(X'AX/sqrt(dk)) with A = Wk'Wq for random Gaussian Wk, Wq "
             "(dk x d): representable by design"},
    {.name = "dk", .kind = AC_OPT_SIZE, F(dk), S(have_dk), .min = 1,
     .max = MAX_DIM, .arg = "K", .group = "Check:", .help = "head size (default d)"},
    {.name = "tol", .kind = AC_OPT_DOUBLE, F(tol), S(have_tol), .min = 0,
     .max = 1, .arg = "T", .def = "0x1p-26", .def_show = "2^-26 = 1.49e-08",
     .help = "tolerance of the claim (default; 1e-6 with --learn; 0 = exact equality; a value "
             "that underflows to 0 is an error)"},
    {.name = "max-prec", .kind = AC_OPT_LONG, F(max_prec), .set_offset = NS, .min = 0,
     .max = 1 << 20, .arg = "BITS", .def = "512",
     .help = "highest precision of the ball stages (0 = double precision stage only); the "
             "decision stages run in double first, balls only where double cannot decide"},
    {.name = "optimize", .kind = AC_OPT_LONG, F(optimize), .set_offset = NS, .min = 0,
     .max = 1000000, .arg = "ITERS", .def = "200",
     .help = "BFGS iterations refining the best approximation when P is not reached exactly "
             "(0 = off), scaled down to a work budget (iterations x (n^2 dk + 2 n d dk) "
             "<= 2^33), skipped for n > 512; JSON \"refine\" says why it stopped"},
    {.name = "wq", .kind = AC_OPT_STRING, F(wq), S(have_wq),
     .arg = "FILE", .flags = AC_OPTF_ARRAY | AC_OPTF_JOIN, A(wq_mem), .pyname = "Wq"},
    {.name = "wk", .kind = AC_OPT_STRING, F(wk), S(have_wk),
     .arg = "FILE", .flags = AC_OPTF_ARRAY, A(wk_mem), .pyname = "Wk",
     .help = "a head to certify (.npy, dk x d each): its max|Softmax - P| is an upper bound on "
             "the distance, and it is written if it is the best head found"},
    {.name = "mask", .kind = AC_OPT_STRING, F(mask), S(have_mask), .arg = "SPEC",
     .flags = AC_OPTF_ARRAY, A(mask_mem), .check = check_mask,
     .group = "Masked heads and biases (doc/mathematics.md §3.8):",
     .help = "a masked head: the softmax of each query over its visible keys, P zero off the "
             "mask and positive on it.  SPEC: causal (key i visible to query j iff i <= j), "
             "window:W (|i - j| < W; with causal the W keys j-W+1..j), a .npy file of 0/1 "
             "flags (1 = visible; n flags: a padding mask, the same keys hidden from every "
             "query; n x n: any mask, in P's layout, transposed by --rows as P is), or a "
             "comma-separated list of these (causal,pad.npy)"},
    {.name = "bias", .kind = AC_OPT_FLAG, F(bias), .set_offset = NS,
     .help = "heads with query and key biases, (Wk x + bk)'(Wq y + bq): decided as heads "
             "without bias on X with a row of ones appended; the weights are dk x (d + 1), "
             "the last column the bias (--wq, --wk and the Wq.npy, Wk.npy written)"},
    {.name = "trace", .kind = AC_OPT_FLAG, F(trace), .set_offset = NS,
     .flags = AC_OPTF_PROGRAM, .group = "Output:",
     .help = "print each proof step with its certified residual"},
    {.name = "json", .kind = AC_OPT_FLAG, F(json), .set_offset = NS,
     .flags = AC_OPTF_PROGRAM, .help = "print one JSON object (verdict, certificate, ...)"},
    {.name = "out-dir", .kind = AC_OPT_STRING, F(out_dir), .set_offset = NS,
     .arg = "DIR", .flags = AC_OPTF_PROGRAM,
     .help = "write Wq.npy, Wk.npy (dk x d), certificate.json, and the X.npy, P.npy that were "
             "checked if generated or changed (with --learn: Wq_dkK.npy, Wk_dkK.npy for each "
             "head size K, the learned heads the rows certify)"},
    {.name = "threads", .kind = AC_OPT_LONG, F(threads), .set_offset = NS, .min = 1,
     .max = 1024, .arg = "N",
     .help = "number of BLAS threads (the check itself runs BLAS single-threaded: results are "
             "identical for any N)"},
    {.name = "learn", .kind = AC_OPT_FLAG, F(learn), .set_offset = NS,
     .group = "Learned weights (doc/mathematics.md §6.5):",
     .help = "for each dk of --dk-range: train one head (BFGS on KL(P || Softmax), the best "
             "iterate), certify it at --tol (default 1e-6 here), and run the exact check beside "
             "it; print the table and whether the learned transition is where the exact "
             "criterion puts it.  With --mask and/or --bias the heads are trained under the "
             "mask (softmax over each query's visible keys, loss on the visible entries of P) "
             "or on X with a row of ones, certified as --wq --wk would be, and the criterion "
             "is the masked one (§3.8); --out-dir writes each head as Wq_dkK.npy, Wk_dkK.npy"},
    {.name = "dk-range", .kind = AC_OPT_RANGE, F(dk_range),
     S(have_dk_range), .min = 1, .max = MAX_DIM, .arg = "A:B",
     .help = "head sizes for --learn (default 1:n+1)"},
    {.name = "starts", .kind = AC_OPT_LONG, F(starts), S(have_starts), .min = 1, .max = 1000,
     .arg = "N", .def = "1",
     .help = "--learn: train up to N heads per dk, from the seeds S, S + 1, ..., until one is "
             "certified within tol; the row keeps the head of least certified error"},
    {.name = "csv", .kind = AC_OPT_STRING, F(csv), .set_offset = NS, .arg = "FILE",
     .flags = AC_OPTF_PROGRAM, .help = "--learn: the table as CSV"},
    {.name = "plot", .kind = AC_OPT_STRING, F(plot), .set_offset = NS, .arg = "FILE",
     .flags = AC_OPTF_PROGRAM, .check = ac_cmd_check_plot,
     .help = "--learn: learned error and certified lower bound against dk (.svg, .png or .pdf) "
             "with gnuplot"},
    {0},
};

static const char rt_description[] =
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
    "certified obstructions refute exact representability (C(tol) only when the\n"
    "distance bound of §3.6 they give exceeds TOL) and whose identities between\n"
    "logarithms are proved only in the exact cases of §3.4 (otherwise UNDECIDED).\n"
    "--mask decides a masked head (causal, sliding window, padding, any 0/1 mask)\n"
    "and --bias heads with query/key biases (doc/mathematics.md §3.8).";

static const char rt_epilogue[] =
    "Exit status: 0 proved, 1 refuted, 2 undecided, 64 usage error, 65 bad input\n"
    "data, 66 cannot open input, 70 internal error, 73 cannot create output.\n"
    "With --learn: 0 the transitions agree, 1 training misses a dk where C(tol) is\n"
    "proved, 2 some dk is decided by neither, 70 also for a learned error below the\n"
    "certified lower bound.";

static int rt_check(void *qv, ac_err *err)
{
    const ac_rt_request *q = qv;
    if (q->example && (q->have_x || q->have_p || q->have_n || q->have_d || q->representable))
        return ac_err_set(err, AC_EUSAGE, "--example paper fixes X and P; it cannot be combined "
                          "with --x, --p, --n, --d or --representable");
    if (!q->have_wq != !q->have_wk)
        return ac_err_set(err, AC_EUSAGE, "--wq and --wk give one head together; give both");
    if (q->rows && !q->have_p)
        return ac_err_set(err, AC_EUSAGE,
                          "--rows needs --p FILE (it transposes the P read from the file)");
    if (q->have_p && q->representable)
        return ac_err_set(err, AC_EUSAGE,
                          "--representable generates P; it cannot be combined with --p");
    if (!q->learn) {
        if (q->have_dk_range)
            return ac_err_set(err, AC_EUSAGE, "--dk-range needs --learn");
        if (q->csv)
            return ac_err_set(err, AC_EUSAGE, "--csv needs --learn");
        if (q->plot)
            return ac_err_set(err, AC_EUSAGE, "--plot needs --learn");
        if (q->have_starts)
            return ac_err_set(err, AC_EUSAGE, "--starts needs --learn");
        return AC_OK;
    }
    const char *conflict = q->have_dk ? "--dk" : q->trace ? "--trace" : q->have_d0 ? "--d0"
                           : q->have_wq ? "--wq" : NULL;
    if (conflict)
        return ac_err_set(err, AC_EUSAGE, "--learn cannot be combined with %s%s", conflict,
                          strcmp(conflict, "--dk") == 0 ? " (use --dk-range A:B)" : "");
    return AC_OK;
}

/* Load or generate X and P (and D0); res->gen_x, res->gen_p say what to write. */
static int load_instance(ac_rt_result *res, double **d0, size_t *nd0, const ac_rt_request *q,
                         ac_err *err)
{
    ac_mat *X = &res->X, *P = &res->P;
    int st;
    if (q->example) {
        res->gen_x = res->gen_p = 1;
        return ac_t1_example_paper(X, P, err);
    }
    if (q->have_x && (st = ac_cmd_input_mat(X, q->x, &q->x_mem, "X", err)))
        return st;
    if (q->have_p && (st = ac_cmd_input_mat(P, q->p, &q->p_mem, "P", err)))
        return st;
    if (q->have_p && q->rows && (st = ac_mat_transpose(P, err)))
        return st;
    const char *xname = ac_cmd_input_name(q->x, &q->x_mem, "X");
    const char *pname = ac_cmd_input_name(q->p, &q->p_mem, "P");
    if (q->have_x) {
        if (q->have_n && q->n != X->cols)
            return ac_err_set(err, AC_EUSAGE, "--n %zu contradicts %s, which has n = %zu columns",
                              q->n, xname, X->cols);
        if (q->have_d && q->d != X->rows)
            return ac_err_set(err, AC_EUSAGE, "--d %zu contradicts %s, which has d = %zu rows",
                              q->d, xname, X->rows);
        if (X->cols == 0 || X->rows == 0)
            return ac_err_set(err, AC_EDATA, "%s: X is %zu x %zu; it needs at least one row and "
                              "one column", xname, X->rows, X->cols);
    }
    if (q->have_p && !q->have_x && q->have_n && q->n != P->rows)
        return ac_err_set(err, AC_EUSAGE, "--n %zu contradicts %s, which is %zu x %zu", q->n,
                          pname, P->rows, P->cols);
    size_t n = q->have_x ? X->cols : (q->have_p ? P->rows : (q->have_n ? q->n : 8));
    size_t d = q->have_x ? X->rows : (q->have_d ? q->d : n);
    if (!q->have_x) {
        ac_mat dummy = {0};
        if ((st = ac_t1_generate(X, &dummy, d, n, q->seed, err)))
            return st;
        ac_mat_free(&dummy);
        res->gen_x = 1;
    }
    if (!q->have_p) {
        res->gen_p = 1;
        if (q->representable) {
            size_t dk = q->have_dk ? q->dk : X->rows;
            if ((st = ac_t1_generate_representable(P, X, dk, q->seed, err)))
                return st;
        } else {
            ac_mat dummy = {0};
            if ((st = ac_t1_generate(&dummy, P, 1, X->cols, q->seed, err)))
                return st;
            ac_mat_free(&dummy);
        }
    }
    if (q->normalize && P->rows > 0) {
        ac_t1_normalize(P);
        res->gen_p = 1;
    }
    if (q->have_d0 && (st = ac_cmd_input_vec(d0, nd0, q->d0, &q->d0_mem, "D0", err)))
        return st;
    return AC_OK; /* validated by ac_t1_check, with the names */
}

/* The mask of --mask and its support omega (n x n, row = key); a P that was
 * generated (not read) is restricted to the support and its columns
 * renormalised: the masked softmax of the same logits, or a Dirichlet
 * pattern on the visible keys. */
static int masked_instance(ac_t1_mask *m, unsigned char **omega, ac_rt_result *res,
                           const ac_rt_request *q, ac_err *err)
{
    size_t n = res->X.cols;
    int st;
    if ((st = load_mask(m, res, q, n, err)))
        return st;
    if (!(*omega = malloc(n > 0 ? n * n : 1)))
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    if ((st = ac_t1_mask_support(*omega, n, m, err)))
        return st;
    if (!q->have_p && res->P.rows == n && res->P.cols == n) {
        for (size_t i = 0; i < n * n; i++)
            if (!(*omega)[i])
                res->P.data[i] = 0.0;
        ac_t1_normalize(&res->P);
    }
    return AC_OK;
}

static void describe_instance(char *buf, size_t n, const ac_rt_request *q, const ac_mat *X)
{
    const char *xname = ac_cmd_input_name(q->x, &q->x_mem, "X");
    const char *pname = ac_cmd_input_name(q->p, &q->p_mem, "P");
    if (q->example)
        snprintf(buf, n, "the paper's example (d = 1, n = 2, X = [1, 0])");
    else if (q->have_x && q->have_p)
        snprintf(buf, n, "X = %s (%zu x %zu), P = %s", xname, X->rows, X->cols, pname);
    else
        snprintf(buf, n, "X %s (%zu x %zu), P %s, seed %llu", q->have_x ? xname : "Gaussian",
                 X->rows, X->cols,
                 q->have_p ? pname : (q->representable ? "representable" : "Dirichlet"),
                 (unsigned long long)q->seed);
}

static int rt_run(void *rv, const void *qv, void *hooks, ac_err *err)
{
    ac_rt_result *res = rv;
    const ac_rt_request *q = qv;
    ac_mat Wq = {0}, Wk = {0};
    ac_t1_mask mask = {0};
    unsigned char *omega = NULL;
    double *d0 = NULL;
    size_t nd0 = 0;
    int st;
    ac_cmd_apply_threads(q->threads);
    if (!q->have_x && !q->have_p && !q->example && q->have_n &&
        (st = ac_cmd_memory_check(ac_cmd_mem_rep_theorem(q->have_d ? q->d : q->n, q->n),
                                  AC_EUSAGE, err, "--n %zu", q->n)))
        return st;
    if ((st = load_instance(res, &d0, &nd0, q, err)))
        goto out;
    const char *xname = ac_cmd_input_name(q->x, &q->x_mem, "X");
    const char *pname = ac_cmd_input_name(q->p, &q->p_mem, "P");
    if ((q->have_x || q->have_p) &&
        (st = ac_cmd_memory_check(ac_cmd_mem_rep_theorem(res->X.rows, res->X.cols), AC_EDATA,
                                  err, "%s (n = %zu)", q->have_x ? xname : pname,
                                  res->X.cols)))
        goto out;
    if (q->have_mask && (st = masked_instance(&mask, &omega, res, q, err)))
        goto out;
    describe_instance(res->instance, sizeof res->instance, q, &res->X);
    ac_schedule sched = ac_schedule_upto(q->max_prec);
    if (q->learn) {
        const ac_cmd_progress *pr = hooks;
        ac_learn_t1_opts lo = {
            .dk_lo = q->have_dk_range ? q->dk_range[0] : 1,
            .dk_hi = q->have_dk_range ? q->dk_range[1] : res->X.cols + 1,
            .seed = q->seed,
            .tol = q->have_tol ? q->tol : 1e-6,
            .sched = sched,
            .optimize = (int)q->optimize,
            .mask = q->have_mask ? &mask : NULL,
            .bias = q->bias,
            .starts = (size_t)q->starts,
            .progress = pr ? pr->fn : NULL,
            .progress_ctx = pr ? pr->ctx : NULL,
        };
        res->learn = 1;
        res->tol = lo.tol;
        st = ac_learn_t1_transition(&res->lt, &res->X, xname, &res->P, pname, &lo, err);
        goto out;
    }
    res->tol = q->tol;
    ac_t1_opts o;
    ac_t1_opts_default(&o);
    o.dk = q->have_dk ? q->dk : res->X.rows;
    o.d0 = d0;
    o.nd0 = nd0;
    o.xname = xname;
    o.pname = pname;
    o.d0name = ac_cmd_input_name(q->d0, &q->d0_mem, "D0");
    o.tol = q->tol;
    o.sched = sched;
    o.optimize = (int)q->optimize;
    if (q->have_wq && ((st = ac_cmd_input_mat(&Wq, q->wq, &q->wq_mem, "Wq", err)) ||
                       (st = ac_cmd_input_mat(&Wk, q->wk, &q->wk_mem, "Wk", err))))
        goto out;
    o.user_wq = q->have_wq ? &Wq : NULL;
    o.user_wk = q->have_wk ? &Wk : NULL;
    o.wqname = q->have_wq ? ac_cmd_input_name(q->wq, &q->wq_mem, "Wq") : NULL;
    o.wkname = q->have_wk ? ac_cmd_input_name(q->wk, &q->wk_mem, "Wk") : NULL;
    o.mask = q->have_mask ? &mask : NULL;
    o.bias = q->bias;
    st = ac_t1_check(&res->t1, &res->X, &res->P, &o, err);
out:
    free((void *)mask.valid);
    free((void *)mask.keep);
    free(omega);
    ac_mat_free(&Wq);
    ac_mat_free(&Wk);
    free(d0);
    return st;
}

/* ---- JSON ------------------------------------------------------------------------- */

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
                      stage == AC_STAGE_NONE ? "none" : ac_stage_name(sb, sizeof sb, stage, prec));
}

/* "threshold": the smallest head size representing P, certified range. */
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

/* an object {lo, hi, stage, stage_name}, or null when lo is NaN */
static void json_enclosure(ac_json *j, const char *key, double lo, double hi, int stage,
                           long prec)
{
    ac_json_key(j, key);
    if (isnan(lo)) {
        ac_json_null(j);
        return;
    }
    ac_json_begin_object(j);
    ac_json_kv_number(j, "lo", lo);
    ac_json_kv_number(j, "hi", hi);
    json_stage(j, stage, prec);
    ac_json_end_object(j);
}

/* "mask": the masked head's support (doc/mathematics.md §3.8), or null. */
static void json_mask(ac_json *j, const ac_rt_request *q, const ac_rt_result *res)
{
    const ac_t1_result *r = &res->t1;
    ac_json_key(j, "mask");
    if (!r->masked) {
        ac_json_null(j);
        return;
    }
    ac_json_begin_object(j);
    ac_json_kv_string(j, "name", ac_cmd_input_name(q->mask, &q->mask_mem, "mask"));
    ac_json_kv_bool(j, "causal", res->mask_causal);
    ac_json_key(j, "window");
    if (res->mask_window)
        ac_json_uint(j, res->mask_window);
    else
        ac_json_null(j);
    ac_json_kv_string(j, "array", res->mask_ndim == 1   ? "padding"
                                  : res->mask_ndim == 2 ? "pairs"
                                                        : "none");
    ac_json_kv_uint(j, "nvisible", r->nvisible);
    ac_json_kv_bool(j, "staircase", r->staircase);
    ac_json_kv_uint(j, "nblocks", r->nblocks);
    ac_json_kv_string(j, "support", r->support);
    ac_json_end_object(j);
}

static void write_json_check(ac_json *j, const ac_rt_request *q, const ac_rt_result *res)
{
    const ac_t1_result *r = &res->t1;
    ac_json_envelope_begin(j, "rep-theorem", ac_verdict_name(r->verdict), &r->cert);
    ac_json_parameters_begin(j, q->seed);
    ac_json_kv_int(j, "dk", (long long)r->dk);
    ac_json_kv_number(j, "tol", q->tol);
    ac_json_kv_bool(j, "normalize", q->normalize);
    ac_json_kv_bool(j, "rows", q->rows);
    ac_json_key(j, "mask");
    if (q->have_mask)
        ac_json_string(j, ac_cmd_input_name(q->mask, &q->mask_mem, "mask"));
    else
        ac_json_null(j);
    ac_json_kv_bool(j, "bias", q->bias);
    ac_json_parameters_end(j);
    ac_json_kv_number(j, "seconds", r->cert.seconds); /* stored: certificate.json equals --json */
    ac_json_kv_string(j, "claim", "some head of size dk has max|Softmax - P| <= tol");
    ac_json_kv_number(j, "tol", q->tol);
    ac_json_key(j, "instance");
    ac_json_begin_object(j);
    ac_json_kv_string(j, "description", res->instance);
    ac_json_kv_int(j, "d", (long long)r->d);
    ac_json_kv_int(j, "n", (long long)r->n);
    ac_json_kv_int(j, "dk", (long long)r->dk);
    if (q->have_x)
        ac_json_kv_string(j, "x", ac_cmd_input_name(q->x, &q->x_mem, "X"));
    if (q->have_p)
        ac_json_kv_string(j, "p", ac_cmd_input_name(q->p, &q->p_mem, "P"));
    if (res->gen_x || res->gen_p)
        ac_json_kv_uint(j, "seed", q->seed);
    ac_json_kv_bool(j, "x_generated", res->gen_x);
    ac_json_kv_bool(j, "p_generated_or_changed", res->gen_p);
    ac_json_end_object(j);
    ac_json_kv_string(j, "route", r->route == AC_T1_ROUTE_CONSTRUCT ? "construct"
                                  : r->route == AC_T1_ROUTE_MASKED  ? "masked"
                                                                    : "decide");
    ac_json_kv_bool(j, "bias", r->bias);
    ac_json_kv_bool(j, "masked", r->masked);
    json_mask(j, q, res);
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
    json_enclosure(j, "log_residual", r->rho_lo, r->rho_hi, r->rho_stage, r->rho_prec);
    json_enclosure(j, "rank_condition", r->lowrank_lo, r->lowrank_hi, r->lowrank_stage,
                   r->lowrank_prec);
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
    if (r->user_cert.stage != AC_STAGE_NONE && q->have_wq) {
        ac_json_key(j, "given_head");
        ac_json_cert(j, &r->user_cert);
    }
    ac_json_key(j, "weights");
    ac_json_cert(j, &r->weights_cert);
    ac_json_key(j, "trace");
    ac_json_steps(j, r->steps, r->nsteps);
    ac_json_end_object(j);
}

static void json_dk(ac_json *j, const char *key, long v)
{
    ac_json_key(j, key);
    if (v >= 0)
        ac_json_int(j, v);
    else
        ac_json_null(j);
}

static void write_json_learn(ac_json *j, const ac_rt_request *q, const ac_rt_result *res)
{
    char sent[1024];
    const ac_learn_t1_result *lt = &res->lt;
    const ac_learn_t1_summary *s = &lt->s;
    ac_learn_t1_sentence(sent, sizeof sent, s, res->tol);
    ac_json_envelope_begin(j, "rep-theorem", ac_learn_t1_verdict_name(s),
                           NULL); /* one certificate per row, under "rows" */
    ac_json_parameters_begin(j, q->seed);
    ac_json_kv_bool(j, "learn", 1);
    ac_json_kv_number(j, "tol", res->tol);
    ac_json_key(j, "mask");
    if (q->have_mask)
        ac_json_string(j, ac_cmd_input_name(q->mask, &q->mask_mem, "mask"));
    else
        ac_json_null(j);
    ac_json_kv_bool(j, "bias", q->bias);
    ac_json_parameters_end(j);
    ac_json_kv_string(j, "mode", "learn");
    ac_json_kv_string(j, "claim", "learned heads reach max|Softmax - P| <= tol exactly at the "
                      "dk where the exact criterion does not refute C(tol)");
    ac_json_kv_number(j, "tol", res->tol);
    ac_json_key(j, "instance");
    ac_json_begin_object(j);
    ac_json_kv_string(j, "description", res->instance);
    ac_json_kv_int(j, "d", (long long)res->X.rows);
    ac_json_kv_int(j, "n", (long long)res->X.cols);
    if (s->rank >= 0)
        ac_json_kv_int(j, "rank", s->rank);
    ac_json_kv_uint(j, "seed", q->seed);
    ac_json_kv_bool(j, "masked", s->masked);
    ac_json_kv_bool(j, "bias", s->bias);
    ac_json_end_object(j);
    /* the threshold of exact representability (§3.5; §3.8 with a mask or bias) */
    ac_json_key(j, "exact_threshold");
    ac_json_begin_object(j);
    json_dk(j, "lo", s->thr_lo);
    json_dk(j, "hi", s->thr_hi);
    ac_json_kv_bool(j, "exact", s->thr_exact);
    ac_json_end_object(j);
    json_dk(j, "learned_transition", s->learned_from);
    json_dk(j, "criterion_transition", s->criterion_from);
    ac_json_kv_string(j, "summary", sent);
    ac_json_kv_number(j, "seconds", lt->seconds);
    ac_json_key(j, "rows");
    ac_json_begin_array(j);
    for (size_t i = 0; i < lt->nrows; i++) {
        const ac_learn_t1_row *w = &lt->rows[i];
        ac_json_begin_object(j);
        ac_json_kv_int(j, "dk", (long long)w->dk);
        ac_json_key(j, "learned");
        ac_json_begin_object(j);
        ac_json_kv_int(j, "steps", (long long)w->steps);
        ac_json_kv_bool(j, "stalled", w->stalled);
        ac_json_kv_uint(j, "start", w->start);
        ac_json_kv_uint(j, "starts", w->starts);
        ac_json_kv_int(j, "best_step", (long long)w->best_step);
        ac_json_kv_number(j, "maxdev", w->dev);
        ac_json_kv_number(j, "kl", w->kl);
        ac_json_kv_string(j, "verdict", ac_verdict_name(w->learned.verdict));
        ac_json_key(j, "certificate"); /* about the arrays wq, wk (--out-dir: wq.npy, wk.npy) */
        ac_json_cert(j, &w->learned);
        ac_json_kv_string(j, "wq", w->wq_name);
        ac_json_kv_string(j, "wk", w->wk_name);
        ac_json_kv_number(j, "seconds", w->learn_seconds);
        ac_json_end_object(j);
        ac_json_key(j, "exact");
        ac_json_begin_object(j);
        ac_json_kv_string(j, "verdict", ac_verdict_name(w->verdict));
        ac_json_kv_string(j, "representable", ac_verdict_name(w->exact));
        ac_json_kv_number(j, "dist_lo", w->dist_lo);
        ac_json_kv_number(j, "dist_hi", w->dist_hi);
        ac_json_kv_number(j, "seconds", w->exact_seconds);
        ac_json_end_object(j);
        ac_json_end_object(j);
    }
    ac_json_end_array(j);
    ac_json_end_object(j);
}

static void rt_write_json(ac_json *j, const void *qv, const void *rv)
{
    const ac_rt_result *res = rv;
    if (res->learn)
        write_json_learn(j, qv, res);
    else
        write_json_check(j, qv, res);
}

/* --out-dir and Python: Wq, Wk (when written; with --learn Wq_dkK, Wk_dkK for
 * every head size K, the learned weights each row certifies), X and P (when
 * generated or changed) */
static size_t rt_arrays(const void *qv, const void *rv, ac_out_array *out, size_t max)
{
    const ac_rt_result *res = rv;
    size_t k = 0;
    (void)qv;
    for (size_t i = 0; res->learn && i < res->lt.nrows; i++) { /* each learned head */
        const ac_learn_t1_row *w = &res->lt.rows[i];
        if (w->Wq.data) {
            k = ac_cmd_out_mat(out, k, max, w->wq_name, &w->Wq);
            k = ac_cmd_out_mat(out, k, max, w->wk_name, &w->Wk);
        }
    }
    if (!res->learn && res->t1.Wq.data) {
        k = ac_cmd_out_mat(out, k, max, "Wq", &res->t1.Wq);
        k = ac_cmd_out_mat(out, k, max, "Wk", &res->t1.Wk);
    }
    if (res->gen_x)
        k = ac_cmd_out_mat(out, k, max, "X", &res->X);
    if (res->gen_p)
        k = ac_cmd_out_mat(out, k, max, "P", &res->P);
    return k;
}

static int rt_status(const void *qv, const void *rv)
{
    const ac_rt_result *res = rv;
    (void)qv;
    if (!res->learn)
        return ac_verdict_status(res->t1.verdict);
    if (res->lt.s.inconsistent >= 0)
        return AC_EINTERNAL;
    return ac_verdict_status(res->lt.s.outcome);
}

static void rt_result_free(void *rv)
{
    ac_rt_result *res = rv;
    ac_t1_result_free(&res->t1);
    ac_learn_t1_result_free(&res->lt);
    ac_mat_free(&res->X);
    ac_mat_free(&res->P);
}

const ac_command ac_cmd_rep_theorem = {
    .name = "rep-theorem",
    .summary = "Theorem 1: construct Wq, Wk for a context matrix P, or decide it is unreachable",
    .synopsis = "attncheck rep-theorem [OPTIONS]",
    .description = rt_description,
    .epilogue = rt_epilogue,
    .opts = rt_opts,
    .request_size = sizeof(ac_rt_request),
    .result_size = sizeof(ac_rt_result),
    .check = rt_check,
    .run = rt_run,
    .write_json = rt_write_json,
    .arrays = rt_arrays,
    .status = rt_status,
    .result_free = rt_result_free,
};
