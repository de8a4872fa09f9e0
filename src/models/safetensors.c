/* safetensors.c — reading safetensors checkpoints (attncheck/models.h):
 * single files, sharded indexes and directories, validated as the
 * reference reader (huggingface/safetensors, Metadata::validate) does, then
 * converted to double on demand (st_convert.c).
 *
 * The file: 8 bytes N (little-endian u64), N bytes of UTF-8 JSON
 *   {NAME: {"dtype": D, "shape": [..], "data_offsets": [b, e]}, ...,
 *    "__metadata__": {KEY: STRING, ...}}        (optional)
 * then the data buffer; tensor NAME is bytes [b, e) of the buffer, C order,
 * little-endian.  The offsets, sorted, must tile the buffer exactly.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/models_impl.h"

/* ---------------------------------------------------------------- dtypes */

static const struct {
    const char *name;
    unsigned bits;
} dtypes[AC_ST_NDTYPES] = {
    {"BOOL", 8},         {"F4", 4},           {"F6_E2M3", 6}, {"F6_E3M2", 6}, {"U8", 8},
    {"I8", 8},           {"F8_E5M2", 8},      {"F8_E4M3", 8}, {"F8_E8M0", 8}, {"F8_E4M3FNUZ", 8},
    {"F8_E5M2FNUZ", 8},  {"I16", 16},         {"U16", 16},    {"F16", 16},    {"BF16", 16},
    {"I32", 32},         {"U32", 32},         {"F32", 32},    {"C64", 64},    {"F64", 64},
    {"I64", 64},         {"U64", 64},
};

const char *ac_st_dtype_name(ac_st_dtype t)
{
    return (unsigned)t < AC_ST_NDTYPES ? dtypes[t].name : "?";
}

unsigned ac_st_dtype_bits(ac_st_dtype t)
{
    return (unsigned)t < AC_ST_NDTYPES ? dtypes[t].bits : 0;
}

int md_dtype_readable(ac_st_dtype t)
{
    return t == AC_ST_F64 || t == AC_ST_F32 || t == AC_ST_F16 || t == AC_ST_BF16;
}

/* ---------------------------------------------------------------- checks */

/* Offset of the first byte that breaks UTF-8 (RFC 3629: no overlong forms,
 * no surrogates, at most U+10FFFF), or len if the text is valid. */
size_t md_utf8_check(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        size_t k;
        unsigned lo = 0x80, hi = 0xBF;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            k = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            k = 2;
            if (c == 0xE0)
                lo = 0xA0;
            if (c == 0xED)
                hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            k = 3;
            if (c == 0xF0)
                lo = 0x90;
            if (c == 0xF4)
                hi = 0x8F;
        } else {
            return i;
        }
        if (len - i <= k)
            return i;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (size_t j = 2; j <= k; j++)
            if ((s[i + j] & 0xC0) != 0x80)
                return i;
        i += k + 1;
    }
    return len;
}

static int cmp_key(const void *a, const void *b)
{
    const ac_jv *x = *(const ac_jv *const *)a, *y = *(const ac_jv *const *)b;
    return strcmp(x->key, y->key);
}

const char *md_json_duplicate(const ac_jv *v)
{
    if (!v || (v->type != AC_JV_OBJECT && v->type != AC_JV_ARRAY))
        return NULL;
    for (size_t i = 0; i < v->n; i++) {
        const char *d = md_json_duplicate(v->kids[i]);
        if (d)
            return d;
    }
    if (v->type != AC_JV_OBJECT || v->n < 2)
        return NULL;
    const ac_jv **k = malloc(v->n * sizeof *k);
    if (!k) /* cannot sort: compare pairwise */
    {
        for (size_t i = 0; i < v->n; i++)
            for (size_t j = i + 1; j < v->n; j++)
                if (!strcmp(v->kids[i]->key, v->kids[j]->key))
                    return v->kids[i]->key;
        return NULL;
    }
    memcpy(k, v->kids, v->n * sizeof *k);
    qsort(k, v->n, sizeof *k, cmp_key);
    const char *d = NULL;
    for (size_t i = 1; i < v->n && !d; i++)
        if (!strcmp(k[i - 1]->key, k[i]->key))
            d = k[i]->key;
    free(k);
    return d;
}

