/* marchenko_pastur.c — the Marchenko–Pastur law of the spectrum of
 * (1/D) A A^T, y = N/D (attncheck/rmt.h, doc/mathematics.md §5.6): support,
 * density of the continuous part and the cdf with its atom at 0. */
#include <config.h>

#include <math.h>

#include "attncheck/rmt.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

void ac_mp_edges(double y, double *lo, double *hi)
{
    double r = sqrt(y);
    *lo = (1 - r) * (1 - r);
    *hi = (1 + r) * (1 + r);
}

double ac_mp_pdf(double x, double y)
{
    double lo, hi;
    if (!(y > 0) || x != x)
        return NAN;
    ac_mp_edges(y, &lo, &hi);
    if (x <= lo || x >= hi || x <= 0)
        return 0.0;
    return sqrt((hi - x) * (x - lo)) / (2 * M_PI * y * x);
}

/* With x = c - r cos(theta), c = 1 + y, r = 2 sqrt(y), the continuous part
 * integrates in closed form:
 *   F(theta) = (r sin theta + c theta) / (2 pi y)
 *              - |1 - y| / (pi y) atan((1 + sqrt y)/|1 - sqrt y| tan(theta/2)),
 * which is 1 (y <= 1) or 1/y (y > 1) at theta = pi. */
double ac_mp_cdf(double x, double y)
{
    double lo, hi;
    if (!(y > 0) || x != x)
        return NAN;
    if (x < 0)
        return 0.0;
    double atom = y > 1 ? 1.0 - 1.0 / y : 0.0;
    ac_mp_edges(y, &lo, &hi);
    if (x <= lo)
        return atom;
    if (x >= hi)
        return 1.0;
    double c = 1 + y, r = 2 * sqrt(y), sy = sqrt(y);
    double ct = (c - x) / r;
    ct = ct > 1 ? 1 : (ct < -1 ? -1 : ct);
    double th = acos(ct);
    double F = (r * sin(th) + c * th) / (2 * M_PI * y);
    if (y != 1.0)
        F -= fabs(1 - y) / (M_PI * y) * atan((1 + sy) / fabs(1 - sy) * tan(0.5 * th));
    F += atom;
    return F < 0 ? 0.0 : (F > 1 ? 1.0 : F);
}
