"""Finds and loads libjitgemm, and declares its C ABI (jitgemm/c_api.h) for ctypes.

The library is loaded at the first call that needs it, never at import, so
`import jitgemm` works on a machine without a GPU, a driver or even the CUDA
runtime libraries; that first call then says what is missing.

Thread safety: load() may be called from any thread; the library is loaded once.
"""

from __future__ import annotations

import ctypes
import os
import pathlib
import threading

# Same values as jitgemm_status_t (absl::StatusCode).
STATUS_NAMES = {
    0: "OK",
    3: "INVALID_ARGUMENT",
    5: "NOT_FOUND",
    8: "RESOURCE_EXHAUSTED",
    9: "FAILED_PRECONDITION",
    12: "UNIMPLEMENTED",
    13: "INTERNAL",
    14: "UNAVAILABLE",
    15: "DATA_LOSS",
}
INVALID_ARGUMENT = 3
FAILED_PRECONDITION = 9


class JitgemmError(RuntimeError):
    """A failed jitgemm call; `code` is the jitgemm_status_t, `str()` the library's message."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.code_name = STATUS_NAMES.get(code, str(code))


class Operand(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int32),
        ("layout", ctypes.c_int32),
        ("ld", ctypes.c_int64),
        ("batch_stride", ctypes.c_int64),
    ]


class Problem(ctypes.Structure):
    _fields_ = [
        ("m", ctypes.c_int64),
        ("n", ctypes.c_int64),
        ("k", ctypes.c_int64),
        ("batch_count", ctypes.c_int64),
        ("a", Operand),
        ("b", Operand),
        ("c", Operand),
        ("d", Operand),
        ("alpha", ctypes.c_float),
        ("beta", ctypes.c_float),
        ("bias_mode", ctypes.c_int32),
        ("activation", ctypes.c_int32),
        ("bias_batch_stride", ctypes.c_int64),
        ("gate", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
    ]


class Options(ctypes.Structure):
    _fields_ = [
        ("backend", ctypes.c_int32),
        ("tuning", ctypes.c_int32),
        ("jit_enabled", ctypes.c_int32),
        ("allow_tf32", ctypes.c_int32),
        ("pdl", ctypes.c_int32),
        ("constant_b", ctypes.c_int32),
        ("pointer_alignment", ctypes.c_int32),
        ("regime", ctypes.c_int32),
        ("win_margin", ctypes.c_double),
    ]


class CacheStats(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_uint64)
        for name in (
            "hits",
            "misses",
            "shared",
            "compiles",
            "stores",
            "corrupt",
            "evictions",
            "lock_waits",
            "store_failures",
            "entries",
            "bytes",
        )
    ] + [("mode", ctypes.c_char_p), ("root", ctypes.c_char_p)]


_P = ctypes.POINTER
_SIGNATURES = {
    "jitgemm_problem_init": (None, [_P(Problem), ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                    ctypes.c_int32]),
    "jitgemm_options_init": (None, [_P(Options)]),
    "jitgemm_plan_create_with_options": (ctypes.c_int, [_P(Problem), _P(Options),
                                                        _P(ctypes.c_void_p)]),
    "jitgemm_plan_run": (ctypes.c_int, [ctypes.c_void_p] * 7),
    "jitgemm_plan_describe": (ctypes.c_char_p, [ctypes.c_void_p]),
    "jitgemm_plan_destroy": (None, [ctypes.c_void_p]),
    "jitgemm_last_error": (ctypes.c_char_p, []),
    "jitgemm_cache_stats": (ctypes.c_int, [_P(CacheStats)]),
    "jitgemm_manifest_add": (ctypes.c_int, [ctypes.c_char_p, _P(Problem), _P(Options)]),
    "jitgemm_manifest_read": (ctypes.c_int, [ctypes.c_char_p, _P(Problem), ctypes.c_int64,
                                             _P(ctypes.c_int64)]),
}

_lock = threading.Lock()
_lib = None

PACKAGE_LIB_DIR = pathlib.Path(__file__).resolve().parent / "lib"


def library_path() -> pathlib.Path:
    """JITGEMM_LIBRARY if set, else the libjitgemm.so installed inside the package."""
    override = os.environ.get("JITGEMM_LIBRARY")
    if override:
        return pathlib.Path(override)
    return PACKAGE_LIB_DIR / "libjitgemm.so.0"


def _preload_bundled(directory: pathlib.Path) -> None:
    # A self-contained folder (build_local.sh) carries Abseil, xxHash, hiredis
    # and libcrypto beside libjitgemm.so. Their own dependencies on each other carry no RUNPATH, so
    # load them until nothing more loads: a library whose SONAME is already
    # loaded satisfies the next one's dependency.
    pending = sorted(p for p in directory.glob("lib*.so*")
                     if p.name.startswith(("libabsl_", "libxxhash", "libhiredis", "libcrypto")))
    while pending:
        left = []
        for p in pending:
            try:
                ctypes.CDLL(str(p), mode=ctypes.RTLD_GLOBAL)
            except OSError:
                left.append(p)
        if len(left) == len(pending):
            return  # the loader's message for libjitgemm will name what is missing
        pending = left


def load():
    """Returns the loaded library; raises JitgemmError saying what is missing."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        path = library_path()
        if not path.exists():
            raise JitgemmError(
                FAILED_PRECONDITION,
                f"jitgemm: {path} does not exist; install the package with "
                "`pip install ./python` (or set JITGEMM_LIBRARY to a built libjitgemm.so)")
        _preload_bundled(path.parent)
        try:
            lib = ctypes.CDLL(str(path))
        except OSError as e:
            raise JitgemmError(
                FAILED_PRECONDITION,
                f"jitgemm: cannot load {path}: {e}. It needs the CUDA 13 runtime libraries "
                "(libcudart.so.13, libcublasLt.so.13), and Abseil, xxHash, hiredis and OpenSSL's "
                "libcrypto on the loader's path") from None
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        _lib = lib
        return lib


def last_error() -> str:
    return load().jitgemm_last_error().decode(errors="replace")


def check(status: int, context: str = "") -> None:
    """Raises JitgemmError for a failed call; `context` prefixes the message."""
    if status != 0:
        message = last_error()
        raise JitgemmError(status, f"{context}: {message}" if context else message)
