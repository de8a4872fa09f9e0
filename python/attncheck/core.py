"""The checks of attncheck on NumPy arrays: rep_theorem, separate, condition."""

import ctypes
import decimal
import math
import os
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ._commands import (AttncheckError, InputError, Interval, Record, Result, Verdict,
                        make_function, run)
from ._native import Cert, CondInfo, Err, T2Info, c_double_p, lib

VERDICTS = ("PROVED", "REFUTED", "UNDECIDED")
RELATIONS = ("<", "<=", ">", ">=")
EXIT_STATUS = {64: "usage", 65: "data", 66: "noinput", 70: "internal", 73: "cantcreat"}


def _check(rc, err):
    if rc != 0:
        cls = InputError if rc in (64, 65, 66) else AttncheckError
        raise cls(rc, err.msg.decode("utf-8", "replace"), err.fields.decode("utf-8", "replace"))


def _arr(a, name, ndim):
    """A C-contiguous float64 copy-or-view of a, with its shape checked.
    float32 (and integer) arrays are widened to double exactly."""
    x = np.asarray(a)
    if x.dtype.kind not in "fiub":
        raise TypeError("%s: expected a real array, got dtype %s" % (name, x.dtype))
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.ndim != ndim:
        raise ValueError("%s: expected %d dimensions, got shape %s" % (name, ndim, x.shape))
    return x


def _ptr(x):
    return x.ctypes.data_as(c_double_p)


def _lo3(x):
    """x rounded down to 3 significant digits, for printing a lower bound
    (0.99996 prints as 0.999, never as 1): the exact binary value of x,
    rounded toward -inf in decimal."""
    if not math.isfinite(x) or x <= 0:
        return "%.3g" % x
    d = decimal.Decimal(x)
    q = decimal.Decimal(1).scaleb(d.adjusted() - 2)
    return "%s" % float(d.quantize(q, rounding=decimal.ROUND_FLOOR))


def _verdict(v):
    return VERDICTS[v] if 0 <= v < 3 else "UNDECIDED"


@dataclass(frozen=True)
class Certificate:
    """A certified claim "quantity relation tau", decided with quantity in [lo, hi].
    stage: 0 double with an a-priori bound, k >= 1 the k-th ball stage, -1 exact,
    -2 nothing computed; precision: bits of that stage (53 at stage 0, 0 exact)."""
    verdict: str
    quantity: str
    relation: str
    tau: float
    lo: float
    hi: float
    stage: int
    precision: int
    method: str
    seconds: float

    @classmethod
    def _from(cls, c: Cert):
        return cls(_verdict(c.verdict), c.quantity.decode(), RELATIONS[c.rel] if 0 <= c.rel < 4
                   else "?", c.tau, c.lo, c.hi, c.stage, c.prec, c.method.decode(), c.seconds)

    def __str__(self):
        return "%s: %s %s %.3g, certified in [%.6g, %.6g] (stage %d, %d bits, %s)" % (
            self.verdict, self.quantity, self.relation, self.tau, self.lo, self.hi, self.stage,
            self.precision, self.method)


def _rt_prepare(a):
    """rep_theorem's arrays: real, and P n x n for X d x n (checked here so that
    the message names the shapes as NumPy prints them)."""
    X, P = a.get("X"), a.get("P")
    shapes = {}
    for name, v in (("X", X), ("P", P)):
        if v is not None and not isinstance(v, (str, bytes, os.PathLike)):
            x = np.asarray(v)
            if x.dtype.kind not in "fiub":
                raise TypeError("%s: expected a real array, got dtype %s" % (name, x.dtype))
            if x.ndim != 2:
                raise InputError(65, "%s: expected 2 dimensions, got shape %s" % (name, x.shape))
            shapes[name] = x.shape
    if "X" in shapes and "P" in shapes:
        n = shapes["X"][1]
        if shapes["P"] != (n, n):
            raise InputError(65, "P: expected shape (%d, %d) for X of shape %s, got %s"
                             % (n, n, shapes["X"], shapes["P"]))
    if a.get("dk") is not None and a["dk"] < 1:
        raise InputError(64, "dk must be at least 1")


# the names the package's results had before they mirrored the JSON
_RT_ALIASES = {"weights_certificate": "weights", "rank": "rank.value", "d": "instance.d",
               "n": "instance.n", "dk": "instance.dk"}

rep_theorem = make_function(
    "rep-theorem", "rep_theorem", aliases=_RT_ALIASES, prepare=_rt_prepare,
    extra_doc="X: d x n (columns are tokens, paper 1's layout); P: n x n, column-stochastic\n"
              "(PyTorch's row-stochastic attention: rows=True checks P.T).  Returns a Result\n"
              "with every member of `attncheck rep-theorem --json` and the weights Wq, Wk\n"
              "(dk x d) the library constructed and certified.")


