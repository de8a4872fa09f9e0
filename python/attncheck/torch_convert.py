"""PyTorch checkpoints to the files attncheck reads: safetensors + config.json.

attncheck's C library reads safetensors files and a Hugging Face
config.json (ac_models(3)); it never unpickles.  This module converts, in
Python, what PyTorch writes:

    convert("pytorch_model.bin", "out/", config="config.json")
    convert("ckpt.pt", "out/")            # nanoGPT: model + model_args

The file is read with torch.load(weights_only=True) (no code in the pickle
runs; torch 1.13's restricted unpickler refuses Python floats, e.g. the
"config" dict of a nanoGPT ckpt.pt: convert those with torch >= 2.0).  A nanoGPT checkpoint ({"model": state_dict, "model_args": {...}})
gets config.json {"model_type": "nanogpt", n_layer, n_head, n_embd,
block_size, vocab_size, bias}; any other state dict needs the model's
config.json (given, or next to the file), copied unchanged.  Tensors are
written with their dtype (float64, float32, float16, bfloat16 as F64, F32,
F16, BF16; integer and bool buffers as I64, I32, I16, I8, U8, BOOL), names
unchanged (attncheck removes the "_orig_mod." of torch.compile itself).

save_safetensors(path, tensors, metadata) writes one file in the format of
huggingface/safetensors: 8-byte little-endian header length, the JSON
header (padded with spaces to a multiple of 8 bytes), then the tensors'
bytes, little-endian, C order, in the order of their names.

Run as a script: python3 torch_convert.py CHECKPOINT OUTDIR [CONFIG.json]
"""

import json
import os
import struct
import sys
import tempfile

import numpy as np

_NP = {np.dtype("float64"): "F64", np.dtype("float32"): "F32", np.dtype("float16"): "F16",
       np.dtype("int64"): "I64", np.dtype("int32"): "I32", np.dtype("int16"): "I16",
       np.dtype("int8"): "I8", np.dtype("uint8"): "U8", np.dtype("bool"): "BOOL"}


def _as_bytes(t):
    """(dtype name, shape, little-endian C-order bytes) of a numpy array or torch tensor."""
    mod = type(t).__module__
    if mod.startswith("torch"):
        import torch
        t = t.detach().cpu().contiguous()
        if t.dtype == torch.bfloat16:
            return "BF16", list(t.shape), t.view(torch.int16).numpy().astype("<i2").tobytes()
        t = t.numpy()
    a = np.ascontiguousarray(t)
    name = _NP.get(np.dtype(a.dtype.name))
    if name is None:
        raise ValueError("dtype %s cannot be written to safetensors here" % a.dtype)
    return name, list(a.shape), a.astype(a.dtype.newbyteorder("<")).tobytes()


def save_safetensors(path, tensors, metadata=None):
    """Write tensors (name -> array or tensor) to path, atomically."""
    entries, blobs, off = {}, [], 0
    for name in sorted(tensors):
        dt, shape, b = _as_bytes(tensors[name])
        entries[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if metadata:
        entries = dict([("__metadata__", {str(k): str(v) for k, v in metadata.items()})]
                       + list(entries.items()))
    head = json.dumps(entries, separators=(",", ":")).encode("utf-8")
    head += b" " * (-len(head) % 8)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".st-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(struct.pack("<Q", len(head)))
            f.write(head)
            for b in blobs:
                f.write(b)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _write_json(path, obj):
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".cfg-")
    with os.fdopen(fd, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def convert(src, outdir, config=None):
    """Convert the PyTorch checkpoint src into outdir/model.safetensors and
    outdir/config.json.  Returns the path of outdir."""
    import pickle
    import torch
    try:
        ck = torch.load(src, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        raise ValueError("%s: torch %s cannot read it with weights_only=True (%s); torch 1.13's "
                         "restricted unpickler has no Python floats (nanoGPT's 'config'): "
                         "use torch >= 2.0, or save the state dict and model_args alone"
                         % (src, torch.__version__, str(e).splitlines()[-1][:120])) from None
    if isinstance(ck, dict) and "model" in ck and "model_args" in ck:
        args = ck["model_args"]
        cfg = {"model_type": "nanogpt"}
        for k in ("n_layer", "n_head", "n_embd", "block_size", "vocab_size", "bias"):
            if k not in args:
                raise ValueError("%s: nanoGPT model_args lack %s" % (src, k))
            cfg[k] = args[k]
        sd = ck["model"]
    else:
        sd = ck.get("state_dict", ck) if isinstance(ck, dict) else None
        if not isinstance(sd, dict):
            raise ValueError("%s: not a state dict" % src)
        if config is None:
            config = os.path.join(os.path.dirname(os.path.abspath(src)), "config.json")
        with open(config) as f:
            cfg = json.load(f)
    tensors = {k: v for k, v in sd.items() if hasattr(v, "shape")}
    os.makedirs(outdir, exist_ok=True)
    save_safetensors(os.path.join(outdir, "model.safetensors"), tensors, {"format": "pt"})
    _write_json(os.path.join(outdir, "config.json"), cfg)
    return outdir


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: torch_convert.py CHECKPOINT OUTDIR [CONFIG.json]")
    convert(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) == 4 else None)
