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
 * sections 4.3 (structure) and 4.5.3 (ZIP64 extra field). */
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

/* The central directory: offset and size, from the (ZIP64) end record. */
static int find_central(zfile *z, uint64_t *cd_off, uint64_t *cd_size, uint64_t *count)
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
    if (get16(e + 4) != 0 || get16(e + 6) != 0) {
        free(buf);
        return bad(z, "multi-disk archives are not supported");
    }
    *count = get16(e + 10);
    *cd_size = get32(e + 12);
    *cd_off = get32(e + 16);
    uint64_t eocd_pos = z->fsize - tail + (uint64_t)at;
    free(buf);
    if (*count == 0xffff || *cd_size == 0xffffffffu || *cd_off == 0xffffffffu) {
        unsigned char loc[20], e64[56];
        if (eocd_pos < 20 || (st = read_at(z, eocd_pos - 20, loc, 20)))
            return st ? st : bad(z, "ZIP64 locator missing");
        if (get32(loc) != SIG_LOC64)
            return bad(z, "ZIP64 locator missing");
        if ((st = read_at(z, get64(loc + 8), e64, 56)))
            return st;
        if (get32(e64) != SIG_EOCD64)
            return bad(z, "bad ZIP64 end record");
        *count = get64(e64 + 32);
        *cd_size = get64(e64 + 40);
        *cd_off = get64(e64 + 48);
    }
    return AC_OK;
}

typedef struct {
    uint32_t method, crc, flags;
    uint64_t csize, usize, local;
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

/* Find the member called want in the central directory. */
static int find_member(zfile *z, const char *want, zentry *m)
{
    uint64_t cd_off = 0, cd_size = 0, count = 0;
    int st = find_central(z, &cd_off, &cd_size, &count);
    if (st)
        return st;
    if (cd_size > z->fsize || cd_off > z->fsize - cd_size)
        return bad(z, "the central directory lies beyond the end of the file");
    unsigned char *cd = malloc(cd_size ? (size_t)cd_size : 1);
    if (!cd)
        return ac_err_set(z->err, AC_EINTERNAL, "%s: out of memory", z->disp);
    if ((st = read_at(z, cd_off, cd, (size_t)cd_size))) {
        free(cd);
        return st;
    }
    size_t i = 0, wlen = strlen(want);
    st = AC_ENOINPUT;
    for (uint64_t k = 0; k < count; k++) {
        if (i + 46 > cd_size || get32(cd + i) != SIG_CENTRAL) {
            st = bad(z, "bad central directory entry");
            break;
        }
        size_t nlen = get16(cd + i + 28), xlen = get16(cd + i + 30), clen = get16(cd + i + 32);
        if (i + 46 + nlen + xlen + clen > cd_size) {
            st = bad(z, "a central directory entry overruns the directory");
            break;
        }
        if (nlen == wlen && memcmp(cd + i + 46, want, wlen) == 0) {
            m->flags = get16(cd + i + 8);
            m->method = get16(cd + i + 10);
            m->crc = get32(cd + i + 16);
            m->csize = get32(cd + i + 20);
            m->usize = get32(cd + i + 24);
            m->local = get32(cd + i + 42);
            st = zip64_extra(z, cd + i + 46 + nlen, xlen, m);
            break;
        }
        i += 46 + nlen + xlen + clen;
    }
    free(cd);
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
    if (get32(lh) != SIG_LOCAL)
        return bad(z, "bad local header");
    uint64_t data_off = m->local + 30 + get16(lh + 26) + get16(lh + 28);
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
        st = find_member(&z, want, &m);
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
