/* options.c — one description per option: parsing an option's text into its
 * field of a command's request, by the option table (attncheck/commands.h).
 *
 * The messages name the option as the program spells it ("--tol") and are
 * the same for the program and the Python package. */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/commands.h"

#define FIELD(q, off, type) ((type *)((char *)(q) + (off)))

/* name matches the option: its long form, Python's spelling ('_' for '-'),
 * or its pyname */
static int same_name(const ac_opt *o, const char *name)
{
    if (strcmp(o->name, name) == 0 || (o->pyname && strcmp(o->pyname, name) == 0))
        return 1;
    const char *a = o->name, *b = name;
    for (; *a && *b; a++, b++)
        if (*a != *b && !(*a == '-' && *b == '_'))
            return 0;
    return *a == *b;
}

const ac_opt *ac_opt_find(const ac_opt *table, const char *name)
{
    for (const ac_opt *o = table; o && o->name; o++)
        if (same_name(o, name))
            return o;
    return NULL;
}

int ac_opt_given(const ac_opt *o, const void *q)
{
    return o && o->set_offset != AC_OPT_NOSET && *(const int *)((const char *)q + o->set_offset);
}

/* ---- numbers ------------------------------------------------------------------ */

static int parse_u64(const char *opt, const char *s, uint64_t *out, ac_err *err)
{
    char *end;
    errno = 0;
    if (!s || !*s || *s == '-')
        return ac_err_set(err, AC_EUSAGE, "--%s: '%s' is not a non-negative whole number", opt,
                          s ? s : "");
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return ac_err_set(err, AC_EUSAGE, "--%s: '%s' is not a non-negative whole number", opt, s);
    *out = (uint64_t)v;
    return AC_OK;
}

static int parse_size(const char *opt, const char *s, double min, double max, size_t *out,
                      ac_err *err)
{
    uint64_t v;
    int st = parse_u64(opt, s, &v, err);
    if (st)
        return st;
    size_t lo = (size_t)min, hi = max >= (double)SIZE_MAX ? SIZE_MAX : (size_t)max;
    if (v < lo || v > hi)
        return ac_err_set(err, AC_EUSAGE, "--%s: %s is out of range [%zu, %zu]", opt, s, lo, hi);
    *out = (size_t)v;
    return AC_OK;
}

static int parse_long(const char *opt, const char *s, double min, double max, long *out,
                      ac_err *err)
{
    char *end;
    errno = 0;
    if (!s || !*s)
        return ac_err_set(err, AC_EUSAGE, "--%s: missing number", opt);
    long v = strtol(s, &end, 10);
    if (errno || *end)
        return ac_err_set(err, AC_EUSAGE, "--%s: '%s' is not a whole number", opt, s);
    if ((double)v < min || (double)v > max)
        return ac_err_set(err, AC_EUSAGE, "--%s: %s is out of range [%ld, %ld]", opt, s,
                          (long)min, (long)max);
    *out = v;
    return AC_OK;
}

/* strtod with nothing converted silently: a literal that overflows, or a
 * nonzero one that underflows to 0, is refused (subnormal results are exact
 * values of their own and are kept). */
static int parse_double(const char *opt, const char *s, double min, double max, double *out,
                        ac_err *err)
{
    char *end;
    errno = 0;
    if (!s || !*s)
        return ac_err_set(err, AC_EUSAGE, "--%s: missing number", opt);
    double v = strtod(s, &end);
    if (errno == ERANGE && fabs(v) > 1)
        return ac_err_set(err, AC_EUSAGE, "--%s: '%s' overflows a double", opt, s);
    if (*end || v != v)
        return ac_err_set(err, AC_EUSAGE, "--%s: '%s' is not a number", opt, s);
    if (v < min || v > max)
        return ac_err_set(err, AC_EUSAGE, "--%s: %s is out of range [%g, %g]", opt, s, min, max);
    if (v == 0 && errno == ERANGE)
        return ac_err_set(err, AC_EUSAGE,
                          "--%s: %s underflows to 0 in double precision (the smallest positive "
                          "double is 4.9e-324); pass 0 for exact equality", opt, s);
    *out = v;
    return AC_OK;
}

/* ---- lists ---------------------------------------------------------------------- */

static int parse_sizes(const ac_opt *o, const char *s, ac_opt_sizes *out, ac_err *err)
{
    ac_opt_sizes v;
    v.n = 0;
    if (!s || !*s)
        return ac_err_set(err, AC_EUSAGE, "--%s: empty list", o->name);
    const char *p = s;
    for (;;) {
        size_t len = strcspn(p, ",");
        char item[32];
        if (len == 0 || len >= sizeof item)
            return ac_err_set(err, AC_EUSAGE, "--%s: '%s' is not a comma-separated list of "
                              "whole numbers", o->name, s);
        if (v.n == AC_OPT_SIZES_MAX)
            return ac_err_set(err, AC_EUSAGE, "--%s: more than %d values", o->name,
                              AC_OPT_SIZES_MAX);
        memcpy(item, p, len);
        item[len] = 0;
        int st = parse_size(o->name, item, o->min, o->max, &v.v[v.n], err);
        if (st)
            return st;
        v.n++;
        if (!p[len])
            break;
        p += len + 1;
    }
    *out = v;
    return AC_OK;
}

