/* util.c — option parsing, messages, staged output and JSON helpers shared by
 * the commands of the attncheck program. */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <getopt.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "attncheck/blas.h"
#include "attncheck/fileio.h"
#include "attncheck/npy.h"
#include "cli.h"

const char *cli_cmd_name = "attncheck";

/* Output directories staged and complete, swapped in by cli_finish. */
#define OUTDIR_PENDING_MAX 4
static ac_stagedir outdir_pending[OUTDIR_PENDING_MAX];
static size_t outdir_npending;
/* The staging path and the user's path of the last directory begun, so
 * that a message about a staged file names the user's path. */
static char *outdir_stage_tmp, *outdir_stage_dir;

static void vfail(const char *fmt, va_list ap)
{
    if (strcmp(cli_cmd_name, "attncheck") == 0)
        fprintf(stderr, "attncheck: ");
    else
        fprintf(stderr, "attncheck %s: ", cli_cmd_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

int cli_fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(fmt, ap);
    va_end(ap);
    return status;
}

static const cli_flag *cli_flag_map;

void cli_set_flags(const cli_flag *map)
{
    cli_flag_map = map;
}

const char *cli_err_message(char *buf, size_t n, const ac_err *err)
{
    /* the command's table as the library's pairs {field, option} */
    const char *pairs[2 * 64 + 1];
    size_t k = 0;
    for (const cli_flag *f = cli_flag_map; f && f->field && k + 2 < sizeof pairs / sizeof *pairs;
         f++) {
        pairs[k++] = f->field;
        pairs[k++] = f->flag;
    }
    pairs[k] = NULL;
    return ac_err_spell(buf, n, err, pairs);
}

/* msg with the staging directory of the output directory replaced by the
 * user's path (a message about a staged file names DIR/FILE). */
static const char *unstage(char *buf, size_t n, const char *msg)
{
    const char *hit;
    if (!outdir_stage_tmp || !outdir_stage_dir || !(hit = strstr(msg, outdir_stage_tmp)))
        return msg;
    snprintf(buf, n, "%.*s%s%s", (int)(hit - msg), msg, outdir_stage_dir,
             hit + strlen(outdir_stage_tmp));
    return buf;
}

int cli_fail_err(const ac_err *err)
{
    char buf[2 * AC_ERR_MSG_MAX], buf2[3 * AC_ERR_MSG_MAX];
    return cli_fail(err->status ? err->status : AC_EINTERNAL, "%s",
                    unstage(buf2, sizeof buf2, cli_err_message(buf, sizeof buf, err)));
}

int cli_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(fmt, ap);
    va_end(ap);
    if (strcmp(cli_cmd_name, "attncheck") == 0)
        fprintf(stderr, "Try 'attncheck --help'.\n");
    else
        fprintf(stderr, "Try 'attncheck %s --help'.\n", cli_cmd_name);
    return AC_EUSAGE;
}

int cli_bad_option(int c, char **argv)
{
    if (c == ':')
        return cli_usage("option '%s' needs a value", argv[optind - 1]);
    return cli_usage("unknown option '%s'", argv[optind - 1]);
}

int cli_no_operands(int argc, char **argv)
{
    if (optind < argc)
        return cli_usage("unexpected argument '%s'", argv[optind]);
    return AC_OK;
}

int cli_parse_u64(const char *opt, const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!s || !*s || *s == '-')
        return cli_usage("%s: '%s' is not a non-negative whole number", opt, s ? s : "");
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return cli_usage("%s: '%s' is not a non-negative whole number", opt, s);
    *out = (uint64_t)v;
    return AC_OK;
}

int cli_parse_size(const char *opt, const char *s, size_t min, size_t max, size_t *out)
{
    uint64_t v;
    int st = cli_parse_u64(opt, s, &v);
    if (st)
        return st;
    if (v < min || v > max)
        return cli_usage("%s: %s is out of range [%zu, %zu]", opt, s, min, max);
    *out = (size_t)v;
    return AC_OK;
}

