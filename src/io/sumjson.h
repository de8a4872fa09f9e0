/* sumjson.h — JSON files that end with the FNV-1a checksum of their own
 * bytes (the shard files of condition and inspect): composed whole in
 * memory, written atomically; read back with the checksum checked.
 * Internal to the library.
 *
 * The file is one JSON object whose last member is
 * ,"fnv1a64":"<16 lower-case hex digits>"} followed by a newline: the 64-bit
 * FNV-1a checksum (core/fnv.h) of every byte before the text ,"fnv1a64". */
#ifndef AC_IO_SUMJSON_H
#define AC_IO_SUMJSON_H

#include <stddef.h>

#include "attncheck/common.h"
#include "attncheck/json.h"
#include "io/jsonparse.h"

/* Write the object compose(j, ctx) writes (begun and ended by it), with the
 * checksum member added last, atomically to path: AC_OK, AC_ECANTCREAT
 * ("PATH: cannot write"), AC_EINTERNAL. */
int ac_sumjson_write(const char *path, void (*compose)(ac_json *j, void *ctx), void *ctx,
                     ac_err *err);
/* Whether text[0 .. n) ends with its checksum and the checksum holds: NULL,
 * or why not (into why, n_why bytes). */
const char *ac_sumjson_check(const char *text, size_t n, char *why, size_t n_why);
/* 1 when the first 200 bytes of text contain format (a damaged file of that
 * format, or another file). */
int ac_sumjson_names(const char *text, size_t n, const char *format);
/* A double written as a string by "%a" (or "inf", "nan"): 1 and *x, or 0. */
int ac_jv_hexdouble(const ac_jv *v, double *x);
/* The name of a member given twice in obj, or NULL. */
const char *ac_jv_dup_key(const ac_jv *obj);

#endif
