## src/learned/ — the theorems on learned weights: experiments that train with
## the training stack and certify what was learned (attncheck/learned.h)
## (included by the top-level Makefile.am)

src_libattncheck_la_SOURCES += \
	src/learned/t1_transition.c \
	src/learned/fitp.c \
	src/learned/students.c \
	src/learned/kappa.c

# unit tests of this module: kappa of nearly rank-deficient blocks, the
# shape of trained attention blocks (kappa.c)
check_PROGRAMS += tests/test_model_kappa
UNIT_TESTS += tests/test_model_kappa
tests_test_model_kappa_SOURCES = tests/test_model_kappa.c tests/testutil.h
tests_test_model_kappa_CFLAGS = $(TEST_CFLAGS)
tests_test_model_kappa_LDADD = $(TEST_LIBS) $(LAPACKE_LIBS)
