/* sumjson.c — JSON files ending with their own FNV-1a checksum (sumjson.h). */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/fileio.h"
#include "core/fnv.h"
#include "io/sumjson.h"

#define SUM_KEY ",\"fnv1a64\":\""

int ac_sumjson_write(const char *path, void (*compose)(ac_json *j, void *ctx), void *ctx,
                     ac_err *err)
{
    /* the document in memory first: the checksum covers its bytes before
     * the closing brace, where the checksum member goes */
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    ac_json *j = mem ? ac_json_new(mem, 0) : NULL;
    if (!j) {
        if (mem)
            fclose(mem);
        free(text);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    compose(j, ctx); /* and a newline */
    int jst = ac_json_error(j);
    ac_json_free(j);
    if (fclose(mem) != 0 || jst || len < 2 || memcmp(text + len - 2, "}\n", 2) != 0) {
        free(text);
        return ac_err_set(err, AC_EINTERNAL, "%s: cannot compose the file in memory", path);
    }
    len -= 2;
    ac_atomic f;
    int st = ac_atomic_open(&f, path, err);
    if (st) {
        free(text);
        return st;
    }
    uint64_t sum = fnv1a(FNV_INIT, text, len);
    int ok = fwrite(text, 1, len, f.fp) == len &&
             fprintf(f.fp, SUM_KEY "%016" PRIx64 "\"}\n", sum) > 0;
    free(text);
    if (!ok) {
        ac_atomic_abort(&f);
        return ac_err_set(err, AC_ECANTCREAT, "%s: cannot write", path);
    }
    return ac_atomic_commit(&f, err);
}

const char *ac_sumjson_check(const char *text, size_t n, char *why, size_t n_why)
{
    size_t kl = strlen(SUM_KEY), tail = kl + 16 + 2;
    if (n > 0 && text[n - 1] == '\n')
        n--;
    if (n < tail || memcmp(text + n - tail, SUM_KEY, kl) != 0 ||
        memcmp(text + n - 2, "\"}", 2) != 0)
        return "it does not end with its checksum \"fnv1a64\"";
    uint64_t want = 0;
    for (size_t k = 0; k < 16; k++) {
        int c = text[n - tail + kl + k], d = c >= '0' && c <= '9' ? c - '0'
                                          : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return "its checksum is not 16 hexadecimal digits";
        want = want << 4 | (uint64_t)d;
    }
    uint64_t got = fnv1a(FNV_INIT, text, n - tail);
    if (got == want)
        return NULL;
    snprintf(why, n_why,
             "checksum mismatch (fnv1a64 %016" PRIx64 " written, %016" PRIx64
             " read): the file changed after it was written",
             want, got);
    return why;
}

int ac_sumjson_names(const char *text, size_t n, const char *format)
{
    size_t lim = n < 200 ? n : 200, fl = strlen(format);
    for (size_t k = 0; k + fl <= lim; k++)
        if (memcmp(text + k, format, fl) == 0)
            return 1;
    return 0;
}

int ac_jv_hexdouble(const ac_jv *v, double *x)
{
    if (!v || v->type != AC_JV_STRING)
        return 0;
    char *end;
    *x = strtod(v->s, &end);
    return end != v->s && *end == '\0';
}

const char *ac_jv_dup_key(const ac_jv *obj)
{
    for (size_t a = 0; a < obj->n; a++)
        for (size_t b = 0; b < a; b++)
            if (strcmp(obj->kids[a]->key, obj->kids[b]->key) == 0)
                return obj->kids[a]->key;
    return NULL;
}
