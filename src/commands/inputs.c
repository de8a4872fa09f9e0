/* inputs.c — what every command does around its mathematics
 * (cmd_impl.h): inputs from files or from arrays in memory, threads, and
 * the memory each command needs, checked before any work.
 *
 * The memory estimates are measured, not derived: peak resident sizes
 * (/usr/bin/time -f %M) of runs at several sizes, fitted by the dominant
 * terms below with coefficients rounded up (attncheck(1), RESOURCE LIMITS
 * gives the commands).  They decide only whether to start, with a margin:
 * a run is refused when the estimate exceeds 90% of the available memory. */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "attncheck/blas.h"
#include "attncheck/fileio.h"
#include "commands/cmd_impl.h"

static void shape_text(char *buf, size_t n, const ac_array *a)
{
    size_t len = (size_t)snprintf(buf, n, "(");
    for (size_t i = 0; i < a->ndim && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%zu", i ? ", " : "", a->shape[i]);
    if (len < n)
        snprintf(buf + len, n - len, a->ndim == 1 ? ",)" : ")");
}

int ac_cmd_input_mat(ac_mat *m, const char *path, const ac_array *mem, const char *name,
                     ac_err *err)
{
    if (!mem->data)
        return ac_npy_read_mat(path, m, err);
    memset(m, 0, sizeof *m);
    if (mem->ndim != 2) {
        char sb[96];
        shape_text(sb, sizeof sb, mem);
        return ac_err_set(err, AC_EDATA, "%s: expected a 2-D array, got shape %s", name, sb);
    }
    int st = ac_mat_init(m, mem->shape[0], mem->shape[1], err);
    if (!st && mem->size)
        memcpy(m->data, mem->data, mem->size * sizeof *m->data);
    return st;
}

int ac_cmd_input_vec(double **v, size_t *n, const char *path, const ac_array *mem,
                     const char *name, ac_err *err)
{
    *v = NULL;
    *n = 0;
    if (!mem->data)
        return ac_npy_read_vec(path, v, n, err);
    if (mem->ndim != 1) {
        char sb[96];
        shape_text(sb, sizeof sb, mem);
        return ac_err_set(err, AC_EDATA, "%s: expected a 1-D array, got shape %s", name, sb);
    }
    if (!(*v = malloc((mem->size ? mem->size : 1) * sizeof **v)))
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    memcpy(*v, mem->data, mem->size * sizeof **v);
    *n = mem->size;
    return AC_OK;
}

const char *ac_cmd_input_name(const char *path, const ac_array *mem, const char *name)
{
    return mem->data || !path ? name : path;
}

void ac_cmd_apply_threads(long threads)
{
    if (threads > 0) {
        ac_blas_set_threads((int)threads);
#ifdef _OPENMP
        omp_set_num_threads((int)threads);
#endif
    }
}

size_t ac_cmd_out_mat(ac_out_array *out, size_t k, size_t max, const char *name,
                      const ac_mat *m)
{
    if (k < max) {
        memset(&out[k], 0, sizeof out[k]);
        out[k].name = name;
        out[k].ndim = 2;
        out[k].shape[0] = m->rows;
        out[k].shape[1] = m->cols;
        out[k].data = m->data;
    }
    return k + 1;
}

int ac_cmd_check_plot(const ac_opt *o, const void *q, const char *text, ac_err *err)
{
    (void)q;
    const char *dot = strrchr(text, '.');
    if (!dot || (strcmp(dot, ".svg") && strcmp(dot, ".png") && strcmp(dot, ".pdf")))
        return ac_err_set(err, AC_EUSAGE,
                          "--%s %s: the file name must end in .svg, .png or .pdf", o->name, text);
    return AC_OK;
}

/* ---- memory ----------------------------------------------------------------------- */

#define GIB 1073741824.0

/* Fixed part: the program, the libraries, the BLAS buffers. */
#define BASE_BYTES (16.0 * 1048576.0)

double ac_cmd_mem_rep_theorem(size_t d, size_t n)
{
    /* n = d = 256 .. 1024: about 16.5 n x n matrices of doubles (P, the
     * interval enclosures of log P and of the construction, the refinement) */
    double N = (double)n, D = (double)d;
    return BASE_BYTES + 8.0 * (14.0 * N * N + 4.0 * D * N);
}

double ac_cmd_mem_separate(size_t d, size_t h, size_t p, size_t dp, size_t n, size_t k)
{
    /* d = 256 .. 1024, h = 2, n = 2 .. 64: 25 doubles per h d dp (g_V),
     * 27 per h d p = d x d (f_W and the work of its size), 38 per d x n;
     * and the k sample inputs of --embed, kept for the result */
    double D = (double)d, H = (double)h, N = (double)n;
    return BASE_BYTES + 8.0 * (26.0 * H * D * (double)dp + 14.0 * H * D * (double)p +
                               16.0 * D * D + 40.0 * D * N + 8.0 * H * N * N +
                               (double)k * D * N);
}

int ac_cmd_memory_check(double need, int status, ac_err *err, const char *fmt, ...)
{
    const char *src;
    double avail = ac_memory_available(&src);
    if (!(avail > 0) || need <= 0.9 * avail)
        return AC_OK;
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ac_err_set(err, status, "%s needs about %.3g GiB of memory (an estimate); only %.3g "
                      "GiB are available (%s); nothing was computed", what, need / GIB,
                      avail / GIB, src);
}
