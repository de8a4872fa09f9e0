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

# unit tests of this module: src/nn/test/, one Check program per file
# (its source: NAME.c; its libraries: LDADD, Makefile.am, "tests")
NN_TESTS = \
	src/nn/test/test_nn \
	src/nn/test/test_adamw \
	src/nn/test/test_nn_attn \
	src/nn/test/test_nn_tgemm \
	src/nn/test/test_train \
	src/nn/test/test_fitp
check_PROGRAMS += $(NN_TESTS)
UNIT_TESTS += $(NN_TESTS)
src_nn_test_test_nn_CFLAGS = $(TEST_CFLAGS)
src_nn_test_test_adamw_CFLAGS = $(TEST_CFLAGS)
src_nn_test_test_nn_attn_CFLAGS = $(TEST_CFLAGS)
src_nn_test_test_nn_tgemm_CFLAGS = $(TEST_CFLAGS)
src_nn_test_test_train_CFLAGS = $(TEST_CFLAGS)
src_nn_test_test_fitp_CFLAGS = $(TEST_CFLAGS)
# the PyTorch cross-check of fit-p under a mask (tests/fitp_mask_torch.sh)
check_PROGRAMS += tests/fitp_mask_tool
tests_fitp_mask_tool_SOURCES = tests/fitp_mask_tool.c
tests_fitp_mask_tool_LDADD = src/libattncheck.la
