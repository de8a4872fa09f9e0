/* tty_width.c — progress lines that fit the terminal (tty_width.h). */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "tty_width.h"

int cli_tty_columns(int fd)
{
#ifdef TIOCGWINSZ
    struct winsize ws;
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
#else
    (void)fd;
#endif
    const char *c = getenv("COLUMNS");
    if (c && *c) {
        char *end;
        long v = strtol(c, &end, 10);
        if (!*end && v >= 10 && v <= 10000)
            return (int)v;
    }
    return 80;
}

void cli_fmt_duration(char *buf, size_t n, double s)
{
    if (!isfinite(s) || s < 0 || s > 1e7)
        snprintf(buf, n, "--:--");
    else if (s >= 3600)
        snprintf(buf, n, "%d:%02d:%02d", (int)(s / 3600), (int)fmod(s / 60, 60), (int)fmod(s, 60));
    else
        snprintf(buf, n, "%d:%02d", (int)(s / 60), (int)fmod(s, 60));
}

void cli_tty_line(FILE *f, const char *line, int cols)
{
    int len = (int)strlen(line), max = cols > 1 ? cols - 1 : 1;
    fprintf(f, "\r%.*s\033[K", len < max ? len : max, line);
    fflush(f);
}