int md_json_u64(const ac_jv *v, uint64_t *out)
{
    if (!v || v->type != AC_JV_NUMBER)
        return 0;
    const char *s = v->s;
    uint64_t x = 0;
    if (!*s)
        return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return 0;
        unsigned dgt = (unsigned)(*s - '0');
        if (x > (UINT64_MAX - dgt) / 10)
            return 0;
        x = 10 * x + dgt;
    }
    *out = x;
    return 1;
}

/* ---------------------------------------------------------------- storage */

struct md_st_store {
    char **names;     /* owned names, one per tensor */
    size_t **shapes;  /* owned shapes */
    size_t n;
};

static void store_free(struct md_st_store *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->names[i]);
        free(s->shapes[i]);
    }
    free(s->names);
    free(s->shapes);
    free(s);
}

void ac_st_close(ac_st *st)
{
    if (!st)
        return;
    for (size_t i = 0; i < st->nfiles; i++) {
        ac_st_file *f = &st->files[i];
        if (f->map && f->size)
            munmap((void *)f->map, f->size);
        free(f->path);
        for (size_t k = 0; k < f->nmeta; k++) {
            free(f->meta_key[k]);
            free(f->meta_val[k]);
        }
        free(f->meta_key);
        free(f->meta_val);
    }
    free(st->files);
    free(st->tensors);
    free(st->path);
    free(st->index);
    store_free(st->priv);
    memset(st, 0, sizeof *st);
}

