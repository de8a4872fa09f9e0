/* stagedir.c — staged output directories (attncheck/fileio.h): the files
 * of one output written into a private staging directory and moved into
 * place only when all are complete — merged into DIR, or swapped with DIR
 * in one rename — with the removal of a killed run's stale staging. */
#include <config.h>

/* POSIX.1-2008 (mkdtemp, fdopendir, openat...) and renameat2 (Linux) for
 * the swap of a staged directory. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "attncheck/common.h"
#include "attncheck/fileio.h"

static mode_t current_umask(void)
{
    /* POSIX offers no way to read the umask without setting it. */
    mode_t mask = umask(0);
    umask(mask);
    return mask;
}

/* ---- staged output directories --------------------------------------------- */

/* Remove the entries of the directory open as fd (plain files, and
 * directories up to `depth` levels down; a symbolic link is removed, never
 * followed), then close fd (best effort). */
static void remove_entries(int fd, int depth)
{
    DIR *dp = fdopendir(fd);
    if (!dp) {
        close(fd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(dp))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        struct stat sb;
        if (fstatat(fd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (S_ISDIR(sb.st_mode)) {
            int sub;
            if (depth > 0 &&
                (sub = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)) >= 0)
                remove_entries(sub, depth - 1);
            unlinkat(fd, e->d_name, AT_REMOVEDIR);
        } else {
            unlinkat(fd, e->d_name, 0);
        }
    }
    closedir(dp);
}

/* Remove dir and what attncheck puts in one: files, and the staging
 * directories of older versions inside it (best effort). */
static void remove_tree(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (fd >= 0)
        remove_entries(fd, 2);
    rmdir(dir);
}

static int dir_is_empty(const char *dir)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return 0;
    struct dirent *e;
    int empty = 1;
    while ((e = readdir(dp)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            empty = 0;
            break;
        }
    closedir(dp);
    return empty;
}

/* Whether name ends in one of the comma-separated suffixes. */
static int has_suffix(const char *name, const char *suffixes)
{
    size_t n = strlen(name);
    while (*suffixes) {
        size_t k = strcspn(suffixes, ",");
        if (k > 0 && n > k && !memcmp(name + n - k, suffixes, k))
            return 1;
        suffixes += k + (suffixes[k] == ',');
    }
    return 0;
}

int ac_stagedir_check_files(const char *dir, const char *required, const char *suffixes,
                            ac_err *err)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return ac_err_set(err, AC_ECANTCREAT, "%s: cannot open: %s", dir, strerror(errno));
    struct dirent *e;
    int found = 0, st = AC_OK;
    while (!st && (e = readdir(dp))) {
        struct stat sb;
        char p[PATH_MAX];
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= sizeof p ||
            lstat(p, &sb) != 0)
            st = ac_err_set(err, AC_ECANTCREAT, "cannot inspect %s", e->d_name);
        else if (S_ISDIR(sb.st_mode) && !strncmp(e->d_name, ".attncheck-", 11))
            continue; /* the staging directory of an older version */
        else if (!S_ISREG(sb.st_mode) || !has_suffix(e->d_name, suffixes))
            st = ac_err_set(err, AC_ECANTCREAT, "it holds %s", e->d_name);
        else if (!strcmp(e->d_name, required))
            found = 1;
    }
    closedir(dp);
    if (!st && !found)
        st = ac_err_set(err, AC_ECANTCREAT, "it has no %s", required);
    return st;
}

int ac_stagedir_begin(ac_stagedir *s, const char *dir, ac_err *err)
{
    int st;
    memset(s, 0, sizeof *s);
    if ((st = ac_mkdir_p(dir, err)))
        return st;
    size_t len = strlen(dir) + 32;
    s->dir = strdup(dir);
    s->tmp = malloc(len);
    if (!s->dir || !s->tmp) {
        ac_stagedir_abort(s);
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    }
    snprintf(s->tmp, len, "%s/.attncheck-XXXXXX", dir);
    if (!mkdtemp(s->tmp)) {
        int e = errno;
        free(s->tmp);
        s->tmp = NULL;
        ac_stagedir_abort(s);
        return ac_err_set(err, AC_ECANTCREAT, "%s: cannot create files there: %s", dir,
                          strerror(e));
    }
    return AC_OK;
}

