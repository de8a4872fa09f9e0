## tests/rel_local.mk — output integrity, resource limits, fuzzing and the
## sanitizer build (issue "Nothing lost, nothing injected"); included by the
## top-level Makefile.am.

SCRIPT_TESTS += tests/rel_integrity.sh tests/rel_kill.sh
# the fuzz replays take a second or two: in the quick tier (Makefile.am)
QUICK_SCRIPT_TESTS += tests/rel_fuzz.sh
EXTRA_DIST += tests/rel_local.mk tests/fuzz/README tests/fuzz/corpus tests/fuzz/fuzz_tmp.h

# ---- fuzz harnesses: replayed on the seed corpus by make check (any compiler)
FUZZ_TARGETS = npy json ckconfig safetensors stindex
check_PROGRAMS += tests/fuzz/replay_npy tests/fuzz/replay_json tests/fuzz/replay_ckconfig \
	tests/fuzz/replay_safetensors tests/fuzz/replay_stindex
tests_fuzz_replay_npy_SOURCES = tests/fuzz/fuzz_npy.c tests/fuzz/fuzz_replay.c
tests_fuzz_replay_npy_LDADD = src/libattncheck.la
tests_fuzz_replay_json_SOURCES = tests/fuzz/fuzz_json.c tests/fuzz/fuzz_replay.c
tests_fuzz_replay_json_LDADD = src/libattncheck.la
tests_fuzz_replay_ckconfig_SOURCES = tests/fuzz/fuzz_ckconfig.c tests/fuzz/fuzz_replay.c
tests_fuzz_replay_ckconfig_LDADD = src/libattncheck.la
tests_fuzz_replay_safetensors_SOURCES = tests/fuzz/fuzz_safetensors.c tests/fuzz/fuzz_replay.c
tests_fuzz_replay_safetensors_LDADD = src/libattncheck.la
tests_fuzz_replay_stindex_SOURCES = tests/fuzz/fuzz_stindex.c tests/fuzz/fuzz_replay.c
tests_fuzz_replay_stindex_LDADD = src/libattncheck.la

# ---- make fuzz: libFuzzer (clang) with ASan and UBSan ----------------------
# The library's sources are compiled by clang with coverage and sanitizers
# into tests/fuzz/obj/, linked with each harness into tests/fuzz/fuzz_NAME.
# `make fuzz` builds them and runs each for FUZZ_SECONDS (default 60) on a
# copy of its seed corpus; `make fuzz-build` only builds (make check then
# runs a smoke of FUZZ_SMOKE_RUNS inputs each, tests/rel_fuzz.sh).
FUZZ_SECONDS = 60
FUZZ_CFLAGS = -g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
	-DHAVE_CONFIG_H -I$(top_builddir) -I$(top_srcdir)/src $(BLAS_CFLAGS) $(ARB_CFLAGS) \
	-ffp-contract=off -Wno-unknown-pragmas
FUZZ_LIBS = $(ARB_LIBS) $(MPFR_LIBS) $(GSL_LIBS) $(LAPACKE_LIBS) $(BLAS_LIBS) -lm

fuzz-build:
	@if test "$(HAVE_LIBFUZZER)" != yes; then \
	  echo "make fuzz: clang with libFuzzer was not found by configure (apt-get install clang)"; \
	  exit 1; fi
	@mkdir -p tests/fuzz/obj
	@objs=; for s in $(src_libattncheck_la_SOURCES); do \
	  case $$s in *.c) ;; *) continue ;; esac; \
	  o=tests/fuzz/obj/`echo $$s | tr / _ | sed 's/\.c$$/.o/'`; objs="$$objs $$o"; \
	  if test ! -f $$o || test $(top_srcdir)/$$s -nt $$o; then \
	    echo "  CLANG    $$s"; \
	    $(CLANG) $(FUZZ_CFLAGS) -c $(top_srcdir)/$$s -o $$o || exit 1; fi; \
	done; \
	for t in $(FUZZ_TARGETS); do \
	  echo "  CLANG    tests/fuzz/fuzz_$$t"; \
	  $(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(top_srcdir)/tests/fuzz/fuzz_$$t.c $$objs \
	    $(FUZZ_LIBS) -o tests/fuzz/fuzz_$$t || exit 1; \
	done

fuzz: fuzz-build
	@for t in $(FUZZ_TARGETS); do \
	  rm -rf tests/fuzz/work_$$t; mkdir -p tests/fuzz/work_$$t; \
	  cp $(top_srcdir)/tests/fuzz/corpus/$$t/* tests/fuzz/work_$$t/; \
	  ./tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    tests/fuzz/work_$$t > tests/fuzz/fuzz_$$t.log 2>&1 || \
	    { tail -40 tests/fuzz/fuzz_$$t.log; echo "fuzz_$$t: FAILED (tests/fuzz/fuzz_$$t.log)"; exit 1; }; \
	  echo "fuzz_$$t: $(FUZZ_SECONDS) s, `sed -n 's/^stat::number_of_executed_units: *//p' \
	    tests/fuzz/fuzz_$$t.log` inputs, no finding"; \
	done

clean-local: clean-fuzz
clean-fuzz:
	rm -rf tests/fuzz/obj tests/fuzz/work_* tests/fuzz/*.log $(FUZZ_TARGETS:%=tests/fuzz/fuzz_%) \
	  sanitize-build

# ---- make check-sanitize: the whole suite built with ASan and UBSan ---------
# A separate copy of the sources in sanitize-build/tree (the files git
# tracks, else `make distdir`), configured with the sanitizers (gcc, -O1) and
# checked there: every test of make check.  The result and the wall time are
# printed.  CI runs it (.ci/run).
SANITIZE_FLAGS = -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer
check-sanitize:
	@rm -rf sanitize-build && mkdir -p sanitize-build/tree
	@start=`date +%s`; \
	if git -C $(abs_top_srcdir) rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
	  (cd $(abs_top_srcdir) && git ls-files -z | xargs -0 cp --parents -t $(abs_top_builddir)/sanitize-build/tree) || exit 1; \
	else \
	  $(MAKE) $(AM_MAKEFLAGS) distdir distdir=sanitize-build/tree >/dev/null || exit 1; \
	fi; \
	cd sanitize-build/tree && { test -x configure || autoreconf -fi >/dev/null 2>&1; } && \
	./configure CFLAGS="$(SANITIZE_FLAGS)" LDFLAGS="-fsanitize=address,undefined" \
	  PYTHON3="$(PYTHON3)" >/dev/null && \
	$(MAKE) $(AM_MAKEFLAGS) >/dev/null && \
	ASAN_OPTIONS=abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(MAKE) $(AM_MAKEFLAGS) check; st=$$?; \
	echo "check-sanitize: status $$st, `expr \`date +%s\` - $$start` s (copy, build and suite)"; \
	exit $$st

# ---- make check-kill: the kill injection over every system call of a commit
check-kill: all
	REL_KILL_FULL=1 $(MAKE) $(AM_MAKEFLAGS) check TESTS=tests/rel_kill.sh

.PHONY: fuzz fuzz-build clean-fuzz check-sanitize check-kill
