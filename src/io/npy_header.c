/* npy_header.c — the parser of the header dict of a .npy file
 * (attncheck/npy.h): a small recursive-descent parser of the Python dict
 * literal {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }
 * that never looks past its buffer and names the file in every message. */
#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attncheck/npy.h"
#include "io/npy_impl.h"

int npy_host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char c;
    memcpy(&c, &one, 1);
    return c == 1;
}

/* Copy at most SNIP_CHARS characters of s[0..n-1] to out (of SNIP_BUF
 * bytes) for a message: printable ASCII as is, anything else as \xNN, and
 * "..." if cut short. */
void npy_snip(char *out, const char *s, size_t n)
{
    size_t o = 0;
    size_t m = n < SNIP_CHARS ? n : SNIP_CHARS;
    for (size_t i = 0; i < m; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out[o++] = (char)c;
        } else {
            snprintf(out + o, 5, "\\x%02x", c);
            o += 4;
        }
    }
    if (m < n) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

/* ---------------------------------------------------------------------- */
/* Header parser                                                           */



static int is_ws(int c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int peek(const hparse *p)
{
    return p->i < p->n ? (unsigned char)p->s[p->i] : -1;
}

static void skip_ws(hparse *p)
{
    while (p->i < p->n && is_ws((unsigned char)p->s[p->i]))
        p->i++;
}

/* "malformed header: expected X at byte N of the header, found 'abc'". */
static int bad_syntax(const hparse *p, const char *expected)
{
    char found[SNIP_BUF + 8];
    if (p->i >= p->n) {
        snprintf(found, sizeof found, "the end of the header");
    } else {
        char sn[SNIP_BUF];
        size_t m = p->n - p->i;
        npy_snip(sn, p->s + p->i, m < 12 ? m : 12);
        snprintf(found, sizeof found, "'%s'", sn);
    }
    return ac_err_set(p->err, AC_EDATA,
                      "%s: malformed header: expected %s at byte %zu of the header, found %s",
                      p->path, expected, p->i, found);
}

/* Parse a quoted string starting at the current position (which holds ' or
 * ").  Sets *start and *len to its contents (escapes are left as written). */
static int parse_string(hparse *p, size_t *start, size_t *len)
{
    char q = p->s[p->i];
    size_t i = p->i + 1;
    *start = i;
    for (;;) {
        if (i >= p->n || p->s[i] == '\n' || p->s[i] == '\r') {
            p->i = *start - 1;
            return ac_err_set(p->err, AC_EDATA,
                              "%s: malformed header: unterminated string at byte %zu of the "
                              "header",
                              p->path, p->i);
        }
        if (p->s[i] == '\\') {
            i += 2;
            continue;
        }
        if (p->s[i] == q)
            break;
        i++;
    }
    *len = i - *start;
    p->i = i + 1;
    return AC_OK;
}

/* Skip one Python literal (anything up to a ',', ':' or closing bracket at
 * nesting depth 0, with strings and nested brackets balanced) and give its
 * extent without trailing white space. */
static int skip_value(hparse *p, size_t *start, size_t *len)
{
    char stack[32];
    size_t depth = 0, s0, l0;

    *start = p->i;
    while (p->i < p->n) {
        char c = p->s[p->i];
        if (c == '\'' || c == '"') {
            int st = parse_string(p, &s0, &l0);
            if (st)
                return st;
            continue;
        }
        if (c == '(' || c == '[' || c == '{') {
            if (depth == sizeof stack)
                return ac_err_set(p->err, AC_EDATA,
                                  "%s: malformed header: brackets nested too deeply at byte "
                                  "%zu of the header",
                                  p->path, p->i);
            stack[depth++] = c == '(' ? ')' : c == '[' ? ']' : '}';
            p->i++;
            continue;
        }
        if (c == ')' || c == ']' || c == '}') {
            if (depth == 0)
                break;
            if (stack[depth - 1] != c) {
                char want[16];
                snprintf(want, sizeof want, "'%c'", stack[depth - 1]);
                return bad_syntax(p, want);
            }
            depth--;
            p->i++;
            continue;
        }
        if ((c == ',' || c == ':') && depth == 0)
            break;
        p->i++;
    }
    if (depth > 0) {
        char want[16];
        snprintf(want, sizeof want, "'%c'", stack[depth - 1]);
        return bad_syntax(p, want);
    }
    *len = p->i - *start;
    while (*len > 0 && is_ws((unsigned char)p->s[*start + *len - 1]))
        (*len)--;
    if (*len == 0)
        return bad_syntax(p, "a value");
    return AC_OK;
}

static int str_is(const hparse *p, size_t start, size_t len, const char *lit)
{
    return strlen(lit) == len && memcmp(p->s + start, lit, len) == 0;
}

/* The value of 'descr' is s[start..start+len-1]: accept the float64
 * spellings and the float32 ones (p->single; every float32 is a double, so
 * widening is exact), reject anything else. */
static int check_descr(hparse *p, size_t start, size_t len)
{
    static const char *const little[] = {"<f8", "<d", NULL};
    static const char *const big[] = {">f8", ">d", NULL};
    static const char *const native[] = {"=f8", "=d", "|f8", "|d", "f8", "d",
                                         "float64", "double", "float", NULL};
    static const char *const single[] = {"f4", "float32", "single", NULL};
    char sn[SNIP_BUF];
    char q = p->s[start];

    /* A single string literal without escapes? */
    if (len >= 2 && (q == '\'' || q == '"') && p->s[start + len - 1] == q &&
        !memchr(p->s + start + 1, q, len - 2) && !memchr(p->s + start + 1, '\\', len - 2)) {
        size_t cs = start + 1, cl = len - 2;
        for (int k = 0; little[k]; k++)
            if (str_is(p, cs, cl, little[k])) {
                p->big_endian = 0;
                return AC_OK;
            }
        for (int k = 0; big[k]; k++)
            if (str_is(p, cs, cl, big[k])) {
                p->big_endian = 1;
                return AC_OK;
            }
        for (int k = 0; native[k]; k++)
            if (str_is(p, cs, cl, native[k])) {
                p->big_endian = !npy_host_is_little_endian();
                return AC_OK;
            }
        /* float32: '<f4', '>f4', '=f4', '|f4', 'f4', 'float32', 'single' */
        char order = cl > 0 ? p->s[cs] : 0;
        int has_order = order == '<' || order == '>' || order == '=' || order == '|';
        for (int k = 0; single[k]; k++)
            if (str_is(p, cs + (size_t)has_order, cl - (size_t)has_order, single[k]) &&
                (!has_order || k == 0)) {
                p->single = 1;
                p->big_endian = order == '>' ||
                                (order != '<' && !npy_host_is_little_endian());
                return AC_OK;
            }
    }
    npy_snip(sn, p->s + start, len);
    return ac_err_set(p->err, AC_EDATA,
                      "%s: dtype %s is not supported (expected float64 '<f8' or float32 '<f4')",
                      p->path, sn);
}

/* The value of 'fortran_order' is s[start..start+len-1]. */
static int check_fortran(hparse *p, size_t start, size_t len)
{
    char sn[SNIP_BUF];

    if (str_is(p, start, len, "True")) {
        p->fortran = 1;
        return AC_OK;
    }
    if (str_is(p, start, len, "False")) {
        p->fortran = 0;
        return AC_OK;
    }
    npy_snip(sn, p->s + start, len);
    return ac_err_set(p->err, AC_EDATA,
                      "%s: bad fortran_order value %s (expected True or False)", p->path, sn);
}

/* The value of 'shape' is s[start..start+len-1] (brackets and strings in it
 * are balanced): parse a tuple of non-negative integers. */
static int check_shape(hparse *p, size_t start, size_t len)
{
    char sv[SNIP_BUF], sn[SNIP_BUF];
    size_t save_n = p->n;
    int st = AC_OK;

    npy_snip(sv, p->s + start, len);
    p->i = start;
    p->n = start + len; /* parse only the value */
    p->ndim = 0;
    if (peek(p) != '(') {
        st = ac_err_set(p->err, AC_EDATA, "%s: bad shape %s: not a tuple", p->path, sv);
        goto done;
    }
    p->i++;
    skip_ws(p);
    if (peek(p) == ')') {
        p->i++;
        goto end;
    }
    for (;;) {
        size_t tstart = p->i, v = 0;
        int neg = 0, overflow = 0, digits = 0, c;

        c = peek(p);
        if (c == '+' || c == '-') {
            neg = c == '-';
            p->i++;
        }
        while ((c = peek(p)) >= '0' && c <= '9') {
            size_t d = (size_t)(c - '0');
            if (v > (SIZE_MAX - d) / 10)
                overflow = 1;
            else
                v = v * 10 + d;
            digits++;
            p->i++;
        }
        if (digits > 0 && peek(p) == 'L') /* Python 2 long */
            p->i++;
        c = peek(p);
        if (digits == 0 || !(c == ',' || c == ')' || is_ws(c))) {
            while (p->i < p->n && (c = peek(p)) != ',' && c != ')' && !is_ws(c))
                p->i++;
            npy_snip(sn, p->s + tstart, p->i - tstart);
            st = ac_err_set(p->err, AC_EDATA, "%s: bad shape %s: dimension '%s' is not an integer",
                            p->path, sv, sn);
            goto done;
        }
        if (neg && (v != 0 || overflow)) {
            npy_snip(sn, p->s + tstart, p->i - tstart);
            st = ac_err_set(p->err, AC_EDATA, "%s: bad shape %s: negative dimension %s", p->path,
                            sv, sn);
            goto done;
        }
        if (overflow) {
            npy_snip(sn, p->s + tstart, p->i - tstart);
            st = ac_err_set(p->err, AC_EDATA, "%s: bad shape %s: dimension %s is too large",
                            p->path, sv, sn);
            goto done;
        }
        if (p->ndim == AC_NPY_MAXDIM) {
            st = ac_err_set(p->err, AC_EDATA,
                            "%s: bad shape %s: more than %d dimensions are not supported",
                            p->path, sv, AC_NPY_MAXDIM);
            goto done;
        }
        p->shape[p->ndim++] = v;
        skip_ws(p);
        if (peek(p) == ',') {
            p->i++;
            skip_ws(p);
            if (peek(p) == ')') {
                p->i++;
                goto end;
            }
            continue;
        }
        if (peek(p) == ')') {
            p->i++;
            if (p->ndim == 1) { /* "(5)" is the integer 5, not a tuple */
                st = ac_err_set(p->err, AC_EDATA,
                                "%s: bad shape %s: not a tuple (a 1-tuple needs a trailing "
                                "comma)",
                                p->path, sv);
                goto done;
            }
            goto end;
        }
        st = bad_syntax(p, "',' or ')' in the shape");
        goto done;
    }
end:
    skip_ws(p);
    if (p->i < p->n)
        st = bad_syntax(p, "',' or '}' after the shape");
done:
    p->n = save_n;
    return st;
}

/* Parse the header: first its syntax (a dict literal with the three known
 * keys, each once, values balanced), then the values. */
int npy_parse_header(hparse *p)
{
    size_t vstart[3] = {0}, vlen[3] = {0};
    int have[3] = {0};
    static const char *const keys[3] = {"descr", "fortran_order", "shape"};
    int st;

    skip_ws(p);
    if (peek(p) != '{') {
        char sn[SNIP_BUF];
        npy_snip(sn, p->s + p->i, p->n - p->i);
        return ac_err_set(p->err, AC_EDATA, "%s: header is not a dict literal: '%s'", p->path,
                          sn);
    }
    p->i++;
    skip_ws(p);
    for (;;) {
        size_t kstart, klen;
        int c = peek(p), k;

        if (c == '}') {
            p->i++;
            break;
        }
        if (c != '\'' && c != '"')
            return bad_syntax(p, "a quoted key or '}'");
        if ((st = parse_string(p, &kstart, &klen)))
            return st;
        for (k = 0; k < 3; k++)
            if (str_is(p, kstart, klen, keys[k]))
                break;
        if (k == 3) {
            char sn[SNIP_BUF];
            npy_snip(sn, p->s + kstart, klen);
            return ac_err_set(p->err, AC_EDATA,
                              "%s: unknown key '%s' in header (expected 'descr', "
                              "'fortran_order' and 'shape')",
                              p->path, sn);
        }
        if (have[k])
            return ac_err_set(p->err, AC_EDATA, "%s: duplicate key '%s' in header", p->path,
                              keys[k]);
        have[k] = 1;
        skip_ws(p);
        if (peek(p) != ':')
            return bad_syntax(p, "':'");
        p->i++;
        skip_ws(p);
        if ((st = skip_value(p, &vstart[k], &vlen[k])))
            return st;
        c = peek(p);
        if (c == ',') {
            p->i++;
            skip_ws(p);
            continue;
        }
        if (c == '}') {
            p->i++;
            break;
        }
        return bad_syntax(p, "',' or '}'");
    }
    skip_ws(p);
    if (p->i < p->n)
        return bad_syntax(p, "only spaces after the dict");
    for (int k = 0; k < 3; k++)
        if (!have[k])
            return ac_err_set(p->err, AC_EDATA, "%s: header lacks the key '%s'", p->path,
                              keys[k]);
    if ((st = check_descr(p, vstart[0], vlen[0])) ||
        (st = check_fortran(p, vstart[1], vlen[1])) || (st = check_shape(p, vstart[2], vlen[2])))
        return st;
    return AC_OK;
}
