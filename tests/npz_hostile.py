#!/usr/bin/env python3
"""npz_hostile.py — ambiguous .npz archives (src/io/npz.c).

usage: npz_hostile.py NPY_TOOL WORKDIR

An archive that two zip readers could read differently must be refused
with status 65 and one line naming the archive, the member asked for and
the member concerned.  Each case is built by hand (struct) from the parts
of an archive np.savez or np.savez_compressed wrote, so that exactly one
thing is wrong:

  duplicate   two central entries named X.npy (np.load reads the last:
              checked), for every position of the pair; also a duplicate
              of a member not asked for
  name        a local header whose name differs from its central entry
              (same length and longer)
  hidden      a member whose central entry is removed (first, middle,
              last), bytes before the first member (offsets adjusted or
              not), between members, between the last member and the
              directory, inside the directory after its last entry,
              between the directory and its end record, after the end
              record's comment
  overlap     a member lying inside another member's data; two central
              entries pointing at one local header
  sizes       a local header whose CRC-32, compressed or uncompressed size
              differs from the central entry (32-bit fields and the ZIP64
              extra field), whose method differs, or a data descriptor
              that differs
And the archives that are not ambiguous must still be read, bit for bit
as np.load reads them: np.savez, np.savez_compressed, Python's zipfile
with data descriptors (a non-seekable stream), and the ZIP64 end records.
Exit status 0 if every case behaves, 1 otherwise.  Seed:
ATTNCHECK_TEST_SEED (default 20261201).
"""
import io
import os
import struct
import subprocess
import sys
import warnings
import zipfile
import zlib

import numpy as np

EX_DATAERR = 65
SIG_LOCAL, SIG_CENTRAL, SIG_EOCD = 0x04034b50, 0x02014b50, 0x06054b50
SIG_EOCD64, SIG_LOC64, SIG_DESC = 0x06064b50, 0x07064b50, 0x08074b50


class Member:
    """One member: its local header fields, name, extra, data; the central
    entry is derived from them unless overridden."""

    def __init__(self, name, payload, method):
        self.name = name.encode()
        self.usize = len(payload)
        self.crc = zlib.crc32(payload) & 0xffffffff
        if method == 8:
            c = zlib.compressobj(6, zlib.DEFLATED, -15)
            self.data = c.compress(payload) + c.flush()
        else:
            self.data = payload
        self.csize = len(self.data)
        self.method = method
        self.flags = 0
        self.local_name = self.name
        self.local_crc, self.local_csize, self.local_usize = self.crc, self.csize, self.usize
        self.local_extra = b""
        self.desc = b""
        self.local_method = method

    def local(self):
        return struct.pack("<IHHHHHIIIHH", SIG_LOCAL, 20, self.flags, self.local_method, 0, 0x21,
                           self.local_crc, self.local_csize, self.local_usize,
                           len(self.local_name), len(self.local_extra)) + \
            self.local_name + self.local_extra + self.data + self.desc

    def central(self, offset):
        return struct.pack("<IHHHHHHIIIHHHHHII", SIG_CENTRAL, 20, 20, self.flags, self.method, 0,
                           0x21, self.crc, self.csize, self.usize, len(self.name), 0, 0, 0, 0, 0,
                           offset) + self.name


