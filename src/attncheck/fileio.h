/* attncheck/fileio.h — atomic output files, staged output directories,
 * directory creation and whole-file reading.
 *
 * Every file attncheck writes goes through ac_atomic: the data are written
 * to a temporary file in the destination's directory, flushed to disk, and
 * renamed onto the destination only when everything succeeded.  A reader
 * therefore sees either the old file (or none) or the complete new one, and
 * a failure never leaves a half-written file or a stray temporary behind
 * (short of the process being killed between open and commit).
 */
#ifndef ATTNCHECK_FILEIO_H
#define ATTNCHECK_FILEIO_H

#include <stdio.h>

#include "attncheck/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An output file being written.  A zeroed ac_atomic is "finished": it may be
 * passed to ac_atomic_abort and ac_atomic_commit (which then fails). */
typedef struct {
    FILE *fp;        /* stream to write to (the temporary file) */
    char *tmp_path;  /* the temporary file, "DIR/.BASE.XXXXXX" (or, for a
                        BASE near NAME_MAX, "DIR/.ac.XXXXXX") */
    char *path;      /* the destination */
} ac_atomic;

/* Start writing the file `path`: create a temporary file in the same
 * directory (mkstemp) with mode 0666 & ~umask, as fopen(path, "w") would,
 * and open f->fp on it.  f need not be initialised.  (If PATH is a
 * symbolic link, the commit replaces the link itself, not its target.)
 *
 * Returns AC_OK; AC_ECANTCREAT "PATH: cannot create: <strerror>" if the
 * temporary cannot be created (missing or unwritable directory, PATH is an
 * existing directory, ...); AC_EINTERNAL if out of memory.  On failure f is
 * zeroed and nothing is left allocated or on disk. */
int ac_atomic_open(ac_atomic *f, const char *path, ac_err *err);

/* Finish writing: check the stream's error flag, fflush, fsync and fclose
 * the temporary file, then rename it onto f->path (and, best effort, fsync
 * the directory).  Afterwards f is zeroed, whatever the outcome.
 *
 * Returns AC_OK; AC_ECANTCREAT "PATH: cannot write: <strerror>" (or
 * "cannot create: ..." if the rename fails) on any failure, in which case
 * the temporary file has been removed and PATH is untouched. */
int ac_atomic_commit(ac_atomic *f, ac_err *err);

/* Give up writing: close and remove the temporary file, free f's memory and
 * zero f.  PATH is untouched.  Safe on a zeroed or already finished f and
 * on NULL. */
void ac_atomic_abort(ac_atomic *f);

/* Create the directory `dir`, and any missing parents, with mode
 * 0777 & ~umask (like mkdir -p).  An existing directory is not an error.
 *
 * Returns AC_OK; AC_ECANTCREAT "DIR: cannot create directory: <strerror>"
 * if a component cannot be created or exists and is not a directory;
 * AC_EINTERNAL if out of memory. */
int ac_mkdir_p(const char *dir, ac_err *err);

/* Read the whole file `path` into a new buffer: *buf (malloc'd, to be freed
 * by the caller; one NUL byte follows the data, so text may be parsed in
 * place) receives the *len bytes of the file.  max_bytes bounds the size
 * (0: half of ac_memory_available(), the bound of a file read whole).  Only
 * regular files and pipes are read: a device (/dev/zero) or a socket is
 * refused before any read, and a regular file over the bound before its
 * first byte is read.
 *
 * Returns AC_OK; AC_ENOINPUT "PATH: cannot open: <strerror>" (also for a
 * directory: "cannot open: Is a directory") or "PATH: cannot read:
 * <strerror>"; AC_EDATA "PATH: larger than MAX bytes" when the file
 * exceeds max_bytes, "PATH: N bytes; reading it needs more memory than the
 * X GiB available", "PATH: not a regular file (a character device)"; AC_EINTERNAL "out of memory".  On failure *buf is
 * NULL and *len 0. */
int ac_file_read(const char *path, size_t max_bytes, unsigned char **buf, size_t *len,
                 ac_err *err);

/* A staged output directory: the files of one output are written into a
 * private staging directory and appear in the destination only when all are
 * complete (ac_stagedir_commit), so a failure leaves nothing half-written.
 * Two modes:
 *   merge    (ac_stagedir_begin): DIR is created if missing (ac_mkdir_p),
 *            the staging directory is DIR/.attncheck-XXXXXX, and the commit
 *            renames each staged file into DIR, next to DIR's other files;
 *   replace  (ac_stagedir_begin_replace): the staging directory is a sibling
 *            PARENT/.BASE.tmp-XXXXXX, and the commit swaps it with DIR in
 *            one rename (renameat2 RENAME_EXCHANGE when DIR exists; else, or
 *            where the exchange is not supported, DIR is moved aside first),
 *            then removes the previous contents: DIR is always either the
 *            old complete directory or the new one.
 * A zeroed ac_stagedir may be passed to ac_stagedir_abort. */
