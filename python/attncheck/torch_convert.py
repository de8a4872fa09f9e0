"""PyTorch checkpoints to the files attncheck reads: safetensors + config.json.

attncheck's C library reads safetensors files and a Hugging Face
config.json (ac_models(3)); it never unpickles.  This module converts, in
Python, what PyTorch writes; attncheck.from_torch is its entry point (with
the library's check of the result):

    from_torch("pytorch_model.bin", "config.json", "out/")
    from_torch("ckpt.pt", None, "out/")          # nanoGPT: model + model_args
    from_torch(model.state_dict(), config_dict, "out/")

Reading: a path is read with torch.load(map_location="cpu",
weights_only=True) only: no code in the pickle runs.  What that restricted
unpickler refuses (classes, NumPy arrays, quantised tensors and, in torch
1.13, Python floats, e.g. the "config" dict and best_val_loss of nanoGPT's
own ckpt.pt) is refused, with the reason; save the state dict (and
model_args) alone, or convert with a torch >= 2.0.  The object loaded is
either a state dict (every value a tensor) or nanoGPT's checkpoint
{"model": state dict, "model_args": {...}, ...}; nothing else is guessed.

Configuration: config is a dict, a path to a config.json, or None: then a
nanoGPT checkpoint's model_args give {"model_type": "nanogpt", n_layer,
n_head, n_embd, block_size, vocab_size, bias}, and a file's config.json
next to it is used; a state dict in memory needs one.  It is written as
config.json unchanged (the library refuses an unknown model_type or option
by name).

Tensors: written with their dtype as stored (float64, float32, float16,
bfloat16 as F64, F32, F16, BF16; integer and bool buffers, such as GPT-2's
causal mask, as I64, I32, I16, I8, U8, BOOL), names unchanged (attncheck
removes the "_orig_mod." of torch.compile and the model classes' prefixes
itself).  Refused, naming the tensor: a value that is not a tensor, a
quantised, complex or other dtype safetensors-for-attncheck has no name
for, a NaN or infinite entry of a floating tensor (with its index).

save_safetensors(path, tensors, metadata) writes one file in the format of
huggingface/safetensors: 8-byte little-endian header length, the JSON
header (padded with spaces to a multiple of 8 bytes), then the tensors'
bytes, little-endian, C order, in the order of their names, each tensor's
bytes written as stored (no conversion).

Writing is atomic: everything is checked first, then written into a new
directory beside out_dir, checked again (check(dir), attncheck.from_torch
opens it with the library, every layer read), and renamed to out_dir; on
any error nothing is left.  out_dir must not exist or be an empty
directory.  Errors are ConvertError: .status 65 (bad data), 66 (input
cannot be opened), 73 (output cannot be created), str() one line naming
the file or tensor.

This file imports neither the package nor its library (the tests' fixture
generator uses it as a plain module).

Run as a script: python3 torch_convert.py CHECKPOINT OUTDIR [CONFIG.json]
"""

import json
import math
import os
import shutil
import struct
import sys
import tempfile

import numpy as np


