#!/usr/bin/env python3
"""Hostile checkpoints: each a one-line error naming the file and the
problem, the documented exit status (65 bad data, 66 cannot open input),
nothing written.

Usage: models_hostile.py MH_TOOL FIXTURES WORKDIR

Every case copies a fixture of FIXTURES (tests/models/), damages one thing,
runs `mh_tool model CKPT 0 OUT --ids ...` and checks the status, that stderr
is one line holding the expected words and the damaged file's name, and that
OUT was not created.  A clean copy of each fixture used must pass first (so
a refusal is the damage's, not the fixture's).

Exit status: 0 all as expected, 1 otherwise, 77 no numpy, 99 setup.
"""
import json
import os
import shutil
import struct
import subprocess
import sys

try:
    import numpy as np
except ImportError:  # pragma: no cover
    print("models_hostile: no numpy; skipping", file=sys.stderr)
    sys.exit(77)

FAIL = []


def read_raw(path):
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    return json.loads(b[8:8 + n]), bytearray(b[8 + n:])


def write_raw(path, header, data, text=None):
    h = text if text is not None else json.dumps(header, separators=(",", ":")).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + bytes(data))


def edit_header(fn):
    def mut(d):
        p = os.path.join(d, "model.safetensors")
        h, data = read_raw(p)
        r = fn(h, data)
        write_raw(p, h, data if r is None else r)
        return "model.safetensors"
    return mut


def edit_bytes(fn):
    def mut(d):
        p = os.path.join(d, "model.safetensors")
        with open(p, "rb") as f:
            b = bytearray(f.read())
        with open(p, "wb") as f:
            f.write(fn(b))
        return "model.safetensors"
    return mut


def edit_config(fn):
    def mut(d):
        p = os.path.join(d, "config.json")
        with open(p) as f:
            c = json.load(f)
        fn(c)
        with open(p, "w") as f:
            json.dump(c, f)
        return "config.json"
    return mut


def set_value(name, index, value):
    """Put `value` (a float) into element `index` of F32 tensor `name`."""
    def fn(h, data):
        s = h[name]["data_offsets"][0] + 4 * index
        data[s:s + 4] = struct.pack("<f", value)
    return fn


def rename(old, new):
    def fn(h, data):
        h[new] = h.pop(old)
    return fn


def overlap(h, data):
    a, b = h["transformer.wte.weight"], h["transformer.wpe.weight"]
    b["data_offsets"] = [b["data_offsets"][0] - 4, b["data_offsets"][1] - 4]


def gap(h, data):
    # the last tensor moves 4 bytes on: a gap before it, 4 more bytes of data
    last = max(h, key=lambda k: h[k]["data_offsets"][1] if k != "__metadata__" else -1)
    s, e = h[last]["data_offsets"]
    h[last]["data_offsets"] = [s + 4, e + 4]
    return data[:s] + b"\0\0\0\0" + data[s:]


def size_mismatch(h, data):
    h["transformer.wpe.weight"]["shape"][0] += 1


def f8(h, data):
    t = h["transformer.h.0.ln_1.weight"]
    t["dtype"] = "F8_E4M3"
    t["shape"] = [4 * t["shape"][0]]


def dup_text(d):
    p = os.path.join(d, "model.safetensors")
    h, data = read_raw(p)
    text = json.dumps(h, separators=(",", ":"))
    k = '"transformer.ln_f.bias":'
    i = text.index(k)
    j = text.index("}", i) + 1
    text = text[:-1] + "," + text[i:j] + "}"
    write_raw(p, None, data, text.encode())
    return "model.safetensors"


def shape_contradicts(c):
    c["n_embd"] = 12
    c["n_head"] = 3


def missing_shard(d):
    os.unlink(os.path.join(d, "model-00002-of-00002.safetensors"))
    return "model.safetensors.index.json"


def shard_outside(d):
    p = os.path.join(d, "model.safetensors.index.json")
    with open(p) as f:
        ix = json.load(f)
    k = next(iter(ix["weight_map"]))
    ix["weight_map"][k] = "../" + ix["weight_map"][k]
    with open(p, "w") as f:
        json.dump(ix, f)
    return "model.safetensors.index.json"


def no_config(d):
    os.unlink(os.path.join(d, "config.json"))
    return "config.json"


def dup_config(d):
    p = os.path.join(d, "config.json")
    with open(p) as f:
        t = f.read()
    with open(p, "w") as f:
        f.write(t.rstrip().rstrip("}") + ', "n_head": 4}')
    return "config.json"


