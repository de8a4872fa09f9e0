/* decide_summary.c — the one-sentence summary of route DECIDE of Theorem 1
 * (res->summary) from the final result: the rank of X, exact
 * representability and the distance enclosure (doc/mathematics.md §3.4,
 * §3.6).
 */
#include <config.h>

#include <math.h>
#include <stdio.h>

#include "attncheck/json.h"
#include "attncheck/theorem1.h"
#include "theorem1/t1_impl.h"

void ac_t1_decide_summary(ac_t1_result *res, const ac_t1_opts *o)
{
    size_t n = res->n, dk = res->dk, r = (size_t)res->rank;
    char rk[64], lo[AC_FMT_BOUND_BUFSIZE], hi[AC_FMT_BOUND_BUFSIZE], wh[AC_FMT_BOUND_BUFSIZE];
    /* every number printed is a certified bound, rounded outward */
    ac_str_lo(lo, ".3g", res->dist_lo);
    ac_str_hi(hi, ".3g", res->dist_hi);
    ac_str_hi(wh, ".3g", res->weights_unusable ? res->dist_hi : res->weights_cert.hi);
    if (r == n)
        snprintf(rk, sizeof rk, "rank X = n = %zu, dk = %zu", n, dk);
    else
        snprintf(rk, sizeof rk, "rank X = %zu < n = %zu, dk = %zu", r, n, dk);
    if (r == 0 && res->exact == AC_PROVED)
        snprintf(res->summary, sizeof res->summary,
                 "X = 0: every head gives uniform columns and P's columns are constant, so "
                 "the column-normalised P is exactly representable; every head is "
                 "[%s, %s] away from P itself (0 iff its column sums are exactly 1)", lo, hi);
    else if (r == 0)
        snprintf(res->summary, sizeof res->summary,
                 "X = 0: every head gives uniform columns and P's are not constant: every "
                 "head is [%s, %s] away in max-abs", lo, hi);
    else if (res->exact == AC_PROVED)
        snprintf(res->summary, sizeof res->summary,
                 "%s: P is exactly representable (doc/mathematics.md §3.5); %s%s",
                 rk,
                 res->weights_unusable ? "no double weights at this scale of X, "
                                         "max|Softmax - P| <= "
                                       : "the constructed weights reach max|Softmax - P| <= ",
                 wh);
    else if (res->exact == AC_REFUTED && res->dist_hi <= o->tol)
        snprintf(res->summary, sizeof res->summary,
                 "%s: P itself is not exactly representable (every head is >= %s away), "
                 "but the written weights come within %s",
                 rk, lo, hi);
    else if (res->exact == AC_REFUTED && res->dist_lo > 0)
        snprintf(res->summary, sizeof res->summary,
                 "%s: P is not representable by a head of size %zu; every head is at least "
                 "%s away in max-abs",
                 rk, dk, lo);
    else if (res->exact == AC_REFUTED)
        snprintf(res->summary, sizeof res->summary,
                 "%s: P is not representable by a head of size %zu, so no head reaches it "
                 "(dist > 0: the representable P are closed, doc/mathematics.md §3.4), though "
                 "no positive lower bound on the distance is certified",
                 rk, dk);
    else if (isfinite(res->dist_hi))
        snprintf(res->summary, sizeof res->summary,
                 "%s: exact representability not decided (no obstruction certified); the "
                 "written weights reach max|Softmax - P| <= %s",
                 rk, hi);
    else
        snprintf(res->summary, sizeof res->summary,
                 "%s: exact representability not decided (no obstruction certified), and no "
                 "weights were certified",
                 rk);
}
