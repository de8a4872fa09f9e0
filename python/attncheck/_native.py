"""ctypes binding of attncheck/ffi.h (the library's flat entry points).

The library is found, in order, at $ATTNCHECK_LIBRARY (a path to
libattncheck.so, used by the tests of the build tree), next to the installed
package's configured libdir, and by the dynamic linker's search.  The sizes
of the mirrored structures are compared with the library's at load time, so
a package and a library of different versions fail at import with a clear
message instead of reading garbage."""

import ctypes
import ctypes.util
import os

from . import _config

c_double_p = ctypes.POINTER(ctypes.c_double)

ERR_MSG_MAX = 512
ERR_FIELDS_MAX = 64


class Err(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int),
                ("msg", ctypes.c_char * ERR_MSG_MAX),
                ("fields", ctypes.c_char * ERR_FIELDS_MAX)]


class Cert(ctypes.Structure):
    _fields_ = [("verdict", ctypes.c_int),
                ("quantity", ctypes.c_char * 96),
                ("rel", ctypes.c_int),
                ("tau", ctypes.c_double),
                ("stage", ctypes.c_int),
                ("prec", ctypes.c_long),
                ("stages_tried", ctypes.c_int),
                ("lo", ctypes.c_double),
                ("hi", ctypes.c_double),
                ("seconds", ctypes.c_double),
                ("method", ctypes.c_char * 128)]


def _candidates():
    env = os.environ.get("ATTNCHECK_LIBRARY")
    if env:
        return [env]
    names = []
    if _config.LIBDIR and not _config.LIBDIR.startswith("@"):
        names.append(os.path.join(_config.LIBDIR, "libattncheck.so.0"))
    found = ctypes.util.find_library("attncheck")
    if found:
        names.append(found)
    names.append("libattncheck.so.0")
    return names


def _open():
    errors = []
    for name in _candidates():
        try:
            return ctypes.CDLL(name)
        except OSError as e:
            errors.append(str(e))
    raise ImportError("attncheck: cannot load the library libattncheck (set ATTNCHECK_LIBRARY "
                      "to its path): " + "; ".join(errors))

lib = _open()

lib.ac_ffi_version.restype = ctypes.c_int
lib.ac_ffi_sizeof.restype = ctypes.c_size_t
lib.ac_ffi_sizeof.argtypes = [ctypes.c_int]
if lib.ac_ffi_version() != 2:
    raise ImportError("attncheck: the library's interface version %d is not 2"
                      % lib.ac_ffi_version())
for _which, _cls in enumerate([Err, Cert]):
    if lib.ac_ffi_sizeof(_which) != ctypes.sizeof(_cls):
        raise ImportError("attncheck: the library's %s has %d bytes, the package expects %d: "
                          "package and library are of different versions"
                          % (_cls.__name__, lib.ac_ffi_sizeof(_which), ctypes.sizeof(_cls)))

_sz = ctypes.c_size_t
_u64 = ctypes.c_uint64
_vp = ctypes.c_void_p
_ep = ctypes.POINTER(Err)

lib.ac_ffi_fnv1a64.restype = _u64
lib.ac_ffi_fnv1a64.argtypes = [c_double_p, _sz]

lib.ac_ffi_t1_generate.restype = ctypes.c_int
lib.ac_ffi_t1_generate.argtypes = [c_double_p, c_double_p, _sz, _sz, ctypes.c_int, _sz, _u64, _ep]

lib.ac_ffi_t2_generate.restype = ctypes.c_int
lib.ac_ffi_t2_generate.argtypes = [c_double_p, c_double_p, _sz, _sz, _sz, ctypes.c_int, _u64, _ep]
lib.ac_ffi_mh_forward.restype = ctypes.c_int
lib.ac_ffi_mh_forward.argtypes = [c_double_p, c_double_p, _sz, _sz, _sz, c_double_p, _sz, _ep]
lib.ac_ffi_mh_save_dir.restype = ctypes.c_int
lib.ac_ffi_mh_save_dir.argtypes = [c_double_p, _sz, _sz, _sz, ctypes.c_char_p, ctypes.c_char, _ep]

lib.ac_ffi_head_certify.restype = ctypes.c_int
lib.ac_ffi_head_certify.argtypes = [ctypes.POINTER(Cert), c_double_p, _sz, _sz, c_double_p,
                                    c_double_p, _sz, c_double_p, ctypes.c_double, _ep]
