/* tty_width.h — progress lines that fit the terminal (not part of the
 * library): its width, a duration as m:ss, and writing one line. */
#ifndef AC_CLI_TTY_WIDTH_H
#define AC_CLI_TTY_WIDTH_H

#include <stddef.h>
#include <stdio.h>

/* The columns of the terminal on fd: its window size, else $COLUMNS (a
 * whole number from 10 to 10000), else 80. */
int cli_tty_columns(int fd);

/* s seconds as "m:ss" or "h:mm:ss"; "--:--" when unknown (NaN, < 0). */
void cli_fmt_duration(char *buf, size_t n, double s);

/* Write line on f (a terminal) as the progress line: at the start of the
 * row, cut to cols - 1 characters (the last column would wrap), the rest
 * of the row cleared. */
void cli_tty_line(FILE *f, const char *line, int cols);

#endif
