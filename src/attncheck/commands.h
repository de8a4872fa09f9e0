/* attncheck/commands.h — the commands of the attncheck program as library
 * calls: one option table, one run and one serialiser per command.
 *
 * Each command (rep-theorem, separate, condition, merge, train, report) is
 *   - a *request*: one typed struct holding every option of the command,
 *     described once in the command's option table (ac_opt): name, kind,
 *     field, range, default, help text, group.  The program builds its
 *     getopt table, its option switch and --help from the table; the Python
 *     package its keyword arguments and docstrings; the test suite checks the
 *     man pages against it.
 *   - a *run*: every decision the command makes (the verdict included), on
 *     inputs read from files or given in memory (ac_request_set_array);
 *   - a *serialiser*: the one JSON object of the result (the program's
 *     --json and certificate.json, the Python package's results), and the
 *     list of arrays the result holds (the program's --out-dir .npy files,
 *     the Python package's arrays).
 * The front ends parse, call, print and write; they decide nothing.
 *
 * Generic access (ac_request) goes through the tables and is what the
 * program and the Python package use; a C caller may equally fill a typed
 * request (ac_rt_request, ...) and call the command's run directly.
 */
#ifndef ATTNCHECK_COMMANDS_H
#define ATTNCHECK_COMMANDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "attncheck/common.h"
#include "attncheck/condition.h"
#include "attncheck/json.h"
#include "attncheck/learned.h"
#include "attncheck/multihead.h"
#include "attncheck/npy.h"
#include "attncheck/theorem1.h"
#include "attncheck/theorem2.h"
#include "attncheck/verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- options ------------------------------------------------------------ */

typedef enum {
    AC_OPT_FLAG,   /* no value: the int field is set to 1 */
    AC_OPT_SIZE,   /* size_t in [min, max] */
    AC_OPT_LONG,   /* long in [min, max] */
    AC_OPT_U64,    /* uint64_t, any value (seeds) */
    AC_OPT_DOUBLE, /* double in [min, max]; a literal that overflows, or a
                      nonzero one that underflows to 0, is refused */
    AC_OPT_STRING, /* const char *: a path or a word (the generic request
                      keeps its own copy) */
    AC_OPT_CHOICE, /* int: the index of the value in choices[] */
    AC_OPT_SIZES,  /* "A,B,C": ac_opt_sizes of size_t in [min, max] */
    AC_OPT_RANGE,  /* "A:B": size_t[2] in [min, max] with A <= B */
    AC_OPT_SHARD,  /* "I/K": size_t[2] with 1 <= I <= K <= max */
    AC_OPT_STRINGS /* a list of strings (ac_opt_strings): each value given is appended
                      (the generic request keeps its own copies; ac_opts_free frees
                      the list) */
} ac_opt_kind;

/* The value of an AC_OPT_SIZES option. */
#define AC_OPT_SIZES_MAX 64
typedef struct {
    size_t n;
    size_t v[AC_OPT_SIZES_MAX];
} ac_opt_sizes;

/* The value of an AC_OPT_STRINGS option. */
typedef struct {
    size_t n;
    const char **v;
} ac_opt_strings;

/* flags of an option */
enum {
    AC_OPTF_PROGRAM = 1u << 0, /* what the program prints or writes (--json, --out-dir,
                                  --plot ...): not an argument in Python */
    AC_OPTF_ARRAY = 1u << 1,   /* an input array: a .npy file name in the program, an
                                  array in memory in Python (ac_array at aoffset) */
    AC_OPTF_POSITIONAL = 1u << 2, /* positional in Python (in table order) */
    AC_OPTF_JOIN = 1u << 3,    /* --help shows it on one line with the next option,
                                  whose help describes both (help is NULL) */
    AC_OPTF_NEGATE = 1u << 4,  /* AC_OPT_FLAG that sets the field to 0 (--no-causal) */
    AC_OPTF_LIBRARY = 1u << 5, /* not an option of the program (no --NAME, not in --help):
                                  an AC_OPTF_ARRAY input that Python and C callers give in
                                  memory where the program reads a directory (separate's
                                  Wq ... Wo for --w-dir) */
    AC_OPTF_OPERANDS = 1u << 6, /* AC_OPT_STRINGS: the operands of the command line (the
                                   arguments after the options) are its values; --help
                                   shows it as ARG... (merge's FILE...) */
    AC_OPTF_CHECK_FIRST = 1u << 7 /* check() validates the text before the kind's parsing
                                     (the command's own messages for its own syntax) */
};

