#!/usr/bin/env python3
"""python_models.py MH_TOOL FIXTURES WORK — attncheck.from_torch and
attncheck.capture (python/attncheck/models.py) against the C reader.

1. Round trips, every fixture of tests/models/ (every family, F32, F16,
   BF16, F64, sharded): the fixture read here (an independent reader) into
   torch tensors of its dtypes, given to from_torch as a state dict in
   memory and as a torch.save'd pytorch_model.bin with its config.json.
   The written file holds every tensor with the fixture's dtype, shape and
   bytes; the C reader (mh_tool st) gives, for every float tensor, exactly
   torch's .double() of it (bit for bit); and the layer's patterns on a
   seeded residual stream (mh_tool model --resid) equal the fixture's bit
   for bit.
2. Every dtype: the generic layer with its weights in F64, F32, F16, BF16
   (and all four in one file), with planted extremes (the smallest
   subnormal, -0, the largest finite number of the dtype): the C reader
   gives torch's .double() bit for bit.
3. nanoGPT ckpt.pt ({"model" with "_orig_mod." names, "model_args"}),
   config from model_args.
4. Refusals, each with its status and a message naming the file or
   tensor, and nothing written (out_dir absent, its parent unchanged): a
   pickle weights_only refuses (one whose unpickling would create a file:
   not created), a Python float in nanoGPT's config, a tensor of unknown
   role (in a layer and outside), two names that are one once the prefixes
   are removed, a missing tensor, a shape config.json
   contradicts, an unknown model_type, a quantised tensor, a complex one,
   an integer weight, NaN and infinite weights in each float dtype, a
   non-tensor entry, no config, an out_dir that exists with files, whose
   parent is a file, or (not as root) is read-only.
5. capture on a small nanoGPT model in torch (float64): the array equals
   the model's own intermediate (its earlier blocks called by hand) bit for
   bit; the hook is gone afterwards (also after a refusal); float16 is
   widened exactly; a batch of two, an unreached layer, a keyword input are
   refused; the library's patterns on the captured .npy (mh_tool model
   --resid) equal the torch model's own attention weights within the bound
   of the comment in check_capture.

Seeded (ATTNCHECK_TEST_SEED, printed on failure).  Exit 0 pass, 1 fail."""
import json
import math
import os
import pickle
import struct
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import attncheck as ac

MH, FIX, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
SEED = int(os.environ.get("ATTNCHECK_TEST_SEED", "20261202"))
U = 2.0 ** -53
FAIL = []
COUNT = {"roundtrip": 0, "dtype": 0, "refusal": 0, "capture": 0}


def fail(msg):
    FAIL.append(msg)
    print("FAIL: %s" % msg)


def gamma(k):
    return k * U / (1 - k * U)


# ---------------------------------------------------------------- an independent reader

def read_raw(path):
    """name -> (dtype, shape, bytes) of one safetensors file."""
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n].decode("utf-8"))
    out = {}
    for k, v in h.items():
        if k != "__metadata__":
            s, e = v["data_offsets"]
            out[k] = (v["dtype"], v["shape"], b[8 + n + s:8 + n + e])
    return out


def read_dir(d):
    idx = os.path.join(d, "model.safetensors.index.json")
    if os.path.exists(idx):
        with open(idx) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    raw = {}
    for fn in files:
        raw.update(read_raw(os.path.join(d, fn)))
    return raw


TORCH = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16,
         "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
         "U8": torch.uint8, "BOOL": torch.bool}


def to_torch(dt, shape, b):
    if dt == "BF16":
        return torch.frombuffer(bytearray(b), dtype=torch.int16).view(torch.bfloat16) \
            .reshape(shape).clone()
    return torch.frombuffer(bytearray(b), dtype=TORCH[dt]).reshape(shape).clone() \
        if b else torch.zeros(shape, dtype=TORCH[dt])


def fixture(name):
    d = os.path.join(FIX, name)
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    raw = read_dir(d)
    return cfg, raw, {k: to_torch(*v) for k, v in raw.items()}


