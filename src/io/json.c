/* json.c — streaming JSON writer and round-trip formatting of doubles
 * (attncheck/json.h). */
#include <config.h>

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpfr.h>

#include "attncheck/common.h"
#include "attncheck/json.h"

#define JSON_MAX_INDENT 16

struct ac_json {
    FILE *fp;
    int indent;                          /* spaces per level, 0 = one line */
    int depth;                           /* number of open containers */
    char kind[AC_JSON_MAX_DEPTH];        /* 'o' object or 'a' array, per level */
    size_t count[AC_JSON_MAX_DEPTH];     /* members / elements written per level */
    int have_key;                        /* a key was written, its value is due */
    int done;                            /* the top-level value is complete */
    int misuse;                          /* sticky: an invalid call was made */
    int ioerr;                           /* sticky: a write to fp failed */
};

/* ---- output primitives -------------------------------------------------- */

static void put(ac_json *j, const char *s, size_t len)
{
    if (len && fwrite(s, 1, len, j->fp) != len)
        j->ioerr = 1;
}

static void puts_(ac_json *j, const char *s)
{
    put(j, s, strlen(s));
}

static void putch(ac_json *j, char c)
{
    if (putc(c, j->fp) == EOF)
        j->ioerr = 1;
}

/* Newline and indentation for nesting level `level`. */
static void newline(ac_json *j, int level)
{
    static const char spaces[] = "                                "; /* 32 */
    if (!j->indent)
        return;
    putch(j, '\n');
    size_t n = (size_t)j->indent * (size_t)level;
    while (n > 0) {
        const size_t k = n < sizeof spaces - 1 ? n : sizeof spaces - 1;
        put(j, spaces, k);
        n -= k;
    }
}

/* ---- structure ---------------------------------------------------------- */

/* Check that a value may come now and write the separator before it.
 * Returns 0 (and flags misuse) if not. */
static int value_begin(ac_json *j)
{
    if (j->depth == 0) {
        if (j->done) {
            j->misuse = 1; /* second top-level value */
            return 0;
        }
        return 1;
    }
    const int top = j->depth - 1;
    if (j->kind[top] == 'o') {
        if (!j->have_key) {
            j->misuse = 1; /* value without key in an object */
            return 0;
        }
        j->have_key = 0;
        return 1;
    }
    if (j->count[top] > 0)
        putch(j, ',');
    newline(j, j->depth);
    j->count[top]++;
    return 1;
}

/* After a complete value: at top level the document is finished. */
static void value_end(ac_json *j)
{
    if (j->depth == 0) {
        j->done = 1;
        putch(j, '\n');
    }
}

static void begin(ac_json *j, char kind)
{
    if (!j)
        return;
    if (j->depth >= AC_JSON_MAX_DEPTH) {
        j->misuse = 1;
        return;
    }
    if (!value_begin(j))
        return;
    putch(j, kind == 'o' ? '{' : '[');
    j->kind[j->depth] = kind;
    j->count[j->depth] = 0;
    j->depth++;
}

static void end(ac_json *j, char kind)
{
    if (!j)
        return;
    if (j->depth == 0 || j->kind[j->depth - 1] != kind || j->have_key) {
        j->misuse = 1;
        return;
    }
    j->depth--;
    if (j->count[j->depth] > 0)
        newline(j, j->depth);
    putch(j, kind == 'o' ? '}' : ']');
    value_end(j);
}

ac_json *ac_json_new(FILE *fp, int indent)
{
    if (!fp)
        return NULL;
    ac_json *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->fp = fp;
    j->indent = indent < 0 ? 0 : indent > JSON_MAX_INDENT ? JSON_MAX_INDENT : indent;
    return j;
}

void ac_json_free(ac_json *j)
{
    free(j);
}

void ac_json_begin_object(ac_json *j) { begin(j, 'o'); }
void ac_json_end_object(ac_json *j) { end(j, 'o'); }
void ac_json_begin_array(ac_json *j) { begin(j, 'a'); }
void ac_json_end_array(ac_json *j) { end(j, 'a'); }

int ac_json_error(const ac_json *j)
{
    if (!j)
        return AC_EINTERNAL;
    if (j->ioerr || ferror(j->fp))
        return AC_ECANTCREAT;
    if (j->misuse || !j->done || j->depth != 0 || j->have_key)
        return AC_EINTERNAL;
    return AC_OK;
}

/* ---- strings ------------------------------------------------------------ */

/* Length of the well-formed UTF-8 sequence starting at s (lead byte >= 0x80),
 * or, if ill-formed, minus the length of its maximal ill-formed subpart
 * (Unicode 15, table 3-7 and section 3.9 "U+FFFD substitution of maximal
 * subparts"). */
