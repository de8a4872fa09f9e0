## src/attention/ — one attention head and the multi-head layers in double,
## interval and ball arithmetic (included by the top-level Makefile.am)

src_libattncheck_la_SOURCES += \
	src/attention/attention_impl.h \
	src/attention/head.c \
	src/attention/head_impl.h \
	src/attention/multihead.c \
	src/attention/mh_impl.h \
	src/attention/mh_forward.c \
	src/attention/mh_backward.c \
	src/attention/mh_certified.c \
	src/attention/mh_files.c \
	src/attention/mh_gemm.c \
	src/attention/mh_gemm.h \
	src/attention/mh_softmax.c \
	src/attention/mh_softmax.h \
	src/attention/multihead_arb.h \
	src/attention/softmax.c \
	src/attention/softmax.h

# unit tests of this module: src/attention/test/, one Check program per file
# (its source: NAME.c; its libraries: LDADD, Makefile.am, "tests")
ATTENTION_TESTS = \
	src/attention/test/test_head \
	src/attention/test/test_multihead \
	src/attention/test/test_mh_gemm \
	src/attention/test/test_mh_softmax
check_PROGRAMS += $(ATTENTION_TESTS)
UNIT_TESTS += $(ATTENTION_TESTS)
src_attention_test_test_head_CFLAGS = $(TEST_CFLAGS)
src_attention_test_test_multihead_CFLAGS = $(TEST_CFLAGS)
src_attention_test_test_mh_gemm_CFLAGS = $(TEST_CFLAGS)
src_attention_test_test_mh_softmax_CFLAGS = $(TEST_CFLAGS)
