"""The checks of attncheck on NumPy arrays: rep_theorem, separate (and Layer),
condition, merge, train, report."""

import ctypes
import decimal
import inspect
import math
import numbers
import os
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ._commands import (AttncheckError, InputError, Interval, Record, Result, Verdict,
                        _exact_array, make_function, run)
from ._native import Cert, Err, c_double_p, lib

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


_LAYER_PARAMS = ("Wq", "Wk", "Wv", "Wo")


@dataclass(frozen=True)
class Layer:
    """A multi-head attention layer in paper 1's layout (columns are tokens),
    its parameters in the layout of its files (Wq.npy ..., attncheck-separate(1),
    ac_multihead(3)): Wq, Wk, Wv of shape (h, hs, d) and Wo of shape (h, d, hs),
    Wo_i = Wo[i].  The arrays are converted to float64 exactly (or refused) and
    their shapes checked, naming the parameter.

        y(X) = sum_i Wo_i Wv_i X Softmax((Wk_i X)^T (Wq_i X) / sqrt(hs))"""
    Wq: np.ndarray
    Wk: np.ndarray
    Wv: np.ndarray
    Wo: np.ndarray

    def __post_init__(self):
        a = {k: _exact_array(k, getattr(self, k)) for k in _LAYER_PARAMS}
        q = a["Wq"]
        if q.ndim != 3 or 0 in q.shape:
            raise InputError(65, "Wq: expected a 3-D array (h, hs, d) with no zero dimension "
                             "(the layout of Wq.npy), got shape %s" % (q.shape,))
        h, hs, d = q.shape
        for k in ("Wk", "Wv"):
            if a[k].shape != q.shape:
                raise InputError(65, "%s: expected shape (h, hs, d) = %s like Wq, got %s"
                                 % (k, q.shape, a[k].shape))
        if a["Wo"].shape != (h, d, hs):
            raise InputError(65, "Wo: expected shape (h, d, hs) = %s (the layout of Wo.npy), "
                             "got %s" % ((h, d, hs), a["Wo"].shape))
        for k in _LAYER_PARAMS:
            object.__setattr__(self, k, a[k])

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
        """The library's block wq | wk | wv | wo (ac_mh, multihead.h): Wq, Wk, Wv as
        they are, Wo as Wo_cat = [Wo_1, ..., Wo_h] (d x h hs)."""
        wo = np.transpose(self.Wo, (1, 0, 2)).reshape(self.d, self.h * self.hs)
        return np.concatenate([self.Wq.ravel(), self.Wk.ravel(), self.Wv.ravel(), wo.ravel()])

    @classmethod
    def from_params(cls, p, d, h, hs):
        """The layer of a library block (the inverse of params())."""
        k = h * hs * d
        wo = np.asarray(p[3 * k:4 * k], dtype=np.float64).reshape(d, h, hs)
        return cls(p[:k].reshape(h, hs, d).copy(), p[k:2 * k].reshape(h, hs, d).copy(),
                   p[2 * k:3 * k].reshape(h, hs, d).copy(), np.transpose(wo, (1, 0, 2)).copy())

    @classmethod
    def load(cls, directory, prefix="W"):
        """The layer of DIR/<prefix>q.npy ... <prefix>o.npy (what separate --out-dir
        writes; prefix "V" for g_V)."""
        return cls(*(np.load(os.path.join(os.fspath(directory), "%s%s.npy" % (prefix, c)))
                     for c in "qkvo"))

    def save(self, directory, prefix="W"):
        """Write DIR/<prefix>q.npy ... <prefix>o.npy (the library's writer of a
        layer's files, ac_mh_save_dir; DIR must exist): what separate --w-dir
        (prefix "W") and --v-dir (prefix "V") read."""
        if prefix not in ("W", "V"):
            raise InputError(64, "prefix must be 'W' or 'V', got %r" % (prefix,))
        p = self.params()
        err = Err()
        _check(lib.ac_ffi_mh_save_dir(_ptr(p), self.d, self.h, self.hs,
                                      os.fsencode(directory), prefix.encode(),
                                      ctypes.byref(err)), err)

    def __call__(self, X):
        """The layer on X (d x n) in double precision, by the library's forward
        pass (ac_mh_forward), softmax over columns."""
        Xa = _exact_array("X", X)
        if Xa.ndim != 2 or Xa.shape[0] != self.d:
            raise InputError(65, "X: expected shape (d, n) with d = %d, got %s"
                             % (self.d, Xa.shape))
        n = Xa.shape[1]
        Y = np.empty((self.d, n))
        p = self.params()
        err = Err()
        _check(lib.ac_ffi_mh_forward(_ptr(Y), _ptr(p), self.d, self.h, self.hs, _ptr(Xa), n,
                                     ctypes.byref(err)), err)
        return Y


