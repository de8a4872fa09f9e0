## src/learned/ — the theorems on learned weights: experiments that train with
## the training stack and certify what was learned (attncheck/learned.h)
## (included by the top-level Makefile.am)

src_libattncheck_la_SOURCES += \
	src/learned/learned_impl.h \
	src/learned/t1_transition.c \
	src/learned/fitp.c \
	src/learned/students.c \
	src/learned/kappa.c