def generate_instance(d, n, seed=1, representable_dk=None):
    """rep-theorem's generated instance: Gaussian X (d x n) and a Dirichlet P,
    or (representable_dk set) a P that a head of that size represents on X."""
    X = np.empty((d, n))
    P = np.empty((n, n))
    err = Err()
    rc = lib.ac_ffi_t1_generate(_ptr(X), _ptr(P), d, n, 0 if representable_dk is None else 1,
                                representable_dk or 0, seed, ctypes.byref(err))
    _check(rc, err)
    return X, P


@dataclass(frozen=True)
class Layer:
    """A multi-head attention layer in paper 1's layout (columns are tokens):
    Wq, Wk, Wv of shape (h, hs, d) and Wo of shape (d, h*hs)."""
    Wq: np.ndarray
    Wk: np.ndarray
    Wv: np.ndarray
    Wo: np.ndarray

    @property
    def h(self):
        return self.Wq.shape[0]

    @property
    def hs(self):
        return self.Wq.shape[1]

    @property
    def d(self):
        return self.Wq.shape[2]

    def params(self):
        """The library's block wq | wk | wv | wo (ac_mh, multihead.h)."""
        return np.concatenate([np.ascontiguousarray(a, dtype=np.float64).ravel()
                               for a in (self.Wq, self.Wk, self.Wv, self.Wo)])

    @classmethod
    def from_params(cls, p, d, h, hs):
        k = h * hs * d
        return cls(p[:k].reshape(h, hs, d).copy(), p[k:2 * k].reshape(h, hs, d).copy(),
                   p[2 * k:3 * k].reshape(h, hs, d).copy(), p[3 * k:].reshape(d, h * hs).copy())

    def __call__(self, X):
        """The layer on X (d x n), in double precision: sum over heads of
        Wo_i Wv_i X Softmax((Wk_i X)^T (Wq_i X) / sqrt(hs)), softmax over columns."""
        X = np.asarray(X, dtype=np.float64)
        out = np.zeros_like(X)
        for i in range(self.h):
            L = (self.Wk[i] @ X).T @ (self.Wq[i] @ X) / math.sqrt(self.hs)
            S = np.exp(L - L.max(axis=0))
            S /= S.sum(axis=0)
            out += self.Wo[:, i * self.hs:(i + 1) * self.hs] @ (self.Wv[i] @ X) @ S
        return out


@dataclass(frozen=True)
class SeparateResult:
    """Theorem 2 (paper 1) for one pair (f_W, g_V); see attncheck-separate(1)."""
    verdict: str            # PROVED: an X with f_W(X) != g_V(X) is certified
    case: int               # the case of the paper's proof (0 unknown, 4 hypotheses fail)
    hypotheses: str
    certificate: Certificate
    relative_gap_lo: float  # certified lower bound on |f - g| / (|f| + |g|) at X
    summary: str
    X: Optional[np.ndarray] = field(repr=False, default=None)

    def __repr__(self):
        return "<separate %s (case %d): relative gap >= %s; %s>" % (
            self.verdict, self.case, _lo3(self.relative_gap_lo), self.summary)


