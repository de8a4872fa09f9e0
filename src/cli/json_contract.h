/* json_contract.h — the top-level keys every command's --json shares
 * (attncheck(1), section JSON; schemas in schema/).
 *
 * Each command's JSON writer opens its object with cli_json_envelope_begin,
 * writes the options that define the run between cli_json_parameters_begin
 * and cli_json_parameters_end, its own members, then cli_json_seconds, and
 * closes the object with ac_json_end_object. */
#ifndef ATTNCHECK_CLI_JSON_CONTRACT_H
#define ATTNCHECK_CLI_JSON_CONTRACT_H

#include <stdint.h>

#include "attncheck/json.h"
#include "attncheck/verdict.h"
#include "cli.h"

/* Raised when a key is removed or renamed, or a value changes type or
 * meaning; adding keys does not raise it. */
#define CLI_JSON_SCHEMA_VERSION 1

/* Open the top-level object and write "command", "version",
 * "schema_version", "verdict" (null when verdict is NULL: the run decides
 * nothing) and "certificate" (the object of cli_json_cert, or null when
 * cert is NULL: the run has no single certificate). */
void cli_json_envelope_begin(ac_json *j, const char *command, const char *verdict,
                             const ac_cert *cert);

/* "parameters": { "seed": seed, ... — the caller adds the other options that
 * define the run, then calls cli_json_parameters_end. */
void cli_json_parameters_begin(ac_json *j, uint64_t seed);
void cli_json_parameters_end(ac_json *j);

/* "seconds": the wall time of the run. */
void cli_json_seconds(ac_json *j, double seconds);

/* A report row's numeric bounds: quantity lies in [lo, hi] (rows without
 * a call have quantity null, lo and hi null in --json).  The _last form
 * sets the row added last, if any. */
void cli_report_bounds(cli_report_row *row, const char *quantity, double lo, double hi);
void cli_report_last_bounds(cli_report *rep, const char *quantity, double lo, double hi);

/* Wall seconds since cli_json_clock_start (called once, first thing in
 * main), for writers that have no timer of their own. */
void cli_json_clock_start(void);
double cli_json_elapsed(void);

#endif