class _RecordValue:
    """A value of the package's old API (an int, a verdict string) that also
    reads as the JSON object it comes from: r.case == 1 and r.case.name."""

    def __new__(cls, value, obj):
        x = super().__new__(cls, value)
        x._record = Record(obj)
        return x

    def __getattr__(self, name):
        if name == "_record":
            raise AttributeError(name)
        return getattr(self._record, name)

    def __getitem__(self, key):
        if isinstance(key, str):
            return self._record[key]
        return super().__getitem__(key)


class _IntRecord(_RecordValue, int):
    pass


class _StrRecord(_RecordValue, str):
    pass


class SeparateResult(Result):
    """The result of separate (paper 1, Theorem 2; attncheck-separate(1)): every
    member of `attncheck separate --json` as attributes, and the arrays of its
    --out-dir (X, Wq ... Wo, Vq ... Vo, samples, the students' weights).  The
    attributes of the package before it mirrored the JSON stay: case (the
    case's number, also reading as the "case" object), hypotheses (whether the
    theorem applies, also reading as the "hypotheses" object),
    relative_gap_lo (of the best X; 0 without one) and X."""

    def __getattr__(self, name):
        obj = object.__getattribute__(self, "json")
        if name == "case" and isinstance(obj.get("case"), dict):
            return _IntRecord(obj["case"]["number"], obj["case"])
        if name == "hypotheses" and isinstance(obj.get("hypotheses"), dict):
            return _StrRecord(obj["hypotheses"]["theorem_applies"], obj["hypotheses"])
        if name == "relative_gap_lo" and "best" in obj:
            return obj["best"]["relative_gap_lo"] if obj["best"] else 0.0
        return super().__getattr__(name)

    def __repr__(self):
        obj = self.json
        if "case" in obj and "best" in obj:
            return "<separate %s (case %d): relative gap >= %s; %s>" % (
                obj["verdict"], obj["case"]["number"], _lo3(self.relative_gap_lo),
                obj["summary"])
        return super().__repr__()


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


def _sep_prepare(a):
    """student_heads as a list of whole numbers ("1,2,4" is also accepted)."""
    v = a.get("student_heads")
    if v is not None and not isinstance(v, (str, bytes)):
        try:
            items = list(v)
        except TypeError:
            items = [v]
        text = []
        for x in items:
            if isinstance(x, bool) or not float(x).is_integer():
                raise InputError(64, "student_heads: expected whole numbers, got %r" % (x,))
            text.append(str(int(x)))
        a["student_heads"] = ",".join(text)


_separate = make_function("separate", "separate", prepare=_sep_prepare)
_SEP_ARRAYS = {"W": ("Wq", "Wk", "Wv", "Wo"), "V": ("Vq", "Vk", "Vv", "Vo")}


def separate(W=None, V=None, n=None, seed=None, **options):
    arrays = {}
    if W is not None and V is not None and isinstance(W, Layer) and isinstance(V, Layer) \
            and (W.d != V.d or W.h != V.h):
        raise InputError(65, "f_W and g_V need the same d and h (got %d, %d and %d, %d)"
                         % (W.d, W.h, V.d, V.h))
    for letter, layer in (("W", W), ("V", V)):
        if layer is None:
            continue
        names = _SEP_ARRAYS[letter]
        if not isinstance(layer, Layer):
            raise TypeError("%s: expected a Layer (or the arrays %s)" % (letter, ", ".join(names)))
        for k, arr in zip(names, (layer.Wq, layer.Wk, layer.Wv, layer.Wo)):
            if k in options:
                raise TypeError("separate: %s given twice (as %s and as %s=)" % (k, letter, k))
            arrays[k] = arr
    r = _separate(n=n, seed=seed, **arrays, **options)
    out = SeparateResult(r.command, r.json, r.arrays)
    object.__setattr__(out, "status", r.status)
    return out


def _separate_signature():
    gen = inspect.signature(_separate).parameters
    P = inspect.Parameter
    params = [P("W", P.POSITIONAL_OR_KEYWORD, default=None),
              P("V", P.POSITIONAL_OR_KEYWORD, default=None),
              P("n", P.POSITIONAL_OR_KEYWORD, default=None),
              P("seed", P.POSITIONAL_OR_KEYWORD, default=None)]
    params += [p for k, p in gen.items() if k not in ("n", "seed")]
    return inspect.Signature(params)


separate.__signature__ = _separate_signature()
separate.__doc__ = _separate.__doc__.replace(
    "Arguments (the options", "W, V: the layers f_W and g_V as Layer objects (None: generated, as\n"
    "the program's default); or give their arrays Wq, Wk, Wv, Wo and Vq, Vk, Vv, Vo\n"
    "(Wq, Wk, Wv (h, hs, d) and Wo (h, d, hs), the layout of the files).  Returns a\n"
    "SeparateResult: every member of `attncheck separate --json` and the arrays of\n"
    "its --out-dir (X, the layers, samples, with student=True the students' weights\n"
    "KIND_hH_seedS_Wq ...).\n\nArguments (the options", 1)


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


def _num(v):
    """a JSON number (null: NaN, as the JSON writes NaN and infinities)"""
    return math.nan if v is None else float(v)


