## src/nn/ — the trainable attention stack: layers, model, tasks, trainer, checkpoints
## (included by the top-level Makefile.am)

src_libattncheck_la_SOURCES += \
	src/nn/nn_impl.h \
	src/nn/layers.c \
	src/nn/attn_fused.h \
	src/nn/attn_fused.c \
	src/nn/softmax_fused.c \
	src/nn/nn_tgemm.h \
	src/nn/nn_tgemm.c \
	src/nn/attn_tiled.c \
	src/nn/attn_merged.c \
	src/nn/model.c \
	src/nn/forward.c \
	src/nn/backward.c \
	src/nn/adamw.c \
	src/nn/config.c \
	src/nn/data_text.c \
	src/nn/data_listops.c \
	src/nn/data_teacher.c \
	src/nn/data_fitp.c \
	src/nn/fitp_opt.c \
	src/nn/trainer.c \
	src/nn/checkpoint.c \
	src/nn/checkpoint_load.c

# unit tests of this module
check_PROGRAMS += tests/test_nn tests/test_nn_attn tests/test_nn_tgemm tests/test_train tests/test_fitp
UNIT_TESTS += tests/test_nn tests/test_nn_attn tests/test_nn_tgemm tests/test_train tests/test_fitp
tests_test_nn_SOURCES = tests/test_nn.c tests/testutil.h
tests_test_nn_CFLAGS = $(TEST_CFLAGS)
tests_test_nn_LDADD = $(TEST_LIBS)
tests_test_nn_attn_SOURCES = tests/test_nn_attn.c tests/testutil.h
tests_test_nn_attn_CFLAGS = $(TEST_CFLAGS)
tests_test_nn_attn_LDADD = $(TEST_LIBS)
tests_test_nn_tgemm_SOURCES = tests/test_nn_tgemm.c tests/testutil.h
tests_test_nn_tgemm_CFLAGS = $(TEST_CFLAGS)
tests_test_nn_tgemm_LDADD = $(TEST_LIBS)
tests_test_train_SOURCES = tests/test_train.c tests/testutil.h
tests_test_train_CFLAGS = $(TEST_CFLAGS)
tests_test_train_LDADD = $(TEST_LIBS)
tests_test_fitp_SOURCES = tests/test_fitp.c tests/testutil.h
tests_test_fitp_CFLAGS = $(TEST_CFLAGS)
tests_test_fitp_LDADD = $(TEST_LIBS)
