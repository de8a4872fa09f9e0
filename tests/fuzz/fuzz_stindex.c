/* fuzz_stindex.c — fuzz harness of the sharded-checkpoint index
 * (model.safetensors.index.json, ac_st_open): the input is the index; the
 * directory holds two valid shards a.safetensors (tensor "x") and
 * b.safetensors (tensor "y").  Accepted indexes list exactly the tensors of
 * the shards they name, each in its shard; refusals are file data
 * (AC_EDATA) or memory, never anything else.  Built with libFuzzer when
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

static void shard(const char *p, const char *name, float v)
{
    char h[128];
    int n = snprintf(h, sizeof h, "{\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
                     name);
    unsigned char len[8] = {(unsigned char)n};
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(len, 1, 8, f) != 8 || fwrite(h, 1, (size_t)n, f) != (size_t)n ||
        fwrite(&v, 1, 4, f) != 4 || fclose(f) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!fuzz_dir[0]) {
        fuzz_tmpdir("ixfuzz");
        shard(fuzz_file("a.safetensors"), "x", 1.0f);
        shard(fuzz_file("b.safetensors"), "y", 2.0f);
    }
    const char *path = fuzz_file("model.safetensors.index.json");
    fuzz_put(path, data, size);
    ac_st st;
    ac_err err;
    ac_err_clear(&err);
    int s = ac_st_open(&st, path, 0, &err);
    if (s != AC_OK) {
        if (s != AC_EDATA && s != AC_EINTERNAL)
            abort();
        if (strchr(err.msg, '\n'))
            abort();
        return 0;
    }
    /* x only in a, y only in b; nothing else */
    for (size_t i = 0; i < st.ntensors; i++) {
        const ac_st_tensor *t = &st.tensors[i];
        const char *file = strrchr(st.files[t->file].path, '/') + 1;
        if (!((!strcmp(t->name, "x") && !strcmp(file, "a.safetensors")) ||
              (!strcmp(t->name, "y") && !strcmp(file, "b.safetensors"))))
            abort();
        double v;
        if (ac_st_read(&v, &st, t, &err) != AC_OK || v != (t->name[0] == 'x' ? 1.0 : 2.0))
            abort();
    }
    ac_st_close(&st);
    return 0;
}
