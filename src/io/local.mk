## src/io/ — .npy files, JSON writer and reader, atomic files and output directories
## (included by the top-level Makefile.am)

src_libattncheck_la_SOURCES += \
	src/io/npy.c \
	src/io/npy_header.c \
	src/io/npz.c \
	src/io/npy_impl.h \
	src/io/fileio.c \
	src/io/json.c \
	src/io/jsonparse.c \
	src/io/jsonparse.h

# unit tests of this module
check_PROGRAMS += tests/test_json tests/test_npy
UNIT_TESTS += tests/test_json tests/test_npy
tests_test_json_SOURCES = tests/test_json.c
tests_test_json_CFLAGS = $(TEST_CFLAGS)
tests_test_json_LDADD = $(TEST_LIBS)
tests_test_npy_SOURCES = tests/test_npy.c
tests_test_npy_CFLAGS = $(TEST_CFLAGS)
tests_test_npy_LDADD = $(TEST_LIBS)
