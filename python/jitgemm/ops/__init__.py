"""PyTorch ops backed by jitgemm plans, registered as torch.ops.jitgemm.*:

  linear(x, weight, bias=None, activation="none")
      nn.Linear's semantics: x (..., in), weight (out, in), bias (out,) -> (..., out),
      with the activation ("none", "relu", "gelu", "gelu_tanh", "silu") fused.
  grouped_linear(x, weight, bias=None, activation="none")
      x (..., G, in), weight (G, out, in), bias (G, out) -> (..., G, out): one
      linear per group, as one batched GEMM writing the (..., G, out) layout directly.
  matmul(a, b)
      a (M, K) or (batch, M, K) times b (K, N) or (batch, K, N), any row- or
      column-major strides (the backward passes use it).

gated_linear is not offered: the library has no gated (GLU) epilogue yet.

Every op runs on the current torch stream, has a fake kernel (so
torch.compile(fullgraph=True) traces it) and, for linear and grouped_linear,
a backward made of jitgemm GEMMs. Plans are made once per problem and reused
(see _plan_table for what happens inside CUDA graph capture).
"""

from ._plan_table import CaptureMissError, clear as clear_plans, plans, set_capture_policy
from ._plan_table import set_options
from . import _register  # noqa: F401  (registers the ops)


def linear(x, weight, bias=None, activation="none"):
    return _register.torch.ops.jitgemm.linear(x, weight, bias, activation)


def grouped_linear(x, weight, bias=None, activation="none"):
    return _register.torch.ops.jitgemm.grouped_linear(x, weight, bias, activation)


def matmul(a, b):
    return _register.torch.ops.jitgemm.matmul(a, b)


__all__ = ["CaptureMissError", "clear_plans", "grouped_linear", "linear", "matmul", "plans",
           "set_capture_policy", "set_options"]
