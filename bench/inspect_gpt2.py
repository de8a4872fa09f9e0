#!/usr/bin/env python3
"""inspect on a GPT-2-small-shaped model: attncheck against NumPy/PyTorch.

Usage: inspect_gpt2.py ATTNCHECK WORKDIR [--tokens N] [--layers L] [--threads T]

Writes a checkpoint in Hugging Face GPT-2's layout (12 layers, d = 768, 12
heads of 64, Conv1D [in, out] fused c_attn, GPT-2's initialisation
N(0, 0.02), LayerNorm weights 1; vocabulary 1000 instead of 50257 so that
the file stays small -- the embedding is not part of what is timed) into
WORKDIR (never committed), 128 random token ids (seed 1), then times

  attncheck inspect --model DIR --tokens ids.npy --threads T --json
    (every check on all 144 heads: threshold at tol, distances at dk/2 and
    dk/4, self-check, certified circuits, certified kappa per layer);
  the same quantities without certificates in PyTorch float64 on the same
    threads: the forward pass up to each layer, every pattern, the SVD of
    every QK and OV circuit (d x d) and its numerical rank, kappa of each
    layer's block [P_1 V_1 ... P_h V_h] by SVD.

Prints both times, their ratio, attncheck's split of the time (threshold,
self-check and distances, circuits, kappa) from its JSON, and the largest
difference between attncheck's patterns (--out-dir) and torch's.
"""
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python", "attncheck"))
import torch_convert  # noqa: E402

torch.set_default_dtype(torch.float64)


def make(d, L=12, C=768, H=12, V=1000, P=1024, seed=1):
    g = torch.Generator().manual_seed(seed)

    def rnd(*s, std=0.02):
        return (torch.randn(*s, generator=g, dtype=torch.float64) * std).to(torch.float32)

    cfg = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": C,
           "n_head": H, "n_layer": L, "n_positions": P, "n_ctx": P, "vocab_size": V,
           "n_inner": None, "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
           "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
           "reorder_and_upcast_attn": False, "torch_dtype": "float32"}
    sd = {"transformer.wte.weight": rnd(V, C), "transformer.wpe.weight": rnd(P, C, std=0.01)}
    for i in range(L):
        p = "transformer.h.%d." % i
        sd[p + "ln_1.weight"], sd[p + "ln_1.bias"] = torch.ones(C), torch.zeros(C)
        sd[p + "attn.c_attn.weight"] = rnd(C, 3 * C)
        sd[p + "attn.c_attn.bias"] = torch.zeros(3 * C)
        sd[p + "attn.c_proj.weight"] = rnd(C, C)
        sd[p + "attn.c_proj.bias"] = torch.zeros(C)
        sd[p + "ln_2.weight"], sd[p + "ln_2.bias"] = torch.ones(C), torch.zeros(C)
        sd[p + "mlp.c_fc.weight"] = rnd(C, 4 * C)
        sd[p + "mlp.c_fc.bias"] = torch.zeros(4 * C)
        sd[p + "mlp.c_proj.weight"] = rnd(4 * C, C)
        sd[p + "mlp.c_proj.bias"] = torch.zeros(C)
    sd["transformer.ln_f.weight"], sd["transformer.ln_f.bias"] = torch.ones(C), torch.zeros(C)
    os.makedirs(d, exist_ok=True)
    torch_convert.save_safetensors(os.path.join(d, "model.safetensors"), sd, {"format": "pt"})
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    return cfg, {k: v.to(torch.float64) for k, v in sd.items()}


def gelu_new(x):
    return 0.5 * x * (1 + torch.tanh((2 / torch.pi) ** 0.5 * (x + 0.044715 * x ** 3)))


