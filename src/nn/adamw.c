/* adamw.c — the gradient norm and the AdamW step (attncheck/nn.h;
 * doc/mathematics.md §6.2). */
#include <config.h>

#include <math.h>

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

void ac_nn_adamw_step(ac_nn_model *m, const ac_nn_adamw *o, long t, double gscale)
{
    double b1 = o->beta1, b2 = o->beta2;
    double c1 = 1.0 - pow(b1, (double)t), c2 = 1.0 - pow(b2, (double)t);
    /* one parallel region for all tensors; each element is independent */
#pragma omp parallel if (m->nparams > 65536)
    for (size_t k = 0; k < m->ntensors; k++) {
        const ac_nn_tensor *T = &m->tensors[k];
        double *p = m->params + T->offset, *mm = m->m + T->offset, *vv = m->v + T->offset;
        const double *g = m->grads + T->offset;
        double decay = T->decay ? 1.0 - o->lr * o->weight_decay : 1.0;
        size_t n = T->size;
#pragma omp for schedule(static) nowait
        for (size_t i = 0; i < n; i++) {
            double gi = g[i] * gscale;
            double mi = b1 * mm[i] + (1.0 - b1) * gi;
            double vi = b2 * vv[i] + (1.0 - b2) * gi * gi;
            mm[i] = mi;
            vv[i] = vi;
            double pi = p[i] * decay;
            p[i] = pi - o->lr * (mi / c1) / (sqrt(vi / c2) + o->eps);
        }
    }
}