/* "A<sep>B" into two size_t */
static int parse_pair(const ac_opt *o, const char *s, char sep, const char *form, double min,
                      double max, size_t out[2], ac_err *err)
{
    const char *c = s ? strchr(s, sep) : NULL;
    char a[32];
    size_t la = c ? (size_t)(c - s) : 0;
    if (!c || la == 0 || la >= sizeof a || !c[1])
        return ac_err_set(err, AC_EUSAGE, "--%s: '%s' is not %s", o->name, s ? s : "", form);
    memcpy(a, s, la);
    a[la] = 0;
    size_t x, y;
    int st = parse_size(o->name, a, min, max, &x, err);
    if (!st)
        st = parse_size(o->name, c + 1, min, max, &y, err);
    if (st)
        return st;
    out[0] = x;
    out[1] = y;
    return AC_OK;
}

static int parse_choice(const ac_opt *o, const char *s, int *out, ac_err *err)
{
    char list[256];
    size_t len = 0;
    list[0] = 0;
    for (int i = 0; o->choices && o->choices[i]; i++) {
        if (s && strcmp(s, o->choices[i]) == 0) {
            *out = i;
            return AC_OK;
        }
        len += (size_t)snprintf(list + len, len < sizeof list ? sizeof list - len : 0, "%s%s",
                                i ? ", " : "", o->choices[i]);
    }
    return ac_err_set(err, AC_EUSAGE, "--%s: '%s' is not one of %s", o->name, s ? s : "", list);
}

/* append s to the list */
static int append_string(ac_opt_strings *l, const char *s, ac_err *err)
{
    const char **v = realloc(l->v, (l->n + 1) * sizeof *v);
    if (!v)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    v[l->n++] = s;
    l->v = v;
    return AC_OK;
}

int ac_opt_set(const ac_opt *o, void *q, const char *s, ac_err *err)
{
    int st = AC_OK;
    if (o->kind != AC_OPT_FLAG && !s)
        return ac_err_set(err, AC_EUSAGE, "option '--%s' needs a value", o->name);
    if ((o->flags & AC_OPTF_CHECK_FIRST) && o->check && (st = o->check(o, q, s, err)))
        return st;
    switch (o->kind) {
    case AC_OPT_FLAG:
        if (s)
            return ac_err_set(err, AC_EUSAGE, "--%s takes no value", o->name);
        *FIELD(q, o->offset, int) = (o->flags & AC_OPTF_NEGATE) ? 0 : 1;
        break;
    case AC_OPT_SIZE:
        st = parse_size(o->name, s, o->min, o->max, FIELD(q, o->offset, size_t), err);
        break;
    case AC_OPT_LONG:
        st = parse_long(o->name, s, o->min, o->max, FIELD(q, o->offset, long), err);
        break;
    case AC_OPT_U64:
        st = parse_u64(o->name, s, FIELD(q, o->offset, uint64_t), err);
        break;
    case AC_OPT_DOUBLE:
        st = parse_double(o->name, s, o->min, o->max, FIELD(q, o->offset, double), err);
        break;
    case AC_OPT_STRING:
        *FIELD(q, o->offset, const char *) = s;
        break;
    case AC_OPT_CHOICE:
        st = parse_choice(o, s, FIELD(q, o->offset, int), err);
        break;
    case AC_OPT_SIZES:
        st = parse_sizes(o, s, FIELD(q, o->offset, ac_opt_sizes), err);
        break;
    case AC_OPT_RANGE: {
        size_t *v = FIELD(q, o->offset, size_t), t[2];
        st = parse_pair(o, s, ':', "A:B (e.g. 1:9)", o->min, o->max, t, err);
        if (!st && t[0] > t[1])
            st = ac_err_set(err, AC_EUSAGE, "--%s %s: A must not exceed B", o->name, s);
        if (!st) {
            v[0] = t[0];
            v[1] = t[1];
        }
        break;
    }
    case AC_OPT_SHARD: {
        size_t *v = FIELD(q, o->offset, size_t), t[2];
        st = parse_pair(o, s, '/', "I/K (e.g. 2/8)", 1, o->max, t, err);
        if (!st && t[0] > t[1])
            st = ac_err_set(err, AC_EUSAGE, "--%s %s: I must not exceed K", o->name, s);
        if (!st) {
            v[0] = t[0];
            v[1] = t[1];
        }
        break;
    }
    case AC_OPT_STRINGS:
        st = append_string(FIELD(q, o->offset, ac_opt_strings), s, err);
        break;
    }
    if (!st && o->check && !(o->flags & AC_OPTF_CHECK_FIRST))
        st = o->check(o, q, s, err);
    if (st)
        return st;
    if (o->set_offset != AC_OPT_NOSET)
        *FIELD(q, o->set_offset, int) = 1;
    return AC_OK;
}

int ac_opts_default(const ac_opt *table, void *q, ac_err *err)
{
    for (const ac_opt *o = table; o && o->name; o++) {
        if (!o->def)
            continue;
        ac_err e;
        ac_err_clear(&e);
        if (ac_opt_set(o, q, o->kind == AC_OPT_FLAG ? NULL : o->def, &e))
            return ac_err_set(err, AC_EINTERNAL, "the default of --%s (%s) is invalid: %s",
                              o->name, o->def, e.msg);
        if (o->set_offset != AC_OPT_NOSET) /* a default is not "given" */
            *FIELD(q, o->set_offset, int) = 0;
    }
    return AC_OK;
}

void ac_opts_free(const ac_opt *table, void *q)
{
    for (const ac_opt *o = table; o && o->name; o++)
        if (o->kind == AC_OPT_STRINGS) {
            ac_opt_strings *l = FIELD(q, o->offset, ac_opt_strings);
            free(l->v);
            l->v = NULL;
            l->n = 0;
        }
}
