## src/cli/ — the attncheck program: parses options, runs the library, prints and writes
## (included by the top-level Makefile.am)

attncheck_SOURCES += \
	src/cli/cli.h \
	src/cli/main.c \
	src/cli/util.c \
	src/cli/cmd_rep_theorem.c \
	src/cli/cmd_separate.c \
	src/cli/cmd_condition.c \
	src/cli/cmd_report.c \
	src/cli/cmd_train.c