#define AC_OPT_NOSET ((size_t)-1)

/* The C type of a request's field, as the tables record it (AC_OPT_FIELD,
 * AC_OPT_SET, AC_OPT_ARRAY_AT) so that ac_command_validate can refuse a
 * field whose type is not the one its option's kind stores (an int read as
 * a pointer, a long as a size_t).  size_t and uint64_t are one type here
 * (unsigned long on LP64). */
typedef enum {
    AC_OPT_T_UNKNOWN = 0, /* not recorded: refused by ac_command_validate */
    AC_OPT_T_INT,
    AC_OPT_T_LONG,
    AC_OPT_T_ULONG,
    AC_OPT_T_ULLONG,
    AC_OPT_T_DOUBLE,
    AC_OPT_T_STRING,      /* const char * */
    AC_OPT_T_SIZES,       /* ac_opt_sizes */
    AC_OPT_T_STRINGS,     /* ac_opt_strings */
    AC_OPT_T_PAIR,        /* size_t[2] */
    AC_OPT_T_ARRAY,       /* ac_array */
    AC_OPT_T_OTHER
} ac_opt_ctype;

#ifndef __cplusplus
#define AC_OPT_CTYPE(x)                                                                    \
    _Generic((x), int: AC_OPT_T_INT, long: AC_OPT_T_LONG, unsigned long: AC_OPT_T_ULONG,   \
             unsigned long long: AC_OPT_T_ULLONG, double: AC_OPT_T_DOUBLE,                 \
             const char *: AC_OPT_T_STRING, ac_opt_sizes: AC_OPT_T_SIZES,                  \
             ac_opt_strings: AC_OPT_T_STRINGS, size_t *: AC_OPT_T_PAIR,                    \
             ac_array: AC_OPT_T_ARRAY, default: AC_OPT_T_OTHER)
/* Designated initialisers of an option's field (T the request type, f the
 * member): the value, the "given" flag, the array of an AC_OPTF_ARRAY
 * option. */
#define AC_OPT_FIELD(T, f) .offset = offsetof(T, f), .ctype = AC_OPT_CTYPE(((T *)0)->f)
#define AC_OPT_SET(T, f) .set_offset = offsetof(T, f), .set_ctype = AC_OPT_CTYPE(((T *)0)->f)
#define AC_OPT_ARRAY_AT(T, f) .aoffset = offsetof(T, f), .actype = AC_OPT_CTYPE(((T *)0)->f)
#endif

typedef struct ac_opt ac_opt;
struct ac_opt {
    const char *name;    /* the long option without "--" ("tol", "dk-range"); Python
                            spells it with '_' for '-' unless pyname is set */
    ac_opt_kind kind;
    size_t offset;       /* offsetof the value in the request */
    size_t set_offset;   /* offsetof an int set to 1 when the option is given, or
                            AC_OPT_NOSET */
    double min, max;     /* numeric range, inclusive (SIZE, LONG, DOUBLE, SIZES,
                            RANGE; SHARD: max of K) */
    const char *const *choices; /* AC_OPT_CHOICE: the words, NULL-terminated */
    const char *def;     /* the default as option text, applied by
                            ac_opts_default and shown by --help as "(default DEF)";
                            NULL: none, or a default the help text explains */
    const char *arg;     /* the value's name in --help ("FILE", "N"); NULL for flags */
    const char *help;    /* one paragraph (wrapped by the front end) */
    const char *group;   /* starts a group of --help under this heading, or NULL */
    unsigned flags;      /* AC_OPTF_* */
    size_t aoffset;      /* AC_OPTF_ARRAY: offsetof the ac_array in the request */
    const char *pyname;  /* Python's name when it is not name with '_' for '-' */
    const char *def_show; /* --help's text for the default when it differs from def
                             ("2^-26 = 1.49e-08" for "0x1p-26") */
    /* a check of the value after the kind's parsing (NULL: none): AC_EUSAGE */
    int (*check)(const ac_opt *o, const void *q, const char *text, ac_err *err);
    /* the C types of the fields at offset, set_offset and aoffset */
    ac_opt_ctype ctype, set_ctype, actype;
};

/* The option named name (long form, "dk-range", or Python's, "dk_range") in
 * the table, or NULL. */
const ac_opt *ac_opt_find(const ac_opt *table, const char *name);

/* Parse text as the value of option o into the request q (text NULL for a
 * flag).  AC_EUSAGE with a one-line message naming the option ("--n: 'x' is
 * not a non-negative whole number", "--tol: 2 is out of range [0, 1]"). */
