/* attncheck/json.h — a small streaming JSON writer (RFC 8259) used by the
 * --json output of every command and by certificate files, and the
 * shortest round-trip formatting of doubles.
 *
 * Usage:
 *
 *     ac_json *j = ac_json_new(stdout, 2);
 *     ac_json_begin_object(j);
 *     ac_json_kv_string(j, "command", "verdict");
 *     ac_json_key(j, "bounds");
 *     ac_json_begin_array(j);
 *     ac_json_number(j, 0.25);
 *     ac_json_end_array(j);
 *     ac_json_end_object(j);
 *     int st = ac_json_error(j);   (AC_OK when the document is complete)
 *     ac_json_free(j);
 *
 * Values are written as they are given (nothing is buffered beyond stdio);
 * commas, colons, indentation and nesting are handled by the writer.  The
 * document is one top-level value, followed by a newline once it is
 * complete.  With indent 0 it is written on one line with no spaces
 * ({"a":1,"b":[1,2]}); with indent n > 0 every array element and object
 * member starts a new line indented n spaces per level, keys are followed by
 * ": ", and empty containers are written {} and [] (the layout of Python's
 * json.dumps(..., indent=n)).
 *
 * Misuse — a value in an object without a preceding key, a key outside an
 * object or twice in a row, an end that does not match the open container,
 * a second top-level value, nesting deeper than AC_JSON_MAX_DEPTH, a NULL
 * key — sets a sticky error flag and the offending call writes nothing (a
 * kv helper whose key is refused writes no value either).
 * Output errors of fp are also recorded.  Check ac_json_error once at the
 * end.  No function allocates except ac_json_new.  A writer must not be
 * used by two threads at once.
 */
#ifndef ATTNCHECK_JSON_H
#define ATTNCHECK_JSON_H

#include <stddef.h>
#include <stdio.h>

#include "attncheck/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Maximum nesting depth of arrays and objects. */
#define AC_JSON_MAX_DEPTH 64

/* A buffer of this size always holds the result of ac_fmt_double. */
#define AC_FMT_DOUBLE_BUFSIZE 32

typedef struct ac_json ac_json;

/* New writer to fp (not owned).  indent 0 (or negative) writes one line,
 * indent > 0 pretty-prints with that many spaces per level (at most 16;
 * larger values are reduced to 16).  Returns NULL if fp is NULL or out of
 * memory. */
ac_json *ac_json_new(FILE *fp, int indent);

/* Free the writer (accepts NULL).  Does not close or flush fp. */
void ac_json_free(ac_json *j);

/* Open / close an object {...} or an array [...].  Opening counts as a
 * value: inside an object it must follow ac_json_key. */
void ac_json_begin_object(ac_json *j);
void ac_json_end_object(ac_json *j);
void ac_json_begin_array(ac_json *j);
void ac_json_end_array(ac_json *j);

/* Key of the next member of the current object, escaped as a string.
 * Duplicate keys are not detected. */
void ac_json_key(ac_json *j, const char *key);

/* String value.  '"' and '\\' are escaped, control characters U+0000..U+001F
 * are written \b \f \n \r \t or \u00XX, DEL and all other valid UTF-8 pass
 * through unchanged; each maximal ill-formed subsequence of the UTF-8
 * (Unicode 15, section 3.9: overlong forms, surrogates, code points above
 * U+10FFFF, truncated sequences, stray continuation bytes) is replaced by
 * U+FFFD, so the output is always valid UTF-8.  s == NULL writes null. */
void ac_json_string(ac_json *j, const char *s);

/* Number value, formatted by ac_fmt_double (the string strtod reads back to
 * exactly x).  JSON (RFC 8259) has no infinities or NaN: non-finite x are
 * written null, so a number-valued member is always a JSON number or null
 * and never changes type (the policy of attncheck(1), section JSON). */
void ac_json_number(ac_json *j, double x);

/* Integer, unsigned integer (all of uint64_t, e.g. seeds, written exactly),
 * boolean (b != 0 is true) and null values. */
void ac_json_int(ac_json *j, long long x);
void ac_json_uint(ac_json *j, unsigned long long x);
void ac_json_bool(ac_json *j, int b);
void ac_json_null(ac_json *j);

/* Key and value in one call (inside an object). */
void ac_json_kv_string(ac_json *j, const char *k, const char *v);
void ac_json_kv_number(ac_json *j, const char *k, double x);
void ac_json_kv_int(ac_json *j, const char *k, long long x);
void ac_json_kv_uint(ac_json *j, const char *k, unsigned long long x);
void ac_json_kv_bool(ac_json *j, const char *k, int b);
/* "k": [a, b], e.g. a range or "i of k". */
void ac_json_kv_int_pair(ac_json *j, const char *k, long long a, long long b);

/* AC_OK if every call so far was valid, all output reached fp without error
 * (fputs/putc results and ferror(fp)) and the document is complete (one
 * top-level value, all containers closed).  Otherwise AC_ECANTCREAT if
 * writing failed, else AC_EINTERNAL (misuse, or an incomplete document when
 * called mid-way; j == NULL also gives AC_EINTERNAL).  Does not flush fp:
 * call fflush/fclose and check them for errors that stdio reports late. */
int ac_json_error(const ac_json *j);

/* Write x into buf (size n) as the shortest of %.15g, %.16g, %.17g that
 * strtod converts back to exactly x (same bits, so -0 stays "-0"); %.17g
 * always round-trips for IEEE doubles, so the result is exact.  The radix
 * character is always '.', whatever LC_NUMERIC says, so the result is a
 * valid JSON number; non-finite x give "inf", "-inf" or "nan".  The result
 * has at most 24 characters (see AC_FMT_DOUBLE_BUFSIZE).  Returns the
 * length of the full result (excluding the NUL); as with snprintf, the
 * output was truncated iff the return value is >= n (buf is always
 * NUL-terminated when n > 0). */
int ac_fmt_double(char *buf, size_t n, double x);

/* The one formatter of printed certified bounds (doc/mathematics.md §2.1:
 * every printed bound is rounded outward).  x in decimal, rounded exactly
 * in one direction: ac_fmt_lo toward -inf (the number printed is <= x, for
 * a lower bound), ac_fmt_hi toward +inf (>= x, for an upper bound); MPFR's
 * formatted output with directed rounding, so the comparison is between
 * the decimal printed and the double itself, not its round trip.  spec is
 * a printf conversion without the '%' and without a width: optional flags
 * from "+ -", '.', the precision, and 'g', 'e' or 'f' (e.g. ".3g", "+.2f");
 * a trailing '%' prints 100 x (multiplied exactly) followed by '%'.  The
 * radix character is '.' whatever the locale; non-finite x give "inf",
 * "-inf", "nan" ("+inf" with the '+' flag); a malformed spec gives "?".
 * Returns the length of the full result, as snprintf (buf is always
 * NUL-terminated when n > 0; 48 bytes hold any result with precision up to
 * 17 and 'g' or 'e'). */
int ac_fmt_lo(char *buf, size_t n, const char *spec, double x);
int ac_fmt_hi(char *buf, size_t n, const char *spec, double x);
/* The same into buf of AC_FMT_BOUND_BUFSIZE bytes, returning buf (for use
 * in an argument list: printf("[%s, %s]", ac_str_lo(b1, ".3g", lo), ...)). */
#define AC_FMT_BOUND_BUFSIZE 48
const char *ac_str_lo(char *buf, const char *spec, double x);
const char *ac_str_hi(char *buf, const char *spec, double x);

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_JSON_H */
