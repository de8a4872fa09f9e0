#!/bin/sh
# Hostile test of the certified attention block against mpmath at 50 digits
# (see cond_block.py).  Exit status: 0 pass, 1 failure, 77 skipped (no
# python3 or mpmath), 99 setup error.
PY=${PYTHON3:-/usr/bin/python3}
if ! command -v "$PY" >/dev/null 2>&1 || ! "$PY" -c 'import mpmath' >/dev/null 2>&1; then
    echo "cond_block: $PY with mpmath not found, skipping" >&2
    exit 77
fi
here=$(dirname "$0")
tool="${top_builddir:-.}/tests/cond_block_tool"
test -x "$tool" || tool="$here/cond_block_tool"
test -x "$tool" || { echo "cond_block: cond_block_tool not built" >&2; exit 99; }
script="${top_srcdir:-.}/tests/cond_block.py"
test -f "$script" || script="$here/cond_block.py"
"$PY" "$script" "$tool"
status=$?
test $status -eq 77 && status=1
# the command itself on rank-deficient heads: every h REFUTED (exit 1), with
# and without certification no crash (dstebz returns more eigenvalues than
# asked for when zero eigenvalues tie: it overflowed a 2-element array)
: "${ATTNCHECK:=./attncheck}"
for E in 1 2 3; do
    for cert in --certify ""; do
        want=1; [ -z "$cert" ] && want=2
        "$ATTNCHECK" condition --mode attention --input-dim $E --seq 16 --head-dim 4 \
            --heads 1,2,3,4 --trials 4 $cert >/dev/null 2>&1
        got=$?
        if [ $got -ne $want ]; then
            echo "cond_block: condition --input-dim $E $cert: exit $got, expected $want" >&2
            status=1
        fi
    done
done
exit $status
