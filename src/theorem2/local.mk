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
	src/theorem2/identity.c \
	src/theorem2/headcount.c

# unit tests of this module
check_PROGRAMS += tests/test_theorem2
UNIT_TESTS += tests/test_theorem2
tests_test_theorem2_SOURCES = tests/test_theorem2.c tests/testutil.h
tests_test_theorem2_CFLAGS = $(TEST_CFLAGS)
tests_test_theorem2_LDADD = $(TEST_LIBS)

# The hostile classes of Theorem 2 in full (~60 instances re-checked with
# fractions and mpmath; `make check` runs the smoke subset of
# tests/t2_hostile.sh).
check-t2-hostile: attncheck
	T2_HOSTILE=full ATTNCHECK=./attncheck PYTHON3='$(PYTHON3)' top_srcdir='$(abs_top_srcdir)' \
	  $(SHELL) $(srcdir)/tests/t2_hostile.sh
.PHONY: check-t2-hostile

check_PROGRAMS += tests/test_theorem2_identity
UNIT_TESTS += tests/test_theorem2_identity
tests_test_theorem2_identity_SOURCES = tests/test_theorem2_identity.c tests/testutil.h
tests_test_theorem2_identity_CFLAGS = $(TEST_CFLAGS)
tests_test_theorem2_identity_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_headcount
UNIT_TESTS += tests/test_headcount
tests_test_headcount_SOURCES = tests/test_headcount.c tests/testutil.h
tests_test_headcount_CFLAGS = $(TEST_CFLAGS)
tests_test_headcount_LDADD = $(TEST_LIBS)
