#!/bin/sh
# examples.sh — the programs in examples/ build and run as documented.
set -u
: "${ATTNCHECK:=./attncheck}"
: "${top_srcdir:=.}"
: "${top_builddir:=.}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/examples.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
demo="$top_builddir/examples/rep_theorem_demo"
abs() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
demo=$(abs "$demo"); A=$(abs "$ATTNCHECK")
(cd "$tmp" && "$demo" > out.txt 2>&1); st=$?
if [ "$st" != 0 ] || ! grep -q '^PROVED' "$tmp/out.txt" || [ ! -s "$tmp/Wk.npy" ]; then
    echo "FAIL: rep_theorem_demo (exit $st)"; cat "$tmp/out.txt"; fail=1
fi
if command -v "${PYTHON3:-/usr/bin/python3}" >/dev/null 2>&1 && "${PYTHON3:-/usr/bin/python3}" -c 'import numpy' 2>/dev/null; then
    (cd "$tmp" && ATTNCHECK="$A" sh "$(abs "$top_srcdir")/examples/session.sh" > session.txt 2>&1); st=$?
    if [ "$st" != 0 ] || ! grep -q 'NumPy: max|Softmax - P|' "$tmp/session.txt"; then
        echo "FAIL: examples/session.sh (exit $st)"; tail -30 "$tmp/session.txt"; fail=1
    fi
fi
exit $fail
