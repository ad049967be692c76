"""The CUDA implementations of the ops: describe the tensors as one GEMM problem,
find its plan, allocate the output and launch on the current torch stream.

No input is copied; the grouped linear's output is written straight into its
(B, G, Dout) layout as one batched problem over the groups.

Thread safety: as the plan table (any thread).
"""

from __future__ import annotations

import math
from typing import Callable, Dict, Optional, Union

import torch
import torch.nn.functional as F

from .. import _lib
from ..plan import BIAS_NONE, BIAS_PER_COLUMN, GATE_HALVES, ROW_MAJOR, Plan
from . import _plan_table
from ._operands import (DTYPE_CODES, activation_code, alignment, check_dims, check_tensor,
                        matrix)

try:  # the private entry points cost a fraction of the public ones
    _raw_stream = torch._C._cuda_getCurrentRawStream
    _current_device = torch._C._cuda_getDevice
except AttributeError:
    def _raw_stream(device_index: int) -> int:
        return torch.cuda.current_stream(device_index).cuda_stream

    _current_device = torch.cuda.current_device

_ACTIVATION_FNS = {
    0: lambda t: t,
    1: torch.relu,
    2: lambda t: F.gelu(t, approximate="tanh"),
    3: F.gelu,
    4: F.silu,
}


def _problem(dtype: int, m: int, n: int, k: int, batch: int, a: tuple, b: tuple, d: tuple,
             bias: int, bias_stride: int, act: int, gate: int = 0) -> _lib.Problem:
    p = _lib.Problem()
    p.m, p.n, p.k, p.batch_count = m, n, k, batch
    p.a = _lib.Operand(dtype, *a)
    p.b = _lib.Operand(dtype, *b)
    p.c = _lib.Operand(dtype, ROW_MAJOR, 0, d[2])
    p.d = _lib.Operand(dtype, *d)
    p.alpha, p.beta = 1.0, 0.0
    p.bias_mode, p.activation, p.bias_batch_stride = bias, act, bias_stride
    p.gate = gate
    return p


class _Call:
    """What a call with a given signature launches: its plan key, output shape, problem,
    and the plans it ran with from 16-byte aligned pointers, by stream."""

    __slots__ = ("key", "out_shape", "out_strides", "build", "plans")

    def __init__(self, key: tuple, out_shape: tuple, build: Callable[[], _lib.Problem]):
        self.key, self.out_shape, self.build = key, out_shape, build
        strides, size = [], 1
        for dim in reversed(out_shape):
            strides.append(size)
            size *= max(dim, 1)
        self.out_strides = tuple(reversed(strides))  # contiguous
        self.plans: Dict[int, Plan] = {}


# Signature (shapes, strides, dtypes, devices, activation) -> _Call, so that a
# repeated call skips the checks, the layout work and the plan table: the host
# cost per call is one signature tuple, one dict lookup, the output
# allocation, one dict lookup by stream and the launch. Cleared with the plan
# table (set_options, clear), so that it never holds a plan the table dropped.
_described: Dict[tuple, _Call] = {}
_plan_table.on_change(_described.clear)


def _run(sig: tuple, describe: Callable[[], Union[_Call, torch.Tensor]], device: torch.device,
         a_t: torch.Tensor, b_t: torch.Tensor, bias_t: Optional[torch.Tensor]) -> torch.Tensor:
    call = _described.get(sig)
    if call is None:
        call = describe()
        if isinstance(call, torch.Tensor):  # empty or K == 0: nothing to launch
            return call
        _described[sig] = call
    # empty_strided parses its arguments in a fraction of torch.empty's time.
    out = torch.empty_strided(call.out_shape, call.out_strides, dtype=a_t.dtype, device=device)
    a, b, d = a_t.data_ptr(), b_t.data_ptr(), out.data_ptr()
    bias = 0 if bias_t is None else bias_t.data_ptr()
    index = device.index
    stream = _raw_stream(index)
    if (a | b | d | bias) & 15:  # the plan promises only the alignment the pointers have
        align = alignment(a, b, d, bias)
        plan = _plan_table.get(call.key + (index, align), stream, index, align, call.build)
    else:
        plan = call.plans.get(stream)
        if plan is None:
            plan = _plan_table.get(call.key + (index, 16), stream, index, 16, call.build)
            call.plans[stream] = plan
    if _current_device() == index:
        plan.run(a, b, d, 0, bias, stream)
    else:
        with torch.cuda.device(index):
            plan.run(a, b, d, 0, bias, stream)
    return out


