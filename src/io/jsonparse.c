/* jsonparse.c — a small recursive-descent JSON reader (jsonparse.h). */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/fileio.h"
#include "io/jsonparse.h"

typedef struct {
    const char *p, *end, *start, *name;
    ac_err *err;
    int status;
} jp;

static int jp_fail(jp *j, const char *what)
{
    if (j->status)
        return j->status;
    size_t line = 1, col = 1;
    for (const char *q = j->start; q < j->p && q < j->end; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    j->status = ac_err_set(j->err, AC_EDATA, "%s: line %zu, column %zu: %s", j->name, line, col,
                           what);
    return j->status;
}

static void skip_ws(jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static ac_jv *new_jv(jp *j, ac_jv_type t)
{
    ac_jv *v = calloc(1, sizeof *v);
    if (!v && !j->status)
        j->status = ac_err_set(j->err, AC_EINTERNAL, "out of memory");
    if (v)
        v->type = t;
    return v;
}

static int add_kid(jp *j, ac_jv *parent, ac_jv *kid)
{
    ac_jv **k = realloc(parent->kids, (parent->n + 1) * sizeof *k);
    if (!k) {
        ac_jv_free(kid);
        return j->status = ac_err_set(j->err, AC_EINTERNAL, "out of memory");
    }
    parent->kids = k;
    k[parent->n++] = kid;
    return AC_OK;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int read_hex4(jp *j, unsigned *u)
{
    if (j->end - j->p < 4)
        return jp_fail(j, "truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval((unsigned char)j->p[i]);
        if (h < 0)
            return jp_fail(j, "bad \\u escape");
        v = v * 16 + (unsigned)h;
    }
    j->p += 4;
    *u = v;
    return AC_OK;
}

/* Parse a string at j->p (which is '"'); *out is malloc'ed. */
static int parse_string(jp *j, char **out)
{
    j->p++;
    size_t cap = 16, n = 0;
    char *s = malloc(cap);
    if (!s)
        return j->status = ac_err_set(j->err, AC_EINTERNAL, "out of memory");
    for (;;) {
        if (j->p >= j->end) {
            free(s);
            return jp_fail(j, "unterminated string");
        }
        unsigned char c = (unsigned char)*j->p;
        char buf[4];
        size_t len = 0;
        if (c == '"') {
            j->p++;
            break;
        }
        if (c < 0x20) {
            free(s);
            return jp_fail(j, "control character in a string");
        }
        if (c == '\\') {
            j->p++;
            if (j->p >= j->end) {
                free(s);
                return jp_fail(j, "unterminated escape");
            }
            char e = *j->p++;
            unsigned u;
            switch (e) {
            case '"': buf[len++] = '"'; break;
            case '\\': buf[len++] = '\\'; break;
            case '/': buf[len++] = '/'; break;
            case 'b': buf[len++] = '\b'; break;
            case 'f': buf[len++] = '\f'; break;
            case 'n': buf[len++] = '\n'; break;
            case 'r': buf[len++] = '\r'; break;
            case 't': buf[len++] = '\t'; break;
            case 'u':
                if (read_hex4(j, &u)) {
                    free(s);
                    return j->status;
                }
                if (u >= 0xD800 && u <= 0xDBFF) {
                    unsigned lo;
                    if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u') {
                        free(s);
                        return jp_fail(j, "unpaired surrogate");
                    }
                    j->p += 2;
                    if (read_hex4(j, &lo)) {
                        free(s);
                        return j->status;
                    }
                    if (lo < 0xDC00 || lo > 0xDFFF) {
                        free(s);
                        return jp_fail(j, "unpaired surrogate");
                    }
                    u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
                } else if (u >= 0xDC00 && u <= 0xDFFF) {
                    free(s);
                    return jp_fail(j, "unpaired surrogate");
                }
                if (u == 0) {
                    free(s);
                    return jp_fail(j, "\\u0000 in a string");
                }
                if (u < 0x80) {
                    buf[len++] = (char)u;
                } else if (u < 0x800) {
                    buf[len++] = (char)(0xC0 | (u >> 6));
                    buf[len++] = (char)(0x80 | (u & 0x3F));
                } else if (u < 0x10000) {
                    buf[len++] = (char)(0xE0 | (u >> 12));
                    buf[len++] = (char)(0x80 | ((u >> 6) & 0x3F));
                    buf[len++] = (char)(0x80 | (u & 0x3F));
                } else {
                    buf[len++] = (char)(0xF0 | (u >> 18));
                    buf[len++] = (char)(0x80 | ((u >> 12) & 0x3F));
                    buf[len++] = (char)(0x80 | ((u >> 6) & 0x3F));
                    buf[len++] = (char)(0x80 | (u & 0x3F));
                }
                break;
            default:
                free(s);
                j->p--;
                return jp_fail(j, "unknown escape");
            }
        } else {
            buf[len++] = (char)c;
            j->p++;
        }
        if (n + len + 1 > cap) {
            cap *= 2;
            char *ns = realloc(s, cap);
            if (!ns) {
                free(s);
                return j->status = ac_err_set(j->err, AC_EINTERNAL, "out of memory");
            }
            s = ns;
        }
        memcpy(s + n, buf, len);
        n += len;
    }
    s[n] = 0;
    *out = s;
    return AC_OK;
}

static int parse_number(jp *j, ac_jv *v)
{
    const char *a = j->p;
    if (j->p < j->end && *j->p == '-')
        j->p++;
    if (j->p >= j->end)
        return jp_fail(j, "bad number");
    if (*j->p == '0') {
        j->p++;
    } else if (*j->p >= '1' && *j->p <= '9') {
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            j->p++;
    } else {
        return jp_fail(j, "bad number");
    }
    if (j->p < j->end && *j->p == '.') {
        j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9')
            return jp_fail(j, "bad number");
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            j->p++;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
            j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9')
            return jp_fail(j, "bad number");
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            j->p++;
    }
    size_t n = (size_t)(j->p - a);
    v->s = malloc(n + 1);
    if (!v->s)
        return j->status = ac_err_set(j->err, AC_EINTERNAL, "out of memory");
    memcpy(v->s, a, n);
    v->s[n] = 0;
    return AC_OK;
}

static int parse_value(jp *j, ac_jv **out, int depth);

static int parse_container(jp *j, ac_jv *v, int depth, int is_obj)
{
    char close = is_obj ? '}' : ']';
    j->p++;
    skip_ws(j);
    if (j->p < j->end && *j->p == close) {
        j->p++;
        return AC_OK;
    }
    for (;;) {
        char *key = NULL;
        skip_ws(j);
        if (is_obj) {
            if (j->p >= j->end || *j->p != '"')
                return jp_fail(j, "expected a member name");
            if (parse_string(j, &key))
                return j->status;
            skip_ws(j);
            if (j->p >= j->end || *j->p != ':') {
                free(key);
                return jp_fail(j, "expected ':'");
            }
            j->p++;
        }
        ac_jv *kid = NULL;
        if (parse_value(j, &kid, depth + 1)) {
            free(key);
            return j->status;
        }
        kid->key = key;
        if (add_kid(j, v, kid))
            return j->status;
        skip_ws(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (j->p < j->end && *j->p == close) {
            j->p++;
            return AC_OK;
        }
        return jp_fail(j, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int parse_value(jp *j, ac_jv **out, int depth)
{
    skip_ws(j);
    if (depth > AC_JSON_PARSE_DEPTH)
        return jp_fail(j, "nested too deeply");
    if (j->p >= j->end)
        return jp_fail(j, "unexpected end of input");
    ac_jv *v = NULL;
    char c = *j->p;
    int st = AC_OK;
    if (c == '{' || c == '[') {
        if (!(v = new_jv(j, c == '{' ? AC_JV_OBJECT : AC_JV_ARRAY)))
            return j->status;
        st = parse_container(j, v, depth, c == '{');
    } else if (c == '"') {
        if (!(v = new_jv(j, AC_JV_STRING)))
            return j->status;
        st = parse_string(j, &v->s);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        if (!(v = new_jv(j, AC_JV_NUMBER)))
            return j->status;
        st = parse_number(j, v);
    } else if ((size_t)(j->end - j->p) >= 4 && memcmp(j->p, "true", 4) == 0) {
        if (!(v = new_jv(j, AC_JV_BOOL)))
            return j->status;
        v->b = 1;
        j->p += 4;
    } else if ((size_t)(j->end - j->p) >= 5 && memcmp(j->p, "false", 5) == 0) {
        if (!(v = new_jv(j, AC_JV_BOOL)))
            return j->status;
        j->p += 5;
    } else if ((size_t)(j->end - j->p) >= 4 && memcmp(j->p, "null", 4) == 0) {
        if (!(v = new_jv(j, AC_JV_NULL)))
            return j->status;
        j->p += 4;
    } else {
        return jp_fail(j, "expected a value");
    }
    if (st) {
        ac_jv_free(v);
        return j->status ? j->status : st;
    }
    *out = v;
    return AC_OK;
}

int ac_jparse(ac_jv **out, const char *text, size_t len, const char *name, ac_err *err)
{
    jp j = {text, text + len, text, name ? name : "JSON", err, AC_OK};
    ac_jv *v = NULL;
    *out = NULL;
    if (parse_value(&j, &v, 0))
        return j.status;
    skip_ws(&j);
    if (j.p != j.end) {
        ac_jv_free(v);
        return jp_fail(&j, "unexpected text after the value");
    }
    *out = v;
    return AC_OK;
}

int ac_jparse_file(ac_jv **out, const char *path, ac_err *err)
{
    unsigned char *buf;
    size_t n;
    *out = NULL;
    int st = ac_file_read(path, AC_JSON_PARSE_MAX_BYTES, &buf, &n, err);
    if (st == AC_EDATA)
        return ac_err_set(err, AC_EDATA, "%s: too large for a configuration file", path);
    if (st)
        return st;
    st = ac_jparse(out, (const char *)buf, n, path, err);
    free(buf);
    return st;
}

void ac_jv_free(ac_jv *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n; i++)
        ac_jv_free(v->kids[i]);
    free(v->kids);
    free(v->s);
    free(v->key);
    free(v);
}

const ac_jv *ac_jv_get(const ac_jv *obj, const char *key)
{
    const ac_jv *r = NULL;
    if (!obj || obj->type != AC_JV_OBJECT)
        return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (obj->kids[i]->key && strcmp(obj->kids[i]->key, key) == 0)
            r = obj->kids[i];
    return r;
}

static const ac_jv *need(const ac_jv *obj, const char *key, ac_jv_type t, const char *what,
                         const char *name, ac_err *err, int *st)
{
    const ac_jv *v = ac_jv_get(obj, key);
    if (!v) {
        *st = ac_err_set(err, AC_EDATA, "%s: missing \"%s\"", name, key);
        return NULL;
    }
    if (v->type != t) {
        *st = ac_err_set(err, AC_EDATA, "%s: \"%s\" is not %s", name, key, what);
        return NULL;
    }
    *st = AC_OK;
    return v;
}

int ac_jv_get_string(const ac_jv *obj, const char *key, const char **out, const char *name,
                     ac_err *err)
{
    int st;
    const ac_jv *v = need(obj, key, AC_JV_STRING, "a string", name, err, &st);
    if (v)
        *out = v->s;
    return st;
}

int ac_jv_get_bool(const ac_jv *obj, const char *key, int *out, const char *name, ac_err *err)
{
    int st;
    const ac_jv *v = need(obj, key, AC_JV_BOOL, "true or false", name, err, &st);
    if (v)
        *out = v->b;
    return st;
}

int ac_jv_get_double(const ac_jv *obj, const char *key, double *out, const char *name,
                     ac_err *err)
{
    const ac_jv *v = ac_jv_get(obj, key);
    /* the writer spells non-finite numbers as strings */
    if (v && v->type == AC_JV_STRING) {
        if (strcmp(v->s, "inf") == 0)
            return *out = INFINITY, AC_OK;
        if (strcmp(v->s, "-inf") == 0)
            return *out = -INFINITY, AC_OK;
        if (strcmp(v->s, "nan") == 0)
            return *out = NAN, AC_OK;
    }
    int st;
    v = need(obj, key, AC_JV_NUMBER, "a number", name, err, &st);
    if (v) {
        char *end;
        *out = strtod(v->s, &end);
        if (*end)
            return ac_err_set(err, AC_EDATA, "%s: \"%s\" is not a number", name, key);
    }
    return st;
}

static int parse_u64(const char *s, uint64_t *out)
{
    if (!*s || *s == '-' || *s == '+')
        return 0;
    for (const char *q = s; *q; q++)
        if (*q < '0' || *q > '9')
            return 0;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return 0;
    *out = (uint64_t)v;
    return 1;
}

int ac_jv_get_u64(const ac_jv *obj, const char *key, uint64_t *out, const char *name, ac_err *err)
{
    const ac_jv *v = ac_jv_get(obj, key);
    if (!v)
        return ac_err_set(err, AC_EDATA, "%s: missing \"%s\"", name, key);
    if ((v->type != AC_JV_NUMBER && v->type != AC_JV_STRING) || !parse_u64(v->s, out))
        return ac_err_set(err, AC_EDATA, "%s: \"%s\" is not a non-negative whole number", name,
                          key);
    return AC_OK;
}

int ac_jv_get_size(const ac_jv *obj, const char *key, size_t *out, const char *name, ac_err *err)
{
    uint64_t u;
    int st = ac_jv_get_u64(obj, key, &u, name, err);
    if (st)
        return st;
    if (u > SIZE_MAX)
        return ac_err_set(err, AC_EDATA, "%s: \"%s\" is too large", name, key);
    *out = (size_t)u;
    return AC_OK;
}
