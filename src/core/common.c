/* common.c — error reports and dense matrices (attncheck/common.h). */
#include <config.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attncheck/common.h"

static void err_vset(ac_err *err, int status, const char *fields, const char *fmt, va_list ap)
{
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    /* Messages are one line. */
    for (char *p = err->msg; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    snprintf(err->fields, sizeof err->fields, "%s", fields ? fields : "");
    err->status = status;
}

int ac_err_set(ac_err *err, int status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err_vset(err, status, NULL, fmt, ap);
        va_end(ap);
    }
    return status;
}

int ac_err_set_field(ac_err *err, int status, const char *fields, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err_vset(err, status, fields, fmt, ap);
        va_end(ap);
    }
    return status;
}

void ac_err_clear(ac_err *err)
{
    if (err) {
        err->status = AC_OK;
        err->msg[0] = '\0';
        err->fields[0] = '\0';
    }
}

int ac_size_mul(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a)
        return 0;
    *out = a * b;
    return 1;
}

int ac_mat_init(ac_mat *m, size_t rows, size_t cols, ac_err *err)
{
    size_t n;
    m->rows = m->cols = 0;
    m->data = NULL;
    if (!ac_size_mul(rows, cols, &n) || n > SIZE_MAX / sizeof(double))
        return ac_err_set(err, AC_EUSAGE, "matrix of %zu x %zu entries is too large", rows, cols);
    m->data = calloc(n ? n : 1, sizeof(double));
    if (!m->data)
        return ac_err_set(err, AC_EINTERNAL, "out of memory allocating a %zu x %zu matrix", rows, cols);
    m->rows = rows;
    m->cols = cols;
    return AC_OK;
}

void ac_mat_free(ac_mat *m)
{
    if (!m)
        return;
    free(m->data);
    m->data = NULL;
    m->rows = m->cols = 0;
}

int ac_mat_copy(ac_mat *dst, const ac_mat *src, ac_err *err)
{
    int st = ac_mat_init(dst, src->rows, src->cols, err);
    if (st)
        return st;
    if (src->rows > 0 && src->cols > 0)
        memcpy(dst->data, src->data, src->rows * src->cols * sizeof(double));
    return AC_OK;
}

int ac_mat_transpose(ac_mat *m, ac_err *err)
{
    ac_mat t;
    int st = ac_mat_init(&t, m->cols, m->rows, err);
    if (st)
        return st;
    for (size_t i = 0; i < m->rows; i++)
        for (size_t j = 0; j < m->cols; j++)
            t.data[j * m->rows + i] = m->data[i * m->cols + j];
    ac_mat_free(m);
    *m = t;
    return AC_OK;
}

double ac_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

const char *ac_version(void)
{
    return PACKAGE_VERSION;
}
