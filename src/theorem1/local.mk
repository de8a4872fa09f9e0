## src/theorem1/ — Theorem 1 of paper 1: one head represents P (instances, the
## construction of eqs. (4)-(7), the exact decision, refinement)
## (included by the top-level Makefile.am)

src_libattncheck_la_SOURCES += \
	src/theorem1/t1_impl.h \
	src/theorem1/instance.c \
	src/theorem1/construct.c \
	src/theorem1/normgap_rows.c \
	src/theorem1/rank_x.c \
	src/theorem1/exact.c \
	src/theorem1/decide.c \
	src/theorem1/t1_decide.h \
	src/theorem1/rank_condition.c \
	src/theorem1/t1_stage0.h \
	src/theorem1/criterion_stage0.c \
	src/theorem1/criterion_stage0_pi.c \
	src/theorem1/decide_summary.c \
	src/theorem1/refine.c \
	src/theorem1/t1_dist.h \
	src/theorem1/dist_lower.c \
	src/theorem1/dist_d1.c \
	src/theorem1/dist_resid.c \
	src/theorem1/dist_upper.c \
	src/theorem1/check.c \
	src/theorem1/result.c \
	src/theorem1/t1_mask.h \
	src/theorem1/mask.c \
	src/theorem1/mask_rank.c \
	src/theorem1/mask_construct.c \
	src/theorem1/mask_bounds.c \
	src/theorem1/mask_check.c

# unit tests of this module: src/theorem1/test/, one Check program per file
# (its source: NAME.c; its libraries: LDADD, Makefile.am, "tests")
THEOREM1_TESTS = \
	src/theorem1/test/test_theorem1 \
	src/theorem1/test/test_decide \
	src/theorem1/test/test_construct \
	src/theorem1/test/test_pinv \
	src/theorem1/test/test_criterion_stage0 \
	src/theorem1/test/test_dist \
	src/theorem1/test/test_dist_resid \
	src/theorem1/test/test_mask
check_PROGRAMS += $(THEOREM1_TESTS)
UNIT_TESTS += $(THEOREM1_TESTS)
src_theorem1_test_test_theorem1_CFLAGS = $(TEST_CFLAGS)
src_theorem1_test_test_theorem1_LDADD = $(TEST_LIBS) $(LAPACKE_LIBS)
src_theorem1_test_test_decide_CFLAGS = $(TEST_CFLAGS)
src_theorem1_test_test_construct_CFLAGS = $(TEST_CFLAGS)
src_theorem1_test_test_pinv_CFLAGS = $(TEST_CFLAGS)
src_theorem1_test_test_criterion_stage0_CFLAGS = $(TEST_CFLAGS)
src_theorem1_test_test_dist_CFLAGS = $(TEST_CFLAGS)
src_theorem1_test_test_dist_resid_CFLAGS = $(TEST_CFLAGS)
src_theorem1_test_test_mask_CFLAGS = $(TEST_CFLAGS)

# the masked heads on files, for tests/t1_mask_hostile.py
check_PROGRAMS += tests/t1_mask_tool
tests_t1_mask_tool_SOURCES = tests/t1_mask_tool.c
tests_t1_mask_tool_LDADD = src/libattncheck.la
