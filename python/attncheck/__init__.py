"""attncheck: certified checks of the theory of multi-head attention.

    import attncheck, numpy as np
    X, P = attncheck.generate_instance(d=16, n=8, seed=1)
    r = attncheck.rep_theorem(X, P, dk=7)
    r.verdict, r.certificate, r.Wq.shape

Functions: rep_theorem, certify_head, generate_instance (Theorem 1 of paper 1);
separate, generate_layers, Layer (Theorem 2 of paper 1); condition, merge
(paper 2, Theorem 3.2); train (the training stack; fit-p certifies a learned
head), report (every check on built-in instances); load_checkpoint,
save_checkpoint (PyTorch); from_torch (a PyTorch state dict, .bin/.pt or
nanoGPT ckpt.pt to the checkpoint directory of ac_models(3)), capture (the
residual stream entering a layer of a model run in PyTorch, for
--hidden).  Errors of the
library are raised as AttncheckError with its one-line message; .status is
the exit status the command line would give (64 usage, 65 data, 70 internal).
See attncheck(1) and the README."""

from ._config import VERSION as __version__
from ._commands import (COMMANDS, AttncheckError, InputError, Interval, Record, Result,
                        Verdict, run)
from .core import (Certificate, ConditionResult, ConditionRow, Layer, SeparateResult,
                   certify_head, condition, generate_instance, generate_layers, merge,
                   rep_theorem, separate)
from .core import report, train
from .core import inspect_model as inspect

RepTheoremResult = Result  # the name of rep_theorem's result before it mirrored the JSON
from .checkpoint import fnv1a64, load_checkpoint, save_checkpoint
from .models import capture, from_torch

__all__ = ["COMMANDS", "InputError", "Interval", "Record", "Result", "Verdict", "run",
           "AttncheckError", "Certificate", "ConditionResult", "ConditionRow", "Layer",
           "RepTheoremResult", "SeparateResult", "certify_head", "condition",
           "generate_instance", "generate_layers", "merge", "rep_theorem", "separate", "fnv1a64",
           "load_checkpoint", "save_checkpoint", "__version__"]
__all__ += ["report", "train", "inspect", "capture", "from_torch"]
