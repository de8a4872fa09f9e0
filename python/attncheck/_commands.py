"""The commands of attncheck as Python functions, built from the library's
option tables (attncheck/commands.h, ac_commands_describe): every option a
command has is a keyword argument of its function, with the same name
('-' spelled '_'), range checks and messages, and every result is the
command's JSON object (its --json) as a Result, with the arrays it holds
(the files its --out-dir writes) as NumPy arrays.

    import attncheck
    r = attncheck.run("rep-theorem", n=8, dk=7, d=16)
    r.verdict, r.threshold.hi, r.distance.lo

Nothing here decides: the library parses the options, runs the command and
writes the result; this module converts arguments exactly (or refuses them)
and reads the JSON."""

import ctypes
import enum
import inspect
import json
import math
import numbers
import os

import numpy as np

from ._native import Err, c_double_p, lib

_vp = ctypes.c_void_p
_sz = ctypes.c_size_t
_ep = ctypes.POINTER(Err)

lib.ac_commands_describe.restype = _vp
lib.ac_commands_describe.argtypes = []
lib.ac_free.restype = None
lib.ac_free.argtypes = [_vp]
lib.ac_request_new.restype = ctypes.c_int
lib.ac_request_new.argtypes = [ctypes.POINTER(_vp), ctypes.c_char_p, _ep]
lib.ac_request_free.restype = None
lib.ac_request_free.argtypes = [_vp]
lib.ac_request_set.restype = ctypes.c_int
lib.ac_request_set.argtypes = [_vp, ctypes.c_char_p, ctypes.c_char_p, _ep]
lib.ac_request_set_array.restype = ctypes.c_int
lib.ac_request_set_array.argtypes = [_vp, ctypes.c_char_p, _sz, ctypes.POINTER(_sz), c_double_p,
                                     _ep]
lib.ac_request_run.restype = ctypes.c_int
lib.ac_request_run.argtypes = [_vp, _vp, _ep]
lib.ac_request_json.restype = _vp
lib.ac_request_json.argtypes = [_vp, ctypes.c_int]
lib.ac_request_status.restype = ctypes.c_int
lib.ac_request_status.argtypes = [_vp]
lib.ac_request_arrays.restype = _sz
lib.ac_request_arrays.argtypes = [_vp, _vp, _sz]

NPY_MAXDIM = 8


class OutArray(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("ndim", _sz), ("shape", _sz * NPY_MAXDIM),
                ("data", c_double_p)]


class AttncheckError(Exception):
    """An error reported by the library: .status is its exit-status code
    (64 impossible arguments, 65 bad data, 66 cannot open input, 70
    internal), str() its one-line message."""

    def __init__(self, status, message, fields=""):
        super().__init__(message)
        self.status = status
        self.fields = fields


class InputError(AttncheckError, ValueError):
    """Bad input: an option out of range or a value that cannot be
    converted exactly (64), bad data (65), an input that cannot be read (66)."""


def _error(status, message, fields=""):
    cls = InputError if status in (64, 65, 66) else AttncheckError
    return cls(status, message, fields)


def _check(rc, err):
    if rc != 0:
        raise _error(rc, err.msg.decode("utf-8", "replace"),
                     err.fields.decode("utf-8", "replace"))


class Verdict(str, enum.Enum):
    """A three-valued verdict (INCONSISTENT: two certificates contradict each
    other, a bug to report).  Compares equal to its name."""
    PROVED = "PROVED"
    REFUTED = "REFUTED"
    UNDECIDED = "UNDECIDED"
    INCONSISTENT = "INCONSISTENT"

    def __str__(self):
        return self.value

    __format__ = str.__format__


_VERDICT_KEYS = {"verdict", "exact", "representable", "expected", "hypotheses"}


class Record:
    """A JSON object of a result, read as attributes (r.distance.lo) or keys
    (r["distance"]["lo"]).  Verdicts are Verdict members; an object with
    "lo" and "hi" is an Interval.  .json is the object itself."""

    _aliases = {}

    def __init__(self, obj, aliases=None):
        object.__setattr__(self, "json", obj)
        object.__setattr__(self, "_al", aliases or {})

    def __getattr__(self, name):
        obj = object.__getattribute__(self, "json")
        if name in obj:
            return _wrap(name, obj[name])
        al = object.__getattribute__(self, "_al")
        if name in al:
            v = self
            for part in al[name].split("."):
                v = v[part] if isinstance(v, (dict, Record)) else getattr(v, part)
            return v
        raise AttributeError(name)

    def __getitem__(self, key):
        return _wrap(key, self.json[key])

    def __contains__(self, key):
        return key in self.json

    def __setattr__(self, name, value):
        raise AttributeError("results are read-only")

    def keys(self):
        return self.json.keys()

    def __dir__(self):
        return sorted(set(self.json) | set(object.__getattribute__(self, "_al")))

    def __repr__(self):
        return "Record(%s)" % ", ".join(sorted(self.json))


