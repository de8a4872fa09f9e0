/* st_load.c — benchmark driver of the safetensors reader (ac_models(3)):
 * a checkpoint converted to double, tensor by tensor, against a memory
 * copy of the same output size, in one run.
 *
 * usage: st_load FILE|DIR REPS
 * Prints, medians over REPS runs (seconds, single thread):
 *   open <s>          ac_st_open: mmap and the header's validation
 *   convert <s>       every tensor by ac_st_read into one buffer already
 *                     touched (what a caller that keeps its buffer pays)
 *   convert_fresh <s> the same into a buffer malloc'ed for the run (first
 *                     touch included, as NumPy's astype allocates)
 *   memcpy <s>        a memcpy of the output's size between two touched
 *                     buffers: the memory-bound floor
 *   sha256 <s>        ac_st_checksum of the file(s)
 *   elements <n> bytes <file bytes> out_bytes <n * 8>
 * bench/st_load.sh runs it beside bench/st_load_numpy.py. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attncheck/models.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp);
    return t[n / 2];
}

static int convert_all(double *out, const ac_st *st)
{
    ac_err e;
    size_t off = 0;
    for (size_t i = 0; i < st->ntensors; i++) {
        const ac_st_tensor *t = &st->tensors[i];
        if (ac_st_read(out + off, st, t, &e)) {
            fprintf(stderr, "st_load: %s\n", e.msg);
            return 1;
        }
        off += t->numel;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3 || atoi(argv[2]) < 1 || atoi(argv[2]) > 99) {
        fprintf(stderr, "usage: st_load FILE|DIR REPS\n");
        return 64;
    }
    int reps = atoi(argv[2]);
    double to[99], tc[99], tf[99], tm[99], ts[99];
    ac_err e;
    ac_st st;
    size_t n = 0, bytes = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        if (ac_st_open(&st, argv[1], 0, &e)) {
            fprintf(stderr, "st_load: %s\n", e.msg);
            return 1;
        }
        to[r] = now() - t0;
        if (r < reps - 1)
            ac_st_close(&st);
    }
    for (size_t i = 0; i < st.ntensors; i++)
        n += st.tensors[i].numel;
    for (size_t i = 0; i < st.nfiles; i++)
        bytes += st.files[i].size;
    double *out = malloc(n * sizeof *out + 1), *src = malloc(n * sizeof *src + 1);
    if (!out || !src)
        return 70;
    memset(out, 0, n * sizeof *out);
    memset(src, 1, n * sizeof *src);
    if (convert_all(out, &st)) /* warm: pages of the file mapped */
        return 1;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        convert_all(out, &st);
        tc[r] = now() - t0;
        t0 = now();
        double *fresh = malloc(n * sizeof *fresh + 1);
        convert_all(fresh, &st);
        tf[r] = now() - t0;
        free(fresh);
        t0 = now();
        memcpy(out, src, n * sizeof *out);
        tm[r] = now() - t0;
        for (size_t i = 0; i < st.nfiles; i++)
            st.files[i].have_sha256 = 0;
        t0 = now();
        ac_st_checksum(&st);
        ts[r] = now() - t0;
    }
    double chk = 0;
    for (size_t i = 0; i < n; i += 4097)
        chk += out[i];
    printf("open %.6f\nconvert %.6f\nconvert_fresh %.6f\nmemcpy %.6f\nsha256 %.6f\n"
           "elements %zu bytes %zu out_bytes %zu\n(checksum of a sample: %g)\n",
           median(to, reps), median(tc, reps), median(tf, reps), median(tm, reps),
           median(ts, reps), n, bytes, n * 8, chk);
    free(out);
    free(src);
    ac_st_close(&st);
    return 0;
}
