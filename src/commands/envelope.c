/* envelope.c — the members every command's JSON result shares
 * (attncheck(1), section JSON; the schemas in schema/): the envelope, the
 * parameters, a certificate, the proof steps, the names of the stages. */
#include <config.h>

#include "attncheck/commands.h"

const char *ac_stage_name(char *buf, size_t n, int stage, long prec)
{
    if (stage == AC_STAGE_DOUBLE)
        snprintf(buf, n, "stage 0 (double)");
    else if (stage == AC_STAGE_EXACT)
        snprintf(buf, n, "exact");
    else if (stage == AC_STAGE_NONE)
        snprintf(buf, n, "not computed");
    else
        snprintf(buf, n, "stage %d (%ld-bit balls)", stage, prec);
    return buf;
}

void ac_json_cert(ac_json *j, const ac_cert *c)
{
    char sb[64];
    ac_json_begin_object(j);
    ac_json_kv_string(j, "verdict", ac_verdict_name(c->verdict));
    ac_json_kv_string(j, "quantity", c->quantity);
    ac_json_kv_string(j, "relation", ac_relation_name(c->rel));
    ac_json_kv_number(j, "tau", c->tau);
    ac_json_kv_number(j, "lo", c->lo);
    ac_json_kv_number(j, "hi", c->hi);
    ac_json_kv_int(j, "stage", c->stage);
    ac_json_kv_string(j, "stage_name", ac_stage_name(sb, sizeof sb, c->stage, c->prec));
    ac_json_kv_int(j, "precision_bits", c->prec);
    ac_json_kv_string(j, "method", c->method);
    ac_json_kv_number(j, "seconds", c->seconds);
    ac_json_end_object(j);
}

void ac_json_steps(ac_json *j, const ac_step *steps, size_t n)
{
    char sb[64];
    ac_json_begin_array(j);
    for (size_t i = 0; i < n; i++) {
        const ac_step *s = &steps[i];
        ac_json_begin_object(j);
        ac_json_kv_string(j, "step", s->name);
        ac_json_kv_string(j, "quantity", s->quantity);
        ac_json_kv_number(j, "lo", s->lo);
        ac_json_kv_number(j, "hi", s->hi);
        ac_json_kv_string(j, "stage", ac_stage_name(sb, sizeof sb, s->stage, s->prec));
        ac_json_kv_string(j, "note", s->note);
        ac_json_end_object(j);
    }
    ac_json_end_array(j);
}

void ac_json_envelope_begin(ac_json *j, const char *command, const char *verdict,
                            const ac_cert *cert)
{
    ac_json_begin_object(j);
    ac_json_kv_string(j, "command", command);
    ac_json_kv_string(j, "version", PACKAGE_VERSION);
    ac_json_kv_int(j, "schema_version", AC_JSON_SCHEMA_VERSION);
    ac_json_key(j, "verdict");
    if (verdict)
        ac_json_string(j, verdict);
    else
        ac_json_null(j);
    ac_json_key(j, "certificate");
    if (cert)
        ac_json_cert(j, cert);
    else
        ac_json_null(j);
}

void ac_json_parameters_begin(ac_json *j, uint64_t seed)
{
    ac_json_key(j, "parameters");
    ac_json_begin_object(j);
    ac_json_kv_uint(j, "seed", seed);
}

void ac_json_parameters_end(ac_json *j)
{
    ac_json_end_object(j);
}

int ac_verdict_status(ac_verdict v)
{
    return v == AC_PROVED ? 0 : v == AC_REFUTED ? 1 : 2;
}
