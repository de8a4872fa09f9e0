#!/usr/bin/env python3
"""Cross-check attncheck's .npy reader and writer against NumPy.

usage: npy_numpy.py NPY_TOOL WORKDIR

NumPy writes a set of arrays (C order, Fortran order, big-endian, 0-size,
0-d, 1-d to 8-d, format versions 1.0/2.0/3.0, extreme values); for each,
  - `NPY_TOOL dump` must reproduce the shape and every value bit for bit;
  - `NPY_TOOL copy` must write a file that numpy.load reads back equal (bit
    for bit) and that is byte-identical to np.save of the C-order '<f8'
    array.
float32 files (any byte order) are widened to double exactly: they must
dump as NumPy's astype('<f8').  Files NumPy writes with other dtypes must
be rejected with status 65.
Exit status 0 if everything matches, 1 otherwise.  The random values use
the seed in ATTNCHECK_TEST_SEED (default 20240601).
"""
import io
import os
import subprocess
import sys

import numpy as np

EX_DATAERR = 65


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    tool, work = sys.argv[1], sys.argv[2]
    seed = int(os.environ.get("ATTNCHECK_TEST_SEED", "20240601"), 0)
    rng = np.random.default_rng(seed)
    failures = []

    extremes = np.array([
        0.0, -0.0, 1.0, -1.0, np.finfo(np.float64).max, -np.finfo(np.float64).max,
        np.finfo(np.float64).tiny, -np.finfo(np.float64).tiny, 5e-324, -5e-324,
        2.2250738585072009e-308, 1e-310, np.inf, -np.inf, 0.1, 1.0 / 3.0,
        np.finfo(np.float64).eps, 123456789.123456789, -9.87654321e300, 2.0 ** -1074 * 3,
    ])

    def randvals(n):
        """n values: mostly normal, some wild exponents, some extremes."""
        v = rng.standard_normal(n)
        kind = rng.integers(0, 4, n)
        wild = rng.standard_normal(n) * 10.0 ** rng.integers(-320, 300, n).astype(np.float64)
        v = np.where(kind == 1, wild, v)
        v = np.where(kind == 2, extremes[rng.integers(0, len(extremes), n)], v)
        # random bit patterns that are not NaN
        bits = rng.integers(0, 2 ** 63, n, dtype=np.uint64) | (
            rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(63))
        r = bits.view(np.float64)
        r = np.where(np.isnan(r), 0.5, r)
        v = np.where(kind == 3, r, v)
        assert not np.isnan(v).any()
        return v

    def arr(shape):
        return randvals(int(np.prod(shape, dtype=np.int64))).reshape(shape)

    cases = []  # (name, array, save-function)

    def add(name, a, version=None):
        cases.append((name, a, version))

    add("c2d", arr((5, 7)))
    add("c1d", arr((17,)))
    add("c3d", arr((2, 3, 4)))
    add("c0d", np.array(arr(()), dtype=np.float64))
    add("extremes", extremes.copy())
    add("f2d", np.asfortranarray(arr((4, 6))))
    add("f3d", np.asfortranarray(arr((2, 3, 4))))
    add("f4d", np.asfortranarray(arr((3, 1, 2, 5))))
    add("be2d", arr((3, 5)).astype(">f8"))
    add("be_f2d", np.asfortranarray(arr((3, 5)).astype(">f8")))
    add("be0d", np.array(arr(()), dtype=">f8"))
    add("empty1", np.zeros((0,)))
    add("empty2", np.zeros((0, 3)))
    add("empty3", np.zeros((3, 0, 2)))
    add("empty_f", np.asfortranarray(np.zeros((4, 0))))
    add("noncontig", arr((6, 8))[::2, 1::3])
    add("big", arr((300, 200)))
    add("col", arr((9, 1)))
    add("row", arr((1, 9)))
    add("v2", arr((4, 3)), (2, 0))
    add("v3", np.asfortranarray(arr((4, 3))), (3, 0))
    add("v1_explicit", arr((2, 2)), (1, 0))
    add("wide_dim", np.zeros((12345678901, 0)))
    # float32 is widened exactly: the dump must equal NumPy's astype('<f8')
    add("f32", arr((5, 7)).astype("<f4"))
    add("f32_be", arr((3, 4)).astype(">f4"))
    add("f32_fortran", np.asfortranarray(arr((4, 6)).astype("<f4")))
    add("f32_extremes", np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45,
                                  np.finfo(np.float32).max, np.finfo(np.float32).tiny,
                                  0.1, 1 / 3], dtype="<f4"))
    add("f32_0d", np.array(2.5, dtype="<f4"))
    for k in range(20):
        nd = int(rng.integers(0, 9))
        shape = tuple(int(x) for x in rng.integers(0, 4 if nd > 4 else 6, nd))
        a = arr(shape)
        if rng.integers(0, 2):
            a = np.asfortranarray(a)
        add("rand%d" % k, a)

    def run(args):
        return subprocess.run([tool] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    for name, a, version in cases:
        src = os.path.join(work, name + ".npy")
        out = os.path.join(work, name + ".out.npy")
        if version is None:
            np.save(src, a)
        else:
            with open(src, "wb") as f:
                np.lib.format.write_array(f, a, version=version)
        # (not np.ascontiguousarray: in NumPy 1.x it turns 0-d arrays into 1-d)
        expect = a.astype("<f8", order="C")
        expect_bits = expect.reshape(-1).view("<u8")

        # dump
        r = run(["dump", src])
        if r.returncode != 0:
            failures.append("%s: dump failed (%d): %s" % (name, r.returncode, r.stderr.decode()))
            continue
        lines = r.stdout.decode().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        want_head = ["ndim %d" % a.ndim, " ".join(["shape"] + [str(d) for d in a.shape])]
        if lines[:2] != want_head:
            failures.append("%s: dump header %r, expected %r" % (name, lines[:2], want_head))
            continue
        try:
            got = np.array([float(x) for x in lines[2:]], dtype="<f8")
        except ValueError as e:
            failures.append("%s: dump printed a bad value: %s" % (name, e))
            continue
        if got.size != expect.size:
            failures.append("%s: dump printed %d values, expected %d" % (name, got.size, expect.size))
            continue
        bad = np.nonzero(got.view("<u8") != expect_bits)[0]
        if bad.size:
            i = bad[0]
            failures.append("%s: dump value %d is %r, expected %r" % (
                name, i, got[i], expect.reshape(-1)[i]))
            continue

        # copy
        r = run(["copy", src, out])
        if r.returncode != 0:
            failures.append("%s: copy failed (%d): %s" % (name, r.returncode, r.stderr.decode()))
            continue
        back = np.load(out, allow_pickle=False)
        if back.dtype != np.dtype("<f8") or back.shape != a.shape:
            failures.append("%s: numpy reads back dtype %s shape %s, expected <f8 %s" % (
                name, back.dtype.str, back.shape, a.shape))
            continue
        if (back.astype("<f8", order="C").reshape(-1).view("<u8") != expect_bits).any():
            failures.append("%s: numpy reads back different values" % name)
            continue
        buf = io.BytesIO()
        np.save(buf, expect)
        with open(out, "rb") as f:
            mine = f.read()
        if mine != buf.getvalue():
            n = min(len(mine), len(buf.getvalue()))
            first = next((i for i in range(n) if mine[i] != buf.getvalue()[i]), n)
            failures.append("%s: copy differs from np.save output (%d vs %d bytes, first "
                            "difference at byte %d)" % (name, len(mine), len(buf.getvalue()), first))
            continue

    # .npz archives: "FILE.npz:NAME" reads array NAME, stored (savez) or deflated
    # (savez_compressed, with a float32 member), and "-" reads standard input.
    arrays = {"X": arr((6, 5)), "P": arr((5, 5)).astype("<f4"), "v": arr((7,)),
              "F": np.asfortranarray(arr((3, 4)))}
    for kind, save in (("stored", np.savez), ("deflated", np.savez_compressed)):
        src = os.path.join(work, "arch_%s.npz" % kind)
        save(src, **arrays)
        for name, a in arrays.items():
            r = run(["dump", "%s:%s" % (src, name)])
            expect = a.astype("<f8", order="C").reshape(-1)
            got = None
            if r.returncode == 0:
                got = np.array([float(x) for x in r.stdout.decode().split("\n")[2:] if x],
                               dtype="<f8")
            if got is None or got.view("<u8").tolist() != expect.view("<u8").tolist():
                failures.append("npz %s member %s: status %d %s" % (
                    kind, name, r.returncode, r.stderr.decode().strip()))
        r = run(["dump", src + ":nope"])
        if r.returncode != EX_DATAERR or "has no array 'nope'" not in r.stderr.decode():
            failures.append("npz %s: a missing member gives %d %r" % (
                kind, r.returncode, r.stderr.decode()))
        blob = open(src, "rb").read()
        bad_cases = {"truncated": blob[:len(blob) // 2], "not_zip": b"PK" + b"\0" * 100,
                     "flipped": blob[:60] + bytes([blob[60] ^ 0xff]) + blob[61:]}
        for bname, data in bad_cases.items():
            f = os.path.join(work, "bad_%s_%s.npz" % (kind, bname))
            with open(f, "wb") as fh:
                fh.write(data)
            r = run(["dump", f + ":X"])
            if r.returncode != EX_DATAERR or not r.stderr.decode().startswith("npy_tool: " + f):
                failures.append("npz %s %s: status %d %r (expected 65 naming the file)" % (
                    kind, bname, r.returncode, r.stderr.decode()))
    with open(os.path.join(work, "c2d.npy"), "rb") as fh:
        r = subprocess.run([tool, "dump", "-"], stdin=fh, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    if r.returncode != 0 or not r.stdout.decode().startswith("ndim 2\nshape 5 7"):
        failures.append("stdin '-': status %d %r" % (r.returncode, r.stderr.decode()))

    # Other dtypes must be refused.
    for dt in ["<i8", "<c16", "|u1", ">i4", "<f2", "|b1", "<c8"]:
        src = os.path.join(work, "dtype_%s.npy" % dt.replace("<", "l").replace(">", "b")
                           .replace("|", "n"))
        np.save(src, np.zeros((2, 2), dtype=dt))
        r = run(["dump", src])
        msg = r.stderr.decode()
        if r.returncode != EX_DATAERR or "is not supported" not in msg:
            failures.append("dtype %s: status %d, message %r; expected %d, 'is not supported'"
                            % (dt, r.returncode, msg, EX_DATAERR))
    src = os.path.join(work, "structured.npy")
    np.save(src, np.zeros(3, dtype=[("a", "<f8"), ("b", "<f8")]))
    r = run(["dump", src])
    if r.returncode != EX_DATAERR:
        failures.append("structured dtype: status %d, expected %d" % (r.returncode, EX_DATAERR))

    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    print("npy_numpy: %d arrays, %d failures (numpy %s, seed %d)" % (
        len(cases), len(failures), np.__version__, seed))
    if failures:
        print("npy_numpy: ATTNCHECK_TEST_SEED=%d" % seed, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
