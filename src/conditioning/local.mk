## src/conditioning/ — Theorem 3.2 of paper 2: condition numbers of the multi-head block, random-matrix predictions
## (included by the top-level Makefile.am)

src_libattncheck_la_SOURCES += \
	src/conditioning/cond_impl.h \
	src/conditioning/tracy_widom.c \
	src/conditioning/edelman.c \
	src/conditioning/marchenko_pastur.c \
	src/conditioning/predict.c \
	src/conditioning/sample.c \
	src/conditioning/kappa.c \
	src/conditioning/sigma_min_mpfr.c \
	src/conditioning/certify.c \
	src/conditioning/certify_block.c \
	src/conditioning/stats.c \
	src/conditioning/claims.c \
	src/conditioning/run.c \
	src/conditioning/shard.c

# unit tests of this module
check_PROGRAMS += tests/test_rmt tests/test_condition
UNIT_TESTS += tests/test_rmt tests/test_condition
tests_test_rmt_SOURCES = tests/test_rmt.c tests/testutil.h
tests_test_rmt_CFLAGS = $(TEST_CFLAGS)
tests_test_rmt_LDADD = $(TEST_LIBS)
tests_test_condition_SOURCES = tests/test_condition.c tests/testutil.h
tests_test_condition_CFLAGS = $(TEST_CFLAGS)
tests_test_condition_LDADD = $(TEST_LIBS)

# the oracle test of the certified attention block (tests/cond_block.sh)
check_PROGRAMS += tests/cond_block_tool
tests_cond_block_tool_SOURCES = tests/cond_block_tool.c
tests_cond_block_tool_LDADD = src/libattncheck.la
