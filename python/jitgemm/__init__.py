"""jitgemm: CUDA GEMM kernels specialised at run time for each problem.

The library (libjitgemm.so, C ABI in jitgemm/c_api.h) is loaded at the first
call that needs it, so importing works without a GPU or driver; that call
raises JitgemmError saying what is missing.

When PyTorch is installed, importing jitgemm registers the ops
torch.ops.jitgemm.linear, grouped_linear, gated_linear and matmul (see
jitgemm.ops), and jitgemm.nn offers a drop-in Linear and a GatedLinear.
"""

from __future__ import annotations

import importlib.util

from ._lib import JitgemmError, library_path
from .cache import (cache_stats, read_manifest, record, start_recording, stop_recording,
                    warmup)
from .plan import (ACTIVATIONS, BIAS_NONE, BIAS_PER_COLUMN, BIAS_PER_ROW, COL_MAJOR, DTYPES,
                   GATE_HALVES, GATE_NONE, ROW_MAJOR, Options, Plan, describe_problem,
                   gemm_problem)

__version__ = "0.1.0"

__all__ = [
    "ACTIVATIONS", "BIAS_NONE", "BIAS_PER_COLUMN", "BIAS_PER_ROW", "COL_MAJOR", "DTYPES",
    "GATE_HALVES", "GATE_NONE", "JitgemmError", "Options", "Plan", "ROW_MAJOR", "cache_stats",
    "describe_problem",
    "gemm_problem", "library_path", "read_manifest", "record", "start_recording",
    "stop_recording", "warmup",
]

if importlib.util.find_spec("torch") is not None:
    from . import nn, ops  # noqa: F401  (registers torch.ops.jitgemm.*)
