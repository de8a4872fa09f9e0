#!/usr/bin/env python3
"""A notebook-style session with the Python package attncheck.

Run it after `make install` (or from the build tree as tests/python_pkg.sh
does).  Each step prints what a notebook cell would show."""
import os
import sys
import tempfile

import numpy as np

import attncheck

print("attncheck", attncheck.__version__)

# Theorem 1 on arrays: one head of size dk = n represents P on a full-rank X.
X, P = attncheck.generate_instance(d=16, n=8, seed=1)   # or your own arrays
r = attncheck.rep_theorem(X, P, dk=8)
print(r)
print(r.certificate)
print("Wq", r.Wq.shape, "Wk", r.Wk.shape)

# Below the threshold the bottleneck is certified, with the distance bounds.
r4 = attncheck.rep_theorem(X, P, dk=4)
print(r4.verdict, "distance in [%.3g, %.3g]" % r4.distance)

# PyTorch's attention is row-stochastic: pass its transpose.
A = np.exp(np.random.default_rng(0).normal(size=(8, 8)))
A /= A.sum(axis=1, keepdims=True)
print("row-stochastic A with rows=True:", attncheck.rep_theorem(X, A, dk=8, rows=True).verdict)

# Learned weights: train a head with the library (train --task fit-p), load the
# checkpoint it wrote (the weights it certified) into torch, change, save, certify.
tmp = tempfile.mkdtemp()
t = attncheck.train(task="fit-p", X=X, P=P, steps=500, save=os.path.join(tmp, "ck"))
print("trained:", t.verdict, "at step", t.checkpoint_step, t.certificate)
head = attncheck.load_checkpoint(os.path.join(tmp, "ck"))
print(head.__class__.__name__, [k for k, _ in head.named_parameters()])
before = attncheck.certify_head(X, P, head.Wq.detach().numpy(), head.Wk.detach().numpy(),
                                tol=1e-3)
print("the checkpoint's weights:", before)
import torch  # noqa: E402
with torch.no_grad():
    head.Wq.mul_(2.0)
attncheck.save_checkpoint(head, os.path.join(tmp, "ck2"))
again = attncheck.load_checkpoint(os.path.join(tmp, "ck2"))
after = attncheck.certify_head(X, P, again.Wq.detach().numpy(), again.Wk.detach().numpy(),
                               tol=1e-3)
print("Wq doubled in torch, saved and certified:", after)

# Theorem 2: a separating input for a standard and a fixed-head layer.
W, V = attncheck.generate_layers(d=16, h=4, dp=8, seed=1)
s = attncheck.separate(W, V, n=4)
print(s)

# Paper 2, Theorem 3.2: sampled condition numbers per head count.
print(attncheck.condition([1, 4, 16], seq=64, head_dim=8, trials=50, seed=1))
sys.exit(0)
