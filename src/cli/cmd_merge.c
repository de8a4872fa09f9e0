/* cmd_merge.c — `attncheck merge FILE...`: combine a complete set of
 * condition shards (condition --shard I/K --samples-out FILE) into exactly
 * the result of the unsharded sweep, printed and written as `condition`
 * prints and writes it. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/shard.h"
#include "cli.h"

const char cmd_merge_help[] =
    "Usage: attncheck merge FILE... [--json] [--csv FILE] [--plot FILE] [--threads N]\n"
    "\n"
    "Combine the shard files of one condition sweep, written by\n"
    "  attncheck condition OPTIONS --shard I/K --samples-out FILE\n"
    "for every I of 1..K (in any order, on any machines), into exactly the result\n"
    "of `attncheck condition OPTIONS`: the same samples, statistics, predictions\n"
    "and certificates.  The output options are those of condition.\n"
    "\n"
    "  --json            print one JSON object, as condition does\n"
    "  --csv FILE        one row per h, as condition writes it\n"
    "  --plot FILE       kappa against h, as condition draws it\n"
    "  --threads N       threads (the result does not depend on them)\n"
    "  -h, --help        show this help\n"
    "\n"
    "Exit status: that of condition; 65 if a shard is missing, given twice,\n"
    "malformed or of another sweep; 66 if a file cannot be read.\n";

int cmd_merge(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(cmd_merge_help, stdout);
        return 0;
    }
    /* FILE operands first, then condition's output options */
    int nfiles = 1;
    while (nfiles < argc && strncmp(argv[nfiles], "--", 2) != 0)
        nfiles++;
    nfiles--;
    if (nfiles < 1)
        return cli_usage("merge needs the shard files: attncheck merge FILE... [--json]");
    ac_cond_shard first;
    ac_err err;
    ac_err_clear(&err);
    if (ac_cond_shard_read(&first, argv[1], &err))
        return cli_fail_err(&err);
    /* condition WORDS... --merge-from F1 ... --merge-from Fn OUTPUT-OPTIONS... */
    size_t n = 1 + first.nwords + 2 * (size_t)nfiles + (size_t)(argc - 1 - nfiles);
    char **av = calloc(n + 1, sizeof *av);
    if (!av) {
        ac_cond_shard_free(&first);
        return cli_fail(AC_EINTERNAL, "out of memory");
    }
    size_t k = 0;
    av[k++] = (char *)"condition";
    for (size_t w = 0; w < first.nwords; w++)
        av[k++] = first.words[w];
    for (int f = 1; f <= nfiles; f++) {
        av[k++] = (char *)"--merge-from";
        av[k++] = argv[f];
    }
    for (int i = 1 + nfiles; i < argc; i++)
        av[k++] = argv[i];
    av[k] = NULL;
    int st = cmd_condition((int)k, av);
    free(av);
    ac_cond_shard_free(&first);
    return st;
}