/* Append tensor t (name and shape owned by the store) to st. */
static int add_tensor(ac_st *st, const char *name, ac_st_dtype dt, size_t ndim,
                      const size_t *shape, size_t numel, size_t file, size_t b, size_t e,
                      ac_err *err)
{
    struct md_st_store *s = st->priv;
    char **nn = realloc(s->names, (s->n + 1) * sizeof *nn);
    if (nn)
        s->names = nn;
    size_t **ns = realloc(s->shapes, (s->n + 1) * sizeof *ns);
    if (ns)
        s->shapes = ns;
    ac_st_tensor *nt = realloc(st->tensors, (st->ntensors + 1) * sizeof *nt);
    if (nt)
        st->tensors = nt;
    if (!nn || !ns || !nt)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    char *nm = strdup(name);
    size_t *sh = malloc((ndim ? ndim : 1) * sizeof *sh);
    if (!nm || !sh) {
        free(nm);
        free(sh);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    if (ndim)
        memcpy(sh, shape, ndim * sizeof *sh);
    s->names[s->n] = nm;
    s->shapes[s->n] = sh;
    s->n++;
    st->tensors[st->ntensors++] = (ac_st_tensor){nm, dt, ndim, ndim ? sh : NULL, numel, file, b, e};
    return AC_OK;
}

/* ---------------------------------------------------------------- one header */

void md_fmt_shape(char *buf, size_t size, const size_t *shape, size_t ndim)
{
    size_t k = (size_t)snprintf(buf, size, "[");
    for (size_t i = 0; i < ndim && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%zu", i ? ", " : "", shape[i]);
    if (k < size)
        snprintf(buf + k, size - k, "]");
}

typedef struct {
    size_t b, e, idx;
} span;

static int cmp_span(const void *x, const void *y)
{
    const span *a = x, *b = y;
    if (a->b != b->b)
        return a->b < b->b ? -1 : 1;
    if (a->e != b->e)
        return a->e < b->e ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* One tensor entry of a header. */
static int parse_entry(ac_st *st, const ac_jv *e, size_t file, const char *fname, ac_err *err)
{
    const char *name = e->key;
    if (e->type != AC_JV_OBJECT)
        return ac_err_set(err, AC_EDATA, "%s: tensor %s: not a JSON object", fname, name);
    const ac_jv *dt = NULL, *sh = NULL, *off = NULL;
    for (size_t i = 0; i < e->n; i++) {
        const ac_jv *k = e->kids[i];
        if (!strcmp(k->key, "dtype"))
            dt = k;
        else if (!strcmp(k->key, "shape"))
            sh = k;
        else if (!strcmp(k->key, "data_offsets"))
            off = k;
        else
            return ac_err_set(err, AC_EDATA, "%s: tensor %s: unknown field \"%s\"", fname, name,
                              k->key);
    }
    if (!dt || !sh || !off)
        return ac_err_set(err, AC_EDATA, "%s: tensor %s: missing \"%s\"", fname, name,
                          !dt ? "dtype" : !sh ? "shape" : "data_offsets");
    if (dt->type != AC_JV_STRING)
        return ac_err_set(err, AC_EDATA, "%s: tensor %s: \"dtype\" is not a string", fname,
                          name);
    int t = -1;
    for (int i = 0; i < AC_ST_NDTYPES; i++)
        if (!strcmp(dt->s, dtypes[i].name))
            t = i;
    if (t < 0)
        return ac_err_set(err, AC_EDATA, "%s: tensor %s: unknown dtype \"%.40s\"", fname, name,
                          dt->s);
    if (sh->type != AC_JV_ARRAY)
        return ac_err_set(err, AC_EDATA, "%s: tensor %s: \"shape\" is not an array", fname,
                          name);
    size_t nd = sh->n, numel = 1, *shape = malloc((nd ? nd : 1) * sizeof *shape);
    int ovf = 0;
    if (!shape)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (size_t i = 0; i < nd; i++) {
        uint64_t v;
        if (!md_json_u64(sh->kids[i], &v) || v > SIZE_MAX) {
            free(shape);
            return ac_err_set(err, AC_EDATA, "%s: tensor %s: \"shape\" entry %zu is not a "
                              "non-negative integer", fname, name, i);
        }
        shape[i] = (size_t)v;
        if (!ac_size_mul(numel, shape[i], &numel))
            ovf = 1;
    }
    uint64_t b, e2;
    if (off->type != AC_JV_ARRAY || off->n != 2 || !md_json_u64(off->kids[0], &b) ||
        !md_json_u64(off->kids[1], &e2) || b > SIZE_MAX || e2 > SIZE_MAX) {
        free(shape);
        return ac_err_set(err, AC_EDATA, "%s: tensor %s: \"data_offsets\" is not two "
                          "non-negative integers", fname, name);
    }
    char sb[200];
    size_t nbits;
    if (ovf || !ac_size_mul(numel, dtypes[t].bits, &nbits)) {
        md_fmt_shape(sb, sizeof sb, shape, nd);
        free(shape);
        return ac_err_set(err, AC_EDATA, "%s: tensor %s: the size of shape %s of %s overflows",
                          fname, name, sb, dtypes[t].name);
    }
    if (nbits % 8) {
        md_fmt_shape(sb, sizeof sb, shape, nd);
        free(shape);
        return ac_err_set(err, AC_EDATA, "%s: tensor %s: shape %s of %s is not a whole number "
                          "of bytes", fname, name, sb, dtypes[t].name);
    }
    if (e2 < b || e2 - b != nbits / 8) {
        md_fmt_shape(sb, sizeof sb, shape, nd);
        free(shape);
        if (e2 < b)
            return ac_err_set(err, AC_EDATA, "%s: tensor %s: data_offsets [%zu, %zu] end before "
                              "they begin", fname, name, (size_t)b, (size_t)e2);
        return ac_err_set(err, AC_EDATA, "%s: tensor %s: shape %s of %s is %zu bytes, "
                          "data_offsets [%zu, %zu] span %zu", fname, name, sb, dtypes[t].name,
                          nbits / 8, (size_t)b, (size_t)e2, (size_t)(e2 - b));
    }
    int st_ = add_tensor(st, name, (ac_st_dtype)t, nd, shape, numel, file, (size_t)b,
                         (size_t)e2, err);
    free(shape);
    return st_;
}

/* "__metadata__": an object of strings. */
static int parse_meta(ac_st_file *f, const ac_jv *m, const char *fname, ac_err *err)
{
    if (m->type != AC_JV_OBJECT)
        return ac_err_set(err, AC_EDATA, "%s: \"__metadata__\" is not an object of strings",
                          fname);
    f->meta_key = calloc(m->n + 1, sizeof *f->meta_key);
    f->meta_val = calloc(m->n + 1, sizeof *f->meta_val);
    if (!f->meta_key || !f->meta_val)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    for (size_t i = 0; i < m->n; i++) {
        if (m->kids[i]->type != AC_JV_STRING)
            return ac_err_set(err, AC_EDATA, "%s: \"__metadata__\": \"%s\" is not a string",
                              fname, m->kids[i]->key);
        f->meta_key[i] = strdup(m->kids[i]->key);
        f->meta_val[i] = strdup(m->kids[i]->s);
        f->nmeta = i + 1;
        if (!f->meta_key[i] || !f->meta_val[i])
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    return AC_OK;
}

int md_st_parse(ac_st *st, size_t file, const unsigned char *buf, size_t len, const char *fname,
                ac_err *err)
{
    ac_st_file *f = &st->files[file];
    if (len < 8)
        return ac_err_set(err, AC_EDATA, "%s: %zu bytes: too short for a safetensors file (an "
                          "8-byte header length first)", fname, len);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | buf[i];
    if (n > AC_ST_MAX_HEADER)
        return ac_err_set(err, AC_EDATA, "%s: header length %llu exceeds the limit of %u bytes",
                          fname, (unsigned long long)n, AC_ST_MAX_HEADER);
    if (n > len - 8)
        return ac_err_set(err, AC_EDATA, "%s: header length %llu runs past the end of the file "
                          "(%zu bytes): truncated?", fname, (unsigned long long)n, len);
    const unsigned char *h = buf + 8;
    size_t bad = md_utf8_check(h, (size_t)n);
    if (bad < n)
        return ac_err_set(err, AC_EDATA, "%s: header is not valid UTF-8 (byte %zu of the header)",
                          fname, bad);
    char jname[PATH_MAX + 16];
    snprintf(jname, sizeof jname, "%s: header", fname);
    ac_jv *root = NULL;
    int s = ac_jparse(&root, (const char *)h, (size_t)n, jname, err);
    if (s)
        return s;
    size_t first = st->ntensors;
    span *sp = NULL;
    const char *dup;
    if (root->type != AC_JV_OBJECT) {
        s = ac_err_set(err, AC_EDATA, "%s: header is not a JSON object", fname);
        goto out;
    }
    if ((dup = md_json_duplicate(root))) {
        s = ac_err_set(err, AC_EDATA, "%s: header: duplicate key \"%.200s\"", fname, dup);
        goto out;
    }
    for (size_t i = 0; i < root->n; i++) {
        const ac_jv *e = root->kids[i];
        s = !strcmp(e->key, "__metadata__") ? parse_meta(f, e, fname, err)
                                            : parse_entry(st, e, file, fname, err);
        if (s)
            goto out;
    }
    /* the offsets tile the data buffer (Metadata::validate) */
    size_t nt = st->ntensors - first, pos = 0;
    sp = malloc((nt ? nt : 1) * sizeof *sp);
    if (!sp) {
        s = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < nt; i++)
        sp[i] = (span){st->tensors[first + i].begin, st->tensors[first + i].end, first + i};
    qsort(sp, nt, sizeof *sp, cmp_span);
    for (size_t i = 0; i < nt; i++) {
        const ac_st_tensor *t = &st->tensors[sp[i].idx];
        if (sp[i].b != pos) {
            if (i == 0)
                s = ac_err_set(err, AC_EDATA, "%s: tensor %s: data_offsets start at %zu: the "
                               "first tensor must start at 0", fname, t->name, sp[i].b);
            else
                s = ac_err_set(err, AC_EDATA, "%s: tensor %s: data_offsets [%zu, %zu] %s "
                               "tensor %s [%zu, %zu]", fname, t->name, sp[i].b, sp[i].e,
                               sp[i].b < pos ? "overlap" : "leave a gap after",
                               st->tensors[sp[i - 1].idx].name, sp[i - 1].b, sp[i - 1].e);
            goto out;
        }
        pos = sp[i].e;
    }
    if (pos != len - 8 - (size_t)n) {
        s = ac_err_set(err, AC_EDATA, "%s: the tensors cover %zu bytes of data, the file has "
                       "%zu after the header", fname, pos, len - 8 - (size_t)n);
        goto out;
    }
    f->data_start = 8 + (size_t)n;
out:
    free(sp);
    ac_jv_free(root);
    return s;
}

/* ---------------------------------------------------------------- files */

static int cmp_tensor(const void *a, const void *b)
{
    return strcmp(((const ac_st_tensor *)a)->name, ((const ac_st_tensor *)b)->name);
}

/* Map PATH as file `file` of st and parse its header.  index != NULL: PATH
 * is the shard `shard` that index names, and a missing file is AC_EDATA
 * (the checkpoint is incomplete). */
static int map_file(ac_st *st, size_t file, const char *path, const char *index,
                    const char *shard, ac_err *err)
{
    ac_st_file *f = &st->files[file];
    if (!(f->path = strdup(path)))
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (index && e == ENOENT)
            return ac_err_set(err, AC_EDATA, "%s: names shard %s, which does not exist", index,
                              shard);
        return ac_err_set(err, AC_ENOINPUT, "%s: cannot open: %s", path, strerror(e));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return ac_err_set(err, AC_ENOINPUT, "%s: cannot open: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return ac_err_set(err, AC_ENOINPUT, "%s: %s", path, S_ISDIR(sb.st_mode)
                          ? "cannot open: Is a directory" : "not a regular file");
    }
    size_t size = (size_t)sb.st_size;
    if (size) {
        void *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int e = errno;
            close(fd);
            return ac_err_set(err, e == ENOMEM ? AC_EINTERNAL : AC_ENOINPUT,
                              "%s: cannot map: %s", path, strerror(e));
        }
        f->map = m;
        f->size = size;
    }
    close(fd);
    return md_st_parse(st, file, f->map, f->size, path, err);
}

static int st_begin(ac_st *st, const char *path, size_t nfiles, ac_err *err)
{
    memset(st, 0, sizeof *st);
    st->path = strdup(path);
    st->priv = calloc(1, sizeof(struct md_st_store));
    st->files = calloc(nfiles ? nfiles : 1, sizeof *st->files);
    st->nfiles = nfiles;
    if (!st->path || !st->priv || !st->files)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    return AC_OK;
}

/* Sort the tensors by name; two of a name are an error. */
static int st_finish(ac_st *st, ac_err *err)
{
    if (st->ntensors > 1)
        qsort(st->tensors, st->ntensors, sizeof *st->tensors, cmp_tensor);
    for (size_t i = 1; i < st->ntensors; i++)
        if (!strcmp(st->tensors[i - 1].name, st->tensors[i].name))
            return ac_err_set(err, AC_EDATA, "%s: tensor %s is in two shards: %s and %s",
                              st->index ? st->index : st->path, st->tensors[i].name,
                              st->files[st->tensors[i - 1].file].path,
                              st->files[st->tensors[i].file].path);
    return AC_OK;
}

static int open_single(ac_st *st, const char *path, ac_err *err)
{
    int s = st_begin(st, path, 1, err);
    if (!s)
        s = map_file(st, 0, path, NULL, NULL, err);
    if (!s)
        s = st_finish(st, err);
    return s;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A shard's name: a file name in the index's directory. */
static int shard_name_ok(const char *s)
{
    return *s && strcmp(s, ".") && strcmp(s, "..") && !strchr(s, '/');
}

static int open_index(ac_st *st, const char *path, ac_err *err)
{
    ac_jv *root = NULL;
    char **shards = NULL;
    size_t nsh = 0;
    int s = ac_jparse_file(&root, path, err);
    if (s)
        return s;
    const ac_jv *wm = ac_jv_get(root, "weight_map");
    const char *dup;
    if (root->type != AC_JV_OBJECT || !wm || wm->type != AC_JV_OBJECT) {
        s = ac_err_set(err, AC_EDATA, "%s: not a safetensors index (no \"weight_map\" object)",
                       path);
        goto out;
    }
    if ((dup = md_json_duplicate(root))) {
        s = ac_err_set(err, AC_EDATA, "%s: duplicate key \"%.200s\"", path, dup);
        goto out;
    }
    shards = calloc(wm->n + 1, sizeof *shards);
    if (!shards) {
        s = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < wm->n; i++) {
        const ac_jv *e = wm->kids[i];
        if (e->type != AC_JV_STRING || !shard_name_ok(e->s)) {
            s = ac_err_set(err, AC_EDATA, "%s: \"weight_map\": tensor %s: the shard must be a "
                           "file name in the index's directory", path, e->key);
            goto out;
        }
        size_t k = 0;
        while (k < nsh && strcmp(shards[k], e->s))
            k++;
        if (k == nsh)
            shards[nsh++] = e->s;
    }
    qsort(shards, nsh, sizeof *shards, cmp_str);
    if ((s = st_begin(st, path, nsh, err)))
        goto out;
    if (!(st->index = strdup(path))) {
        s = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto out;
    }
    /* the shards are in the index's directory */
    const char *slash = strrchr(path, '/');
    size_t dlen = slash ? (size_t)(slash - path) + 1 : 0;
    for (size_t k = 0; k < nsh; k++) {
        char p[PATH_MAX];
        if (dlen + strlen(shards[k]) >= sizeof p) {
            s = ac_err_set(err, AC_EDATA, "%s: shard %s: path too long", path, shards[k]);
            goto out;
        }
        memcpy(p, path, dlen);
        strcpy(p + dlen, shards[k]);
        if ((s = map_file(st, k, p, path, shards[k], err)))
            goto out;
    }
    if ((s = st_finish(st, err)))
        goto out;
    /* the index and the shards agree, tensor by tensor */
    for (size_t i = 0; i < wm->n; i++) {
        const ac_jv *e = wm->kids[i];
        const ac_st_tensor *t = ac_st_find(st, e->key);
        if (!t || strcmp(st->files[t->file].path + dlen, e->s)) {
            s = ac_err_set(err, AC_EDATA, "%s: tensor %s is not in shard %s%s%s", path, e->key,
                           e->s, t ? ", it is in " : "", t ? st->files[t->file].path + dlen : "");
            goto out;
        }
    }
    if (st->ntensors != wm->n) {
        for (size_t i = 0; i < st->ntensors; i++)
            if (!ac_jv_get(wm, st->tensors[i].name)) {
                s = ac_err_set(err, AC_EDATA, "%s: shard %s holds tensor %s, which the index "
                               "does not list", path, st->files[st->tensors[i].file].path + dlen,
                               st->tensors[i].name);
                goto out;
            }
    }
out:
    free(shards);
    ac_jv_free(root);
    return s;
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

int ac_st_open(ac_st *st, const char *path, int flags, ac_err *err)
{
    struct stat sb;
    int s;
    memset(st, 0, sizeof *st);
    if (stat(path, &sb) != 0)
        return ac_err_set(err, AC_ENOINPUT, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) {
        char p[PATH_MAX];
        if ((size_t)snprintf(p, sizeof p, "%s/model.safetensors", path) >= sizeof p)
            return ac_err_set(err, AC_ENOINPUT, "%s: path too long", path);
        if (stat(p, &sb) == 0) {
            s = open_single(st, p, err);
        } else {
            snprintf(p, sizeof p, "%s/model.safetensors.index.json", path);
            if (stat(p, &sb) != 0)
                return ac_err_set(err, AC_ENOINPUT, "%s: no model.safetensors or "
                                  "model.safetensors.index.json", path);
            s = open_index(st, p, err);
        }
    } else if (ends_with(path, ".json")) {
        s = open_index(st, path, err);
    } else {
        s = open_single(st, path, err);
    }
    if (!s && (flags & AC_ST_SHA256))
        ac_st_checksum(st);
    if (s)
        ac_st_close(st);
    return s;
}

const ac_st_tensor *ac_st_find(const ac_st *st, const char *name)
{
    size_t lo = 0, hi = st->ntensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(st->tensors[mid].name, name);
        if (!c)
            return &st->tensors[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

void ac_st_checksum(ac_st *st)
{
    for (size_t i = 0; i < st->nfiles; i++) {
        ac_st_file *f = &st->files[i];
        if (f->have_sha256)
            continue;
        if (f->size)
            madvise((void *)f->map, f->size, MADV_SEQUENTIAL);
        md_sha256(f->sha256, f->map, f->size);
        f->have_sha256 = 1;
    }
}

/* ---------------------------------------------------------------- reading */

/* "(i, j, k)" of flat index k in C order. */
static void fmt_index(char *buf, size_t size, size_t k, const size_t *shape, size_t ndim)
{
    size_t idx[64], nd = ndim < 64 ? ndim : 64;
    for (size_t i = nd; i-- > 0;) {
        idx[i] = shape[i] ? k % shape[i] : 0;
        k = shape[i] ? k / shape[i] : 0;
    }
    size_t p = (size_t)snprintf(buf, size, "(");
    for (size_t i = 0; i < nd && p < size; i++)
        p += (size_t)snprintf(buf + p, size - p, "%s%zu", i ? ", " : "", idx[i]);
    if (p < size)
        snprintf(buf + p, size - p, nd == 1 ? ",)" : ")");
}

static int check_readable(const ac_st *st, const ac_st_tensor *t, ac_err *err)
{
    if (!md_dtype_readable(t->dtype))
        return ac_err_set(err, AC_EDATA, "%s: tensor %s: dtype %s is not read (quantised and "
                          "integer tensors are not converted; F64, F32, F16 and BF16 are)",
                          st->files[t->file].path, t->name, ac_st_dtype_name(t->dtype));
    return AC_OK;
}

/* Convert n elements at element offset `first` of t into out. */
static int convert(double *out, const ac_st *st, const ac_st_tensor *t, size_t first, size_t n,
                   ac_err *err)
{
    const ac_st_file *f = &st->files[t->file];
    size_t bytes = ac_st_dtype_bits(t->dtype) / 8;
    const unsigned char *p = f->map + f->data_start + t->begin + first * bytes;
    if (md_convert(out, p, n, t->dtype) == 0)
        return AC_OK;
    int kind;
    size_t k = first + md_first_nonfinite(p, n, t->dtype, &kind);
    char ib[256];
    fmt_index(ib, sizeof ib, k, t->shape, t->ndim);
    return ac_err_set(err, AC_EDATA, "%s: tensor %s: entry %s is %s", f->path, t->name, ib,
                      kind == 1 ? "NaN" : kind == 2 ? "+Inf" : "-Inf");
}

int ac_st_read(double *out, const ac_st *st, const ac_st_tensor *t, ac_err *err)
{
    int s = check_readable(st, t, err);
    if (s)
        return s;
    return convert(out, st, t, 0, t->numel, err);
}

int ac_st_read_rows(double *out, const ac_st *st, const ac_st_tensor *t, const size_t *rows,
                    size_t nrows, ac_err *err)
{
    int s = check_readable(st, t, err);
    if (s)
        return s;
    if (t->ndim == 0 || t->shape[0] == 0)
        return ac_err_set(err, AC_EUSAGE, "%s: tensor %s has no rows", st->files[t->file].path,
                          t->name);
    size_t w = t->numel / t->shape[0];
    for (size_t i = 0; i < nrows; i++) {
        if (rows[i] >= t->shape[0])
            return ac_err_set(err, AC_EUSAGE, "%s: tensor %s: row %zu out of range [0, %zu)",
                              st->files[t->file].path, t->name, rows[i], t->shape[0]);
        if ((s = convert(out + i * w, st, t, rows[i] * w, w, err)))
            return s;
    }
    return AC_OK;
}