def width(cfg):
    for k in ("n_embd", "hidden_size", "dim", "num_features"):
        if k in cfg:
            return cfg[k]
    raise KeyError("width")


# ---------------------------------------------------------------- the C side

def st_dump(ckpt, out):
    r = subprocess.run([MH, "st", ckpt, out], capture_output=True, text=True)
    if r.returncode:
        fail("mh_tool st %s: %d %s" % (ckpt, r.returncode, r.stderr.strip()))
        return None
    return {f[:-4]: np.load(os.path.join(out, f)) for f in os.listdir(out)}


def patterns(ckpt, layer, resid, out):
    r = subprocess.run([MH, "model", ckpt, str(layer), out, "--resid", resid],
                       capture_output=True, text=True)
    if r.returncode:
        fail("mh_tool model %s: %d %s" % (ckpt, r.returncode, r.stderr.strip()))
        return None
    return np.load(os.path.join(out, "patterns.npy"))


def same_bits(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def c_reads_exactly(what, ckpt, sd, tag):
    """every float tensor of sd, as the C reader converts it, is torch's
    .double() of it, bit for bit"""
    got = st_dump(ckpt, os.path.join(WORK, tag + "_st"))
    if got is None:
        return
    nf = 0
    for k, t in sd.items():
        if not t.is_floating_point():
            continue
        nf += 1
        if k not in got:
            fail("%s: the C reader has no %s" % (what, k))
        elif not same_bits(got[k], t.double().numpy()):
            fail("%s: tensor %s (%s): the C reader's doubles differ from torch's" % (what, k,
                                                                                    t.dtype))
    if nf == 0:
        fail("%s: no float tensor compared" % what)


# ---------------------------------------------------------------- 1. round trips

def roundtrip(name, rng):
    cfg, raw, sd = fixture(name)
    d = width(cfg)
    R = rng.standard_normal((5, d))
    rp = os.path.join(WORK, "rt_%s_R.npy" % name)
    np.save(rp, R)
    want = patterns(os.path.join(FIX, name), 0, rp, os.path.join(WORK, "rt_%s_P0" % name))
    src = os.path.join(WORK, "rt_%s_src" % name)
    os.makedirs(src)
    torch.save(sd, os.path.join(src, "pytorch_model.bin"))
    with open(os.path.join(src, "config.json"), "w") as f:
        json.dump(cfg, f)
    ways = {"memory": lambda o: ac.from_torch(sd, cfg, o),
            "bin": lambda o: ac.from_torch(os.path.join(src, "pytorch_model.bin"), None, o),
            "bin+config": lambda o: ac.from_torch(os.path.join(src, "pytorch_model.bin"),
                                                  os.path.join(src, "config.json"), o)}
    for way, conv in ways.items():
        what = "%s (%s)" % (name, way)
        out = os.path.join(WORK, "rt_%s_%s" % (name, way.replace("+", "_")))
        try:
            conv(out)
        except ac.AttncheckError as e:
            fail("%s: refused: %s" % (what, e))
            continue
        new = read_raw(os.path.join(out, "model.safetensors"))
        if sorted(new) != sorted(raw):
            fail("%s: tensor names differ" % what)
        for k in raw:
            if k in new and new[k] != raw[k]:
                fail("%s: tensor %s: dtype, shape or bytes differ (%s %s vs %s %s)"
                     % (what, k, new[k][0], new[k][1], raw[k][0], raw[k][1]))
        with open(os.path.join(out, "config.json")) as f:
            if json.load(f) != cfg:
                fail("%s: config.json differs" % what)
        c_reads_exactly(what, out, sd, "rt_%s_%s" % (name, way.replace("+", "_")))
        got = patterns(out, 0, rp, out + "_P0")
        if want is not None and got is not None and not same_bits(want, got):
            fail("%s: layer 0's patterns differ from the fixture's" % what)
        COUNT["roundtrip"] += 1
    dts = sorted(set(v[0] for v in raw.values()))
    print("round trip %-10s %3d tensors (%s): bytes, C doubles and patterns identical, 3 ways"
          % (name, len(raw), " ".join(dts)))


# ---------------------------------------------------------------- 2. every dtype

def dtypes():
    cfg, raw, sd = fixture("layer")
    ext = {torch.float64: (2.0 ** -1074, float.fromhex("0x1.fffffffffffffp+1023")),
           torch.float32: (2.0 ** -149, float.fromhex("0x1.fffffep+127")),
           torch.float16: (2.0 ** -24, 65504.0),
           torch.bfloat16: (2.0 ** -133, float.fromhex("0x1.fep+127"))}
    names = sorted(k for k, t in sd.items() if t.is_floating_point())
    cases = [(str(dt).replace("torch.", ""), {k: t.to(dt) for k, t in sd.items()})
             for dt in ext]
    cases.append(("mixed", {k: t.to(list(ext)[i % 4]) for i, (k, t) in enumerate(sorted(sd.items()))}))
    for tag, s in cases:
        # plant the extremes in Wq (used by the layer; the C reader converts them)
        wq = s["Wq"].clone()
        tiny, big = ext[wq.dtype]
        flat = wq.view(-1)
        flat[0], flat[1], flat[2], flat[3] = tiny, -tiny, -0.0, -big
        flat[4] = big
        s = dict(s, Wq=wq)
        if not (flat[0].item() == tiny and flat[3].item() == -big):
            fail("dtype %s: the planted extremes are not representable" % tag)
        out = os.path.join(WORK, "dt_" + tag)
        try:
            ac.from_torch(s, cfg, out)
        except ac.AttncheckError as e:
            fail("dtype %s: refused: %s" % (tag, e))
            continue
        new = read_raw(os.path.join(out, "model.safetensors"))
        for k in names:
            want = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16",
                    torch.bfloat16: "BF16"}[s[k].dtype]
            if new[k][0] != want:
                fail("dtype %s: %s written as %s, stored as %s" % (tag, k, new[k][0], want))
        c_reads_exactly("dtype " + tag, out, s, "dt_" + tag)
        COUNT["dtype"] += 1
    print("dtypes: F64, F32, F16, BF16 and mixed, with subnormals, -0 and the largest finite "
          "numbers: the C reader gives torch's doubles bit for bit")