def generate_layers(d, h, dp, case=0, seed=1):
    """separate's generated pair: g_V (fixed head size dp) and f_W (head size
    d/h) for the given case (0 random, 1, 2, 3)."""
    if h == 0 or d % h:
        raise ValueError("h must divide d")
    W = np.empty(4 * d * d)
    V = np.empty(4 * h * dp * d)
    err = Err()
    rc = lib.ac_ffi_t2_generate(_ptr(W), _ptr(V), d, h, dp, case, seed, ctypes.byref(err))
    _check(rc, err)
    return Layer.from_params(W, d, h, d // h), Layer.from_params(V, d, h, dp)


def separate(W, V, n, seed=1):
    """Find and certify an input X (d x n) on which the standard layer f_W
    and the fixed-head layer g_V differ (paper 1, Theorem 2)."""
    if W.d != V.d or W.h != V.h:
        raise ValueError("f_W and g_V need the same d and h (got %d, %d and %d, %d)"
                         % (W.d, W.h, V.d, V.h))
    Wp, Vp = W.params(), V.params()
    err = Err()
    hnd = ctypes.c_void_p()
    rc = lib.ac_ffi_t2_separate(ctypes.byref(hnd), _ptr(Wp), W.hs, _ptr(Vp), V.hs, W.d, W.h, n,
                                seed, ctypes.byref(err))
    try:
        _check(rc, err)
        info = T2Info()
        lib.ac_ffi_t2_get(hnd, ctypes.byref(info))
        X = None
        if info.has_x:
            X = np.empty((W.d, n))
            lib.ac_ffi_t2_x(hnd, _ptr(X))
        return SeparateResult(_verdict(info.verdict), info.kase, _verdict(info.hypotheses),
                              Certificate._from(info.cert), info.rel_lo,
                              info.summary.decode("utf-8", "replace"), X)
    finally:
        lib.ac_ffi_t2_free(hnd)


@dataclass(frozen=True)
class ConditionRow:
    h: int
    D: int
    N: int
    kappa: np.ndarray = field(repr=False)
    median: float
    mean: float
    q05: float
    q95: float
    elog: float
    first_order: float
    tw_median: float


@dataclass(frozen=True)
class ConditionResult:
    """Paper 2, Theorem 3.2: sampled condition numbers per head count."""
    mode: str
    rows: tuple

    def __repr__(self):
        lines = ["<condition %s" % self.mode]
        for r in self.rows:
            lines.append("  h=%-3d N=%-5d D=%-5d median kappa %.4g (Bai-Yin %.4g)"
                         % (r.h, r.N, r.D, r.median, r.first_order))
        return "\n".join(lines) + ">"


def condition(heads, seq, head_dim, input_dim=0, mode="iid", trials=100, seed=1):
    """Sample the condition number of the concatenated block [A_1 ... A_h]
    (seq x h*head_dim) for each h in heads, as `attncheck condition` does
    (same seed, same values), with the Gaussian predictions beside them."""
    modes = {"iid": 0, "attention": 1}
    if mode not in modes:
        raise ValueError("mode must be 'iid' or 'attention'")
    rows = []
    for h in heads:
        info = CondInfo()
        kappa = np.empty(trials)
        err = Err()
        rc = lib.ac_ffi_condition(ctypes.byref(info), _ptr(kappa), h, head_dim, seq, input_dim,
                                  modes[mode], trials, seed, ctypes.byref(err))
        _check(rc, err)
        rows.append(ConditionRow(info.h, info.D, info.N, kappa, info.median, info.mean, info.q05,
                                 info.q95, info.elog, info.first_order, info.tw_median))
    return ConditionResult(mode, tuple(rows))


def certify_head(X, P, Wq, Wk, tol=2.0 ** -26):
    """Certify given weights (e.g. trained in PyTorch): decide
    max|Softmax((Wk X)^T (Wq X) / sqrt(dk)) - P| <= tol for the doubles given,
    with rigorous error bounds (double with an a-priori bound, then Arb balls).
    Returns a Certificate: [lo, hi] encloses the maximum deviation."""
    Xa, Pa = _arr(X, "X", 2), _arr(P, "P", 2)
    Qa, Ka = _arr(Wq, "Wq", 2), _arr(Wk, "Wk", 2)
    d, n = Xa.shape
    if Qa.shape != Ka.shape or Qa.shape[1] != d:
        raise ValueError("Wq, Wk: expected equal shapes (dk, %d), got %s and %s"
                         % (d, Qa.shape, Ka.shape))
    if Pa.shape != (n, n):
        raise ValueError("P: expected shape (%d, %d), got %s" % (n, n, Pa.shape))
    cert = Cert()
    err = Err()
    rc = lib.ac_ffi_head_certify(ctypes.byref(cert), _ptr(Xa), d, n, _ptr(Qa), _ptr(Ka),
                                 Qa.shape[0], _ptr(Pa), float(tol), ctypes.byref(err))
    _check(rc, err)
    return Certificate._from(cert)


# ---- train, report (attncheck-train(1), attncheck-report(1)) -----------------------

train = make_function(
    "train", "train", prepare=_rt_prepare,
    extra_doc="Every option is keyword-only.  fit-p's X (d x n) and P (n x n) are arrays or .npy\n"
              "file names (PyTorch's row-stochastic attention: rows=True fits P.T); the other\n"
              "tasks read their data from files (teacher=DIR, text=FILE).  save=DIR writes the\n"
              "checkpoint (attncheck.load_checkpoint reads it; fit-p: the best iterate, whose\n"
              "weights are the ones certified), resume=DIR continues from one.  Returns a Result\n"
              "with every member of `attncheck train --json` (fit-p: the verdict and\n"
              "certificate on the learned head, and its weights Wq, Wk, dk x d).")

report = make_function(
    "report", "report",
    extra_doc="Returns a Result with every member of `attncheck report --json`: .rows (claim,\n"
              "verdict, expected, bound, ...) and the counts as_expected, contradicting,\n"
              "undecided.  The rows of Theorem 2, the students, the conditioning and the trained\n"
              "kappa are still made by the program (`attncheck report`), not here.")
