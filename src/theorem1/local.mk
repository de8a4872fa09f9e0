## src/theorem1/ — Theorem 1 of paper 1: one head represents P (instances, the
## construction of eqs. (4)-(7), the exact decision, refinement)
## (included by the top-level Makefile.am)

src_libattncheck_la_SOURCES += \
	src/theorem1/t1_impl.h \
	src/theorem1/instance.c \
	src/theorem1/construct.c \
	src/theorem1/t1_normgap.c \
	src/theorem1/xrank.c \
	src/theorem1/exact.c \
	src/theorem1/decide.c \
	src/theorem1/t1_decide.h \
	src/theorem1/decide_rank.c \
	src/theorem1/t1_stage0.h \
	src/theorem1/decide0.c \
	src/theorem1/decide0_pi.c \
	src/theorem1/decide_summary.c \
	src/theorem1/refine.c \
	src/theorem1/t1_bounds.h \
	src/theorem1/bounds.c \
	src/theorem1/bounds_d1.c \
	src/theorem1/bounds_resid.c \
	src/theorem1/upper.c \
	src/theorem1/check.c \
	src/theorem1/result.c \
	src/theorem1/t1_mask.h \
	src/theorem1/mask.c \
	src/theorem1/mask_rank.c \
	src/theorem1/mask_construct.c \
	src/theorem1/mask_bounds.c \
	src/theorem1/mask_check.c

# unit tests of this module
check_PROGRAMS += tests/test_theorem1
UNIT_TESTS += tests/test_theorem1
tests_test_theorem1_SOURCES = tests/test_theorem1.c tests/testutil.h
tests_test_theorem1_CFLAGS = $(TEST_CFLAGS)
tests_test_theorem1_LDADD = $(TEST_LIBS) $(LAPACKE_LIBS)

check_PROGRAMS += tests/test_t1_bounds
UNIT_TESTS += tests/test_t1_bounds
tests_test_t1_bounds_SOURCES = tests/test_t1_bounds.c tests/testutil.h
tests_test_t1_bounds_CFLAGS = $(TEST_CFLAGS)
tests_test_t1_bounds_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/test_theorem1_decide
UNIT_TESTS += tests/test_theorem1_decide
tests_test_theorem1_decide_SOURCES = tests/test_theorem1_decide.c tests/testutil.h
tests_test_theorem1_decide_CFLAGS = $(TEST_CFLAGS)
tests_test_theorem1_decide_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/test_t1_construct
UNIT_TESTS += tests/test_t1_construct
tests_test_t1_construct_SOURCES = tests/test_t1_construct.c tests/testutil.h
tests_test_t1_construct_CFLAGS = $(TEST_CFLAGS)
tests_test_t1_construct_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/test_t1_pinv
UNIT_TESTS += tests/test_t1_pinv
tests_test_t1_pinv_SOURCES = tests/test_t1_pinv.c tests/testutil.h
tests_test_t1_pinv_CFLAGS = $(TEST_CFLAGS)
tests_test_t1_pinv_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/test_t1_stage0
UNIT_TESTS += tests/test_t1_stage0
tests_test_t1_stage0_SOURCES = tests/test_t1_stage0.c tests/testutil.h
tests_test_t1_stage0_CFLAGS = $(TEST_CFLAGS)
tests_test_t1_stage0_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/test_t1_resid
UNIT_TESTS += tests/test_t1_resid
tests_test_t1_resid_SOURCES = tests/test_t1_resid.c tests/testutil.h
tests_test_t1_resid_CFLAGS = $(TEST_CFLAGS)
tests_test_t1_resid_LDADD = $(TEST_LIBS)

# the masked heads on files, for tests/t1_mask_hostile.py
check_PROGRAMS += tests/t1_mask_tool
tests_t1_mask_tool_SOURCES = tests/t1_mask_tool.c
tests_t1_mask_tool_LDADD = src/libattncheck.la
check_PROGRAMS += tests/test_t1_mask
UNIT_TESTS += tests/test_t1_mask
tests_test_t1_mask_SOURCES = tests/test_t1_mask.c tests/testutil.h
tests_test_t1_mask_CFLAGS = $(TEST_CFLAGS)
tests_test_t1_mask_LDADD = $(TEST_LIBS)