class Interval(tuple):
    """A certified enclosure: the tuple (lo, hi) (a JSON null lo is -inf, a
    null hi +inf: no finite bound certified), with the object's other
    members as attributes."""

    def __new__(cls, obj):
        lo = -math.inf if obj.get("lo") is None else float(obj["lo"])
        hi = math.inf if obj.get("hi") is None else float(obj["hi"])
        t = super().__new__(cls, (lo, hi))
        t._obj = obj
        return t

    @property
    def lo(self):
        return self[0]

    @property
    def hi(self):
        return self[1]

    @property
    def json(self):
        return self._obj

    @property
    def precision(self):
        return self._obj.get("precision_bits")

    def __getattr__(self, name):
        obj = self.__dict__.get("_obj", {})
        if name in obj:
            return _wrap(name, obj[name])
        raise AttributeError(name)

    def __str__(self):
        if "verdict" in self._obj:
            return "%s: %s %s %.3g, certified in [%.6g, %.6g] (%s, %s)" % (
                self._obj.get("verdict"), self._obj.get("quantity"), self._obj.get("relation"),
                self._obj.get("tau") if self._obj.get("tau") is not None else math.nan,
                self.lo, self.hi, self._obj.get("stage_name"), self._obj.get("method"))
        return "[%.6g, %.6g]" % (self.lo, self.hi)


class CertificateRecord(Record):
    """A certificate of the JSON: the claim "quantity relation tau" decided with
    quantity in [lo, hi] (a null lo is -inf, a null hi +inf), the stage and
    precision that decided it, the method."""

    def __getattr__(self, name):
        obj = object.__getattribute__(self, "json")
        if name in ("lo", "hi"):
            v = obj.get(name)
            return (-math.inf if name == "lo" else math.inf) if v is None else float(v)
        if name == "precision":
            return obj.get("precision_bits")
        return super().__getattr__(name)

    def __str__(self):
        o = self.json
        tau = o.get("tau")
        return "%s: %s %s %.3g, certified in [%.6g, %.6g] (%s, %d bits, %s)" % (
            o.get("verdict"), o.get("quantity"), o.get("relation"),
            math.nan if tau is None else tau, self.lo, self.hi, o.get("stage_name"),
            o.get("precision_bits") or 0, o.get("method"))

    __repr__ = __str__


def _wrap(key, v):
    if isinstance(v, dict):
        if "verdict" in v and "quantity" in v and "lo" in v:
            return CertificateRecord(v)
        if "lo" in v and "hi" in v and not isinstance(v.get("lo"), dict):
            return Interval(v)
        return Record(v)
    if isinstance(v, list):
        return [_wrap(key, x) for x in v]
    if key in _VERDICT_KEYS and isinstance(v, str) and v in Verdict.__members__:
        return Verdict(v)
    return v


class Result(Record):
    """The result of a command: its JSON object (the program's --json) as
    attributes, and the arrays it holds (what --out-dir writes) in .arrays
    and as attributes (r.Wq) where no member of the JSON has the name
    (separate --embed's member "samples" is the count, r.arrays["samples"]
    the inputs).  r.command is the JSON's "command" (merge's result is a
    condition result)."""

    def __init__(self, command, obj, arrays, aliases=None):
        super().__init__(obj, aliases)
        object.__setattr__(self, "command", obj.get("command", command))
        object.__setattr__(self, "arrays", arrays)

    def __getattr__(self, name):
        arrays = object.__getattribute__(self, "arrays")
        try:
            return super().__getattr__(name)
        except AttributeError:
            pass
        if name in arrays:
            return arrays[name]
        if name in ("Wq", "Wk", "X"):  # absent arrays read as None
            return None
        raise AttributeError("%s result has no %r" % (self.command, name))

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.arrays))

    def __repr__(self):
        v = self.json.get("verdict")
        s = self.json.get("summary")
        return "<%s %s%s>" % (self.command.replace("-", "_"), v,
                               (": " + s) if isinstance(s, str) else "")

    def _repr_html_(self):
        return "<b>%s: %s</b><br>%s" % (self.command, self.json.get("verdict"),
                                        self.json.get("summary", ""))


# ---- arguments -------------------------------------------------------------------

