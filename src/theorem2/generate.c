/* generate.c — instances of Theorem 2 of paper 1: a g_V satisfying the
 * theorem's hypotheses (ac_t2_generate_v), and an f_W in each case of its
 * proof (ac_t2_generate_w: generate_w_case1, generate_w_case2,
 * generate_w_case3).  The integer kinds keep every product exact in double,
 * so that S_W = S_V and the skew-symmetry of the M_i hold exactly
 * (doc/mathematics.md §4.4-§4.6, §4.9). */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/rng.h"
#include "t2_impl.h"

/* Smallest k with 2^k >= sqrt(m) (a power-of-two scaling keeps entries exact). */
static int pow2_above_sqrt(size_t m)
{
    int k = 0;
    while ((double)((size_t)1 << (2 * k)) < (double)m && k < 30)
        k++;
    return k;
}

/* x[0..m) = integers uniform in {-2, ..., 2} times 2^-k */
static void fill_small_int(ac_rng *r, double *x, size_t m, int k)
{
    for (size_t i = 0; i < m; i++)
        x[i] = ldexp((double)ac_rng_below(r, 5) - 2.0, -k);
}

/* A random signed permutation: perm[r] and sign[r] = +-1. */
static void signed_perm(ac_rng *r, size_t *perm, double *sign, size_t m)
{
    for (size_t i = 0; i < m; i++)
        perm[i] = i;
    for (size_t i = m; i > 1; i--) {
        size_t j = (size_t)ac_rng_below(r, i);
        size_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
    for (size_t i = 0; i < m; i++)
        sign[i] = (ac_rng_u64(r) >> 63) ? -1.0 : 1.0;
}

ac_t2_gen ac_t2_gen_for_case(int kase)
{
    return kase == 2 ? AC_T2_GEN_INTEGER : kase == 3 ? AC_T2_GEN_SKEW : AC_T2_GEN_GAUSSIAN;
}

/* ---- g_V ------------------------------------------------------------------ */

/* Vo, Vv of V and the shared query/key factors k0, q0 (dp x d) of one
 * attempt, from the streams (seed, base, 0..2) */
static void gen_v_factors(ac_mh *V, double *k0, double *q0, ac_t2_gen kind, uint64_t seed,
                          uint64_t base)
{
    size_t d = V->d, dp = V->hs, hh = V->h * dp;
    ac_rng r;
    if (kind == AC_T2_GEN_GAUSSIAN) {
        ac_rng_init(&r, seed, base, 0);
        ac_rng_normal_fill(&r, V->wo, d * hh);
        ac_rng_init(&r, seed, base, 1);
        ac_rng_normal_fill(&r, V->wv, hh * d);
        ac_rng_init(&r, seed, base, 2);
        ac_rng_normal_fill(&r, k0, dp * d);
        ac_rng_normal_fill(&r, q0, dp * d);
        double so = 1.0 / sqrt((double)hh), sd = 1.0 / sqrt((double)d);
        for (size_t i = 0; i < d * hh; i++) {
            V->wo[i] *= so;
            V->wv[i] *= sd;
        }
        for (size_t i = 0; i < dp * d; i++) {
            k0[i] *= sd;
            q0[i] *= sd;
        }
        return;
    }
    int ko = pow2_above_sqrt(hh), kd = pow2_above_sqrt(d);
    ac_rng_init(&r, seed, base, 0);
    fill_small_int(&r, V->wo, d * hh, ko);
    ac_rng_init(&r, seed, base, 1);
    fill_small_int(&r, V->wv, hh * d, kd);
    ac_rng_init(&r, seed, base, 2);
    if (kind == AC_T2_GEN_INTEGER) {
        fill_small_int(&r, k0, dp * d, kd);
        fill_small_int(&r, q0, dp * d, kd);
        return;
    }
    /* rows of Vk: x_1, y_1, x_2, y_2, ...; of Vq: y_1, -x_1, ...:
     * U = sum_p (x_p y_p' - y_p x_p'), skew-symmetric */
    fill_small_int(&r, k0, dp * d, kd);
    for (size_t p = 0; p < dp / 2; p++)
        for (size_t c = 0; c < d; c++) {
            q0[(2 * p) * d + c] = k0[(2 * p + 1) * d + c];
            q0[(2 * p + 1) * d + c] = -k0[(2 * p) * d + c];
        }
}

/* Vk_i = P_i Vk, Vq_i = P_i Vq with signed permutations (stream (seed,
 * base, 3)), P_1 = I: U_i = Vk' P_i' P_i Vq = U exactly */
static void gen_v_share_u(ac_mh *V, const double *k0, const double *q0, size_t *perm,
                          double *sign, uint64_t seed, uint64_t base)
{
    size_t d = V->d, dp = V->hs;
    ac_rng r;
    ac_rng_init(&r, seed, base, 3);
    for (size_t i = 0; i < V->h; i++) {
        if (i == 0) {
            for (size_t t = 0; t < dp; t++) {
                perm[t] = t;
                sign[t] = 1.0;
            }
        } else {
            signed_perm(&r, perm, sign, dp);
        }
        for (size_t t = 0; t < dp; t++)
            for (size_t c = 0; c < d; c++) {
                V->wk[(i * dp + t) * d + c] = sign[t] * k0[perm[t] * d + c];
                V->wq[(i * dp + t) * d + c] = sign[t] * q0[perm[t] * d + c];
            }
    }
}

/* the integer kinds: rank S_V = d and rank Vk = rank Vq = dp, exactly */
static int gen_v_ranks_ok(const ac_mh *V, const double *k0, const double *q0)
{
    size_t d = V->d, dp = V->hs;
    ac_xmat S, K, Q;
    int good = 0;
    if (t2_x_S(&S, V) == AC_XMAT_OK) {
        good = ac_xmat_rank_modp(&S) == (slong)d;
        ac_xmat_clear(&S);
    }
    if (good && ac_xmat_from_d(&K, k0, dp, d, d, 0, 0) == AC_XMAT_OK) {
        good = ac_xmat_rank_modp(&K) == (slong)dp;
        ac_xmat_clear(&K);
    }
    if (good && ac_xmat_from_d(&Q, q0, dp, d, d, 0, 0) == AC_XMAT_OK) {
        good = ac_xmat_rank_modp(&Q) == (slong)dp;
        ac_xmat_clear(&Q);
    }
    return good;
}

int ac_t2_generate_v(ac_mh *V, size_t d, size_t h, size_t dp, ac_t2_gen kind, uint64_t seed,
                     ac_err *err)
{
    int st;
    memset(V, 0, sizeof *V);
    if (d == 0 || h == 0 || dp == 0)
        return ac_err_set(err, AC_EUSAGE, "g_V needs d, h, dp >= 1");
    if (dp > d)
        return ac_err_set(err, AC_EUSAGE, "dp = %zu > d = %zu: U = Vk'Vq (d x d) cannot have "
                          "rank dp", dp, d);
    if (kind == AC_T2_GEN_SKEW && dp % 2)
        return ac_err_set(err, AC_EUSAGE, "a skew-symmetric U of rank dp needs dp even (dp = %zu)",
                          dp);
    double *k0 = malloc(dp * d * sizeof(double)), *q0 = malloc(dp * d * sizeof(double));
    double *sign = malloc(dp * sizeof(double));
    size_t *perm = malloc(dp * sizeof(size_t));
    if (!k0 || !q0 || !sign || !perm) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    for (int attempt = 0; attempt < 32; attempt++) {
        uint64_t base = T2_STREAM_V + 8 * (uint64_t)attempt;
        if ((st = ac_mh_init(V, d, h, dp, err)))
            goto out;
        gen_v_factors(V, k0, q0, kind, seed, base);
        gen_v_share_u(V, k0, q0, perm, sign, seed, base);
        /* Gaussian (generic): the hypotheses are certified by the caller;
         * integer kinds: redraw until the exact ranks hold */
        if (kind == AC_T2_GEN_GAUSSIAN || gen_v_ranks_ok(V, k0, q0))
            goto out;
        ac_mh_free(V);
    }
    st = ac_err_set(err, AC_EDATA, "could not draw an integer g_V with rank S_V = d and rank U = dp "
                    "in 32 attempts (d = %zu, h = %zu, dp = %zu)", d, h, dp);
out:
    free(k0);
    free(q0);
    free(sign);
    free(perm);
    if (st)
        ac_mh_free(V);
    return st;
}

/* ---- f_W in each case ----------------------------------------------------- */

int ac_t2_random_w(ac_mh *W, size_t d, size_t h, uint64_t seed, ac_err *err)
{
    memset(W, 0, sizeof *W);
    if (h == 0 || d % h)
        return ac_err_set(err, AC_EUSAGE, "h = %zu does not divide d = %zu: a standard MultiHead "
                          "layer needs head size d/h", h, d);
    return ac_mh_random(W, d, h, d / h, seed, T2_STREAM_W, err);
}

/* Case 1 (paper 1, Theorem 2): a random Gaussian f_W has S_W != S_V unless
 * S_V is very special. */
static int generate_w_case1(ac_mh *W, const ac_mh *V, uint64_t seed, ac_err *err)
{
    return ac_t2_random_w(W, V->d, V->h, seed, err);
}

/* What f_W must match in g_V for cases 2 and 3: S_V (exact, and as doubles
 * Sd) and U_1 (exact when have_u; as doubles Ud when u_ok). */
typedef struct {
    ac_xmat SV, U1;
    int have_sv, have_u, u_ok;
    double *Sd, *Ud;
} w_target;

static void w_target_free(w_target *t)
{
    if (t->have_sv)
        ac_xmat_clear(&t->SV);
    if (t->have_u)
        ac_xmat_clear(&t->U1);
    free(t->Sd);
    free(t->Ud);
}

static int w_target_init(w_target *t, const ac_mh *V, ac_err *err)
{
    size_t d = V->d;
    memset(t, 0, sizeof *t);
    if (t2_x_S(&t->SV, V) != AC_XMAT_OK)
        return ac_err_set(err, AC_EDATA, "g_V: S_V = sum_i Vo_i Vv_i is too wide for exact "
                          "arithmetic, so S_W = S_V cannot be built exactly");
    t->have_sv = 1;
    t->Sd = malloc(d * d * sizeof(double));
    t->Ud = malloc(d * d * sizeof(double));
    if (!t->Sd || !t->Ud)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    if (!ac_xmat_to_d(&t->SV, t->Sd))
        return ac_err_set_field(err, AC_EDATA, "kase", "g_V: S_V = sum_i Vo_i Vv_i is not exactly "
                                "representable in double, so no f_W with S_W = S_V exactly can be "
                                "built this way (cases 2 and 3 need g_V with exactly representable "
                                "products, e.g. kase with a generated g_V)");
    if (t2_x_qk(&t->U1, V, 0) == AC_XMAT_OK) {
        t->have_u = 1;
        t->u_ok = ac_xmat_to_d(&t->U1, t->Ud);
    }
    return AC_OK;
}

/* T = L R, L unit lower bidiagonal, R unit upper bidiagonal with +-1 from r,
 * and Ti = T^-1 = R^-1 L^-1: integers, the entries of L^-1 and R^-1 are
 * products of +-1 (|entries of Ti| <= d: exact) */
static int unimodular_pair(double *T, double *Ti, size_t d, ac_rng *r, ac_err *err)
{
    double *l = malloc(d * sizeof(double)), *rr = malloc(d * sizeof(double));
    double *Li = calloc(d * d, sizeof(double)), *Ri = calloc(d * d, sizeof(double));
    if (!l || !rr || !Li || !Ri) {
        free(l);
        free(rr);
        free(Li);
        free(Ri);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    for (size_t k = 0; k + 1 < d; k++) {
        l[k] = (ac_rng_u64(r) >> 63) ? -1.0 : 1.0;
        rr[k] = (ac_rng_u64(r) >> 63) ? -1.0 : 1.0;
    }
    for (size_t i = 0; i < d; i++) {
        Li[i * d + i] = Ri[i * d + i] = 1.0;
        for (size_t j = 0; j < i; j++) {
            /* (L^-1)_ij = prod_{k=j}^{i-1} (-l_k); (R^-1)_ji likewise with r */
            double pl = 1, pr = 1;
            for (size_t k = j; k < i; k++) {
                pl *= -l[k];
                pr *= -rr[k];
            }
            Li[i * d + j] = pl;
            Ri[j * d + i] = pr;
        }
    }
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < d; j++) {
            /* T = L R: L has 1 on the diagonal and l_{i-1} at (i, i-1); R has r_j at (j, j+1) */
            double t = (i == j ? 1.0 : 0.0);
            if (j == i + 1)
                t += rr[i];
            if (i >= 1 && j == i - 1)
                t += l[i - 1];
            if (i >= 1 && j == i)
                t += l[i - 1] * rr[i - 1];
            T[i * d + j] = t;
        }
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < d; j++) {
            double s = 0;
            for (size_t k = 0; k < d; k++)
                s += Ri[i * d + k] * Li[k * d + j];
            Ti[i * d + j] = s;
        }
    free(l);
    free(rr);
    free(Li);
    free(Ri);
    return AC_OK;
}

