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
	src/models/run.c \
	src/models/circuit.c \
	src/models/inspect.c

# unit tests of this module: src/models/test/, one Check program per file
# (its source: NAME.c; its libraries: LDADD, Makefile.am, "tests")
MODELS_TESTS = \
	src/models/test/test_models \
	src/models/test/test_st_convert \
	src/models/test/test_circuit
check_PROGRAMS += $(MODELS_TESTS)
UNIT_TESTS += $(MODELS_TESTS)
src_models_test_test_models_CFLAGS = $(TEST_CFLAGS)
src_models_test_test_st_convert_CFLAGS = $(TEST_CFLAGS)
src_models_test_test_circuit_CFLAGS = $(TEST_CFLAGS)
