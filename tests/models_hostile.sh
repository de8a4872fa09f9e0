#!/bin/sh
# models_hostile.sh — damaged checkpoints (truncated or oversized headers,
# overlapping or gapped offsets, size mismatches, F8, duplicate keys, NaN and
# Inf weights, shapes contradicting config.json, missing and unknown tensors,
# a missing shard, unknown model_type, refused options, ...) each give a
# one-line error naming the file and the problem, exit 65 (66 when an input
# cannot be opened), and write nothing (tests/models_hostile.py).
# Exit status: 0 pass, 1 failure, 77 no numpy, 99 setup error.
: "${top_srcdir:=.}"
: "${top_builddir:=.}"
PY=${PYTHON3:-/usr/bin/python3}
"$PY" -c 'import numpy' 2>/dev/null || { echo "models_hostile: no numpy for $PY; skipping"; exit 77; }
tool="$top_builddir/tests/mh_tool"
test -x "$tool" || { echo "models_hostile: $tool not built" >&2; exit 99; }
work=$(mktemp -d "${TMPDIR:-/tmp}/models_hostile.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP
"$PY" "$top_srcdir/tests/models_hostile.py" "$tool" "$top_srcdir/tests/models" "$work"
st=$?
[ $st -eq 77 ] && st=1
exit $st
