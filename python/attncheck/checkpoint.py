"""Checkpoints of `attncheck train` as PyTorch modules, and back.

A checkpoint is a directory: config.json (model, training and data
configuration, the step, and an FNV-1a checksum of every tensor) and one
float64 .npy file per tensor, plus the AdamW moments (attncheck-train(1),
doc/mathematics.md §6.4).  load_checkpoint builds a torch.nn.Module from
stock PyTorch layers where they compute the same function:

    attncheck tensor                  PyTorch (module.blocks[l] = TransformerEncoderLayer)
    embed.tokens.weight               tokens.weight          (nn.Embedding)
    embed.input.weight / .bias        inputs.weight / .bias  (nn.Linear)
    embed.positions.weight            positions              (nn.Parameter, max_seq x C)
    layerL.ln1.weight / .bias         blocks.L.norm1
    layerL.attn.qkv.weight / .bias    blocks.L.self_attn.in_proj_weight / in_proj_bias
    layerL.attn.proj.weight / .bias   blocks.L.self_attn.out_proj
    layerL.ln2.weight / .bias         blocks.L.norm2
    layerL.ffn.fc.weight / .bias      blocks.L.linear1
    layerL.ffn.proj.weight / .bias    blocks.L.linear2
    lnf.weight / .bias                lnf                    (nn.LayerNorm)
    head.weight (/ .bias)             head                   (nn.Linear)

with nn.TransformerEncoderLayer(C, H, ffn, dropout=0, activation=GELU(tanh),
layer_norm_eps=1e-5, batch_first=True, norm_first=(ln == "pre")).  Fixed-head
attention (head size other than C/H) has no stock layer: those blocks are
FixedBlock, with the same submodule names and attn.qkv / attn.proj as
nn.Linear.  The bare layers of --task teacher / fit-p (arch "attention" /
"scores") become a module with parameters Wq, Wk (, Wv, Wo) named as the
files.  Everything is float64, as attncheck computes."""

import json
import math
import os
import shutil
import tempfile

import numpy as np

from . import _native
from .torch_convert import _umask

FORMAT = "attncheck-train-checkpoint"


def _torch():
    try:
        import torch
        return torch
    except ImportError as e:  # pragma: no cover
        raise ImportError("attncheck.load_checkpoint needs PyTorch (Debian: python3-torch)") from e


def _read_config(path):
    cfg_file = os.path.join(path, "config.json")
    try:
        with open(cfg_file) as f:
            cfg = json.load(f)
    except OSError as e:
        raise _native_error(66, "%s: %s" % (cfg_file, e.strerror))
    except ValueError as e:
        raise _native_error(65, "%s: not JSON (%s)" % (cfg_file, e))
    if cfg.get("format") != FORMAT:
        raise _native_error(65, "%s: not an attncheck training checkpoint" % cfg_file)
    return cfg


def _native_error(status, msg):
    from .core import AttncheckError
    return AttncheckError(status, msg)


def fnv1a64(a):
    """The checksum config.json records for a tensor (hex string)."""
    x = np.ascontiguousarray(a, dtype=np.float64).ravel()
    return "%016x" % _native.lib.ac_ffi_fnv1a64(x.ctypes.data_as(_native.c_double_p), x.size)


def _mapping(cfg):
    """attncheck tensor name -> PyTorch state_dict key."""
    m = cfg["model"]
    out = {}
    if m["arch"] != "transformer":
        for t in cfg["tensors"]:
            out[t["name"]] = t["name"]
        return out
    fixed = m["heads"] * m["head_dim"] != m["width"]
    per = {"ln1": "norm1", "ln2": "norm2", "ffn.fc": "linear1", "ffn.proj": "linear2"}
    if fixed:
        per.update({"attn.qkv": "attn.qkv", "attn.proj": "attn.proj"})
    for t in cfg["tensors"]:
        n = t["name"]
        if n.startswith("embed.tokens."):
            out[n] = "tokens." + n.split(".")[-1]
        elif n.startswith("embed.input."):
            out[n] = "inputs." + n.split(".")[-1]
        elif n == "embed.positions.weight":
            out[n] = "positions"
        elif n.startswith("layer"):
            layer, rest = n.split(".", 1)
            l = int(layer[5:])
            stem, kind = rest.rsplit(".", 1)
            if stem == "attn.qkv" and not fixed:
                key = "self_attn.in_proj_" + kind
            elif stem == "attn.proj" and not fixed:
                key = "self_attn.out_proj." + kind
            else:
                key = per[stem] + "." + kind
            out[n] = "blocks.%d.%s" % (l, key)
        else:
            out[n] = n  # lnf.weight, lnf.bias, head.weight, head.bias
    return out