int ac_opt_set(const ac_opt *o, void *q, const char *text, ac_err *err);

/* Apply the default (ac_opt.def) of every option of the table to q. */
int ac_opts_default(const ac_opt *table, void *q, ac_err *err);

/* Free what ac_opt_set allocated in q (the lists of AC_OPT_STRINGS options;
 * not the strings). */
void ac_opts_free(const ac_opt *table, void *q);

/* 1 if the option was given (its set_offset field), 0 if not or unknown. */
int ac_opt_given(const ac_opt *o, const void *q);

/* ---- commands ----------------------------------------------------------- */

/* A named array of a result (a view: the result owns the data). */
typedef struct {
    const char *name;      /* the file stem in --out-dir ("Wq" -> Wq.npy) */
    size_t ndim;
    size_t shape[AC_NPY_MAXDIM];
    const double *data;
} ac_out_array;

#define AC_OUT_ARRAYS_MAX 64

typedef struct ac_command ac_command;
struct ac_command {
    const char *name;        /* "rep-theorem" */
    const char *summary;     /* one line for `attncheck --help` */
    const char *synopsis;    /* the usage line(s) without "Usage: " */
    const char *description; /* --help above the options (paragraphs separated by "\n\n") */
    const char *epilogue;    /* --help below the options (verdicts, exit status) */
    const ac_opt *opts;      /* the option table, ending with a zeroed entry */
    size_t request_size, result_size;
    /* the request's defaults beyond the table's */
    void (*init)(void *q);
    /* the rules between options, after all were set: AC_EUSAGE */
    int (*check)(void *q, ac_err *err);
    /* the command; hooks is command-specific (progress, per-step callbacks;
     * NULL for none).  res is zeroed by the caller and freed by result_free
     * in every case. */
    int (*run)(void *res, const void *q, void *hooks, ac_err *err);
    /* the JSON object of the result (--json, certificate.json, Python) */
    void (*write_json)(ac_json *j, const void *q, const void *res);
    /* the arrays of the result (--out-dir, Python): up to max, returns the count */
    size_t (*arrays)(const void *q, const void *res, ac_out_array *out, size_t max);
    /* the exit status of the result: 0 proved, 1 refuted, 2 undecided, ... */
    int (*status)(const void *q, const void *res);
    void (*result_free)(void *res);
    void (*request_free)(void *q); /* NULL: nothing to free */
};

/* The hooks of a command that reports progress (rep-theorem --learn, ...):
 * fn(ctx, done, total) after each unit of work. */
typedef struct {
    void (*fn)(void *ctx, size_t done, size_t total);
    void *ctx;
} ac_cmd_progress;

/* Every command, in the order of `attncheck --help`, ending with NULL. */
extern const ac_command *const ac_commands[];
const ac_command *ac_command_find(const char *name);

/* Check a command's option table against its request type: every option's
 * field has the C type its kind stores (FLAG and CHOICE int, SIZE size_t,
 * LONG long, U64 uint64_t, DOUBLE double, STRING const char *, SIZES
 * ac_opt_sizes, RANGE and SHARD size_t[2], STRINGS ac_opt_strings), its
 * "given" flag an int, its array (AC_OPTF_ARRAY) an ac_array, and lies
 * inside the request; names are unique.  AC_EINTERNAL naming the option
 * otherwise.  ac_request_new calls it. */
int ac_command_validate(const ac_command *c, ac_err *err);

/* The exit status of a verdict: 0 PROVED, 1 REFUTED, 2 UNDECIDED. */
int ac_verdict_status(ac_verdict v);

/* ---- generic requests (the program, the Python package) ---------------------- */

typedef struct ac_request ac_request;

/* A request of the command with its defaults.  AC_EUSAGE for an unknown
 * command. */
int ac_request_new(ac_request **r, const char *command, ac_err *err);
void ac_request_free(ac_request *r);
const ac_command *ac_request_command(const ac_request *r);
/* Set option name (long or Python spelling) from text (NULL for a flag). */
int ac_request_set(ac_request *r, const char *name, const char *text, ac_err *err);
/* Give an AC_OPTF_ARRAY option an array in memory (copied; row-major). */
int ac_request_set_array(ac_request *r, const char *name, size_t ndim, const size_t *shape,
                         const double *data, ac_err *err);
/* Check the rules between options, then run (once). */
int ac_request_run(ac_request *r, void *hooks, ac_err *err);
/* The typed request and result (the command's structs). */
void *ac_request_options(ac_request *r);
const void *ac_request_result(const ac_request *r);
/* After a run: the JSON object (malloc'ed, NUL-terminated; NULL if out of
 * memory), the arrays (up to max into out; the count is returned, so
 * out = NULL, max = 0 counts them), the exit status. */
