/* mh_files.c — the one reader and writer of the Wq/Wk/Wv/Wo .npy stacks of a
 * multi-head attention layer (attncheck/multihead.h, "files"): a layer is
 * read by ac_mh_load_dir and its files are described by ac_mh_files (the
 * commands' --out-dir arrays) and written by ac_mh_save_dir.
 *
 * On disk every parameter is a float64 .npy stack over the heads: Wq, Wk, Wv
 * of shape (h, hs, d) and Wo of shape (h, d, hs), Wo_i = Wo[i] (prefix V for
 * the fixed-size layer).  In memory Wq, Wk, Wv are (h hs) x d row-major (the
 * same bytes) and Wo is Wo_cat = [Wo_1, ..., Wo_h], d x (h hs).
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/multihead.h"
#include "attncheck/npy.h"

const char *ac_mh_file_name(char *buf, size_t n, char prefix, ac_mh_param which)
{
    static const char letter[4] = {'q', 'k', 'v', 'o'};
    snprintf(buf, n, "%c%c.npy", prefix, letter[which & 3]);
    return buf;
}

int ac_mh_get_array(const ac_mh *L, ac_mh_param which, ac_array *out, ac_err *err)
{
    size_t d = L->d, h = L->h, hs = L->hs, hh = h * hs;
    size_t shape[3] = {h, hs, d};
    if (which == AC_MH_O) {
        shape[1] = d;
        shape[2] = hs;
    }
    int st = ac_array_init(out, 3, shape, err);
    if (st)
        return st;
    if (which == AC_MH_O) {
        for (size_t i = 0; i < h; i++)
            for (size_t r = 0; r < d; r++)
                for (size_t c = 0; c < hs; c++)
                    out->data[(i * d + r) * hs + c] = L->wo[r * hh + i * hs + c];
    } else {
        const double *src = which == AC_MH_Q ? L->wq : which == AC_MH_K ? L->wk : L->wv;
        memcpy(out->data, src, hh * d * sizeof(double));
    }
    return AC_OK;
}

int ac_mh_files(ac_mh_file f[4], const ac_mh *L, const char *stem, char prefix, ac_err *err)
{
    char fn[16];
    int st = AC_OK;
    memset(f, 0, 4 * sizeof *f);
    for (int t = 0; t < 4 && !st; t++) {
        ac_mh_file_name(fn, sizeof fn, prefix, (ac_mh_param)t);
        fn[2] = '\0'; /* without ".npy" */
        int len = snprintf(f[t].name, sizeof f[t].name, "%s%s", stem ? stem : "", fn);
        if (len < 0 || (size_t)len >= sizeof f[t].name)
            st = ac_err_set(err, AC_EUSAGE, "%s%s: file name longer than %d bytes",
                            stem ? stem : "", fn, AC_MH_FILE_NAME_MAX - 1);
        else
            st = ac_mh_get_array(L, (ac_mh_param)t, &f[t].a, err);
    }
    if (st)
        ac_mh_files_free(f);
    return st;
}

void ac_mh_files_free(ac_mh_file f[4])
{
    if (!f)
        return;
    for (int t = 0; t < 4; t++)
        ac_array_free(&f[t].a);
    memset(f, 0, 4 * sizeof *f);
}

int ac_mh_save_dir(const ac_mh *L, const char *dir, char prefix, ac_err *err)
{
    ac_mh_file f[4];
    int st = ac_mh_files(f, L, NULL, prefix, err);
    for (int t = 0; t < 4 && !st; t++) {
        size_t len = strlen(dir) + strlen(f[t].name) + 8;
        char *path = malloc(len);
        if (!path) {
            st = ac_err_set(err, AC_EINTERNAL, "out of memory");
            break;
        }
        snprintf(path, len, "%s/%s.npy", dir, f[t].name);
        st = ac_npy_write(path, &f[t].a, err);
        free(path);
    }
    ac_mh_files_free(f);
    return st;
}

