/* npz.c — one array of a NumPy .npz archive (np.savez, np.savez_compressed).
 *
 * An .npz file is a zip archive whose members are .npy files named after
 * the arrays ("X.npy" for np.savez(f, X=...)).  This reader finds a member
 * through the central directory (the end-of-central-directory record at the
 * end of the file, and its ZIP64 form, which NumPy writes for large
 * archives), reads the member's local header and data, inflates it when it
 * is deflated (method 8, savez_compressed) or takes it as stored (method 0,
 * savez), checks its CRC-32 and size, and hands the bytes to the .npy
 * parser.  Encrypted members, other compression methods and multi-disk
 * archives are refused with AC_EDATA.  Format: PKWARE APPNOTE.TXT 6.3,
 * sections 4.3 (structure), 4.3.9 (data descriptor) and 4.5.3 (ZIP64
 * extra field).
 *
 * An archive that two readers could read differently is refused
 * (AC_EDATA "ambiguous archive", naming the member): NumPy's np.load
 * (Python's zipfile) goes by the central directory and keeps the last of
 * two entries of one name, other readers take the first, or walk the local
 * headers from the start of the file.  So every member is checked, not only
 * the one read: no name twice in the central directory; each local header
 * carries the name, method and (without a data descriptor) the CRC-32 and
 * sizes of its central entry, and a data descriptor the CRC-32 and sizes;
 * and the members, the central directory and its end records tile the
 * file exactly: the first member at offset 0, each next one where the
 * previous one's data (and descriptor) ends, the central directory right
 * after the last, its entries filling it, the end records after it and the
 * end-of-central-directory comment reaching the end of the file.  Nothing
 * overlaps and no byte lies outside what the central directory describes. */
#include <config.h>

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "io/npy_impl.h"

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD 0x06054b50u
#define SIG_EOCD64 0x06064b50u
#define SIG_LOC64 0x07064b50u
#define SIG_DESC 0x08074b50u
#define EOCD_MIN 22
#define EOCD_SEARCH (65535 + EOCD_MIN) /* the comment is at most 65535 bytes */