def _exact_array(name, a):
    """a as a C-contiguous float64 array, converted exactly or refused with an
    InputError naming the argument and the entry."""
    if isinstance(a, (str, bytes, os.PathLike)):
        raise TypeError("%s: expected an array" % name)
    x = np.asarray(a)
    k = x.dtype.kind
    if k == "b":
        return np.ascontiguousarray(x, dtype=np.float64)
    if k in "iu":
        f = x.astype(np.float64)
        # |x| < 2^53: exact; beyond, exact only if the double is the integer
        for i in np.flatnonzero(np.abs(f) >= 2.0 ** 53):
            v = int(x.flat[i])
            if int(f.flat[i]) != v:
                idx = tuple(int(t) for t in np.unravel_index(int(i), x.shape))
                raise InputError(65, "%s: entry %s = %d is not exactly a double (an integer "
                                 "beyond 2^53 that double cannot hold is refused, never "
                                 "rounded)" % (name, idx, v))
        return np.ascontiguousarray(f)
    if k == "f":
        if x.dtype.itemsize > 8:  # long double, float128
            with np.errstate(over="ignore", invalid="ignore"):
                f = x.astype(np.float64)
                ok = (f.astype(x.dtype) == x) | (np.isnan(x) & np.isnan(f))
            if not np.all(ok):
                i = int(np.flatnonzero(~ok.ravel())[0])
                idx = tuple(int(t) for t in np.unravel_index(i, x.shape))
                raise InputError(65, "%s: entry %s = %s is not exactly a double (%s beyond "
                                 "double's range or precision is refused, never rounded)"
                                 % (name, idx, np.format_float_scientific(x.flat[i]), x.dtype))
            return np.ascontiguousarray(f)
        return np.ascontiguousarray(x, dtype=np.float64)  # float16/32/64: exact
    raise TypeError("%s: expected a real array, got dtype %s" % (name, x.dtype))


def _text(o, v):
    """the option text of a Python value (exact; refused when not exact)"""
    kind = o["kind"]
    py = o["python"]
    if kind in ("size", "long", "u64"):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            if isinstance(v, numbers.Real) and float(v).is_integer():
                v = int(v)
            else:
                raise InputError(64, "%s: expected a whole number, got %r" % (py, v))
        return str(int(v))
    if kind == "double":
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise InputError(64, "%s: expected a number, got %r" % (py, v))
        if isinstance(v, numbers.Integral):
            return str(int(v))
        f = float(v)
        if not isinstance(v, float) and f != v:
            raise InputError(64, "%s: %r is not exactly a double" % (py, v))
        return repr(f)  # shortest round-trip: exactly f (nan, inf: refused by the library)
    if kind in ("string", "choice"):
        return os.fspath(v) if isinstance(v, os.PathLike) else str(v)
    if kind == "sizes":
        if isinstance(v, (str, bytes)):
            return str(v)
        return ",".join(_text(dict(o, kind="size"), x) for x in v)
    if kind in ("range", "shard"):
        if isinstance(v, str):
            return v
        a, b = v
        sep = ":" if kind == "range" else "/"
        return "%s%s%s" % (_text(dict(o, kind="size"), a), sep, _text(dict(o, kind="size"), b))
    raise InputError(64, "%s: cannot convert %r" % (py, v))


# ---- the commands -----------------------------------------------------------------

def _describe():
    p = lib.ac_commands_describe()
    if not p:
        raise MemoryError("attncheck: ac_commands_describe")
    try:
        return json.loads(ctypes.string_at(p).decode("utf-8"))
    finally:
        lib.ac_free(p)


COMMANDS = {c["name"]: c for c in _describe()["commands"]}


def _python_options(cmd):
    return [o for o in COMMANDS[cmd]["options"] if not o["program_only"]]


