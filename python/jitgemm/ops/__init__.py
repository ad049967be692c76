"""PyTorch ops backed by jitgemm plans, registered as torch.ops.jitgemm.*:

  linear(x, weight, bias=None, activation="none")
      nn.Linear's semantics: x (..., in), weight (out, in), bias (out,) -> (..., out),
      with the activation ("none", "relu", "gelu", "gelu_tanh", "silu") fused.
  grouped_linear(x, weight, bias=None, activation="none")
      x (..., G, in), weight (G, out, in), bias (G, out) -> (..., G, out): one
      linear per group, as one batched GEMM writing the (..., G, out) layout directly.
  gated_linear(x, weight, bias=None, activation="silu")
      x (..., in), weight (2 * out, in) = torch.cat([W_gate, W_up]), bias (2 * out,)
      -> (..., out) = act(x W_gate^T + b_gate) * (x W_up^T + b_up): SwiGLU ("silu"),
      GeGLU ("gelu", "gelu_tanh"), ReGLU ("relu") or the bilinear GLU ("none"), one
      GEMM whose epilogue multiplies the halves (a fused sm90, small_m or sm80 kernel,
      or cuBLAS's product of both halves and a gate pass: whichever is faster).
  matmul(a, b)
      a (M, K) or (batch, M, K) times b (K, N) or (batch, K, N), any row- or
      column-major strides (the backward passes use it).

Every op runs on the current torch stream, has a fake kernel (so
torch.compile(fullgraph=True) traces it) and, for linear, grouped_linear and
gated_linear, a backward made of jitgemm GEMMs (and elementwise torch ops).
Plans are made once per problem and reused (see _plan_table for what happens
inside CUDA graph capture). Calls that need no autograd go from the
dispatcher's AutogradCUDA key straight to the CUDA kernel (see _fast_path).

jitgemm.ops.linear, grouped_linear and gated_linear (and jitgemm.nn) are the
same ops from Python; in eager code that needs no autograd they call the CUDA
kernel without going through the dispatcher, which saves its per-call host cost.
"""

import torch

from ._plan_table import CaptureMissError, clear as clear_plans, plans, set_capture_policy
from ._plan_table import set_options
from . import _kernels, _register  # noqa: F401  (registers the ops)

_is_compiling = getattr(torch.compiler, "is_compiling", lambda: False)


def _needs_autograd(*tensors) -> bool:
    if not torch.is_grad_enabled():
        return False
    for t in tensors:  # a loop, not any(generator): this runs on every call
        if t is not None and t.requires_grad:
            return True
    return False


def _direct(x, *params) -> bool:
    """True when the CUDA kernel may be called without the dispatcher: a plain CUDA tensor
    (no fake, functional or other subclass), not under torch.compile's tracing, and nothing
    needing autograd. Skipping the dispatcher saves its per-call cost; profilers and
    dispatch modes do not see such calls."""
    return (type(x) is torch.Tensor and x.is_cuda and not _is_compiling() and
            not _needs_autograd(x, *params))


def linear(x, weight, bias=None, activation="none"):
    """torch.ops.jitgemm.linear, calling the CUDA kernel directly where _direct allows."""
    if _direct(x, weight, bias):
        return _kernels.linear(x, weight, bias, activation)
    return torch.ops.jitgemm.linear(x, weight, bias, activation)


def grouped_linear(x, weight, bias=None, activation="none"):
    """torch.ops.jitgemm.grouped_linear, calling the CUDA kernel directly where _direct
    allows."""
    if _direct(x, weight, bias):
        return _kernels.grouped_linear(x, weight, bias, activation)
    return torch.ops.jitgemm.grouped_linear(x, weight, bias, activation)


def gated_linear(x, weight, bias=None, activation="silu"):
    """torch.ops.jitgemm.gated_linear, calling the CUDA kernel directly where _direct allows."""
    if _direct(x, weight, bias):
        return _kernels.gated_linear(x, weight, bias, activation)
    return torch.ops.jitgemm.gated_linear(x, weight, bias, activation)


def matmul(a, b):
    return torch.ops.jitgemm.matmul(a, b)


__all__ = ["CaptureMissError", "clear_plans", "gated_linear", "grouped_linear", "linear", "matmul",
           "plans", "set_capture_policy", "set_options"]
