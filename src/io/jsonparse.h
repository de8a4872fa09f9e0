/* jsonparse.h — a small JSON reader (RFC 8259) for the files attncheck
 * writes itself (checkpoint configurations).  Internal to the library.
 *
 * ac_jparse builds a tree of ac_jv values in one allocation-per-node pass.
 * Numbers keep their text, so that 64-bit integers (seeds) and doubles both
 * read back exactly.  Strings are unescaped to UTF-8 (\uXXXX, including
 * surrogate pairs); a string containing U+0000 is rejected.  Nesting is
 * limited to AC_JSON_PARSE_DEPTH levels.  Errors name the line and column.
 */
#ifndef AC_JSONPARSE_H
#define AC_JSONPARSE_H

#include <stddef.h>
#include <stdint.h>

#include "attncheck/common.h"

#define AC_JSON_PARSE_DEPTH 64
/* The largest file ac_jparse_file reads (512 MiB - 1). */
#define AC_JSON_PARSE_MAX_BYTES (((size_t)1 << 29) - 1)

typedef enum { AC_JV_NULL, AC_JV_BOOL, AC_JV_NUMBER, AC_JV_STRING, AC_JV_ARRAY, AC_JV_OBJECT } ac_jv_type;

typedef struct ac_jv ac_jv;
struct ac_jv {
    ac_jv_type type;
    int b;            /* BOOL */
    char *s;          /* STRING: the text; NUMBER: the literal */
    char *key;        /* member name when inside an object */
    size_t n;         /* ARRAY/OBJECT: number of children */
    ac_jv **kids;     /* ARRAY/OBJECT: children in order */
};

/* Parse text[0..len-1] (one value, surrounded by optional white space).
 * name is used in messages ("NAME: line 3, column 7: expected ':'").
 * Returns AC_OK and *out, or AC_EDATA (malformed), AC_EINTERNAL (memory). */
int ac_jparse(ac_jv **out, const char *text, size_t len, const char *name, ac_err *err);
/* Read (ac_file_read) and parse the file path: AC_ENOINPUT if it cannot be
 * read, AC_EDATA if larger than AC_JSON_PARSE_MAX_BYTES. */
int ac_jparse_file(ac_jv **out, const char *path, ac_err *err);
void ac_jv_free(ac_jv *v);

/* Member of an object by name (the last one if repeated), or NULL. */
const ac_jv *ac_jv_get(const ac_jv *obj, const char *key);

/* Typed access to a member; each returns AC_EDATA "NAME: KEY: ..." when the
 * member is missing or has the wrong type or range. */
int ac_jv_get_string(const ac_jv *obj, const char *key, const char **out, const char *name,
                     ac_err *err);
int ac_jv_get_bool(const ac_jv *obj, const char *key, int *out, const char *name, ac_err *err);
int ac_jv_get_double(const ac_jv *obj, const char *key, double *out, const char *name,
                     ac_err *err);
int ac_jv_get_size(const ac_jv *obj, const char *key, size_t *out, const char *name, ac_err *err);
/* A non-negative integer written as a number or as a decimal string. */
int ac_jv_get_u64(const ac_jv *obj, const char *key, uint64_t *out, const char *name, ac_err *err);

#endif