/* Cases 2 and 3: Wv_stack = T (unimodular, stream (seed, 3, 0)) and
 * Wo_cat = S_V T^-1, so that S_W = S_V exactly; confirmed, not assumed (the
 * sums are exact when no entry exceeds 2^53 in units of the smallest power
 * of two). */
static int build_value_output(ac_mh *W, const w_target *t, uint64_t seed, ac_err *err)
{
    size_t d = W->d;
    double *T = calloc(d * d, sizeof(double)), *Ti = calloc(d * d, sizeof(double));
    ac_rng r;
    ac_xmat SW;
    int st = AC_OK;
    if (!T || !Ti) {
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    ac_rng_init(&r, seed, T2_STREAM_WCASE, 0);
    if ((st = unimodular_pair(T, Ti, d, &r, err)))
        goto out;
    memcpy(W->wv, T, d * d * sizeof(double));
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < d; j++) {
            double s = 0;
            for (size_t k = 0; k < d; k++)
                s += t->Sd[i * d + k] * Ti[k * d + j];
            W->wo[i * d + j] = s; /* Wo_cat is d x (h dh) = d x d */
        }
    int same = 0;
    if (t2_x_S(&SW, W) == AC_XMAT_OK) {
        same = ac_xmat_equal(&SW, &t->SV);
        ac_xmat_clear(&SW);
    }
    if (!same)
        st = ac_err_set(err, AC_EDATA, "g_V: the entries of S_V are too wide to build "
                        "Wo_cat = S_V T^-1 exactly in double");
out:
    free(T);
    free(Ti);
    return st;
}

