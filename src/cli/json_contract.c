/* json_contract.c — the shared top-level keys of every --json document
 * (json_contract.h). */
#include <config.h>

#include "cli.h"
#include "json_contract.h"

void cli_json_envelope_begin(ac_json *j, const char *command, const char *verdict,
                             const ac_cert *cert)
{
    ac_json_begin_object(j);
    ac_json_kv_string(j, "command", command);
    ac_json_kv_string(j, "version", PACKAGE_VERSION);
    ac_json_kv_int(j, "schema_version", CLI_JSON_SCHEMA_VERSION);
    ac_json_kv_string(j, "verdict", verdict);
    ac_json_key(j, "certificate");
    if (cert)
        cli_json_cert(j, cert);
    else
        ac_json_null(j);
}

void cli_json_parameters_begin(ac_json *j, uint64_t seed)
{
    ac_json_key(j, "parameters");
    ac_json_begin_object(j);
    ac_json_kv_uint(j, "seed", seed);
}

void cli_json_parameters_end(ac_json *j)
{
    ac_json_end_object(j);
}

void cli_report_bounds(cli_report_row *row, const char *quantity, double lo, double hi)
{
    ac_report_bounds(row, quantity, lo, hi);
}

void cli_report_last_bounds(cli_report *rep, const char *quantity, double lo, double hi)
{
    if (rep->n > 0)
        ac_report_bounds(&rep->rows[rep->n - 1], quantity, lo, hi);
}

static double clock_start;

void cli_json_clock_start(void)
{
    clock_start = ac_seconds();
}

double cli_json_elapsed(void)
{
    return ac_seconds() - clock_start;
}

void cli_json_seconds(ac_json *j, double seconds)
{
    ac_json_kv_number(j, "seconds", seconds);
}
