"""Pretrained models from PyTorch: from_torch and capture (ac_models(3)).

    import attncheck
    attncheck.from_torch("pytorch_model.bin", "config.json", "gpt2-dir")
    attncheck.from_torch("ckpt.pt", None, "nano-dir")       # nanoGPT
    R = attncheck.capture(model, "transformer.h.3", ids, "h3.npy")

from_torch(src, config, out_dir) writes out_dir/model.safetensors and
out_dir/config.json, the checkpoint directory the library reads
(ac_model_open), from src: a path to a PyTorch .bin/.pt (a torch.save'd
state dict) or nanoGPT ckpt.pt ({"model", "model_args"}), read with
torch.load(weights_only=True) only, or a state dict in memory.  config: a
dict, a path to a config.json, or None (nanoGPT's model_args; else the
config.json next to src).  Tensors are written as stored (F64, F32, F16,
BF16; integer and bool buffers as their integer types), names unchanged.
Before out_dir appears, the library opens the written directory and reads
every layer: an unknown model_type or option, a tensor whose role is
unknown (named), a missing tensor or a shape config.json contradicts is
refused there.  Refused earlier, naming the tensor: non-tensors,
quantised/complex dtypes, NaN or infinite weights (with the entry's
index); a pickle weights_only cannot load (nothing in it runs).  Atomic:
the files are written in a new directory beside out_dir, checked, and
renamed; on any error nothing is left, and an out_dir that exists and is
not empty is refused.  Errors: InputError (65 bad data, 66 cannot open
input) or AttncheckError (73 cannot create out_dir), one line.  Returns
out_dir.  See python/attncheck/torch_convert.py for the file format.

capture(module, layer, inputs, path=None) runs module on inputs with a
forward pre-hook on layer (a submodule, or its name in
module.named_modules()) and returns the layer's first positional input:
the residual stream entering that block (what --hidden X.npy and
ac_attn_input take), as a NumPy array of shape (n, d), tokens x width,
row-major (one row per token: PyTorch's layout and the library's
token-major R of ac_model_run).  A batch of one, (1, n, d), is squeezed;
a larger batch is refused (take one sequence).  float64 and float32 are
kept as computed; float16 and bfloat16 are widened to float32, exactly
(the .npy reader reads f8 and f4).  The forward stops once the layer is
reached (nothing after it runs), under torch.no_grad(); the hook is
removed in every case.  Refused: a layer the forward never reaches, a
layer whose input is not a tensor of 2 or 3 dimensions, non-finite
entries.  With path, the array is also written there as .npy (atomic).
"""

import os
import tempfile

import numpy as np

from . import _native, torch_convert
from ._commands import _error

_native.lib.ac_ffi_model_check.restype = _native.ctypes.c_int
_native.lib.ac_ffi_model_check.argtypes = [_native.ctypes.c_char_p, _native.ctypes.c_char_p,
                                           _native._sz, _native._ep]


def model_check(path):
    """The library's one-line description of the checkpoint directory path
    (ac_model_open, then every layer read); raises InputError if it refuses."""
    err = _native.Err()
    buf = _native.ctypes.create_string_buffer(4096)
    rc = _native.lib.ac_ffi_model_check(os.fsencode(path), buf, len(buf),
                                        _native.ctypes.byref(err))
    if rc != 0:
        raise torch_convert.ConvertError(rc, err.msg.decode("utf-8", "replace"))
    return buf.value.decode("utf-8", "replace")


def from_torch(src, config, out_dir):
    """Convert a PyTorch state dict (in memory, or a .bin/.pt/ckpt.pt path)
    and its config into the checkpoint directory out_dir (see the module)."""
    out = os.path.abspath(os.fspath(out_dir))

    def check(tmp):
        try:
            model_check(tmp)
        except torch_convert.ConvertError as e:
            raise torch_convert.ConvertError(e.status, str(e).replace(tmp, out)) from None

    try:
        return torch_convert.from_torch(src, config, out_dir, check=check)
    except torch_convert.ConvertError as e:
        raise _error(e.status, str(e)) from None


class _Reached(Exception):
    pass


def capture(module, layer, inputs, path=None):
    """The input of layer (a submodule of module, or its name) when module
    runs on inputs (a tensor, a tuple of positional arguments or a dict of
    keyword arguments): an (n, d) NumPy array (see the module)."""
    import torch
    if isinstance(layer, str):
        named = dict(module.named_modules())
        if layer not in named:
            raise _error(64, "capture: %s has no submodule %r" % (type(module).__name__, layer))
        name, layer = layer, named[layer]
    else:
        name = next((k for k, m in module.named_modules() if m is layer), None)
        if name is None:
            raise _error(64, "capture: the layer (a %s) is not a submodule of the module"
                         % type(layer).__name__)
    got = []

    def hook(_mod, args):
        got.append(args[0] if args else None)
        raise _Reached()

    h = layer.register_forward_pre_hook(hook)
    try:
        with torch.no_grad():
            if isinstance(inputs, dict):
                module(**inputs)
            elif isinstance(inputs, (tuple, list)):
                module(*inputs)
            else:
                module(inputs)
    except _Reached:
        pass
    finally:
        h.remove()
    if not got:
        raise _error(65, "capture: the forward never reached %s" % name)
    x = got[0]
    if not torch.is_tensor(x):
        raise _error(65, "capture: %s's first positional input is %s, not a tensor (is the "
                     "hidden state passed by keyword?)" % (name, type(x).__name__))
    x = x.detach().cpu()
    if x.dim() == 3:
        if x.shape[0] != 1:
            raise _error(65, "capture: %s's input has a batch of %d sequences: give one"
                         % (name, x.shape[0]))
        x = x[0]
    if x.dim() != 2:
        raise _error(65, "capture: %s's input has shape %s, not (n, d) or (1, n, d)"
                     % (name, tuple(x.shape)))
    if x.dtype in (torch.float16, torch.bfloat16):
        x = x.to(torch.float32)  # exact: every such number is a float32
    if x.dtype not in (torch.float32, torch.float64):
        raise _error(65, "capture: %s's input has dtype %s" % (name, x.dtype))
    if not bool(torch.isfinite(x).all()):
        raise _error(65, "capture: %s's input has NaN or infinite entries" % name)
    a = np.ascontiguousarray(x.numpy())
    if path is not None:
        d = os.path.dirname(os.path.abspath(path))
        try:
            fd, tmp = tempfile.mkstemp(dir=d, prefix=".capture-", suffix=".npy")
        except OSError as e:
            raise _error(73, "%s: cannot create: %s" % (path, e.strerror)) from None
        try:
            with os.fdopen(fd, "wb") as f:
                np.save(f, a.astype(a.dtype.newbyteorder("<"), copy=False))
            os.replace(tmp, path)
        except OSError as e:
            os.unlink(tmp)
            raise _error(73, "%s: cannot write: %s" % (path, e.strerror)) from None
    return a
