#!/bin/sh
# st_load.sh — loading safetensors into double: attncheck's reader
# (bench/st_load, ac_st_read tensor by tensor) beside NumPy's
# np.frombuffer(...).astype(np.float64) of the same file (bench/
# st_load_numpy.py), and a memcpy of the output's size, in one run, for F32,
# F16 and BF16 files of ELEMENTS numbers in GPT-2-sized tensors (768 x 768,
# 768 x 3072, 3072 x 768, 768 x 2304 and vectors), written to $TMPDIR.
# Goal: >= 2x NumPy's astype, or within 1.2x of the memcpy.  Single thread
# on both sides; pages warm.  Each ratio sets like beside like: NumPy's
# astype drops each result, so its output is one recycled block of the
# largest tensor's size, as attncheck's convert_reuse; copyto and
# attncheck's convert write one kept buffer of the whole output; NumPy
# keeping every result and attncheck's convert_fresh touch fresh memory.
# The line "NumPy astype / attncheck kept buffer" (the goal's ratio until
# the reused buffer was measured) compares unlike memory.
# Usage: bench/st_load.sh [ELEMENTS [REPS]] (default 33554432 = 2^25, 5).
set -eu
n=${1:-33554432}; reps=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
bin=${BENCH_BIN:-./bench/st_load}
py=${PYTHON3:-/usr/bin/python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/st_load.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$py" - "$work" "$n" <<'PYEOF'
import json, struct, sys
import numpy as np
work, n = sys.argv[1], int(sys.argv[2])
shapes, tot = [], 0
cycle = [(768, 2304), (2304,), (768, 768), (768,), (768, 3072), (3072,), (3072, 768), (768,)]
while tot < n:
    for s in cycle:
        k = int(np.prod(s))
        if tot + k > n:
            s, k = (n - tot,), n - tot
        if k:
            shapes.append(s)
            tot += k
        if tot >= n:
            break
rng = np.random.default_rng(1)
for dt in ("F32", "F16", "BF16"):
    h, blobs, off = {}, [], 0
    for i, s in enumerate(shapes):
        x = rng.standard_normal(int(np.prod(s)), dtype=np.float32) * 0.02
        if dt == "F32":
            b = x.astype("<f4").tobytes()
        elif dt == "F16":
            b = x.astype("<f2").tobytes()
        else:
            b = (x.view(np.uint32) >> 16).astype("<u2").tobytes()
        h["t%05d" % i] = {"dtype": dt, "shape": list(s), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    t = json.dumps(h, separators=(",", ":")).encode()
    t += b" " * (-len(t) % 8)
    with open("%s/%s.safetensors" % (work, dt), "wb") as f:
        f.write(struct.pack("<Q", len(t)) + t)
        for b in blobs:
            f.write(b)
PYEOF
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
for dt in F32 F16 BF16; do
    f="$work/$dt.safetensors"
    c=$("$bin" "$f" "$reps")
    p=$(OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 "$py" "$here/st_load_numpy.py" "$f" "$reps")
    echo "-- $dt: $(echo "$c" | sed -n 's/^elements \([0-9]*\) bytes \([0-9]*\).*/\1 numbers, \2 bytes/p')"
    echo "$c" | sed '/^(checksum/d; /^elements/d; s/^/  attncheck /'
    echo "$p" | sed '/^elements/d; s/^/  numpy     /'
    # wall and CPU seconds of a line NAME of $1
    getw() { echo "$1" | awk -v k="$2" '$1 == k {print $2}'; }
    getc() { echo "$1" | awk -v k="$2" '$1 == k {print $4}'; }
    for kind in wall cpu; do
        g=getw; [ $kind = cpu ] && g=getc
        awk -v c="$($g "$c" convert)" -v u="$($g "$c" convert_reuse)" -v f="$($g "$c" convert_fresh)" \
            -v m="$($g "$c" memcpy)" -v o="$($g "$c" first)" -v a="$($g "$p" numpy_astype)" \
            -v y="$($g "$p" numpy_copyto)" -v kp="$($g "$p" numpy_keep)" \
            -v nf="$($g "$p" numpy_first)" -v k=$kind 'BEGIN {
            printf "  (%s) NumPy astype / attncheck reused buffer = %.2f   (goal >= 2; the same work)\n", k, a / u
            printf "  (%s) NumPy astype / attncheck kept buffer   = %.2f   (unlike: NumPy writes one recycled block)\n", k, a / c
            printf "  (%s) NumPy copyto / attncheck kept buffer   = %.2f\n", k, y / c
            printf "  (%s) NumPy keep / attncheck fresh buffer    = %.2f\n", k, kp / f
            printf "  (%s) NumPy first load / attncheck first     = %.2f\n", k, nf / o
            printf "  (%s) attncheck kept buffer / memcpy         = %.2f   (goal <= 1.2)\n", k, c / m
        }'
    done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