char *ac_request_json(const ac_request *r, int indent);
size_t ac_request_arrays(const ac_request *r, ac_out_array *out, size_t max);
int ac_request_status(const ac_request *r);

/* Every command and its options as one JSON document (for bindings):
 * {"commands": [{"name", "summary", "synopsis", "description", "epilogue",
 *  "options": [{"name", "python", "kind", "min", "max", "choices", "default",
 *  "arg", "help", "group", "program_only", "array", "positional",
 *  "library_only", "operands"}]}]}.
 * malloc'ed; NULL if out of memory. */
char *ac_commands_describe(void);
/* Free a string the library returned (ac_request_json, ac_commands_describe):
 * free() of the library's C library, for bindings that cannot call it. */
void ac_free(void *p);

/* ---- the shared top-level keys of every result (attncheck(1), JSON) ------------ */

/* Raised when a key is removed or renamed, or a value changes type or
 * meaning; adding keys does not raise it. */
#define AC_JSON_SCHEMA_VERSION 1

/* Open the top-level object and write "command", "version",
 * "schema_version", "verdict" (null when verdict is NULL) and "certificate"
 * (ac_json_cert, or null when cert is NULL). */
void ac_json_envelope_begin(ac_json *j, const char *command, const char *verdict,
                            const ac_cert *cert);
/* "parameters": {"seed": seed, ... (the caller's members) ... } */
void ac_json_parameters_begin(ac_json *j, uint64_t seed);
void ac_json_parameters_end(ac_json *j);
/* A certificate: {"verdict", "quantity", "relation", "tau", "lo", "hi",
 * "stage", "stage_name", "precision_bits", "method", "seconds"}. */
void ac_json_cert(ac_json *j, const ac_cert *c);
/* The proof steps: [{step, quantity, lo, hi, stage, note}]. */
void ac_json_steps(ac_json *j, const ac_step *steps, size_t n);
/* "stage 0 (double)", "stage 2 (256-bit balls)", "exact", "not computed". */
const char *ac_stage_name(char *buf, size_t n, int stage, long prec);


/* ---- the rows of `attncheck report` ------------------------------------------------ */

/* One check on a built-in instance: the claim, its verdict, the verdict
 * expected (the theory's prediction or a measured finding, per row), the
 * certified bound. */
typedef struct {
    char claim[96];
    char instance[96];
    ac_verdict expected;
    ac_verdict verdict;
    char bound[96];
    char quantity[64];  /* what lo, hi bound ("" = no numeric bound) */
    double lo, hi;      /* certified bounds on quantity (NaN: none) */
    double seconds;
    int error;          /* nonzero: the check failed to run (its status) */
    char detail[AC_ERR_MSG_MAX + 64];
} ac_report_row;

typedef struct {
    ac_report_row *rows;
    size_t n, cap;
    uint64_t seed;
    int quick;
} ac_report;

/* A new row (zeroed, lo = hi = NaN), or NULL if out of memory. */
ac_report_row *ac_report_add(ac_report *r);
/* The row's check failed with status st: verdict UNDECIDED, the error, and
 * the library's message as the detail, each parameter it names (err->fields)
 * spelled as its option: "--" + the field with '_' as '-', or as flags maps
 * it (pairs {field, option}, ending with NULL; may be NULL). */
void ac_report_fail(ac_report_row *row, int st, const ac_err *err, const char *const *flags);
/* err's message into buf with every parameter it names (err->fields), at its
 * first whole-word occurrence after the previous one, spelled as an option:
 * flags maps fields to options (pairs {field, option}, NULL-terminated;
 * NULL: none), any other field is "--" and the field with '_' as '-'. */
const char *ac_err_spell(char *buf, size_t n, const ac_err *err, const char *const *flags);
/* The row's numeric bounds: quantity lies in [lo, hi]. */
void ac_report_bounds(ac_report_row *row, const char *quantity, double lo, double hi);
void ac_report_free(ac_report *r);

/* The rows of each theorem (each appends its rows). */
void ac_report_rows_theorem1(ac_report *r);
void ac_report_rows_learn(ac_report *r);
/* Theorem 1 on a head trained by AdamW (fit-p), certified. */
void ac_report_rows_train(ac_report *r);

/* How a row came out: PROVED its verdict is the one expected, REFUTED it
 * contradicts it, UNDECIDED undecided or not run (an error). */
