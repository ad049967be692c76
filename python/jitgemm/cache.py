"""The kernel cache seen from Python: statistics, recording and warm-up.

    jitgemm.cache_stats()          # {"hits": ..., "compiles": ..., "root": ..., ...}
    with jitgemm.record("model.json"):
        model(x)                    # every problem planned here is added to model.json
    jitgemm.warmup("model.json")   # later, on the target GPU: plan each (compile, tune, store)

For warming a cache for a GPU that is not present (offline, by arch), use the
jitgemm-warmup tool with the same manifest.

Thread safety: all functions may be called from any thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from typing import Dict, Iterable, Iterator, List, Optional, Tuple, Union

from . import _lib, _recording
from .plan import Options, Plan, describe_problem


def cache_stats() -> Dict[str, Union[int, str]]:
    """Counters of this process's kernel cache and what its writable root holds now."""
    stats = _lib.CacheStats()
    _lib.check(_lib.load().jitgemm_cache_stats(ctypes.byref(stats)), "jitgemm: cache stats")
    out: Dict[str, Union[int, str]] = {
        name: getattr(stats, name) for name, _ in _lib.CacheStats._fields_[:-2]}
    out["mode"] = stats.mode.decode()
    out["root"] = stats.root.decode(errors="replace")
    return out


def start_recording(path: str) -> None:
    """From now on each problem planned from Python is added to the manifest at `path`."""
    _recording.start(path)


def stop_recording() -> None:
    _recording.stop()


@contextlib.contextmanager
def record(path: str) -> Iterator[str]:
    """Records the problems planned inside the `with` block into the manifest at `path`."""
    previous = _recording.active_path()
    _recording.start(path)
    try:
        yield path
    finally:
        if previous is None:
            _recording.stop()
        else:
            _recording.start(previous)


def read_manifest(path: str) -> List[_lib.Problem]:
    """The problems a manifest lists (schema: docs/manifest.md)."""
    lib = _lib.load()
    encoded = os.fsencode(path)
    count = ctypes.c_int64(0)
    _lib.check(lib.jitgemm_manifest_read(encoded, None, 0, ctypes.byref(count)),
               "jitgemm: reading a manifest")
    problems = (_lib.Problem * max(count.value, 1))()
    _lib.check(lib.jitgemm_manifest_read(encoded, problems, count.value, ctypes.byref(count)),
               "jitgemm: reading a manifest")
    return list(problems[:count.value])


def warmup(problems: Union[str, Iterable[_lib.Problem]],
           options: Optional[Options] = None) -> List[Tuple[str, str]]:
    """Plans every problem (a manifest path or Problem structs) on the current GPU.

    Compiles and times what the cache lacks and stores the decisions, so later
    processes sharing the cache plan them without compiling. Plans use `options`
    (default: the environment's, as the ops' plans do), not a manifest's own
    options: a stored decision serves only plans made with the same options. Returns
    (problem, what serves it) pairs. Raises JitgemmError at the first failure.
    """
    if isinstance(problems, (str, os.PathLike)):
        problems = read_manifest(os.fspath(problems))
    done = []
    for p in problems:
        plan = Plan(p, options)
        done.append((describe_problem(p), plan.description))
    return done
