/* fuzz_ckconfig.c — fuzz harness of a checkpoint's configuration
 * (ac_train_config_read): the input is config.json of a checkpoint
 * directory; every value must be accepted within the ranges of the options
 * or refused as file data (AC_EDATA), never as a usage error.  Built with
 * libFuzzer when clang is available (make fuzz), and always as a replay
 * program over the seed corpus (fuzz_replay.c). */
#include <config.h>

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attncheck/train.h"
#include "fuzz_tmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *dir = fuzz_tmpdir("ckfuzz"), *path = fuzz_file("config.json");
    fuzz_put(path, data, size);
    ac_train_config c;
    size_t step = 0;
    ac_err err;
    ac_err_clear(&err);
    int st = ac_train_config_read(dir, &c, &step, &err);
    if (st == AC_OK) {
        /* accepted: within the ranges the options allow */
        if (c.model.width < 1 || c.model.width > 65536 || c.model.heads < 1 ||
            c.batch < 1 || c.batch > (1u << 20) || !(c.holdout >= 0 && c.holdout < 1) ||
            !(c.lr > 0) || !(c.eps > 0) || step > c.steps || c.warmup > c.steps)
            abort();
    } else if (st != AC_EDATA && st != AC_EINTERNAL) {
        abort(); /* a value in a file is file data: 65 */
    }
    return 0;
}
