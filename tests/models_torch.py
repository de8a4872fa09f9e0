#!/usr/bin/env python3
"""attncheck's pretrained-model patterns against PyTorch (float64).

Usage: models_torch.py MH_TOOL FIXTURES WORKDIR

For every fixture of FIXTURES (tests/models/, written by
tests/models_fixtures.py) this script reads the safetensors files with its
own reader (json + numpy.frombuffer; BF16 as the upper half of float32),
builds the family's forward pass in torch float64 from the equations of the
Hugging Face / timm / nanoGPT modeling files -- per head, explicitly, with
the real tensor names and layouts of the files; nothing is shared with
attncheck --, and compares, at every layer,

  (a) from the tokens (or pixels): the residual stream entering the layer
      (mh_tool's resid.npy against the torch hidden state) and the patterns;
  (b) from the residual stream (torch's, given to mh_tool --resid) and
  (c) from the exact input of the projections (--xin): the patterns;
  (d) Theorem 1's form (t1_*.npy): the column softmax of
      factor (Wk Xt)' (Wq Xt) / sqrt(dk), masked as the model masks,
      equals the transposed pattern;
  (e) torch.nn.MultiheadAttention(average_attn_weights=False) where it
      computes the same heads (no RoPE, one key/value head per head, the
      scale 1/sqrt(dk)).

Each with and without an attention mask of right padding (token models).

Error bounds (u = 2^-53, gamma_k = k u / (1 - k u); Higham, ASNA §3.1):
  logits.  For one side, a projection q_j = sum_i x_i W_ji + b_j has error
  at most gamma_{d+1} Qa_j, Qa = |X| |W|' + |b|; RoPE adds the pair
  (|a| + |b|) and gamma_4 of it; the logit z = s q.k then errs by at most
      s [gamma_dk Qa.Ka + (Qa + eq).ek + eq.Ka] + 2 u |z|,
  eq, ek the projections' errors.  Two sides: twice that, plus, when the
  inputs differ by dX (case a), s [(|dX||Wq|').Ka + Qa.(|dX||Wk|')] (+ the
  product of both).  Call D_q the largest over the visible keys of row q.
  patterns.  Moving every logit of a row by at most D changes each
  probability by a factor in [e^-2D, e^2D]; the softmax itself rounds by
  (n + 3) u relative per side:
      |p_attncheck - p_torch| <= p (e^(2 D_q) - 1) + 2 (n + 3) u p  (+ u).
  hidden states.  As tests/train_torch.py: dot products of length at most
  m (the longest reduction), about 12 stages per block, composition factor
  16, two sides: normwise max|R_a - R_t| <= 2 16 12 (l + 2) m u max|R_t|.

Exit status: 0 all agree, 1 a mismatch, 77 torch or numpy missing, 99 setup.
"""
import json
import math
import os
import struct
import subprocess
import sys

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover
    print("models_torch: %s; skipping" % e, file=sys.stderr)
    sys.exit(77)

torch.set_default_dtype(torch.float64)
U = 2.0 ** -53
SEED = int(os.environ.get("ATTNCHECK_TEST_SEED", "20261121"))
FAIL = []
WORST = {}


def gamma(k):
    return k * U / (1 - k * U)


# ---------------------------------------------------------------- reading

def read_st(path):
    """name -> float64 numpy array (or bool/uint8 as is) of one file."""
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n].decode("utf-8"))
    data = b[8 + n:]
    out = {}
    for k, v in h.items():
        if k == "__metadata__":
            continue
        s, e = v["data_offsets"]
        raw = data[s:e]
        dt, shape = v["dtype"], v["shape"]
        if dt == "BF16":
            a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        elif dt in ("F16", "F32", "F64"):
            a = np.frombuffer(raw, {"F16": "<f2", "F32": "<f4", "F64": "<f8"}[dt])
        elif dt in ("BOOL", "U8"):
            a = np.frombuffer(raw, np.uint8)
        else:
            raise ValueError("%s: %s" % (k, dt))
        out[k] = a.astype(np.float64).reshape(shape)
    return out


def read_ckpt(d):
    idx = os.path.join(d, "model.safetensors.index.json")
    if os.path.exists(idx):
        with open(idx) as f:
            wm = json.load(f)["weight_map"]
        sd = {}
        for fn in sorted(set(wm.values())):
            sd.update(read_st(os.path.join(d, fn)))
    else:
        sd = read_st(os.path.join(d, "model.safetensors"))
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    return cfg, {k: torch.tensor(v) for k, v in sd.items()}


# ---------------------------------------------------------------- layers