int cli_parse_int(const char *opt, const char *s, long min, long max, long *out)
{
    char *end;
    errno = 0;
    if (!s || !*s)
        return cli_usage("%s: missing number", opt);
    long v = strtol(s, &end, 10);
    if (errno || *end)
        return cli_usage("%s: '%s' is not a whole number", opt, s);
    if (v < min || v > max)
        return cli_usage("%s: %s is out of range [%ld, %ld]", opt, s, min, max);
    *out = v;
    return AC_OK;
}

int cli_parse_double(const char *opt, const char *s, double min, double max, double *out)
{
    char *end;
    errno = 0;
    if (!s || !*s)
        return cli_usage("%s: missing number", opt);
    double v = strtod(s, &end);
    if (errno == ERANGE && fabs(v) > 1)
        return cli_usage("%s: '%s' overflows a double", opt, s);
    if (*end || v != v)
        return cli_usage("%s: '%s' is not a number", opt, s);
    if (v < min || v > max)
        return cli_usage("%s: %s is out of range [%g, %g]", opt, s, min, max);
    *out = v;
    return AC_OK;
}

int cli_parse_threads(const char *s, int *out)
{
    long t;
    int st = cli_parse_int("--threads", s, 1, 1024, &t);
    if (!st)
        *out = (int)t;
    return st;
}

void cli_common_init(cli_common *c)
{
    memset(c, 0, sizeof *c);
    c->max_prec = 512;
}

void cli_common_apply(const cli_common *c)
{
    if (c->threads > 0) {
        ac_blas_set_threads(c->threads);
#ifdef _OPENMP
        omp_set_num_threads(c->threads);
#endif
    }
}

ac_schedule cli_schedule(const cli_common *c)
{
    return ac_schedule_upto(c->max_prec);
}

/* ---- staged output directory ---------------------------------------------- */

/* The replace mode of the library's staged directories (attncheck/fileio.h):
 * the whole directory is built aside and swapped in with one rename, after
 * the command has printed its result and stdout has been flushed (main.c,
 * cli_finish), so that a reader sees either the old complete set or the new
 * one, and a run whose output could not be written commits nothing. */

/* Names attncheck writes into an output directory: a non-empty DIR is
 * replaced only if it is a previous output (certificate.json and nothing but
 * .npy and .json files), never a directory of the user's. */
static int replaceable_outdir(const char *dir, ac_err *err)
{
    int st = ac_stagedir_check_files(dir, "certificate.json", ".npy,.json", err);
    char why[AC_ERR_MSG_MAX];
    if (st) {
        snprintf(why, sizeof why, "%s", err->msg);
        return ac_err_set(err, AC_ECANTCREAT, "%s: exists and is not an attncheck output "
                          "directory (%s); give a new or empty directory", dir, why);
    }
    return AC_OK;
}

int cli_outdir_begin(cli_outdir *o, const char *dir, ac_err *err)
{
    int st = ac_stagedir_begin_replace(&o->stage, dir, "output directory", replaceable_outdir,
                                       err);
    if (st)
        return st;
    free(outdir_stage_tmp);
    free(outdir_stage_dir);
    outdir_stage_tmp = strdup(o->stage.tmp);
    outdir_stage_dir = strdup(o->stage.dest);
    return AC_OK;
}

const char *cli_outdir_path(cli_outdir *o, const char *name)
{
    return ac_stagedir_path(&o->stage, name);
}

int cli_outdir_write_mat(cli_outdir *o, const char *name, const ac_mat *m, ac_err *err)
{
    const char *path = cli_outdir_path(o, name);
    if (!path)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    int st = ac_npy_write_mat(path, m, err);
    ac_stagedir_unstage_err(&o->stage, err);
    return st;
}

int cli_outdir_commit(cli_outdir *o, ac_err *err)
{
    if (outdir_npending == OUTDIR_PENDING_MAX) /* not reached by any command */
        return ac_stagedir_commit(&o->stage, err);
    /* the staged directory is complete: it is swapped in by cli_finish */
    outdir_pending[outdir_npending++] = o->stage;
    memset(&o->stage, 0, sizeof o->stage);
    return AC_OK;
}

