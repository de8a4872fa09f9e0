/* cmd_impl.h — internals of src/commands, the program's commands as library
 * calls (attncheck/commands.h); not installed.
 *
 * Files of src/commands/ (this map; tests/docs.sh checks it against local.mk):
 *   the layer every command shares:
 *     options.c        one description per option: parsing an option's text
 *                      into its field by the option table;
 *     request.c        the generic request (by option names), the list of
 *                      commands, the tables' validation, the tables as JSON
 *                      for bindings;
 *     envelope.c       the members every JSON result shares (envelope,
 *                      parameters, certificates, proof steps, stage names);
 *     inputs.c         inputs from files or arrays in memory, threads, the
 *                      memory estimates checked before any work;
 *     words.c          a request's options as the words of a command line
 *                      and back (condition's shard files);
 *     cmd_impl.h       this header;
 *   the commands:
 *     rep_theorem.c    rep-theorem: Theorem 1, and --learn;
 *     separate.c       separate: Theorem 2, --embed and --student (options,
 *                      layers, run, arrays);
 *     separate_json.c  separate's JSON result;
 *     condition.c, condition_json.c, merge.c, cond_cmd.h  condition and
 *                      merge;
 *     train.c          train: the configuration, the training loop, fit-p's
 *                      certificate;
 *     report.c         report: every row source, the outcome;
 *     inspect.c        inspect: a pretrained model's layers and heads (options,
 *                      model and input, run, shards and their merge, JSON,
 *                      arrays);
 *     inspect_shard.c  inspect's shard files (writing, reading, the checks of
 *                      each head's record);
 *     inspect_cmd.h    what inspect.c, inspect_shard.c and merge.c share;
 *   the report's rows:
 *     report_rows.c    the list and its helpers;
 *     report_theorem1.c  Theorem 1;
 *     report_theorem2.c  Theorem 2 and the students, and the directed
 *                      numbers of printed bounds;
 *     report_condition.c  Theorem 3.2 of paper 2 and trained heads;
 *     report_train.c   a head trained by AdamW;
 *   test/              the unit tests, one Check program per file:
 *     test_commands.c  every option table against its request type, and
 *                      bad tables refused.
 */
#ifndef AC_COMMANDS_CMD_IMPL_H
#define AC_COMMANDS_CMD_IMPL_H

#include "attncheck/commands.h"

/* An input matrix: the array given in memory (when mem->data), else the
 * .npy file path; name is the array's name in messages when in memory.
 * AC_EDATA "NAME: expected a 2-D array, got shape (..)". */
int ac_cmd_input_mat(ac_mat *m, const char *path, const ac_array *mem, const char *name,
                     ac_err *err);
/* The same for a 1-D vector (malloc'ed into *v, *n entries). */
int ac_cmd_input_vec(double **v, size_t *n, const char *path, const ac_array *mem,
                     const char *name, ac_err *err);
/* The name of an input in messages and JSON: the file, or name when given
 * in memory. */
const char *ac_cmd_input_name(const char *path, const ac_array *mem, const char *name);

/* --threads N (0: leave the defaults): BLAS and OpenMP threads. */
void ac_cmd_apply_threads(long threads);

/* The memory a command needs (an estimate in bytes, from measured peak
 * sizes), and the check before any work: AC_OK, or status with "WHAT needs
 * about X GiB of memory (an estimate); only Y GiB are available (SOURCE);
 * nothing was computed" when the estimate exceeds 90% of
 * ac_memory_available(). */
double ac_cmd_mem_rep_theorem(size_t d, size_t n);
/* separate: f_W of h heads of size p, g_V of head size dp, n tokens, k
 * sample inputs kept (--embed) */
double ac_cmd_mem_separate(size_t d, size_t h, size_t p, size_t dp, size_t n, size_t k);
int ac_cmd_memory_check(double need, int status, ac_err *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Append the matrix m as the array name to out[k] (if k < max); returns k + 1. */
size_t ac_cmd_out_mat(ac_out_array *out, size_t k, size_t max, const char *name,
                      const ac_mat *m);

/* x as %.3g, with inf and nan spelled out (report rows). */
/* separate's JSON result (separate_json.c): the object of the separation,
 * of --embed or of --student. */
void ac_sep_write_json(ac_json *j, const void *q, const void *res);

/* %.3g rounded to nearest, with inf, -inf and nan spelled out (the report's
 * rows; a bound printed rounded outward is ac_str_lo / ac_str_hi's (attncheck/json.h)). */
const char *ac_cmd_num3(char *buf, size_t n, double x);

/* --plot FILE: the name must end in .svg, .png or .pdf. */
int ac_cmd_check_plot(const ac_opt *o, const void *q, const char *text, ac_err *err);

/* ---- words.c ---- */
/* Option o was given in q: its set_offset (ac_opt_given), else a flag or a
 * string set. */
int ac_cmd_opt_given(const ac_opt *o, const void *q);
/* The value of option o in q as the text ac_opt_set reads back to the same
 * value, into buf: 1, or 0 for a flag (no value), -1 when it does not fit
 * or has no text (a NULL string, AC_OPT_STRINGS). */
int ac_cmd_opt_format(char *buf, size_t n, const ac_opt *o, const void *q);
/* The options of q that were given (set_offset, a flag set, a string set)
 * and that keep(o) accepts, as the words of a command line in table order
 * ("--seq", "16", "--certify", ...); *words malloc'ed (ac_cmd_words_free). */
int ac_cmd_words(char ***words, size_t *n, const ac_opt *table, const void *q,
                 int (*keep)(const ac_opt *o), ac_err *err);
void ac_cmd_words_free(char **words, size_t n);
/* Set the options of q from words: "--NAME VALUE", "--NAME=VALUE",
 * "--FLAG", NAME exact or a prefix of one option (as getopt_long reads a
 * command line).  AC_EUSAGE with *bad the index of a word that is refused
 * (not an option, or an option keep(o) refuses), or with the option's
 * message for a bad or missing value (*bad = (size_t)-1).  The string
 * values point into words. */
int ac_cmd_set_words(const ac_opt *table, void *q, char *const *words, size_t n,
                     int (*keep)(const ac_opt *o), size_t *bad, ac_err *err);

#endif
