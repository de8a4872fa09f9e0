#!/usr/bin/env python3
"""The PyTorch peer of bench/bench/train.c: the same model, the same step.

    train_torch.py [--vocab V] [--seq T] [--width C] [--layers L] [--heads H]
                   [--attention standard|fixed] [--head-dim DP] [--ffn-mult M]
                   [--batch B] [--steps N] [--warmup W] [--threads K]

GPT-2 layout in float64: token embedding + learned positions, pre-LN blocks
(causal multi-head attention with biases on qkv and the output projection,
GELU (tanh) feed-forward with biases), final LayerNorm, untied language-model
head without bias; each step: forward, cross-entropy, backward, clipping
the gradient norm at 1, AdamW (lr 1e-3).  Random tokens (the data do not
change the cost).  Prints one line like bench/train.
"""
import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", type=int, default=64)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--attention", default="standard")
    ap.add_argument("--head-dim", type=int, default=0)
    ap.add_argument("--ffn-mult", type=int, default=4)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(1)
    V, T, C, L, H, B = a.vocab, a.seq, a.width, a.layers, a.heads, a.batch
    S = a.head_dim if a.attention == "fixed" and a.head_dim else C // H
    D = H * S
    Fw = a.ffn_mult * C

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(C)
            self.qkv = nn.Linear(C, 3 * D)
            self.proj = nn.Linear(D, C)
            self.ln2 = nn.LayerNorm(C)
            self.fc = nn.Linear(C, Fw)
            self.fp = nn.Linear(Fw, C)
            self.register_buffer("mask", torch.ones(T, T, dtype=torch.bool).tril())

        def forward(self, x):
            q, k, v = self.qkv(self.ln1(x)).split(D, dim=2)
            q = q.view(B, T, H, S).transpose(1, 2)
            k = k.view(B, T, H, S).transpose(1, 2)
            v = v.view(B, T, H, S).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) / math.sqrt(S)
            att = att.masked_fill(~self.mask, float("-inf")).softmax(-1)
            y = (att @ v).transpose(1, 2).reshape(B, T, D)
            x = x + self.proj(y)
            return x + self.fp(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(V, C)
            self.wpe = nn.Embedding(T, C)
            self.blocks = nn.ModuleList([Block() for _ in range(L)])
            self.lnf = nn.LayerNorm(C)
            self.head = nn.Linear(C, V, bias=False)
            self.register_buffer("pos", torch.arange(T))

        def forward(self, idx, tgt):
            x = self.wte(idx) + self.wpe(self.pos)
            for b in self.blocks:
                x = b(x)
            logits = self.head(self.lnf(x))
            return F.cross_entropy(logits.view(-1, V), tgt.view(-1))

    m = Model()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    idx = torch.randint(0, V, (B, T))
    tgt = torch.randint(0, V, (B, T))
    nparams = sum(p.numel() for p in m.parameters())
    t0 = 0.0
    for s in range(a.warmup + a.steps):
        if s == a.warmup:
            t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = m(idx, tgt)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
    dt = (time.perf_counter() - t0) / a.steps
    print("pytorch tokens_per_s %.0f step_ms %.2f params %d threads %d loss %.6f"
          % (B * T / dt, dt * 1e3, nparams, torch.get_num_threads(), float(loss)))


if __name__ == "__main__":
    main()