void cli_outdir_abort(cli_outdir *o)
{
    ac_stagedir_abort(&o->stage);
}

/* ---- the end of every command: stdout, then the output directories -------- */

static int stdout_failed;

int cli_stdout_check(void)
{
    if (stdout_failed)
        return AC_ECANTCREAT;
    errno = 0;
    int bad = fflush(stdout) != 0;
    int e = errno;
    if (!bad && !ferror(stdout))
        return AC_OK;
    stdout_failed = 1;
    if (bad && e)
        cli_fail(AC_ECANTCREAT, "stdout: cannot write: %s", strerror(e));
    else
        cli_fail(AC_ECANTCREAT, "stdout: cannot write: a write to standard output failed");
    return AC_ECANTCREAT;
}

int cli_finish(int status)
{
    int out = cli_stdout_check();
    if (out && status < AC_EUSAGE)
        status = out;
    for (size_t i = 0; i < outdir_npending; i++) {
        ac_err err;
        ac_err_clear(&err);
        if (status >= AC_EUSAGE) {
            ac_stagedir_abort(&outdir_pending[i]);
        } else if (ac_stagedir_commit(&outdir_pending[i], &err)) {
            status = cli_fail_err(&err);
        }
    }
    outdir_npending = 0;
    free(outdir_stage_tmp);
    free(outdir_stage_dir);
    outdir_stage_tmp = outdir_stage_dir = NULL;
    return status;
}


int cli_outdir_write_json(cli_outdir *o, const char *name, void (*write)(ac_json *, const void *),
                          const void *ctx, ac_err *err)
{
    const char *path = cli_outdir_path(o, name);
    ac_atomic f;
    int st;
    if (!path)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    if ((st = ac_atomic_open(&f, path, err)))
        return st;
    ac_json *j = ac_json_new(f.fp, 2);
    write(j, ctx);
    int jst = ac_json_error(j);
    ac_json_free(j);
    if (jst) {
        ac_atomic_abort(&f);
        return ac_err_set(err, AC_ECANTCREAT, "%s: cannot write the certificate", path);
    }
    return ac_atomic_commit(&f, err);
}

/* ---- verdicts, numbers, JSON ---------------------------------------------- */

int cli_exit_of(ac_verdict v)
{
    switch (v) {
    case AC_PROVED: return CLI_EXIT_PROVED;
    case AC_REFUTED: return CLI_EXIT_REFUTED;
    default: return CLI_EXIT_UNDECIDED;
    }
}

const char *cli_num(char *buf, size_t n, double x)
{
    if (x != x)
        snprintf(buf, n, "nan");
    else if (isinf(x))
        snprintf(buf, n, x > 0 ? "inf" : "-inf");
    else
        snprintf(buf, n, "%.3g", x);
    return buf;
}

void cli_print_steps(const ac_step *steps, size_t n)
{
    char b1[AC_FMT_BOUND_BUFSIZE], b2[AC_FMT_BOUND_BUFSIZE], sb[64];
    for (size_t i = 0; i < n; i++) {
        const ac_step *s = &steps[i];
        printf("  %zu. %s\n     %s in [%s, %s]  %s\n", i + 1, s->name, s->quantity,
               ac_str_lo(b1, ".3g", s->lo), ac_str_hi(b2, ".3g", s->hi),
               ac_stage_name(sb, sizeof sb, s->stage, s->prec));
        if (s->note[0])
            printf("     %s\n", s->note);
    }
}

ac_json *cli_json_stdout(void)
{
    return ac_json_new(stdout, 2);
}

int cli_json_finish(ac_json *j)
{
    int st = ac_json_error(j);
    ac_json_free(j);
    if (cli_stdout_check())
        return AC_ECANTCREAT;
    if (st)
        return cli_fail(AC_EINTERNAL, "could not write the JSON output");
    return AC_OK;
}

