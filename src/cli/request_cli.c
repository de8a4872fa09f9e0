/* request_cli.c — the program's side of the option tables
 * (attncheck/commands.h): getopt_long's table and the option switch built
 * from a command's table, --help written from it, and the outputs every
 * command writes the same way (--json, --out-dir). */
#include <config.h>

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/fileio.h"
#include "attncheck/npy.h"
#include "cli.h"

/* ---- parsing ---------------------------------------------------------------------- */

int cli_parse_request(ac_request *r, int argc, char **argv)
{
    const ac_command *c = ac_request_command(r);
    const ac_opt *operands = NULL; /* the option the operands are values of */
    size_t n = 0;
    for (const ac_opt *o = c->opts; o->name; o++)
        n++;
    struct option *lo = calloc(n + 2, sizeof *lo);
    if (!lo)
        return cli_fail(AC_EINTERNAL, "out of memory");
    size_t k = 0; /* the program's options: not those of the library only */
    for (size_t i = 0; i < n; i++) {
        if (c->opts[i].flags & AC_OPTF_LIBRARY)
            continue;
        if (c->opts[i].flags & AC_OPTF_OPERANDS) { /* not an option of the command line */
            operands = &c->opts[i];
            continue;
        }
        lo[k].name = c->opts[i].name;
        lo[k].has_arg = c->opts[i].kind == AC_OPT_FLAG ? no_argument : required_argument;
        lo[k].val = 256 + (int)i;
        k++;
    }
    lo[k].name = "help";
    lo[k].has_arg = no_argument;
    lo[k].val = 'h';
    int ch, st = AC_OK;
    ac_err err;
    optind = 1;
    opterr = 0;
    while (!st && (ch = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
        if (ch < 256 || ch >= 256 + (int)n) {
            st = cli_bad_option(ch, argv);
            break;
        }
        ac_err_clear(&err);
        if (ac_request_set(r, c->opts[ch - 256].name, optarg, &err))
            st = cli_usage("%s", err.msg);
    }
    free(lo);
    for (; !st && operands && optind < argc; optind++) {
        ac_err_clear(&err);
        if (ac_request_set(r, operands->name, argv[optind], &err))
            st = cli_usage("%s", err.msg);
    }
    if (!st)
        st = cli_no_operands(argc, argv);
    return st;
}

int cli_check_request(ac_request *r)
{
    ac_err err;
    char buf[2 * AC_ERR_MSG_MAX];
    ac_err_clear(&err);
    const ac_command *c = ac_request_command(r);
    int st = c->check ? c->check(ac_request_options(r), &err) : AC_OK;
    if (st == AC_EUSAGE)
        return cli_usage("%s", cli_err_message(buf, sizeof buf, &err));
    if (st) /* a file the rules read (train --resume's checkpoint) */
        return cli_fail_err(&err);
    return AC_OK;
}

int cli_run_request(ac_request *r, void *hooks)
{
    ac_err err;
    ac_err_clear(&err);
    int st = cli_check_request(r);
    if (st)
        return st;
    if (ac_request_run(r, hooks, &err))
        return cli_fail_err(&err);
    return AC_OK;
}

/* ---- --help ----------------------------------------------------------------------- */

#define HELP_COL 20
#define HELP_WIDTH 79

/* text wrapped at HELP_WIDTH, every line indented to HELP_COL, the first
 * starting at column *col */
static void wrap(FILE *f, const char *text, int col)
{
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        size_t w = strcspn(p, " \n");
        if (col > HELP_COL && col + 1 + (int)w > HELP_WIDTH) {
            fprintf(f, "\n%*s", HELP_COL, "");
            col = HELP_COL;
        } else if (col > HELP_COL) {
            fputc(' ', f);
            col++;
        }
        fwrite(p, 1, w, f);
        col += (int)w;
        p += w;
        if (*p == '\n') { /* a forced break */
            fprintf(f, "\n%*s", HELP_COL, "");
            col = HELP_COL;
            p++;
        }
    }
    fputc('\n', f);
}

void cli_opt_help(char *buf, size_t n, const ac_opt *o)
{
    const char *h = o->help ? o->help : "";
    const char *mark = strstr(h, "(default");
    const char *def = o->def_show ? o->def_show : o->def;
    if (mark && !strchr(");,", mark[8]))
        mark = NULL;
    if (!def || o->kind == AC_OPT_FLAG)
        snprintf(buf, n, "%s", h);
    else if (mark)
        snprintf(buf, n, "%.*s(default %s%s", (int)(mark - h), h, def, mark + 8);
    else
        snprintf(buf, n, "%s%s(default %s)", h, *h ? " " : "", def);
}