static void fmt_shape(char *buf, size_t n, const ac_array *a)
{
    size_t k = 0;
    k += (size_t)snprintf(buf + k, n - k, "(");
    for (size_t i = 0; i < a->ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%zu", i ? ", " : "", a->shape[i]);
    if (k < n)
        snprintf(buf + k, n - k, a->ndim == 1 ? ",)" : ")");
}

/* L (sizes d, h, hs) from the C-order data of q, k, v (h, hs, d) and o
 * (h, d, hs): the stacks are copied, Wo is transposed into Wo_cat. */
static int fill_layer(ac_mh *L, size_t d, size_t h, size_t hs, const double *q, const double *k,
                      const double *v, const double *o, ac_err *err)
{
    int st;
    if ((st = ac_mh_init(L, d, h, hs, err)))
        return st;
    size_t blk = h * hs * d, hh = h * hs;
    memcpy(L->wq, q, blk * sizeof(double));
    memcpy(L->wk, k, blk * sizeof(double));
    memcpy(L->wv, v, blk * sizeof(double));
    for (size_t i = 0; i < h; i++)
        for (size_t r = 0; r < d; r++)
            for (size_t c = 0; c < hs; c++)
                L->wo[r * hh + i * hs + c] = o[(i * d + r) * hs + c];
    return AC_OK;
}

int ac_mh_from_arrays(ac_mh *L, const ac_array *q, const ac_array *k, const ac_array *v,
                      const ac_array *o, const char *const names[4], ac_err *err)
{
    const ac_array *a[4] = {q, k, v, o};
    char sb[96], sq[96];
    int st;
    memset(L, 0, sizeof *L);
    for (int t = 0; t < 4; t++)
        if (a[t]->ndim != 3) {
            fmt_shape(sb, sizeof sb, a[t]);
            return ac_err_set(err, AC_EDATA, "%s: expected a 3-D array %s (a stack over the "
                              "heads), got shape %s", names[t],
                              t == 3 ? "(h, d, hs)" : "(h, hs, d)", sb);
        }
    size_t h = q->shape[0], hs = q->shape[1], d = q->shape[2];
    fmt_shape(sq, sizeof sq, q);
    if (h == 0 || hs == 0 || d == 0)
        return ac_err_set(err, AC_EDATA, "%s: shape %s has a zero dimension (h, hs and d must "
                          "be at least 1)", names[0], sq);
    for (int t = 1; t < 3; t++)
        if (a[t]->shape[0] != h || a[t]->shape[1] != hs || a[t]->shape[2] != d) {
            fmt_shape(sb, sizeof sb, a[t]);
            return ac_err_set(err, AC_EDATA, "%s: shape %s does not match %s, which has shape %s",
                              names[t], sb, names[0], sq);
        }
    if (o->shape[0] != h || o->shape[1] != d || o->shape[2] != hs) {
        fmt_shape(sb, sizeof sb, o);
        return ac_err_set(err, AC_EDATA, "%s: shape %s, expected (h, d, hs) = (%zu, %zu, %zu) "
                          "to match %s %s", names[3], sb, h, d, hs, names[0], sq);
    }
    for (int t = 0; t < 4; t++)
        if ((st = ac_array_check_finite(names[t], a[t]->data, 3, a[t]->shape, err)))
            return st;
    return fill_layer(L, d, h, hs, q->data, k->data, v->data, o->data, err);
}

/* A stack as (h, rows, cols): a 3-D array as it is, a 2-D array as one head
 * (h = 1).  The file was checked to have 2 or 3 dimensions. */
static void stack_dims(const ac_array *a, size_t dims[3])
{
    if (a->ndim == 2) {
        dims[0] = 1;
        dims[1] = a->shape[0];
        dims[2] = a->shape[1];
    } else {
        dims[0] = a->shape[0];
        dims[1] = a->shape[1];
        dims[2] = a->shape[2];
    }
}

/* The allow_2d reading of one file, checked as soon as it is read: 2 or 3
 * dimensions, finite entries. */
static int read_stack_2d(const char *path, ac_array *a, ac_err *err)
{
    int st;
    if ((st = ac_npy_read(path, a, err)))
        return st;
    if (a->ndim != 2 && a->ndim != 3)
        st = ac_err_set(err, AC_EDATA, "%s: expected a 2-D or 3-D array, got %zu dimensions",
                        path, a->ndim);
    else
        st = ac_array_check_finite(path, a->data, a->ndim, a->shape, err);
    if (st)
        ac_array_free(a);
    return st;
}

/* The allow_2d layer: q, k, v (h, s, d) and o (h, d, s) with the same h, s, d,
 * all at least 1 (2-D arrays: h = 1). */
static int from_arrays_2d(ac_mh *L, const ac_array a[4], const char *dir, char prefix,
                          ac_err *err)
{
    size_t s[4][3];
    for (int t = 0; t < 4; t++)
        stack_dims(&a[t], s[t]);
    size_t h = s[0][0], hs = s[0][1], d = s[0][2];
    int agree = h != 0 && hs != 0 && d != 0;
    for (int t = 1; t < 3; t++)
        agree = agree && s[t][0] == h && s[t][1] == hs && s[t][2] == d;
    agree = agree && s[3][0] == h && s[3][1] == d && s[3][2] == hs;
    if (!agree)
        return ac_err_set(err, AC_EDATA,
                          "%s: shapes do not form one attention layer: %cq, %ck, %cv must be "
                          "(h, s, d) and %co (h, d, s); got (%zu, %zu, %zu), (%zu, %zu, %zu), "
                          "(%zu, %zu, %zu), (%zu, %zu, %zu)",
                          dir, prefix, prefix, prefix, prefix, s[0][0], s[0][1], s[0][2],
                          s[1][0], s[1][1], s[1][2], s[2][0], s[2][1], s[2][2], s[3][0],
                          s[3][1], s[3][2]);
    return fill_layer(L, d, h, hs, a[0].data, a[1].data, a[2].data, a[3].data, err);
}

int ac_mh_load_dir_flex(ac_mh *L, const char *dir, char prefix, int allow_2d, ac_err *err)
{
    ac_array a[4];
    char *names[4] = {NULL, NULL, NULL, NULL};
    int st = AC_OK;
    memset(a, 0, sizeof a);
    memset(L, 0, sizeof *L);
    for (int t = 0; t < 4; t++) {
        char fn[16];
        size_t len = strlen(dir) + 20;
        names[t] = malloc(len);
        if (!names[t]) {
            st = ac_err_set(err, AC_EINTERNAL, "out of memory");
            goto out;
        }
        snprintf(names[t], len, "%s/%s", dir, ac_mh_file_name(fn, sizeof fn, prefix, (ac_mh_param)t));
        if ((st = allow_2d ? read_stack_2d(names[t], &a[t], err)
                           : ac_npy_read(names[t], &a[t], err)))
            goto out;
    }
    if (allow_2d)
        st = from_arrays_2d(L, a, dir, prefix, err);
    else
        st = ac_mh_from_arrays(L, &a[0], &a[1], &a[2], &a[3], (const char *const *)names, err);
out:
    for (int t = 0; t < 4; t++) {
        ac_array_free(&a[t]);
        free(names[t]);
    }
    return st;
}

int ac_mh_load_dir(ac_mh *L, const char *dir, char prefix, ac_err *err)
{
    return ac_mh_load_dir_flex(L, dir, prefix, 0, err);
}