class ConditionResult(Result):
    """The result of `attncheck condition` (and merge): every member of its
    --json as attributes (r.verdict, r.certificate, r.results[i].stats.median,
    ...), the arrays (r.kappa: one row of sampled kappa per h, r.sigma1,
    r.sigmin; with certify r.kappa_lo, r.kappa_hi; with spectrum r.eig_h<h>;
    with model the trained blocks' r.kappa per layer, r.init_kappa,
    r.gauss_kappa), and, as before, .mode and .rows (one ConditionRow per h)."""

    def __init__(self, r):
        super().__init__(r.command, r.json, r.arrays)
        object.__setattr__(self, "status", getattr(r, "status", None))

    @property
    def mode(self):
        m = self.json.get("mode")
        return m if m is not None else self.json.get("parameters", {}).get("mode")

    @property
    def rows(self):
        res = self.json.get("results") or []
        kappa = self.arrays.get("kappa")
        rows = []
        for i, x in enumerate(res):
            st, pr = x["stats"], x["predictions"]
            fo = pr.get("first_order")
            rows.append(ConditionRow(
                x["h"], x["D"], x["N"], kappa[i] if kappa is not None else np.empty(0),
                _num(st.get("median")), _num(st.get("mean")), _num(st.get("q05")),
                _num(st.get("q95")), _num(st.get("elog")),
                (math.inf if x["D"] == x["N"] else math.nan) if fo is None else float(fo),
                _num(pr.get("tw_median"))))
        return tuple(rows)

    def __repr__(self):
        if not self.json.get("results"):
            return super().__repr__()
        lines = ["<condition %s %s" % (self.mode, self.json.get("verdict"))]
        for r in self.rows:
            lines.append("  h=%-3d N=%-5d D=%-5d median kappa %.4g (Bai-Yin %.4g)"
                         % (r.h, r.N, r.D, r.median, r.first_order))
        return "\n".join(lines) + ">"


_condition = make_function("condition")
_merge = make_function("merge")


def condition(heads=None, seq=None, head_dim=None, input_dim=0, mode=None, trials=None, seed=None,
              **options):
    """Sample the condition number of the concatenated block [A_1 ... A_h]
    (seq x h*head_dim) for each h in heads, as `attncheck condition` does
    (same seed, same values), with the Gaussian predictions beside them;
    every other option of `attncheck condition` keyword-only (certify, rtol,
    max_prec, spectrum, bins, embed, model, data, batches, shard,
    samples_out, threads).  None (and input_dim 0) means the command's
    default: heads 1,2,4,8,16,32,64, seq 128, head_dim 64, input_dim D,
    mode "iid", trials 100 (20 with model), seed 1.  Returns a
    ConditionResult (every member of the command's --json, its arrays, and
    .mode, .rows as before)."""
    if isinstance(heads, numbers.Integral):
        heads = [heads]
    return ConditionResult(_condition(heads=heads, seq=seq, head_dim=head_dim,
                                      input_dim=input_dim or None, mode=mode, trials=trials,
                                      seed=seed, **options))


def merge(files, **options):
    """Combine the shard files of one condition sweep (condition(...,
    shard=(i, k), samples_out=FILE) for every i of 1..k) into exactly the
    result of the unsharded sweep; options: threads.  Returns a
    ConditionResult, as condition does.  The shard files of inspect
    (inspect(..., shard=(i, k), shard_out=FILE)) give inspect's Result (its
    r.command is "inspect")."""
    if isinstance(files, (str, bytes, os.PathLike)):
        files = [files]
    r = _merge(list(files), **options)
    return r if r.command == "inspect" else ConditionResult(r)


def _condition_signature():
    """condition's signature: the arguments it always had, then every other
    option of the command keyword-only"""
    first = [("heads", None), ("seq", None), ("head_dim", None), ("input_dim", 0),
             ("mode", None), ("trials", None), ("seed", None)]
    P = inspect.Parameter
    params = [P(n, P.POSITIONAL_OR_KEYWORD, default=d) for n, d in first]
    names = {n for n, _ in first}
    params += [P(p.name, P.KEYWORD_ONLY, default=None)
               for p in inspect.signature(_condition).parameters.values() if p.name not in names]
    return inspect.Signature(params)


condition.__signature__ = _condition_signature()
condition.__doc__ += "\n\n" + _condition.__doc__
merge.__signature__ = inspect.signature(_merge)
merge.__doc__ += "\n\n" + _merge.__doc__


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


inspect_model = make_function(
    "inspect", "inspect",
    extra_doc="tokens: a vector of token ids; hidden, normed: n x d (one row per token).\n"
              "Returns a Result with every member of `attncheck inspect --json` (per head:\n"
              "r.layers[l].heads[i].threshold, .distances, .self_check, .circuits) and the\n"
              "arrays patterns [layers, heads, n, n] (query rows summing to 1), normed,\n"
              "hidden and, with weights=True, the compressed heads.")
