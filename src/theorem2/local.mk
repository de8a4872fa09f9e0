## src/theorem2/ — Theorem 2 of paper 1: fixed head size is more expressive (hypotheses, cases, search, audit, embedding)
## (included by the top-level Makefile.am)

src_libattncheck_la_SOURCES += \
	src/theorem2/t2_impl.h \
	src/theorem2/hypotheses.c \
	src/theorem2/generate.c \
	src/theorem2/construct.c \
	src/theorem2/certify.c \
	src/theorem2/multimin.c \
	src/theorem2/search.c \
	src/theorem2/trace.c \
	src/theorem2/audit.c \
	src/theorem2/embed.c \
	src/theorem2/embed_check.c \
	src/theorem2/headcount.c

# unit tests of this module
check_PROGRAMS += tests/test_theorem2
UNIT_TESTS += tests/test_theorem2
tests_test_theorem2_SOURCES = tests/test_theorem2.c tests/testutil.h
tests_test_theorem2_CFLAGS = $(TEST_CFLAGS)
tests_test_theorem2_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_headcount
UNIT_TESTS += tests/test_headcount
tests_test_headcount_SOURCES = tests/test_headcount.c tests/testutil.h
tests_test_headcount_CFLAGS = $(TEST_CFLAGS)
tests_test_headcount_LDADD = $(TEST_LIBS)
