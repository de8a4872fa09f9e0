/* dyadic.c — exact dyadic matrices (dyadic.h). */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include <flint/nmod_mat.h>
#include <flint/ulong_extras.h>

#include "core/dyadic.h"

/* x = m 2^e exactly, m odd (x != 0, finite). */
static void split_odd(double x, int64_t *m, slong *e)
{
    int ex;
    double f = frexp(x, &ex); /* x = f 2^ex, 1/2 <= |f| < 1 (subnormals too) */
    int64_t mm = (int64_t)ldexp(f, 53);
    slong ee = (slong)ex - 53;
    uint64_t a = (uint64_t)(mm < 0 ? -mm : mm);
    int tz = __builtin_ctzll(a);
    a >>= tz;
    *m = mm < 0 ? -(int64_t)a : (int64_t)a;
    *e = ee + tz;
}

static int bitlen64(uint64_t a)
{
    return a ? 64 - __builtin_clzll(a) : 0;
}

void ac_xmat_init_zero(ac_xmat *A, slong rows, slong cols)
{
    fmpz_mat_init(A->m, rows, cols);
    A->exp = 0;
    A->ready = 1;
}

void ac_xmat_clear(ac_xmat *A)
{
    if (A && A->ready) {
        fmpz_mat_clear(A->m);
        A->ready = 0;
    }
}

slong ac_xmat_rows(const ac_xmat *A) { return fmpz_mat_nrows(A->m); }
slong ac_xmat_cols(const ac_xmat *A) { return fmpz_mat_ncols(A->m); }

int ac_xmat_from_d(ac_xmat *A, const double *x, size_t rows, size_t cols, size_t ld, int trans,
                   slong max_bits)
{
    slong emin = 0, top = 0;
    int have = 0;
    A->ready = 0;
    if (max_bits <= 0)
        max_bits = AC_XMAT_MAX_BITS;
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) {
            double v = x[i * ld + j];
            if (!isfinite(v))
                return AC_XMAT_NONFINITE;
            if (v == 0.0)
                continue;
            int64_t m;
            slong e;
            split_odd(v, &m, &e);
            slong t = e + bitlen64((uint64_t)(m < 0 ? -m : m));
            if (!have || e < emin)
                emin = e;
            if (!have || t > top)
                top = t;
            have = 1;
        }
    if (have && top - emin > max_bits)
        return AC_XMAT_TOO_BIG;
    slong r = (slong)(trans ? cols : rows), c = (slong)(trans ? rows : cols);
    fmpz_mat_init(A->m, r, c);
    A->exp = have ? emin : 0;
    A->ready = 1;
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) {
            double v = x[i * ld + j];
            if (v == 0.0)
                continue;
            int64_t m;
            slong e;
            split_odd(v, &m, &e);
            fmpz *z = trans ? fmpz_mat_entry(A->m, j, i) : fmpz_mat_entry(A->m, i, j);
            fmpz_set_si(z, (slong)m);
            fmpz_mul_2exp(z, z, (ulong)(e - emin));
        }
    return AC_XMAT_OK;
}

/* T = A scaled to exponent e <= A->exp (a new matrix) */
static void aligned(fmpz_mat_t T, const ac_xmat *A, slong e)
{
    fmpz_mat_init(T, fmpz_mat_nrows(A->m), fmpz_mat_ncols(A->m));
    fmpz_mat_scalar_mul_2exp(T, A->m, (ulong)(A->exp - e));
}

void ac_xmat_mul(ac_xmat *C, const ac_xmat *A, const ac_xmat *B)
{
    fmpz_mat_init(C->m, fmpz_mat_nrows(A->m), fmpz_mat_ncols(B->m));
    C->ready = 1;
    C->exp = A->exp + B->exp;
    if (fmpz_mat_ncols(A->m) > 0)
        fmpz_mat_mul(C->m, A->m, B->m);
}

static void addsub(ac_xmat *C, const ac_xmat *A, const ac_xmat *B, int sub)
{
    slong e = A->exp < B->exp ? A->exp : B->exp;
    fmpz_mat_t TA, TB;
    aligned(TA, A, e);
    aligned(TB, B, e);
    fmpz_mat_init(C->m, fmpz_mat_nrows(A->m), fmpz_mat_ncols(A->m));
    C->ready = 1;
    C->exp = e;
    if (sub)
        fmpz_mat_sub(C->m, TA, TB);
    else
        fmpz_mat_add(C->m, TA, TB);
    fmpz_mat_clear(TA);
    fmpz_mat_clear(TB);
}

