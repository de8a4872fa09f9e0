/* st_load.c — benchmark driver of the safetensors reader (ac_models(3)):
 * a checkpoint converted to double, tensor by tensor, against a memory
 * copy of the same output size, in one run.
 *
 * usage: st_load FILE|DIR REPS
 * Prints, medians over REPS runs (seconds, single thread; each line also
 * gives the thread's CPU time, steadier on a loaded machine):
 *   open <s>          ac_st_open: mmap and the header's validation
 *   first <s>         ac_st_open and every tensor converted into the reused
 *                     buffer below: the mapping's page tables filled on the
 *                     way (the file itself in the page cache)
 *   convert <s>       every tensor by ac_st_read into one buffer of the
 *                     whole output, already touched (what a caller that
 *                     keeps its buffer pays)
 *   convert_reuse <s> every tensor into the same buffer of the largest
 *                     tensor's size, touched: the memory NumPy's
 *                     per-tensor astype works in when each result is
 *                     dropped (glibc's malloc hands the freed block back,
 *                     cache-warm, once its dynamic mmap threshold has
 *                     risen above the tensor's size)
 *   convert_fresh <s> every tensor into a buffer of the whole output
 *                     malloc'ed for the run (first touch included, as
 *                     NumPy's astype allocates when its results are kept)
 *   memcpy <s>        a memcpy of the output's size between two touched
 *                     buffers: the memory-bound floor
 *   sha256 <s>        ac_st_checksum of the file(s)
 *   elements <n> bytes <file bytes> out_bytes <n * 8>
 * convert, convert_reuse and memcpy are each run once untimed right before
 * the timed run, so that they are timed warm whatever ran before them: on
 * the shared test machine (a VM) the first pass over a large buffer after
 * a mapping was torn down (ac_st_close, free of a large block) ran 2-6x
 * slower than the pass after it (a memcpy of 256 MiB after convert_fresh's
 * free 0.08-0.23 s, repeated at once 0.024-0.03 s).  For the same reason
 * convert_fresh is timed after all the other reps.
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

/* Every tensor of st into out: one after the other (keep), or each at out
 * itself (!keep: out holds the largest). */
static int convert_all(double *out, int keep, const ac_st *st)
{
    ac_err e;
    size_t off = 0;
    for (size_t i = 0; i < st->ntensors; i++) {
        const ac_st_tensor *t = &st->tensors[i];
        if (ac_st_read(out + off, st, t, &e)) {
            fprintf(stderr, "st_load: %s\n", e.msg);
            return 1;
        }
        off += keep ? t->numel : 0;
    }
    return 0;
}

/* Wall and CPU time of one step, into w[r], c[r]; WARM: the step once
 * untimed first. */
#define TIME(w, c, r, step)                                                                \
    do {                                                                                   \
        double w0_ = now(), c0_ = cpu();                                                   \
        step;                                                                              \
        (w)[r] = now() - w0_;                                                              \
        (c)[r] = cpu() - c0_;                                                              \
    } while (0)
#define WARM(w, c, r, step)                                                                \
    do {                                                                                   \
        step;                                                                              \
        TIME(w, c, r, step);                                                               \
    } while (0)

int main(int argc, char **argv)
{
    if (argc != 3 || atoi(argv[2]) < 1 || atoi(argv[2]) > 99) {
        fprintf(stderr, "usage: st_load FILE|DIR REPS\n");
        return 64;
    }
    int reps = atoi(argv[2]), bad = 0;
    enum { OPEN, FIRST, CONV, REUSE, FRESH, COPY, SHA, NT };
    static const char *names[NT] = {"open",          "first",  "convert", "convert_reuse",
                                    "convert_fresh", "memcpy", "sha256"};
    double w[NT][99], c[NT][99];
    ac_err e;
    ac_st st;
    size_t n = 0, bytes = 0, most = 1;
    if (ac_st_open(&st, argv[1], 0, &e)) {
        fprintf(stderr, "st_load: %s\n", e.msg);
        return 1;
    }
    for (size_t i = 0; i < st.ntensors; i++) {
        n += st.tensors[i].numel;
        most = st.tensors[i].numel > most ? st.tensors[i].numel : most;
    }
    for (size_t i = 0; i < st.nfiles; i++)
        bytes += st.files[i].size;
    ac_st_close(&st);
    double *out = malloc(n * sizeof *out + 1), *src = malloc(n * sizeof *src + 1);
    double *one = malloc(most * sizeof *one);
    if (!out || !src || !one)
        return 70;
    memset(out, 0, n * sizeof *out);
    memset(src, 1, n * sizeof *src);
    memset(one, 0, most * sizeof *one);
    for (int r = 0; r < reps; r++) {
        TIME(w[OPEN], c[OPEN], r, bad |= ac_st_open(&st, argv[1], 0, &e));
        ac_st_close(&st);
        TIME(w[FIRST], c[FIRST], r,
             bad |= ac_st_open(&st, argv[1], 0, &e) || convert_all(one, 0, &st));
        WARM(w[CONV], c[CONV], r, bad |= convert_all(out, 1, &st));
        WARM(w[REUSE], c[REUSE], r, bad |= convert_all(one, 0, &st));
        WARM(w[COPY], c[COPY], r, memcpy(out, src, n * sizeof *out));
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
    for (int r = 0; r < reps; r++) {
        double *fresh = NULL;
        TIME(w[FRESH], c[FRESH], r, fresh = malloc(n * sizeof *fresh + 1);
             bad |= !fresh || convert_all(fresh, 1, &st));
        free(fresh);
        if (bad) { /* convert_all said why */
            if (!fresh)
                fprintf(stderr, "st_load: out of memory\n");
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
    free(one);
    ac_st_close(&st);
    return 0;
}