/* Case 2 (paper 1, Theorem 2): S_W = S_V and random dyadic Wk, Wq (stream
 * (seed, 3, 1)), so that some M_i is not skew-symmetric. */
static int generate_w_case2(ac_mh *W, const ac_mh *V, uint64_t seed, ac_err *err)
{
    size_t d = V->d, h = V->h;
    w_target t;
    ac_rng r;
    int st;
    if (!(st = w_target_init(&t, V, err)) && !(st = ac_mh_init(W, d, h, d / h, err)) &&
        !(st = build_value_output(W, &t, seed, err))) {
        int kd = pow2_above_sqrt(d);
        ac_rng_init(&r, seed, T2_STREAM_WCASE, 1);
        fill_small_int(&r, W->wk, d * d, kd);
        fill_small_int(&r, W->wq, d * d, kd);
    }
    w_target_free(&t);
    return st;
}

/* Case 3 (paper 1, Theorem 2) needs U shared by the heads of g_V and
 * skew-symmetric, so that skew-symmetric A_i make every M_i skew-symmetric. */
static int case3_premise(const w_target *t, const ac_mh *V, ac_err *err)
{
    int shared = t->have_u;
    for (size_t i = 1; i < V->h && shared; i++) {
        ac_xmat Ui;
        if (t2_x_qk(&Ui, V, i) != AC_XMAT_OK) {
            shared = 0;
            break;
        }
        shared = ac_xmat_equal(&Ui, &t->U1);
        ac_xmat_clear(&Ui);
    }
    ac_xmat symU;
    int skew = 0;
    if (shared) {
        ac_xmat_sym(&symU, &t->U1);
        skew = ac_xmat_is_zero(&symU);
        ac_xmat_clear(&symU);
    }
    if (!shared || !skew)
        return ac_err_set_field(err, AC_EDATA, "kase", "g_V: case 3 is built here with "
                                "skew-symmetric Wk_i'Wq_i, which needs U = Vk_i'Vq_i shared by the "
                                "heads and skew-symmetric (%s); generate g_V with kase 3 (dp even)",
                                !shared ? "the heads do not share U" : "U is not skew-symmetric");
    return AC_OK;
}