def _modules():
    torch = _torch()
    nn = torch.nn
    F = nn.functional

    def gelu_tanh(x):
        return F.gelu(x, approximate="tanh")

    class FixedBlock(nn.Module):
        """A block whose heads have size head_dim != width/heads (paper 1's
        fixed head size): same computation as TransformerEncoderLayer."""

        def __init__(self, C, H, S, ffn, eps, pre):
            super().__init__()
            self.H, self.S, self.pre = H, S, pre
            self.norm1 = nn.LayerNorm(C, eps=eps)
            self.norm2 = nn.LayerNorm(C, eps=eps)
            self.attn = nn.Module()
            self.attn.qkv = nn.Linear(C, 3 * H * S)
            self.attn.proj = nn.Linear(H * S, C)
            self.linear1 = nn.Linear(C, ffn)
            self.linear2 = nn.Linear(ffn, C)

        def _sa(self, x, mask):
            B, T, _ = x.shape
            D = self.H * self.S
            q, k, v = self.attn.qkv(x).split(D, dim=-1)
            sh = lambda z: z.view(B, T, self.H, self.S).transpose(1, 2)  # noqa: E731
            a = sh(q) @ sh(k).transpose(-2, -1) / math.sqrt(self.S)
            if mask is not None:
                a = a + mask
            y = (a.softmax(-1) @ sh(v)).transpose(1, 2).reshape(B, T, D)
            return self.attn.proj(y)

        def _ff(self, x):
            return self.linear2(gelu_tanh(self.linear1(x)))

        def forward(self, x, src_mask=None):
            if self.pre:
                x = x + self._sa(self.norm1(x), src_mask)
                return x + self._ff(self.norm2(x))
            x = self.norm1(x + self._sa(x, src_mask))
            return self.norm2(x + self._ff(x))

    class AttncheckTransformer(nn.Module):
        """The model of `attncheck train --arch transformer` in stock layers."""

        def __init__(self, m):
            super().__init__()
            C, H, S = m["width"], m["heads"], m["head_dim"]
            self.m = m
            if m["input"] == "tokens":
                self.tokens = nn.Embedding(m["vocab"], C)
            else:
                self.inputs = nn.Linear(m["in_dim"], C)
            if m["positions"]:
                self.positions = nn.Parameter(torch.zeros(m["max_seq"], C))
            pre = m["ln"] == "pre"
            if H * S == C:
                blocks = [nn.TransformerEncoderLayer(C, H, m["ffn"], dropout=0.0,
                                                     activation=gelu_tanh,
                                                     layer_norm_eps=m["ln_eps"],
                                                     batch_first=True, norm_first=pre)
                          for _ in range(m["layers"])]
            else:
                blocks = [FixedBlock(C, H, S, m["ffn"], m["ln_eps"], pre)
                          for _ in range(m["layers"])]
            self.blocks = nn.ModuleList(blocks)
            self.lnf = nn.LayerNorm(C, eps=m["ln_eps"])
            K = m["vocab"] if m["head"] == "lm" else m["out_dim"]
            self.head = nn.Linear(C, K, bias=m["head"] != "lm")

        def forward(self, x):
            """x: (B, T) int64 tokens or (B, T, in_dim) inputs.  Returns the
            logits (lm: per position; classify: per sequence after pooling) or
            the regression outputs."""
            h = self.tokens(x) if self.m["input"] == "tokens" else self.inputs(x)
            T = h.shape[1]
            if self.m["positions"]:
                h = h + self.positions[:T]
            mask = None
            if self.m["causal"]:
                mask = torch.full((T, T), float("-inf"), dtype=h.dtype).triu(1)
            for b in self.blocks:
                h = b(h, src_mask=mask)
            h = self.lnf(h)
            if self.m["head"] == "classify":
                h = {"first": h[:, 0], "last": h[:, -1], "mean": h.mean(1)}[self.m["pool"]]
            return self.head(h)

    class AttncheckLayer(nn.Module):
        """The bare attention layer / head of --task teacher and fit-p:
        parameters named as the checkpoint's files (Wq, Wk, Wv, Wo)."""

        def __init__(self, cfg):
            super().__init__()
            self.m = cfg["model"]
            for t in cfg["tensors"]:
                setattr(self, t["name"], nn.Parameter(torch.zeros(*t["shape"])))

        def extra_repr(self):
            return ", ".join("%s: %s" % (n, tuple(p.shape)) for n, p in self.named_parameters())

        def scores(self, x):
            """Row-softmax attention (B, H, T, T) of inputs x (B, T, C)."""
            Wq, Wk = self.Wq, self.Wk
            if Wq.dim() == 2:
                Wq, Wk = Wq.unsqueeze(0), Wk.unsqueeze(0)
            q = torch.einsum("btc,hsc->bhts", x, Wq)
            k = torch.einsum("btc,hsc->bhts", x, Wk)
            a = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            if self.m.get("causal"):
                T = a.shape[-1]
                a = a.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
            return a.softmax(-1)

        def forward(self, x):
            if not hasattr(self, "Wv"):
                return self.scores(x)
            v = torch.einsum("btc,hsc->bhts", x, self.Wv)
            return torch.einsum("bhts,hcs->btc", self.scores(x) @ v, self.Wo)

    return AttncheckTransformer, AttncheckLayer


