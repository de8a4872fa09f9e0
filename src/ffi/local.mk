## src/ffi/ — flat entry points for foreign-function interfaces (the Python package)
## (included by the top-level Makefile.am)

src_libattncheck_la_SOURCES += \
	src/ffi/ffi.c
