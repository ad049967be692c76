"""The random problems of gpu_check.py: torch.ops.jitgemm linear, grouped_linear and
gated_linear calls over the shapes, layouts (transposed weights, column-major and
unaligned inputs), dtypes and activations the ops accept, the references'
activations and error, and the NaN poisoning of outputs.

Each case is (description, op, args, with_gradients).
"""

import math
import random

import torch
import torch.nn.functional as F

import jitgemm  # noqa: F401  (registers torch.ops.jitgemm)

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
ACTS = ["none", "relu", "gelu", "gelu_tanh", "silu"]
# Relative Frobenius error allowed: output rounding dominates (fp32 accumulation).
TOL = {torch.float32: 2e-5, torch.float16: 3e-3, torch.bfloat16: 2e-2}
GRAD_TOL = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 5e-2}
SIZES = [1, 2, 3, 7, 8, 16, 31, 64, 100, 128, 257, 512, 1000]
FEATURES = [1, 8, 13, 64, 96, 255, 256, 512, 1024, 2048]


def ref_act(t: torch.Tensor, act: str) -> torch.Tensor:
    return {"none": lambda v: v, "relu": torch.relu, "gelu": F.gelu,
            "gelu_tanh": lambda v: F.gelu(v, approximate="tanh"), "silu": F.silu}[act](t)


def rel_err(got: torch.Tensor, want: torch.Tensor) -> float:
    if not torch.isfinite(got).all():
        return math.inf
    den = want.double().norm().item()
    num = (got.double() - want.double()).norm().item()
    return num / den if den > 0 else num


def poison(shape, dtype):
    # Free a NaN block of the output's size so torch.empty gets it back next.
    t = torch.full(shape, float("nan"), dtype=dtype, device="cuda")
    del t


def make_input(shape, dtype, unaligned: bool) -> torch.Tensor:
    n = math.prod(shape)
    if unaligned:  # offset by one element: pointers aligned to the element size only
        return torch.randn(n + 1, device="cuda", dtype=dtype)[1:].view(shape)
    return torch.randn(shape, device="cuda", dtype=dtype)


def linear_case(rng: random.Random, dtype, act, with_bias, grad):
    m, n, k = rng.choice(SIZES), rng.choice(FEATURES), rng.choice(FEATURES)
    lead = [m]
    if rng.random() < 0.4 and m > 1:
        lead = [rng.choice([1, 2, 3]), m]
    if rng.random() < 0.15:
        lead = [2, 2, m]
    if len(lead) == 1 and rng.random() < 0.1:  # column-major x: A col-major
        x = torch.randn(k, m, device="cuda", dtype=dtype).t()
    else:
        x = make_input(lead + [k], dtype, unaligned=rng.random() < 0.15)
    x.mul_(1 / math.sqrt(k))  # in place: keeps the strides and the offset
    if rng.random() < 0.25:  # a (in, out) weight given as its transpose: B row-major
        w = torch.randn(k, n, device="cuda", dtype=dtype).t()
    else:
        w = torch.randn(n, k, device="cuda", dtype=dtype)
    b = torch.randn(n, device="cuda", dtype=dtype) if with_bias else None
    desc = (f"linear {dtype_name(dtype)} x{tuple(x.shape)}{tuple(x.stride())} "
            f"w{tuple(w.shape)}{tuple(w.stride())} bias={with_bias} {act}")
    return desc, torch.ops.jitgemm.linear, (x, w, b, act), grad


