#!/bin/sh
# inspect_gpt2.sh — `attncheck inspect` on a GPT-2-small-shaped model (12
# layers, d = 768, 12 heads, 128 tokens, random weights in GPT-2's layout)
# against PyTorch computing the same quantities without certificates
# (bench/inspect_gpt2.py; its split of attncheck's time by stage).  Goal
# (README, "Tests and benchmarks"): the whole run under 5 minutes on 2 cores
# and within 3x of torch.  Usage: bench/inspect_gpt2.sh [LAYERS] (default 12).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON3:-/usr/bin/python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/inspect_gpt2.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$py" "$here/inspect_gpt2.py" "${ATTNCHECK:-./attncheck}" "$work" --layers "${1:-12}" --threads 2
