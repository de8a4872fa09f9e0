## tests/rel_local.mk — output integrity, resource limits, fuzzing and the
## sanitizer build (issue "Nothing lost, nothing injected"); included by the
## top-level Makefile.am after its SCRIPT_TESTS.

SCRIPT_TESTS += tests/rel_integrity.sh
EXTRA_DIST += tests/rel_local.mk
