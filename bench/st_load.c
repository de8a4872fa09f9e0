/* st_load.c — benchmark driver of the safetensors reader (ac_models(3)):
 * a checkpoint converted to double, tensor by tensor, against a memory
 * copy of the same output size, in one run.
 *
 * usage: st_load FILE|DIR REPS
 * Prints, medians over REPS runs (seconds, single thread; each line also
 * gives the thread's CPU time, steadier on a loaded machine):
 *   open <s>          ac_st_open: mmap and the header's validation
 *   first <s>         ac_st_open and every tensor converted into a touched
 *                     buffer: the mapping's page tables filled on the way
 *                     (the file itself in the page cache)
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

static double clk(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double now(void)
{
    return clk(CLOCK_MONOTONIC);
}

static double cpu(void)
{
    return clk(CLOCK_THREAD_CPUTIME_ID);
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

/* Wall and CPU time of one step, into w[r], c[r]. */
#define TIME(w, c, r, step)                                                                \
    do {                                                                                   \
        double w0_ = now(), c0_ = cpu();                                                   \
        step;                                                                              \
        (w)[r] = now() - w0_;                                                              \
        (c)[r] = cpu() - c0_;                                                              \
    } while (0)

int main(int argc, char **argv)
{
    if (argc != 3 || atoi(argv[2]) < 1 || atoi(argv[2]) > 99) {
        fprintf(stderr, "usage: st_load FILE|DIR REPS\n");
        return 64;
    }
    int reps = atoi(argv[2]), bad = 0;
    enum { OPEN, FIRST, CONV, FRESH, COPY, SHA, NT };
    static const char *names[NT] = {"open", "first", "convert", "convert_fresh", "memcpy",
                                    "sha256"};
    double w[NT][99], c[NT][99];
    ac_err e;
    ac_st st;
    size_t n = 0, bytes = 0;
    if (ac_st_open(&st, argv[1], 0, &e)) {
        fprintf(stderr, "st_load: %s\n", e.msg);
        return 1;
    }
    for (size_t i = 0; i < st.ntensors; i++)
        n += st.tensors[i].numel;
    for (size_t i = 0; i < st.nfiles; i++)
        bytes += st.files[i].size;
    ac_st_close(&st);
    double *out = malloc(n * sizeof *out + 1), *src = malloc(n * sizeof *src + 1);
    if (!out || !src)
        return 70;
    memset(out, 0, n * sizeof *out);
    memset(src, 1, n * sizeof *src);
    for (int r = 0; r < reps; r++) {
        TIME(w[OPEN], c[OPEN], r, bad |= ac_st_open(&st, argv[1], 0, &e));
        ac_st_close(&st);
        TIME(w[FIRST], c[FIRST], r, bad |= ac_st_open(&st, argv[1], 0, &e) || convert_all(out, &st));
        TIME(w[CONV], c[CONV], r, bad |= convert_all(out, &st));
        double *fresh = NULL;
        TIME(w[FRESH], c[FRESH], r, fresh = malloc(n * sizeof *fresh + 1);
             bad |= !fresh || convert_all(fresh, &st));
        free(fresh);
        TIME(w[COPY], c[COPY], r, memcpy(out, src, n * sizeof *out));
        for (size_t i = 0; i < st.nfiles; i++)
            st.files[i].have_sha256 = 0;
        TIME(w[SHA], c[SHA], r, ac_st_checksum(&st));
        if (r < reps - 1)
            ac_st_close(&st);
        if (bad) {
            fprintf(stderr, "st_load: %s\n", e.msg);
            return 1;
        }
    }
    double chk = 0;
    for (size_t i = 0; i < n; i += 4097)
        chk += out[i] + src[i];
    for (int k = 0; k < NT; k++)
        printf("%s %.6f cpu %.6f\n", names[k], median(w[k], reps), median(c[k], reps));
    printf("elements %zu bytes %zu out_bytes %zu\n(checksum of a sample: %g)\n", n, bytes, n * 8,
           chk);
    free(out);
    free(src);
    ac_st_close(&st);
    return 0;
}
