## src/attention/ — attention heads and multi-head layers in double, interval and ball arithmetic
## (included by the top-level Makefile.am)

src_libattncheck_la_SOURCES += \
	src/attention/multihead.c \
	src/attention/multihead_arb.h \
	src/attention/softmax.c \
	src/attention/softmax.h

# unit tests of this module
check_PROGRAMS += tests/test_multihead
UNIT_TESTS += tests/test_multihead
tests_test_multihead_SOURCES = tests/test_multihead.c tests/testutil.h
tests_test_multihead_CFLAGS = $(TEST_CFLAGS)
tests_test_multihead_LDADD = $(TEST_LIBS)