static int utf8_seq(const unsigned char *s)
{
    const unsigned c = s[0];
    unsigned lo = 0x80, hi = 0xBF; /* range of the second byte */
    int len;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0; /* no overlongs */
        else if (c == 0xED)
            hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90; /* no overlongs */
        else if (c == 0xF4)
            hi = 0x8F; /* nothing above U+10FFFF */
    } else
        return -1; /* 80..C1, F5..FF: never a lead byte */
    if (s[1] < lo || s[1] > hi)
        return -1;
    for (int k = 2; k < len; k++)
        if (s[k] < 0x80 || s[k] > 0xBF)
            return -k;
    return len;
}

static void write_string(ac_json *j, const char *str)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    const unsigned char *run = s; /* start of bytes not yet written */

    putch(j, '"');
    while (*s) {
        const unsigned c = *s;
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            s++;
            continue;
        }
        if (c >= 0x80) {
            const int n = utf8_seq(s);
            if (n > 0) {
                s += n;
                continue;
            }
            put(j, (const char *)run, (size_t)(s - run));
            put(j, "\xEF\xBF\xBD", 3); /* U+FFFD */
            s += -n;
            run = s;
            continue;
        }
        put(j, (const char *)run, (size_t)(s - run));
        char esc[7] = {'\\', 0, 0, 0, 0, 0, 0};
        size_t elen = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            elen = 6;
        }
        put(j, esc, elen);
        s++;
        run = s;
    }
    put(j, (const char *)run, (size_t)(s - run));
    putch(j, '"');
}

/* Write a key; returns 0 (and flags misuse) if a key is not allowed now. */
static int key_write(ac_json *j, const char *key)
{
    if (!j)
        return 0;
    const int top = j->depth - 1;
    if (!key || top < 0 || j->kind[top] != 'o' || j->have_key) {
        j->misuse = 1;
        return 0;
    }
    if (j->count[top] > 0)
        putch(j, ',');
    newline(j, j->depth);
    j->count[top]++;
    write_string(j, key);
    puts_(j, j->indent ? ": " : ":");
    j->have_key = 1;
    return 1;
}

void ac_json_key(ac_json *j, const char *key)
{
    key_write(j, key);
}

void ac_json_string(ac_json *j, const char *s)
{
    if (!j || !value_begin(j))
        return;
    if (s)
        write_string(j, s);
    else
        puts_(j, "null");
    value_end(j);
}

/* ---- scalars ------------------------------------------------------------ */

/* Copy the printf output src to dst, writing the radix character(s) of the
 * current locale as '.'. */
static void c_radix(char *dst, const char *src)
{
    int in_radix = 0;
    for (; *src; src++) {
        const char c = *src;
        if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == 'e' || c == 'E') {
            *dst++ = c;
            in_radix = 0;
        } else if (!in_radix) {
            *dst++ = '.';
            in_radix = 1;
        }
    }
    *dst = '\0';
}

int ac_fmt_double(char *buf, size_t n, double x)
{
    char tmp[64], out[64];
    if (isnan(x))
        strcpy(out, "nan");
    else if (isinf(x))
        strcpy(out, x > 0 ? "inf" : "-inf");
    else {
        /* %.15g is the shortest form whenever one of <= 15 significant
         * digits exists, except for subnormals (less precision): try all. */
        const int saved_errno = errno; /* strtod may set ERANGE */
        int prec = (x != 0.0 && fabs(x) < DBL_MIN) ? 1 : 15;
        for (; prec <= 17; prec++) {
            snprintf(tmp, sizeof tmp, "%.*g", prec, x);
            const double y = strtod(tmp, NULL);
            if (memcmp(&x, &y, sizeof x) == 0)
                break;
        }
        /* prec == 18 cannot happen (%.17g round-trips); tmp then holds %.17g. */
        errno = saved_errno;
        c_radix(out, tmp);
    }
    const size_t len = strlen(out);
    if (n > 0) {
        const size_t k = len < n - 1 ? len : n - 1;
        memcpy(buf, out, k);
        buf[k] = '\0';
    }
    return (int)len;
}

/* "%<flags>.<prec>R<D|U><conv>" from spec; 0 if spec is not of the form
 * [+ -]*.<digits><g|e|f>[%] (no width: c_radix turns padding into '.') */
static int bound_format(char *fmt, size_t n, const char *spec, int up, int *pct)
{
    const char *p = spec;
    char flags[8];
    size_t nf = 0;
    while ((*p == '+' || *p == ' ' || *p == '-') && nf < sizeof flags - 1)
        flags[nf++] = *p++;
    flags[nf] = '\0';
    if (*p++ != '.' || *p < '0' || *p > '9')
        return 0;
    long prec = strtol(p, (char **)&p, 10);
    char conv = *p++;
    *pct = *p == '%';
    p += *pct;
    if (*p || prec > 40 || (conv != 'g' && conv != 'e' && conv != 'f'))
        return 0;
    snprintf(fmt, n, "%%%s.%ldR%c%c", flags, prec, up ? 'U' : 'D', conv);
    return 1;
}

