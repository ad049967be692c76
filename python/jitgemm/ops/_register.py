"""Registers torch.ops.jitgemm.{linear, grouped_linear, gated_linear, matmul} with
torch.library: the CUDA kernels, fake (meta) kernels for torch.compile, and autograd.

The backward passes are GEMMs served by jitgemm plans too:
  linear          dx = dz W (linear with W^T as weight), dW = dz^T x (matmul), db = sum dz
  grouped_linear  dx = grouped_linear(dz, W^T per group), dW = batched dz^T x (matmul)
  gated_linear    z = x W^T + b recomputed (linear over 2N), dz = [act'(z_gate) * grad * z_up
                  | grad * act(z_gate)] (torch elementwise ops), then as linear
where dz is the gradient before the activation (recomputed for gelu and silu,
which need the pre-activation value; relu reads its output). Second
derivatives are not supported (matmul has no backward).

Thread safety: registration runs once, at import.
"""

from __future__ import annotations

import torch

from . import _fast_path, _kernels

_LIB = torch.library.Library("jitgemm", "DEF")
_LIB.define("linear(Tensor x, Tensor weight, Tensor? bias=None, str activation='none') -> Tensor")
_LIB.define("grouped_linear(Tensor x, Tensor weight, Tensor? bias=None, "
            "str activation='none') -> Tensor")
_LIB.define("gated_linear(Tensor x, Tensor weight, Tensor? bias=None, "
            "str activation='silu') -> Tensor")
_LIB.define("matmul(Tensor a, Tensor b) -> Tensor")

_LIB.impl("linear", _kernels.linear, "CUDA")
_LIB.impl("grouped_linear", _kernels.grouped_linear, "CUDA")
_LIB.impl("gated_linear", _kernels.gated_linear, "CUDA")
_LIB.impl("matmul", _kernels.matmul, "CUDA")


def _cpu(name: str):
    def refuse(*args, **kwargs):
        raise ValueError(f"jitgemm.{name}: the tensors are on the CPU; jitgemm runs on CUDA "
                         "devices only")
    return refuse


for _name in ("linear", "grouped_linear", "gated_linear", "matmul"):
    _LIB.impl(_name, _cpu(_name), "CPU")


@torch.library.register_fake("jitgemm::linear")
def _linear_fake(x, weight, bias=None, activation="none"):
    _kernels.check_linear(x, weight, bias, activation, fake=True)
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


@torch.library.register_fake("jitgemm::grouped_linear")
def _grouped_fake(x, weight, bias=None, activation="none"):
    _kernels.check_grouped(x, weight, bias, activation, fake=True)
    return x.new_empty((*x.shape[:-1], weight.shape[1]))


