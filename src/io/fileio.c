/* fileio.c — atomic output files, directory creation and whole-file
 * reading (attncheck/fileio.h); staged output directories are stagedir.c. */
#include <config.h>

/* POSIX.1-2008 + XSI (mkstemp, mkdtemp, fchmod, fdopen, fileno, fsync...)
 * and renameat2 (Linux) for the swap of a staged directory. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "attncheck/common.h"
#include "attncheck/fileio.h"

/* Free f's strings and zero it (the stream must already be closed). */
static void atomic_clear(ac_atomic *f)
{
    free(f->tmp_path);
    free(f->path);
    f->fp = NULL;
    f->tmp_path = NULL;
    f->path = NULL;
}

static mode_t current_umask(void)
{
    /* POSIX offers no way to read the umask without setting it. */
    mode_t mask = umask(0);
    umask(mask);
    return mask;
}

int ac_atomic_open(ac_atomic *f, const char *path, ac_err *err)
{
    struct stat st;
    const char *slash, *base;
    size_t dirlen, baselen, len;
    char *tmp = NULL, *copy = NULL;
    int fd, e;
    FILE *fp;

    f->fp = NULL;
    f->tmp_path = NULL;
    f->path = NULL;
    if (!path || !*path)
        return ac_err_set(err, AC_ECANTCREAT, "%s: cannot create: %s",
                          path ? path : "(null)", strerror(ENOENT));
    if (strcmp(path, "-") == 0) { /* standard output: written through, no rename */
        if (!(f->path = strdup("-")))
            return ac_err_set(err, AC_EINTERNAL, "out of memory");
        f->fp = stdout;
        return AC_OK;
    }

    len = strlen(path);
    slash = strrchr(path, '/');
    base = slash ? slash + 1 : path;
    dirlen = (size_t)(base - path);
    baselen = len - dirlen;
    /* "dir/" or an existing directory: the rename would fail at the end, so
     * refuse now rather than after writing all the data. */
    if (baselen == 0 || (stat(path, &st) == 0 && S_ISDIR(st.st_mode)))
        return ac_err_set(err, AC_ECANTCREAT, "%s: cannot create: %s", path,
                          strerror(EISDIR));

    /* "DIR/" + "." + BASE + ".XXXXXX" + NUL; len < SIZE_MAX - 9 as path is
     * a string in memory. */
    tmp = malloc(len + 9);
    copy = malloc(len + 1);
    if (!tmp || !copy) {
        free(tmp);
        free(copy);
        return ac_err_set(err, AC_EINTERNAL, "%s: out of memory", path);
    }
    memcpy(copy, path, len + 1);
    memcpy(tmp, path, dirlen);
    tmp[dirlen] = '.';
    memcpy(tmp + dirlen + 1, base, baselen);
    memcpy(tmp + dirlen + 1 + baselen, ".XXXXXX", 8);

    fd = mkstemp(tmp);
    if (fd < 0 && errno == ENAMETOOLONG && baselen > 8) {
        /* BASE is close to NAME_MAX: use a shorter name for the temporary
         * (the buffer is large enough as baselen > 8). */
        memcpy(tmp + dirlen, ".ac.XXXXXX", 11);
        fd = mkstemp(tmp);
    }
    if (fd < 0) {
        e = errno;
        free(tmp);
        free(copy);
        return ac_err_set(err, AC_ECANTCREAT, "%s: cannot create: %s", path, strerror(e));
    }
    /* mkstemp uses 0600; give the file the mode fopen(path, "w") would. */
    if (fchmod(fd, (mode_t)0666 & ~current_umask()) != 0 || !(fp = fdopen(fd, "wb"))) {
        e = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        free(copy);
        return ac_err_set(err, AC_ECANTCREAT, "%s: cannot create: %s", path, strerror(e));
    }
    f->fp = fp;
    f->tmp_path = tmp;
    f->path = copy;
    return AC_OK;
}

/* Best-effort fsync of the directory holding `path`, so that the rename is
 * durable.  Errors are ignored: the file itself is complete either way. */
static void sync_parent_dir(const char *path)
{
#ifdef O_DIRECTORY
    const char *slash = strrchr(path, '/');
    char *dir;
    size_t n;
    int fd;

    if (!slash) {
        fd = open(".", O_RDONLY | O_DIRECTORY);
    } else {
        n = (size_t)(slash - path);
        if (n == 0)
            n = 1; /* "/file" */
        dir = malloc(n + 1);
        if (!dir)
            return;
        memcpy(dir, path, n);
        dir[n] = '\0';
        fd = open(dir, O_RDONLY | O_DIRECTORY);
        free(dir);
    }
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
#else
    (void)path;
#endif
}

int ac_atomic_commit(ac_atomic *f, ac_err *err)
{
    int e = 0, st;
    const char *what = "write";

    if (f && f->fp == stdout && !f->tmp_path && f->path) { /* "-" */
        int bad = ferror(stdout) || fflush(stdout) != 0;
        atomic_clear(f);
        return bad ? ac_err_set(err, AC_ECANTCREAT, "stdout: cannot write: %s",
                                errno ? strerror(errno) : "a write failed")
                   : AC_OK;
    }
    if (!f || !f->fp || !f->tmp_path || !f->path) {
        int s = ac_err_set(err, AC_ECANTCREAT, "%s: cannot write: file is not open",
                           f && f->path ? f->path : "(output)");
        ac_atomic_abort(f);
        return s;
    }
    if (ferror(f->fp)) {
        e = -1; /* the failing write's errno is gone */
    } else if (fflush(f->fp) != 0 || fsync(fileno(f->fp)) != 0) {
        e = errno;
    }
    if (fclose(f->fp) != 0 && e == 0)
        e = errno;
    f->fp = NULL;
    if (e == 0 && rename(f->tmp_path, f->path) != 0) {
        e = errno;
        what = "create";
    }
    if (e != 0) {
        unlink(f->tmp_path);
        if (e < 0)
            st = ac_err_set(err, AC_ECANTCREAT, "%s: cannot write: a write to the file failed",
                            f->path);
        else
            st = ac_err_set(err, AC_ECANTCREAT, "%s: cannot %s: %s", f->path, what,
                            strerror(e));
        atomic_clear(f);
        return st;
    }
    sync_parent_dir(f->path);
    atomic_clear(f);
    return AC_OK;
}

