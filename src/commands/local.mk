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

# train and report (attncheck-train(1), attncheck-report(1))
src_libattncheck_la_SOURCES += \
	src/commands/train.c \
	src/commands/report_train.c \
	src/commands/report.c

# separate (Theorem 2, --embed, --student) and the report's rows of Theorem 2
src_libattncheck_la_SOURCES += \
	src/commands/separate.c \
	src/commands/separate_json.c \
	src/commands/report_theorem2.c

# condition and merge (Theorem 3.2 of paper 2)
src_libattncheck_la_SOURCES += \
	src/commands/words.c \
	src/commands/cond_cmd.h \
	src/commands/condition.c \
	src/commands/condition_json.c \
	src/commands/merge.c \
	src/commands/report_condition.c

# inspect (every check on a pretrained model's layers and heads)
src_libattncheck_la_SOURCES += \
	src/commands/inspect_cmd.h \
	src/commands/inspect.c \
	src/commands/inspect_shard.c

# unit tests of this module: src/commands/test/, one Check program per file
# (its source: NAME.c; its libraries: LDADD, Makefile.am, "tests")
COMMANDS_TESTS = \
	src/commands/test/test_commands
check_PROGRAMS += $(COMMANDS_TESTS)
UNIT_TESTS += $(COMMANDS_TESTS)
src_commands_test_test_commands_CFLAGS = $(TEST_CFLAGS)
