/* cli.h — shared pieces of the attncheck program (not part of the library).
 *
 * Exit status, shared by every command (attncheck(1), EXIT STATUS):
 *   0 proved, 1 refuted, 2 undecided, 64 usage error, 65 bad input data,
 *   66 cannot open input, 70 internal error, 73 cannot create output.
 */
#ifndef AC_CLI_H
#define AC_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "attncheck/commands.h"
#include "attncheck/common.h"
#include "attncheck/fileio.h"
#include "attncheck/json.h"
#include "attncheck/train.h"
#include "attncheck/verdict.h"

#define CLI_EXIT_PROVED 0
#define CLI_EXIT_REFUTED 1
#define CLI_EXIT_UNDECIDED 2

/* A subcommand: git-style table entry (main.c).  A command of the library
 * (lib, attncheck/commands.h) has its summary and --help from there. */
typedef struct {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the command name */
    const char *summary;               /* one line for `attncheck --help` */
    const char *help;                  /* full text for `CMD --help` / `help CMD` */
    const ac_command *lib;             /* the library's command, or NULL */
} cli_command;

/* ---- the option tables (request_cli.c) ---- */
/* Parse argv (argv[0] the command) into the request by its option table:
 * AC_OK, or AC_EUSAGE after the usage message. */
int cli_parse_request(ac_request *r, int argc, char **argv);
/* The rules between options: AC_OK, or AC_EUSAGE after the usage message
 * (another status after its message when the rules read a file). */
int cli_check_request(ac_request *r);
/* cli_check_request, then the run (errors printed). */
int cli_run_request(ac_request *r, void *hooks);
/* An option's help paragraph with its default: a "(default" followed by
 * ')', ';' or ',' in the help gets " DEF" inserted, else "(default DEF)" is
 * appended. */
void cli_opt_help(char *buf, size_t n, const ac_opt *o);
/* --help of a command from its table. */
void cli_print_help(FILE *f, const ac_command *c);
/* The result as one JSON object on stdout. */
int cli_print_json(const ac_request *r);
/* --out-dir DIR: the result's arrays as NAME.npy and certificate.json,
 * staged and swapped in by cli_finish. */
int cli_write_outdir(const ac_request *r, const char *dir);
/* The same without certificate.json (separate --student, whose directory
 * never had one). */
int cli_write_outdir_arrays(const ac_request *r, const char *dir);

extern const cli_command cli_commands[];
const cli_command *cli_find_command(const char *name);

/* The command running now, for messages ("attncheck rep-theorem: ..."). */
extern const char *cli_cmd_name;

/* Print "attncheck CMD: message" on stderr and return status. */
int cli_fail(int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* How the command spells the library's parameters (ac_err.fields): a table
 * ending with {NULL, NULL}.  A field not in the table is spelled "--" + the
 * field name with '_' as '-' ("head_dim" -> "--head-dim"). */
typedef struct {
    const char *field, *flag;
} cli_flag;
/* Set the table of the running command (NULL: the default spelling only). */
void cli_set_flags(const cli_flag *map);
/* The message of err with every parameter it names (err->fields) spelled as
 * the command's option, into buf. */
const char *cli_err_message(char *buf, size_t n, const ac_err *err);
/* Print the library error (cli_err_message) and return its status. */
int cli_fail_err(const ac_err *err);
/* Usage error: the message, then "Try 'attncheck CMD --help'." */
int cli_usage(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* The end of every command's getopt_long loop (optstring starting with ':'):
 * cli_bad_option is the usage error for getopt's ':' (a missing value) or
 * '?' (an unknown option) result c; cli_no_operands the usage error for an
 * argument left after the options (AC_OK if none). */
int cli_bad_option(int c, char **argv);
int cli_no_operands(int argc, char **argv);

/* Strict number parsing for option values; on error print a usage error and
 * return AC_EUSAGE. */
int cli_parse_size(const char *opt, const char *s, size_t min, size_t max, size_t *out);
int cli_parse_u64(const char *opt, const char *s, uint64_t *out);
int cli_parse_double(const char *opt, const char *s, double min, double max, double *out);
int cli_parse_int(const char *opt, const char *s, long min, long max, long *out);

/* --threads N: 1..1024 (usage error otherwise). */
int cli_parse_threads(const char *s, int *out);

/* Common options of the commands. */
typedef struct {
    int json;          /* --json */
    int trace;         /* --trace */
    const char *out_dir;
    long max_prec;     /* --max-prec BITS (ball stages up to BITS; 0 = none) */
    int threads;       /* --threads N (0 = library default) */
} cli_common;

void cli_common_init(cli_common *c);
/* Apply --threads. */
void cli_common_apply(const cli_common *c);
ac_schedule cli_schedule(const cli_common *c);

/* Output directory (--out-dir DIR), replaced as a whole set: the files are
 * written into a private staging directory beside DIR, and the complete
 * directory is swapped in with one rename (ac_stagedir_begin_replace) by
 * cli_finish, after stdout has been flushed, so that a reader sees either
 * the old complete set or the new one, never a mix, and nothing when the run
 * fails.  An existing non-empty DIR is replaced only if it is a previous
 * attncheck output (certificate.json, nothing but .npy and .json files). */
typedef struct {
    ac_stagedir stage;
} cli_outdir;

int cli_outdir_begin(cli_outdir *o, const char *dir, ac_err *err);
/* Path in the staging area for the file `name` (remembered for commit). */
const char *cli_outdir_path(cli_outdir *o, const char *name);
/* The staged directory is complete: it is swapped in by cli_finish (o is
 * zeroed; cli_outdir_abort on it does nothing). */
int cli_outdir_commit(cli_outdir *o, ac_err *err);
void cli_outdir_abort(cli_outdir *o);
/* Write the matrix as NAME (.npy) into the staging area. */
int cli_outdir_write_mat(cli_outdir *o, const char *name, const ac_mat *m, ac_err *err);
/* Write NAME as a JSON document (2-space indent) produced by write(j, ctx),
 * atomically, into the staging area; AC_ECANTCREAT "NAME: cannot write the
 * certificate" if the JSON writer failed. */
int cli_outdir_write_json(cli_outdir *o, const char *name, void (*write)(ac_json *, const void *),
                          const void *ctx, ac_err *err);

/* Exit status of a verdict. */
int cli_exit_of(ac_verdict v);

/* Format a double for tables: %.3g, "inf", "-inf", "nan". */
const char *cli_num(char *buf, size_t n, double x);

/* The proof steps of --trace as text (numbered, indented; their JSON is the
 * library's ac_json_steps, stage names ac_stage_name). */
void cli_print_steps(const ac_step *steps, size_t n);

/* Open stdout for --json output (one JSON object) */
ac_json *cli_json_stdout(void);
int cli_json_finish(ac_json *j);

/* Flush stdout and check its error flag: AC_OK, or AC_ECANTCREAT after one
 * message "stdout: cannot write: <strerror>" (printed once per run). */
int cli_stdout_check(void);
/* The end of every command (main.c): check stdout (a failed write turns a
 * verdict's status into AC_ECANTCREAT), then swap in the output directories
 * committed by the command if the status is a verdict, or remove them if it
 * is an error.  Returns the exit status. */
int cli_finish(int status);

/* Commands */
int cmd_rep_theorem(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_separate(int argc, char **argv);
int cmd_condition(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_inspect(int argc, char **argv);

#endif
