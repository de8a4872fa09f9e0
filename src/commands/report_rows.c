/* report_rows.c — the rows of `attncheck report` (attncheck/commands.h):
 * the row list and its helpers.  Each theorem's rows are written beside its
 * command (report_theorem1.c, ...). */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/commands.h"
#include "commands/cmd_impl.h"

ac_report_row *ac_report_add(ac_report *r)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        ac_report_row *nr = realloc(r->rows, cap * sizeof *nr);
        if (!nr)
            return NULL;
        r->rows = nr;
        r->cap = cap;
    }
    ac_report_row *row = &r->rows[r->n++];
    memset(row, 0, sizeof *row);
    row->lo = row->hi = NAN; /* no numeric bound until ac_report_bounds */
    return row;
}

void ac_report_free(ac_report *r)
{
    if (!r)
        return;
    free(r->rows);
    r->rows = NULL;
    r->n = r->cap = 0;
}

void ac_report_bounds(ac_report_row *row, const char *quantity, double lo, double hi)
{
    if (!row)
        return;
    snprintf(row->quantity, sizeof row->quantity, "%s", quantity);
    row->lo = lo;
    row->hi = hi;
}

static int word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-';
}

/* s[0 .. len-1] stands alone as a word: not part of a longer word, nor of a
 * path or file name ("vocab/ck", "ck/vocab", "vocab.npy"); a full stop
 * that ends the sentence is fine. */
static int whole_word(const char *msg, const char *s, size_t len)
{
    char before = s > msg ? s[-1] : ' ', after = s[len];
    if (word_char(before) || before == '/' || before == '.')
        return 0;
    if (word_char(after) || after == '/')
        return 0;
    return !(after == '.' && word_char(s[len + 1]));
}

/* the option spelling of a field */
static void flag_of(char *buf, size_t n, const char *field, const char *const *flags)
{
    for (size_t i = 0; flags && flags[i]; i += 2)
        if (strcmp(flags[i], field) == 0) {
            snprintf(buf, n, "%s", flags[i + 1]);
            return;
        }
    snprintf(buf, n, "--%s", field);
    for (char *p = buf; *p; p++)
        if (*p == '_')
            *p = '-';
}

const char *ac_err_spell(char *buf, size_t n, const ac_err *err, const char *const *flags)
{
    /* the message with the first whole-word occurrence of each field from
     * the previous one on, in order, spelled as its option */
    const char *msg = err->msg[0] ? err->msg : "internal error", *p = msg;
    const char *fields = err->fields;
    size_t len = 0;
    if (!n)
        return buf;
    buf[0] = '\0';
    while (*fields) {
        char field[AC_ERR_FIELDS_MAX], flag[96];
        size_t fl = strcspn(fields, ",");
        snprintf(field, sizeof field, "%.*s", (int)fl, fields);
        fields += fl + (fields[fl] == ',');
        const char *hit = p;
        while ((hit = strstr(hit, field)) && !whole_word(msg, hit, fl))
            hit++;
        if (!hit || !fl)
            continue;
        flag_of(flag, sizeof flag, field, flags);
        len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%.*s%s", (int)(hit - p), p,
                                flag);
        if (len >= n)
            return buf;
        p = hit + fl;
    }
    snprintf(buf + len, len < n ? n - len : 0, "%s", p);
    return buf;
}

void ac_report_fail(ac_report_row *row, int st, const ac_err *err, const char *const *flags)
{
    row->error = st;
    row->verdict = AC_UNDECIDED;
    ac_err_spell(row->detail, sizeof row->detail, err, flags);
}

const char *ac_cmd_num3(char *buf, size_t n, double x)
{
    if (x != x)
        snprintf(buf, n, "nan");
    else if (isinf(x))
        snprintf(buf, n, x > 0 ? "inf" : "-inf");
    else
        snprintf(buf, n, "%.3g", x);
    return buf;
}

ac_verdict ac_report_row_outcome(const ac_report_row *row)
{
    if (row->error || row->verdict == AC_UNDECIDED)
        return AC_UNDECIDED;
    return row->verdict == row->expected ? AC_PROVED : AC_REFUTED;
}
