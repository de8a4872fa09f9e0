/* adamw.c — the gradient norm and the AdamW step (attncheck/nn.h;
 * doc/mathematics.md §6.2). */
#include <config.h>

#include <math.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "nn/nn_impl.h"

double ac_nn_grad_norm(const ac_nn_model *m)
{
    size_t n = m->nparams, nb = (n + NORM_BLOCK - 1) / NORM_BLOCK;
    double *part = m->w->norm_part;
    const double *g = m->grads;
#pragma omp parallel for schedule(static) if (nb > 4)
    for (size_t k = 0; k < nb; k++) {
        size_t a = k * NORM_BLOCK, e = a + NORM_BLOCK < n ? a + NORM_BLOCK : n;
        double s = 0;
        for (size_t i = a; i < e; i++)
            s += g[i] * g[i];
        part[k] = s;
    }
    double s = 0;
    for (size_t k = 0; k < nb; k++)
        s += part[k];
    return sqrt(s);
}

/* AdamW on n consecutive elements.  Every element goes through the same
 * correctly rounded IEEE operations (+, *, /, sqrt) in the same order in a
 * vector lane as in the scalar tail, so the bits depend neither on the
 * vector width nor on how the elements are split between threads.  (The
 * scalar loop does not vectorise by itself: sqrt may set errno.) */
static void adamw_span(double *restrict p, double *restrict mm, double *restrict vv,
                       const double *restrict g, size_t n, double gscale, double b1, double b2,
                       double c1, double c2, double lr, double eps, double decay)
{
    size_t i = 0;
#if defined(__AVX512F__)
    __m512d vs = _mm512_set1_pd(gscale), vb1 = _mm512_set1_pd(b1), vb2 = _mm512_set1_pd(b2);
    __m512d va1 = _mm512_set1_pd(1.0 - b1), va2 = _mm512_set1_pd(1.0 - b2);
    __m512d vc1 = _mm512_set1_pd(c1), vc2 = _mm512_set1_pd(c2), vlr = _mm512_set1_pd(lr);
    __m512d veps = _mm512_set1_pd(eps), vdec = _mm512_set1_pd(decay);
    for (; i + 8 <= n; i += 8) {
        __m512d gi = _mm512_mul_pd(_mm512_loadu_pd(g + i), vs);
        __m512d mi = _mm512_add_pd(_mm512_mul_pd(vb1, _mm512_loadu_pd(mm + i)),
                                   _mm512_mul_pd(va1, gi));
        __m512d vi = _mm512_add_pd(_mm512_mul_pd(vb2, _mm512_loadu_pd(vv + i)),
                                   _mm512_mul_pd(_mm512_mul_pd(va2, gi), gi));
        _mm512_storeu_pd(mm + i, mi);
        _mm512_storeu_pd(vv + i, vi);
        __m512d pi = _mm512_mul_pd(_mm512_loadu_pd(p + i), vdec);
        __m512d den = _mm512_add_pd(_mm512_sqrt_pd(_mm512_div_pd(vi, vc2)), veps);
        __m512d step = _mm512_div_pd(_mm512_mul_pd(vlr, _mm512_div_pd(mi, vc1)), den);
        _mm512_storeu_pd(p + i, _mm512_sub_pd(pi, step));
    }
#endif
    for (; i < n; i++) {
        double gi = g[i] * gscale;
        double mi = b1 * mm[i] + (1.0 - b1) * gi;
        double vi = b2 * vv[i] + (1.0 - b2) * gi * gi;
        mm[i] = mi;
        vv[i] = vi;
        double pi = p[i] * decay;
        p[i] = pi - lr * (mi / c1) / (sqrt(vi / c2) + eps);
    }
}

void ac_nn_adamw_step(ac_nn_model *m, const ac_nn_adamw *o, long t, double gscale)
{
    double b1 = o->beta1, b2 = o->beta2, lr = o->lr, eps = o->eps;
    double c1 = 1.0 - pow(b1, (double)t), c2 = 1.0 - pow(b2, (double)t);
    /* one parallel region for all tensors; blocks of NORM_BLOCK elements */
#pragma omp parallel if (m->nparams > 65536)
    for (size_t k = 0; k < m->ntensors; k++) {
        const ac_nn_tensor *T = &m->tensors[k];
        size_t off = T->offset, n = T->size, nb = (n + NORM_BLOCK - 1) / NORM_BLOCK;
        double decay = T->decay ? 1.0 - lr * o->weight_decay : 1.0;
#pragma omp for schedule(static) nowait
        for (size_t j = 0; j < nb; j++) {
            size_t a = off + j * NORM_BLOCK, e = (j + 1) * NORM_BLOCK < n ? NORM_BLOCK : n - j * NORM_BLOCK;
            adamw_span(m->params + a, m->m + a, m->v + a, m->grads + a, e, gscale, b1, b2, c1,
                       c2, lr, eps, decay);
        }
    }
}