void ac_xmat_add(ac_xmat *C, const ac_xmat *A, const ac_xmat *B) { addsub(C, A, B, 0); }
void ac_xmat_sub(ac_xmat *C, const ac_xmat *A, const ac_xmat *B) { addsub(C, A, B, 1); }

void ac_xmat_transpose(ac_xmat *C, const ac_xmat *A)
{
    fmpz_mat_init(C->m, fmpz_mat_ncols(A->m), fmpz_mat_nrows(A->m));
    C->ready = 1;
    C->exp = A->exp;
    fmpz_mat_transpose(C->m, A->m);
}

void ac_xmat_sym(ac_xmat *C, const ac_xmat *A)
{
    ac_xmat T;
    ac_xmat_transpose(&T, A);
    ac_xmat_add(C, A, &T);
    ac_xmat_clear(&T);
}

void ac_xmat_block(ac_xmat *C, const ac_xmat *A, slong r0, slong c0, slong nr, slong nc)
{
    fmpz_mat_init(C->m, nr, nc);
    C->ready = 1;
    C->exp = A->exp;
    for (slong i = 0; i < nr; i++)
        for (slong j = 0; j < nc; j++)
            fmpz_set(fmpz_mat_entry(C->m, i, j), fmpz_mat_entry(A->m, r0 + i, c0 + j));
}

int ac_xmat_is_zero(const ac_xmat *A)
{
    return fmpz_mat_is_zero(A->m);
}

int ac_xmat_equal(const ac_xmat *A, const ac_xmat *B)
{
    if (fmpz_mat_nrows(A->m) != fmpz_mat_nrows(B->m) || fmpz_mat_ncols(A->m) != fmpz_mat_ncols(B->m))
        return 0;
    int za = fmpz_mat_is_zero(A->m), zb = fmpz_mat_is_zero(B->m);
    if (za || zb)
        return za && zb;
    slong e = A->exp < B->exp ? A->exp : B->exp;
    fmpz_mat_t TA, TB;
    aligned(TA, A, e);
    aligned(TB, B, e);
    int eq = fmpz_mat_equal(TA, TB);
    fmpz_mat_clear(TA);
    fmpz_mat_clear(TB);
    return eq;
}

size_t ac_xmat_scaled_ndiff(const ac_xmat *A, unsigned long a, const ac_xmat *B, unsigned long b)
{
    slong r = fmpz_mat_nrows(A->m), c = fmpz_mat_ncols(A->m);
    if (r != fmpz_mat_nrows(B->m) || c != fmpz_mat_ncols(B->m))
        return (size_t)-1;
    slong e = A->exp < B->exp ? A->exp : B->exp;
    size_t nd = 0;
    fmpz_t x, y;
    fmpz_init(x);
    fmpz_init(y);
    for (slong i = 0; i < r; i++)
        for (slong j = 0; j < c; j++) {
            const fmpz *p = fmpz_mat_entry(A->m, i, j), *q = fmpz_mat_entry(B->m, i, j);
            if (fmpz_sgn(p) != fmpz_sgn(q)) {
                nd++;
                continue;
            }
            if (fmpz_is_zero(p))
                continue;
            /* a (p 2^(eA-e))^2 == b (q 2^(eB-e))^2 */
            fmpz_mul_2exp(x, p, (ulong)(A->exp - e));
            fmpz_mul(x, x, x);
            fmpz_mul_ui(x, x, a);
            fmpz_mul_2exp(y, q, (ulong)(B->exp - e));
            fmpz_mul(y, y, y);
            fmpz_mul_ui(y, y, b);
            if (!fmpz_equal(x, y))
                nd++;
        }
    fmpz_clear(x);
    fmpz_clear(y);
    return nd;
}

int ac_xmat_scaled_equal(const ac_xmat *A, unsigned long a, const ac_xmat *B, unsigned long b)
{
    return ac_xmat_scaled_ndiff(A, a, B, b) == 0;
}

slong ac_xmat_rank_modp(const ac_xmat *A)
{
    slong r = fmpz_mat_nrows(A->m), c = fmpz_mat_ncols(A->m);
    if (r == 0 || c == 0)
        return 0;
    mp_limb_t p = n_nextprime(UWORD(1) << 61, 1);
    nmod_mat_t M;
    nmod_mat_init(M, r, c, p);
    fmpz_mat_get_nmod_mat(M, A->m);
    slong rk = nmod_mat_rank(M);
    nmod_mat_clear(M);
    return rk;
}

