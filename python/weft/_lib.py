"""Loading libweft.so and declaring its C API for ctypes.

The library is looked up, in order:
  1. WEFTPY_LIBRARY, a path to libweft.so (not WEFT_*: the C library warns
     about WEFT_* variables it does not know);
  2. a copy shipped inside the package (weft/lib/libweft.so);
  3. the build tree of a source checkout (<repo>/build/lib/libweft.so, the
     package being <repo>/python/weft), which is what `make python` uses;
  4. the system loader (libweft.so.0 after `make install`).

The library is loaded with RTLD_GLOBAL: the native torch backend links
against no libweft of its own and uses this one.

ctypes releases the GIL around every foreign call, so a blocking weft call
(weft_wait, weft_comm_create, a blocking collective) never stalls other
Python threads.
"""
import ctypes
import ctypes.util
import os

# Values from include/weft.h; they are part of the ABI and never change.
STATUS_NAMES = {
    0: "OK", 1: "INPROGRESS", -1: "ERR_INVALID_ARG", -2: "ERR_INVALID_USAGE",
    -3: "ERR_NO_MEMORY", -4: "ERR_SYSTEM", -5: "ERR_TRANSPORT",
    -6: "ERR_REMOTE", -7: "ERR_TIMEOUT", -8: "ERR_ABORTED",
    -9: "ERR_MISMATCH", -10: "ERR_UNSUPPORTED", -11: "ERR_AUTH",
    -12: "ERR_CUDA", -13: "ERR_INTERNAL", -14: "ERR_AGAIN",
}
OK = 0
INPROGRESS = 1

# weft_dtype_t
INT8, UINT8, INT32, UINT32, INT64, UINT64 = 0, 1, 2, 3, 4, 5
FLOAT16, BFLOAT16, FLOAT32, FLOAT64 = 6, 7, 8, 9
INT16, UINT16 = 10, 11
FLOAT8_E4M3, FLOAT8_E5M2 = 12, 13   # OCP FP8; e4m3 is the "fn" variant
DTYPE_NAMES = {
    "int8": INT8, "uint8": UINT8, "int16": INT16, "uint16": UINT16,
    "int32": INT32, "uint32": UINT32, "int64": INT64, "uint64": UINT64,
    "float16": FLOAT16, "bfloat16": BFLOAT16, "float32": FLOAT32,
    "float64": FLOAT64, "float8_e4m3": FLOAT8_E4M3,
    "float8_e5m2": FLOAT8_E5M2,
}
DTYPE_SIZES = {INT8: 1, UINT8: 1, INT16: 2, UINT16: 2, INT32: 4, UINT32: 4,
               INT64: 8, UINT64: 8, FLOAT16: 2, BFLOAT16: 2, FLOAT32: 4,
               FLOAT64: 8, FLOAT8_E4M3: 1, FLOAT8_E5M2: 1}

# weft_op_t; the bitwise and logical ops take integer dtypes only
SUM, PROD, MIN, MAX, AVG = 0, 1, 2, 3, 4
BAND, BOR, BXOR, LAND, LOR = 5, 6, 7, 8, 9
OP_NAMES = {"sum": SUM, "prod": PROD, "product": PROD, "min": MIN,
            "max": MAX, "avg": AVG, "mean": AVG, "band": BAND, "bor": BOR,
            "bxor": BXOR, "land": LAND, "lor": LOR}

# weft_comm_params_t.field_mask bits
PARAM_RANK = 1 << 0
PARAM_SIZE = 1 << 1
PARAM_RENDEZVOUS = 1 << 2
PARAM_JOB_ID = 1 << 3
PARAM_TIMEOUT = 1 << 4
PARAM_CONFIG = 1 << 5
PARAM_TOKEN = 1 << 6

UNDEFINED = -1  # WEFT_UNDEFINED, the colour that opts out of a split
ANY_SOURCE = -2  # WEFT_ANY_SOURCE, a receive from whichever rank sends first


class CommParams(ctypes.Structure):
    """weft_comm_params_t (fields are only ever appended in C)."""
    _fields_ = [
        ("field_mask", ctypes.c_uint64),
        ("rank", ctypes.c_int),
        ("size", ctypes.c_int),
        ("rendezvous", ctypes.c_char_p),
        ("job_id", ctypes.c_char_p),
        ("timeout_ms", ctypes.c_int64),
        ("config", ctypes.c_char_p),
        ("token", ctypes.c_char_p),
    ]


_c = ctypes
_vp, _sz, _int, _st = _c.c_void_p, _c.c_size_t, _c.c_int, _c.c_int
_P = _c.POINTER