def grouped_case(rng: random.Random, dtype, act, with_bias, grad):
    rows, g = rng.choice([1, 5, 64, 300, 2560 // 8]), rng.choice([1, 3, 12])
    din, dout = rng.choice([8, 64, 96, 128, 1024]), rng.choice([8, 64, 96, 256, 3072 // 4])
    if rng.random() < 0.25:  # group-major activations: x[:, g] rows are Din apart
        x = torch.randn(g, rows, din, device="cuda", dtype=dtype).permute(1, 0, 2)
    else:
        x = torch.randn(rows, g, din, device="cuda", dtype=dtype)
    x.mul_(1 / math.sqrt(din))
    if rng.random() < 0.25:  # the seed's (G, Din, Dout) weights, as a view: B row-major
        w = torch.randn(g, din, dout, device="cuda", dtype=dtype).transpose(1, 2)
    else:
        w = torch.randn(g, dout, din, device="cuda", dtype=dtype)
    b = torch.randn(g, dout, device="cuda", dtype=dtype) if with_bias else None
    desc = (f"grouped {dtype_name(dtype)} x{tuple(x.shape)}{tuple(x.stride())} "
            f"w{tuple(w.shape)}{tuple(w.stride())} bias={with_bias} {act}")
    return desc, torch.ops.jitgemm.grouped_linear, (x, w, b, act), grad


GATED_K = [64, 96, 256, 512, 1024, 2048]  # the sm90 family loads x by TMA: K % 8 == 0
GATED_N = [8, 13, 64, 96, 200, 256, 512, 1000, 1024]


def gated_case(rng: random.Random, dtype, act, with_bias, grad):
    """x (..., K) and weight torch.cat([W_gate, W_up]) (2N, K) inside the domain the sm90
    family serves (fp16/bf16, K a multiple of 8, 16-byte pointers)."""
    m, n, k = rng.choice(SIZES), rng.choice(GATED_N), rng.choice(GATED_K)
    lead = [m]
    if rng.random() < 0.4 and m > 1:
        lead = [rng.choice([1, 2, 3]), m]
    if rng.random() < 0.15:
        lead = [2, 2, m]
    x = torch.randn(lead + [k], device="cuda", dtype=dtype) / math.sqrt(k)
    if n % 8 == 0 and rng.random() < 0.25:  # a (in, 2N) weight as its transpose: B row-major
        w = torch.randn(k, 2 * n, device="cuda", dtype=dtype).t()
    else:
        w = torch.randn(2 * n, k, device="cuda", dtype=dtype)
    b = torch.randn(2 * n, device="cuda", dtype=dtype) if with_bias else None
    desc = (f"gated {dtype_name(dtype)} x{tuple(x.shape)} w{tuple(w.shape)}{tuple(w.stride())} "
            f"bias={with_bias} {act}")
    return desc, torch.ops.jitgemm.gated_linear, (x, w, b, act), grad


def gated_cases(count: int, seed: int):
    rng = random.Random(seed + 1)
    combos = [(d, a, bias) for d in (torch.float16, torch.bfloat16) for a in ACTS
              for bias in (False, True)]
    return [gated_case(rng, *combos[i % len(combos)], grad=i % 3 == 0) for i in range(count)]


def gated_outside_cases(seed: int):
    """Gated problems the sm90 family does not serve (fp32, K % 8 != 0, an unaligned x):
    served by another route once one exists; until then refused at plan creation."""
    rng = random.Random(seed + 2)
    cases = []
    for dtype, k, unaligned in ((torch.float32, 256, False), (torch.float16, 13, False),
                                (torch.bfloat16, 100, False), (torch.bfloat16, 256, True)):
        m, n = rng.choice([1, 8, 100]), rng.choice([64, 96])
        x = make_input([m, k], dtype, unaligned)
        x.mul_(1 / math.sqrt(k))
        w = torch.randn(2 * n, k, device="cuda", dtype=dtype)
        b = torch.randn(2 * n, device="cuda", dtype=dtype)
        desc = (f"gated {dtype_name(dtype)} x{tuple(x.shape)} w{tuple(w.shape)}"
                f"{' unaligned x' if unaligned else ''}")
        cases.append((desc, torch.ops.jitgemm.gated_linear, (x, w, b, "silu"), False))
    return cases


def dtype_name(dtype) -> str:
    return {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}[dtype]