# ---------------------------------------------------------------- 3. nanoGPT ckpt.pt

def nanogpt_ckpt():
    cfg, raw, sd = fixture("nanogpt")
    if not all(k.startswith("_orig_mod.") for k in sd):
        fail("nanogpt fixture: names without _orig_mod.")
    args = {k: cfg[k] for k in ("n_layer", "n_head", "n_embd", "block_size", "vocab_size",
                                "bias")}
    args["dropout"] = 0
    ck = os.path.join(WORK, "nano_ckpt.pt")
    torch.save({"model": sd, "model_args": args, "iter_num": 5,
                "best_val_loss": torch.tensor(2.5), "optimizer": {"state": {}}}, ck)
    out = os.path.join(WORK, "nano_out")
    try:
        ac.from_torch(ck, None, out)
    except ac.AttncheckError as e:
        fail("nanoGPT ckpt.pt: refused: %s" % e)
        return
    with open(os.path.join(out, "config.json")) as f:
        if json.load(f) != cfg:
            fail("nanoGPT ckpt.pt: config.json is not model_args' nanogpt config")
    if read_raw(os.path.join(out, "model.safetensors")) != raw:
        fail("nanoGPT ckpt.pt: the tensors differ from the fixture's")
    c_reads_exactly("nanoGPT ckpt.pt", out, sd, "nano")
    COUNT["roundtrip"] += 1
    print("nanoGPT ckpt.pt (_orig_mod. names, BF16, model_args): the fixture's file, byte for "
          "byte")


# ---------------------------------------------------------------- 4. refusals

def listing(d):
    return sorted(os.listdir(d))


