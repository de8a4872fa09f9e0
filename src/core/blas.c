/* blas.c — OpenBLAS core detection and threads (attncheck/blas.h). */
#include <config.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cblas.h>

#include "attncheck/blas.h"

#ifdef HAVE_OPENBLAS
/* declared in OpenBLAS's cblas.h, repeated for other header layouts */
char *openblas_get_corename(void);
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
#endif

const char *ac_blas_corename(void)
{
#ifdef HAVE_OPENBLAS
    const char *s = openblas_get_corename();
    return s ? s : "unknown";
#else
    return "generic";
#endif
}

/* Cores that OpenBLAS falls back to when it does not recognise a CPU. */
static const char *const generic_cores[] = {
    "Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Katmai", "Coppermine",
    "Northwood", "Banias", "Opteron", "Opteron(SSE3)", "Barcelona", "Bobcat", "Unknown",
    "generic", NULL};

const char *ac_blas_better_core(const char *corename, int has_avx512, int has_avx2, int has_avx)
{
    int generic = 0;
    if (!corename)
        return NULL;
    for (const char *const *g = generic_cores; *g; g++)
        if (strcasecmp(corename, *g) == 0)
            generic = 1;
    if (!generic)
        return NULL;
    if (has_avx512)
        return "SkylakeX";
    if (has_avx2)
        return "Haswell";
    if (has_avx)
        return "Sandybridge";
    return NULL;
}

int ac_blas_fix_core(char **argv)
{
#if defined(HAVE_OPENBLAS) && defined(__x86_64__)
    if (getenv("OPENBLAS_CORETYPE") || getenv("ATTNCHECK_NO_BLAS_FIX") ||
        getenv("ATTNCHECK_BLAS_REEXEC"))
        return 0;
    __builtin_cpu_init();
    /* test hook: pretend OpenBLAS chose this core (see attncheck(1)) */
    const char *core = getenv("ATTNCHECK_BLAS_TEST_CORENAME");
    const char *better = ac_blas_better_core(core ? core : ac_blas_corename(),
                                             __builtin_cpu_supports("avx512f") &&
                                                 __builtin_cpu_supports("avx512vl"),
                                             __builtin_cpu_supports("avx2") &&
                                                 __builtin_cpu_supports("fma"),
                                             __builtin_cpu_supports("avx"));
    if (!better)
        return 0;
    setenv("OPENBLAS_CORETYPE", better, 1);
    setenv("ATTNCHECK_BLAS_REEXEC", "1", 1); /* never loop */
    execv("/proc/self/exe", argv);
    return 0; /* exec failed: continue with the slow kernels */
#else
    (void)argv;
    return 0;
#endif
}

void ac_blas_set_threads(int n)
{
#ifdef HAVE_OPENBLAS
    if (n > 0)
        openblas_set_num_threads(n);
#else
    (void)n;
#endif
}

int ac_blas_get_threads(void)
{
#ifdef HAVE_OPENBLAS
    return openblas_get_num_threads();
#else
    return 1;
#endif
}