def npy_bytes(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def archive(members, prefix=b"", between=None, gap_cd=b"", cd_tail=b"", gap_end=b"",
            after=b"", drop=(), offsets=None, zip64=False, adjust=True):
    """The bytes of an archive of members; the extra bytes go where named;
    drop: indices whose central entries are left out; offsets: override the
    local offsets written in the central directory."""
    out = bytearray(prefix if adjust else b"")
    offs = []
    for k, m in enumerate(members):
        if between and k in between:
            out += between[k]
        offs.append(len(out))
        out += m.local()
    if not adjust:
        out = bytearray(prefix) + out
    out += gap_cd
    cd_off = len(out)
    cd = b"".join(m.central(offsets[k] if offsets else offs[k])
                  for k, m in enumerate(members) if k not in drop) + cd_tail
    out += cd
    n = len(members) - len(drop)
    out += gap_end
    if zip64:
        e64 = len(out)
        out += struct.pack("<IQHHIIQQQQ", SIG_EOCD64, 44, 45, 45, 0, 0, n, n, len(cd), cd_off)
        out += struct.pack("<IIQI", SIG_LOC64, 0, e64, 1)
        out += struct.pack("<IHHHHIIH", SIG_EOCD, 0, 0, 0xffff, 0xffff, 0xffffffff, 0xffffffff, 0)
    else:
        out += struct.pack("<IHHHHIIH", SIG_EOCD, 0, 0, n, n, len(cd), cd_off, 0)
    return bytes(out + after)


def main():
    tool, work = sys.argv[1], sys.argv[2]
    seed = int(os.environ.get("ATTNCHECK_TEST_SEED", "20261201"), 0)
    rng = np.random.default_rng(seed)
    arrays = {"X": rng.standard_normal((3, 4)), "P": rng.standard_normal((4, 4)),
              "v": rng.standard_normal(5)}
    failures = []
    counts = {}

    def run(path, name):
        return subprocess.run([tool, "dump", "%s:%s" % (path, name)], capture_output=True)

    def values(r):
        return [float(x) for x in r.stdout.decode().split("\n")[2:] if x]

    def refuse(cls, what, blob, ask="X", member=None, np_reads=None):
        counts[cls] = counts.get(cls, 0) + 1
        path = os.path.join(work, "%s_%d.npz" % (cls, counts[cls]))
        with open(path, "wb") as f:
            f.write(blob)
        r = run(path, ask)
        err = r.stderr.decode().strip()
        want = ["%s:%s" % (path, ask)]
        if member:
            want.append("member '%s'" % member)
        if r.returncode != EX_DATAERR or len(err.splitlines()) != 1 or \
                any(w not in err for w in want):
            failures.append("[%s] %s: status %d %r (want 65 naming %s)" %
                            (cls, what, r.returncode, err, ", ".join(want)))
        if np_reads is not None:
            # the ambiguity is real: np.load reads the array np_reads
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    got = np.load(path)[ask]
                except Exception as e:  # noqa: BLE001
                    got = e
            if not isinstance(got, np.ndarray) or not np.array_equal(got, np_reads):
                failures.append("[%s] %s: np.load does not read the expected array (%r)" %
                                (cls, what, got if not isinstance(got, np.ndarray) else "other"))

    def accept(what, blob):
        counts["clean"] = counts.get("clean", 0) + 1
        path = os.path.join(work, "clean_%d.npz" % counts["clean"])
        with open(path, "wb") as f:
            f.write(blob)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            z = np.load(path)
            for name in z.files:
                r = run(path, name)
                want = z[name].astype("<f8").reshape(-1)
                if r.returncode != 0 or values(r) != want.tolist():
                    failures.append("[clean] %s member %s: status %d %r" %
                                    (what, name, r.returncode, r.stderr.decode().strip()))

    def fresh(method, names=("X", "P", "v")):
        return [Member(n + ".npy", npy_bytes(arrays[n] if n in arrays else arrays["X"] * 2),
                       method) for n in names]

    for method in (0, 8):
        kind = "stored" if method == 0 else "deflated"
        # clean archives: NumPy's own, ours, ZIP64 end records, descriptors
        b = io.BytesIO()
        (np.savez if method == 0 else np.savez_compressed)(b, **arrays)
        accept("np %s" % kind, b.getvalue())
        accept("hand-built %s" % kind, archive(fresh(method)))
        accept("ZIP64 end records %s" % kind, archive(fresh(method), zip64=True))
        b = io.BytesIO()

        class Stream(io.RawIOBase):
            def writable(self):
                return True

            def write(self, d):
                b.write(d)
                return len(d)
        with zipfile.ZipFile(Stream(), "w", compression=method) as zf:
            for n, a in arrays.items():
                with zf.open(n + ".npy", "w") as f:
                    f.write(npy_bytes(a))
        accept("zipfile data descriptors %s" % kind, b.getvalue())
        desc_blob = b.getvalue()

        # duplicate
        for pos in range(3):
            ms = fresh(method)
            dup = Member("X.npy", npy_bytes(arrays["X"] + 1), method)
            ms.insert(pos, dup)
            # np.load: the last central entry of the name
            last = [m for m in ms if m.name == b"X.npy"][-1]
            want = arrays["X"] + 1 if last is dup else arrays["X"]
            refuse("duplicate", "%s, the second X.npy at %d" % (kind, pos), archive(ms),
                   member="X.npy", np_reads=want)
        ms = fresh(method) + [Member("P.npy", npy_bytes(arrays["P"] * 3), method)]
        refuse("duplicate", "%s, P.npy twice, X asked" % kind, archive(ms), member="P.npy")
        # name
        ms = fresh(method)
        ms[0].local_name = b"Y.npy"
        refuse("name", "%s, local Y.npy for central X.npy" % kind, archive(ms), member="X.npy")
        ms = fresh(method)
        ms[1].local_name = b"P.npy.extra"
        refuse("name", "%s, longer local name" % kind, archive(ms), member="P.npy")
        # hidden
        for k, n in enumerate(("X.npy", "P.npy", "v.npy")):
            ms = fresh(method)
            nxt = ["P.npy", "v.npy", "P.npy"][k]
            refuse("hidden", "%s, %s left out of the central directory" % (kind, n),
                   archive(ms, drop=(k,)), ask="X" if k else "P", member=nxt)
        refuse("hidden", "%s, a prefix, offsets adjusted" % kind,
               archive(fresh(method), prefix=b"\0" * 64), member="X.npy")
        refuse("hidden", "%s, a prefix, offsets not adjusted" % kind,
               archive(fresh(method), prefix=b"\0" * 64, adjust=False), member="X.npy")
        refuse("hidden", "%s, a member's local header before the first" % kind,
               archive(fresh(method), prefix=fresh(method, ("X",))[0].local()), member="X.npy")
        refuse("hidden", "%s, bytes between members" % kind,
               archive(fresh(method), between={1: b"junk" * 8}), member="P.npy")
        refuse("hidden", "%s, bytes before the directory" % kind,
               archive(fresh(method), gap_cd=b"\0" * 16), member="v.npy")
        refuse("hidden", "%s, bytes after the last entry of the directory" % kind,
               archive(fresh(method), cd_tail=b"\0" * 50), member="v.npy")
        refuse("hidden", "%s, bytes between the directory and its end" % kind,
               archive(fresh(method), gap_end=b"\0" * 30))
        refuse("hidden", "%s, bytes after the end record" % kind,
               archive(fresh(method), after=b"\0" * 10))
        # overlap: P lies inside X's data (a stored member holding it)
        inner = Member("P.npy", npy_bytes(arrays["P"]), method)
        outer = Member("X.npy", inner.local(), 0)
        blob = archive([outer], offsets=None)
        # add a central entry for P pointing into X's data
        eocd = blob.rindex(struct.pack("<I", SIG_EOCD))
        cd_off = struct.unpack("<I", blob[eocd + 16:eocd + 20])[0]
        cd = blob[cd_off:eocd] + inner.central(30 + len(outer.name))
        blob2 = blob[:cd_off] + cd + struct.pack("<IHHHHIIH", SIG_EOCD, 0, 0, 2, 2, len(cd), cd_off, 0)
        refuse("overlap", "%s, P inside X's data" % kind, blob2, ask="P", member="P.npy")
        ms = fresh(method, ("X", "P"))
        ms.append(Member("Z.npy", npy_bytes(arrays["X"]), method))
        blob = archive(ms, offsets=[0, len(ms[0].local()), 0])
        refuse("overlap", "%s, two entries at one local header" % kind, blob, ask="P",
               member="Z.npy")
        # sizes
        for field in ("local_crc", "local_csize", "local_usize"):
            ms = fresh(method)
            setattr(ms[0], field, getattr(ms[0], field) + 1)
            refuse("sizes", "%s, %s + 1" % (kind, field), archive(ms), ask="P", member="X.npy")
        ms = fresh(method)
        ms[2].local_method = 8 - method
        refuse("sizes", "%s, local method differs" % kind, archive(ms), member="v.npy")
        for which in (0, 1):
            ms = fresh(method)
            m = ms[1]
            sz = [m.usize, m.csize]
            sz[which] += 1
            m.local_extra = struct.pack("<HHQQ", 1, 16, sz[0], sz[1])
            refuse("sizes", "%s, local ZIP64 %s differs" % (kind, ("usize", "csize")[which]),
                   archive(ms), member="P.npy")
        ms = fresh(method)
        m = ms[0]
        m.flags = 8
        m.local_crc = m.local_csize = m.local_usize = 0
        m.desc = struct.pack("<IIII", SIG_DESC, m.crc ^ 1, m.csize, m.usize)
        refuse("sizes", "%s, a data descriptor's CRC differs" % kind, archive(ms), member="X.npy")
        m.desc = struct.pack("<IIII", SIG_DESC, m.crc, m.csize, m.usize)
        accept("hand-built data descriptor %s" % kind, archive(ms))
        # zipfile's descriptors, one byte of one descriptor changed
        k = desc_blob.index(struct.pack("<I", SIG_DESC))
        bad = desc_blob[:k + 8] + bytes([desc_blob[k + 8] ^ 1]) + desc_blob[k + 9:]
        refuse("sizes", "%s, zipfile's descriptor size changed" % kind, bad, member="X.npy")

    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    print("npz_hostile: %d archives (%s), %d failures (numpy %s, seed %d)" % (
        sum(counts.values()), ", ".join("%s %d" % kv for kv in sorted(counts.items())),
        len(failures), np.__version__, seed))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