static size_t spec_of(char *buf, size_t n, const ac_opt *o)
{
    if (o->flags & AC_OPTF_OPERANDS) /* the operands: "FILE..." */
        return (size_t)snprintf(buf, n, "%s...", o->arg ? o->arg : "ARG");
    return (size_t)snprintf(buf, n, "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
}

void cli_print_help(FILE *f, const ac_command *c)
{
    fprintf(f, "Usage: %s\n\n%s\n", c->synopsis, c->description);
    for (const ac_opt *o = c->opts; o->name; o++) {
        if (o->flags & AC_OPTF_LIBRARY)
            continue;
        if (o->group)
            fprintf(f, "%s%s\n", o == c->opts ? "\n" : "", o->group);
        else if (o == c->opts)
            fputc('\n', f);
        char spec[256];
        size_t len = spec_of(spec, sizeof spec, o);
        while ((o->flags & AC_OPTF_JOIN) && o[1].name && len < sizeof spec) {
            o++;
            len += (size_t)snprintf(spec + len, sizeof spec - len, ", ");
            len += spec_of(spec + len, sizeof spec - len, o);
        }
        char help[2048];
        cli_opt_help(help, sizeof help, o);
        fprintf(f, "  %s", spec);
        if (2 + (int)len + 1 > HELP_COL - 1) {
            fprintf(f, "\n%*s", HELP_COL, "");
            wrap(f, help, HELP_COL);
        } else {
            fprintf(f, "%*s", HELP_COL - 2 - (int)len, "");
            wrap(f, help, HELP_COL);
        }
    }
    fprintf(f, "  -h, --help        show this help\n");
    if (c->epilogue && c->epilogue[0])
        fprintf(f, "\n%s\n", c->epilogue);
}

/* ---- outputs ------------------------------------------------------------------------ */

typedef struct {
    const ac_request *r;
} json_ctx;

static void write_json_cb(ac_json *j, const void *ctx)
{
    const ac_request *r = ((const json_ctx *)ctx)->r;
    const ac_command *c = ac_request_command(r);
    c->write_json(j, ac_request_options((ac_request *)r), ac_request_result(r));
}

int cli_print_json(const ac_request *r)
{
    ac_json *j = cli_json_stdout();
    json_ctx ctx = {r};
    write_json_cb(j, &ctx);
    return cli_json_finish(j);
}

/* --out-dir: the arrays, and certificate.json when cert */
static int write_outdir(const ac_request *r, const char *dir, int cert)
{
    cli_outdir o;
    ac_err err;
    int st = AC_OK;
    ac_err_clear(&err);
    size_t n = ac_request_arrays(r, NULL, 0); /* how many */
    ac_out_array *arr = calloc(n ? n : 1, sizeof *arr);
    if (!arr)
        return cli_fail(AC_EINTERNAL, "out of memory");
    if ((st = cli_outdir_begin(&o, dir, &err))) {
        free(arr);
        return cli_fail_err(&err);
    }
    n = ac_request_arrays(r, arr, n);
    for (size_t i = 0; !st && i < n; i++) {
        char name[128];
        snprintf(name, sizeof name, "%s.npy", arr[i].name);
        const char *path = cli_outdir_path(&o, name);
        ac_array a;
        memset(&a, 0, sizeof a);
        a.ndim = arr[i].ndim;
        a.size = 1;
        for (size_t k = 0; k < a.ndim; k++) {
            a.shape[k] = arr[i].shape[k];
            a.size *= a.shape[k];
        }
        a.data = (double *)arr[i].data; /* a view: ac_npy_write does not free it */
        if (!path)
            st = ac_err_set(&err, AC_EINTERNAL, "out of memory");
        else {
            st = ac_npy_write(path, &a, &err);
            ac_stagedir_unstage_err(&o.stage, &err);
        }
    }
    json_ctx ctx = {r};
    free(arr);
    if (st ||
        (cert && (st = cli_outdir_write_json(&o, "certificate.json", write_json_cb, &ctx, &err))) ||
        (st = cli_outdir_commit(&o, &err))) {
        cli_outdir_abort(&o);
        return cli_fail_err(&err);
    }
    return AC_OK;
}

int cli_write_outdir(const ac_request *r, const char *dir)
{
    return write_outdir(r, dir, 1);
}

int cli_write_outdir_arrays(const ac_request *r, const char *dir)
{
    return write_outdir(r, dir, 0);
}