slong ac_xmat_rank(const ac_xmat *A)
{
    return ac_xmat_rank_cols(A, NULL);
}

slong ac_xmat_rank_cols(const ac_xmat *A, size_t *pivot_cols)
{
    slong r = fmpz_mat_nrows(A->m), c = fmpz_mat_ncols(A->m);
    if (r == 0 || c == 0)
        return 0;
    if (!pivot_cols)
        return fmpz_mat_rank(A->m);
    fmpz_mat_t R;
    fmpz_t den;
    fmpz_mat_init(R, r, c);
    fmpz_init(den);
    slong rk = fmpz_mat_rref(R, den, A->m);
    slong col = 0;
    for (slong i = 0; i < rk; i++) {
        while (col < c && fmpz_is_zero(fmpz_mat_entry(R, i, col)))
            col++;
        pivot_cols[i] = (size_t)col;
        col++;
    }
    fmpz_mat_clear(R);
    fmpz_clear(den);
    return rk;
}

slong ac_xmat_bits(const ac_xmat *A)
{
    return FLINT_ABS(fmpz_mat_max_bits(A->m));
}

int ac_xmat_to_d(const ac_xmat *A, double *out)
{
    slong r = fmpz_mat_nrows(A->m), c = fmpz_mat_ncols(A->m);
    fmpz_t t;
    fmpz_init(t);
    int ok = 1;
    for (slong i = 0; i < r && ok; i++)
        for (slong j = 0; j < c && ok; j++) {
            const fmpz *z = fmpz_mat_entry(A->m, i, j);
            if (fmpz_is_zero(z)) {
                out[i * c + j] = 0.0;
                continue;
            }
            flint_bitcnt_t tz = fmpz_val2(z);
            fmpz_fdiv_q_2exp(t, z, tz); /* exact: z has tz trailing zeros */
            if (fmpz_bits(t) > 53) {
                ok = 0;
                break;
            }
            double m = fmpz_get_d(t); /* exact: at most 53 bits */
            slong e2 = A->exp + (slong)tz;
            if (e2 > 2000 || e2 < -2200) {
                ok = 0;
                break;
            }
            double v = ldexp(m, (int)e2);
            if (!isfinite(v) || ldexp(v, (int)-e2) != m) {
                ok = 0; /* overflow, or bits lost to underflow */
                break;
            }
            out[i * c + j] = v;
        }
    fmpz_clear(t);
    return ok;
}

void ac_xmat_to_arb(arb_mat_t out, const ac_xmat *A, slong prec)
{
    slong r = fmpz_mat_nrows(A->m), c = fmpz_mat_ncols(A->m);
    for (slong i = 0; i < r; i++)
        for (slong j = 0; j < c; j++) {
            arb_ptr x = arb_mat_entry(out, i, j);
            arb_set_round_fmpz(x, fmpz_mat_entry(A->m, i, j), prec);
            arb_mul_2exp_si(x, x, A->exp);
        }
}

int ac_xmat_null_vector(fmpz *v, const ac_xmat *A)
{
    slong c = fmpz_mat_ncols(A->m);
    if (c == 0)
        return 0;
    if (fmpz_mat_nrows(A->m) == 0) {
        for (slong j = 0; j < c; j++)
            fmpz_set_ui(v + j, j == 0);
        return 1;
    }
    fmpz_mat_t N;
    fmpz_mat_init(N, c, c);
    slong nullity = fmpz_mat_nullspace(N, A->m);
    if (nullity > 0) {
        /* make the vector primitive: divide by the gcd of its entries */
        fmpz_t g;
        fmpz_init(g);
        for (slong j = 0; j < c; j++)
            fmpz_gcd(g, g, fmpz_mat_entry(N, j, 0));
        for (slong j = 0; j < c; j++) {
            if (fmpz_is_zero(g) || fmpz_is_one(g))
                fmpz_set(v + j, fmpz_mat_entry(N, j, 0));
            else
                fmpz_divexact(v + j, fmpz_mat_entry(N, j, 0), g);
        }
        fmpz_clear(g);
    }
    fmpz_mat_clear(N);
    return nullity > 0;
}