ac_verdict ac_report_row_outcome(const ac_report_row *row);
/* Theorem 2: one row per case of the proof (each decided by
 * ac_t2_case_verdict) and two of the embedding check (report_theorem2.c). */
void ac_report_rows_theorem2(ac_report *r);
/* Theorem 2 on learned weights: a standard student against the fixed one
 * (ac_learn_t2_compare; doc/mathematics.md §4.8). */
void ac_report_rows_student(ac_report *r);
void ac_report_rows_condition(ac_report *r);     /* Theorem 3.2 of paper 2 */
void ac_report_rows_trained_kappa(ac_report *r); /* Theorem 3.2 on trained heads */

/* ---- rep-theorem (Theorem 1 of paper 1; attncheck-rep-theorem(1)) ---------------- */

typedef struct {
    /* input: a file (the program) or an array in memory (Python) */
    const char *x, *p, *d0;     /* --x, --p, --d0 */
    ac_array x_mem, p_mem, d0_mem;
    int have_x, have_p, have_d0;
    int normalize, rows;        /* --normalize, --rows */
    const char *example;        /* --example: NULL, or "paper" */
    int have_example;
    size_t n, d;                /* --n, --d: generated sizes */
    int have_n, have_d;
    uint64_t seed;
    int representable;
    /* check */
    size_t dk;
    int have_dk;
    double tol;
    int have_tol;
    long max_prec, optimize;
    const char *wq, *wk;        /* --wq, --wk: a head to certify */
    ac_array wq_mem, wk_mem;
    int have_wq, have_wk;
    const char *mask;           /* --mask: "causal", "window:W", a .npy file, or a
                                   comma-separated list of them (doc/mathematics.md §3.8) */
    ac_array mask_mem;          /* ... or the mask's array in memory (Python) */
    int have_mask;
    int bias;                   /* --bias: heads with query/key biases */
    /* learned weights */
    int learn;
    size_t dk_range[2];
    int have_dk_range;
    long starts;                /* --starts: trained heads per dk (seeds seed, seed + 1, ...) */
    int have_starts;
    /* output (the program) */
    int trace, json;
    const char *out_dir, *csv, *plot;
    long threads;
} ac_rt_request;

typedef struct {
    int learn;                  /* which of the two results below */
    ac_t1_result t1;            /* the check of (X, P, dk) */
    ac_learn_t1_result lt;      /* --learn: the learned transition */
    ac_mat X, P;                /* the instance checked */
    int gen_x, gen_p;           /* X generated; P generated or changed */
    char instance[256];         /* its description */
    double tol;                 /* the tolerance used */
    /* --mask (doc/mathematics.md §3.8): its parts, as parsed */
    int mask_causal;
    size_t mask_window;         /* 0: no window */
    size_t mask_ndim;           /* the mask array: 0 none, 1 padding (key flags), 2 n x n */
} ac_rt_result;

extern const ac_command ac_cmd_rep_theorem;

/* ---- train (the training stack on a task; attncheck-train(1)) ------------------------ */

/* The options of train.  The configuration of the run is the task's
 * defaults (or the checkpoint's, with --resume) with the options given
 * (have_*) applied; see attncheck-train(1) for each option. */
typedef struct {
    /* task and data */
    int task, have_task;            /* --task: index in ac_task_names */
    const char *x, *p;              /* --x, --p (fit-p): files, or ... */
    ac_array x_mem, p_mem;          /* ... arrays in memory (Python) */
    int have_x, have_p;
    int rows;                       /* --rows */
    size_t n, d, dk;
    int have_n, have_d, have_dk;
    const char *teacher;            /* --teacher DIR */
    const char *teacher_stack;      /* "W" or "V" */
    const char *text;               /* --text FILE */
    int have_teacher, have_teacher_stack, have_text;
    double holdout;
    size_t listops_depth, listops_args, listops_min_len, listops_max_len;
    int have_holdout, have_listops_depth, have_listops_args, have_listops_min_len,
        have_listops_max_len;
    /* model */
    int arch, attention, ln, positions, pool; /* indices in the name tables */
    int have_arch, have_attention, have_ln, have_positions, have_pool;
    size_t layers, width, heads, head_dim, ffn_mult, seq;
    int have_layers, have_width, have_heads, have_head_dim, have_ffn_mult, have_seq;
    int causal, no_causal;          /* --causal, --no-causal (--no-causal wins) */
    double init_std;
    int have_init_std;
    /* optimisation */
    int optimizer, schedule;
    int have_optimizer, have_schedule;
    size_t steps, batch, warmup;
    int have_steps, have_batch, have_warmup;
    double lr, min_lr, weight_decay, beta1, beta2, adam_eps, clip;
    int have_lr, have_min_lr, have_weight_decay, have_beta1, have_beta2, have_adam_eps,
        have_clip;
    /* the run */
    uint64_t seed;
    int have_seed;
    size_t eval_every, eval_batches, save_every, stop_at;
    int have_eval_every, have_eval_batches, have_save_every, have_stop_at;
    const char *save, *resume, *dump_grads; /* directories */
    double tol;                     /* fit-p's certified claim */
    long max_prec;
    int have_tol, have_max_prec;
    long threads;                   /* 0: all cores */
    /* what the program prints or writes */
    const char *log, *plot;
    int log_format, have_log_format; /* 0 csv, 1 jsonl */
    int quiet, json;
} ac_train_request;

