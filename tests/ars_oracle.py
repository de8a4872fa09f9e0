#!/usr/bin/env python3
"""Independent oracle of the ARS-7 words of the block normals (rng.h).

AES from FIPS-197 in plain Python: the S-box from its definition (inverse in
GF(2^8) modulo x^8 + x^4 + x^3 + x + 1, then the affine map), checked by a
full AES-128 encryption against the example of FIPS-197 Appendix B; then
ARS-7 (Random123's ars1xm128i_R(7, ctr, key)): v = ctr ^ k, six AESENC rounds
and one AESENCLAST, the key advancing by the Weyl increment per 64-bit half.
The library's words (fast path and portable twin, through ctypes) must equal
the oracle's.  usage: ars_oracle.py LIBRARY.  Exit 0 pass, 1 fail.
"""
import ctypes
import sys

MASK64 = (1 << 64) - 1
WEYL = (0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B)


def gf_mul(a, b):
    p = 0
    while b:
        if b & 1:
            p ^= a
        a = ((a << 1) ^ (0x1B if a & 0x80 else 0)) & 0xFF
        b >>= 1
    return p


def make_sbox():
    inv = [0] * 256
    for x in range(1, 256):
        for y in range(1, 256):
            if gf_mul(x, y) == 1:
                inv[x] = y
                break
    rot = lambda v, s: ((v << s) | (v >> (8 - s))) & 0xFF
    return [b ^ rot(b, 1) ^ rot(b, 2) ^ rot(b, 3) ^ rot(b, 4) ^ 0x63 for b in inv]


SBOX = make_sbox()


def sub_shift(s):
    """SubBytes then ShiftRows on the 16-byte state (byte 4c + r = row r, column c)."""
    return [SBOX[s[r + 4 * ((c + r) % 4)]] for c in range(4) for r in range(4)]


def mix(s):
    out = []
    for c in range(4):
        a = s[4 * c:4 * c + 4]
        for r in range(4):
            out.append(gf_mul(a[r], 2) ^ gf_mul(a[(r + 1) % 4], 3) ^ a[(r + 2) % 4] ^ a[(r + 3) % 4])
    return out


def aesenc(s, k, last=False):
    t = sub_shift(s)
    if not last:
        t = mix(t)
    return [x ^ y for x, y in zip(t, k)]


def aes128_encrypt(block, key):
    rcon, w = 1, list(key)
    for i in range(4, 44):
        t = w[4 * (i - 1):4 * i]
        if i % 4 == 0:
            t = [SBOX[t[1]] ^ rcon, SBOX[t[2]], SBOX[t[3]], SBOX[t[0]]]
            rcon = gf_mul(rcon, 2)
        w += [x ^ y for x, y in zip(w[4 * (i - 4):4 * (i - 3)], t)]
    s = [x ^ y for x, y in zip(block, w[:16])]
    for r in range(1, 11):
        s = aesenc(s, w[16 * r:16 * r + 16], last=(r == 10))
    return s


def to_bytes(lo, hi):
    return list(lo.to_bytes(8, "little") + hi.to_bytes(8, "little"))


def ars7(seed, a, b, q):
    k = [seed, a]
    s = [x ^ y for x, y in zip(to_bytes(q, b), to_bytes(*k))]
    for r in range(1, 8):
        k = [(k[0] + WEYL[0]) & MASK64, (k[1] + WEYL[1]) & MASK64]
        s = aesenc(s, to_bytes(*k), last=(r == 7))
    v = bytes(s)
    return int.from_bytes(v[:8], "little"), int.from_bytes(v[8:], "little")


def main():
    # FIPS-197 Appendix B
    pt = bytes.fromhex("3243f6a8885a308d313198a2e0370734")
    key = bytes.fromhex("2b7e151628aed2a6abf7158809cf4f3c")
    ct = bytes(aes128_encrypt(list(pt), list(key))).hex()
    if ct != "3925841d02dc09fbdc118597196a0b32":
        print("ars_oracle: the oracle's AES fails FIPS-197 Appendix B:", ct)
        return 1
    lib = ctypes.CDLL(sys.argv[1])
    u64 = ctypes.c_uint64
    for f in (lib.ac_rng_ars_words, lib.ac_rng_ars_words_ref):
        f.argtypes = [ctypes.POINTER(u64), ctypes.c_size_t, u64, u64, u64, u64]
        f.restype = None
    lib.ac_rng_ars_kind.restype = ctypes.c_int
    cases = [(0, 0, 0, 0), (1, 64, 99, 0), (20240521, 3, 7, (1 << 40) + 1),
             (MASK64, MASK64, MASK64, (1 << 63) - 9)]
    bad = 0
    for seed, a, b, pos in cases:
        n = 37
        got = {}
        for name, f in (("fast", lib.ac_rng_ars_words), ("ref", lib.ac_rng_ars_words_ref)):
            buf = (u64 * n)()
            f(buf, n, seed, a, b, pos)
            got[name] = list(buf)
        for i in range(n):
            p = pos + i
            want = ars7(seed, a, b, p >> 1)[p & 1]
            for name in got:
                if got[name][i] != want:
                    bad += 1
                    if bad <= 5:
                        print("ars_oracle: %s word %d of (%d, %d, %d) = %016x, oracle %016x"
                              % (name, p, seed, a, b, got[name][i], want))
    print("ars_oracle: %d words x 2 paths (fast kind %d) against FIPS-197 AES: %d differ"
          % (37 * len(cases), lib.ac_rng_ars_kind(), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
