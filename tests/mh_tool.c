/* mh_tool.c — run attncheck's multi-head layers on files, for the NumPy /
 * PyTorch cross-checks (tests/separate_numpy.py, tests/models_torch.py).
 *
 *   mh_tool forward  DIR P X.npy OUT.npy          OUT = y(X) in double
 *   mh_tool backward DIR P X.npy DY.npy OUT.npy   OUT = (dy/dX)' DY
 *   mh_tool enclose  DIR P X.npy LO.npy HI.npy    stage-0 enclosure of y(X)
 * The layer is read from DIR/<P>q.npy, <P>k.npy, <P>v.npy, <P>o.npy.
 *
 * Pretrained checkpoints (attncheck/models.h):
 *   mh_tool model CKPT LAYER OUTDIR INPUT... [--rope half|interleaved] [--no-checksum]
 *     INPUT: --ids IDS.npy [--types T.npy] [--keep K.npy] (tokens; ViT:
 *     --pixels PIX.npy), or --resid R.npy (the residual stream entering the
 *     layer, n x d), or --xin X.npy (the input of the projections), with
 *     --keep K.npy for the last two as well.  Writes OUTDIR/patterns.npy
 *     (h, n, n), x.npy (n, d), resid.npy (n, d; not with --xin) and, for
 *     a layer without RoPE, Theorem 1's form: t1_x.npy (d', n),
 *     t1_wq.npy and t1_wk.npy (h, dk, d'), t1_factor.npy (h).  Prints the
 *     model's and the layer's descriptions.  Everything is computed before
 *     OUTDIR is made: a failure writes nothing.
 *   mh_tool st FILE|DIR|INDEX OUTDIR
 *     every tensor of F64/F32/F16/BF16 as OUTDIR/NAME.npy (for the reader's
 *     NumPy check); prints each file's SHA-256.
 * IDS, types and keep are float64 .npy vectors of integers.
 * Exit status: 0, or the library's status with its message on stderr. */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/fileio.h"
#include "attncheck/models.h"
#include "attncheck/multihead.h"
#include "attncheck/npy.h"

static int fail(const ac_err *e)
{
    fprintf(stderr, "mh_tool: %s\n", e->msg);
    return e->status ? e->status : 70;
}

static int model_main(int argc, char **argv);
static int st_main(int argc, char **argv);

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "model") == 0)
        return model_main(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "st") == 0)
        return st_main(argc, argv);
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

/* ---------------------------------------------------------------- checkpoints */

/* A float64 .npy vector of integers in [lo, hi] as int32. */
static int read_ints(const char *path, int32_t **out, size_t *n, long lo, long hi, ac_err *err)
{
    double *v;
    int st = ac_npy_read_vec(path, &v, n, err);
    if (st)
        return st;
    *out = malloc((*n + 1) * sizeof **out);
    for (size_t i = 0; *out && i < *n; i++) {
        if (!(v[i] >= (double)lo && v[i] <= (double)hi) || v[i] != floor(v[i])) {
            free(v);
            free(*out);
            *out = NULL;
            return ac_err_set(err, AC_EDATA, "%s: entry %zu is not an integer in [%ld, %ld]", path,
                              i, lo, hi);
        }
        (*out)[i] = (int32_t)v[i];
    }
    free(v);
    return *out ? AC_OK : ac_err_set(err, AC_EINTERNAL, "out of memory");
}

static int write_in(ac_stagedir *sd, const char *name, const ac_array *a, ac_err *err)
{
    const char *p = ac_stagedir_path(sd, name);
    if (!p)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    int st = ac_npy_write(p, a, err);
    ac_stagedir_unstage_err(sd, err);
    return st;
}

static ac_array mat_array(const ac_mat *m)
{
    ac_array a = {0};
    a.ndim = 2;
    a.shape[0] = m->rows;
    a.shape[1] = m->cols;
    a.size = m->rows * m->cols;
    a.data = m->data;
    return a;
}