def _tensor_sig(t: Optional[torch.Tensor]) -> Optional[tuple]:
    return None if t is None else (t.shape, t.stride(), t.dtype, t.device)


def _without_k(out: torch.Tensor, bias: Optional[torch.Tensor], act: int) -> torch.Tensor:
    # K == 0: the product is zero; only bias and activation remain.
    out.zero_()
    if bias is not None:
        out += bias
    return out.copy_(_ACTIVATION_FNS[act](out))


def _flatten(op: str, name: str, t: torch.Tensor, shape: tuple) -> torch.Tensor:
    # The leading dims as one (shape[0] is -1), counted here: view cannot infer
    # -1 beside a dimension of size 0 (K == 0).
    shape = (math.prod(t.shape[:t.dim() - len(shape) + 1]), *shape[1:])
    try:
        return t.view(shape)
    except (RuntimeError, ValueError):  # fake tensors raise ValueError
        raise ValueError(f"{op}: {name}: the leading dimensions of shape {tuple(t.shape)} with "
                         f"strides {tuple(t.stride())} cannot be flattened without a copy; "
                         "pass a .contiguous() tensor") from None


def _check_bias(op: str, bias: torch.Tensor, x: torch.Tensor, shape: tuple, fake=False) -> None:
    check_tensor(op, "bias", bias, x, fake)
    if tuple(bias.shape) != shape:
        raise ValueError(f"{op}: bias: expected shape {shape}, got {tuple(bias.shape)}")
    if shape[-1] > 1 and bias.stride(-1) != 1:
        raise ValueError(f"{op}: bias: the last dimension must have stride 1, got strides "
                         f"{tuple(bias.stride())}")


def check_linear(x, weight, bias, activation, fake=False) -> int:
    op = "jitgemm.linear"
    act = activation_code(op, activation)
    check_tensor(op, "x", x, None, fake)
    check_tensor(op, "weight", weight, x, fake)
    check_dims(op, "x", x, tuple(range(1, 64)), "at least 1 dimension (..., in_features)")
    check_dims(op, "weight", weight, (2,), "a 2-D (out_features, in_features) tensor")
    if x.shape[-1] != weight.shape[1]:
        raise ValueError(f"{op}: x: last dimension {x.shape[-1]} differs from weight's "
                         f"in_features {weight.shape[1]}")
    if bias is not None:
        _check_bias(op, bias, x, (weight.shape[0],), fake)
    return act


# Defaults as in the schemas: PyTorch's dispatcher may leave trailing
# arguments that equal their defaults out of the call.
def linear(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
           activation: str = "none") -> torch.Tensor:
    device = x.device
    sig = ("linear", x.shape, x.stride(), x.dtype, device, weight.shape, weight.stride(),
           weight.dtype, weight.device, _tensor_sig(bias), activation)
    return _run(sig, lambda: _describe_linear(x, weight, bias, activation), device, x, weight,
                bias)


def _describe_linear(x, weight, bias, activation) -> Union[_Call, torch.Tensor]:
    op = "jitgemm.linear"
    act = check_linear(x, weight, bias, activation)
    n, k = weight.shape
    x2 = _flatten(op, "x", x, (-1, k))
    m = x2.shape[0]
    out_shape = (*x.shape[:-1], n)
    if m == 0 or n == 0:
        return torch.empty(out_shape, dtype=x.dtype, device=x.device)
    if k == 0:
        out = torch.empty((m, n), dtype=x.dtype, device=x.device)
        return _without_k(out, bias, act).view(out_shape)
    a = matrix(op, "x", x, m, k, m, x2.stride(0), k, x2.stride(1))
    # The GEMM's B is weight^T (K x N).
    b = matrix(op, "weight", weight, k, n, k, weight.stride(1), n, weight.stride(0))
    dtype = DTYPE_CODES[x.dtype]
    bias_mode = BIAS_NONE if bias is None else BIAS_PER_COLUMN
    key = ("linear", dtype, m, n, k, a, b, bias_mode, act)
    return _Call(key, out_shape, lambda: _problem(dtype, m, n, k, 1, a + (-1,), b + (-1,),
                                                  (ROW_MAJOR, n, -1), bias_mode, 0, act))


