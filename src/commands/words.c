/* words.c — a request's options as the words of a command line and back
 * (cmd_impl.h): what a condition shard file records of its sweep, so that
 * merge rebuilds the same request.  Each value is written so that parsing
 * it gives back the same value (doubles in the shortest form strtod reads
 * back exactly). */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands/cmd_impl.h"

#define FIELD(q, off, type) ((const type *)((const char *)(q) + (off)))

/* %.*g with the fewest digits that read back as x */
static void format_double(char *buf, size_t n, double x)
{
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, n, "%.*g", p, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}

/* "A<sep>B" of two size_t */
static void format_pair(char *buf, size_t n, const size_t *v, char sep)
{
    snprintf(buf, n, "%zu%c%zu", v[0], sep, v[1]);
}

int ac_cmd_opt_format(char *buf, size_t n, const ac_opt *o, const void *q)
{
    buf[0] = 0;
    switch (o->kind) {
    case AC_OPT_FLAG: return 0;
    case AC_OPT_SIZE: snprintf(buf, n, "%zu", *FIELD(q, o->offset, size_t)); break;
    case AC_OPT_LONG: snprintf(buf, n, "%ld", *FIELD(q, o->offset, long)); break;
    case AC_OPT_U64: snprintf(buf, n, "%" PRIu64, *FIELD(q, o->offset, uint64_t)); break;
    case AC_OPT_DOUBLE: format_double(buf, n, *FIELD(q, o->offset, double)); break;
    case AC_OPT_STRING: {
        const char *s = *FIELD(q, o->offset, const char *);
        if (!s)
            return -1;
        if (strlen(s) >= n)
            return -1;
        snprintf(buf, n, "%s", s);
        break;
    }
    case AC_OPT_CHOICE: snprintf(buf, n, "%s", o->choices[*FIELD(q, o->offset, int)]); break;
    case AC_OPT_SIZES: {
        const ac_opt_sizes *l = FIELD(q, o->offset, ac_opt_sizes);
        size_t len = 0;
        for (size_t i = 0; i < l->n && len < n; i++)
            len += (size_t)snprintf(buf + len, n - len, "%s%zu", i ? "," : "", l->v[i]);
        if (len >= n)
            return -1;
        break;
    }
    case AC_OPT_RANGE: format_pair(buf, n, FIELD(q, o->offset, size_t), ':'); break;
    case AC_OPT_SHARD: format_pair(buf, n, FIELD(q, o->offset, size_t), '/'); break;
    case AC_OPT_STRINGS: return -1;
    }
    return 1;
}

int ac_cmd_opt_given(const ac_opt *o, const void *q)
{
    if (o->set_offset != AC_OPT_NOSET)
        return ac_opt_given(o, q);
    if (o->kind == AC_OPT_FLAG)
        return *FIELD(q, o->offset, int) == !(o->flags & AC_OPTF_NEGATE);
    if (o->kind == AC_OPT_STRING)
        return *FIELD(q, o->offset, const char *) != NULL;
    return 0;
}

void ac_cmd_words_free(char **words, size_t n)
{
    for (size_t i = 0; words && i < n; i++)
        free(words[i]);
    free(words);
}

int ac_cmd_words(char ***words, size_t *nwords, const ac_opt *table, const void *q,
                 int (*keep)(const ac_opt *o), ac_err *err)
{
    size_t n = 0, cap = 0;
    char **w = NULL;
    *words = NULL;
    *nwords = 0;
    for (const ac_opt *o = table; o->name; o++)
        cap += 2;
    if (!(w = calloc(cap + 1, sizeof *w)))
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (const ac_opt *o = table; o->name; o++) {
        if (!keep(o) || !ac_cmd_opt_given(o, q))
            continue;
        char value[4096];
        int has = ac_cmd_opt_format(value, sizeof value, o, q);
        size_t len = strlen(o->name) + 3;
        if (has < 0) {
            ac_cmd_words_free(w, n);
            return ac_err_set(err, AC_EUSAGE, "--%s: the value cannot be written as a word",
                              o->name);
        }
        if (!(w[n] = malloc(len))) {
            ac_cmd_words_free(w, n);
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
        }
        snprintf(w[n++], len, "--%s", o->name);
        if (has && !(w[n++] = strdup(value))) {
            ac_cmd_words_free(w, n - 1);
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
        }
    }
    *words = w;
    *nwords = n;
    return AC_OK;
}

/* The option of "--NAME" (len characters of name): exact, else the one
 * option it is a prefix of, as getopt_long accepts; NULL if none or several. */
static const ac_opt *find_word(const ac_opt *table, const char *name, size_t len)
{
    const ac_opt *hit = NULL;
    int several = 0;
    for (const ac_opt *o = table; o->name; o++) {
        if (strncmp(o->name, name, len) != 0)
            continue;
        if (strlen(o->name) == len)
            return o;
        several |= hit != NULL;
        hit = o;
    }
    return several ? NULL : hit;
}

int ac_cmd_set_words(const ac_opt *table, void *q, char *const *words, size_t n,
                     int (*keep)(const ac_opt *o), size_t *bad, ac_err *err)
{
    *bad = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        const char *s = words[i];
        const ac_opt *o = NULL;
        const char *eq = NULL;
        if (strncmp(s, "--", 2) == 0 && s[2]) {
            eq = strchr(s, '=');
            o = find_word(table, s + 2, eq ? (size_t)(eq - s - 2) : strlen(s + 2));
        }
        if (!o || !keep(o)) {
            *bad = i;
            return ac_err_set(err, AC_EUSAGE, "'%s' is not an option", s);
        }
        /* a flag's "=VALUE", a missing value: ac_opt_set's messages */
        const char *value = eq ? eq + 1 : o->kind == AC_OPT_FLAG || i + 1 == n ? NULL : words[++i];
        int st = ac_opt_set(o, q, value, err);
        if (st)
            return st;
    }
    return AC_OK;
}
