## src/io/ — .npy files, JSON writer and reader, atomic files and output directories
## (included by the top-level Makefile.am)

src_libattncheck_la_SOURCES += \
	src/io/io_impl.h \
	src/io/npy.c \
	src/io/npy_header.c \
	src/io/npz.c \
	src/io/npy_impl.h \
	src/io/fileio.c \
	src/io/stagedir.c \
	src/io/reslimits.c \
	src/io/json.c \
	src/io/jsonparse.c \
	src/io/jsonparse.h \
	src/io/sumjson.c \
	src/io/sumjson.h

# unit tests of this module: src/io/test/, one Check program per file
# (its source: NAME.c; its libraries: LDADD, Makefile.am, "tests")
IO_TESTS = \
	src/io/test/test_json \
	src/io/test/test_jsonparse \
	src/io/test/test_npy \
	src/io/test/test_fileio
check_PROGRAMS += $(IO_TESTS)
UNIT_TESTS += $(IO_TESTS)
src_io_test_test_json_CFLAGS = $(TEST_CFLAGS)
src_io_test_test_jsonparse_CFLAGS = $(TEST_CFLAGS)
src_io_test_test_npy_CFLAGS = $(TEST_CFLAGS)
src_io_test_test_fileio_CFLAGS = $(TEST_CFLAGS)

# the outward rounding of printed bounds against exact decimals (tests/fmt_outward.sh)
check_PROGRAMS += tests/fmt_tool
tests_fmt_tool_SOURCES = tests/fmt_tool.c
tests_fmt_tool_LDADD = src/libattncheck.la