/* One evaluation of a run: its step, the mean training loss of the steps
 * since the previous evaluation (or the start), the evaluation. */
typedef struct {
    size_t step;
    double train_loss;
    ac_eval_info ev;
} ac_train_eval;

/* Where a run is, for the hooks (every pointer valid during the call). */
typedef struct {
    const ac_trainer *tr;
    const ac_step_info *step;       /* the step just done */
    const ac_eval_info *eval;       /* its evaluation, or NULL */
    const ac_eval_info *last_eval;  /* the latest evaluation (NaN before the first) */
    size_t first_step, last;        /* the run does the steps first_step + 1 .. last */
    double step_tokens_per_s;       /* of this step */
    double tokens;                  /* tokens since the start of the run */
    double seconds;                 /* since the start of the run */
} ac_train_progress;

/* The hooks of train's run (each may be NULL): the program draws its
 * progress bar, prints the evaluation lines and writes --log from them. */
typedef struct {
    void *ctx;
    /* the trainer is built (or loaded), before the first step (last: the step
     * the run stops after; threads: OpenMP threads): nonzero stops the run
     * with that status and err */
    int (*start)(void *ctx, const ac_trainer *tr, size_t last, int threads, ac_err *err);
    /* after each step and its evaluation */
    void (*step)(void *ctx, const ac_train_progress *p);
    /* after the last step, before the checkpoint and the certificate:
     * nonzero stops the run with that status and err */
    int (*end)(void *ctx, const ac_train_progress *p, ac_err *err);
} ac_train_hooks;

typedef struct {
    ac_trainer tr;                  /* at the end (after --save of fit-p: its best iterate) */
    int dump;                       /* --dump-grads: written, nothing trained */
    double dump_loss;
    size_t first_step, last;        /* the steps run: first_step + 1 .. last */
    size_t step;                    /* steps done at the end */
    ac_step_info si;                /* the last step */
    ac_eval_info last_eval;         /* the last evaluation */
    ac_train_eval *evals;
    size_t nevals, maxevals;
    double tokens, seconds, tokens_per_s;
    int threads;
    int saved;                      /* --save written */
    size_t saved_step;              /* its step (fit-p: the best iterate's) */
    /* fit-p */
    int certified;                  /* cert holds the verdict */
    ac_cert cert;                   /* max|Softmax - P| <= tol for the weights certified */
    int have_best;                  /* the best evaluation: its step, max dev, KL */
    size_t best_step;
    double best_maxdev, best_kl;
    ac_mat Wq, Wk;                  /* the weights certified (dk x d) */
} ac_train_result;

/* How train spells the fields of its configuration (ac_train_config,
 * ac_nn_config; ac_err.fields) as options: pairs {field, option},
 * NULL-terminated ("text_path", "--text", ...); a field not listed is "--"
 * with the field's '_' as '-'. */
extern const char *const ac_train_fields[];

/* The configuration of a run: the defaults of the task (or the checkpoint's
 * configuration, --resume), the options given applied, the defaults that
 * follow from them, the checks between them (AC_EUSAGE; the checkpoint's
 * errors: AC_ENOINPUT, AC_EDATA). */
int ac_train_configure(ac_train_config *cfg, const ac_train_request *q, ac_err *err);

extern const ac_command ac_cmd_train;

/* ---- report (every check on built-in instances; attncheck-report(1)) ---------------- */

typedef struct {
    uint64_t seed;
    int quick;
    long threads;
    /* the program's */
    int json;
    const char *plot;
} ac_report_request;

