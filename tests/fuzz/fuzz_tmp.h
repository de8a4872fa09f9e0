/* fuzz_tmp.h — the scratch directory of a file-reading fuzz harness: made
 * once (mkdtemp under $TMPDIR, else /tmp), removed at exit with the files
 * named in it; fuzz_put writes one input there. */
#ifndef AC_FUZZ_TMP_H
#define AC_FUZZ_TMP_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_MAX_FILES 4
static char fuzz_dir[64], fuzz_files[FUZZ_MAX_FILES][96];
static int fuzz_nfiles;

static void fuzz_cleanup(void)
{
    for (int i = 0; i < fuzz_nfiles; i++)
        unlink(fuzz_files[i]);
    rmdir(fuzz_dir);
}

/* The directory, made on the first call ("NAME.XXXXXX"). */
static const char *fuzz_tmpdir(const char *name)
{
    if (!fuzz_dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(fuzz_dir, sizeof fuzz_dir, "%s/%s.XXXXXX",
                 t && *t && strlen(t) < 40 ? t : "/tmp", name);
        if (!mkdtemp(fuzz_dir))
            abort();
        atexit(fuzz_cleanup);
    }
    return fuzz_dir;
}

/* The path of file `name` in the directory (removed at exit). */
static const char *fuzz_file(const char *name)
{
    for (int i = 0; i < fuzz_nfiles; i++)
        if (!strcmp(strrchr(fuzz_files[i], '/') + 1, name))
            return fuzz_files[i];
    if (fuzz_nfiles == FUZZ_MAX_FILES)
        abort();
    snprintf(fuzz_files[fuzz_nfiles], sizeof fuzz_files[0], "%s/%s", fuzz_dir, name);
    return fuzz_files[fuzz_nfiles++];
}

static void fuzz_put(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
        abort();
}

#endif