static uint32_t get16(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t get32(const unsigned char *p)
{
    return get16(p) | get16(p + 2) << 16;
}

static uint64_t get64(const unsigned char *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

typedef struct {
    const char *disp; /* "file.npz:X" for messages */
    FILE *fp;
    uint64_t fsize;
    ac_err *err;
} zfile;

static int bad(zfile *z, const char *what)
{
    return ac_err_set(z->err, AC_EDATA, "%s: not a readable .npz archive: %s", z->disp, what);
}

/* An archive two readers could read differently; name is the member
 * concerned (its name as stored, at most 200 bytes quoted). */
static int ambiguous(zfile *z, const unsigned char *name, size_t nlen, const char *what)
{
    char q[201];
    size_t k = 0;
    for (; k < nlen && k < 200; k++)
        q[k] = (name[k] >= 0x20 && name[k] < 0x7f) ? (char)name[k] : '?';
    q[k] = '\0';
    return ac_err_set(z->err, AC_EDATA, "%s: ambiguous archive: member '%s'%s: %s", z->disp, q,
                      nlen > 200 ? "..." : "", what);
}

/* Read n bytes at offset off; AC_EDATA if the file is shorter. */
static int read_at(zfile *z, uint64_t off, void *buf, size_t n)
{
    if (off > z->fsize || n > z->fsize - off)
        return bad(z, "a record lies beyond the end of the file");
    if (fseeko(z->fp, (off_t)off, SEEK_SET) != 0 || fread(buf, 1, n, z->fp) != n)
        return ac_err_set(z->err, AC_ENOINPUT, "%s: read error: %s", z->disp,
                          strerror(errno ? errno : EIO));
    return AC_OK;
}

/* The central directory and the end records behind it (APPNOTE 4.3.14-16):
 * the end-of-central-directory record is the last one in the file (its
 * comment reaches the end of the file, checked here), preceded by the ZIP64
 * locator and end record when the file has them; a 32-bit field that is not
 * the ZIP64 sentinel must agree with its ZIP64 twin. */
typedef struct {
    uint64_t cd_off, cd_size, count;
    uint64_t end_start; /* first byte of the end records (ZIP64 end record or EOCD) */
} zdir;

static int find_central(zfile *z, zdir *d)
{
    size_t tail = z->fsize < EOCD_SEARCH ? (size_t)z->fsize : EOCD_SEARCH;
    if (tail < EOCD_MIN)
        return bad(z, "too short for a zip archive");
    unsigned char *buf = malloc(tail);
    if (!buf)
        return ac_err_set(z->err, AC_EINTERNAL, "%s: out of memory", z->disp);
    int st = read_at(z, z->fsize - tail, buf, tail);
    long at = -1;
    for (long i = (long)tail - EOCD_MIN; st == AC_OK && i >= 0; i--)
        if (get32(buf + i) == SIG_EOCD) {
            at = i;
            break;
        }
    if (st == AC_OK && at < 0)
        st = bad(z, "no end-of-central-directory record");
    if (st) {
        free(buf);
        return st;
    }
    const unsigned char *e = buf + at;
    uint64_t eocd_pos = z->fsize - tail + (uint64_t)at;
    int disks = get16(e + 4) != 0 || get16(e + 6) != 0 || get16(e + 8) != get16(e + 10);
    uint64_t count = get16(e + 10), cd_size = get32(e + 12), cd_off = get32(e + 16);
    uint64_t ends = eocd_pos + EOCD_MIN + get16(e + 20);
    free(buf);
    if (disks)
        return bad(z, "multi-disk archives are not supported");
    if (ends != z->fsize)
        return bad(z, "bytes after the end-of-central-directory record and its comment");
    d->count = count;
    d->cd_size = cd_size;
    d->cd_off = cd_off;
    d->end_start = eocd_pos;
    unsigned char loc[20], e64[56];
    int sentinel = count == 0xffff || cd_size == 0xffffffffu || cd_off == 0xffffffffu;
    if (eocd_pos < 20 || (st = read_at(z, eocd_pos - 20, loc, 20)) || get32(loc) != SIG_LOC64)
        return st ? st : sentinel ? bad(z, "ZIP64 locator missing") : AC_OK;
    uint64_t e64_off = get64(loc + 8);
    if ((st = read_at(z, e64_off, e64, 56)))
        return st;
    if (get32(e64) != SIG_EOCD64)
        return bad(z, "bad ZIP64 end record");
    if (get32(loc + 4) != 0 || get32(loc + 16) > 1 || get32(e64 + 16) != 0 ||
        get32(e64 + 20) != 0 || get64(e64 + 24) != get64(e64 + 32))
        return bad(z, "multi-disk archives are not supported");
    uint64_t z64[3] = {get64(e64 + 32), get64(e64 + 40), get64(e64 + 48)};
    uint64_t *f[3] = {&d->count, &d->cd_size, &d->cd_off};
    const uint64_t sent[3] = {0xffff, 0xffffffffu, 0xffffffffu};
    for (int k = 0; k < 3; k++) {
        if (*f[k] != sent[k] && *f[k] != z64[k])
            return bad(z, "the end record and the ZIP64 end record disagree");
        *f[k] = z64[k];
    }
    /* the ZIP64 end record (12 + its size field) runs up to the locator */
    uint64_t rec = get64(e64 + 4);
    if (rec < 44 || rec > z->fsize || e64_off > eocd_pos - 20 || eocd_pos - 20 - e64_off != 12 + rec)
        return bad(z, "the ZIP64 end record does not end at its locator");
    d->end_start = e64_off;
    return AC_OK;
}

typedef struct {
    uint32_t method, crc, flags;
    uint64_t csize, usize, local;
    const unsigned char *name; /* into the central directory */
    size_t nlen;
    uint64_t end;              /* end of the member: data and data descriptor */
} zentry;

/* Sizes and offset from the ZIP64 extra field where the 32-bit ones are
 * 0xffffffff (APPNOTE 4.5.3: only those fields, in this order). */
static int zip64_extra(zfile *z, const unsigned char *x, size_t xlen, zentry *m)
{
    size_t i = 0;
    while (i + 4 <= xlen) {
        uint32_t id = get16(x + i), len = get16(x + i + 2);
        if (i + 4 + len > xlen)
            return bad(z, "an extra field overruns its entry");
        if (id == 1) {
            const unsigned char *q = x + i + 4, *end = q + len;
            uint64_t *f[3] = {&m->usize, &m->csize, &m->local};
            for (int k = 0; k < 3; k++)
                if (*f[k] == 0xffffffffu) {
                    if (q + 8 > end)
                        return bad(z, "short ZIP64 extra field");
                    *f[k] = get64(q);
                    q += 8;
                }
            return AC_OK;
        }
        i += 4 + len;
    }
    if (m->usize == 0xffffffffu || m->csize == 0xffffffffu || m->local == 0xffffffffu)
        return bad(z, "ZIP64 sizes without a ZIP64 extra field");
    return AC_OK;
}

static int cmp_name(const void *pa, const void *pb)
{
    const zentry *a = *(const zentry *const *)pa, *b = *(const zentry *const *)pb;
    size_t n = a->nlen < b->nlen ? a->nlen : b->nlen;
    int c = memcmp(a->name, b->name, n);
    return c ? c : (a->nlen > b->nlen) - (a->nlen < b->nlen);
}

static int cmp_local(const void *pa, const void *pb)
{
    const zentry *a = *(const zentry *const *)pa, *b = *(const zentry *const *)pb;
    return (a->local > b->local) - (a->local < b->local);
}

/* The local header of m (and its data descriptor) against the central
 * entry; sets m->end. */
static int check_local(zfile *z, zentry *m)
{
    unsigned char lh[30], *nx = NULL;
    int st = read_at(z, m->local, lh, 30);
    if (st)
        return st;
    if (get32(lh) != SIG_LOCAL)
        return ambiguous(z, m->name, m->nlen, "no local header where the central directory puts it");
    size_t nl = get16(lh + 26), xl = get16(lh + 28);
    if (!(nx = malloc(nl + xl + 1)))
        return ac_err_set(z->err, AC_EINTERNAL, "%s: out of memory", z->disp);
    if ((st = read_at(z, m->local + 30, nx, nl + xl))) {
        free(nx);
        return st;
    }
    uint32_t flags = get16(lh + 6), crc = get32(lh + 14);
    uint64_t cs = get32(lh + 18), us = get32(lh + 22);
    int z64 = 0;
    const char *why = NULL;
    if (nl != m->nlen || memcmp(nx, m->name, nl) != 0)
        why = "the local header names another member than the central directory";
    else if (get16(lh + 8) != m->method || (flags & 9) != (m->flags & 9))
        why = "the local header's method or flags differ from the central directory's";
    /* the local ZIP64 extra field holds both sizes (APPNOTE 4.5.3) */
    for (size_t i = 0; !why && i + 4 <= xl;) {
        size_t id = get16(nx + nl + i), len = get16(nx + nl + i + 2);
        if (i + 4 + len > xl) {
            why = "an extra field overruns its local header";
        } else if (id == 1) {
            if (len < 16)
                why = "a short ZIP64 extra field in the local header";
            else if (get64(nx + nl + i + 4) != m->usize || get64(nx + nl + i + 12) != m->csize)
                why = "the local ZIP64 sizes differ from the central directory's";
            z64 = 1;
            if (us == 0xffffffffu)
                us = m->usize;
            if (cs == 0xffffffffu)
                cs = m->csize;
        }
        i += 4 + len;
    }
    free(nx);
    if (why)
        return ambiguous(z, m->name, m->nlen, why);
    uint64_t data = m->local + 30 + nl + xl;
    if (m->csize > z->fsize || data > z->fsize - m->csize)
        return bad(z, "a member's data lie beyond the end of the file");
    m->end = data + m->csize;
    int desc = (flags & 8) != 0;
    if (!desc ? crc != m->crc || cs != m->csize || us != m->usize
              : (crc || cs || us) && (crc != m->crc || cs != m->csize || us != m->usize))
        return ambiguous(z, m->name, m->nlen,
                         "the local header's CRC-32 or sizes differ from the central directory's");
    if (desc) {
        /* data descriptor (APPNOTE 4.3.9): [signature] crc, csize, usize;
         * sizes of 8 bytes when the local header has a ZIP64 extra field */
        unsigned char dd[24];
        size_t w = z64 ? 8 : 4, len = 4 + 2 * w;
        if ((st = read_at(z, m->end, dd, 4)))
            return st;
        size_t sig = get32(dd) == SIG_DESC ? 4 : 0;
        if ((st = read_at(z, m->end, dd, sig + len)))
            return st;
        const unsigned char *q = dd + sig;
        uint64_t dc = w == 8 ? get64(q + 4) : get32(q + 4), du = w == 8 ? get64(q + 4 + w)
                                                                          : get32(q + 4 + w);
        if (get32(q) != m->crc || dc != m->csize || du != m->usize)
            return ambiguous(z, m->name, m->nlen,
                             "its data descriptor differs from the central directory");
        m->end += sig + len;
    }
    return AC_OK;
}

/* Every entry of the central directory and every member behind it (see the
 * head of this file); *m receives the member called want (AC_ENOINPUT if
 * there is none). */
static int scan_archive(zfile *z, const char *want, zentry *m)
{
    zdir d;
    int st = find_central(z, &d);
    if (st)
        return st;
    if (d.cd_size > z->fsize || d.cd_off > z->fsize - d.cd_size)
        return bad(z, "the central directory lies beyond the end of the file");
    if (d.count > d.cd_size / 46)
        return bad(z, "more entries than the central directory can hold");
    unsigned char *cd = malloc(d.cd_size ? (size_t)d.cd_size : 1);
    zentry *e = calloc(d.count ? (size_t)d.count : 1, sizeof *e);
    zentry **ix = calloc(d.count ? (size_t)d.count : 1, sizeof *ix);
    if (!cd || !e || !ix) {
        free(cd);
        free(e);
        free(ix);
        return ac_err_set(z->err, AC_EINTERNAL, "%s: out of memory", z->disp);
    }
    st = read_at(z, d.cd_off, cd, (size_t)d.cd_size);
    size_t i = 0, n = (size_t)d.count, wlen = strlen(want);
    for (size_t k = 0; st == AC_OK && k < n; k++) {
        if (i + 46 > d.cd_size || get32(cd + i) != SIG_CENTRAL) {
            st = bad(z, "bad central directory entry");
            break;
        }
        size_t nlen = get16(cd + i + 28), xlen = get16(cd + i + 30), clen = get16(cd + i + 32);
        if (i + 46 + nlen + xlen + clen > d.cd_size) {
            st = bad(z, "a central directory entry overruns the directory");
            break;
        }
        if (get16(cd + i + 34) != 0) {
            st = bad(z, "multi-disk archives are not supported");
            break;
        }
        zentry *x = &e[k];
        x->flags = get16(cd + i + 8);
        x->method = get16(cd + i + 10);
        x->crc = get32(cd + i + 16);
        x->csize = get32(cd + i + 20);
        x->usize = get32(cd + i + 24);
        x->local = get32(cd + i + 42);
        x->name = cd + i + 46;
        x->nlen = nlen;
        ix[k] = x;
        st = zip64_extra(z, cd + i + 46 + nlen, xlen, x);
        i += 46 + nlen + xlen + clen;
    }
    if (st == AC_OK && i != d.cd_size)
        st = n ? ambiguous(z, e[n - 1].name, e[n - 1].nlen,
                           "the central directory has bytes after its last entry")
               : bad(z, "the central directory has bytes but no entries");
    /* no name twice: np.load keeps the last such entry, other readers the first */
    if (st == AC_OK && n > 1) {
        qsort(ix, n, sizeof *ix, cmp_name);
        for (size_t k = 1; st == AC_OK && k < n; k++)
            if (cmp_name(&ix[k - 1], &ix[k]) == 0)
                st = ambiguous(z, ix[k]->name, ix[k]->nlen,
                               "named twice in the central directory (np.load reads the last "
                               "entry, other readers the first)");
    }
    for (size_t k = 0; st == AC_OK && k < n; k++)
        st = check_local(z, &e[k]);
    /* the members, the directory and the end records tile the file */
    if (st == AC_OK) {
        qsort(ix, n, sizeof *ix, cmp_local);
        uint64_t pos = 0;
        for (size_t k = 0; st == AC_OK && k < n; k++) {
            if (ix[k]->local < pos)
                st = ambiguous(z, ix[k]->name, ix[k]->nlen, "it overlaps the member before it");
            else if (ix[k]->local > pos)
                st = ambiguous(z, ix[k]->name, ix[k]->nlen,
                               "bytes before it that the central directory does not describe "
                               "(a hidden member or a prefix)");
            pos = ix[k]->end;
        }
        if (st == AC_OK && d.cd_off != pos)
            st = n ? ambiguous(z, ix[n - 1]->name, ix[n - 1]->nlen,
                               d.cd_off < pos ? "it overlaps the central directory"
                                              : "bytes between it and the central directory "
                                                "that the directory does not describe")
                   : bad(z, "bytes before the central directory of an empty archive");
        if (st == AC_OK && d.cd_off + d.cd_size != d.end_start)
            st = bad(z, "bytes between the central directory and its end record");
    }
    if (st == AC_OK) {
        st = AC_ENOINPUT;
        for (size_t k = 0; k < n; k++)
            if (e[k].nlen == wlen && memcmp(e[k].name, want, wlen) == 0) {
                *m = e[k];
                m->name = NULL; /* points into cd, freed below */
                st = AC_OK;
            }
    }
    free(cd);
    free(e);
    free(ix);
    return st;
}

/* The member's bytes, inflated and checked. */
static int member_data(zfile *z, const zentry *m, unsigned char **out)
{
    unsigned char lh[30];
    int st;
    if (m->flags & 1)
        return bad(z, "the member is encrypted");
    if (m->method != 0 && m->method != 8)
        return ac_err_set(z->err, AC_EDATA,
                          "%s: compression method %u is not supported (stored or deflate)",
                          z->disp, (unsigned)m->method);
    /* deflate expands at most ~1032:1; a larger claim is a corrupt entry */
    if ((m->method == 0 && m->usize != m->csize) ||
        (m->method == 8 && m->usize / 1032 > m->csize + 1))
        return bad(z, "inconsistent member sizes");
    if (m->usize > SIZE_MAX / 2 || m->csize > SIZE_MAX / 2)
        return ac_err_set(z->err, AC_EDATA, "%s: member too large", z->disp);
    if ((st = read_at(z, m->local, lh, 30)))
        return st;
    uint64_t data_off = m->local + 30 + get16(lh + 26) + get16(lh + 28); /* checked by scan */
    unsigned char *c = malloc(m->csize ? (size_t)m->csize : 1);
    unsigned char *u = m->method == 0 ? c : malloc(m->usize ? (size_t)m->usize : 1);
    if (!c || !u) {
        free(c);
        if (u != c)
            free(u);
        return ac_err_set(z->err, AC_EINTERNAL, "%s: out of memory for %llu bytes", z->disp,
                          (unsigned long long)m->usize);
    }
    st = read_at(z, data_off, c, (size_t)m->csize);
    if (st == AC_OK && m->method == 8) {
        z_stream s;
        memset(&s, 0, sizeof s);
        int zr = inflateInit2(&s, -MAX_WBITS);
        if (zr != Z_OK) {
            st = ac_err_set(z->err, AC_EINTERNAL, "%s: zlib: cannot initialise", z->disp);
        } else {
            /* zlib counts in uInt: feed and drain in chunks */
            uint64_t in_left = m->csize, out_left = m->usize;
            s.next_in = c;
            s.next_out = u;
            int progress = 1;
            while (zr == Z_OK && progress) {
                uInt ci = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
                uInt co = out_left > UINT_MAX ? UINT_MAX : (uInt)out_left;
                s.avail_in = ci;
                s.avail_out = co;
                zr = inflate(&s, Z_NO_FLUSH);
                in_left -= ci - s.avail_in;
                out_left -= co - s.avail_out;
                progress = ci != s.avail_in || co != s.avail_out;
            }
            if (zr != Z_STREAM_END || out_left != 0)
                st = bad(z, "the deflated data are corrupt or of the wrong size");
            inflateEnd(&s);
        }
    }
    if (st == AC_OK) {
        uLong crc = crc32(0L, Z_NULL, 0);
        uint64_t left = m->usize;
        const unsigned char *p = u;
        while (left > 0) {
            uInt k = left > UINT_MAX ? UINT_MAX : (uInt)left;
            crc = crc32(crc, p, k);
            p += k;
            left -= k;
        }
        if ((uint32_t)crc != m->crc)
            st = bad(z, "CRC-32 mismatch");
    }
    if (u != c)
        free(c);
    if (st) {
        free(u);
        return st;
    }
    *out = u;
    return AC_OK;
}

int npz_split(const char *path, size_t *file_len, const char **member)
{
    const char *colon = strrchr(path, ':');
    if (!colon || colon == path || !colon[1])
        return 0;
    size_t n = (size_t)(colon - path);
    if (n < 4 || strncmp(path + n - 4, ".npz", 4) != 0)
        return 0;
    *file_len = n;
    *member = colon + 1;
    return 1;
}

int npz_read(const char *path, size_t file_len, const char *member, ac_array *a, ac_err *err)
{
    char *file = malloc(file_len + 1);
    size_t mlen = strlen(member);
    char *want = malloc(mlen + 5);
    if (!file || !want) {
        free(file);
        free(want);
        return ac_err_set(err, AC_EINTERNAL, "%s: out of memory", path);
    }
    memcpy(file, path, file_len);
    file[file_len] = '\0';
    memcpy(want, member, mlen);
    memcpy(want + mlen, ".npy", 5);
    zfile z = {path, fopen(file, "rb"), 0, err};
    int st = AC_OK;
    if (!z.fp) {
        st = ac_err_set(err, AC_ENOINPUT, "%s: cannot open: %s", file, strerror(errno));
    } else if (fseeko(z.fp, 0, SEEK_END) != 0 || ftello(z.fp) < 0) {
        st = ac_err_set(err, AC_ENOINPUT, "%s: not a seekable file", file);
    } else {
        z.fsize = (uint64_t)ftello(z.fp);
        zentry m;
        memset(&m, 0, sizeof m);
        st = scan_archive(&z, want, &m);
        if (st == AC_ENOINPUT)
            st = ac_err_set(err, AC_EDATA, "%s: the archive %s has no array '%s'", path, file,
                            member);
        unsigned char *data = NULL;
        if (st == AC_OK)
            st = member_data(&z, &m, &data);
        if (st == AC_OK) {
            FILE *mem = fmemopen(data, m.usize ? (size_t)m.usize : 1, "rb");
            if (!mem)
                st = ac_err_set(err, AC_EINTERNAL, "%s: cannot open the member in memory", path);
            else {
                st = npy_read_stream(path, mem, 1, (uintmax_t)m.usize, a, err);
                fclose(mem);
            }
        }
        free(data);
    }
    if (z.fp)
        fclose(z.fp);
    free(file);
    free(want);
    return st;
}
