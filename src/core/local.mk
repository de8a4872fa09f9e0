## src/core/ — verdicts, interval and ball arithmetic, exact dyadic arithmetic, certified linear algebra, random streams, BLAS set-up
## (included by the top-level Makefile.am)

src_libattncheck_la_SOURCES += \
	src/core/core_impl.h \
	src/core/common.c \
	src/core/verdict.c \
	src/core/interval.c \
	src/core/imat_split.c \
	src/core/imat_split.h \
	src/core/imat_cs.c \
	src/core/sum_exact.c \
	src/core/sum_exact.h \
	src/core/fnv.h \
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

# unit tests of this module: src/core/test/, one Check program per file
# (its source: NAME.c; its libraries: LDADD, Makefile.am, "tests")
CORE_TESTS = \
	src/core/test/test_blas \
	src/core/test/test_interval \
	src/core/test/test_verdict \
	src/core/test/test_linalg \
	src/core/test/test_linalg_lu \
	src/core/test/test_imat_split \
	src/core/test/test_imat_cs \
	src/core/test/test_sum_exact \
	src/core/test/test_exp \
	src/core/test/test_dyadic \
	src/core/test/test_rng \
	src/core/test/test_rng_block
check_PROGRAMS += $(CORE_TESTS)
UNIT_TESTS += $(CORE_TESTS)
src_core_test_test_blas_CFLAGS = $(TEST_CFLAGS)
src_core_test_test_interval_CFLAGS = $(TEST_CFLAGS)
src_core_test_test_verdict_CFLAGS = $(TEST_CFLAGS)
src_core_test_test_linalg_CFLAGS = $(TEST_CFLAGS)
src_core_test_test_linalg_lu_CFLAGS = $(TEST_CFLAGS)
src_core_test_test_imat_split_SOURCES = src/core/test/test_imat_split.c src/core/test/imat_oracle.h
src_core_test_test_imat_split_CFLAGS = $(TEST_CFLAGS)
src_core_test_test_imat_cs_SOURCES = src/core/test/test_imat_cs.c src/core/test/imat_oracle.h
src_core_test_test_imat_cs_CFLAGS = $(TEST_CFLAGS)
src_core_test_test_sum_exact_CFLAGS = $(TEST_CFLAGS)
src_core_test_test_exp_CFLAGS = $(TEST_CFLAGS)
src_core_test_test_dyadic_CFLAGS = $(TEST_CFLAGS)
src_core_test_test_rng_CFLAGS = $(TEST_CFLAGS)
src_core_test_test_rng_LDADD = $(TEST_LIBS) $(GSL_LIBS)
src_core_test_test_rng_block_CFLAGS = $(TEST_CFLAGS)
