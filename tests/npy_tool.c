/* npy_tool.c — helper for the NumPy cross-check (tests/npy_numpy.sh).
 *
 *   npy_tool copy IN OUT   read IN and write it to OUT (C order, '<f8')
 *   npy_tool dump IN       print "ndim N", "shape D0 D1 ..." and then every
 *                          value in C order with %.17g, one per line
 *
 * Exit status: 0 on success, the library's status code on failure (with
 * the message on stderr), 64 on bad usage.
 */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "attncheck/common.h"
#include "attncheck/npy.h"

static int usage(void)
{
    fputs("usage: npy_tool copy IN OUT\n       npy_tool dump IN\n", stderr);
    return AC_EUSAGE;
}

int main(int argc, char **argv)
{
    ac_array a;
    ac_err err;
    int st;

    ac_err_clear(&err);
    if (argc == 4 && strcmp(argv[1], "copy") == 0) {
        st = ac_npy_read(argv[2], &a, &err);
        if (st == AC_OK)
            st = ac_npy_write(argv[3], &a, &err);
    } else if (argc == 3 && strcmp(argv[1], "dump") == 0) {
        st = ac_npy_read(argv[2], &a, &err);
        if (st == AC_OK) {
            printf("ndim %zu\nshape", a.ndim);
            for (size_t k = 0; k < a.ndim; k++)
                printf(" %zu", a.shape[k]);
            putchar('\n');
            for (size_t i = 0; i < a.size; i++)
                printf("%.17g\n", a.data[i]);
            if (fflush(stdout) != 0 || ferror(stdout)) {
                ac_array_free(&a);
                fputs("npy_tool: cannot write to standard output\n", stderr);
                return AC_ECANTCREAT;
            }
        }
    } else {
        return usage();
    }
    if (st != AC_OK) {
        fprintf(stderr, "npy_tool: %s\n", err.msg);
        return st;
    }
    ac_array_free(&a);
    return 0;
}
