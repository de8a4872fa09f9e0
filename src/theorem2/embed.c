/* embed.c — the inclusion F in G behind Theorem 2 of paper 1 (dp >= d/h;
 * doc/mathematics.md §4.2): g_V built from f_W by padding each head with
 * zero rows and columns and rescaling its query by s = sqrt(dp/(d/h)), so
 * that Vk_i^T Vq_i / sqrt(dp) = Wk_i^T Wq_i / sqrt(d/h).  The rescaling is
 * exact when s = p/2^k is a power of two, or dyadic with w(p) d/h <= dp, w(p)
 * the number of nonzero digits of the non-adjacent form of p
 * (embed_scale_of; doc/mathematics.md §4.2). */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "t2_impl.h"

static size_t isqrt_size(size_t x)
{
    size_t r = (size_t)sqrt((double)x);
    while (r * r > x)
        r--;
    while ((r + 1) * (r + 1) <= x)
        r++;
    return r;
}

static size_t gcd_size(size_t a, size_t b)
{
    while (b) {
        size_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* How the query is rescaled by s = sqrt(dp/dh). */
typedef struct {
    size_t num, den;  /* s^2 = num/den in lowest terms */
    size_t sn, sd;    /* isqrt(num), isqrt(den) */
    int dyadic;       /* s = sn / 2^k exactly */
    int exps[64];     /* copies c: Vq block c = sgn[c] 2^exps[c] Wq_i, and
                         sum_c sgn[c] 2^exps[c] = s (the non-adjacent form of sn) */
    int sgn[64];
    size_t need;      /* copies the non-adjacent form needs */
    size_t dh, dp;
    size_t ncopies;   /* > 1: that many copies per head; otherwise one copy times single */
    double single;    /* the multiplier of a single copy */
} embed_scale;

/* s^2 = dp/dh = num/den in lowest terms; s is a dyadic rational p/2^k iff
 * num = p^2 and den = 4^k.  Then s = sum_c sgn_c 2^(e_c) (the non-adjacent
 * form of p, shifted by k), one copy of (Wk_i, sgn_c 2^(e_c) Wq_i) per digit
 * when they fit in dp, else one copy times s (rounded unless s Wq is exact);
 * an irrational s is rounded, fl(s). */
static void embed_scale_of(embed_scale *e, size_t dp, size_t dh)
{
    size_t g = gcd_size(dp, dh);
    memset(e, 0, sizeof *e);
    e->dh = dh;
    e->dp = dp;
    e->num = dp / g;
    e->den = dh / g;
    e->sn = isqrt_size(e->num);
    e->sd = isqrt_size(e->den);
    e->dyadic = e->sn * e->sn == e->num && e->sd * e->sd == e->den && (e->sd & (e->sd - 1)) == 0;
    int k = 0;
    while (e->dyadic && ((size_t)1 << k) < e->sd)
        k++;
    if (!e->dyadic) {
        e->single = sqrt((double)dp / (double)dh);
        return;
    }
    /* the non-adjacent form: sn = sum_c sgn_c 2^b_c with no two adjacent
     * nonzero digits, the fewest nonzero signed binary digits (at most the
     * popcount of sn: 11 = 1011b needs 3 either way, 7 = 111b needs 8 - 1) */
    unsigned long long p = e->sn;
    for (int b = 0; p && b < 63; b++, p >>= 1)
        if (p & 1) {
            int z = (p & 3) == 3 ? -1 : 1;
            e->exps[e->ncopies] = b - k;
            e->sgn[e->ncopies++] = z;
            p = z > 0 ? p - 1 : p + 1;
        }
    e->need = e->ncopies;
    if (e->ncopies * dh > dp) {
        e->single = ldexp((double)e->sn, -k);
        e->ncopies = 0;
    } else if (e->ncopies == 1) {
        e->single = ldexp(1.0, e->exps[0]);
    }
}

/* Head i of V from head i of W: value and output padded with zeros, the key
 * copied and the query rescaled (one block per copy). */
static void embed_head(ac_mh *V, const ac_mh *W, size_t i, const embed_scale *e)
{
    size_t d = W->d, dh = W->hs, dp = V->hs, hhW = W->h * dh, hhV = V->h * dp;
    for (size_t t = 0; t < dh; t++)
        memcpy(V->wv + (i * dp + t) * d, W->wv + (i * dh + t) * d, d * sizeof(double));
    for (size_t rr = 0; rr < d; rr++)
        for (size_t c = 0; c < dh; c++)
            V->wo[rr * hhV + i * dp + c] = W->wo[rr * hhW + i * dh + c];
    size_t nc = (e->dyadic && e->ncopies > 1) ? e->ncopies : 1;
    for (size_t c = 0; c < nc; c++) {
        double m = nc > 1 ? e->sgn[c] * ldexp(1.0, e->exps[c]) : e->single;
        for (size_t t = 0; t < dh; t++)
            for (size_t j = 0; j < d; j++) {
                V->wk[(i * dp + c * dh + t) * d + j] = W->wk[(i * dh + t) * d + j];
                V->wq[(i * dp + c * dh + t) * d + j] = m * W->wq[(i * dh + t) * d + j];
            }
    }
}

static void embed_note(char *note, size_t note_len, const embed_scale *e)
{
    if (e->dyadic && e->ncopies > 1)
        snprintf(note, note_len, "s = sqrt(dp/(d/h)) = %zu/%zu: %zu copies of (Wk_i, +-2^e Wq_i) "
                 "per head (signed binary digits of %zu): exact unless 2^e Wq over- or underflows "
                 "(checked below)", e->sn, e->sd, e->ncopies,
                 e->sn);
    else if (e->dyadic && e->need > 1)
        snprintf(note, note_len, "s = sqrt(dp/(d/h)) = %zu/%zu is dyadic, but its %zu signed "
                 "binary digits need %zu x d/h = %zu rows > dp = %zu: one copy, query "
                 "multiplied by s in double (exact only where s Wq is a double; checked below)",
                 e->sn, e->sd, e->need, e->need, e->need * e->dh, e->dp);
    else if (e->dyadic)
        snprintf(note, note_len, "s = sqrt(dp/(d/h)) = %.17g: query multiplied by s (a power "
                 "of two: exact unless s Wq over- or underflows; checked below)", e->single);
    else
        snprintf(note, note_len, "s = sqrt(dp/(d/h)) = sqrt(%zu/%zu) is irrational: query "
                 "multiplied by fl(s) = %.17g, exact only in real arithmetic", e->num, e->den,
                 e->single);
}

int ac_t2_embed(ac_mh *V, const ac_mh *W, size_t dp, char *note, size_t note_len, ac_err *err)
{
    size_t d = W->d, h = W->h, dh = W->hs;
    embed_scale e;
    int st;
    memset(V, 0, sizeof *V);
    if (dp < dh)
        return ac_err_set(err, AC_EUSAGE, "the embedding F in G needs dp >= d/h (dp = %zu, d/h = "
                          "%zu)", dp, dh);
    if ((st = ac_mh_init(V, d, h, dp, err)))
        return st;
    embed_scale_of(&e, dp, dh);
    for (size_t i = 0; i < h; i++)
        embed_head(V, W, i, &e);
    if (note)
        embed_note(note, note_len, &e);
    return AC_OK;
}