/* A_i = sum_p (x_p y_p' - y_p x_p') (stream (seed, 3, 2)): rows of Wk_i
 * x_1, y_1, ...; of Wq_i y_1, -x_1, ...  Head 1 gets x_1 = U e_1 and
 * y_1 = e_1 (when U is exact in double), so A_1 e_1 = U e_1: v1 = e_1 is a
 * point with no sign-separating v2~ (the second gap,
 * doc/mathematics.md §4.7). */
static void fill_qk_case3(ac_mh *W, const w_target *t, uint64_t seed)
{
    size_t d = W->d, h = W->h, dh = W->hs, npairs = dh / 2;
    int kd = pow2_above_sqrt(d);
    ac_rng r;
    ac_rng_init(&r, seed, T2_STREAM_WCASE, 2);
    for (size_t i = 0; i < h; i++)
        for (size_t p = 0; p < npairs; p++) {
            double *kx = W->wk + (i * dh + 2 * p) * d, *ky = kx + d;
            double *qy = W->wq + (i * dh + 2 * p) * d, *qx = qy + d;
            fill_small_int(&r, kx, d, kd);
            fill_small_int(&r, ky, d, kd);
            if (i == 0 && p == 0 && t->u_ok) {
                /* x = U e_1 (U_11 = 0 as U is skew), y_1 = 1: A_1 e_1 = x = U e_1 */
                for (size_t c = 0; c < d; c++)
                    kx[c] = t->Ud[c * d + 0];
                ky[0] = 1.0;
            } else if (i == 0 && t->u_ok) {
                kx[0] = ky[0] = 0.0; /* keep A_1 e_1 = U e_1 */
            }
            for (size_t c = 0; c < d; c++) {
                qy[c] = ky[c];
                qx[c] = -kx[c];
            }
        }
}