typedef struct {
    ac_report rep;                  /* the rows */
    size_t as_expected, contradicting, undecided; /* by ac_report_row_outcome */
    ac_verdict outcome;             /* PROVED all as expected, REFUTED some contradicts,
                                       UNDECIDED some undecided or not run, none contradicts */
    double seconds;
} ac_report_result;

extern const ac_command ac_cmd_report;
/* ---- separate (Theorem 2 of paper 1; attncheck-separate(1)) ------------------------ */

/* The layers come from directories (--w-dir, --v-dir: Wq.npy ... Wo.npy,
 * Vq.npy ... Vo.npy) or, for Python and C callers, from the arrays of the
 * options Wq, Wk, Wv, Wo (f_W) and Vq, Vk, Vv, Vo (g_V) (AC_OPTF_LIBRARY):
 * the files' layout, Wq, Wk, Wv (h, hs, d) and Wo (h, d, hs), all four of a
 * layer together; either may be generated.  Index t of the arrays below is
 * AC_MH_Q, AC_MH_K, AC_MH_V, AC_MH_O. */
typedef struct {
    const char *v_dir, *w_dir;      /* --v-dir, --w-dir */
    const char *w_file[4], *v_file[4]; /* Wq ... Vo given as .npy file names */
    ac_array w_mem[4], v_mem[4];    /* Wq ... Vo given in memory */
    int have_w[4], have_v[4];
    long kase;                      /* --case (0: none) */
    int have_case;
    size_t d, h, dp, n;
    int have_d, have_h, have_dp, have_n;
    uint64_t seed;
    /* search */
    size_t tries;
    int have_tries;
    long optimize;
    int have_optimize;
    long max_prec;
    /* other checks */
    int embed, audit;
    size_t samples;
    int have_samples;
    double tol;
    int have_tol;
    /* students (doc/mathematics.md §4.8) */
    int student;
    const char *student_heads;      /* "1,2,4" */
    int have_student_heads;
    size_t student_seeds, student_steps, student_batch;
    int have_student_seeds, have_student_steps, have_student_batch, have_student_lr;
    double student_lr;
    /* output (the program) */
    int trace, json;
    const char *out_dir, *csv, *plot;
    long threads;
} ac_sep_request;

typedef enum {
    AC_SEP_SEPARATE = 0,  /* ac_t2_separate: an X that separates f_W from g_V */
    AC_SEP_EMBED = 1,     /* --embed: ac_t2_embed_check, g_V = f_W on sample inputs */
    AC_SEP_STUDENT = 2    /* --student: ac_learn_t2_students */
} ac_sep_mode;

typedef struct {
    ac_sep_mode mode;
    ac_mh W, V;                 /* the layers (--student: V only, the teacher) */
    int w_given, v_given;       /* read from a directory or given as arrays */
    char wdesc[200], vdesc[200]; /* how each layer was made */
    char embnote[AC_T2_EMBED_NOTE_LEN]; /* --embed: how g_V was built from f_W */
    size_t n, samples;          /* the tokens and the sample (or held-out) inputs used */
    ac_t2_result t2;            /* AC_SEP_SEPARATE */
    ac_t2_embed_result embed;   /* AC_SEP_EMBED */
    ac_learn_t2_result stu;     /* AC_SEP_STUDENT */
    ac_array inputs;            /* --embed: the sample inputs, --student: the held-out
                                   inputs, as one (k, d, n) array */
    ac_mh_file w_files[4], v_files[4]; /* the layers in the file layout (--out-dir) */
    ac_mh_file *stu_files;      /* --student: 4 per student and seed */
    size_t nstu_files;
} ac_sep_result;

extern const ac_command ac_cmd_separate;


/* ---- condition (Theorem 3.2 of paper 2; attncheck-condition(1)) ------------------ */

typedef struct {
    /* blocks */
    ac_opt_sizes heads;          /* --heads */
    size_t seq;                  /* --seq: N */
    size_t head_dim, embed;      /* --head-dim d, --embed D (alternatives) */
    int mode;                    /* --mode: ac_cond_mode */
    size_t input_dim;            /* --input-dim E */
    size_t trials;               /* --trials (with --model: 20 unless given) */
    uint64_t seed;
    int have_heads, have_seq, have_head_dim, have_embed, have_mode, have_input_dim,
        have_trials, have_seed;
    /* accuracy */
    double rtol;
    long max_prec;
    int certify;
    int have_rtol, have_max_prec;
    /* spectrum */
    int spectrum;
    size_t bins;
    int have_bins;
    /* trained models (doc/mathematics.md §6.6) */
    const char *model, *data;    /* --model DIR, --data FILE */
    size_t batches;
    int have_batches;
    /* output (the program) */
    int json, trace;
    const char *csv, *plot;
    long threads;                /* --threads (0: all cores) */
    int have_threads;
    /* shards (attncheck/shard.h) */
    size_t shard[2];             /* --shard I/K */
    int have_shard;
    const char *samples_out;     /* --samples-out FILE, written by the run */
    /* filled by check: d of every h of heads (head_dim, or embed / h) */
    size_t dims[AC_OPT_SIZES_MAX];
} ac_condition_request;

