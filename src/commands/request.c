/* request.c — a command's request reached by the names of its options
 * (attncheck/commands.h): what the program and the Python package use.  The
 * request owns the strings and arrays it was given. */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "attncheck/commands.h"
#include "attncheck/inspect.h"

struct ac_request {
    const ac_command *cmd;
    void *q, *res;
    int ran;          /* 1 after run (res filled, or partly on error) */
    int ok;           /* the run succeeded */
    char **strings;   /* copies of the strings set */
    size_t nstrings;
};

const ac_command *const ac_commands[] = {
    &ac_cmd_rep_theorem,
    &ac_cmd_separate,
    &ac_cmd_condition,
    &ac_cmd_merge,
    &ac_cmd_train,
    &ac_cmd_report,
    &ac_cmd_inspect,
    NULL,
};

const ac_command *ac_command_find(const char *name)
{
    for (size_t i = 0; ac_commands[i]; i++)
        if (strcmp(ac_commands[i]->name, name) == 0)
            return ac_commands[i];
    return NULL;
}

static const char *const ctype_names[] = {
    [AC_OPT_T_UNKNOWN] = "not recorded", [AC_OPT_T_INT] = "int", [AC_OPT_T_LONG] = "long",
    [AC_OPT_T_ULONG] = "unsigned long", [AC_OPT_T_ULLONG] = "unsigned long long",
    [AC_OPT_T_DOUBLE] = "double", [AC_OPT_T_STRING] = "const char *",
    [AC_OPT_T_SIZES] = "ac_opt_sizes", [AC_OPT_T_STRINGS] = "ac_opt_strings",
    [AC_OPT_T_PAIR] = "size_t[2]", [AC_OPT_T_ARRAY] = "ac_array", [AC_OPT_T_OTHER] = "another type",
};

/* The C type an option's kind stores. */
static ac_opt_ctype kind_ctype(ac_opt_kind k)
{
    switch (k) {
    case AC_OPT_FLAG:
    case AC_OPT_CHOICE: return AC_OPT_T_INT;
    case AC_OPT_SIZE: return AC_OPT_CTYPE((size_t)0);
    case AC_OPT_LONG: return AC_OPT_T_LONG;
    case AC_OPT_U64: return AC_OPT_CTYPE((uint64_t)0);
    case AC_OPT_DOUBLE: return AC_OPT_T_DOUBLE;
    case AC_OPT_STRING: return AC_OPT_T_STRING;
    case AC_OPT_SIZES: return AC_OPT_T_SIZES;
    case AC_OPT_RANGE:
    case AC_OPT_SHARD: return AC_OPT_T_PAIR;
    case AC_OPT_STRINGS: return AC_OPT_T_STRINGS;
    }
    return AC_OPT_T_OTHER;
}

static size_t ctype_size(ac_opt_ctype t)
{
    switch (t) {
    case AC_OPT_T_INT: return sizeof(int);
    case AC_OPT_T_LONG: return sizeof(long);
    case AC_OPT_T_ULONG: return sizeof(unsigned long);
    case AC_OPT_T_ULLONG: return sizeof(unsigned long long);
    case AC_OPT_T_DOUBLE: return sizeof(double);
    case AC_OPT_T_STRING: return sizeof(const char *);
    case AC_OPT_T_SIZES: return sizeof(ac_opt_sizes);
    case AC_OPT_T_STRINGS: return sizeof(ac_opt_strings);
    case AC_OPT_T_PAIR: return 2 * sizeof(size_t);
    case AC_OPT_T_ARRAY: return sizeof(ac_array);
    default: return 1;
    }
}

int ac_command_validate(const ac_command *c, ac_err *err)
{
    for (const ac_opt *o = c->opts; o && o->name; o++) {
        ac_opt_ctype want = kind_ctype(o->kind);
        if (o->ctype != want)
            return ac_err_set(err, AC_EINTERNAL, "%s --%s: its field is %s, its kind stores %s",
                              c->name, o->name, ctype_names[o->ctype], ctype_names[want]);
        if (o->offset + ctype_size(o->ctype) > c->request_size)
            return ac_err_set(err, AC_EINTERNAL, "%s --%s: its field is outside the request",
                              c->name, o->name);
        if (o->set_offset != AC_OPT_NOSET &&
            (o->set_ctype != AC_OPT_T_INT || o->set_offset + sizeof(int) > c->request_size))
            return ac_err_set(err, AC_EINTERNAL, "%s --%s: its given flag is %s, not an int",
                              c->name, o->name, ctype_names[o->set_ctype]);
        if ((o->flags & AC_OPTF_ARRAY) &&
            (o->actype != AC_OPT_T_ARRAY || o->aoffset + sizeof(ac_array) > c->request_size))
            return ac_err_set(err, AC_EINTERNAL, "%s --%s: its array is %s, not an ac_array",
                              c->name, o->name, ctype_names[o->actype]);
        if ((o->kind == AC_OPT_CHOICE) != (o->choices != NULL))
            return ac_err_set(err, AC_EINTERNAL, "%s --%s: choices %s", c->name, o->name,
                              o->choices ? "on an option of another kind" : "missing");
        for (const ac_opt *p = c->opts; p < o; p++)
            if (!strcmp(p->name, o->name))
                return ac_err_set(err, AC_EINTERNAL, "%s --%s: two options of this name",
                                  c->name, o->name);
    }
    return AC_OK;
}