def extra_layer_tensor(h, data):
    h["transformer.h.0.attn.q_norm.weight"] = dict(h["transformer.ln_f.weight"])
    s, e = h["transformer.ln_f.weight"]["data_offsets"]
    n = len(data)
    h["transformer.h.0.attn.q_norm.weight"]["data_offsets"] = [n, n + e - s]
    return data + data[s:e]


def layer_beyond(h, data):
    t = dict(h["transformer.h.2.ln_1.weight"])
    s, e = t["data_offsets"]
    t["data_offsets"] = [len(data), len(data) + e - s]
    h["transformer.h.3.ln_1.weight"] = t
    return data + data[s:e]


def not_causal(h, data):
    s = h["transformer.h.0.attn.bias"]["data_offsets"][0]
    data[s + 1] = 1   # (0, 1) above the diagonal


CASES = [
    # (name, fixture, damage, status, words)
    ("truncated header", "gpt2", edit_bytes(lambda b: b[:60]), 65, "runs past the end"),
    ("truncated data", "gpt2", edit_bytes(lambda b: b[:-3]), 65, "the tensors cover"),
    ("trailing bytes", "gpt2", edit_bytes(lambda b: b + b"\0"), 65, "the tensors cover"),
    ("header over the limit", "gpt2",
     edit_bytes(lambda b: struct.pack("<Q", 100000001) + b[8:]), 65,
     "exceeds the limit of 100000000"),
    ("short file", "gpt2", edit_bytes(lambda b: b[:5]), 65, "too short"),
    ("invalid UTF-8", "gpt2",
     edit_bytes(lambda b: b[:9] + b"\xc0" + b[10:]), 65, "not valid UTF-8"),
    ("offsets overlapping", "gpt2", edit_header(overlap), 65, "overlap"),
    ("offsets leaving a gap", "gpt2", edit_header(gap), 65, "leave a gap"),
    ("dtype/shape size mismatch", "gpt2", edit_header(size_mismatch), 65, "bytes, data_offsets"),
    ("F8 dtype", "gpt2", edit_header(f8), 65, "dtype F8_E4M3 is not read"),
    ("duplicate keys", "gpt2", dup_text, 65, "duplicate key \"transformer.ln_f.bias\""),
    ("NaN weight", "gpt2",
     edit_header(set_value("transformer.h.0.attn.c_attn.weight", 9, float("nan"))), 65,
     "tensor transformer.h.0.attn.c_attn.weight: entry (0, 9) is NaN"),
    ("Inf weight", "gpt2",
     edit_header(set_value("transformer.h.0.ln_1.weight", 2, float("-inf"))), 65,
     "entry (2,) is -Inf"),
    ("shape contradicting config.json", "gpt2", edit_config(shape_contradicts), 65,
     "config.json implies"),
    ("missing tensor", "gpt2", edit_header(rename("transformer.h.1.ln_2.bias", "unused.x")), 65,
     "no tensor h.1.ln_2.bias"),
    ("unknown tensor in a layer", "gpt2", edit_header(extra_layer_tensor), 65,
     "is not part of a gpt2 layer"),
    ("layer beyond the count", "gpt2", edit_header(layer_beyond), 65, "belongs to layer 3"),
    ("attn.bias not the causal mask", "gpt2", edit_header(not_causal), 65,
     "is not the causal mask"),
    ("index naming a missing shard", "llama", missing_shard, 65,
     "names shard model-00002-of-00002.safetensors, which does not exist"),
    ("shard outside the directory", "llama", shard_outside, 65, "must be a file name"),
    ("unknown model_type", "gpt2", edit_config(lambda c: c.update(model_type="t5")), 65,
     "model_type \"t5\" is not a family"),
    ("rope_scaling", "llama",
     edit_config(lambda c: c.update(rope_scaling={"rope_type": "yarn", "factor": 4})), 65,
     "\"rope_scaling\" of type \"yarn\" is not implemented"),
    ("relative positions", "bert",
     edit_config(lambda c: c.update(position_embedding_type="relative_key")), 65,
     "relative position embeddings are not implemented"),
    ("Qwen2 sliding window", "qwen2", edit_config(lambda c: c.update(use_sliding_window=True)),
     65, "\"use_sliding_window\" is true"),
    ("cross-attention", "gpt2", edit_config(lambda c: c.update(add_cross_attention=True)), 65,
     "cross-attention is not implemented"),
    ("duplicate key in config.json", "gpt2", dup_config, 65, "duplicate key \"n_head\""),
    ("heads not dividing the width", "bert",
     edit_config(lambda c: c.update(num_attention_heads=5)), 65, "does not divide the width"),
    ("no config.json", "gpt2", no_config, 66, "cannot open"),
]


