/* sum_exact.c — is a sum of doubles exactly a given double? (core/sum_exact.h)
 *
 * Every finite double is m 2^(q - 1074) with integers 0 <= m < 2^53 and
 * 0 <= q <= 2046 (q = 0 for subnormals, q = biased exponent - 1 otherwise),
 * so every sum of doubles is an integer multiple of 2^-1074 below 2^2099 in
 * magnitude times the number of terms.  The accumulator holds that integer
 * in limbs of 32 bits (each an int64, so carries wait): m 2^(q mod 32) has at
 * most 84 bits and goes into the three limbs from q / 32 on, each part below
 * 2^32.  Carries are propagated every 2^29 terms and at the end (floor
 * division by 2^32 with arithmetic shifts), which leaves every limb but the
 * top one in [0, 2^32): that representation is unique, so the sum is zero
 * iff every limb is.  No rounding happens anywhere: the answer is exact.
 */
#include <config.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/sum_exact.h"

#define LIMBS 72 /* 2^(32 * 72) > 2^2099 times any count of terms below 2^64 */

static void carry(int64_t *acc)
{
    for (int i = 0; i < LIMBS - 1; i++) {
        int64_t c = acc[i] >> 32; /* floor(acc / 2^32): arithmetic shift */
        acc[i] -= (int64_t)((uint64_t)c << 32);
        acc[i + 1] += c;
    }
}

/* acc += s x (s = +1 or -1); 0 if x is not finite. */
static int add(int64_t *acc, double x, int s)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    uint64_t E = (u >> 52) & 0x7ff, m = u & ((UINT64_C(1) << 52) - 1);
    if (E == 0x7ff)
        return 0;
    if (E != 0)
        m |= UINT64_C(1) << 52;
    if (u >> 63)
        s = -s;
    unsigned q = E ? (unsigned)E - 1 : 0, l = q / 32, sh = q % 32;
    unsigned __int128 v = (unsigned __int128)m << sh; /* < 2^84 */
    acc[l] += s * (int64_t)(uint64_t)(v & 0xffffffffu);
    acc[l + 1] += s * (int64_t)(uint64_t)((v >> 32) & 0xffffffffu);
    acc[l + 2] += s * (int64_t)(uint64_t)(v >> 64);
    return 1;
}

/* acc = (x_0 + x_stride + ... - target) / 2^-1074, carried; 0 if an input
 * is not finite. */
static int accumulate(int64_t *acc, const double *x, size_t n, size_t stride, double target)
{
    memset(acc, 0, LIMBS * sizeof *acc);
    if (!add(acc, target, -1))
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (!add(acc, x[i * stride], 1))
            return 0;
        if ((i & ((1u << 29) - 1)) == (1u << 29) - 1)
            carry(acc);
    }
    carry(acc);
    return 1;
}

int ac_sum_is_exactly(const double *x, size_t n, size_t stride, double target)
{
    int64_t acc[LIMBS];
    if (!accumulate(acc, x, n, stride, target))
        return 0;
    for (int i = 0; i < LIMBS; i++)
        if (acc[i] != 0)
            return 0;
    return 1;
}

/* After carry() every limb but the top one is in [0, 2^32), so the sign of
 * the integer N = sum acc_i 2^(32 i) is that of the top limb; -N is carried
 * back to the same form.  |N| 2^-1074 rounded toward zero: the 128 bits
 * from the leading limb down, truncated to 53 (dropping the bits below
 * only lowers it), scaled by ldexp, exact because the result is either
 * normal or (below 2^-1022) the whole of N, which then has fewer than 53
 * bits. */
double ac_sum_dev_rz(const double *x, size_t n, size_t stride, double target)
{
    int64_t acc[LIMBS];
    if (!accumulate(acc, x, n, stride, target))
        return NAN;
    if (acc[LIMBS - 1] < 0) {
        for (int i = 0; i < LIMBS; i++)
            acc[i] = -acc[i];
        carry(acc);
    }
    int h = LIMBS - 1;
    while (h >= 0 && acc[h] == 0)
        h--;
    if (h < 0)
        return 0.0;
    unsigned __int128 w = 0;
    for (int k = h; k > h - 4; k--)
        w = w << 32 | (k >= 0 ? (uint64_t)acc[k] : 0);
    int lead = 127;
    while (!((w >> lead) & 1))
        lead--;
    int shift = lead > 52 ? lead - 52 : 0;
    long e = 32L * (h - 3) + shift - 1074; /* the value is (w >> shift) 2^e */
    if (e + 52 > 1023)
        return DBL_MAX;
    return ldexp((double)(uint64_t)(w >> shift), (int)e);
}

int ac_sum_is_exactly_cols(const double *A, size_t rows, size_t cols, size_t ld, double target,
                           int *out)
{
    int64_t *acc = calloc(cols ? cols * LIMBS : 1, sizeof(int64_t));
    if (!acc)
        return 0;
    int tf = 1;
    for (size_t j = 0; j < cols; j++) {
        tf = add(acc + j * LIMBS, target, -1);
        out[j] = tf;
    }
    for (size_t i = 0; i < rows && tf; i++) {
        const double *a = A + i * ld;
        for (size_t j = 0; j < cols; j++)
            out[j] &= add(acc + j * LIMBS, a[j], 1);
        if ((i & ((1u << 29) - 1)) == (1u << 29) - 1)
            for (size_t j = 0; j < cols; j++)
                carry(acc + j * LIMBS);
    }
    for (size_t j = 0; j < cols; j++) {
        carry(acc + j * LIMBS);
        for (int l = 0; l < LIMBS && out[j]; l++)
            if (acc[j * LIMBS + l] != 0)
                out[j] = 0;
    }
    free(acc);
    return 1;
}
