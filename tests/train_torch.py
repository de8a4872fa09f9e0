#!/usr/bin/env python3
"""Cross-check attncheck's training stack against PyTorch (float64).

Usage: train_torch.py DUMP_DIR...

Each DUMP_DIR was written by `attncheck train --dump-grads DIR`: a
checkpoint (config.json, one .npy per parameter tensor), one batch
(batch.*.npy), the loss (loss.npy) and the gradient of every tensor
(grad.NAME.npy).  This script rebuilds the same model in PyTorch from
config.json and the tensors alone -- it shares no code with attncheck --,
computes the loss on the batch and its gradients with autograd, and compares.

Tolerance.  Both sides evaluate the same function in IEEE double with
different summation orders.  Each computed quantity is a composition of
dot products of length at most n (the longest reduction: rows B*T of a
weight gradient, width, feed-forward width, vocabulary or sequence), each
with relative error at most gamma_n = n u / (1 - n u) with respect to the
sum of the absolute values of its terms (Higham, ASNA 3.5); a forward and a
backward pass through L blocks chain about 12 (L + 2) such stages.  With a
factor 2 for the two sides and 16 for the amplification of the
compositions (condition numbers of softmax and LayerNorm of order one on
these well-scaled inputs), the bound used, normwise per tensor, is

    max|g_attncheck - g_torch| <= tol * max|g_torch|,
    tol = 2 * 16 * 12 (L + 2) * n * u,   u = 2^-53,

and the same relative tolerance for the loss.  For the models tested here it
is between 1e-12 and 1e-10; the observed differences are printed.

Exit status: 0 all agree, 1 a mismatch, 77 torch or numpy missing, 99 bad
dump directory.
"""
import json
import math
import os
import sys

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover
    print("train_torch: %s; skipping" % e, file=sys.stderr)
    sys.exit(77)

torch.set_default_dtype(torch.float64)
U = 2.0 ** -53


def load(d, name):
    return np.load(os.path.join(d, name))


def t(a, grad=False):
    x = torch.tensor(np.ascontiguousarray(a), dtype=torch.float64)
    if grad:
        x.requires_grad_(True)
    return x


def layernorm(x, w, b, eps):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


def attention(q, k, v, causal, lens=None):
    """q, k, v: (B, H, T, S) -> (B, H, T, S); row softmax over keys; keys at
    positions >= lens[b] (padding) masked when lens is given."""
    S = q.shape[-1]
    T = q.shape[-2]
    a = (q @ k.transpose(-2, -1)) / math.sqrt(S)
    if causal:
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        a = a.masked_fill(~mask, float("-inf"))
    if lens is not None:
        keep = torch.arange(T)[None, :] < torch.tensor(lens)[:, None]  # (B, T) keys
        a = a.masked_fill(~keep[:, None, None, :], float("-inf"))
    return a.softmax(-1) @ v


def split_heads(x, H, S):
    B, T, _ = x.shape
    return x.view(B, T, H, S).transpose(1, 2)


def transformer_loss(cfg, P, batch):
    m = cfg["model"]
    H, S, C = m["heads"], m["head_dim"], m["width"]
    D = H * S
    eps = m["ln_eps"]
    causal = m["causal"]
    if m["input"] == "tokens":
        tok = torch.tensor(batch["tokens"].astype(np.int64))
        B, T = tok.shape
        x = P["embed.tokens.weight"][tok]
    else:
        xin = t(batch["x"])
        B, T, _ = xin.shape
        x = xin @ P["embed.input.weight"].T + P["embed.input.bias"]
    lens = batch["len"].astype(np.int64) if "len" in batch else None
    if m["positions"]:
        x = x + P["embed.positions.weight"][:T]
    for l in range(m["layers"]):
        p = lambda s: P["layer%d.%s" % (l, s)]  # noqa: E731

        def attn(h):
            qkv = h @ p("attn.qkv.weight").T + p("attn.qkv.bias")
            q, k, v = qkv[..., :D], qkv[..., D:2 * D], qkv[..., 2 * D:]
            y = attention(split_heads(q, H, S), split_heads(k, H, S), split_heads(v, H, S), causal,
                          lens)
            y = y.transpose(1, 2).reshape(B, T, D)
            return y @ p("attn.proj.weight").T + p("attn.proj.bias")

        def ffn(h):
            f = F.gelu(h @ p("ffn.fc.weight").T + p("ffn.fc.bias"), approximate="tanh")
            return f @ p("ffn.proj.weight").T + p("ffn.proj.bias")

        if m["ln"] == "pre":
            x = x + attn(layernorm(x, p("ln1.weight"), p("ln1.bias"), eps))
            x = x + ffn(layernorm(x, p("ln2.weight"), p("ln2.bias"), eps))
        else:
            x = layernorm(x + attn(x), p("ln1.weight"), p("ln1.bias"), eps)
            x = layernorm(x + ffn(x), p("ln2.weight"), p("ln2.bias"), eps)
    h = layernorm(x, P["lnf.weight"], P["lnf.bias"], eps)
    if m["head"] == "lm":
        logits = h @ P["head.weight"].T
        tgt = torch.tensor(batch["targets"].astype(np.int64))
        return F.cross_entropy(logits.reshape(B * T, -1), tgt.reshape(-1))
    if m["head"] == "classify":
        if lens is None:
            pool = {"first": h[:, 0], "last": h[:, -1], "mean": h.mean(1)}[m["pool"]]
        else:  # padding masked: the last real row, the mean of the real rows
            keep = (torch.arange(T)[None, :] < torch.tensor(lens)[:, None]).to(h.dtype)
            last = h[torch.arange(B), torch.tensor(lens) - 1]
            mean = (h * keep[:, :, None]).sum(1) / keep.sum(1, keepdim=True)
            pool = {"first": h[:, 0], "last": last, "mean": mean}[m["pool"]]
        logits = pool @ P["head.weight"].T + P["head.bias"]
        tgt = torch.tensor(batch["targets"].astype(np.int64))
        return F.cross_entropy(logits, tgt)
    out = h @ P["head.weight"].T + P["head.bias"]
    return ((out - t(batch["y"])) ** 2).mean()