static int model_main(int argc, char **argv)
{
    ac_err err;
    ac_err_clear(&err);
    if (argc < 5) {
        fprintf(stderr, "usage: mh_tool model CKPT LAYER OUTDIR --ids F | --pixels F | --resid F "
                        "| --xin F [--types F] [--keep F] [--rope half|interleaved] "
                        "[--no-checksum]\n");
        return 64;
    }
    const char *dir = argv[2], *outdir = argv[4];
    const char *ids_p = NULL, *types_p = NULL, *keep_p = NULL, *pix_p = NULL, *resid_p = NULL,
               *xin_p = NULL;
    char *end;
    size_t layer = strtoul(argv[3], &end, 10);
    ac_model_opts o;
    ac_model_opts_default(&o);
    if (*end || !*argv[3]) {
        fprintf(stderr, "mh_tool: LAYER must be a number\n");
        return 64;
    }
    for (int i = 5; i < argc; i++) {
        const char **dst = !strcmp(argv[i], "--ids")      ? &ids_p
                           : !strcmp(argv[i], "--types")  ? &types_p
                           : !strcmp(argv[i], "--keep")   ? &keep_p
                           : !strcmp(argv[i], "--pixels") ? &pix_p
                           : !strcmp(argv[i], "--resid")  ? &resid_p
                           : !strcmp(argv[i], "--xin")    ? &xin_p
                                                          : NULL;
        if (dst && i + 1 < argc) {
            *dst = argv[++i];
        } else if (!strcmp(argv[i], "--rope") && i + 1 < argc) {
            i++;
            o.rope = !strcmp(argv[i], "half") ? AC_ROPE_HALF
                     : !strcmp(argv[i], "interleaved") ? AC_ROPE_INTERLEAVED : AC_ROPE_NONE;
            if (!o.rope) {
                fprintf(stderr, "mh_tool: --rope half|interleaved\n");
                return 64;
            }
        } else if (!strcmp(argv[i], "--no-checksum")) {
            o.checksum = 0;
        } else {
            fprintf(stderr, "mh_tool: unknown or incomplete option '%s'\n", argv[i]);
            return 64;
        }
    }
    if (!!ids_p + !!pix_p + !!resid_p + !!xin_p != 1) {
        fprintf(stderr, "mh_tool: give one of --ids, --pixels, --resid, --xin\n");
        return 64;
    }
    ac_model m = {0};
    ac_attn_layer L = {0};
    ac_mat R = {0}, X = {0}, Xt = {0}, Wq = {0}, Wk = {0};
    ac_array P = {0}, pix = {0}, t1q = {0}, t1k = {0}, t1f = {0};
    int32_t *ids = NULL, *types = NULL, *keepi = NULL;
    unsigned char *keep = NULL;
    size_t n = 0, nt = 0, nk = 0;
    int st, have_r = 0;
    char line[4096];
    if ((st = ac_model_open(&m, dir, &o, &err)) || (st = ac_model_layer(&L, &m, layer, &err)))
        goto out;
    if (keep_p) {
        if ((st = read_ints(keep_p, &keepi, &nk, 0, 1, &err)))
            goto out;
        keep = malloc(nk + 1);
        for (size_t i = 0; keep && i < nk; i++)
            keep[i] = (unsigned char)keepi[i];
    }
    if (ids_p || pix_p) {
        ac_model_input in = {0};
        if (ids_p) {
            if ((st = read_ints(ids_p, &ids, &n, 0, INT32_MAX, &err)))
                goto out;
            if (types_p && (st = read_ints(types_p, &types, &nt, 0, INT32_MAX, &err)))
                goto out;
            if ((types_p && nt != n) || (keep_p && nk != n)) {
                st = ac_err_set(&err, AC_EUSAGE, "--types and --keep need %zu entries", n);
                goto out;
            }
            in.n = n;
            in.ids = ids;
            in.type_ids = types;
            in.keep = keep;
        } else {
            if ((st = ac_npy_read(pix_p, &pix, &err)))
                goto out;
            in.n = 1 + (m.image / (m.patch ? m.patch : 1)) * (m.image / (m.patch ? m.patch : 1));
            if (pix.size != m.channels * m.image * m.image) {
                st = ac_err_set(&err, AC_EDATA, "%s: %zu pixels, the model takes %zu x %zu x %zu",
                                pix_p, pix.size, m.channels, m.image, m.image);
                goto out;
            }
            in.pixels = pix.data;
        }
        if ((st = ac_model_run(&R, &m, layer, &in, &err)))
            goto out;
        have_r = 1;
    } else if (resid_p) {
        if ((st = ac_npy_read_mat(resid_p, &R, &err)))
            goto out;
        have_r = 1;
    }
    if (have_r) {
        if ((st = ac_attn_input(&X, &L, &R, &err)))
            goto out;
    } else if ((st = ac_npy_read_mat(xin_p, &X, &err))) {
        goto out;
    }
    if (keep && nk != X.rows) {
        st = ac_err_set(&err, AC_EUSAGE, "--keep has %zu entries for %zu tokens", nk, X.rows);
        goto out;
    }
    if ((st = ac_attn_patterns(&P, &L, &X, keep, &err)))
        goto out;
    if (!L.rope) {
        size_t sh[3] = {L.h, L.dk, 0}, hh = L.h;
        for (size_t i = 0; i < L.h; i++) {
            double f;
            ac_mat a = {0}, b = {0};
            ac_mat_free(&Xt);
            if ((st = ac_attn_head_t1(&Xt, &a, &b, &f, &L, i, &X, &err)))
                goto out;
            if (i == 0) {
                sh[2] = a.cols;
                ac_array_init(&t1q, 3, sh, NULL);
                ac_array_init(&t1k, 3, sh, NULL);
                ac_array_init(&t1f, 1, &hh, NULL);
            }
            memcpy(t1q.data + i * a.rows * a.cols, a.data, a.rows * a.cols * sizeof(double));
            memcpy(t1k.data + i * b.rows * b.cols, b.data, b.rows * b.cols * sizeof(double));
            t1f.data[i] = f;
            ac_mat_free(&a);
            ac_mat_free(&b);
        }
    }
    printf("model: %s\n", ac_model_describe(line, sizeof line, &m));
    printf("layer: %s\n", ac_attn_describe(line, sizeof line, &L));
    /* everything computed: write */
    ac_stagedir sd;
    if ((st = ac_stagedir_begin(&sd, outdir, &err)))
        goto out;
    ac_array xa = mat_array(&X), ra = mat_array(&R), ta = mat_array(&Xt);
    if ((st = write_in(&sd, "patterns.npy", &P, &err)) || (st = write_in(&sd, "x.npy", &xa, &err)) ||
        (have_r && (st = write_in(&sd, "resid.npy", &ra, &err))) ||
        (!L.rope && ((st = write_in(&sd, "t1_x.npy", &ta, &err)) ||
                     (st = write_in(&sd, "t1_wq.npy", &t1q, &err)) ||
                     (st = write_in(&sd, "t1_wk.npy", &t1k, &err)) ||
                     (st = write_in(&sd, "t1_factor.npy", &t1f, &err))))) {
        ac_stagedir_abort(&sd);
        goto out;
    }
    st = ac_stagedir_commit(&sd, &err);
out:
    if (st)
        fprintf(stderr, "mh_tool: %s\n", err.msg);
    ac_model_close(&m);
    ac_attn_layer_free(&L);
    ac_mat_free(&R);
    ac_mat_free(&X);
    ac_mat_free(&Xt);
    ac_mat_free(&Wq);
    ac_mat_free(&Wk);
    ac_array_free(&P);
    ac_array_free(&pix);
    ac_array_free(&t1q);
    ac_array_free(&t1k);
    ac_array_free(&t1f);
    free(ids);
    free(types);
    free(keepi);
    free(keep);
    return st;
}

