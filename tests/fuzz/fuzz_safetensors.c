/* fuzz_safetensors.c — fuzz harness of the safetensors reader (ac_st_open,
 * ac_st_read): the input is a whole .safetensors file.  Accepted files keep
 * the reader's invariants (every tensor inside the data buffer, its size
 * dtype bits x shape, found by name); refusals are file data (AC_EDATA) or
 * memory (AC_EINTERNAL), never anything else.  Built with libFuzzer when
 * clang is available (make fuzz), and always as a replay program over the
 * seed corpus (fuzz_replay.c). */
#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attncheck/models.h"
#include "fuzz_tmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_tmpdir("stfuzz");
    const char *path = fuzz_file("m.safetensors");
    fuzz_put(path, data, size);
    ac_st st;
    ac_err err;
    ac_err_clear(&err);
    int s = ac_st_open(&st, path, 0, &err);
    if (s != AC_OK) {
        if (s != AC_EDATA && s != AC_EINTERNAL)
            abort();
        if (!strstr(err.msg, path) || strchr(err.msg, '\n'))
            abort(); /* one line naming the file */
        return 0;
    }
    const ac_st_file *fl = &st.files[0];
    for (size_t i = 0; i < st.ntensors; i++) {
        const ac_st_tensor *t = &st.tensors[i];
        unsigned bits = ac_st_dtype_bits(t->dtype);
        if (t->end < t->begin || fl->data_start + t->end > fl->size ||
            (t->end - t->begin) * 8 != t->numel * bits || ac_st_find(&st, t->name) != t ||
            (i && strcmp(st.tensors[i - 1].name, t->name) >= 0))
            abort();
        double *out = malloc(t->numel * sizeof *out + 1);
        if (!out)
            abort();
        int r = ac_st_read(out, &st, t, &err);
        if (r != AC_OK && r != AC_EDATA)
            abort();
        free(out);
    }
    ac_st_close(&st);
    return 0;
}
