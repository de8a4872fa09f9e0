/* fmt_tool.c — helper of tests/fmt_outward.py: ac_fmt_lo and ac_fmt_hi
 * (attncheck/json.h) on the doubles read from standard input (one per line,
 * C hexadecimal or decimal), for every spec given as an argument:
 *
 *   fmt_tool SPEC...   prints "LO HI" per double and spec, in that order
 *
 * Exit status 0, or 64 on bad usage. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>

#include "attncheck/json.h"

int main(int argc, char **argv)
{
    char line[128], lo[512], hi[512];
    if (argc < 2) {
        fputs("usage: fmt_tool SPEC... < doubles\n", stderr);
        return 64;
    }
    while (fgets(line, sizeof line, stdin)) {
        double x = strtod(line, NULL);
        for (int k = 1; k < argc; k++) {
            ac_fmt_lo(lo, sizeof lo, argv[k], x);
            ac_fmt_hi(hi, sizeof hi, argv[k], x);
            printf("%s %s\n", lo, hi);
        }
    }
    return 0;
}
