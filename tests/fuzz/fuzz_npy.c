/* fuzz_npy.c — fuzz harness of the .npy reader (ac_npy_read): the input is
 * the file.  Built with libFuzzer when clang is available (make fuzz), and
 * always as a replay program over the seed corpus (fuzz_replay.c). */
#include <config.h>

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "attncheck/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz.npy", 0);
        if (fd < 0)
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        abort();
    ac_array a = {0};
    ac_err err;
    ac_err_clear(&err);
    if (ac_npy_read(path, &a, &err) == AC_OK) {
        /* a read array is consistent with its shape */
        size_t n = 1;
        for (size_t k = 0; k < a.ndim; k++)
            n *= a.shape[k];
        if (n != a.size || (a.size && !a.data))
            abort();
        volatile double s = 0;
        for (size_t i = 0; i < a.size; i++)
            s += a.data[i];
        (void)s;
    } else if (!err.msg[0]) {
        abort(); /* every failure has a message */
    }
    ac_array_free(&a);
    return 0;
}
