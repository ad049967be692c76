"""jitgemm.nn.Linear, a drop-in for torch.nn.Linear served by jitgemm,
replace_linears(model) to swap a model's Linear layers (fusing a following
ReLU, GELU or SiLU of an nn.Sequential into the GEMM), and GatedLinear, the
gate and up projections of a gated MLP (SwiGLU, GeGLU) as one GEMM.

    model = jitgemm.nn.replace_linears(model)    # same parameters, same state_dict
    gate_up = jitgemm.nn.GatedLinear.from_linears(mlp.gate_proj, mlp.up_proj)

Thread safety: modules as torch.nn's.
"""

from __future__ import annotations

from typing import Optional

import torch

from . import ops

ACTIVATION_MODULES = {
    torch.nn.ReLU: "relu",
    torch.nn.SiLU: "silu",
}


def _activation_of(module: torch.nn.Module) -> Optional[str]:
    if isinstance(module, torch.nn.GELU):
        return "gelu_tanh" if module.approximate == "tanh" else "gelu"
    for cls, name in ACTIVATION_MODULES.items():
        if isinstance(module, cls):
            return name
    return None


class Linear(torch.nn.Linear):
    """torch.nn.Linear (same parameters and state_dict) computed by jitgemm.linear, with an
    optional fused activation: "none", "relu", "gelu", "gelu_tanh" or "silu".

    Inputs the op cannot take without a copy (e.g. strides no GEMM layout expresses) are
    made contiguous first; CPU inputs fall back to torch.nn.functional.linear.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device=None, dtype=None, activation: str = "none"):
        super().__init__(in_features, out_features, bias, device, dtype)
        self.activation = activation

    @classmethod
    def from_linear(cls, linear: torch.nn.Linear, activation: str = "none") -> "Linear":
        """A Linear sharing `linear`'s parameters (no copy)."""
        new = cls.__new__(cls)
        torch.nn.Module.__init__(new)
        new.in_features, new.out_features = linear.in_features, linear.out_features
        new.weight = linear.weight
        new.bias = linear.bias
        new.activation = activation
        return new

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.device.type != "cuda":
            y = torch.nn.functional.linear(x, self.weight, self.bias)
            return _ACTIVATION_FNS[self.activation](y)
        if x.dim() > 1 and x.stride(-1) != 1:
            x = x.contiguous()
        return ops.linear(x, self.weight, self.bias, self.activation)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, activation={self.activation!r}"


class GatedLinear(torch.nn.Module):
    """act(x W_gate^T + b_gate) * (x W_up^T + b_up) computed by jitgemm.gated_linear:
    weight is (2 * out_features, in_features) = torch.cat([W_gate, W_up]), bias (if any)
    2 * out_features entries. activation "silu" is SwiGLU, "gelu"/"gelu_tanh" GeGLU.
    CPU inputs are computed with torch.nn.functional.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = False,
                 device=None, dtype=None, activation: str = "silu"):
        super().__init__()
        self.in_features, self.out_features, self.activation = (in_features, out_features,
                                                                 activation)
        kw = {"device": device, "dtype": dtype}
        # Initialised as two nn.Linear layers would be.
        gate = torch.nn.Linear(in_features, out_features, bias, **kw)
        up = torch.nn.Linear(in_features, out_features, bias, **kw)
        self.weight = torch.nn.Parameter(torch.cat([gate.weight.detach(), up.weight.detach()]))
        self.bias = (torch.nn.Parameter(torch.cat([gate.bias.detach(), up.bias.detach()]))
                     if bias else None)

    @classmethod
    def from_linears(cls, gate: torch.nn.Linear, up: torch.nn.Linear,
                     activation: str = "silu") -> "GatedLinear":
        """A GatedLinear holding a copy of two layers' parameters, concatenated."""
        if gate.weight.shape != up.weight.shape or (gate.bias is None) != (up.bias is None):
            raise ValueError(f"GatedLinear.from_linears: gate {tuple(gate.weight.shape)} "
                             f"(bias {gate.bias is not None}) and up {tuple(up.weight.shape)} "
                             f"(bias {up.bias is not None}) differ")
        new = cls.__new__(cls)
        torch.nn.Module.__init__(new)
        new.out_features, new.in_features = gate.weight.shape
        new.activation = activation
        new.weight = torch.nn.Parameter(torch.cat([gate.weight.detach(), up.weight.detach()]))
        new.bias = (torch.nn.Parameter(torch.cat([gate.bias.detach(), up.bias.detach()]))
                    if gate.bias is not None else None)
        return new

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.device.type != "cuda":
            z = torch.nn.functional.linear(x, self.weight, self.bias)
            g, u = z.chunk(2, dim=-1)
            return _ACTIVATION_FNS[self.activation](g) * u
        if x.dim() > 1 and x.stride(-1) != 1:
            x = x.contiguous()
        return ops.gated_linear(x, self.weight, self.bias, self.activation)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, activation={self.activation!r}")


_ACTIVATION_FNS = {
    "none": lambda t: t,
    "relu": torch.relu,
    "gelu": torch.nn.functional.gelu,
    "gelu_tanh": lambda t: torch.nn.functional.gelu(t, approximate="tanh"),
    "silu": torch.nn.functional.silu,
}


def replace_linears(model: torch.nn.Module, fuse_activations: bool = True) -> torch.nn.Module:
    """Replaces every torch.nn.Linear of `model` (in place) by jitgemm.nn.Linear sharing its
    parameters. In an nn.Sequential, a ReLU, GELU or SiLU right after a Linear is fused into
    it and replaced by nn.Identity (fuse_activations=False keeps them apart). Returns model.
    """
    if isinstance(model, torch.nn.Linear) and not isinstance(model, Linear):
        return Linear.from_linear(model)
    for name, child in list(model.named_children()):
        if isinstance(child, torch.nn.Linear) and not isinstance(child, Linear):
            setattr(model, name, Linear.from_linear(child))
        else:
            replace_linears(child, fuse_activations)
    if fuse_activations and isinstance(model, torch.nn.Sequential):
        names = list(model._modules.keys())
        for first, second in zip(names, names[1:]):
            lin, act = model._modules[first], model._modules[second]
            name = _activation_of(act) if act is not None else None
            if isinstance(lin, Linear) and lin.activation == "none" and name is not None:
                lin.activation = name
                model._modules[second] = torch.nn.Identity()
    return model