static int fmt_bound(char *buf, size_t n, const char *spec, double x, int up)
{
    char fmt[64], small[16], *tmp = NULL, *out = small;
    int pct = 0;
    if (!bound_format(fmt, sizeof fmt, spec, up, &pct)) {
        strcpy(small, "?");
    } else if (isnan(x)) {
        strcpy(small, "nan");
    } else if (isinf(x)) {
        snprintf(small, sizeof small, "%s%s", x > 0 ? (spec[0] == '+' ? "+inf" : "inf") : "-inf",
                 pct ? "%" : "");
    } else {
        mpfr_t m;
        mpfr_init2(m, 64);
        mpfr_set_d(m, x, MPFR_RNDN);           /* exact */
        if (pct)
            mpfr_mul_ui(m, m, 100, MPFR_RNDN); /* exact: 53 + 7 bits */
        int len = mpfr_asprintf(&tmp, fmt, m); /* 'f' of 1e300 has 300 digits */
        mpfr_clear(m);
        if (len < 0 || !(out = malloc((size_t)len + 2))) {
            out = small;
            strcpy(small, "?");
        } else {
            c_radix(out, tmp);
            if (pct)
                strcat(out, "%");
        }
        if (tmp)
            mpfr_free_str(tmp);
    }
    const size_t len = strlen(out);
    if (n > 0) {
        const size_t k = len < n - 1 ? len : n - 1;
        memcpy(buf, out, k);
        buf[k] = '\0';
    }
    if (out != small)
        free(out);
    return (int)len;
}

int ac_fmt_lo(char *buf, size_t n, const char *spec, double x)
{
    return fmt_bound(buf, n, spec, x, 0);
}

int ac_fmt_hi(char *buf, size_t n, const char *spec, double x)
{
    return fmt_bound(buf, n, spec, x, 1);
}

const char *ac_str_lo(char *buf, const char *spec, double x)
{
    fmt_bound(buf, AC_FMT_BOUND_BUFSIZE, spec, x, 0);
    return buf;
}

const char *ac_str_hi(char *buf, const char *spec, double x)
{
    fmt_bound(buf, AC_FMT_BOUND_BUFSIZE, spec, x, 1);
    return buf;
}

void ac_json_number(ac_json *j, double x)
{
    if (!j || !value_begin(j))
        return;
    char b[AC_FMT_DOUBLE_BUFSIZE];
    if (isfinite(x))
        ac_fmt_double(b, sizeof b, x);
    else
        strcpy(b, "null"); /* JSON has no infinities or NaN: see json.h */
    puts_(j, b);
    value_end(j);
}

void ac_json_int(ac_json *j, long long x)
{
    if (!j || !value_begin(j))
        return;
    char b[32];
    snprintf(b, sizeof b, "%lld", x);
    puts_(j, b);
    value_end(j);
}

void ac_json_uint(ac_json *j, unsigned long long x)
{
    if (!j || !value_begin(j))
        return;
    char b[32];
    snprintf(b, sizeof b, "%llu", x);
    puts_(j, b);
    value_end(j);
}

void ac_json_bool(ac_json *j, int b)
{
    if (!j || !value_begin(j))
        return;
    puts_(j, b ? "true" : "false");
    value_end(j);
}

void ac_json_null(ac_json *j)
{
    if (!j || !value_begin(j))
        return;
    puts_(j, "null");
    value_end(j);
}

/* ---- key + value: the value is written only if the key was valid -------- */

void ac_json_kv_string(ac_json *j, const char *k, const char *v)
{
    if (key_write(j, k))
        ac_json_string(j, v);
}

void ac_json_kv_number(ac_json *j, const char *k, double x)
{
    if (key_write(j, k))
        ac_json_number(j, x);
}

void ac_json_kv_int(ac_json *j, const char *k, long long x)
{
    if (key_write(j, k))
        ac_json_int(j, x);
}

void ac_json_kv_uint(ac_json *j, const char *k, unsigned long long x)
{
    if (key_write(j, k))
        ac_json_uint(j, x);
}

void ac_json_kv_bool(ac_json *j, const char *k, int b)
{
    if (key_write(j, k))
        ac_json_bool(j, b);
}

void ac_json_kv_int_pair(ac_json *j, const char *k, long long a, long long b)
{
    ac_json_key(j, k);
    ac_json_begin_array(j);
    ac_json_int(j, a);
    ac_json_int(j, b);
    ac_json_end_array(j);
}