def layer_norm(x, w, b, eps):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def rope(x, theta, kind):
    """x (h, n, dk) at positions 0..n-1: HF rotate_half or Meta's complex pairs."""
    h, n, dk = x.shape
    inv = 1.0 / (theta ** (torch.arange(0, dk, 2, dtype=torch.float64) / dk))
    ang = torch.arange(n, dtype=torch.float64)[:, None] * inv[None, :]      # (n, dk/2)
    if kind == "half":
        cos = torch.cat([ang.cos(), ang.cos()], -1)
        sin = torch.cat([ang.sin(), ang.sin()], -1)
        x1, x2 = x[..., :dk // 2], x[..., dk // 2:]
        return x * cos + torch.cat([-x2, x1], -1) * sin
    xc = torch.view_as_complex(x.reshape(h, n, dk // 2, 2).contiguous())
    return torch.view_as_real(xc * torch.polar(torch.ones_like(ang), ang)).reshape(h, n, dk)


NEG = torch.finfo(torch.float64).min


def attend(q, k, v, scale, mask):
    """q (h, n, dk), k, v (h, n, dk) after the GQA repeat; mask (n, n) bool
    visible.  Returns the patterns (h, n, n) and the heads' outputs."""
    w = (q @ k.transpose(-1, -2)) * scale
    w = w.masked_fill(~mask, NEG)
    p = torch.softmax(w, -1)
    p = p.masked_fill(~mask, 0.0)
    return p, p @ v


def visible(n, causal, window, keep):
    m = torch.ones(n, n, dtype=torch.bool)
    qi = torch.arange(n)[:, None]
    ki = torch.arange(n)[None, :]
    if causal:
        m &= ki <= qi
    if window:
        m &= ki > qi - window
    if keep is not None:
        m &= torch.tensor(keep, dtype=torch.bool)[None, :]
    return m


# ---------------------------------------------------------------- families
# Each returns, per layer l: (hidden entering l, X = input of the
# projections, the layer's head weights for the bound, patterns), and the
# MHA check's parameters when it applies.

class Head:
    """Per-layer attention in canonical form for the bounds: Wq (h, dk, d)."""

    def __init__(self, Wq, bq, Wk, bk, Wv, bv, Wo, bo, H, KV, scale, causal=False, window=0,
                 rope=None, theta=0.0):
        d = Wq.shape[1]
        dk = Wq.shape[0] // H
        self.H, self.KV, self.dk, self.d = H, KV, dk, d
        self.Wq, self.Wk, self.Wv = Wq.view(H, dk, d), Wk.view(KV, dk, d), Wv.view(KV, dk, d)
        self.bq = bq.view(H, dk) if bq is not None else None
        self.bk = bk.view(KV, dk) if bk is not None else None
        self.bv = bv.view(KV, dk) if bv is not None else None
        self.Wo, self.bo = Wo, bo
        self.scale, self.causal, self.window, self.rope, self.theta = (scale, causal, window,
                                                                        rope, theta)

    def forward(self, x, keep):
        """x (n, d) the input of the projections: patterns and output."""
        n = x.shape[0]
        q = torch.einsum("nd,hkd->hnk", x, self.Wq)
        k = torch.einsum("nd,hkd->hnk", x, self.Wk)
        v = torch.einsum("nd,hkd->hnk", x, self.Wv)
        if self.bq is not None:
            q = q + self.bq[:, None, :]
        if self.bk is not None:
            k = k + self.bk[:, None, :]
        if self.bv is not None:
            v = v + self.bv[:, None, :]
        if self.rope:
            q, k = rope(q, self.theta, self.rope), rope(k, self.theta, self.rope)
        rep = self.H // self.KV            # repeat_kv: query head i reads kv head i // rep
        k, v = k.repeat_interleave(rep, 0), v.repeat_interleave(rep, 0)
        p, o = attend(q, k, v, self.scale, visible(n, self.causal, self.window, keep))
        y = o.transpose(0, 1).reshape(n, self.H * self.dk) @ self.Wo.T
        return p, y + (self.bo if self.bo is not None else 0)


def run_blocks(cfg, sd, fam, x0, keep, nlayers):
    """Hidden states entering each layer, the layer objects and inputs."""
    hs, heads, xs = [], [], []
    h = x0
    for l in range(nlayers):
        hs.append(h)
        head, pre, post = fam.layer(cfg, sd, l)
        x = pre(h)
        xs.append(x)
        heads.append(head)
        p, a = head.forward(x, keep)
        h = post(h, a) if post else None
    return hs, heads, xs


class GPT2:
    prefix = "transformer."

    def embed(self, cfg, sd, ids, types, keep, pix):
        p = self.prefix
        return sd[p + "wte.weight"][ids] + sd[p + "wpe.weight"][torch.arange(len(ids))]

    def layer(self, cfg, sd, l):
        p = "%sh.%d." % (self.prefix, l)
        C, H = cfg["n_embd"], cfg["n_head"]
        W, b = sd[p + "attn.c_attn.weight"], sd[p + "attn.c_attn.bias"]   # Conv1D [in, out]
        scale = 1.0 / math.sqrt(C // H) if cfg.get("scale_attn_weights", True) else 1.0
        if cfg.get("scale_attn_by_inverse_layer_idx"):
            scale /= float(l + 1)
        head = Head(W[:, :C].T, b[:C], W[:, C:2 * C].T, b[C:2 * C], W[:, 2 * C:].T, b[2 * C:],
                    sd[p + "attn.c_proj.weight"].T, sd[p + "attn.c_proj.bias"], H, H, scale,
                    causal=True)
        eps = cfg["layer_norm_epsilon"]

        def pre(h):
            return layer_norm(h, sd[p + "ln_1.weight"], sd[p + "ln_1.bias"], eps)

        def post(h, a):
            h = h + a
            m = layer_norm(h, sd[p + "ln_2.weight"], sd[p + "ln_2.bias"], eps)
            m = gelu_new(m @ sd[p + "mlp.c_fc.weight"] + sd[p + "mlp.c_fc.bias"])
            return h + m @ sd[p + "mlp.c_proj.weight"] + sd[p + "mlp.c_proj.bias"]
        return head, pre, post


class NanoGPT(GPT2):
    prefix = "_orig_mod.transformer."

    def layer(self, cfg, sd, l):
        p = "%sh.%d." % (self.prefix, l)
        C, H = cfg["n_embd"], cfg["n_head"]
        W = sd[p + "attn.c_attn.weight"]                                    # Linear [out, in]
        head = Head(W[:C], None, W[C:2 * C], None, W[2 * C:], None, sd[p + "attn.c_proj.weight"],
                    None, H, H, 1.0 / math.sqrt(C // H), causal=True)

        def pre(h):
            return layer_norm(h, sd[p + "ln_1.weight"], None, 1e-5)

        def post(h, a):
            h = h + a
            m = layer_norm(h, sd[p + "ln_2.weight"], None, 1e-5)
            m = F.gelu(m @ sd[p + "mlp.c_fc.weight"].T)
            return h + m @ sd[p + "mlp.c_proj.weight"].T
        return head, pre, post


class Bert:
    prefix = ""
    lnw, lnb = "gamma", "beta"

    def positions(self, cfg, ids):
        return torch.arange(len(ids))

    def embed(self, cfg, sd, ids, types, keep, pix):
        p = self.prefix + "embeddings."
        e = sd[p + "word_embeddings.weight"][ids] + \
            sd[p + "position_embeddings.weight"][self.positions(cfg, ids)]
        if p + "token_type_embeddings.weight" in sd:
            e = e + sd[p + "token_type_embeddings.weight"][types]
        return layer_norm(e, sd[p + "LayerNorm." + self.lnw], sd[p + "LayerNorm." + self.lnb],
                          cfg["layer_norm_eps"])

    def layer(self, cfg, sd, l):
        p = "%sencoder.layer.%d." % (self.prefix, l)
        H = cfg["num_attention_heads"]
        a = p + "attention.self."
        head = Head(sd[a + "query.weight"], sd[a + "query.bias"], sd[a + "key.weight"],
                    sd[a + "key.bias"], sd[a + "value.weight"], sd[a + "value.bias"],
                    sd[p + "attention.output.dense.weight"], sd[p + "attention.output.dense.bias"],
                    H, H, 1.0 / math.sqrt(cfg["hidden_size"] // H))
        eps, w, b = cfg["layer_norm_eps"], self.lnw, self.lnb

        def post(h, att):
            h = layer_norm(att + h, sd[p + "attention.output.LayerNorm." + w],
                           sd[p + "attention.output.LayerNorm." + b], eps)
            m = F.gelu(h @ sd[p + "intermediate.dense.weight"].T + sd[p + "intermediate.dense.bias"])
            m = m @ sd[p + "output.dense.weight"].T + sd[p + "output.dense.bias"]
            return layer_norm(m + h, sd[p + "output.LayerNorm." + w], sd[p + "output.LayerNorm." + b],
                              eps)
        return head, (lambda h: h), post


class Roberta(Bert):
    prefix = "roberta."
    lnw, lnb = "weight", "bias"

    def positions(self, cfg, ids):
        # create_position_ids_from_input_ids
        pad = cfg["pad_token_id"]
        m = (ids != pad).long()
        return torch.cumsum(m, 0) * m + pad


class DistilBert:
    prefix = "distilbert."

    def embed(self, cfg, sd, ids, types, keep, pix):
        p = self.prefix + "embeddings."
        e = sd[p + "word_embeddings.weight"][ids] + \
            sd[p + "position_embeddings.weight"][torch.arange(len(ids))]
        return layer_norm(e, sd[p + "LayerNorm.weight"], sd[p + "LayerNorm.bias"], 1e-12)

    def layer(self, cfg, sd, l):
        p = "%stransformer.layer.%d." % (self.prefix, l)
        H = cfg["n_heads"]
        a = p + "attention."
        head = Head(sd[a + "q_lin.weight"], sd[a + "q_lin.bias"], sd[a + "k_lin.weight"],
                    sd[a + "k_lin.bias"], sd[a + "v_lin.weight"], sd[a + "v_lin.bias"],
                    sd[a + "out_lin.weight"], sd[a + "out_lin.bias"], H, H,
                    1.0 / math.sqrt(cfg["dim"] // H))

        def post(h, att):
            h = layer_norm(att + h, sd[p + "sa_layer_norm.weight"], sd[p + "sa_layer_norm.bias"],
                           1e-12)
            m = F.gelu(h @ sd[p + "ffn.lin1.weight"].T + sd[p + "ffn.lin1.bias"])
            m = m @ sd[p + "ffn.lin2.weight"].T + sd[p + "ffn.lin2.bias"]
            return layer_norm(m + h, sd[p + "output_layer_norm.weight"],
                              sd[p + "output_layer_norm.bias"], 1e-12)
        return head, (lambda h: h), post


class Llama:
    def __init__(self, rope_kind="half"):
        self.rope_kind = rope_kind

    def embed(self, cfg, sd, ids, types, keep, pix):
        return sd["model.embed_tokens.weight"][ids]

    def layer(self, cfg, sd, l):
        p = "model.layers.%d." % l
        H, KV = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
        dk = cfg["hidden_size"] // H
        a = p + "self_attn."
        g = sd.get
        window = cfg.get("sliding_window") if cfg["model_type"] == "mistral" else 0
        head = Head(sd[a + "q_proj.weight"], g(a + "q_proj.bias"), sd[a + "k_proj.weight"],
                    g(a + "k_proj.bias"), sd[a + "v_proj.weight"], g(a + "v_proj.bias"),
                    sd[a + "o_proj.weight"], g(a + "o_proj.bias"), H, KV, dk ** -0.5, causal=True,
                    window=window or 0, rope=self.rope_kind, theta=cfg["rope_theta"])
        eps = cfg["rms_norm_eps"]

        def pre(h):
            return rms_norm(h, sd[p + "input_layernorm.weight"], eps)

        def post(h, att):
            h = h + att
            m = rms_norm(h, sd[p + "post_attention_layernorm.weight"], eps)
            m = F.silu(m @ sd[p + "mlp.gate_proj.weight"].T) * (m @ sd[p + "mlp.up_proj.weight"].T)
            return h + m @ sd[p + "mlp.down_proj.weight"].T
        return head, pre, post


class ViT:
    def embed(self, cfg, sd, ids, types, keep, pix):
        p = "vit.embeddings."
        P = cfg["patch_size"]
        e = F.conv2d(pix[None], sd[p + "patch_embeddings.projection.weight"],
                     sd[p + "patch_embeddings.projection.bias"], stride=P)
        e = e.flatten(2).transpose(1, 2)[0]
        e = torch.cat([sd[p + "cls_token"][0], e], 0)
        return e + sd[p + "position_embeddings"][0]

    def layer(self, cfg, sd, l):
        p = "vit.encoder.layer.%d." % l
        H = cfg["num_attention_heads"]
        a = p + "attention.attention."
        head = Head(sd[a + "query.weight"], sd[a + "query.bias"], sd[a + "key.weight"],
                    sd[a + "key.bias"], sd[a + "value.weight"], sd[a + "value.bias"],
                    sd[p + "attention.output.dense.weight"], sd[p + "attention.output.dense.bias"],
                    H, H, 1.0 / math.sqrt(cfg["hidden_size"] // H))
        eps = cfg["layer_norm_eps"]

        def pre(h):
            return layer_norm(h, sd[p + "layernorm_before.weight"], sd[p + "layernorm_before.bias"],
                              eps)

        def post(h, att):
            h = h + att
            m = layer_norm(h, sd[p + "layernorm_after.weight"], sd[p + "layernorm_after.bias"], eps)
            m = F.gelu(m @ sd[p + "intermediate.dense.weight"].T + sd[p + "intermediate.dense.bias"])
            return h + m @ sd[p + "output.dense.weight"].T + sd[p + "output.dense.bias"]
        return head, pre, post


class Timm:
    heads = 3  # vit_tiny

    def embed(self, cfg, sd, ids, types, keep, pix):
        P = sd["patch_embed.proj.weight"].shape[-1]
        e = F.conv2d(pix[None], sd["patch_embed.proj.weight"], sd["patch_embed.proj.bias"],
                     stride=P).flatten(2).transpose(1, 2)[0]
        return torch.cat([sd["cls_token"][0], e], 0) + sd["pos_embed"][0]

    def layer(self, cfg, sd, l):
        p = "blocks.%d." % l
        W, b = sd[p + "attn.qkv.weight"], sd[p + "attn.qkv.bias"]
        C = W.shape[1]
        H = self.heads
        # timm: qkv(x).reshape(B, N, 3, H, dk): rows [0, C) q, then k, v
        head = Head(W[:C], b[:C], W[C:2 * C], b[C:2 * C], W[2 * C:], b[2 * C:],
                    sd[p + "attn.proj.weight"], sd[p + "attn.proj.bias"], H, H, (C // H) ** -0.5)

        def pre(h):
            return layer_norm(h, sd[p + "norm1.weight"], sd[p + "norm1.bias"], 1e-6)

        def post(h, att):
            h = h + att
            m = layer_norm(h, sd[p + "norm2.weight"], sd[p + "norm2.bias"], 1e-6)
            m = F.gelu(m @ sd[p + "mlp.fc1.weight"].T + sd[p + "mlp.fc1.bias"])
            return h + m @ sd[p + "mlp.fc2.weight"].T + sd[p + "mlp.fc2.bias"]
        return head, pre, post


class Layer:
    """attncheck_layer (ac_models(3)): one layer, its input given."""

    def layer(self, cfg, sd, l):
        H = cfg["num_attention_heads"]
        KV = cfg.get("num_key_value_heads", H)
        dk = cfg.get("head_dim", cfg["hidden_size"] // H)
        g = sd.get
        head = Head(sd["Wq"], g("bq"), sd["Wk"], g("bk"), sd["Wv"], g("bv"), sd["Wo"], g("bo"),
                    H, KV, cfg.get("scale", dk ** -0.5), causal=cfg.get("mask") == "causal",
                    window=cfg.get("sliding_window", 0), rope=None if cfg.get("rope", "none") ==
                    "none" else cfg["rope"], theta=cfg.get("rope_theta", 10000.0))
        norm, eps = cfg.get("norm", "none"), cfg.get("norm_eps", 0)

        def pre(h):
            if norm == "layernorm":
                return layer_norm(h, sd["norm.weight"], g("norm.bias"), eps)
            if norm == "rmsnorm":
                return rms_norm(h, sd["norm.weight"], eps)
            return h
        return head, pre, None


FAMILIES = {
    "gpt2": (GPT2(), "ids"), "nanogpt": (NanoGPT(), "ids"), "bert": (Bert(), "ids"),
    "roberta": (Roberta(), "ids"), "distilbert": (DistilBert(), "ids"),
    "llama": (Llama("half"), "ids"), "llama_meta": (Llama("interleaved"), "ids"),
    "mistral": (Llama("half"), "ids"), "qwen2": (Llama("half"), "ids"), "vit": (ViT(), "pixels"),
    "vit_timm": (Timm(), "pixels"), "layer": (Layer(), "resid"), "layer_ln": (Layer(), "resid"),
}


# ---------------------------------------------------------------- bounds

def logit_bound(head, i, X, dX):
    """(n, n) bound on |z_attncheck - z_torch| of head i (see the docstring)."""
    g = i // (head.H // head.KV)
    d, dk = head.d, head.dk
    Xa = X.abs()
    Wq, Wk = head.Wq[i].abs(), head.Wk[g].abs()
    Qa = Xa @ Wq.T + (head.bq[i].abs() if head.bq is not None else 0)
    Ka = Xa @ Wk.T + (head.bk[g].abs() if head.bk is not None else 0)
    eq, ek = gamma(d + 1) * Qa, gamma(d + 1) * Ka
    if head.rope:
        def pair(a):
            h = dk // 2
            if head.rope == "half":
                s = a[:, :h] + a[:, h:]
                return torch.cat([s, s], 1)
            s = a[:, 0::2] + a[:, 1::2]
            return torch.stack([s, s], -1).reshape(a.shape)
        eq, ek = pair(eq) + gamma(4) * pair(Qa), pair(ek) + gamma(4) * pair(Ka)
        Qa, Ka = pair(Qa), pair(Ka)
    s = abs(head.scale)
    one = s * (gamma(dk) * (Qa @ Ka.T) + (Qa + eq) @ ek.T + eq @ Ka.T) + 2 * U * s * (Qa @ Ka.T)
    b = 2 * one
    if dX is not None:
        dQ, dK = dX.abs() @ Wq.T, dX.abs() @ Wk.T
        if head.rope:
            dQ, dK = pair(dQ), pair(dK)
        b = b + s * (dQ @ (Ka + ek).T + (Qa + eq) @ dK.T + dQ @ dK.T)
    return b


def pattern_bound(head, X, dX, P, keep):
    """(h, n, n) bound on |P_attncheck - P_torch|."""
    n = X.shape[0]
    vis = visible(n, head.causal, head.window, keep)
    out = torch.zeros_like(P)
    for i in range(head.H):
        Z = logit_bound(head, i, X, dX).masked_fill(~vis, 0.0)
        D = Z.max(1, keepdim=True).values
        out[i] = P[i] * (torch.expm1(2 * D) + 2 * (n + 3) * U) + U
    return out


# ---------------------------------------------------------------- checks

def record(family, what, diff, rel):
    w = WORST.get(family, (0.0, "-", 0.0))
    WORST[family] = (diff, what, max(rel, w[2])) if diff > w[0] else (w[0], w[1], max(rel, w[2]))


HIDDEN = {}


def compare_patterns(family, what, Pa, Pt, B):
    d = (Pa - Pt).abs()
    ok = bool((d <= B).all())
    worst = float(d.max())
    ratio = float((d / B).max())
    record(family, what, worst, ratio)
    if not ok:
        FAIL.append("%s %s: max|dP| %.3g exceeds its bound (worst ratio %.3g)" %
                    (family, what, worst, ratio))
    return worst


def tool(mh, ckpt, layer, out, args):
    r = subprocess.run([mh, "model", ckpt, str(layer), out] + args, capture_output=True, text=True)
    if r.returncode != 0:
        FAIL.append("mh_tool model %s %d %s: status %d: %s" % (ckpt, layer, " ".join(args),
                                                               r.returncode, r.stderr.strip()))
        return None
    return {f[:-4]: torch.tensor(np.load(os.path.join(out, f))) for f in os.listdir(out)
            if f.endswith(".npy")}, r.stdout


def npsave(path, t):
    np.save(path, np.asarray(t, dtype=np.float64))
    return path


def t1_check(family, what, res, head, P, keep):
    """Theorem 1's form gives the pattern (d)."""
    if "t1_x" not in res:
        return
    Xt, Wq, Wk, fac = res["t1_x"], res["t1_wq"], res["t1_wk"], res["t1_factor"]
    n = Xt.shape[1]
    vis = visible(n, head.causal, head.window, keep)
    for i in range(head.H):
        Z = fac[i] * (Wk[i] @ Xt).T @ (Wq[i] @ Xt) / math.sqrt(head.dk)    # (key, query)
        Z = Z.T.masked_fill(~vis, NEG)                                     # (query, key)
        Pt1 = torch.softmax(Z, -1).masked_fill(~vis, 0.0)
        # the augmented products sum d + 1 terms: the bound of (c), with the
        # product by factor and the division by sqrt(dk) (2 u |z| more)
        B = pattern_bound(head, Xt[:-1].T if Xt.shape[0] > head.d else Xt.T, None, P, keep)[i]
        compare_patterns(family, what + " t1 head %d" % i, Pt1, P[i], 2 * B)


def mha_check(family, what, head, X, P, keep):
    """(e) torch.nn.MultiheadAttention's per-head weights."""
    if head.rope or head.KV != head.H or abs(head.scale - head.dk ** -0.5) > 4 * U * head.scale:
        return
    d, H, dk = head.d, head.H, head.dk
    if H * dk != d:
        return
    bias = head.bq is not None
    mha = torch.nn.MultiheadAttention(d, H, bias=True, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([head.Wq.reshape(d, d), head.Wk.reshape(d, d),
                                            head.Wv.reshape(d, d)]))
        if bias:
            mha.in_proj_bias.copy_(torch.cat([head.bq.reshape(-1), head.bk.reshape(-1),
                                              head.bv.reshape(-1)]))
        else:
            mha.in_proj_bias.zero_()
    mha.eval()
    n = X.shape[0]
    am = ~visible(n, head.causal, head.window, None) if head.causal else None
    kpm = None if keep is None else ~torch.tensor(keep, dtype=torch.bool)[None, :]
    with torch.no_grad():
        _, w = mha(X[None], X[None], X[None], need_weights=True, attn_mask=am,
                   key_padding_mask=kpm, average_attn_weights=False)
    compare_patterns(family, what + " MultiheadAttention", w[0], P,
                     pattern_bound(head, X, None, P, keep))


def check_family(mh, fixtures, work, name):
    fam, kind = FAMILIES[name]
    ckpt = os.path.join(fixtures, name)
    cfg, sd = read_ckpt(ckpt)
    rng = np.random.RandomState(SEED % 2 ** 32)
    extra = ["--rope", "interleaved"] if name == "llama_meta" else []
    if kind == "ids":
        V = cfg.get("vocab_size", 30)
        n = 7
        ids = rng.randint(3, V, size=n)
        types = np.array([0, 0, 0, 1, 1, 1, 1]) if name == "bert" else np.zeros(n, int)
        inputs = [(None, ids)]
        padded = ids.copy()
        if name == "roberta":
            padded[-2:] = cfg["pad_token_id"]
        inputs.append(([1, 1, 1, 1, 1, 0, 0], padded))
        L = cfg.get("n_layer", cfg.get("num_hidden_layers", cfg.get("n_layers")))
    elif kind == "pixels":
        inputs = [(None, None)]
        L = cfg.get("num_hidden_layers", 2)
        pix = torch.tensor(rng.standard_normal((3, 8, 8)))
    else:
        L, n = 1, 7
        R = torch.tensor(rng.standard_normal((n, cfg["hidden_size"])))
        inputs = [(None, None), ([1, 1, 1, 1, 1, 0, 1], None)]
    worst = 0.0
    for keep, ids in inputs:
        tag = "keep" if keep is not None else "all"
        if kind == "ids":
            tids = torch.tensor(ids)
            x0 = fam.embed(cfg, sd, tids, torch.tensor(types), keep, None)
        elif kind == "pixels":
            x0 = fam.embed(cfg, sd, None, None, None, pix)
        else:
            x0 = R
        hs, heads, xs = run_blocks(cfg, sd, fam, x0, keep, L)
        for l in range(L):
            head, Xt, Ht = heads[l], xs[l], hs[l]
            P, _ = head.forward(Xt, keep)
            base = os.path.join(work, "%s_%s_%d" % (name, tag, l))
            args = list(extra)
            if keep is not None:
                args += ["--keep", npsave(base + "_keep.npy", keep)]
            cases = []
            if kind == "ids":
                a = args + ["--ids", npsave(base + "_ids.npy", ids)]
                if name == "bert":
                    a += ["--types", npsave(base + "_types.npy", types)]
                cases.append(("tokens", a))
            elif kind == "pixels":
                cases.append(("pixels", args + ["--pixels", npsave(base + "_pix.npy", pix)]))
            cases.append(("resid", args + ["--resid", npsave(base + "_resid.npy", Ht)]))
            cases.append(("xin", args + ["--xin", npsave(base + "_xin.npy", Xt)]))
            for case, a in cases:
                r = tool(mh, ckpt, l, base + "_" + case, a)
                if r is None:
                    continue
                res, _ = r
                what = "layer %d %s %s" % (l, tag, case)
                dX = None
                if case in ("tokens", "pixels"):
                    Ra = res["resid"]
                    m = max(head.d, cfg.get("n_inner") or 0, Ra.shape[0], 4 * head.d,
                            cfg.get("intermediate_size", 0), cfg.get("hidden_dim", 0))
                    tol = 2 * 16 * 12 * (l + 2) * m * U * float(Ht.abs().max())
                    dr = float((Ra - Ht).abs().max())
                    HIDDEN[name] = max(HIDDEN.get(name, 0.0), dr / float(Ht.abs().max()))
                    if not dr <= tol:
                        FAIL.append("%s %s: hidden state max|dR| %.3g > %.3g" % (name, what, dr,
                                                                                  tol))
                    dX = res["x"] - Xt
                    dx = float(dX.abs().max())
                    if not dx <= tol * 10:
                        FAIL.append("%s %s: projection input max|dX| %.3g" % (name, what, dx))
                B = pattern_bound(head, Xt, dX, P, keep)
                worst = max(worst, compare_patterns(name, what, res["patterns"], P, B))
                if case == "xin":
                    t1_check(name, what, res, head, P, keep)
                    mha_check(name, what, head, Xt, P, keep)
    w = WORST.get(name, (0, "-", 0))
    print("%-11s %d layer%s, %d input set%s: largest |P_attncheck - P_torch| = %.3g (%s); "
          "largest difference / bound %.3g%s" % (name, L, "s"[:L > 1], len(inputs),
                                                   "s"[:len(inputs) > 1], worst, w[1], w[2],
                                                   "; hidden states max|dR|/max|R| %.3g"
                                                   % HIDDEN[name] if name in HIDDEN else ""))


def check_reader(mh, fixtures, work):
    """mh_tool st: every tensor bit for bit as this script's reader converts
    it, and each file's SHA-256 as hashlib computes it."""
    import hashlib
    n = 0
    for name in sorted(os.listdir(fixtures)):
        d = os.path.join(fixtures, name)
        out = os.path.join(work, "st_" + name)
        r = subprocess.run([mh, "st", d, out], capture_output=True, text=True)
        if r.returncode != 0:
            FAIL.append("mh_tool st %s: %s" % (name, r.stderr.strip()))
            continue
        for line in r.stdout.splitlines():
            _, hx, path = line.split(" ", 2)
            with open(path, "rb") as f:
                if hashlib.sha256(f.read()).hexdigest() != hx:
                    FAIL.append("%s: SHA-256 %s differs from hashlib's" % (path, hx))
        _, sd = read_ckpt(d)
        for k, v in sd.items():
            f = os.path.join(out, k + ".npy")
            if not os.path.exists(f):
                if v.dtype == torch.float64 and k.endswith("attn.bias") and name == "gpt2":
                    continue  # BOOL buffer: not written by mh_tool st
                FAIL.append("%s: tensor %s not written" % (name, k))
                continue
            a = np.load(f)
            if a.shape != tuple(v.shape) or not np.array_equal(a.view(np.int64),
                                                               v.numpy().view(np.int64)):
                FAIL.append("%s: tensor %s differs from NumPy's conversion" % (name, k))
            n += 1
    print("reader: %d tensors of %d fixtures equal to NumPy's conversion, bit for bit; "
          "SHA-256 as hashlib" % (n, len(os.listdir(fixtures))))


def check_converter(mh, fixtures, work):
    """python/attncheck/torch_convert.py: a torch.save'd state dict with its
    config.json, converted, gives the fixture's patterns to the last bit (the
    same doubles: the fixture's F32 values saved as float64)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python",
                                    "attncheck"))
    import torch_convert
    cfg, sd = read_ckpt(os.path.join(fixtures, "gpt2"))
    src = os.path.join(work, "conv_src")
    os.makedirs(src)
    torch.save(sd, os.path.join(src, "pytorch_model.bin"))
    with open(os.path.join(src, "config.json"), "w") as f:
        json.dump(cfg, f)
    out = torch_convert.from_torch(os.path.join(src, "pytorch_model.bin"), None,
                                   os.path.join(work, "conv_out"))
    R = np.random.RandomState(SEED % 2 ** 32 + 2).standard_normal((5, cfg["n_embd"]))
    rp = npsave(os.path.join(work, "conv_R.npy"), R)
    a = tool(mh, os.path.join(fixtures, "gpt2"), 1, os.path.join(work, "conv_a"), ["--resid", rp])
    b = tool(mh, out, 1, os.path.join(work, "conv_b"), ["--resid", rp])
    if a and b and not torch.equal(a[0]["patterns"], b[0]["patterns"]):
        FAIL.append("torch_convert: the converted checkpoint's patterns differ from the fixture's")
    print("converter: pytorch_model.bin + config.json -> safetensors: the same patterns, bit "
          "for bit")


def planted(mh, fixtures, work):
    """The comparisons can fail: a wrong RoPE pairing (llama_meta read as
    rotate_half) and a dropped scale rule (gpt2 without
    scale_attn_by_inverse_layer_idx) must each exceed the bound."""
    global FAIL
    import shutil
    keep_fail, FAIL = FAIL, []
    g = os.path.join(work, "gpt2_noscale")
    shutil.copytree(os.path.join(fixtures, "gpt2"), g)
    with open(os.path.join(g, "config.json")) as f:
        cfg = json.load(f)
    cfg["scale_attn_by_inverse_layer_idx"] = False
    with open(os.path.join(g, "config.json"), "w") as f:
        json.dump(cfg, f)
    caught = []
    for name, ckpt, layer, args in (("llama_meta", os.path.join(fixtures, "llama_meta"), 0, []),
                                    ("gpt2", g, 1, [])):
        fam, _ = FAMILIES[name]
        cfg0, sd = read_ckpt(os.path.join(fixtures, name))
        head, pre, _ = fam.layer(cfg0, sd, layer)
        rng = np.random.RandomState(SEED % 2 ** 32 + 1)
        R = torch.tensor(rng.standard_normal((6, head.d)))
        X = pre(R)
        P, _ = head.forward(X, None)
        out = os.path.join(work, "planted_" + name)
        r = tool(mh, ckpt, layer, out, args + ["--resid", npsave(out + ".npy", R)])
        before = len(FAIL)
        if r is not None:
            compare_patterns("planted " + name, "layer %d" % layer, r[0]["patterns"], P,
                             pattern_bound(head, X, None, P, None))
        caught.append(len(FAIL) > before)
    FAIL = keep_fail
    for name, c in zip(("wrong RoPE pairing", "dropped scale rule"), caught):
        if not c:
            FAIL.append("planted %s was not caught" % name)
        else:
            print("planted %s: caught" % name)


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(99)
    mh, fixtures, work = sys.argv[1:]
    print("models_torch: ATTNCHECK_TEST_SEED=%d" % SEED)
    check_reader(mh, fixtures, work)
    check_converter(mh, fixtures, work)
    for name in FAMILIES:
        check_family(mh, fixtures, work, name)
    planted(mh, fixtures, work)
    if FAIL:
        for f in FAIL:
            print("FAIL: " + f)
        print("models_torch: %d failures (ATTNCHECK_TEST_SEED=%d)" % (len(FAIL), SEED))
        sys.exit(1)
    print("models_torch: every pattern within its bound")


if __name__ == "__main__":
    main()