def load_checkpoint(path):
    """Load DIR (written by `attncheck train --save DIR`) as a float64
    torch.nn.Module; checksums are verified.  module.attncheck_config holds
    config.json and module.attncheck_path the directory."""
    torch = _torch()
    cfg = _read_config(path)
    Transformer, Layer = _modules()
    mod = Transformer(cfg["model"]) if cfg["model"]["arch"] == "transformer" else Layer(cfg)
    mod = mod.double()
    keys = _mapping(cfg)
    state = {}
    for t in cfg["tensors"]:
        f = os.path.join(path, t["name"] + ".npy")
        try:
            a = np.load(f, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise _native_error(65, "%s: %s" % (f, e))
        if list(a.shape) != list(t["shape"]) or a.dtype != np.float64:
            raise _native_error(65, "%s: shape %s %s, config.json says %s float64"
                                % (f, list(a.shape), a.dtype, t["shape"]))
        if fnv1a64(a) != t["fnv1a64"]:
            raise _native_error(65, "%s: checksum mismatch: not the file this checkpoint wrote"
                                % f)
        state[keys[t["name"]]] = torch.from_numpy(np.ascontiguousarray(a))
    mod.load_state_dict(state, strict=True)
    mod.attncheck_config = cfg
    mod.attncheck_path = os.path.abspath(path)
    return mod


def save_checkpoint(module_or_state, path, like=None):
    """Write the weights of a module from load_checkpoint (or its
    state_dict) as a checkpoint DIR that `attncheck train --resume` and the
    checks accept.  The configuration, the data description and the AdamW
    moments are taken from `like` (default: the checkpoint the module was
    loaded from); the tensors and their checksums are the module's.  The
    directory is written aside and renamed into place; an existing DIR is
    replaced only as a whole."""
    torch = _torch()
    if isinstance(module_or_state, torch.nn.Module):
        state = module_or_state.state_dict()
        like = like or getattr(module_or_state, "attncheck_path", None)
    else:
        state = dict(module_or_state)
    if like is None:
        raise ValueError("save_checkpoint: give like=DIR, the checkpoint whose configuration "
                         "this one shares")
    cfg = _read_config(like)
    keys = _mapping(cfg)
    parent = os.path.dirname(os.path.abspath(path)) or "."
    tmp = tempfile.mkdtemp(prefix=".attncheck-py-", dir=parent)
    try:
        for t in cfg["tensors"]:
            key = keys[t["name"]]
            if key not in state:
                raise ValueError("save_checkpoint: the state has no %r (tensor %s)"
                                 % (key, t["name"]))
            a = state[key].detach().cpu().double().numpy()
            if list(a.shape) != list(t["shape"]):
                raise ValueError("save_checkpoint: %s has shape %s, the checkpoint needs %s"
                                 % (key, list(a.shape), t["shape"]))
            a = np.ascontiguousarray(a)
            np.save(os.path.join(tmp, t["name"] + ".npy"), a)
            t["fnv1a64"] = fnv1a64(a)
        for f in ("adamw.m.npy", "adamw.v.npy"):
            shutil.copyfile(os.path.join(like, f), os.path.join(tmp, f))
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(cfg, f, indent=2)
            f.write("\n")
        os.chmod(tmp, 0o777 & ~_umask())
        if os.path.isdir(path):
            old = tempfile.mkdtemp(prefix=".attncheck-py-old-", dir=parent)
            os.rename(path, os.path.join(old, "d"))
            os.rename(tmp, path)
            shutil.rmtree(old)
        else:
            os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path