/* Case 3 (paper 1, Theorem 2): S_W = S_V and every A_i skew-symmetric. */
static int generate_w_case3(ac_mh *W, const ac_mh *V, uint64_t seed, ac_err *err)
{
    size_t d = V->d, h = V->h;
    w_target t;
    int st;
    if (!(st = w_target_init(&t, V, err)) && !(st = case3_premise(&t, V, err)) &&
        !(st = ac_mh_init(W, d, h, d / h, err)) && !(st = build_value_output(W, &t, seed, err)))
        fill_qk_case3(W, &t, seed);
    w_target_free(&t);
    return st;
}

int ac_t2_generate_w(ac_mh *W, const ac_mh *V, int kase, uint64_t seed, ac_err *err)
{
    size_t d = V->d, h = V->h;
    int st;
    memset(W, 0, sizeof *W);
    if (d % h)
        return ac_err_set(err, AC_EUSAGE, "h = %zu does not divide d = %zu: a standard MultiHead "
                          "layer needs head size d/h", h, d);
    switch (kase) {
    case 0:
    case 1: return generate_w_case1(W, V, seed, err);
    case 2: st = generate_w_case2(W, V, seed, err); break;
    case 3: st = generate_w_case3(W, V, seed, err); break;
    default: return ac_err_set(err, AC_EUSAGE, "case %d: the cases are 1, 2 and 3", kase);
    }
    if (st)
        ac_mh_free(W);
    return st;
}