# bad inputs on clean checkpoints: (name, fixture, ids, extra args, status, words)
INPUTS = [
    ("token id beyond the vocabulary", "gpt2", [3, 24, 5], [], 65,
     "token 1: id 24 is outside the vocabulary [0, 24)"),
    ("more tokens than positions", "gpt2", list(range(13)), [], 65,
     "token 12: position 12 is beyond the model's 12 positions"),
    ("token type beyond the types", "bert", [3, 4, 5], ["--types", [0, 2, 0]], 65,
     "token 1: type 2 is outside [0, 2)"),
    ("causal query with every key padded", "gpt2", [3, 4, 5], ["--keep", [0, 1, 1]], 65,
     "query 0 has no key to attend to"),
    ("layer beyond the model", "gpt2", [3, 4], ["LAYER", 3], 64, "layer 3: the model has 3"),
    ("RoPE pairing forced on GPT-2", "gpt2", [3, 4], ["--rope", "interleaved"], 64,
     "has no rotary embeddings"),
]


def run_input(mh, fixtures, work, i, case):
    name, fx, ids, extra, status, words = case
    args, layer = [], "0"
    for j in range(0, len(extra), 2):
        k, v = extra[j], extra[j + 1]
        if k == "LAYER":
            layer = str(v)
        elif isinstance(v, list):
            p = os.path.join(work, "in%02d_%d.npy" % (i, j))
            np.save(p, np.array(v, dtype=float))
            args += [k, p]
        else:
            args += [k, v]
    p = os.path.join(work, "in%02d_ids.npy" % i)
    np.save(p, np.array(ids, dtype=float))
    out = os.path.join(work, "inout%02d" % i)
    r = subprocess.run([mh, "model", os.path.join(fixtures, fx), layer, out, "--ids", p] + args,
                       capture_output=True, text=True)
    msg = r.stderr.strip()
    problems = []
    if r.returncode != status:
        problems.append("status %d, want %d" % (r.returncode, status))
    if words not in msg or len(r.stderr.splitlines()) != 1:
        problems.append("no one-line \"%s\"" % words)
    if os.path.exists(out):
        problems.append("%s was written" % out)
    if problems:
        FAIL.append("%s: %s: %s" % (name, "; ".join(problems), msg))
    print("%-34s %d  %s" % (name, r.returncode, msg))


def run(mh, ckpt, out, ids):
    return subprocess.run([mh, "model", ckpt, "0", out, "--ids", ids], capture_output=True,
                          text=True)


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(99)
    mh, fixtures, work = sys.argv[1:]
    ids = os.path.join(work, "ids.npy")
    np.save(ids, np.array([3.0, 5.0, 7.0, 11.0]))
    for fx in sorted({c[1] for c in CASES}):
        r = run(mh, os.path.join(fixtures, fx), os.path.join(work, "clean_" + fx), ids)
        if r.returncode != 0:
            FAIL.append("clean %s refused: %s" % (fx, r.stderr.strip()))
    for i, (name, fx, damage, status, words) in enumerate(CASES):
        d = os.path.join(work, "case%02d" % i)
        shutil.copytree(os.path.join(fixtures, fx), d)
        named = damage(d)
        out = os.path.join(work, "out%02d" % i)
        r = run(mh, d, out, ids)
        msg = r.stderr.strip()
        problems = []
        if r.returncode != status:
            problems.append("status %d, want %d" % (r.returncode, status))
        if len(r.stderr.splitlines()) != 1:
            problems.append("stderr is not one line")
        if words not in msg:
            problems.append("no \"%s\"" % words)
        if named not in msg:
            problems.append("does not name %s" % named)
        if os.path.exists(out):
            problems.append("%s was written" % out)
        if problems:
            FAIL.append("%s: %s: %s" % (name, "; ".join(problems), msg))
        print("%-34s %d  %s" % (name, r.returncode, msg))
    for i, case in enumerate(INPUTS):
        run_input(mh, fixtures, work, i, case)
    if FAIL:
        for f in FAIL:
            print("FAIL: " + f)
        sys.exit(1)
    print("models_hostile: %d hostile checkpoints and %d bad inputs refused as documented, "
          "nothing written" % (len(CASES), len(INPUTS)))


if __name__ == "__main__":
    main()