def baseline(cfg, sd, ids, layers):
    """patterns, circuit SVD ranks, kappa per layer, no certificates"""
    C, H = cfg["n_embd"], cfg["n_head"]
    dk = C // H
    n = len(ids)
    x = sd["transformer.wte.weight"][ids] + sd["transformer.wpe.weight"][:n]
    mask = torch.tril(torch.ones(n, n, dtype=torch.bool))
    pats, out = [], []
    for i in range(layers):
        p = "transformer.h.%d." % i
        h = torch.nn.functional.layer_norm(x, (C,), sd[p + "ln_1.weight"], sd[p + "ln_1.bias"], 1e-5)
        W, b = sd[p + "attn.c_attn.weight"], sd[p + "attn.c_attn.bias"]
        qkv = h @ W + b
        q, k, v = qkv.split(C, dim=1)
        q, k, v = (t.view(n, H, dk).transpose(0, 1) for t in (q, k, v))
        z = q @ k.transpose(1, 2) / dk ** 0.5
        P = torch.softmax(z.masked_fill(~mask, float("-inf")), dim=-1)
        pats.append(P)
        A = (P @ v).transpose(0, 1).reshape(n, C)
        s = torch.linalg.svdvals(A)
        ranks = []
        Wo = sd[p + "attn.c_proj.weight"]
        for hh in range(H):
            Wq, Wk, Wv = (W[:, j * C + hh * dk: j * C + (hh + 1) * dk] for j in range(3))
            for M in (Wq @ Wk.T, Wv @ Wo[hh * dk:(hh + 1) * dk, :]):
                sv = torch.linalg.svdvals(M)
                ranks.append(int((sv > sv[0] * C * 2.0 ** -52).sum()))
        out.append((float(s[0] / s[-1]), ranks))
        a = A @ sd[p + "attn.c_proj.weight"] + sd[p + "attn.c_proj.bias"]
        x = x + a
        h2 = torch.nn.functional.layer_norm(x, (C,), sd[p + "ln_2.weight"], sd[p + "ln_2.bias"], 1e-5)
        x = x + gelu_new(h2 @ sd[p + "mlp.c_fc.weight"] + sd[p + "mlp.c_fc.bias"]) @ \
            sd[p + "mlp.c_proj.weight"] + sd[p + "mlp.c_proj.bias"]
    return torch.stack(pats), out


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(64)
    tool, work = args[0], args[1]
    opt = dict(zip(args[2::2], args[3::2]))
    n = int(opt.get("--tokens", 128))
    layers = int(opt.get("--layers", 12))
    threads = int(opt.get("--threads", 2))
    torch.set_num_threads(threads)
    d = os.path.join(work, "gpt2_small")
    cfg, sd = make(d, L=layers)
    ids = np.random.RandomState(1).randint(0, cfg["vocab_size"], size=n)
    np.save(os.path.join(work, "ids.npy"), ids.astype(np.float64))
    out = os.path.join(work, "out")
    t0 = time.time()
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run([tool, "inspect", "--model", d, "--tokens", os.path.join(work, "ids.npy"),
                        "--threads", str(threads), "--json", "--out-dir", out],
                       capture_output=True, text=True)
    ta = time.time() - t0
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    ca = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    if r.returncode not in (0, 1, 2):
        print("inspect failed (%d): %s" % (r.returncode, r.stderr.strip()))
        sys.exit(1)
    res = json.loads(r.stdout)
    t0, p0 = time.time(), time.process_time()
    P, per = baseline(cfg, sd, torch.tensor(ids), layers)
    tb, cb = time.time() - t0, time.process_time() - p0
    Pa = torch.tensor(np.load(os.path.join(out, "patterns.npy")))
    heads = sum(len(ly["heads"]) for ly in res["layers"])
    tt = {k: sum(ly["time"][k] for ly in res["layers"]) for k in res["layers"][0]["time"]}
    print("inspect_gpt2: %d layers x %d heads, n = %d, d = %d: attncheck inspect %.1f s "
          "(verdict %s), torch without certificates %.2f s, ratio %.1f"
          % (layers, cfg["n_head"], n, cfg["n_embd"], ta, res["verdict"], tb, ta / tb))
    print("inspect_gpt2: CPU seconds (user + sys, every thread): attncheck %.1f, torch %.2f, "
          "ratio %.1f (a loaded machine inflates wall times, not these)" % (ca, cb, ca / cb))
    print("inspect_gpt2: thread-seconds: " + ", ".join("%s %.1f" % kv for kv in tt.items())
          + "; layers (wall, everything after the model's run) %.1f"
          % sum(ly["seconds"] for ly in res["layers"]))
    print("inspect_gpt2: largest |P_attncheck - P_torch| = %.3g over %d heads"
          % (float((Pa - P).abs().max()), heads))
    for ly, (kap, ranks) in zip(res["layers"], per):
        print("inspect_gpt2: layer %d: kappa attncheck [%s, %s], torch %.6g; thresholds %s"
              % (ly["layer"], ly["kappa"]["lo"], ly["kappa"]["hi"], kap,
                 sorted(set((h["threshold"]["lo"], h["threshold"]["hi"]) for h in ly["heads"]))))


if __name__ == "__main__":
    main()
