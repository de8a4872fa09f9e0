/* fuzz_json.c — fuzz harness of the JSON reader (ac_jparse): the input is
 * the text.  Built with libFuzzer when clang is available (make fuzz), and
 * always as a replay program over the seed corpus (fuzz_replay.c). */
#include <config.h>

#include <stdint.h>
#include <stdlib.h>

#include "io/jsonparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Walk the tree, touching every node's getters. */
static void walk(const ac_jv *v, int depth)
{
    if (!v || depth > 10000)
        abort();
    ac_err err;
    double d;
    size_t z;
    const char *s;
    int b;
    ac_err_clear(&err);
    if (v->type == AC_JV_OBJECT) {
        for (size_t i = 0; i < v->n; i++) {
            const char *k = v->kids[i]->key ? v->kids[i]->key : "";
            (void)ac_jv_get(v, k);
            (void)ac_jv_get_double(v, k, &d, "fuzz", &err);
            (void)ac_jv_get_size(v, k, &z, "fuzz", &err);
            (void)ac_jv_get_string(v, k, &s, "fuzz", &err);
            (void)ac_jv_get_bool(v, k, &b, "fuzz", &err);
        }
    }
    if (v->type == AC_JV_OBJECT || v->type == AC_JV_ARRAY)
        for (size_t i = 0; i < v->n; i++)
            walk(v->kids[i], depth + 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ac_jv *root = NULL;
    ac_err err;
    ac_err_clear(&err);
    if (ac_jparse(&root, (const char *)data, size, "fuzz", &err) == AC_OK)
        walk(root, 0);
    else if (!err.msg[0])
        abort();
    ac_jv_free(root);
    return 0;
}
