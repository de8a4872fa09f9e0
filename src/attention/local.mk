## src/attention/ — one attention head and the multi-head layers in double,
## interval and ball arithmetic (included by the top-level Makefile.am)

src_libattncheck_la_SOURCES += \
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

# unit tests of this module
check_PROGRAMS += tests/test_head
UNIT_TESTS += tests/test_head
tests_test_head_SOURCES = tests/test_head.c tests/testutil.h
tests_test_head_CFLAGS = $(TEST_CFLAGS)
tests_test_head_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/test_multihead
UNIT_TESTS += tests/test_multihead
tests_test_multihead_SOURCES = tests/test_multihead.c tests/testutil.h
tests_test_multihead_CFLAGS = $(TEST_CFLAGS)
tests_test_multihead_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/test_mh_gemm
UNIT_TESTS += tests/test_mh_gemm
tests_test_mh_gemm_SOURCES = tests/test_mh_gemm.c tests/testutil.h
tests_test_mh_gemm_CFLAGS = $(TEST_CFLAGS)
tests_test_mh_gemm_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/test_mh_softmax
UNIT_TESTS += tests/test_mh_softmax
tests_test_mh_softmax_SOURCES = tests/test_mh_softmax.c tests/testutil.h
tests_test_mh_softmax_CFLAGS = $(TEST_CFLAGS)
tests_test_mh_softmax_LDADD = $(TEST_LIBS)