int ac_request_new(ac_request **out, const char *command, ac_err *err)
{
    *out = NULL;
    const ac_command *c = command ? ac_command_find(command) : NULL;
    if (!c)
        return ac_err_set(err, AC_EUSAGE, "'%s' is not an attncheck command",
                          command ? command : "");
    int st = ac_command_validate(c, err);
    if (st)
        return st;
    ac_request *r = calloc(1, sizeof *r);
    if (!r || !(r->q = calloc(1, c->request_size))) {
        free(r);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    r->cmd = c;
    if (c->init)
        c->init(r->q);
    st = ac_opts_default(c->opts, r->q, err);
    if (st) {
        ac_request_free(r);
        return st;
    }
    *out = r;
    return AC_OK;
}

void ac_request_free(ac_request *r)
{
    if (!r)
        return;
    if (r->res) {
        r->cmd->result_free(r->res);
        free(r->res);
    }
    for (const ac_opt *o = r->cmd->opts; o->name; o++)
        if (o->flags & AC_OPTF_ARRAY)
            ac_array_free((ac_array *)((char *)r->q + o->aoffset));
    ac_opts_free(r->cmd->opts, r->q);
    if (r->cmd->request_free)
        r->cmd->request_free(r->q);
    for (size_t i = 0; i < r->nstrings; i++)
        free(r->strings[i]);
    free(r->strings);
    free(r->q);
    free(r);
}

const ac_command *ac_request_command(const ac_request *r)
{
    return r->cmd;
}

static const ac_opt *find_opt(const ac_request *r, const char *name, ac_err *err)
{
    const ac_opt *o = name ? ac_opt_find(r->cmd->opts, name) : NULL;
    if (!o)
        ac_err_set(err, AC_EUSAGE, "%s has no option '%s'", r->cmd->name, name ? name : "");
    return o;
}

int ac_request_set(ac_request *r, const char *name, const char *text, ac_err *err)
{
    const ac_opt *o = find_opt(r, name, err);
    if (!o)
        return AC_EUSAGE;
    if (r->ran)
        return ac_err_set(err, AC_EUSAGE, "the request has run; make a new one");
    if ((o->kind == AC_OPT_STRING || o->kind == AC_OPT_STRINGS) && text) {
        char **ns = realloc(r->strings, (r->nstrings + 1) * sizeof *ns);
        if (!ns)
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
        r->strings = ns;
        if (!(ns[r->nstrings] = strdup(text)))
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
        text = ns[r->nstrings++];
    }
    return ac_opt_set(o, r->q, text, err);
}

int ac_request_set_array(ac_request *r, const char *name, size_t ndim, const size_t *shape,
                         const double *data, ac_err *err)
{
    const ac_opt *o = find_opt(r, name, err);
    if (!o)
        return AC_EUSAGE;
    if (!(o->flags & AC_OPTF_ARRAY))
        return ac_err_set(err, AC_EUSAGE, "--%s is not an array", o->name);
    ac_array *a = (ac_array *)((char *)r->q + o->aoffset);
    ac_array_free(a);
    int st = ac_array_init(a, ndim, shape, err);
    if (st)
        return st;
    if (a->size)
        memcpy(a->data, data, a->size * sizeof *a->data);
    if (o->set_offset != AC_OPT_NOSET)
        *(int *)((char *)r->q + o->set_offset) = 1;
    return AC_OK;
}

int ac_request_run(ac_request *r, void *hooks, ac_err *err)
{
    if (r->ran)
        return ac_err_set(err, AC_EUSAGE, "the request has run; make a new one");
    int st = r->cmd->check ? r->cmd->check(r->q, err) : AC_OK;
    if (st)
        return st;
    if (!(r->res = calloc(1, r->cmd->result_size)))
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    r->ran = 1;
    st = r->cmd->run(r->res, r->q, hooks, err);
    r->ok = st == AC_OK;
    return st;
}

void *ac_request_options(ac_request *r)
{
    return r->q;
}

const void *ac_request_result(const ac_request *r)
{
    return r->ok ? r->res : NULL;
}

char *ac_request_json(const ac_request *r, int indent)
{
    char *buf = NULL;
    size_t len = 0;
    if (!r->ok)
        return NULL;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    ac_json *j = ac_json_new(f, indent);
    r->cmd->write_json(j, r->q, r->res);
    int bad = !j || ac_json_error(j);
    ac_json_free(j);
    if (fclose(f) != 0 || bad) {
        free(buf);
        return NULL;
    }
    return buf;
}

size_t ac_request_arrays(const ac_request *r, ac_out_array *out, size_t max)
{
    if (!r->ok || !r->cmd->arrays)
        return 0;
    return r->cmd->arrays(r->q, r->res, out, max);
}

int ac_request_status(const ac_request *r)
{
    return r->ok ? r->cmd->status(r->q, r->res) : AC_EINTERNAL;
}

/* ---- the tables as JSON, for bindings ------------------------------------------ */

static const char *const kind_names[] = {"flag",   "size",   "long",  "u64",  "double",
                                         "string", "choice", "sizes", "range", "shard",
                                         "strings"};

static void describe_opt(ac_json *j, const ac_opt *o)
{
    char py[64];
    snprintf(py, sizeof py, "%s", o->pyname ? o->pyname : o->name);
    for (char *p = py; *p; p++)
        if (*p == '-')
            *p = '_';
    ac_json_begin_object(j);
    ac_json_kv_string(j, "name", o->name);
    ac_json_kv_string(j, "python", py);
    ac_json_kv_string(j, "kind", kind_names[o->kind]);
    if (o->kind != AC_OPT_FLAG && o->kind != AC_OPT_STRING && o->kind != AC_OPT_CHOICE &&
        o->kind != AC_OPT_U64 && o->kind != AC_OPT_STRINGS) {
        ac_json_kv_number(j, "min", o->min);
        ac_json_kv_number(j, "max", o->max);
    }
    if (o->choices) {
        ac_json_key(j, "choices");
        ac_json_begin_array(j);
        for (size_t i = 0; o->choices[i]; i++)
            ac_json_string(j, o->choices[i]);
        ac_json_end_array(j);
    }
    ac_json_kv_string(j, "default", o->def);
    ac_json_kv_string(j, "default_show", o->def_show);
    ac_json_kv_string(j, "arg", o->arg);
    ac_json_kv_string(j, "help", o->help);
    ac_json_kv_string(j, "group", o->group);
    ac_json_kv_bool(j, "program_only", (o->flags & AC_OPTF_PROGRAM) != 0);
    ac_json_kv_bool(j, "array", (o->flags & AC_OPTF_ARRAY) != 0);
    ac_json_kv_bool(j, "positional", (o->flags & AC_OPTF_POSITIONAL) != 0);
    ac_json_kv_bool(j, "library_only", (o->flags & AC_OPTF_LIBRARY) != 0);
    ac_json_kv_bool(j, "operands", (o->flags & AC_OPTF_OPERANDS) != 0);
    ac_json_end_object(j);
}

char *ac_commands_describe(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    ac_json *j = ac_json_new(f, 0);
    ac_json_begin_object(j);
    ac_json_kv_string(j, "version", PACKAGE_VERSION);
    ac_json_key(j, "commands");
    ac_json_begin_array(j);
    for (size_t i = 0; ac_commands[i]; i++) {
        const ac_command *c = ac_commands[i];
        ac_json_begin_object(j);
        ac_json_kv_string(j, "name", c->name);
        ac_json_kv_string(j, "summary", c->summary);
        ac_json_kv_string(j, "synopsis", c->synopsis);
        ac_json_kv_string(j, "description", c->description);
        ac_json_kv_string(j, "epilogue", c->epilogue);
        ac_json_key(j, "options");
        ac_json_begin_array(j);
        for (const ac_opt *o = c->opts; o->name; o++)
            describe_opt(j, o);
        ac_json_end_array(j);
        ac_json_end_object(j);
    }
    ac_json_end_array(j);
    ac_json_end_object(j);
    int bad = !j || ac_json_error(j);
    ac_json_free(j);
    if (fclose(f) != 0 || bad) {
        free(buf);
        return NULL;
    }
    return buf;
}

void ac_free(void *p)
{
    free(p);
}