/* Split dir (trailing slashes dropped) into s->parent and s->base. */
static int split_dir(ac_stagedir *s, const char *dir, const char *what, ac_err *err)
{
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    if (len == 0 || len >= PATH_MAX)
        return ac_err_set(err, AC_ECANTCREAT, "%s: bad %s name", dir, what);
    s->dir = strdup(dir);
    s->dest = strndup(dir, len);
    s->parent = malloc(len + 2);
    s->base = malloc(len + 1);
    if (!s->dir || !s->dest || !s->parent || !s->base)
        return ac_err_set(err, AC_EINTERNAL, "out of memory");
    char *slash = strrchr(s->dest, '/');
    if (!slash) {
        strcpy(s->base, s->dest);
        strcpy(s->parent, ".");
    } else {
        strcpy(s->base, slash + 1);
        if (slash == s->dest) { /* "/NAME": the parent is "/" */
            strcpy(s->parent, "/");
        } else {
            memcpy(s->parent, s->dest, (size_t)(slash - s->dest));
            s->parent[slash - s->dest] = 0;
        }
    }
    if (!strcmp(s->base, ".") || !strcmp(s->base, ".."))
        return ac_err_set(err, AC_ECANTCREAT, "%s: name the %s itself", dir, what);
    return AC_OK;
}

/* Whether name is "." BASE ".tmp-XXXXXX" or "." BASE ".old-XXXXXX": the
 * staging (or moved-aside) directories of DIR made by ac_stagedir. */
static int is_staging_name(const char *name, const char *base)
{
    size_t nb = strlen(base);
    if (name[0] != '.' || strncmp(name + 1, base, nb) != 0)
        return 0;
    const char *t = name + 1 + nb;
    if (strncmp(t, ".tmp-", 5) != 0 && strncmp(t, ".old-", 5) != 0)
        return 0;
    return strlen(t + 5) == 6;
}

/* Remove the stale staging directories of PARENT/BASE: the directories of
 * our naming (is_staging_name), owned by this user, that no running
 * process holds (the lock of ac_stagedir_begin_replace is free). */
static void remove_stale(const char *parent, const char *base)
{
    DIR *dp = opendir(parent);
    if (!dp)
        return;
    struct dirent *e;
    while ((e = readdir(dp))) {
        if (!is_staging_name(e->d_name, base))
            continue;
        int fd = openat(dirfd(dp), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        struct stat sb;
        if (fd < 0)
            continue;
        if (fstat(fd, &sb) == 0 && sb.st_uid == geteuid() && flock(fd, LOCK_EX | LOCK_NB) == 0) {
            int sub = dup(fd);
            if (sub >= 0)
                remove_entries(sub, 2);
            unlinkat(dirfd(dp), e->d_name, AT_REMOVEDIR);
        }
        close(fd);
    }
    closedir(dp);
}

int ac_stagedir_begin_replace(ac_stagedir *s, const char *dir, const char *what,
                              ac_stagedir_check check, ac_err *err)
{
    struct stat sb;
    int st;
    memset(s, 0, sizeof *s);
    s->replace = 1;
    if ((st = split_dir(s, dir, what, err)))
        goto fail;
    s->exists = stat(dir, &sb) == 0;
    if (s->exists && !S_ISDIR(sb.st_mode)) {
        st = ac_err_set(err, AC_ECANTCREAT, "%s: exists and is not a directory", dir);
        goto fail;
    }
    if (s->exists && access(dir, W_OK) != 0) {
        /* replacing would bypass the directory's own permissions */
        st = ac_err_set(err, AC_ECANTCREAT, "%s: cannot replace: %s", dir, strerror(errno));
        goto fail;
    }
    if (s->exists && check && !dir_is_empty(dir) && (st = check(dir, err)))
        goto fail;
    if ((st = ac_mkdir_p(s->parent, err)))
        goto fail;
    remove_stale(s->parent, s->base);
    char tmp[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s/.%s.tmp-XXXXXX", s->parent, s->base) >= sizeof tmp) {
        st = ac_err_set(err, AC_ECANTCREAT, "%s: path too long", dir);
        goto fail;
    }
    if (!mkdtemp(tmp)) {
        st = ac_err_set(err, AC_ECANTCREAT, "%s: cannot create files there: %s", s->parent,
                        strerror(errno));
        goto fail;
    }
    if (!(s->tmp = strdup(tmp))) {
        rmdir(tmp);
        st = ac_err_set(err, AC_EINTERNAL, "out of memory");
        goto fail;
    }
    /* held until the staging directory is gone: a later run removes only
     * staging directories whose lock it can take (remove_stale) */
    int fd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0 ||
        fchmod(fd, s->exists ? (sb.st_mode & 07777) : ((mode_t)0777 & ~current_umask())) != 0) {
        /* mkdtemp's 0700 becomes the old directory's mode, or mkdir's */
        st = ac_err_set(err, AC_ECANTCREAT, "%s: cannot create files there: %s", s->parent,
                        strerror(errno));
        if (fd >= 0)
            close(fd);
        goto fail;
    }
    s->lock = fd + 1;
    return AC_OK;
fail:
    ac_stagedir_abort(s);
    return st;
}

