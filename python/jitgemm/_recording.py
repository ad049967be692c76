"""Recording the problems this process plans into a manifest (as JITGEMM_RECORD does).

Thread safety: start/stop and on_plan_created may be called from any thread.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Optional

from . import _lib

_lock = threading.Lock()
_path: Optional[bytes] = None


def start(path: str) -> None:
    global _path
    with _lock:
        _path = os.fsencode(os.path.abspath(path))


def stop() -> None:
    global _path
    with _lock:
        _path = None


def active_path() -> Optional[str]:
    return os.fsdecode(_path) if _path is not None else None


def on_plan_created(problem: _lib.Problem, options: Optional[_lib.Options]) -> None:
    path = _path
    if path is None:
        return
    lib = _lib.load()
    status = lib.jitgemm_manifest_add(path, ctypes.byref(problem),
                                      ctypes.byref(options) if options is not None else None)
    _lib.check(status, f"jitgemm: recording into {os.fsdecode(path)}")
