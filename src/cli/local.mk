## src/cli/ — the attncheck program: parses options, runs the library, prints and writes
## (included by the top-level Makefile.am).  One block per command, so that
## each command's files can be listed without touching the others'.

# the command table, shared parsing, messages and output helpers
attncheck_SOURCES += \
	src/cli/cli.h \
	src/cli/main.c \
	src/cli/util.c \
	src/cli/request_cli.c

# attncheck rep-theorem
attncheck_SOURCES += \
	src/cli/cmd_rep_theorem.c

# attncheck rep-theorem --learn (Theorem 1 on learned weights)
attncheck_SOURCES += \
	src/cli/rep_learn.h \
	src/cli/rep_learn_out.c

# attncheck separate (and --student's --csv and --plot)
attncheck_SOURCES += \
	src/cli/separate.h \
	src/cli/cmd_separate.c \
	src/cli/separate_text.c \
	src/cli/separate_student_out.c

# attncheck condition and merge (and the gnuplot helper they use)
attncheck_SOURCES += \
	src/cli/cmd_condition.c \
	src/cli/condition_cli.h \
	src/cli/condition_text.c \
	src/cli/condition_files.c \
	src/cli/cmd_merge.c \
	src/cli/condition_model.c \
	src/cli/plot.c \
	src/cli/plot.h

# attncheck train
attncheck_SOURCES += \
	src/cli/cmd_train.c \
	src/cli/train_cli.h \
	src/cli/train_progress.c \
	src/cli/train_plot.c \
	src/cli/tty_width.c \
	src/cli/tty_width.h

# attncheck report
attncheck_SOURCES += \
	src/cli/cmd_report.c \
	src/cli/report_plot.c \
	src/cli/report_plot.h

# attncheck inspect
attncheck_SOURCES += \
	src/cli/cmd_inspect.c
