/* plot.c — gnuplot output for the commands (plot.h). */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "plot.h"

const char *cli_plot_terminal(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (!dot)
        return NULL;
    if (strcmp(dot, ".svg") == 0)
        return "svg size 900,620 dynamic enhanced font 'Helvetica,13' background rgb 'white'";
    if (strcmp(dot, ".png") == 0)
        return "pngcairo size 1000,700 enhanced font 'Helvetica,12'";
    if (strcmp(dot, ".pdf") == 0)
        return "pdfcairo size 7in,4.8in enhanced font 'Helvetica,11'";
    return NULL;
}

const char *cli_find_gnuplot(char *buf, size_t n)
{
    const char *g = getenv("ATTNCHECK_GNUPLOT");
    if (!g || !*g)
        g = GNUPLOT_DEFAULT;
    if (strchr(g, '/'))
        return access(g, X_OK) == 0 ? g : NULL;
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    while (*path) {
        const char *c = strchr(path, ':');
        size_t len = c ? (size_t)(c - path) : strlen(path);
        if (len > 0 && len + strlen(g) + 2 < n) {
            memcpy(buf, path, len);
            buf[len] = '/';
            strcpy(buf + len + 1, g);
            if (access(buf, X_OK) == 0)
                return buf;
        }
        if (!c)
            break;
        path = c + 1;
    }
    return NULL;
}

void cli_gp_quote(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f) {
            /* a newline would end the command and start another one: no
             * control character ever reaches the script */
            fputc('?', f);
            continue;
        }
        if (c == '\'')
            fputc('\'', f);
        fputc(c, f);
    }
    fputc('\'', f);
}

void cli_gp_val(FILE *f, double x)
{
    if (!isfinite(x))
        fputs(" NaN", f);
    else
        fprintf(f, " %.10g", x);
}

int cli_run_gnuplot(const char *gp, int out_fd, void (*write)(FILE *f, void *ctx), void *ctx)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fd[0], 0);
        close(fd[0]);
        close(fd[1]);
        /* the picture goes to gnuplot's standard output (the script has no
         * "set output"): no file name reaches the script */
        int out = out_fd >= 0 ? out_fd : open("/dev/null", O_WRONLY);
        if (out < 0 || dup2(out, 1) < 0)
            _exit(127);
        execl(gp, "gnuplot", (char *)NULL);
        _exit(127);
    }
    close(fd[0]);
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);
    FILE *f = fdopen(fd[1], "w");
    if (f) {
        write(f, ctx);
        fclose(f);
    } else {
        close(fd[1]);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    signal(SIGPIPE, old);
    if (!WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

/* ---- --csv and --plot ------------------------------------------------------------ */

int cli_plot_files_open(cli_plot_files *f, const char *csv, const char *plot)
{
    ac_err err;
    int st;
    memset(f, 0, sizeof *f);
    ac_err_clear(&err);
    f->csv_name = csv;
    f->plot_name = plot;
    if (plot) {
        if (!(f->gp = cli_find_gnuplot(f->gpbuf, sizeof f->gpbuf)))
            return cli_fail(AC_ECANTCREAT, "--plot %s: gnuplot not found (install it: apt-get "
                            "install gnuplot-nox, or set ATTNCHECK_GNUPLOT); nothing was "
                            "computed", plot);
        if ((st = ac_atomic_open(&f->plot, plot, &err)))
            return cli_fail_err(&err);
    }
    if (csv && (st = ac_atomic_open(&f->csv, csv, &err))) {
        ac_atomic_abort(&f->plot);
        return cli_fail_err(&err);
    }
    return AC_OK;
}

void cli_plot_files_abort(cli_plot_files *f)
{
    ac_atomic_abort(&f->csv);
    ac_atomic_abort(&f->plot);
}

int cli_plot_files_commit(cli_plot_files *f, void (*write_csv)(FILE *f, void *ctx),
                          void (*write_plot)(FILE *f, void *ctx), void *ctx)
{
    ac_err err;
    int st;
    ac_err_clear(&err);
    if (f->plot_name) {
        int gs = cli_run_gnuplot(f->gp, fileno(f->plot.fp), write_plot, ctx);
        if (gs != 0) {
            cli_plot_files_abort(f);
            return cli_fail(AC_ECANTCREAT, "--plot %s: gnuplot (%s) failed (status %d)",
                            f->plot_name, f->gp, gs);
        }
    }
    if (f->csv_name) {
        write_csv(f->csv.fp, ctx);
        if ((st = ac_atomic_commit(&f->csv, &err))) {
            cli_plot_files_abort(f);
            return cli_fail_err(&err);
        }
    }
    if (f->plot_name && (st = ac_atomic_commit(&f->plot, &err)))
        return cli_fail_err(&err);
    return AC_OK;
}
