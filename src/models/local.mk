## src/models/ — pretrained checkpoints: safetensors, config.json, the
## families' layouts, runs up to a layer, every head's pattern
## (included by the top-level Makefile.am)

src_libattncheck_la_SOURCES += \
	src/models/models_impl.h \
	src/models/sha256.c \
	src/models/st_convert.c \
	src/models/safetensors.c \
	src/models/hfconfig.c \
	src/models/families.c \
	src/models/pattern.c \
	src/models/run.c

# unit tests of this module
check_PROGRAMS += tests/test_models
UNIT_TESTS += tests/test_models
tests_test_models_SOURCES = tests/test_models.c tests/testutil.h
tests_test_models_CFLAGS = $(TEST_CFLAGS)
tests_test_models_LDADD = $(TEST_LIBS)
