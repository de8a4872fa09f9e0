#!/bin/sh
# rep_learn_mask.sh — `make check` wrapper for rep_learn_mask.py (quick tier):
# rep-theorem --learn with --mask and --bias from outside (the learned
# transition at the masked threshold, soundness of every row, and the
# written heads re-certified from the files).  Skipped without python3 or
# numpy.  The larger run: make rep-learn-mask.
: "${PYTHON3:=/usr/bin/python3}"
: "${top_srcdir:=.}"
: "${ATTNCHECK:=./attncheck}"
command -v "$PYTHON3" >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }
exec "$PYTHON3" "$top_srcdir/tests/rep_learn_mask.py" "$ATTNCHECK" quick
