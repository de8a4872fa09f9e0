#!/bin/sh
# models_torch.sh — every head of the checkpoint fixtures of tests/models/
# (one per family and layout: GPT-2 Conv1D, nanoGPT, BERT with gamma/beta,
# RoBERTa, DistilBERT sharded, Llama GQA in both RoPE pairings, Mistral,
# Qwen2, ViT HF and timm, attncheck_layer; F32, F16, BF16, F64) against
# PyTorch float64 computations written from the modeling files
# (tests/models_torch.py), within stated error bounds.
# Exit status: 0 pass, 1 mismatch, 77 no torch, 99 setup error.
: "${top_srcdir:=.}"
: "${top_builddir:=.}"
PY=${PYTHON3:-/usr/bin/python3}
"$PY" -c 'import torch, numpy' 2>/dev/null || { echo "models_torch: no torch/numpy for $PY; skipping"; exit 77; }
tool="$top_builddir/tests/mh_tool"
test -x "$tool" || { echo "models_torch: $tool not built" >&2; exit 99; }
work=$(mktemp -d "${TMPDIR:-/tmp}/models_torch.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP
"$PY" "$top_srcdir/tests/models_torch.py" "$tool" "$top_srcdir/tests/models" "$work"
st=$?
[ $st -eq 77 ] && st=1
exit $st
