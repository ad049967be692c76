"""Plans from Python: a GEMM problem bound to the kernel (or cuBLAS) that serves it.

Mirrors jitgemm/plan.h through the C ABI. `Plan(problem)` does all slow work
(validation, kernel choice, compile or cache load); `plan.run(...)` only
launches, with device pointers given as integers (e.g. `tensor.data_ptr()`).

    p = jitgemm.gemm_problem(8, 2048, 4096, "bf16")
    p.b.layout = jitgemm.COL_MAJOR            # an nn.Linear weight (N, K) is B^T
    p.bias_mode = jitgemm.BIAS_PER_COLUMN
    p.activation = jitgemm.ACTIVATIONS["relu"]
    plan = jitgemm.Plan(p)
    plan.run(a=x_ptr, b=w_ptr, d=y_ptr, bias=b_ptr, stream=stream_handle)

Thread safety: as plan.h. A Plan may run from many threads; runs of one plan
must not overlap in time on different streams (split-K kernels keep partial
sums in the plan's workspace).
"""

from __future__ import annotations

import ctypes
import dataclasses
from typing import Optional

from . import _lib, _recording

DTYPES = {"f32": 0, "f16": 1, "bf16": 2}
ROW_MAJOR, COL_MAJOR = 0, 1
BIAS_NONE, BIAS_PER_COLUMN, BIAS_PER_ROW = 0, 1, 2
# problem.gate: GATE_HALVES makes B K x 2N = [gate | up] and D = act(gate) * up.
GATE_NONE, GATE_HALVES = 0, 1
# The names PyTorch users know, as jitgemm::Activation values.
ACTIVATIONS = {"none": 0, "relu": 1, "gelu_tanh": 2, "gelu": 3, "silu": 4}

BACKENDS = {"auto": 0, "jit": 1, "cublas": 2}
TUNINGS = {"heuristic": 0, "fast": 1, "exhaustive": 2}
REGIMES = {"auto": 0, "streaming": 1, "resident": 2}


def gemm_problem(m: int, n: int, k: int, dtype: str = "f32") -> _lib.Problem:
    """A packed row-major m x n x k problem of one type ("f32", "f16", "bf16")."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype: expected one of {sorted(DTYPES)}, got {dtype!r}")
    p = _lib.Problem()
    _lib.load().jitgemm_problem_init(ctypes.byref(p), m, n, k, DTYPES[dtype])
    return p


@dataclasses.dataclass(frozen=True)
class Options:
    """jitgemm::Options. `Options.from_environment()` applies the JITGEMM_* variables."""

    backend: str = "auto"
    tuning: str = "fast"
    jit_enabled: bool = True
    allow_tf32: bool = False
    pdl: bool = True
    constant_b: bool = False
    pointer_alignment: int = 16
    win_margin: float = 0.03
    # Where B lives when the plan runs, for timing its candidates: "streaming"
    # (from DRAM), "resident" (in L2) or "auto" (both where B fits in L2).
    regime: str = "auto"

    @staticmethod
    def from_environment() -> "Options":
        c = _lib.Options()
        _lib.load().jitgemm_options_init(ctypes.byref(c))
        backend = {v: k for k, v in BACKENDS.items()}[c.backend]
        tuning = {v: k for k, v in TUNINGS.items()}[c.tuning]
        regime = {v: k for k, v in REGIMES.items()}[c.regime]
        return Options(backend, tuning, bool(c.jit_enabled), bool(c.allow_tf32), bool(c.pdl),
                       bool(c.constant_b), c.pointer_alignment, c.win_margin, regime)

    def to_c(self) -> _lib.Options:
        if self.backend not in BACKENDS:
            raise ValueError(f"options.backend: expected one of {sorted(BACKENDS)}, "
                             f"got {self.backend!r}")
        if self.tuning not in TUNINGS:
            raise ValueError(f"options.tuning: expected one of {sorted(TUNINGS)}, "
                             f"got {self.tuning!r}")
        if self.regime not in REGIMES:
            raise ValueError(f"options.regime: expected one of {sorted(REGIMES)}, "
                             f"got {self.regime!r}")
        return _lib.Options(BACKENDS[self.backend], TUNINGS[self.tuning], int(self.jit_enabled),
                            int(self.allow_tf32), int(self.pdl), int(self.constant_b),
                            self.pointer_alignment, REGIMES[self.regime], self.win_margin)


def describe_problem(p: _lib.Problem) -> str:
    """A short form of a problem for messages, e.g. "bf16 8x2048x4096 r.c->r bias relu"."""
    names = {v: k for k, v in DTYPES.items()}
    acts = {v: k for k, v in ACTIVATIONS.items()}
    lay = lambda o: "rc"[o.layout]  # noqa: E731
    text = (f"{names.get(p.a.type, p.a.type)} {p.m}x{p.n}x{p.k}"
            f"{f' batch {p.batch_count}' if p.batch_count > 1 else ''} "
            f"{lay(p.a)}.{lay(p.b)}->{lay(p.d)}")
    if p.bias_mode:
        text += " bias"
    if p.activation:
        text += f" {acts.get(p.activation, p.activation)}"
    if p.gate:
        text += " gated"
    return text


class Plan:
    """One problem bound to its implementation. Creating it may compile and time kernels."""

    __slots__ = ("_handle", "_run", "problem", "description")

    def __init__(self, problem: _lib.Problem, options: Optional[Options] = None):
        lib = _lib.load()
        c_options = options.to_c() if options is not None else None
        handle = ctypes.c_void_p()
        status = lib.jitgemm_plan_create_with_options(
            ctypes.byref(problem), ctypes.byref(c_options) if c_options is not None else None,
            ctypes.byref(handle))
        _lib.check(status, f"jitgemm: planning {describe_problem(problem)}")
        self._handle = handle.value
        self._run = lib.jitgemm_plan_run
        self.problem = problem
        self.description = lib.jitgemm_plan_describe(self._handle).decode()
        _recording.on_plan_created(problem, c_options)

    def run(self, a: int, b: int, d: int, c: int = 0, bias: int = 0, stream: int = 0) -> None:
        """Launches on `stream` (a cudaStream_t as an integer; 0 is the legacy default stream)."""
        status = self._run(self._handle, a, b, c, d, bias, stream)
        if status != 0:
            _lib.check(status, f"jitgemm: running {describe_problem(self.problem)}")

    def __repr__(self) -> str:
        return f"Plan({describe_problem(self.problem)}: {self.description})"

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle and _lib._lib is not None:
            _lib._lib.jitgemm_plan_destroy(handle)
            self._handle = None
