## src/theorem1/ — Theorem 1 of paper 1: one head represents P (construction, exact decision)
## (included by the top-level Makefile.am)

src_libattncheck_la_SOURCES += \
	src/theorem1/theorem1.c

# unit tests of this module
check_PROGRAMS += tests/test_theorem1
UNIT_TESTS += tests/test_theorem1
tests_test_theorem1_SOURCES = tests/test_theorem1.c tests/testutil.h
tests_test_theorem1_CFLAGS = $(TEST_CFLAGS)
tests_test_theorem1_LDADD = $(TEST_LIBS) $(LAPACKE_LIBS)
