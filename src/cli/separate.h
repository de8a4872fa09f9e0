/* separate.h — the pieces of `attncheck separate` (cmd_separate.c parses and
 * runs, separate_text.c prints, separate_json.c writes JSON and --out-dir,
 * separate_report.c adds the report's Theorem 2 rows); not part of the
 * library. */
#ifndef AC_CLI_SEPARATE_H
#define AC_CLI_SEPARATE_H

#include <stdint.h>

#include "attncheck/npy.h"
#include "attncheck/theorem2.h"
#include "cli.h"

/* The options of `attncheck separate`. */
typedef struct {
    const char *vdir, *wdir;
    long kase;
    size_t d, h, dp, n, tries, samples;
    int have_d, have_h, have_dp, have_samples, have_tol;
    uint64_t seed;
    double tol;
    long optimize;
    int embed, audit;
    cli_common common;
} sep_args;

/* Everything one run prints or writes: the options, how the layers were
 * made (vdesc, wdesc, and for --embed the rescaling embnote), the layers,
 * and the result of the separation (r) or of the embedding check (e). */
typedef struct {
    const sep_args *a;
    const char *vdesc, *wdesc;
    const ac_mh *W, *V;
    const ac_t2_result *r;
    const ac_t2_embed_result *e;
    const char *embnote;
} sep_out;

/* separate_text.c: x to 3 significant digits rounded down (up = 0) or up
 * (up = 1), so that a printed bound is still a bound */
const char *sep_num_dir(char *buf, size_t n, double x, int up);
/* separate_text.c: the text report of a separation / an embedding check */
void sep_print(const sep_out *c);
void sep_print_embed(const sep_out *c);

/* separate_json.c: the JSON object of a separation / an embedding check */
void sep_json(ac_json *j, const sep_out *c);
void sep_json_embed(ac_json *j, const sep_out *c);
/* --out-dir: X.npy (if X), samples.npy (if samples), the parameters of both
 * layers and certificate.json (c->e set: the embedding check's), all or
 * none; prints the error and returns its status on failure. */
int sep_write_outputs(const sep_out *c, const ac_mat *X, const ac_array *samples);
/* The samples of the embedding check as one (k, d, n) array. */
int sep_embed_samples(ac_array *S, const ac_mh *W, size_t n, size_t k, uint64_t seed,
                      ac_err *err);

#endif
