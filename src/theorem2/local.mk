## src/theorem2/ — Theorem 2 of paper 1: fixed head size is more expressive (hypotheses, cases, search, audit, embedding)
## (included by the top-level Makefile.am)

src_libattncheck_la_SOURCES += \
	src/theorem2/search.c

# unit tests of this module
check_PROGRAMS += tests/test_theorem2
UNIT_TESTS += tests/test_theorem2
tests_test_theorem2_SOURCES = tests/test_theorem2.c tests/testutil.h
tests_test_theorem2_CFLAGS = $(TEST_CFLAGS)
tests_test_theorem2_LDADD = $(TEST_LIBS)
