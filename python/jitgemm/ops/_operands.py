"""Checks on the tensors given to the ops, and their description as GEMM operands.

Every message names the op and the tensor ("jitgemm.linear: weight: ..."), so a
user can tell which argument to fix. Nothing here copies: a tensor whose
strides no operand layout can express is refused, with the reason.

Thread safety: pure functions.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch

from ..plan import ACTIVATIONS, COL_MAJOR, ROW_MAJOR

DTYPE_CODES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}


def activation_code(op: str, activation: str) -> int:
    code = ACTIVATIONS.get(activation)
    if code is None:
        raise ValueError(f"{op}: activation: expected one of {sorted(ACTIVATIONS)}, "
                         f"got {activation!r}")
    return code


def check_tensor(op: str, name: str, t: torch.Tensor, like: Optional[torch.Tensor] = None,
                 fake: bool = False) -> None:
    """dtype (f32, f16, bf16; equal to `like`'s), device (CUDA; equal to `like`'s)."""
    if t.dtype not in DTYPE_CODES:
        raise TypeError(f"{op}: {name}: dtype {t.dtype} is not supported "
                        "(float32, float16 or bfloat16)")
    if like is not None and t.dtype != like.dtype:
        raise TypeError(f"{op}: {name}: dtype {t.dtype} differs from x's {like.dtype}")
    if like is not None and t.device != like.device:
        raise ValueError(f"{op}: {name}: on {t.device}, but x is on {like.device}")
    if not fake and t.device.type != "cuda":
        raise ValueError(f"{op}: {name}: on {t.device}; jitgemm runs on CUDA devices only")


def check_dims(op: str, name: str, t: torch.Tensor, dims: Tuple[int, ...], what: str) -> None:
    if t.dim() not in dims:
        raise ValueError(f"{op}: {name}: expected {what}, got shape {tuple(t.shape)}")


def matrix(op: str, name: str, t: torch.Tensor, rows: int, cols: int,
           size0: int, stride0: int, size1: int, stride1: int) -> Tuple[int, int]:
    """(layout, ld) of a rows x cols matrix whose dims have these sizes and strides.

    Row-major needs unit stride along the columns, column-major along the rows;
    a dimension of size 1 has no meaningful stride and fits either.
    """
    if stride1 == 1 or size1 == 1:
        ld = stride0 if size0 > 1 else cols
        if ld >= max(cols, 1):
            return ROW_MAJOR, max(ld, 1)
    if stride0 == 1 or size0 == 1:
        ld = stride1 if size1 > 1 else rows
        if ld >= max(rows, 1):
            return COL_MAJOR, max(ld, 1)
    raise ValueError(
        f"{op}: {name}: strides {tuple(t.stride())} (shape {tuple(t.shape)}) are not a row- or "
        "column-major matrix with non-overlapping rows; pass a .contiguous() tensor")


def alignment(*ptrs: int) -> int:
    """The largest of 16, 8, 4, 2 bytes that every non-zero pointer is aligned to."""
    acc = 16
    for p in ptrs:
        if p:
            acc = min(acc, p & -p)
    return max(acc, 1)