/* The sums of the thread-seconds of the parts and of the flops over the
 * results of a sweep. */
typedef struct {
    double sample, reduce, solve, mpfr, certify, flops;
} ac_condition_times;

/* What a sweep's result says of each h beyond ac_cond_result (estimates). */
typedef struct {
    int mean_reported;           /* 0 at D = N >= 2: E kappa = inf (doc/mathematics.md §5.5) */
    int full_rank_possible;      /* rank_bound >= min(N, D) (doc/mathematics.md §5.10) */
    double se_sigma1, se_sigmin; /* standard errors of the mean sigma_1, sigma_min over the
                                    finite samples (NaN with fewer than two) */
    double se_edelman_median;    /* D = N >= 2: the standard error of the sample median
                                    under Edelman's law, relative to it; NaN otherwise */
} ac_condition_h;

/* The findings of a sweep (estimates). */
typedef struct {
    size_t fo_n;                 /* the h where the first order's relative error against
                                    the sample mean is finite */
    double fo_lo, fo_hi;         /* its smallest and largest value over them */
    size_t fo_h_lo, fo_h_hi;     /* at these h */
    int fo_above;                /* fo_n > 0 and fo_lo > 0: the first order is above the
                                    sample mean at every such h */
    size_t tw_n;                 /* the h with |D - N| >= AC_RMT_SQUARE_BAND and a TW point */
    double tw_max;               /* the largest |relative error| of the TW point over them */
    size_t n_mpfr, n_unresolved; /* samples of the MPFR fallback, unresolved, over every h */
    size_t low_rank;             /* the first h (index) whose blocks cannot have full rank,
                                    or nh when there is none */
} ac_condition_findings;

typedef struct {
    int model;                   /* --model: the result is `compare` */
    int shard;                   /* --shard: one shard, written to samples_out */
    int merged;                  /* merge: the sweep is `sweep`, read from the shards */
    size_t nh;                   /* results (one per h of the list) */
    ac_cond_result *res;
    ac_cert cert;                /* claim C over every h (sweep, merge) */
    ac_condition_h *hs;          /* nh entries (sweep, merge) */
    ac_condition_findings findings;
    ac_condition_times times;
    double wall;                 /* seconds of the sampling (merge: of the shards) */
    int threads;                 /* the threads used (--threads, or all cores) */
    size_t lo, hi;               /* --shard: the trial range of every h */
    ac_condition_request sweep;  /* merge: the sweep's options, read from the shards */
    char **words;                /* merge: the first shard's words (the sweep's strings) */
    size_t nwords;
    ac_learn_kappa_compare compare; /* --model */
    double seconds;              /* the whole run */
    /* the arrays of the result (ac_request_arrays): a sweep nh x trials each;
     * --model: kappa, init_kappa layers x sequences, gauss_kappa 1 x trials */
    double *kappa, *sigma1, *sigmin, *kappa_lo, *kappa_hi, *init_kappa, *gauss_kappa;
    char (*names)[32];           /* the names of the per-h arrays (eig_h<h>) */
} ac_condition_result;

/* The hooks of condition's sweep (the program's progress line and --trace;
 * each may be NULL), called by the calling thread. */
typedef struct {
    /* after each sample of the i-th h of the list: done of total samples */
    void (*progress)(void *ctx, size_t i, size_t done, size_t total);
    /* after the i-th h of the list is complete */
    void (*done)(void *ctx, size_t i, const ac_cond_result *r);
    void *ctx;
} ac_condition_hooks;

extern const ac_command ac_cmd_condition;

/* ---- merge (the shards of a condition sweep; attncheck-merge(1)) ------------------ */

typedef struct {
    ac_opt_strings files;        /* the shard files (the operands) */
    int json;
    const char *csv, *plot;
    long threads;
    int have_threads;
} ac_merge_request;

/* merge's result is condition's (ac_condition_result, merged = 1, the
 * sweep's options in sweep). */
extern const ac_command ac_cmd_merge;

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_COMMANDS_H */
