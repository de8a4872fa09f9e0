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

# the oracle test of the certified attention block (tests/cond_block.sh)
check_PROGRAMS += tests/cond_block_tool
tests_cond_block_tool_SOURCES = tests/cond_block_tool.c
tests_cond_block_tool_LDADD = src/libattncheck.la

# unit tests of this module: src/conditioning/test/, one Check program per file
# (its source: NAME.c; its libraries: LDADD, Makefile.am, "tests")
CONDITIONING_TESTS = \
	src/conditioning/test/test_rmt \
	src/conditioning/test/test_condition \
	src/conditioning/test/test_kappa_clustered
check_PROGRAMS += $(CONDITIONING_TESTS)
UNIT_TESTS += $(CONDITIONING_TESTS)
src_conditioning_test_test_rmt_CFLAGS = $(TEST_CFLAGS)
src_conditioning_test_test_condition_CFLAGS = $(TEST_CFLAGS)
src_conditioning_test_test_kappa_clustered_CFLAGS = $(TEST_CFLAGS)
src_conditioning_test_test_kappa_clustered_LDADD = $(TEST_LIBS) $(LAPACKE_LIBS)

# The hostile shards in full (every field of a sample of each result,
# ~1500 merges; `make check` runs the smoke subset of tests/shard_hostile.sh).
check-shard-hostile: attncheck
	SHARD_HOSTILE=full ATTNCHECK=./attncheck PYTHON3='$(PYTHON3)' top_srcdir='$(abs_top_srcdir)' \
	  $(SHELL) $(srcdir)/tests/shard_hostile.sh
.PHONY: check-shard-hostile