@torch.library.register_fake("jitgemm::gated_linear")
def _gated_fake(x, weight, bias=None, activation="silu"):
    _kernels.check_gated(x, weight, bias, activation, fake=True)
    return x.new_empty((*x.shape[:-1], weight.shape[0] // 2))


@torch.library.register_fake("jitgemm::matmul")
def _matmul_fake(a, b):
    _kernels.check_matmul(a, b, fake=True)
    m, n = a.shape[-2], b.shape[-1]
    if a.dim() == 3 or b.dim() == 3:
        batch = a.shape[0] if a.dim() == 3 else b.shape[0]
        return a.new_empty((batch, m, n))
    return a.new_empty((m, n))


def _setup(ctx, inputs, output):
    x, weight, bias, activation = inputs
    ctx.activation = activation
    ctx.has_bias = bias is not None
    ctx.save_for_backward(x, weight, bias if bias is not None else None,
                          output if activation == "relu" else None)


def _pre_activation_grad(ctx, grad, op, x, weight, bias, out):
    """The gradient with respect to x W^T + b, from the gradient of the output."""
    act = ctx.activation
    if act == "none":
        return grad.contiguous()
    if act == "relu":
        return torch.ops.aten.threshold_backward(grad, out, 0).contiguous()
    z = op(x, weight, bias, "none")
    if act == "silu":
        return torch.ops.aten.silu_backward(grad, z).contiguous()
    approximate = "tanh" if act == "gelu_tanh" else "none"
    return torch.ops.aten.gelu_backward(grad, z, approximate=approximate).contiguous()


def _linear_backward(ctx, grad):
    x, weight, bias, out = ctx.saved_tensors
    dz = _pre_activation_grad(ctx, grad, torch.ops.jitgemm.linear, x, weight, bias, out)
    n, k = weight.shape
    dx = dw = db = None
    if ctx.needs_input_grad[0]:
        dx = torch.ops.jitgemm.linear(dz, weight.t())
    dz2 = dz.reshape(-1, n)
    if ctx.needs_input_grad[1]:
        dw = torch.ops.jitgemm.matmul(dz2.t(), x.reshape(-1, k))
    if ctx.has_bias and ctx.needs_input_grad[2]:
        db = dz2.sum(0)
    return dx, dw, db, None


def _grouped_backward(ctx, grad):
    x, weight, bias, out = ctx.saved_tensors
    dz = _pre_activation_grad(ctx, grad, torch.ops.jitgemm.grouped_linear, x, weight, bias, out)
    g, n, k = weight.shape
    dx = dw = db = None
    if ctx.needs_input_grad[0]:
        dx = torch.ops.jitgemm.grouped_linear(dz, weight.transpose(1, 2))
    dz3 = dz.reshape(-1, g, n)
    if ctx.needs_input_grad[1]:
        x3 = x.reshape(-1, g, k)
        dw = torch.ops.jitgemm.matmul(dz3.permute(1, 2, 0), x3.permute(1, 0, 2))
    if ctx.has_bias and ctx.needs_input_grad[2]:
        db = dz3.sum(0)
    return dx, dw, db, None


def _gated_backward(ctx, grad):
    """y = act(z_gate) * z_up with z = x W^T + b recomputed (one jitgemm GEMM over 2N):
    dz_gate = act'(z_gate) * grad * z_up, dz_up = grad * act(z_gate); then as linear."""
    x, weight, bias, _ = ctx.saved_tensors
    two_n, k = weight.shape
    n = two_n // 2
    z = torch.ops.jitgemm.linear(x, weight, bias, "none")
    z_gate, z_up = z[..., :n], z[..., n:]
    act = ctx.activation
    g_up = grad * z_up
    if act == "none":
        dz_gate, gated = g_up, z_gate
    elif act == "relu":
        dz_gate = torch.ops.aten.threshold_backward(g_up, z_gate, 0)
        gated = torch.relu(z_gate)
    elif act == "silu":
        dz_gate = torch.ops.aten.silu_backward(g_up, z_gate)
        gated = torch.nn.functional.silu(z_gate)
    else:
        approximate = "tanh" if act == "gelu_tanh" else "none"
        dz_gate = torch.ops.aten.gelu_backward(g_up, z_gate, approximate=approximate)
        gated = torch.nn.functional.gelu(z_gate, approximate=approximate)
    dz = torch.cat([dz_gate, grad * gated], dim=-1).contiguous()
    dx = dw = db = None
    if ctx.needs_input_grad[0]:
        dx = torch.ops.jitgemm.linear(dz, weight.t())
    dz2 = dz.reshape(-1, two_n)
    if ctx.needs_input_grad[1]:
        dw = torch.ops.jitgemm.matmul(dz2.t(), x.reshape(-1, k))
    if ctx.has_bias and ctx.needs_input_grad[2]:
        db = dz2.sum(0)
    return dx, dw, db, None


def _gated_setup(ctx, inputs, output):
    x, weight, bias, activation = inputs
    ctx.activation = activation
    ctx.has_bias = bias is not None
    ctx.save_for_backward(x, weight, bias, None)


# register_autograd's kernel at Autograd, and at AutogradCUDA a shortcut to the CUDA
# kernel for calls that need no autograd (see _fast_path).
_fast_path.register(_LIB, "linear", _kernels.linear, _linear_backward, _setup)
_fast_path.register(_LIB, "grouped_linear", _kernels.grouped_linear, _grouped_backward, _setup)
_fast_path.register(_LIB, "gated_linear", _kernels.gated_linear, _gated_backward, _gated_setup)
