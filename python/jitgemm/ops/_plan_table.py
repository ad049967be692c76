"""The ops' plans: one per (options, problem, device, pointer alignment, stream), made once.

A call whose plan exists costs one dict lookup (the ops keep their own memo of
the plans they got, dropped through on_change when set_options or clear runs).
A miss creates the plan (slow: may compile and time kernels) and keeps it for
the life of the process, so graphs captured with it stay valid.

Inside CUDA graph capture a plan must not compile or time anything. A miss
there first takes the plan that the same problem already has on another
stream (the usual case: eager warm-up on one stream, capture on torch's
capture stream); otherwise, under the default policy "heuristic", it plans
with compiling off and no timing (a cached kernel or cuBLAS; one warning), or
under "error" raises CaptureMissError. A plan shared with a capture serves
the graph's replays and that other stream: do not run the two concurrently
(split-K kernels keep partial sums in the plan's workspace).

Thread safety: lookups from any thread; creation is serialised.
"""

from __future__ import annotations

import dataclasses
import threading
import warnings
from typing import Callable, Dict, List, Optional, Tuple

import torch

from .. import _lib
from ..plan import Options, Plan, describe_problem

_create_lock = threading.Lock()
# One pair of tables per Options value given to set_options (None: the
# environment's), so switching options never hands out a plan made with others.
_tables: Dict[Optional[Options], Tuple[Dict[tuple, Plan], Dict[tuple, Plan]]] = {None: ({}, {})}
_plans, _any_stream = _tables[None]
_options: Optional[Options] = None
_capture_policy = "heuristic"
_capture_warned = False
# Called (under the creation lock) whenever the plans handed out may change:
# caches of plans outside this table (the ops' per-signature memo) drop theirs.
_change_hooks: List[Callable[[], None]] = []


def on_change(hook: Callable[[], None]) -> None:
    """Calls `hook` after set_options and clear."""
    _change_hooks.append(hook)


class CaptureMissError(RuntimeError):
    """A problem met for the first time inside CUDA graph capture, with policy "error"."""


def set_options(options: Optional[Options]) -> None:
    """Options for the plans used from now on (None: the JITGEMM_* environment's).

    Plans made under other options are kept (graphs captured with them stay valid)."""
    global _options, _plans, _any_stream
    with _create_lock:
        _options = options
        _plans, _any_stream = _tables.setdefault(options, ({}, {}))
        for hook in _change_hooks:
            hook()


def set_capture_policy(policy: str) -> None:
    """"heuristic" (default) or "error": what a plan first needed inside capture does."""
    global _capture_policy
    if policy not in ("heuristic", "error"):
        raise ValueError(f"capture policy: expected 'heuristic' or 'error', got {policy!r}")
    _capture_policy = policy


def plans() -> List[Tuple[str, str]]:
    """(problem, what serves it) for every plan the ops have made in this process."""
    return [(describe_problem(p.problem), p.description)
            for table, _ in list(_tables.values()) for p in list(table.values())]


def clear() -> None:
    """Drops the plans. REQUIRES: no CUDA graph captured with them will replay again."""
    with _create_lock:
        for table, any_stream in _tables.values():
            table.clear()
            any_stream.clear()
        for hook in _change_hooks:
            hook()


def get(problem_key: tuple, stream: int, device_index: int, align: int,
        build: Callable[[], _lib.Problem]) -> Plan:
    plan = _plans.get((problem_key, stream))
    if plan is None:
        plan = _create(problem_key, stream, device_index, align, build)
    return plan


def _create(problem_key: tuple, stream: int, device_index: int, align: int,
            build: Callable[[], _lib.Problem]) -> Plan:
    global _capture_warned
    with _create_lock:
        plan = _plans.get((problem_key, stream))
        if plan is not None:
            return plan
        options = _options if _options is not None else Options.from_environment()
        options = dataclasses.replace(options, pointer_alignment=min(align,
                                                                     options.pointer_alignment))
        capturing = torch.cuda.is_current_stream_capturing()
        if capturing:
            plan = _any_stream.get(problem_key)
            if plan is None:
                problem = build()
                if _capture_policy == "error":
                    raise CaptureMissError(
                        f"jitgemm: {describe_problem(problem)} was first met inside CUDA graph "
                        "capture, where it must not compile; run the op once before capturing "
                        "(or use jitgemm.ops.set_capture_policy('heuristic'))")
                options = dataclasses.replace(options, jit_enabled=False, tuning="heuristic")
                with torch.cuda.device(device_index):
                    plan = Plan(problem, options)
                if not _capture_warned:
                    _capture_warned = True
                    warnings.warn(
                        f"jitgemm: {describe_problem(problem)} was planned inside CUDA graph "
                        f"capture without compiling or timing ({plan.description}); run the op "
                        "once before capturing for a tuned plan", stacklevel=4)
        else:
            with torch.cuda.device(device_index):
                plan = Plan(build(), options)
        _plans[(problem_key, stream)] = plan
        _any_stream.setdefault(problem_key, plan)
        return plan