def check_grouped(x, weight, bias, activation, fake=False) -> int:
    op = "jitgemm.grouped_linear"
    act = activation_code(op, activation)
    check_tensor(op, "x", x, None, fake)
    check_tensor(op, "weight", weight, x, fake)
    check_dims(op, "x", x, tuple(range(2, 64)), "(..., groups, in_features)")
    check_dims(op, "weight", weight, (3,), "a 3-D (groups, out_features, in_features) tensor")
    g, n, k = weight.shape
    if tuple(x.shape[-2:]) != (g, k):
        raise ValueError(f"{op}: x: last two dimensions {tuple(x.shape[-2:])} differ from "
                         f"weight's (groups, in_features) = {(g, k)}")
    if bias is not None:
        _check_bias(op, bias, x, (g, n), fake)
    return act


def grouped_linear(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
                   activation: str = "none") -> torch.Tensor:
    """y[..., g, :] = act(x[..., g, :] @ weight[g].T + bias[g]), one batched problem over g."""
    device = x.device
    sig = ("grouped", x.shape, x.stride(), x.dtype, device, weight.shape, weight.stride(),
           weight.dtype, weight.device, _tensor_sig(bias), activation)
    return _run(sig, lambda: _describe_grouped(x, weight, bias, activation), device, x, weight,
                bias)


def _describe_grouped(x, weight, bias, activation) -> Union[_Call, torch.Tensor]:
    op = "jitgemm.grouped_linear"
    act = check_grouped(x, weight, bias, activation)
    g, n, k = weight.shape
    x3 = _flatten(op, "x", x, (-1, g, k))
    rows = x3.shape[0]
    out_shape = (*x.shape[:-1], n)
    if rows == 0 or g == 0 or n == 0:
        return torch.empty(out_shape, dtype=x.dtype, device=x.device)
    if k == 0:
        out = torch.empty(out_shape, dtype=x.dtype, device=x.device)
        return _without_k(out, bias, act)
    a = matrix(op, "x", x, rows, k, rows, x3.stride(0), k, x3.stride(2)) + (x3.stride(1),)
    b = matrix(op, "weight", weight, k, n, k, weight.stride(2), n, weight.stride(1)) + (
        weight.stride(0),)
    d = (ROW_MAJOR, g * n, n)
    dtype = DTYPE_CODES[x.dtype]
    bias_mode = BIAS_NONE if bias is None else BIAS_PER_COLUMN
    bias_stride = 0 if bias is None else bias.stride(0)
    key = ("grouped", dtype, rows, n, k, g, a, b, bias_mode, bias_stride, act)
    return _Call(key, out_shape, lambda: _problem(dtype, rows, n, k, g, a, b, d, bias_mode,
                                                  bias_stride, act))


def check_gated(x, weight, bias, activation, fake=False) -> int:
    op = "jitgemm.gated_linear"
    act = activation_code(op, activation)
    check_tensor(op, "x", x, None, fake)
    check_tensor(op, "weight", weight, x, fake)
    check_dims(op, "x", x, tuple(range(1, 64)), "at least 1 dimension (..., in_features)")
    check_dims(op, "weight", weight, (2,),
               "a 2-D (2 * out_features, in_features) tensor, torch.cat([W_gate, W_up])")
    if weight.shape[0] % 2:
        raise ValueError(f"{op}: weight: first dimension {weight.shape[0]} is odd; expected "
                         "2 * out_features rows, torch.cat([W_gate, W_up])")
    if x.shape[-1] != weight.shape[1]:
        raise ValueError(f"{op}: x: last dimension {x.shape[-1]} differs from weight's "
                         f"in_features {weight.shape[1]}")
    if bias is not None:
        _check_bias(op, bias, x, (weight.shape[0],), fake)
    return act


def gated_linear(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
                 activation: str = "silu") -> torch.Tensor:
    """act(x W_gate^T + b_gate) * (x W_up^T + b_up), weight = torch.cat([W_gate, W_up]):
    one gated problem (B = weight^T, K x 2N) whose epilogue multiplies the halves."""
    device = x.device
    sig = ("gated", x.shape, x.stride(), x.dtype, device, weight.shape, weight.stride(),
           weight.dtype, weight.device, _tensor_sig(bias), activation)
    return _run(sig, lambda: _describe_gated(x, weight, bias, activation), device, x, weight,
                bias)