def refused(what, status, words, call, out, parent=None):
    """call() must raise with status, every word in its message, and leave
    neither out nor anything new in its parent"""
    parent = parent or os.path.dirname(out)
    before = listing(parent) if os.path.isdir(parent) else None
    try:
        call()
    except ac.AttncheckError as e:
        msg = str(e)
        if e.status != status:
            fail("%s: status %d, want %d (%s)" % (what, e.status, status, msg))
        for w in words:
            if w not in msg:
                fail("%s: the message does not name %r: %s" % (what, w, msg))
        if "\n" in msg or ".tmp-" in msg:
            fail("%s: not one line naming out_dir: %s" % (what, msg))
        print("refused %-34s %d  %s" % (what, e.status, msg))
    except Exception as e:  # noqa: BLE001
        fail("%s: %s: %s, not an AttncheckError" % (what, type(e).__name__, e))
    else:
        fail("%s: accepted" % what)
    if os.path.lexists(out) and before is not None and os.path.basename(out) not in before:
        fail("%s: %s was written" % (what, out))
    if before is not None and listing(parent) != before:
        fail("%s: %s changed: %s" % (what, parent, sorted(set(listing(parent)) - set(before))))
    COUNT["refusal"] += 1


class Evil:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def refusals():
    base = os.path.join(WORK, "ref")
    os.makedirs(base)
    out = os.path.join(base, "out")
    cfg, raw, sd = fixture("gpt2")
    # a pickle that would run code
    marker = os.path.join(WORK, "pwned")
    evil = os.path.join(WORK, "evil.bin")
    with open(evil, "wb") as f:
        pickle.dump({"x": Evil(marker)}, f)
    refused("pickle running code", 65, [evil, "weights_only"],
            lambda: ac.from_torch(evil, cfg, out), out)
    if os.path.exists(marker):
        fail("the evil pickle ran: %s exists" % marker)
    # torch.save'd with a Python float (nanoGPT's config): torch 1.13 refuses
    ck = os.path.join(WORK, "float_ckpt.pt")
    torch.save({"model": sd, "model_args": {"n_layer": 3}, "config": {"learning_rate": 6e-4}}, ck)
    refused("a Python float in the pickle", 65, [ck, "weights_only"],
            lambda: ac.from_torch(ck, cfg, out), out)
    qck = os.path.join(WORK, "q.bin")
    torch.save({"w": torch.quantize_per_tensor(torch.randn(4), 0.1, 0, torch.qint8)}, qck)
    refused("a quantised tensor in a file", 65, [qck, "weights_only"],
            lambda: ac.from_torch(qck, cfg, out), out)
    refused("a file that does not exist", 66, ["nothere.bin"],
            lambda: ac.from_torch(os.path.join(WORK, "nothere.bin"), cfg, out), out)
    junk = os.path.join(WORK, "junk.bin")
    with open(junk, "wb") as f:
        f.write(b"not a checkpoint at all\n")
    refused("a file that is not a checkpoint", 65, [junk],
            lambda: ac.from_torch(junk, cfg, out), out)
    # layouts the library refuses, by name
    refused("unknown tensor in a layer", 65, ["transformer.h.1.attn.q_norm.weight", out],
            lambda: ac.from_torch(dict(sd, **{"transformer.h.1.attn.q_norm.weight":
                                              torch.ones(8)}), cfg, out), out)
    refused("unknown tensor outside layers", 65, ["transformer.rotary.inv_freq"],
            lambda: ac.from_torch(dict(sd, **{"transformer.rotary.inv_freq": torch.ones(4)}),
                                  cfg, out), out)
    qk = "transformer.h.0.attn.c_attn.weight"
    refused("ambiguous names (_orig_mod.)", 65, ["_orig_mod." + qk, qk, "both"],
            lambda: ac.from_torch(dict(sd, **{"_orig_mod." + qk: sd[qk]}), cfg, out), out)
    refused("ambiguous names (no prefix)", 65, [qk[len("transformer."):], qk, "both"],
            lambda: ac.from_torch(dict(sd, **{qk[len("transformer."):]: sd[qk]}), cfg, out),
            out)
    less = {k: v for k, v in sd.items() if k != "transformer.h.2.attn.c_proj.weight"}
    refused("a missing tensor", 65, ["h.2.attn.c_proj.weight"],
            lambda: ac.from_torch(less, cfg, out), out)
    bad = dict(sd, **{"transformer.h.0.attn.c_attn.weight": torch.zeros(8, 23)})
    refused("a shape config.json contradicts", 65, ["transformer.h.0.attn.c_attn.weight"],
            lambda: ac.from_torch(bad, cfg, out), out)
    refused("an unknown model_type", 65, ["gpt5"],
            lambda: ac.from_torch(sd, dict(cfg, model_type="gpt5"), out), out)
    refused("an integer weight", 65, ["transformer.h.1.attn.c_attn.weight", "I8"],
            lambda: ac.from_torch(dict(sd, **{"transformer.h.1.attn.c_attn.weight":
                                              torch.zeros(8, 24, dtype=torch.int8)}), cfg, out),
            out)
    # refused before writing, by the converter
    q = torch.quantize_per_tensor(torch.randn(8, 24), 0.1, 0, torch.qint8)
    refused("a quantised tensor", 65, ["transformer.h.1.attn.c_attn.weight", "quantised"],
            lambda: ac.from_torch(dict(sd, **{"transformer.h.1.attn.c_attn.weight": q}), cfg,
                                  out), out)
    refused("a complex tensor", 65, ["transformer.wte.weight", "complex64"],
            lambda: ac.from_torch(dict(sd, **{"transformer.wte.weight":
                                              torch.zeros(24, 8, dtype=torch.complex64)}),
                                  cfg, out), out)
    for dt in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
        for val, word in ((math.nan, "NaN"), (math.inf, "+inf"), (-math.inf, "-inf")):
            w = sd["transformer.h.2.mlp.c_fc.weight"].to(dt).clone()
            w[3, 17] = val
            refused("%s weight %s" % (word, str(dt)[6:]), 65,
                    ["transformer.h.2.mlp.c_fc.weight", "(3, 17)", word],
                    lambda: ac.from_torch(dict(sd, **{"transformer.h.2.mlp.c_fc.weight": w}),
                                          cfg, out), out)
    refused("a non-tensor entry", 65, ["step", "int"],
            lambda: ac.from_torch(dict(sd, step=3), cfg, out), out)
    refused("no config for a state dict", 65, ["config"],
            lambda: ac.from_torch(sd, None, out), out)
    refused("a config with NaN", 65, ["config"],
            lambda: ac.from_torch(sd, dict(cfg, layer_norm_epsilon=math.nan), out), out)
    # out_dir: exists with a file, parent a file, parent read-only
    full = os.path.join(base, "full")
    os.makedirs(full)
    with open(os.path.join(full, "keep.txt"), "w") as f:
        f.write("mine\n")
    refused("an out_dir with files", 73, [full, "not an empty directory"],
            lambda: ac.from_torch(sd, cfg, full), full)
    with open(os.path.join(full, "keep.txt")) as f:
        if f.read() != "mine\n" or listing(full) != ["keep.txt"]:
            fail("out_dir with files: its files were touched")
    afile = os.path.join(base, "afile")
    with open(afile, "w") as f:
        f.write("x")
    refused("an out_dir under a file", 73, [os.path.join(afile, "out")],
            lambda: ac.from_torch(sd, cfg, os.path.join(afile, "out")),
            os.path.join(afile, "out"), parent=base)
    if os.geteuid() != 0:
        ro = os.path.join(base, "ro")
        os.makedirs(ro)
        os.chmod(ro, 0o555)
        try:
            refused("an unwritable out_dir", 73, [os.path.join(ro, "out")],
                    lambda: ac.from_torch(sd, cfg, os.path.join(ro, "out")),
                    os.path.join(ro, "out"))
        finally:
            os.chmod(ro, 0o755)
    else:
        print("(root: the read-only parent case is not run; the parent-is-a-file case is)")
    # an empty existing out_dir is replaced
    empty = os.path.join(base, "empty")
    os.makedirs(empty)
    try:
        ac.from_torch(sd, cfg, empty)
        if listing(empty) != ["config.json", "model.safetensors"]:
            fail("empty out_dir: holds %s" % listing(empty))
    except ac.AttncheckError as e:
        fail("an empty out_dir: refused: %s" % e)


