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
	src/theorem2/reach.c \
	src/theorem2/bound.c \
	src/theorem2/trace.c \
	src/theorem2/audit.c \
	src/theorem2/embed.c \
	src/theorem2/embed_check.c \
	src/theorem2/identity.c \
	src/theorem2/headcount.c

# The hostile classes of Theorem 2 in full (~140 instances re-checked with
# fractions and mpmath; `make check` runs the smoke subset of
# tests/t2_hostile.sh).
check-t2-hostile: attncheck
	T2_HOSTILE=full ATTNCHECK=./attncheck PYTHON3='$(PYTHON3)' top_srcdir='$(abs_top_srcdir)' \
	  $(SHELL) $(srcdir)/tests/t2_hostile.sh
.PHONY: check-t2-hostile

# unit tests of this module: src/theorem2/test/, one Check program per file
# (its source: NAME.c; its libraries: LDADD, Makefile.am, "tests")
THEOREM2_TESTS = \
	src/theorem2/test/test_theorem2 \
	src/theorem2/test/test_identity \
	src/theorem2/test/test_headcount
check_PROGRAMS += $(THEOREM2_TESTS)
UNIT_TESTS += $(THEOREM2_TESTS)
src_theorem2_test_test_theorem2_CFLAGS = $(TEST_CFLAGS)
src_theorem2_test_test_identity_CFLAGS = $(TEST_CFLAGS)
src_theorem2_test_test_headcount_CFLAGS = $(TEST_CFLAGS)