void ac_atomic_abort(ac_atomic *f)
{
    if (!f)
        return;
    if (f->fp && f->fp != stdout)
        fclose(f->fp);
    if (f->tmp_path)
        unlink(f->tmp_path);
    atomic_clear(f);
}

int ac_mkdir_p(const char *dir, ac_err *err)
{
    struct stat st;
    char *buf;
    size_t len, i;
    int e = 0;

    if (!dir || !*dir)
        return ac_err_set(err, AC_ECANTCREAT, "%s: cannot create directory: %s",
                          dir ? dir : "(null)", strerror(ENOENT));
    if (stat(dir, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return AC_OK;
        return ac_err_set(err, AC_ECANTCREAT, "%s: cannot create directory: %s", dir,
                          strerror(ENOTDIR));
    }
    len = strlen(dir);
    buf = malloc(len + 1);
    if (!buf)
        return ac_err_set(err, AC_EINTERNAL, "%s: out of memory", dir);
    memcpy(buf, dir, len + 1);

    /* Create each prefix that ends just before a '/' or at the end. */
    for (i = 1; i <= len && e == 0; i++) {
        if (i < len && (buf[i] != '/' || buf[i - 1] == '/'))
            continue;
        if (i == len && buf[i - 1] == '/')
            break; /* trailing slash: the prefix before it was done */
        buf[i] = '\0';
        if (mkdir(buf, 0777) != 0) {
            e = errno;
            if (e == EEXIST) {
                e = (stat(buf, &st) == 0 && S_ISDIR(st.st_mode)) ? 0 : ENOTDIR;
            }
        }
        if (i < len)
            buf[i] = '/';
    }
    free(buf);
    if (e != 0)
        return ac_err_set(err, AC_ECANTCREAT, "%s: cannot create directory: %s", dir,
                          strerror(e));
    return AC_OK;
}

/* ---- whole-file reading ---------------------------------------------------- */

int ac_file_read(const char *path, size_t max_bytes, unsigned char **buf, size_t *len,
                 ac_err *err)
{
    FILE *f = fopen(path, "rb");
    struct stat sb;
    *buf = NULL;
    *len = 0;
    if (!f)
        return ac_err_set(err, AC_ENOINPUT, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fclose(f);
        return ac_err_set(err, AC_ENOINPUT, "%s: cannot open: %s", path, strerror(EISDIR));
    }
    if (fstat(fileno(f), &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISFIFO(sb.st_mode)) {
        /* /dev/zero and its kind never end */
        fclose(f);
        return ac_err_set(err, AC_EDATA, "%s: not a regular file (a %s)", path,
                          S_ISCHR(sb.st_mode)   ? "character device"
                          : S_ISBLK(sb.st_mode) ? "block device"
                                                : "socket");
    }
    if (!max_bytes) {
        /* the bound of a file read whole: half the memory there is */
        double avail = ac_memory_available(NULL);
        max_bytes = avail > 0 && avail / 2 < (double)(SIZE_MAX / 2) ? (size_t)(avail / 2) : 0;
        if (max_bytes && S_ISREG(sb.st_mode) && (uintmax_t)sb.st_size > max_bytes) {
            fclose(f);
            return ac_err_set(err, AC_EDATA, "%s: %jd bytes; reading it needs more memory than "
                              "the %.3g GiB available", path, (intmax_t)sb.st_size,
                              avail / 1073741824.0);
        }
    }
    if (max_bytes && S_ISREG(sb.st_mode) && (uintmax_t)sb.st_size > max_bytes) {
        fclose(f);
        return ac_err_set(err, AC_EDATA, "%s: larger than %zu bytes", path, max_bytes);
    }
    size_t cap = (size_t)1 << 16, n = 0;
    unsigned char *b = malloc(cap);
    if (!b) {
        fclose(f);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    for (;;) {
        if (n == cap - 1) { /* one byte stays free for the NUL */
            unsigned char *nb = cap <= SIZE_MAX / 2 ? realloc(b, cap * 2) : NULL;
            if (!nb) {
                free(b);
                fclose(f);
                return ac_err_set(err, AC_EINTERNAL, "out of memory");
            }
            b = nb;
            cap *= 2;
        }
        size_t r = fread(b + n, 1, cap - 1 - n, f);
        n += r;
        if (max_bytes && n > max_bytes) {
            free(b);
            fclose(f);
            return ac_err_set(err, AC_EDATA, "%s: larger than %zu bytes", path, max_bytes);
        }
        if (r == 0)
            break;
    }
    if (ferror(f)) {
        int e = errno;
        free(b);
        fclose(f);
        return ac_err_set(err, AC_ENOINPUT, "%s: cannot read: %s", path, strerror(e));
    }
    fclose(f);
    b[n] = 0;
    *buf = b;
    *len = n;
    return AC_OK;
}