# name: (argument types); every function returns weft_status_t (an int)
# unless listed in _RESTYPES.
_PROTOTYPES = {
    "weft_strerror": [_st],
    "weft_status_name": [_st],
    "weft_get_version": [],
    "weft_build_info": [],
    "weft_comm_create": [_P(CommParams), _P(_vp)],
    "weft_comm_init": [_P(_vp)],
    "weft_comm_destroy": [_vp],
    "weft_comm_abort": [_vp],
    "weft_comm_split": [_vp, _int, _int, _P(_vp)],
    "weft_comm_dup": [_vp, _P(_vp)],
    "weft_comm_shrink": [_vp, _P(_vp)],
    "weft_comm_rank": [_vp, _P(_int)],
    "weft_comm_size": [_vp, _P(_int)],
    "weft_comm_get_error": [_vp, _P(_c.c_char_p)],
    "weft_comm_query": [_vp, _int, _P(_int)],
    "weft_iallreduce": [_vp, _vp, _sz, _int, _int, _vp, _P(_vp)],
    "weft_ibroadcast": [_vp, _vp, _sz, _int, _int, _vp, _P(_vp)],
    "weft_ireduce": [_vp, _vp, _sz, _int, _int, _int, _vp, _P(_vp)],
    "weft_iallgather": [_vp, _vp, _sz, _int, _vp, _P(_vp)],
    "weft_ireduce_scatter": [_vp, _vp, _sz, _int, _int, _vp, _P(_vp)],
    "weft_ialltoall": [_vp, _vp, _sz, _int, _vp, _P(_vp)],
    "weft_ibarrier": [_vp, _P(_vp)],
    "weft_igather": [_vp, _vp, _sz, _int, _int, _vp, _P(_vp)],
    "weft_iscatter": [_vp, _vp, _sz, _int, _int, _vp, _P(_vp)],
    "weft_iallgatherv": [_vp, _sz, _vp, _P(_sz), _P(_sz), _int, _vp,
                         _P(_vp)],
    "weft_igatherv": [_vp, _sz, _vp, _P(_sz), _P(_sz), _int, _int, _vp,
                      _P(_vp)],
    "weft_iscatterv": [_vp, _P(_sz), _P(_sz), _vp, _sz, _int, _int, _vp,
                       _P(_vp)],
    "weft_ialltoallv": [_vp, _P(_sz), _P(_sz), _vp, _P(_sz), _P(_sz), _int,
                        _vp, _P(_vp)],
    "weft_ireduce_scatterv": [_vp, _vp, _P(_sz), _int, _int, _vp, _P(_vp)],
    "weft_isend_tag": [_vp, _sz, _int, _int, _int, _vp, _P(_vp)],
    "weft_irecv_tag": [_vp, _sz, _int, _int, _int, _vp, _P(_vp)],
    "weft_request_source": [_vp, _P(_int)],
    "weft_test": [_vp],
    "weft_wait": [_vp],
    "weft_request_free": [_vp],
    "weft_server_start": [_c.c_char_p, _P(_vp)],
    "weft_server_address": [_vp],
    "weft_server_stop": [_vp],
}
_RESTYPES = {
    "weft_strerror": _c.c_char_p,
    "weft_status_name": _c.c_char_p,
    "weft_build_info": _c.c_char_p,
    "weft_server_address": _c.c_char_p,
}


def _candidates():
    env = os.environ.get("WEFTPY_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "lib", "libweft.so")
    yield os.path.normpath(os.path.join(here, os.pardir, os.pardir, "build",
                                        "lib", "libweft.so"))
    found = ctypes.util.find_library("weft")
    yield found or "libweft.so.0"


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (missing)")
            continue
        try:
            # global: the native torch backend (weft/torch/_weft_c10d)
            # resolves its weft_* symbols against this very library
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        for name, args in _PROTOTYPES.items():
            fn = getattr(lib, name)
            fn.argtypes = args
            fn.restype = _RESTYPES.get(name, _c.c_int)
        lib.weft_path = path
        return lib
    raise ImportError(
        "weft: cannot load libweft.so; build it with `make` at the project "
        "root or set WEFTPY_LIBRARY=/path/to/libweft.so. Tried: "
        + "; ".join(tried))


lib = _load()


def status_name(status):
    """'ERR_TIMEOUT' for -7: the name without the WEFT_ prefix."""
    return STATUS_NAMES.get(status) or lib.weft_status_name(status).decode()


def strerror(status):
    return lib.weft_strerror(status).decode()
