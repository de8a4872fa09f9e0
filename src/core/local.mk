## src/core/ — verdicts, interval and ball arithmetic, exact dyadic arithmetic, certified linear algebra, random streams, BLAS set-up
## (included by the top-level Makefile.am)

src_libattncheck_la_SOURCES += \
	src/core/common.c \
	src/core/verdict.c \
	src/core/interval.c \
	src/core/imat_split.c \
	src/core/imat_split.h \
	src/core/imat_cs.c \
	src/core/sum_exact.c \
	src/core/sum_exact.h \
	src/core/imat_cs.h \
	src/core/ball.c \
	src/core/ball.h \
	src/core/ac_arb.h \
	src/core/dyadic.c \
	src/core/dyadic.h \
	src/core/exp_kernel.h \
	src/core/exp_kernel.c \
	src/core/linalg.c \
	src/core/linalg_lu.c \
	src/core/linalg_lu.h \
	src/core/rng.c \
	src/core/rng_ars.c \
	src/core/rng_impl.h \
	src/core/blas.c

# unit tests of this module
check_PROGRAMS += tests/test_imat_split tests/test_interval tests/test_verdict tests/test_linalg tests/test_rng tests/test_rng_block tests/test_blas
UNIT_TESTS += tests/test_imat_split tests/test_interval tests/test_verdict tests/test_linalg tests/test_rng tests/test_rng_block tests/test_blas
tests_test_imat_split_SOURCES = tests/test_imat_split.c tests/imat_oracle.h tests/testutil.h
tests_test_imat_split_CFLAGS = $(TEST_CFLAGS)
tests_test_imat_split_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/test_linalg_lu
UNIT_TESTS += tests/test_linalg_lu
tests_test_linalg_lu_SOURCES = tests/test_linalg_lu.c tests/testutil.h
tests_test_linalg_lu_CFLAGS = $(TEST_CFLAGS)
tests_test_linalg_lu_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/test_imat_cs
UNIT_TESTS += tests/test_imat_cs
tests_test_imat_cs_SOURCES = tests/test_imat_cs.c tests/imat_oracle.h tests/testutil.h
tests_test_imat_cs_CFLAGS = $(TEST_CFLAGS)
tests_test_imat_cs_LDADD = $(TEST_LIBS)
tests_test_interval_SOURCES = tests/test_interval.c tests/testutil.h
tests_test_interval_CFLAGS = $(TEST_CFLAGS)
tests_test_interval_LDADD = $(TEST_LIBS)
tests_test_verdict_SOURCES = tests/test_verdict.c tests/testutil.h
tests_test_verdict_CFLAGS = $(TEST_CFLAGS)
tests_test_verdict_LDADD = $(TEST_LIBS)
tests_test_linalg_SOURCES = tests/test_linalg.c tests/testutil.h
tests_test_linalg_CFLAGS = $(TEST_CFLAGS)
tests_test_linalg_LDADD = $(TEST_LIBS)
tests_test_rng_SOURCES = tests/test_rng.c
tests_test_rng_CFLAGS = $(TEST_CFLAGS)
tests_test_rng_LDADD = $(TEST_LIBS) $(GSL_LIBS)
tests_test_rng_block_SOURCES = tests/test_rng_block.c tests/testutil.h
tests_test_rng_block_CFLAGS = $(TEST_CFLAGS)
tests_test_rng_block_LDADD = $(TEST_LIBS)
tests_test_blas_SOURCES = tests/test_blas.c tests/testutil.h
tests_test_blas_CFLAGS = $(TEST_CFLAGS)
tests_test_blas_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/test_exp
UNIT_TESTS += tests/test_exp
tests_test_exp_SOURCES = tests/test_exp.c tests/testutil.h
tests_test_exp_CFLAGS = $(TEST_CFLAGS)
tests_test_exp_LDADD = $(TEST_LIBS)