# ---------------------------------------------------------------- 5. capture

class LN(nn.Module):
    def __init__(self, C):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(C))

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, None, 1e-5)


class Attn(nn.Module):
    def __init__(self, C, H):
        super().__init__()
        self.c_attn = nn.Linear(C, 3 * C, bias=False)
        self.c_proj = nn.Linear(C, C, bias=False)
        self.H = H
        self.att = None

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        a = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // self.H))
        a = a.masked_fill(torch.ones(T, T, dtype=torch.bool).tril().logical_not(), -math.inf)
        a = F.softmax(a, dim=-1)
        self.att = a.detach().clone()
        return self.c_proj((a @ v).transpose(1, 2).contiguous().view(B, T, C))


class MLP(nn.Module):
    def __init__(self, C):
        super().__init__()
        self.c_fc = nn.Linear(C, 4 * C, bias=False)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * C, C, bias=False)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, C, H):
        super().__init__()
        self.ln_1, self.attn, self.ln_2, self.mlp = LN(C), Attn(C, H), LN(C), MLP(C)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """nanoGPT's model.py, bias=False, no dropout"""

    def __init__(self, C, H, L, V, T):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(V, C), wpe=nn.Embedding(T, C),
            h=nn.ModuleList([Block(C, H) for _ in range(L)]), ln_f=LN(C)))
        self.lm_head = nn.Linear(C, V, bias=False)
        self.transformer.wte.weight = self.lm_head.weight

    def forward(self, idx):
        t = idx.shape[1]
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(t))
        for b in self.transformer.h:
            x = b(x)
        return self.lm_head(self.transformer.ln_f(x))


