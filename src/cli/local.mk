## src/cli/ — the attncheck program: parses options, runs the library, prints and writes
## (included by the top-level Makefile.am).  One block per command, so that
## each command's files can be listed without touching the others'.

# the command table, shared parsing, messages and output helpers
attncheck_SOURCES += \
	src/cli/cli.h \
	src/cli/main.c \
	src/cli/util.c

# attncheck rep-theorem
attncheck_SOURCES += \
	src/cli/cmd_rep_theorem.c

# attncheck separate
attncheck_SOURCES += \
	src/cli/cmd_separate.c

# attncheck condition
attncheck_SOURCES += \
	src/cli/cmd_condition.c

# attncheck train
attncheck_SOURCES += \
	src/cli/cmd_train.c \
	src/cli/train_cli.h \
	src/cli/train_run.c \
	src/cli/train_progress.c

# attncheck report
attncheck_SOURCES += \
	src/cli/cmd_report.c
