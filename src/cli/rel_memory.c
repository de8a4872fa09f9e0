/* rel_memory.c — the memory each command needs, estimated before any work
 * and compared with what the process may really use (ac_memory_available:
 * MemAvailable, the memory cgroup's limit, ulimit -v), so that sizes beyond
 * the machine are refused with the estimate instead of being killed by the
 * OOM killer after minutes.
 *
 * The estimates are measured, not derived: peak resident sizes
 * (/usr/bin/time -f %M) of runs at several sizes, fitted by the dominant
 * terms below with coefficients rounded up (attncheck(1), RESOURCE LIMITS
 * gives the commands).  They decide only whether to start, with a margin:
 * a run is refused when the estimate exceeds 90% of the available memory. */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "attncheck/fileio.h"
#include "cli.h"

#define GIB 1073741824.0

/* Fixed part: the program, the libraries, the BLAS buffers. */
#define BASE_BYTES (16.0 * 1048576.0)

double cli_mem_rep_theorem(size_t d, size_t n)
{
    /* n = d = 256 .. 1024: about 16.5 n x n matrices of doubles (P, the
     * interval enclosures of log P and of the construction, the refinement) */
    double N = (double)n, D = (double)d;
    return BASE_BYTES + 8.0 * (14.0 * N * N + 4.0 * D * N);
}

int cli_memory_check(double need, int status, const char *fmt, ...)
{
    const char *src;
    double avail = ac_memory_available(&src);
    if (!(avail > 0) || need <= 0.9 * avail)
        return AC_OK;
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (status == AC_EUSAGE)
        return cli_usage("%s needs about %.3g GiB of memory (an estimate); only %.3g GiB are "
                         "available (%s); nothing was computed", what, need / GIB, avail / GIB,
                         src);
    return cli_fail(status, "%s needs about %.3g GiB of memory (an estimate); only %.3g GiB are "
                    "available (%s); nothing was computed", what, need / GIB, avail / GIB, src);
}