typedef struct {
    char *dir;        /* the destination, as given */
    char *tmp;        /* the staging directory: write the files here */
    char *dest;       /* replace: DIR without trailing slashes; merge: NULL */
    char *parent;     /* replace: the directory holding DIR; merge: NULL */
    char *base;       /* replace: DIR's last component; merge: NULL */
    char **names;     /* the files named by ac_stagedir_path (merge: moved at commit) */
    size_t n, cap;
    char *path;       /* buffer of ac_stagedir_path */
    size_t path_cap;
    int replace;      /* the mode */
    int exists;       /* replace: DIR existed at begin */
    int lock;         /* replace: 1 + the descriptor holding the staging
                         directory's lock (0: none) */
} ac_stagedir;

/* Whether the existing, non-empty directory DIR may be replaced: AC_OK, or
 * an error status with its message in err. */
typedef int (*ac_stagedir_check)(const char *dir, ac_err *err);

/* Merge mode.  Returns AC_OK; AC_ECANTCREAT "DIR: cannot create directory:
 * ..." (ac_mkdir_p) or "DIR: cannot create files there: <strerror>";
 * AC_EINTERNAL.  On failure s is zeroed and nothing is left allocated. */
int ac_stagedir_begin(ac_stagedir *s, const char *dir, ac_err *err);

/* Replace mode.  `what` names DIR in messages ("checkpoint directory").
 * An existing DIR must be a writable directory, and if it is not empty,
 * `check` decides whether it may be replaced (NULL: any directory may).
 * The staging directory gets DIR's mode (a new DIR: 0777 & ~umask, as
 * mkdir) and is locked (flock) until the commit or abort; stale staging
 * directories of DIR — ".BASE.tmp-XXXXXX" or ".BASE.old-XXXXXX" in PARENT,
 * owned by this user and locked by no process, left by a killed run — are
 * removed first.  Returns
 * AC_OK; AC_ECANTCREAT "DIR: bad WHAT name", "DIR: name the WHAT itself"
 * (DIR ends in . or ..), "DIR: exists and is not a directory", "DIR: path
 * too long", "PARENT: cannot create files there: <strerror>", the error of
 * `check` or of ac_mkdir_p(PARENT); AC_EINTERNAL.  On failure s is zeroed
 * and nothing is left allocated or on disk. */
int ac_stagedir_begin_replace(ac_stagedir *s, const char *dir, const char *what,
                              ac_stagedir_check check, ac_err *err);

/* A check for ac_stagedir_begin_replace: AC_OK if the directory DIR holds
 * the file `required` and nothing but regular files whose names end in one
 * of the comma-separated `suffixes` (and staging directories ".attncheck-*"
 * of older versions); else AC_ECANTCREAT "it holds NAME", "it has no
 * REQUIRED" or "DIR: cannot open: <strerror>". */
int ac_stagedir_check_files(const char *dir, const char *required, const char *suffixes,
                            ac_err *err);

/* The path in the staging directory of the file `name` (remembered for the
 * commit): valid until the next call; NULL if out of memory. */
const char *ac_stagedir_path(ac_stagedir *s, const char *name);

/* A message about a file in the staging directory names the destination
 * instead: the staging path in err->msg ("DIR/.BASE.tmp-XXXXXX/FILE: ...")
 * becomes DIR ("DIR/FILE: ...").  Does nothing if the message does not name
 * it, or on NULL. */
void ac_stagedir_unstage_err(const ac_stagedir *s, ac_err *err);

/* Move the staged files into place (see the modes above), remove the
 * staging directory and free s (zeroed afterwards, whatever the outcome).
 * Returns AC_OK; AC_ECANTCREAT "PATH: cannot create: <strerror>" (merge) or
 * "DIR: cannot replace: <strerror>", "DIR: cannot create: <strerror>"
 * (replace), after which the staged files are removed and, in replace mode,
 * DIR is as before. */
int ac_stagedir_commit(ac_stagedir *s, ac_err *err);

/* Give up: remove the staging directory and the files in it, free s and
 * zero it.  DIR is untouched.  Safe on NULL and on a zeroed s. */
void ac_stagedir_abort(ac_stagedir *s);

/* The memory this process may still allocate, in bytes: the least of the
 * kernel's MemAvailable (/proc/meminfo), the room under the memory cgroup's
 * limit (cgroup v2 memory.max - memory.current, v1 memory.limit_in_bytes -
 * memory.usage_in_bytes, of the process's cgroup and its ancestors) and the
 * room under the address-space limit RLIMIT_AS (ulimit -v).  *source (if
 * source is not NULL) names the one that bounds it.  0 when none is known.
 * Commands compare their memory estimate with it before any work. */
double ac_memory_available(const char **source);

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_FILEIO_H */
