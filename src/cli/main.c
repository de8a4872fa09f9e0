/* main.c — the attncheck program: a table of subcommands (as in git.c). */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "attncheck/blas.h"
#include "attncheck/inspect.h"
#include "cli.h"

const cli_command cli_commands[] = {
    {"rep-theorem", cmd_rep_theorem, NULL, NULL, &ac_cmd_rep_theorem},
    {"separate", cmd_separate, NULL, NULL, &ac_cmd_separate},
    {"condition", cmd_condition, NULL, NULL, &ac_cmd_condition},
    {"merge", cmd_merge, NULL, NULL, &ac_cmd_merge},
    {"train", cmd_train, NULL, NULL, &ac_cmd_train},
    {"report", cmd_report, NULL, NULL, &ac_cmd_report},
    {"inspect", cmd_inspect, NULL, NULL, &ac_cmd_inspect},
    {NULL, NULL, NULL, NULL, NULL},
};

const cli_command *cli_find_command(const char *name)
{
    for (const cli_command *c = cli_commands; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

static const char main_help_head[] =
    "Usage: attncheck [--help | --version] COMMAND [OPTIONS]\n"
    "       attncheck help COMMAND\n"
    "\n"
    "Checks the theory of multi-head attention on concrete instances with\n"
    "rigorous verdicts: PROVED, REFUTED or UNDECIDED, each with a certificate\n"
    "(stage, precision and rigorous bounds).\n"
    "\n"
    "Commands:\n";

static const char main_help_tail[] =
    "\n"
    "Exit status (every command):\n"
    "  0 proved, 1 refuted, 2 undecided, 64 usage error, 65 bad input data,\n"
    "  66 cannot open input, 70 internal error, 73 cannot create output.\n"
    "\n"
    "Environment:\n"
    "  OPENBLAS_CORETYPE      OpenBLAS kernels; set automatically when OpenBLAS\n"
    "                         misdetects the CPU (see attncheck(1), BLAS)\n"
    "  ATTNCHECK_NO_BLAS_FIX  set to keep OpenBLAS's own choice\n"
    "\n"
    "See attncheck(1) and attncheck-COMMAND(1).\n";

static void print_main_help(FILE *f)
{
    fputs(main_help_head, f);
    for (const cli_command *c = cli_commands; c->name; c++)
        fprintf(f, "  %-13s %s\n", c->name, c->lib ? c->lib->summary : c->summary);
    fputs(main_help_tail, f);
}

static void print_command_help(const cli_command *c)
{
    if (c->lib)
        cli_print_help(stdout, c->lib);
    else
        fputs(c->help, stdout);
}

static void print_version(void)
{
    printf("attncheck %s\n", PACKAGE_VERSION);
    printf("License GPL-3.0-or-later <https://gnu.org/licenses/gpl.html>: free software,\n"
           "you may change and share it; there is NO WARRANTY, to the extent permitted by law.\n");
    printf("BLAS kernels: %s (%d threads)\n", ac_blas_corename(), ac_blas_get_threads());
}

static int run(int argc, char **argv)
{
    ac_blas_fix_core(argv);
    gsl_set_error_handler_off(); /* GSL errors are handled, never fatal */
    if (argc < 2) {
        print_main_help(stderr);
        return AC_EUSAGE;
    }
    const char *a = argv[1];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
        print_main_help(stdout);
        return 0;
    }
    if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
        print_version();
        return 0;
    }
    if (strcmp(a, "help") == 0) {
        if (argc < 3) {
            print_main_help(stdout);
            return 0;
        }
        const cli_command *c = cli_find_command(argv[2]);
        if (!c)
            return cli_usage("help: no such command '%s'", argv[2]);
        print_command_help(c);
        return 0;
    }
    if (a[0] == '-')
        return cli_usage("unknown option '%s' before the command", a);
    const cli_command *c = cli_find_command(a);
    if (!c)
        return cli_usage("'%s' is not an attncheck command", a);
    cli_cmd_name = c->name;
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            print_command_help(c);
            return 0;
        }
    return c->run(argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
    /* stdout is checked, and the output directories committed, here */
    return cli_finish(run(argc, argv));
}