def run(command, *args, _aliases=None, **kwargs):
    """Run an attncheck command with the keyword arguments of its options
    (see help(attncheck.FUNCTION) or `attncheck COMMAND --help`); returns a
    Result.  None means "not given" (the command's default).  Input arrays
    (X, P, ...) are NumPy arrays or .npy file names."""
    if command not in COMMANDS:
        raise InputError(64, "'%s' is not an attncheck command" % command)
    opts = _python_options(command)
    byname = {o["python"]: o for o in opts}
    pos = [o for o in opts if o["positional"]]
    if len(args) > len(pos):
        raise TypeError("%s takes at most %d positional arguments (%s)"
                        % (command, len(pos), ", ".join(o["python"] for o in pos)))
    given = {}
    for o, v in zip(pos, args):
        given[o["python"]] = v
    for k, v in kwargs.items():
        if k not in byname:
            raise TypeError("%s has no option %r" % (command, k))
        if k in given:
            raise TypeError("%s: %r given twice" % (command, k))
        given[k] = v
    err = Err()
    h = _vp()
    _check(lib.ac_request_new(ctypes.byref(h), command.encode(), ctypes.byref(err)), err)
    try:
        for k, v in given.items():
            if v is None or v is False:
                continue
            o = byname[k]
            name = o["name"].encode()
            if o["array"] and not isinstance(v, (str, bytes, os.PathLike)):
                a = _exact_array(k, v)
                shape = (_sz * max(a.ndim, 1))(*a.shape)
                rc = lib.ac_request_set_array(h, name, a.ndim, shape,
                                              a.ctypes.data_as(c_double_p), ctypes.byref(err))
            elif o["kind"] == "flag":
                if v is not True:
                    raise InputError(64, "%s: expected True or False, got %r" % (k, v))
                rc = lib.ac_request_set(h, name, None, ctypes.byref(err))
            elif o["kind"] == "strings":  # a list: one value each (merge's files)
                vals = [v] if isinstance(v, (str, bytes, os.PathLike)) else list(v)
                rc = 0
                for x in vals:
                    rc = lib.ac_request_set(h, name, _text(dict(o, kind="string"), x).encode(),
                                            ctypes.byref(err))
                    if rc != 0:
                        break
            else:
                rc = lib.ac_request_set(h, name, _text(o, v).encode(), ctypes.byref(err))
            if rc != 0:  # the message names the option as Python spells it
                msg = err.msg.decode("utf-8", "replace")
                for pre in ("--%s" % o["name"], "option '--%s'" % o["name"]):
                    if msg.startswith(pre):
                        msg = k + msg[len(pre):]
                raise _error(rc, msg, err.fields.decode("utf-8", "replace"))
        _check(lib.ac_request_run(h, None, ctypes.byref(err)), err)
        p = lib.ac_request_json(h, 0)
        if not p:
            raise AttncheckError(70, "%s: the result could not be written" % command)
        try:
            obj = json.loads(ctypes.string_at(p).decode("utf-8"))
        finally:
            lib.ac_free(p)
        n = lib.ac_request_arrays(h, None, 0)  # how many, then all of them
        out = (OutArray * max(n, 1))()
        n = min(n, lib.ac_request_arrays(h, ctypes.cast(out, _vp), max(n, 1)))
        arrays = {}
        for i in range(n):
            shape = tuple(out[i].shape[k] for k in range(out[i].ndim))
            size = int(np.prod(shape)) if shape else 1
            a = np.ctypeslib.as_array(out[i].data, shape=(size,)).copy() if size else np.empty(0)
            arrays[out[i].name.decode()] = a.reshape(shape)
        r = Result(command, obj, arrays, _aliases)
        object.__setattr__(r, "status", lib.ac_request_status(h))
        return r
    finally:
        lib.ac_request_free(h)


def _docstring(cmd, extra=""):
    c = COMMANDS[cmd]
    lines = [c["summary"] + ".", "", c["description"], ""]
    if extra:
        lines += [extra, ""]
    lines.append("Arguments (the options of `attncheck %s`; None = the default):" % cmd)
    for o in _python_options(cmd):
        h = o["help"] or ""
        if o["default"] is not None:
            h += " (default %s)" % o["default"]
        kind = {"flag": "bool", "size": "int", "long": "int", "u64": "int", "double": "float",
                "string": "str", "choice": "str", "sizes": "list of int",
                "range": "(int, int)", "shard": "(int, int)",
                "strings": "list of str"}[o["kind"]]
        if o["array"]:
            kind = "array or .npy file name"
        lines.append("  %s (%s): %s" % (o["python"], kind, h))
    return "\n".join(lines)


def make_function(cmd, name=None, aliases=None, extra_doc="", prepare=None):
    """The Python function of command cmd: positional array inputs, every
    other option keyword-only.  prepare(arguments), when given, checks the
    arguments (e.g. the shapes of arrays) before the library sees them."""
    opts = _python_options(cmd)
    params = []
    for o in opts:
        kind = (inspect.Parameter.POSITIONAL_OR_KEYWORD if o["positional"]
                else inspect.Parameter.KEYWORD_ONLY)
        params.append(inspect.Parameter(o["python"], kind, default=None))

    sig = inspect.Signature(params)

    def f(*args, **kwargs):
        if prepare is not None:
            b = sig.bind(*args, **kwargs)
            prepare(b.arguments)
            return run(cmd, _aliases=aliases, **b.arguments)
        return run(cmd, *args, _aliases=aliases, **kwargs)

    f.__name__ = name or cmd.replace("-", "_")
    f.__qualname__ = f.__name__
    f.__signature__ = sig
    f.__doc__ = _docstring(cmd, extra_doc)
    return f
