/* mh_tool.c — run attncheck's multi-head layer on files, for the NumPy /
 * PyTorch cross-checks (tests/separate_numpy.py).
 *
 *   mh_tool forward  DIR P X.npy OUT.npy          OUT = y(X) in double
 *   mh_tool backward DIR P X.npy DY.npy OUT.npy   OUT = (dy/dX)' DY
 *   mh_tool enclose  DIR P X.npy LO.npy HI.npy    stage-0 enclosure of y(X)
 *
 * The layer is read from DIR/<P>q.npy, <P>k.npy, <P>v.npy, <P>o.npy.
 * Exit status: 0, or the library's status with its message on stderr. */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "attncheck/multihead.h"
#include "attncheck/npy.h"

static int fail(const ac_err *e)
{
    fprintf(stderr, "mh_tool: %s\n", e->msg);
    return e->status ? e->status : 70;
}

int main(int argc, char **argv)
{
    ac_mh L = {0};
    ac_mat X = {0}, Y = {0}, D = {0};
    ac_err err;
    int st;
    ac_err_clear(&err);
    if (argc < 6 || strlen(argv[3]) != 1) {
        fprintf(stderr, "usage: mh_tool forward|backward|enclose DIR P X.npy ...\n");
        return 64;
    }
    const char *cmd = argv[1];
    if ((st = ac_mh_load_dir(&L, argv[2], argv[3][0], &err)) ||
        (st = ac_npy_read_mat(argv[4], &X, &err)) ||
        (st = ac_mat_init(&Y, L.d, X.cols, &err)))
        goto out;
    if (strcmp(cmd, "forward") == 0) {
        if (!(st = ac_mh_forward(&Y, &L, &X, NULL, &err)))
            st = ac_npy_write_mat(argv[5], &Y, &err);
    } else if (strcmp(cmd, "backward") == 0 && argc == 7) {
        if (!(st = ac_npy_read_mat(argv[5], &D, &err)) &&
            !(st = ac_mh_backward(&Y, &L, &X, &D, NULL, &err)))
            st = ac_npy_write_mat(argv[6], &Y, &err);
    } else if (strcmp(cmd, "enclose") == 0 && argc == 7) {
        ac_imat E = {0};
        if (!(st = ac_mh_enclose(&E, &L, &X, &err))) {
            ac_mat lo = {0}, hi = {0};
            ac_mat_init(&lo, L.d, X.cols, NULL);
            ac_mat_init(&hi, L.d, X.cols, NULL);
            for (size_t i = 0; i < L.d * X.cols; i++) {
                lo.data[i] = ac_imat_lo(&E, i);
                hi.data[i] = ac_imat_hi(&E, i);
            }
            if (!(st = ac_npy_write_mat(argv[5], &lo, &err)))
                st = ac_npy_write_mat(argv[6], &hi, &err);
            ac_mat_free(&lo);
            ac_mat_free(&hi);
        }
        ac_imat_free(&E);
    } else {
        fprintf(stderr, "mh_tool: unknown command '%s' or wrong arguments\n", cmd);
        st = 64;
        goto done;
    }
out:
    if (st)
        st = fail(&err);
done:
    ac_mh_free(&L);
    ac_mat_free(&X);
    ac_mat_free(&Y);
    ac_mat_free(&D);
    return st;
}