def _gated_without_k(out: torch.Tensor, bias: Optional[torch.Tensor], act: int,
                     n: int) -> torch.Tensor:
    # K == 0: both products are zero; the halves are the bias halves (or zero).
    if bias is None:
        return out.zero_()
    return out.copy_(_ACTIVATION_FNS[act](bias[:n]) * bias[n:])


def _describe_gated(x, weight, bias, activation) -> Union[_Call, torch.Tensor]:
    op = "jitgemm.gated_linear"
    act = check_gated(x, weight, bias, activation)
    two_n, k = weight.shape
    n = two_n // 2
    x2 = _flatten(op, "x", x, (-1, k))
    m = x2.shape[0]
    out_shape = (*x.shape[:-1], n)
    if m == 0 or n == 0:
        return torch.empty(out_shape, dtype=x.dtype, device=x.device)
    if k == 0:
        out = torch.empty((m, n), dtype=x.dtype, device=x.device)
        return _gated_without_k(out, bias, act, n).view(out_shape)
    a = matrix(op, "x", x, m, k, m, x2.stride(0), k, x2.stride(1))
    # B = weight^T is K x 2N: columns [0, N) the gate, [N, 2N) the up projection.
    b = matrix(op, "weight", weight, k, two_n, k, weight.stride(1), two_n, weight.stride(0))
    dtype = DTYPE_CODES[x.dtype]
    bias_mode = BIAS_NONE if bias is None else BIAS_PER_COLUMN
    key = ("gated", dtype, m, n, k, a, b, bias_mode, act)
    return _Call(key, out_shape, lambda: _problem(dtype, m, n, k, 1, a + (-1,), b + (-1,),
                                                  (ROW_MAJOR, n, -1), bias_mode, 0, act,
                                                  GATE_HALVES))


def check_matmul(a, b, fake=False) -> None:
    op = "jitgemm.matmul"
    check_tensor(op, "a", a, None, fake)
    check_tensor(op, "b", b, a, fake)
    check_dims(op, "a", a, (2, 3), "(M, K) or (batch, M, K)")
    check_dims(op, "b", b, (2, 3), "(K, N) or (batch, K, N)")
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"{op}: b: first matrix dimension {b.shape[-2]} differs from a's "
                         f"last {a.shape[-1]}")
    if a.dim() == 3 and b.dim() == 3 and a.shape[0] != b.shape[0]:
        raise ValueError(f"{op}: b: batch {b.shape[0]} differs from a's {a.shape[0]}")


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b for 2-D or batched 3-D operands with any row- or column-major strides."""
    device = a.device
    sig = ("matmul", a.shape, a.stride(), a.dtype, device, b.shape, b.stride(), b.dtype,
           b.device)
    return _run(sig, lambda: _describe_matmul(a, b), device, a, b, None)


def _describe_matmul(a, b) -> Union[_Call, torch.Tensor]:
    op = "jitgemm.matmul"
    check_matmul(a, b)
    m, k = a.shape[-2:]
    n = b.shape[-1]
    batch = a.shape[0] if a.dim() == 3 else (b.shape[0] if b.dim() == 3 else 1)
    batched = a.dim() == 3 or b.dim() == 3
    out_shape = (batch, m, n) if batched else (m, n)
    if batch == 0 or m == 0 or n == 0:
        return torch.empty(out_shape, dtype=a.dtype, device=a.device)
    if k == 0:
        return torch.zeros(out_shape, dtype=a.dtype, device=a.device)
    sa, sb = a.stride(), b.stride()
    lay_a = matrix(op, "a", a, m, k, m, sa[-2], k, sa[-1]) + (
        (sa[0] if a.dim() == 3 and batch > 1 else 0) if batched else -1,)
    lay_b = matrix(op, "b", b, k, n, k, sb[-2], n, sb[-1]) + (
        (sb[0] if b.dim() == 3 and batch > 1 else 0) if batched else -1,)
    d = (ROW_MAJOR, n, m * n if batched else -1)
    dtype = DTYPE_CODES[a.dtype]
    key = ("matmul", dtype, m, n, k, batch, lay_a, lay_b)
    return _Call(key, out_shape, lambda: _problem(dtype, m, n, k, batch, lay_a, lay_b, d,
                                                  BIAS_NONE, 0, 0))
