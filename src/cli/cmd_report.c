/* cmd_report.c — `attncheck report`: every check on built-in defaults. */
#include <config.h>

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/blas.h"
#include "cli.h"
#include "json_contract.h"
#include "plot.h"
#include "rep_learn.h"
#include "report_plot.h"
#include "separate_student.h"

const char cmd_report_help[] =
    "Usage: attncheck report [OPTIONS]\n"
    "\n"
    "Runs every check attncheck has on built-in default instances and prints a\n"
    "one-page table: claim, instance, verdict, the verdict the theory predicts,\n"
    "the certified bound, and the time taken.\n"
    "\n"
    "  --seed S      seed of the generated instances (default 1)\n"
    "  --quick       smaller instances (for a fast smoke test)\n"
    "  --json        print one JSON object with every row\n"
    "  --plot FILE   the summary figure (.svg, .png or .pdf) with gnuplot: per row\n"
    "                the verdict against the predicted one, the certified bound\n"
    "  --threads N   number of BLAS threads\n"
    "  -h, --help    show this help\n"
    "\n"
    "Exit status: 0 every verdict is the one the theory predicts, 1 some verdict\n"
    "contradicts it, 2 some check was undecided or could not run (and none\n"
    "contradicts), 64 usage error, 70 internal error, 73 the table cannot be\n"
    "written to standard output or the --plot file cannot be created.\n";

enum { OPT_SEED = 256, OPT_QUICK, OPT_JSON, OPT_THREADS, OPT_PLOT };

static const struct option long_opts[] = {
    {"seed", required_argument, NULL, OPT_SEED},
    {"quick", no_argument, NULL, OPT_QUICK},
    {"json", no_argument, NULL, OPT_JSON},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"plot", required_argument, NULL, OPT_PLOT},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* The rows, in order: one function per check module. */
static void (*const row_sources[])(cli_report *) = {
    ac_report_rows_theorem1,
    report_rows_theorem2,
    report_rows_student,
    ac_report_rows_condition,
    report_rows_train,
    ac_report_rows_learn,
    ac_report_rows_trained_kappa,
};

int cmd_report(int argc, char **argv)
{
    cli_report rep;
    cli_common common;
    int json = 0, c, st;
    const char *plot = NULL;
    report_plot fig;
    memset(&fig, 0, sizeof fig);
    memset(&rep, 0, sizeof rep);
    rep.seed = 1;
    cli_common_init(&common);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
        st = AC_OK;
        switch (c) {
        case OPT_SEED: st = cli_parse_u64("--seed", optarg, &rep.seed); break;
        case OPT_QUICK: rep.quick = 1; break;
        case OPT_JSON: json = 1; break;
        case OPT_THREADS: st = cli_parse_threads(optarg, &common.threads); break;
        case OPT_PLOT:
            plot = optarg;
            if (!cli_plot_terminal(plot))
                st = cli_usage("--plot %s: the file name must end in .svg, .png or .pdf", plot);
            break;
        default: return cli_bad_option(c, argv);
        }
        if (st)
            return st;
    }
    if ((st = cli_no_operands(argc, argv)))
        return st;
    cli_common_apply(&common);
    if ((st = report_plot_open(&fig, plot)))
        return st;

    double t0 = ac_seconds();
    for (size_t i = 0; i < sizeof row_sources / sizeof *row_sources; i++)
        row_sources[i](&rep);
    double total = ac_seconds() - t0;

    size_t agree = 0, contra = 0, undecided = 0;
    for (size_t i = 0; i < rep.n; i++) {
        cli_report_row *r = &rep.rows[i];
        if (r->error || r->verdict == AC_UNDECIDED)
            undecided++;
        else if (r->verdict == r->expected)
            agree++;
        else
            contra++;
    }
    if ((st = report_plot_write(&fig, &rep)))
        goto out;
    if (json) {
        ac_json *j = cli_json_stdout();
        /* one verdict and certificate per row, under "rows" */
        cli_json_envelope_begin(j, "report", NULL, NULL);
        cli_json_parameters_begin(j, rep.seed);
        ac_json_kv_bool(j, "quick", rep.quick);
        cli_json_parameters_end(j);
        ac_json_kv_uint(j, "seed", rep.seed);
        ac_json_kv_bool(j, "quick", rep.quick);
        ac_json_kv_string(j, "blas_core", ac_blas_corename());
        ac_json_key(j, "rows");
        ac_json_begin_array(j);
        for (size_t i = 0; i < rep.n; i++) {
            cli_report_row *r = &rep.rows[i];
            ac_json_begin_object(j);
            ac_json_kv_string(j, "claim", r->claim);
            ac_json_kv_string(j, "instance", r->instance);
            ac_json_kv_string(j, "verdict", ac_verdict_name(r->verdict));
            ac_json_kv_string(j, "expected", ac_verdict_name(r->expected));
            ac_json_kv_string(j, "bound", r->bound);
            ac_json_kv_string(j, "quantity", r->quantity[0] ? r->quantity : NULL);
            ac_json_kv_number(j, "lo", r->lo);
            ac_json_kv_number(j, "hi", r->hi);
            ac_json_kv_number(j, "seconds", r->seconds);
            ac_json_kv_string(j, "detail", r->detail);
            if (r->error)
                ac_json_kv_int(j, "error", r->error);
            ac_json_end_object(j);
        }
        ac_json_end_array(j);
        ac_json_kv_int(j, "as_expected", (long long)agree);
        ac_json_kv_int(j, "contradicting", (long long)contra);
        ac_json_kv_int(j, "undecided", (long long)undecided);
        cli_json_seconds(j, total);
        ac_json_end_object(j);
        if ((st = cli_json_finish(j)))
            goto out;
    } else {
        /* 98 columns at most: the instance on a line of its own, under
         * the claim (one line would need 125) */
        printf("attncheck report: built-in defaults, seed %llu%s, BLAS %s\n\n",
               (unsigned long long)rep.seed, rep.quick ? ", quick" : "", ac_blas_corename());
        printf("%-36s %-9s %-9s %-30s %8s\n    %s\n", "claim", "verdict", "expected", "bound",
               "time", "instance");
        for (size_t i = 0; i < rep.n; i++) {
            cli_report_row *r = &rep.rows[i];
            const char *mark = (r->error || r->verdict == AC_UNDECIDED) ? " ?"
                               : (r->verdict == r->expected ? "" : " !");
            printf("%-36.36s %-9s %-9s %-30.30s %7.3fs%s\n    %.90s\n", r->claim,
                   ac_verdict_name(r->verdict), ac_verdict_name(r->expected),
                   r->error ? "error" : r->bound, r->seconds, mark, r->instance);
        }
        printf("\n%zu checks: %zu as the theory predicts, %zu contradicting (!), %zu undecided "
               "(?); %.2f s\n", rep.n, agree, contra, undecided, total);
        for (size_t i = 0; i < rep.n; i++)
            if (rep.rows[i].error)
                printf("  error in '%s': %s\n", rep.rows[i].claim, rep.rows[i].detail);
    }
    st = contra ? CLI_EXIT_REFUTED : (undecided ? CLI_EXIT_UNDECIDED : CLI_EXIT_PROVED);
out:
    report_plot_abort(&fig);
    free(rep.rows);
    return st;
}