const char *ac_stagedir_path(ac_stagedir *s, const char *name)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        char **nn = realloc(s->names, cap * sizeof *nn);
        if (!nn)
            return NULL;
        s->names = nn;
        s->cap = cap;
    }
    size_t need = strlen(s->tmp) + strlen(name) + 2;
    if (need > s->path_cap) {
        char *np = realloc(s->path, need);
        if (!np)
            return NULL;
        s->path = np;
        s->path_cap = need;
    }
    if (!(s->names[s->n] = strdup(name)))
        return NULL;
    s->n++;
    snprintf(s->path, s->path_cap, "%s/%s", s->tmp, name);
    return s->path;
}

void ac_stagedir_unstage_err(const ac_stagedir *s, ac_err *err)
{
    const char *hit, *dest;
    char buf[AC_ERR_MSG_MAX];
    if (!s || !s->tmp || !err || !(hit = strstr(err->msg, s->tmp)))
        return;
    dest = s->dest ? s->dest : s->dir;
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)(hit - err->msg), err->msg, dest ? dest : "",
             hit + strlen(s->tmp));
    memcpy(err->msg, buf, sizeof buf);
}

/* Merge mode: rename each staged file into DIR. */
static int commit_merge(ac_stagedir *s, ac_err *err)
{
    char a[PATH_MAX], b[PATH_MAX];
    for (size_t i = 0; i < s->n; i++) {
        snprintf(a, sizeof a, "%s/%s", s->tmp, s->names[i]);
        snprintf(b, sizeof b, "%s/%s", s->dir, s->names[i]);
        if (rename(a, b) != 0)
            return ac_err_set(err, AC_ECANTCREAT, "%s: cannot create: %s", b, strerror(errno));
    }
    return AC_OK;
}

/* Replace mode without an atomic exchange: move the old DIR aside, the
 * staging directory in, and remove the old one (put back on failure). */
static int swap_aside(ac_stagedir *s, ac_err *err)
{
    char old[2 * PATH_MAX + 16];
    snprintf(old, sizeof old, "%s/.%s.old-XXXXXX", s->parent, s->base);
    if (!mkdtemp(old) || rmdir(old) != 0 || rename(s->dest, old) != 0)
        return ac_err_set(err, AC_ECANTCREAT, "%s: cannot replace: %s", s->dir, strerror(errno));
    if (rename(s->tmp, s->dest) != 0) {
        int e = errno;
        rename(old, s->dest);
        return ac_err_set(err, AC_ECANTCREAT, "%s: cannot replace: %s", s->dir, strerror(e));
    }
    remove_tree(old);
    return AC_OK;
}

/* Replace mode: swap the staging directory with DIR ("checkpoint swap"). */
static int commit_replace(ac_stagedir *s, ac_err *err)
{
    int st = AC_OK;
    if (!s->exists) {
        if (rename(s->tmp, s->dest) != 0)
            return ac_err_set(err, AC_ECANTCREAT, "%s: cannot create: %s", s->dir,
                              strerror(errno));
    } else {
#ifdef RENAME_EXCHANGE
        if (renameat2(AT_FDCWD, s->tmp, AT_FDCWD, s->dest, RENAME_EXCHANGE) != 0)
#endif
            st = swap_aside(s, err);
        if (st)
            return st;
        /* the staging directory now holds the previous DIR (or is gone) */
    }
    int fd = open(s->parent, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    return AC_OK;
}

int ac_stagedir_commit(ac_stagedir *s, ac_err *err)
{
    int st;
    if (!s->replace)
        st = commit_merge(s, err);
    else if (!s->tmp)
        st = ac_err_set(err, AC_ECANTCREAT, "%s: cannot create: nothing staged",
                        s->dir ? s->dir : "(output)");
    else
        st = commit_replace(s, err);
    ac_stagedir_abort(s); /* removes what is left and the staging directory */
    return st;
}

void ac_stagedir_abort(ac_stagedir *s)
{
    if (!s)
        return;
    if (s->tmp) {
        if (s->replace) {
            remove_tree(s->tmp);
        } else {
            char a[PATH_MAX];
            for (size_t i = 0; i < s->n; i++) {
                snprintf(a, sizeof a, "%s/%s", s->tmp, s->names[i]);
                unlink(a);
            }
            rmdir(s->tmp);
        }
    }
    for (size_t i = 0; i < s->n; i++)
        free(s->names[i]);
    free(s->names);
    free(s->dir);
    free(s->tmp);
    free(s->dest);
    free(s->parent);
    free(s->base);
    free(s->path);
    if (s->lock > 0)
        close(s->lock - 1);
    memset(s, 0, sizeof *s);
}
