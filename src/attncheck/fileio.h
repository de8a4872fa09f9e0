/* attncheck/fileio.h — atomic output files and directory creation.
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

#ifdef __cplusplus
}
#endif
#endif /* ATTNCHECK_FILEIO_H */