static int st_main(int argc, char **argv)
{
    ac_err err;
    ac_err_clear(&err);
    if (argc != 4) {
        fprintf(stderr, "usage: mh_tool st FILE|DIR|INDEX OUTDIR\n");
        return 64;
    }
    ac_st s;
    ac_stagedir sd;
    int st = ac_st_open(&s, argv[2], AC_ST_SHA256, &err);
    if (st) {
        fprintf(stderr, "mh_tool: %s\n", err.msg);
        return st;
    }
    for (size_t i = 0; i < s.nfiles; i++) {
        char hx[65];
        for (int k = 0; k < 32; k++)
            snprintf(hx + 2 * k, 3, "%02x", s.files[i].sha256[k]);
        printf("sha256 %s %s\n", hx, s.files[i].path);
    }
    if ((st = ac_stagedir_begin(&sd, argv[3], &err))) {
        ac_st_close(&s);
        fprintf(stderr, "mh_tool: %s\n", err.msg);
        return st;
    }
    for (size_t i = 0; i < s.ntensors && !st; i++) {
        const ac_st_tensor *t = &s.tensors[i];
        ac_array a = {0};
        size_t sh[AC_NPY_MAXDIM];
        const char *dt = ac_st_dtype_name(t->dtype);
        if (t->ndim > AC_NPY_MAXDIM || (strcmp(dt, "F64") && strcmp(dt, "F32") &&
                                        strcmp(dt, "F16") && strcmp(dt, "BF16")))
            continue;
        for (size_t k = 0; k < t->ndim; k++)
            sh[k] = t->shape[k];
        char name[600];
        snprintf(name, sizeof name, "%s.npy", t->name);
        if (!(st = ac_array_init(&a, t->ndim, sh, &err)) &&
            !(st = ac_st_read(a.data, &s, t, &err)))
            st = write_in(&sd, name, &a, &err);
        ac_array_free(&a);
    }
    if (st)
        ac_stagedir_abort(&sd);
    else
        st = ac_stagedir_commit(&sd, &err);
    ac_st_close(&s);
    if (st)
        fprintf(stderr, "mh_tool: %s\n", err.msg);
    return st;
}
