## src/commands/ — the program's commands as library calls: one option table,
## one run and one JSON serialiser per command (attncheck/commands.h)
## (included by the top-level Makefile.am)

src_libattncheck_la_SOURCES += \
	src/commands/cmd_impl.h \
	src/commands/options.c \
	src/commands/request.c \
	src/commands/envelope.c \
	src/commands/inputs.c \
	src/commands/rep_theorem.c \
	src/commands/report_rows.c \
	src/commands/report_theorem1.c

# condition and merge (Theorem 3.2 of paper 2)
src_libattncheck_la_SOURCES += \
	src/commands/words.c \
	src/commands/cond_cmd.h \
	src/commands/condition.c \
	src/commands/condition_json.c \
	src/commands/merge.c \
	src/commands/report_condition.c
