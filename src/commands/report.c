/* report.c — the command report (attncheck/commands.h): every check on
 * built-in instances, one row each (report_rows.c and the theorems'
 * report_*.c), and how they came out against the verdicts expected. */
#include <config.h>

#include <stddef.h>
#include <stdlib.h>

#include "attncheck/blas.h"
#include "attncheck/commands.h"
#include "commands/cmd_impl.h"

#define Q(f) offsetof(ac_report_request, f)
#define F(f) AC_OPT_FIELD(ac_report_request, f)
#define S(f) AC_OPT_SET(ac_report_request, f)
#define A(f) AC_OPT_ARRAY_AT(ac_report_request, f)
#define NS AC_OPT_NOSET

static const ac_opt report_opts[] = {
    {.name = "seed", .kind = AC_OPT_U64, F(seed), .set_offset = NS, .def = "1",
     .arg = "S", .help = "seed of the generated instances"},
    {.name = "quick", .kind = AC_OPT_FLAG, F(quick), .set_offset = NS,
     .help = "smaller instances (for a fast smoke test)"},
    {.name = "json", .kind = AC_OPT_FLAG, F(json), .set_offset = NS,
     .flags = AC_OPTF_PROGRAM, .help = "print one JSON object with every row"},
    {.name = "plot", .kind = AC_OPT_STRING, F(plot), .set_offset = NS, .arg = "FILE",
     .flags = AC_OPTF_PROGRAM, .check = ac_cmd_check_plot,
     .help = "the summary figure (.svg, .png or .pdf) with gnuplot: per row the verdict against "
             "the predicted one, the certified bound"},
    {.name = "threads", .kind = AC_OPT_LONG, F(threads), .set_offset = NS, .min = 1,
     .max = 1024, .arg = "N", .help = "number of BLAS threads"},
    {0},
};

static const char report_description[] =
    "Runs every check attncheck has on built-in default instances and prints a\n"
    "one-page table: claim, instance, verdict, the expected verdict (a theorem's\n"
    "consequence, a prediction for the sample, or an empirical finding: see\n"
    "attncheck-report(1)), the certified bound, and the time taken.";

static const char report_epilogue[] =
    "Exit status: 0 every verdict is the expected one, 1 some verdict\n"
    "contradicts it, 2 some check was undecided or could not run (and none\n"
    "contradicts), 64 usage error, 70 internal error, 73 the table cannot be\n"
    "written to standard output or the --plot file cannot be created.";

/* The rows, in the report's order. */
static void all_rows(ac_report *rep)
{
    ac_report_rows_theorem1(rep);
    ac_report_rows_theorem2(rep);
    ac_report_rows_student(rep);
    ac_report_rows_condition(rep);
    ac_report_rows_train(rep);
    ac_report_rows_learn(rep);
    ac_report_rows_trained_kappa(rep);
}

static int report_run(void *rv, const void *qv, void *hooks, ac_err *err)
{
    ac_report_result *res = rv;
    const ac_report_request *q = qv;
    (void)err;
    (void)hooks;
    ac_cmd_apply_threads(q->threads);
    res->rep.seed = q->seed;
    res->rep.quick = q->quick;
    double t0 = ac_seconds();
    all_rows(&res->rep);
    res->seconds = ac_seconds() - t0;
    for (size_t i = 0; i < res->rep.n; i++) {
        ac_verdict v = ac_report_row_outcome(&res->rep.rows[i]);
        if (v == AC_PROVED)
            res->as_expected++;
        else if (v == AC_REFUTED)
            res->contradicting++;
        else
            res->undecided++;
    }
    res->outcome = res->contradicting ? AC_REFUTED : res->undecided ? AC_UNDECIDED : AC_PROVED;
    return AC_OK;
}

static void report_write_json(ac_json *j, const void *qv, const void *rv)
{
    const ac_report_result *res = rv;
    const ac_report *rep = &res->rep;
    (void)qv;
    /* one verdict and certificate per row, under "rows" */
    ac_json_envelope_begin(j, "report", NULL, NULL);
    ac_json_parameters_begin(j, rep->seed);
    ac_json_kv_bool(j, "quick", rep->quick);
    ac_json_parameters_end(j);
    ac_json_kv_uint(j, "seed", rep->seed);
    ac_json_kv_bool(j, "quick", rep->quick);
    ac_json_kv_string(j, "blas_core", ac_blas_corename());
    ac_json_key(j, "rows");
    ac_json_begin_array(j);
    for (size_t i = 0; i < rep->n; i++) {
        const ac_report_row *r = &rep->rows[i];
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
    ac_json_kv_int(j, "as_expected", (long long)res->as_expected);
    ac_json_kv_int(j, "contradicting", (long long)res->contradicting);
    ac_json_kv_int(j, "undecided", (long long)res->undecided);
    ac_json_kv_number(j, "seconds", res->seconds);
    ac_json_end_object(j);
}

static int report_status(const void *qv, const void *rv)
{
    (void)qv;
    return ac_verdict_status(((const ac_report_result *)rv)->outcome);
}

static void report_result_free(void *rv)
{
    ac_report_free(&((ac_report_result *)rv)->rep);
}

const ac_command ac_cmd_report = {
    .name = "report",
    .summary = "run every check on built-in defaults and print a one-page table",
    .synopsis = "attncheck report [OPTIONS]",
    .description = report_description,
    .epilogue = report_epilogue,
    .opts = report_opts,
    .request_size = sizeof(ac_report_request),
    .result_size = sizeof(ac_report_result),
    .run = report_run,
    .write_json = report_write_json,
    .status = report_status,
    .result_free = report_result_free,
};