class ConvertError(Exception):
    """A refused conversion: .status is the exit status the command line
    uses (65 bad data, 66 cannot open input, 73 cannot create output)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


# torch / NumPy dtype name -> (safetensors name, NumPy little-endian dtype or None for BF16)
_DTYPES = {"float64": ("F64", "<f8"), "float32": ("F32", "<f4"), "float16": ("F16", "<f2"),
           "bfloat16": ("BF16", None), "int64": ("I64", "<i8"), "int32": ("I32", "<i4"),
           "int16": ("I16", "<i2"), "int8": ("I8", "i1"), "uint8": ("U8", "u1"),
           "bool": ("BOOL", "?")}
_FLOATS = ("F64", "F32", "F16", "BF16")


def _dtype_name(t):
    """'float32', 'bfloat16', 'qint8', ... of a torch tensor or NumPy array."""
    return str(t.dtype).replace("torch.", "")


def _is_tensor(t):
    mod = type(t).__module__
    return (mod.startswith("torch") and hasattr(t, "dtype") and hasattr(t, "shape")) or \
        isinstance(t, np.ndarray)


class _Entry:
    """One tensor to write: dtype name, shape, and a function giving its bytes."""

    def __init__(self, name, t):
        self.name = name
        if not _is_tensor(t):
            raise ConvertError(65, "tensor %s: of type %s, not a tensor" % (name,
                                                                            type(t).__name__))
        torch_t = not isinstance(t, np.ndarray)
        if torch_t and (t.is_quantized or t.layout.__repr__() != "torch.strided"):
            raise ConvertError(65, "tensor %s: %s %s tensors are not written (quantised and "
                               "sparse weights are not converted; F64, F32, F16 and BF16 are)"
                               % (name, "quantised" if t.is_quantized else "sparse",
                                  _dtype_name(t)))
        dn = _dtype_name(t)
        if dn not in _DTYPES:
            raise ConvertError(65, "tensor %s: dtype %s is not written (quantised, complex and "
                               "other types are not converted; F64, F32, F16 and BF16 are)"
                               % (name, dn))
        self.dtype, self.np = _DTYPES[dn]
        if torch_t:
            t = t.detach().cpu()
        self.t = t
        self.shape = [int(s) for s in t.shape]
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * \
            (2 if self.dtype == "BF16" else np.dtype(self.np).itemsize)
        if self.dtype in _FLOATS:
            self._finite()

    def _array(self):
        """the data as a C-order NumPy array of the stored bits"""
        t = self.t
        if not isinstance(t, np.ndarray):
            import torch
            t = t.contiguous()
            t = t.view(torch.int16).numpy() if self.dtype == "BF16" else t.numpy()
        return t

    def _finite(self):
        t = self.t
        if isinstance(t, np.ndarray):
            bad = ~np.isfinite(t)
        else:
            import torch
            bad = ~torch.isfinite(t)
            bad = bad.numpy()
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            v = float(self.t[idx]) if idx else float(self.t)
            raise ConvertError(65, "tensor %s: entry %s is %s (NaN and infinite weights are "
                               "bad input)" % (self.name, idx if len(idx) != 1 else "(%d)" % idx[0],
                                               "NaN" if math.isnan(v) else "%+g" % v))

    def data(self):
        """the stored bytes, little-endian, C order"""
        a = np.ascontiguousarray(self._array())
        if self.dtype == "BF16":
            return a.astype("<i2", copy=False).tobytes()
        return a.astype(self.np, copy=False).tobytes()


def _entries(tensors):
    if not isinstance(tensors, dict) or not tensors:
        raise ConvertError(65, "not a state dict: %s" % ("empty" if isinstance(tensors, dict)
                                                          else "a " + type(tensors).__name__))
    out = []
    for k in sorted(tensors):
        if not isinstance(k, str):
            raise ConvertError(65, "state dict key %r is not a string" % (k,))
        out.append(_Entry(k, tensors[k]))
    return out


def _header(entries, metadata):
    h, off = {}, 0
    if metadata:
        h["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for e in entries:
        h[e.name] = {"dtype": e.dtype, "shape": e.shape, "data_offsets": [off, off + e.nbytes]}
        off += e.nbytes
    head = json.dumps(h, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return head + b" " * (-len(head) % 8)


def _write_st(f, entries, metadata):
    head = _header(entries, metadata)
    f.write(struct.pack("<Q", len(head)))
    f.write(head)
    for e in entries:
        b = e.data()
        assert len(b) == e.nbytes, e.name
        f.write(b)


def save_safetensors(path, tensors, metadata=None):
    """Write tensors (name -> torch tensor or NumPy array) to path as one
    safetensors file, atomically (a temporary file in the same directory,
    renamed).  Refusals as the module says (ConvertError)."""
    entries = _entries(tensors)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".st-")
    try:
        with os.fdopen(fd, "wb") as f:
            _write_st(f, entries, metadata)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def load_torch(path):
    """(state dict, config or None) of a PyTorch .bin/.pt or nanoGPT
    ckpt.pt, read with torch.load(weights_only=True)."""
    import pickle
    import torch
    if not os.path.isfile(path):
        raise ConvertError(66, "%s: cannot open: %s" % (
            path, "is a directory" if os.path.isdir(path) else "no such file"))
    try:
        ck = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        msg = " ".join(str(e).split())
        why = msg[msg.find("WeightsUnpickler error:"):] if "WeightsUnpickler error:" in msg \
            else msg
        raise ConvertError(65, "%s: torch %s's torch.load(weights_only=True) refuses it (%s); "
                           "nothing in it was run: save the state dict (and nanoGPT's "
                           "model_args) alone, or convert with a torch >= 2.0"
                           % (path, torch.__version__, why[:160])) from None
    except Exception as e:  # noqa: BLE001 (torch.load raises many types on a bad file)
        msg = " ".join(str(e).split())
        raise ConvertError(65, "%s: not a PyTorch checkpoint torch.load reads (%s: %s)"
                           % (path, type(e).__name__, msg[:160])) from None
    if isinstance(ck, dict) and "model" in ck and "model_args" in ck:
        args = ck["model_args"]
        if not isinstance(args, dict):
            raise ConvertError(65, "%s: nanoGPT model_args is not a dict" % path)
        cfg = {"model_type": "nanogpt"}
        for k in ("n_layer", "n_head", "n_embd", "block_size", "vocab_size", "bias"):
            if k not in args:
                raise ConvertError(65, "%s: nanoGPT model_args lack %s" % (path, k))
            cfg[k] = args[k]
        sd = ck["model"]
    else:
        sd, cfg = ck, None
    if not isinstance(sd, dict):
        raise ConvertError(65, "%s: not a state dict (a %s)" % (path, type(sd).__name__))
    for k, v in sd.items():
        if not _is_tensor(v):
            raise ConvertError(65, "%s: entry %s is of type %s, not a tensor: neither a state dict "
                               "nor nanoGPT's {model, model_args}" % (path, k, type(v).__name__))
    return sd, cfg


def _config(config, src, found):
    """The configuration as a dict (see the module's text)."""
    if isinstance(config, dict):
        cfg = config
    elif config is not None:
        try:
            with open(config, encoding="utf-8") as f:
                cfg = json.load(f)
        except OSError as e:
            raise ConvertError(66, "%s: cannot open: %s" % (config, e.strerror)) from None
        except ValueError as e:
            raise ConvertError(65, "%s: not JSON (%s)" % (config, e)) from None
    elif found is not None:
        cfg = found
    else:
        side = os.path.join(os.path.dirname(os.path.abspath(src)), "config.json") \
            if isinstance(src, (str, os.PathLike)) else None
        if side is None or not os.path.isfile(side):
            raise ConvertError(65, "no configuration: give config (a dict or a config.json)%s"
                               % (" (none next to %s)" % src if side else ""))
        return _config(side, src, None)
    if not isinstance(cfg, dict):
        raise ConvertError(65, "config: not a JSON object")
    try:
        text = json.dumps(cfg, indent=2, allow_nan=False) + "\n"
    except ValueError as e:
        raise ConvertError(65, "config: %s" % e) from None
    except TypeError as e:
        raise ConvertError(65, "config: not JSON: %s" % e) from None
    return text


def from_torch(src, config, out_dir, check=None):
    """Convert src (a path to a PyTorch .bin/.pt or nanoGPT ckpt.pt, or a
    state dict in memory) and config into out_dir/model.safetensors and
    out_dir/config.json, atomically.  check(dir), if given, is run on the
    finished files before the rename (it raises to refuse).  Returns
    out_dir."""
    found = None
    if isinstance(src, (str, os.PathLike)):
        sd, found = load_torch(os.fspath(src))
    else:
        sd = src
    entries = _entries(sd)
    cfg = _config(config, src, found)
    out_dir = os.path.abspath(os.fspath(out_dir))
    if os.path.lexists(out_dir) and (not os.path.isdir(out_dir) or os.listdir(out_dir)):
        raise ConvertError(73, "%s: cannot create: exists and is not an empty directory"
                           % out_dir)
    parent = os.path.dirname(out_dir)
    try:
        tmp = tempfile.mkdtemp(dir=parent, prefix=".%s.tmp-" % os.path.basename(out_dir))
    except OSError as e:
        raise ConvertError(73, "%s: cannot create: %s" % (out_dir, e.strerror)) from None
    try:
        try:
            os.chmod(tmp, 0o777 & ~_umask())
            with open(os.path.join(tmp, "model.safetensors"), "wb") as f:
                _write_st(f, entries, {"format": "pt"})
                f.flush()
                os.fsync(f.fileno())
            with open(os.path.join(tmp, "config.json"), "w", encoding="utf-8") as f:
                f.write(cfg)
        except OSError as e:
            raise ConvertError(73, "%s: cannot write: %s" % (out_dir, e.strerror)) from None
        if check is not None:
            check(tmp)
        try:
            os.rename(tmp, out_dir)
        except OSError as e:
            raise ConvertError(73, "%s: cannot create: %s" % (out_dir, e.strerror)) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir


def _umask():
    """the process's umask (read by setting and restoring it)"""
    m = os.umask(0)
    os.umask(m)
    return m


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: torch_convert.py CHECKPOINT OUTDIR [CONFIG.json]")
    try:
        from_torch(sys.argv[1], sys.argv[3] if len(sys.argv) == 4 else None, sys.argv[2])
    except ConvertError as e:
        print("torch_convert.py: %s" % e, file=sys.stderr)
        sys.exit(e.status)
