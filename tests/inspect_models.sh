#!/bin/sh
# inspect_models.sh — `attncheck inspect` on every fixture family of
# tests/models/ against PyTorch float64 (tests/inspect_models.py): patterns
# within the stated bound, the JSON schema, self-checks, certified circuits
# against NumPy's SVD, kappa against torch's block.
# Exit status: 0 pass, 1 mismatch, 77 no torch, 99 setup error.
: "${top_srcdir:=.}"
: "${ATTNCHECK:=./attncheck}"
PY=${PYTHON3:-/usr/bin/python3}
"$PY" -c 'import torch, numpy, jsonschema' 2>/dev/null || { echo "inspect_models: no torch/numpy/jsonschema for $PY; skipping"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/inspect_models.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP
"$PY" "$top_srcdir/tests/inspect_models.py" "$ATTNCHECK" "$top_srcdir/tests/models" "$work"
st=$?
[ $st -eq 77 ] && st=1
exit $st