def attention_layer_loss(cfg, P, batch):
    """f(X) = sum_h Wo_h Wv_h X Softmax(...), doc/mathematics.md §4.1, row layout."""
    m = cfg["model"]
    x = t(batch["x"])
    Wq, Wk, Wv, Wo = P["Wq"], P["Wk"], P["Wv"], P["Wo"]  # (H,S,C) x3, (H,C,S)
    q = torch.einsum("btc,hsc->bhts", x, Wq)
    k = torch.einsum("btc,hsc->bhts", x, Wk)
    v = torch.einsum("btc,hsc->bhts", x, Wv)
    y = attention(q, k, v, m["causal"])
    out = torch.einsum("bhts,hcs->btc", y, Wo)
    return ((out - t(batch["y"])) ** 2).mean()


def scores_loss(cfg, P, batch):
    """Theorem 1's head: cross-entropy of target rows against the attention."""
    m = cfg["model"]
    x = t(batch["x"])
    Wq, Wk = P["Wq"], P["Wk"]
    if Wq.dim() == 2:
        Wq, Wk = Wq.unsqueeze(0), Wk.unsqueeze(0)
    q = torch.einsum("btc,hsc->bhts", x, Wq)
    k = torch.einsum("btc,hsc->bhts", x, Wk)
    logits = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    y = t(batch["y"])
    T = logits.shape[-1]
    mask = torch.ones(T, T, dtype=torch.bool)
    if m["causal"]:
        mask = mask.tril()
    if "keep" in batch:  # a masked head (doc/mathematics.md §3.8): row = query, 1 = visible
        mask = mask & torch.tensor(batch["keep"] != 0)
    if m["causal"] or "keep" in batch:
        # the softmax over the visible keys only; hidden keys get weight 0 and
        # reach neither the loss nor the gradient
        logits = logits.masked_fill(~mask, float("-inf"))
        logp = torch.where(mask, F.log_softmax(logits, -1), torch.zeros(()))
    else:
        logp = F.log_softmax(logits, -1)
    B, H, T, _ = logits.shape
    return -(y * logp).sum() / (B * H * T)


def longest_reduction(cfg, batch):
    m = cfg["model"]
    dims = [m["width"], m["heads"] * m["head_dim"], m["ffn"], m["vocab"], m["out_dim"],
            m["in_dim"], m["max_seq"]]
    for k in ("tokens", "x", "y"):
        if k in batch:
            dims.append(batch[k].shape[0] * batch[k].shape[1])
    return max(dims)


def check(d):
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    if cfg.get("format") != "attncheck-train-checkpoint":
        print("train_torch: %s is not a dump directory" % d, file=sys.stderr)
        sys.exit(99)
    P = {e["name"]: t(load(d, e["name"] + ".npy"), grad=True) for e in cfg["tensors"]}
    batch = {}
    for k in ("tokens", "targets", "x", "y", "len", "keep"):
        fn = os.path.join(d, "batch.%s.npy" % k)
        if os.path.exists(fn):
            batch[k] = np.load(fn)
    arch = cfg["model"]["arch"]
    loss = {"transformer": transformer_loss, "attention": attention_layer_loss,
            "scores": scores_loss}[arch](cfg, P, batch)
    loss.backward()
    L = cfg["model"]["layers"] if arch == "transformer" else 1
    n = longest_reduction(cfg, batch)
    tol = 2 * 16 * 12 * (L + 2) * n * U
    lc = float(load(d, "loss.npy"))
    lt = float(loss)
    ok = True
    worst = (abs(lc - lt) / abs(lt) if lt else abs(lc - lt), "loss")  # n = 1: loss 0
    if not abs(lc - lt) <= tol * abs(lt):
        print("  MISMATCH loss: attncheck %.17g torch %.17g" % (lc, lt))
        ok = False
    for e in cfg["tensors"]:
        name = e["name"]
        gc = load(d, "grad.%s.npy" % name)
        gt = P[name].grad.numpy()
        if gc.shape != gt.shape:
            print("  MISMATCH %s: shape %s vs %s" % (name, gc.shape, gt.shape))
            ok = False
            continue
        scale = np.max(np.abs(gt)) if gt.size else 0.0
        diff = np.max(np.abs(gc - gt)) if gt.size else 0.0
        rel = diff / scale if scale > 0 else diff
        if rel > worst[0]:
            worst = (rel, name)
        if not diff <= tol * scale:
            print("  MISMATCH %s: max|diff| %.3g, max|g| %.3g, relative %.3g > tol %.3g"
                  % (name, diff, scale, rel, tol))
            ok = False
    print("%-40s %s loss %.10f, %2d tensors, worst relative difference %.2e (%s), tol %.2e"
          % (os.path.basename(d.rstrip("/")), "ok  " if ok else "FAIL", lt, len(cfg["tensors"]),
             worst[0], worst[1], tol))
    return ok, worst[0]


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(99)
    ok = True
    worst = 0.0
    for d in sys.argv[1:]:
        o, w = check(d)
        ok = ok and o
        worst = max(worst, w)
    print("train_torch: %d model(s), worst relative difference %.2e: %s"
          % (len(sys.argv) - 1, worst, "agree" if ok else "MISMATCH"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