def check_capture():
    torch.manual_seed(SEED)
    C, H, L, V, T, n = 16, 4, 3, 40, 16, 11
    m = GPT(C, H, L, V, T).double()
    with torch.no_grad():
        for nm, p in m.named_parameters():
            if nm.endswith("ln_1.weight") or nm.endswith("ln_2.weight") or "ln_f" in nm:
                p.add_(0.2 * torch.randn_like(p))
            else:
                p.normal_(0, 0.4)
    ids = torch.randint(0, V, (1, n))
    cfg = {"model_type": "nanogpt", "n_layer": L, "n_head": H, "n_embd": C, "block_size": T,
           "vocab_size": V, "bias": False}
    ckpt = os.path.join(WORK, "cap_model")
    ac.from_torch(m.state_dict(), cfg, ckpt)
    for layer in range(L):
        blk = m.transformer.h[layer]
        path = os.path.join(WORK, "cap_h%d.npy" % layer)
        X = ac.capture(m, "transformer.h.%d" % layer, ids, path)
        # the model's own intermediate: its blocks before this one, by hand
        with torch.no_grad():
            x = m.transformer.wte(ids) + m.transformer.wpe(torch.arange(n))
            for b in m.transformer.h[:layer]:
                x = b(x)
        if X.shape != (n, C) or not same_bits(X, x[0].numpy()):
            fail("capture layer %d: not the model's own input of the block, bit for bit" % layer)
        if not same_bits(np.load(path), X):
            fail("capture layer %d: the .npy differs from the array" % layer)
        if len(blk._forward_pre_hooks):
            fail("capture layer %d: the hook is still there" % layer)
        # the same layer given as a module
        if not same_bits(ac.capture(m, blk, ids), X):
            fail("capture layer %d: by module and by name differ" % layer)
        # the library's patterns on the captured stream vs the model's own
        with torch.no_grad():
            m(ids)
        Pt = blk.attn.att[0].numpy()
        Pc = patterns(ckpt, layer, path, os.path.join(WORK, "cap_P%d" % layer))
        if Pc is None:
            continue
        # Bound: both sides compute the logits s = scale q.k from the same
        # doubles (LayerNorm of width C, then dot products of length C) in
        # different orders; each is within gamma(2C + 8) * M of the exact
        # value, M = scale sum_j |q_j k_j| + |s| (norm and projections
        # included, with the LayerNorm's relative error folded into the
        # factor 2C + 8).  Softmax moves by at most 2 max|ds| per unit of
        # probability: |dP| <= 2 * 2 gamma(2C + 8) max M (both sides' errors).
        with torch.no_grad():
            xn = blk.ln_1(x)
            qkv = blk.attn.c_attn(xn)[0]
            q = qkv[:, :C].view(n, H, C // H).transpose(0, 1)
            k = qkv[:, C:2 * C].view(n, H, C // H).transpose(0, 1)
            Mx = (q.abs() @ k.abs().transpose(1, 2)).max().item() / math.sqrt(C // H)
            xa = xn.abs()[0]
            W = blk.attn.c_attn.weight.abs()
            Mx = max(Mx, ((xa @ W[:C].T).max() * (xa @ W[C:2 * C].T).max()).item()
                     * (C // H) / math.sqrt(C // H))
        B = 4 * gamma(2 * C + 8) * Mx
        diff = np.abs(Pc - Pt).max()
        if not diff <= B:
            fail("capture layer %d: library patterns differ from the model's by %.3g > %.3g"
                 % (layer, diff, B))
        print("capture h.%d: (%d, %d) bit for bit; library patterns vs torch's own: %.2e "
              "(bound %.2e)" % (layer, n, C, diff, B))
        COUNT["capture"] += 1
    # float16 widened exactly; batch, unreached layer, keyword input refused
    m16 = GPT(C, H, 1, V, T).half()
    x16 = ac.capture(m16, "transformer.h.0", ids)
    with torch.no_grad():
        w16 = m16.transformer.wte(ids) + m16.transformer.wpe(torch.arange(n))
    if x16.dtype != np.float32 or not np.array_equal(x16, w16[0].float().numpy()):
        fail("capture float16: not widened exactly to float32")
    COUNT["capture"] += 1

    def cap_refused(what, call, words, hooked):
        try:
            call()
        except ac.AttncheckError as e:
            for w in words:
                if w not in str(e):
                    fail("capture %s: the message does not name %r: %s" % (what, w, e))
            print("capture refused %-22s %d  %s" % (what, e.status, e))
        else:
            fail("capture %s: accepted" % what)
        if len(hooked._forward_pre_hooks):
            fail("capture %s: the hook is left" % what)
        COUNT["capture"] += 1

    cap_refused("a batch of two", lambda: ac.capture(m, "transformer.h.1", ids.repeat(2, 1)),
                ["transformer.h.1", "2"], m.transformer.h[1])
    other = nn.Linear(3, 3)
    cap_refused("a foreign module", lambda: ac.capture(m, other, ids), ["Linear"], other)
    cap_refused("an unknown name", lambda: ac.capture(m, "transformer.h.9", ids),
                ["transformer.h.9"], m)

    class Skip(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(C, C), nn.Linear(C, C)

        def forward(self, x):
            return self.a(x)

    s = Skip().double()
    cap_refused("a layer never reached", lambda: ac.capture(s, "b", torch.zeros(1, 3, C,
                                                                                  dtype=torch.double)),
                ["b", "never"], s.b)

    class Kw(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(C, C)

        def forward(self, x):
            return self.a(input=x)

    k = Kw().double()
    cap_refused("a keyword input", lambda: ac.capture(k, "a", torch.zeros(3, C, dtype=torch.double)),
                ["a", "keyword"], k.a)


def main():
    rng = np.random.RandomState(SEED % 2 ** 32)
    names = sorted(os.listdir(FIX))
    for name in names:
        roundtrip(name, rng)
    dtypes()
    nanogpt_ckpt()
    refusals()
    check_capture()
    print("counts: %s" % ", ".join("%s %d" % kv for kv in COUNT.items()))
    if len(names) < 13 or COUNT["refusal"] < 32:
        fail("fewer cases than expected: %d fixtures, %d refusals" % (len(names),
                                                                      COUNT["refusal"]))
    if FAIL:
        print("%d failures (ATTNCHECK_TEST_SEED=%d)" % (len(FAIL), SEED))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
