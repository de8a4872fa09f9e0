#!/usr/bin/env python3
"""model_kappa_numpy.py — independent check of `attncheck condition --model`.

For each (checkpoint, data file, JSON output) given on the command line,
rebuild the transformer in NumPy from the checkpoint's .npy files alone
(pre-LN or post-LN, causal or not, padding masked), run it on the data
file's sequences, form each layer's block [A_1 ... A_h] (the head outputs,
rows = the real tokens) and compare its kappa (NumPy's SVD) with the
per-block kappa of the JSON, to a relative tolerance far above the
rounding of both computations (1e-6; the blocks here have kappa < 1e5) and
far below any modelling error (a wrong mask, layer input or row set
changes kappa by orders more).  Also checks the initial-weight column is
present and finite.  Exit 0 pass, 1 mismatch, 77 no numpy.
"""
import json
import math
import os
import sys

try:
    import numpy as np
except ImportError:  # pragma: no cover
    sys.exit(77)

LISTOPS = {"[MIN": 12, "[MAX": 13, "[MED": 14, "[SM": 15, "]": 16}


def layernorm(x, w, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


def gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def blocks(d, cfg, tok, n):
    """Per layer the block (n x D) of one sequence tok (T ids, n real)."""
    m = cfg["model"]
    P = lambda s: np.load(os.path.join(d, s + ".npy"))  # noqa: E731
    H, S = m["heads"], m["head_dim"]
    D = H * S
    eps = m.get("ln_eps", 1e-5)
    T = len(tok)
    x = P("embed.tokens.weight")[tok]
    if m["positions"]:
        x = x + P("embed.positions.weight")[:T]
    out = []
    for l in range(m["layers"]):
        p = lambda s: P("layer%d.%s" % (l, s))  # noqa: E731

        def attn(h):
            qkv = h @ p("attn.qkv.weight").T + p("attn.qkv.bias")
            ys = []
            for i in range(H):
                q = qkv[:, i * S:(i + 1) * S]
                k = qkv[:, D + i * S:D + (i + 1) * S]
                v = qkv[:, 2 * D + i * S:2 * D + (i + 1) * S]
                a = q @ k.T / math.sqrt(S)
                mask = np.zeros((T, T), bool)
                mask[:, n:] = True                      # padding keys
                if m["causal"]:
                    mask |= np.triu(np.ones((T, T), bool), 1)
                a = np.where(mask, -np.inf, a)
                a = np.exp(a - a.max(1, keepdims=True))
                a /= a.sum(1, keepdims=True)
                ys.append(a @ v)
            y = np.concatenate(ys, 1)
            out.append(y[:n])
            return y @ p("attn.proj.weight").T + p("attn.proj.bias")

        def ffn(h):
            return gelu(h @ p("ffn.fc.weight").T + p("ffn.fc.bias")) @ p("ffn.proj.weight").T \
                + p("ffn.proj.bias")

        if m["ln"] == "pre":
            x = x + attn(layernorm(x, p("ln1.weight"), p("ln1.bias"), eps))
            x = x + ffn(layernorm(x, p("ln2.weight"), p("ln2.bias"), eps))
        else:
            x = layernorm(x + attn(x), p("ln1.weight"), p("ln1.bias"), eps)
            x = layernorm(x + ffn(x), p("ln2.weight"), p("ln2.bias"), eps)
    return out


def sequences(cfg, data, vocab):
    T = cfg["train"]["seq"]
    if cfg["task"] == "listops":
        seqs = []
        for no, line in enumerate(open(data)):
            line = line.split("\t")[0]
            if no == 0 and line.startswith("Source"):
                continue
            ids = [LISTOPS[w] if w in LISTOPS else 2 + int(w)
                   for w in line.split() if w not in ("(", ")")]
            if not ids:
                continue
            tok = [1] + ids
            seqs.append((tok + [0] * (T - len(tok)), len(tok)))
        return seqs
    raw = open(data, "rb").read()
    idx = {b: i for i, b in enumerate(vocab)}
    ids = [idx[b] for b in raw]
    want = cfg["_want"]
    room = len(raw) - T
    nseq = min(want, room)
    offs = [int(j * (room - 1) / (nseq - 1)) if nseq > 1 else 0 for j in range(nseq)]
    return [(ids[o:o + T], T) for o in offs]


def check(d, data, js):
    cfg = json.load(open(os.path.join(d, "config.json")))
    res = json.load(open(js))
    cfg["_want"] = res["sequences"]
    vocab = cfg.get("data", {}).get("vocab", [])
    seqs = sequences(cfg, data, vocab)
    ok = True
    if len(seqs) != res["sequences"]:
        print("  %s: %d sequences, JSON says %d" % (d, len(seqs), res["sequences"]))
        return False
    worst = 0.0
    for j, (tok, n) in enumerate(seqs):
        for l, A in enumerate(blocks(d, cfg, np.array(tok), n)):
            s = np.linalg.svd(A, compute_uv=False)
            k = s[0] / s[min(A.shape) - 1]
            kc = res["layers"][l]["kappa"][j]
            rel = abs(kc / k - 1)
            worst = max(worst, rel)
            if not rel <= 1e-6:
                print("  MISMATCH %s layer %d sequence %d: attncheck %.12g numpy %.12g" %
                      (d, l, j, kc, k))
                ok = False
    for ly in res["layers"]:
        if not (math.isfinite(ly["init_kappa_median"]) and ly["init_kappa_median"] >= 1):
            print("  %s: initial-weight median %r" % (d, ly["init_kappa_median"]))
            ok = False
    print("model_kappa_numpy: %s: %d sequences x %d layers, max rel. diff %.2g" %
          (d, len(seqs), len(res["layers"]), worst))
    return ok


def main():
    args = sys.argv[1:]
    ok = True
    for i in range(0, len(args), 3):
        ok &= check(args[i], args[i + 1], args[i + 2])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
