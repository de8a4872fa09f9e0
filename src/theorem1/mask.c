/* mask.c — the support Omega of a masked head (doc/mathematics.md §3.8):
 * which keys each query sees, and the staircase of its maximal fully
 * specified blocks.
 *
 * If the sets R_i of queries that see key i are nested (causal masks,
 * padding, causal masks with padding, no mask), Omega is a staircase: with
 * the keys sorted by |R_i| and the queries by how many keys they see, it is
 * the union of the blocks I_k x S_k, I_k growing and S_k shrinking, and
 * Lemma W gives the least rank of a completion exactly.  Otherwise (sliding
 * windows, general patterns) the sub-staircase found here gives a lower
 * bound (its entries are a subset of Omega); the search visits the keys in
 * three kinds of order (by |R_i|, and from each key forwards and backwards
 * through the tokens, which finds the triangles of a band) and keeps the
 * prefix with the largest generic value.
 *
 * Dimension letters: n tokens.  Omega is n x n row-major, row = key.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "attncheck/theorem1.h"
#include "theorem1/t1_mask.h"

int ac_t1_mask_support(unsigned char *om, size_t n, const ac_t1_mask *m, ac_err *err)
{
    const char *name = m && m->name ? m->name : "mask";
    if (m && m->valid && m->nvalid != n)
        return ac_err_set(err, AC_EDATA, "%s: the valid keys have %zu entries, expected n = %zu",
                          name, m->nvalid, n);
    if (m && m->keep && m->nkeep != n * n)
        return ac_err_set(err, AC_EDATA,
                          "%s: the pattern has %zu entries, expected n x n = %zu x %zu", name,
                          m->nkeep, n, n);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            int v = 1;
            if (m) {
                size_t dist = i > j ? i - j : j - i;
                v = !(m->causal && i > j) && !(m->window && dist >= m->window) &&
                    !(m->valid && !m->valid[i]) && !(m->keep && !m->keep[i * n + j]);
            }
            om[i * n + j] = (unsigned char)v;
        }
    for (size_t j = 0; j < n; j++) {
        int any = 0;
        for (size_t i = 0; i < n && !any; i++)
            any = om[i * n + j];
        if (!any)
            return ac_err_set(err, AC_EDATA,
                              "%s: query %zu sees no key, so its softmax is undefined (drop "
                              "such queries, e.g. padding queries, from X and P)",
                              name, j);
    }
    return AC_OK;
}

/* ---- staircases ------------------------------------------------------------ */

long t1_stair_generic(const t1_stair *st)
{
    long v = 0;
    for (size_t k = 0; k < st->K; k++) {
        long a1 = (long)st->ilen[k] - 1;
        long b = (long)st->jlen[k];
        v += a1 < b ? a1 : b;
        if (k + 1 < st->K) {
            long b1 = (long)st->jlen[k + 1];
            v -= a1 < b1 ? a1 : b1;
        }
    }
    return v;
}

/* The staircase of the keys ord[0 .. len) taken in that order, each keeping
 * the queries every earlier key sees (the running intersection T): the
 * prefix with the largest generic value (ties: more entries kept).  run is
 * n bytes of scratch.  Returns the prefix length (0: none), *val its value
 * and *kept its entries. */
static size_t best_prefix(const unsigned char *om, size_t n, const size_t *ord, size_t len,
                          unsigned char *run, long *val, size_t *kept)
{
    size_t best = 0, cnt = 0, tot = 0, bkept = 0;
    long sum = 0, bval = -1;
    for (size_t t = 0; t < len; t++) {
        const unsigned char *r = om + ord[t] * n;
        size_t c = 0;
        for (size_t q = 0; q < n; q++) {
            run[q] = t == 0 ? r[q] : (unsigned char)(run[q] && r[q]);
            c += run[q];
        }
        if (c == 0)
            break;
        if (t > 0 && c < cnt) { /* a new block: close the previous one */
            long a1 = (long)t - 1;
            sum += (a1 < (long)cnt ? a1 : (long)cnt) - (a1 < (long)c ? a1 : (long)c);
        }
        cnt = c;
        tot += c;
        long v = sum + ((long)t < (long)cnt ? (long)t : (long)cnt);
        if (v > bval || (v == bval && tot > bkept)) {
            bval = v;
            best = t + 1;
            bkept = tot;
        }
    }
    *val = bval;
    *kept = bkept;
    return best;
}

