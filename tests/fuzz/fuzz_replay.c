/* fuzz_replay.c — runs a fuzz harness (LLVMFuzzerTestOneInput) on files:
 * each argument is a file or a directory of files (the seed corpus).  The
 * harnesses are built with it by the C compiler of the build, so that
 * `make check` replays the corpus without clang; prints the count. */
#include <config.h>

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz_replay: %s: cannot open\n", path);
        exit(2);
    }
    size_t cap = 1 << 16, n = 0, r;
    uint8_t *b = malloc(cap);
    while (b && (r = fread(b + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            uint8_t *nb = realloc(b, cap *= 2);
            if (!nb)
                free(b);
            b = nb;
        }
    }
    fclose(f);
    if (!b)
        exit(2);
    LLVMFuzzerTestOneInput(b, n);
    free(b);
    return 1;
}

int main(int argc, char **argv)
{
    long count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            fprintf(stderr, "fuzz_replay: %s: cannot open\n", argv[i]);
            return 2;
        }
        if (!S_ISDIR(sb.st_mode)) {
            count += run_file(argv[i]);
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *e;
        char p[4096];
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
            count += run_file(p);
        }
        if (d)
            closedir(d);
    }
    printf("%ld inputs\n", count);
    return 0;
}