/* Fill st from the keys ord[0 .. m) (their running intersections). */
static int stair_build(t1_stair *st, const unsigned char *om, size_t n, const size_t *ord,
                       size_t m, ac_err *err)
{
    unsigned char *run = malloc(n);
    size_t *depth = calloc(n, sizeof(size_t));
    st->korder = malloc(n * sizeof(size_t));
    st->qorder = malloc(n * sizeof(size_t));
    st->ilen = malloc((m ? m : 1) * sizeof(size_t));
    st->jlen = malloc((m ? m : 1) * sizeof(size_t));
    st->K = 0;
    st->nkept = 0;
    if (!run || !depth || !st->korder || !st->qorder || !st->ilen || !st->jlen) {
        free(run);
        free(depth);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    size_t cnt = 0;
    for (size_t t = 0; t < m; t++) {
        const unsigned char *r = om + ord[t] * n;
        size_t c = 0;
        for (size_t q = 0; q < n; q++) {
            run[q] = t == 0 ? r[q] : (unsigned char)(run[q] && r[q]);
            if (run[q]) {
                c++;
                depth[q] = t + 1;
            }
        }
        if (t == 0 || c < cnt) /* a new block starts at key t */
            st->jlen[st->K++] = c;
        st->ilen[st->K - 1] = t + 1;
        st->korder[t] = ord[t];
        st->nkept += c;
        cnt = c;
    }
    /* keys outside the staircase after it, in index order */
    size_t t = m;
    for (size_t i = 0; i < n; i++) {
        int used = 0;
        for (size_t u = 0; u < m && !used; u++)
            used = ord[u] == i;
        if (!used)
            st->korder[t++] = i;
    }
    /* queries by depth, descending (stable): S_k is a prefix */
    size_t w = 0;
    for (size_t dd = m; dd >= 1; dd--)
        for (size_t q = 0; q < n; q++)
            if (depth[q] == dd)
                st->qorder[w++] = q;
    for (size_t q = 0; q < n; q++)
        if (depth[q] == 0)
            st->qorder[w++] = q;
    free(run);
    free(depth);
    return AC_OK;
}

static void stair_free(t1_stair *st)
{
    free(st->korder);
    free(st->qorder);
    free(st->ilen);
    free(st->jlen);
    memset(st, 0, sizeof *st);
}

/* Keys by |R_i| descending, ties by index; those that see no query dropped. */
typedef struct {
    size_t c, i;
} keycount;

static int cmp_keycount(const void *x, const void *y)
{
    const keycount *u = x, *v = y;
    if (u->c != v->c)
        return u->c < v->c ? 1 : -1;
    return (u->i > v->i) - (u->i < v->i);
}

int t1_support_init(t1_support *s, const unsigned char *omega, size_t n, ac_err *err)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    s->om = malloc(n > 0 ? n * n : 1);
    s->cq = calloc(n ? n : 1, sizeof(size_t));
    s->ck = calloc(n ? n : 1, sizeof(size_t));
    size_t *ord = malloc((n ? n : 1) * sizeof(size_t)), *best = malloc((n ? n : 1) * sizeof(size_t));
    keycount *kc = malloc((n ? n : 1) * sizeof(keycount));
    unsigned char *run = malloc(n ? n : 1);
    int st = AC_OK;
    if (!s->om || !s->cq || !s->ck || !ord || !best || !kc || !run) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    memcpy(s->om, omega, n * n);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            if (omega[i * n + j]) {
                s->cq[j]++;
                s->ck[i]++;
                s->nvis++;
            }
    for (size_t i = 0; i < n; i++) {
        s->maxq = s->cq[i] > s->maxq ? s->cq[i] : s->maxq;
        s->maxk = s->ck[i] > s->maxk ? s->ck[i] : s->maxk;
    }
    s->full = s->nvis == n * n;
    /* order (a): by |R_i|; a staircase iff it keeps every entry */
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        kc[i] = (keycount){s->ck[i], i};
    qsort(kc, n, sizeof *kc, cmp_keycount);
    for (size_t i = 0; i < n && kc[i].c > 0; i++)
        ord[m++] = kc[i].i;
    long val, bval;
    size_t kept, bkept, len = best_prefix(s->om, n, ord, m, run, &bval, &bkept), blen = len;
    memcpy(best, ord, len * sizeof(size_t));
    s->chain = bkept == s->nvis && blen == m;
    if (!s->chain) /* orders (b), (c): from each key forwards and backwards */
        for (size_t start = 0; start < n; start++)
            for (int dir = 0; dir < 2; dir++) {
                size_t cnt = 0;
                if (dir == 0)
                    for (size_t i = start; i < n; i++)
                        ord[cnt++] = i;
                else
                    for (size_t i = start + 1; i-- > 0;)
                        ord[cnt++] = i;
                len = best_prefix(s->om, n, ord, cnt, run, &val, &kept);
                if (len > 0 && (val > bval || (val == bval && kept > bkept))) {
                    bval = val;
                    bkept = kept;
                    blen = len;
                    memcpy(best, ord, len * sizeof(size_t));
                }
            }
    st = stair_build(&s->stair, s->om, n, best, blen, err);
out:
    free(ord);
    free(best);
    free(kc);
    free(run);
    if (st)
        t1_support_free(s);
    return st;
}

void t1_support_free(t1_support *s)
{
    if (!s)
        return;
    free(s->om);
    free(s->cq);
    free(s->ck);
    stair_free(&s->stair);
    memset(s, 0, sizeof *s);
}
