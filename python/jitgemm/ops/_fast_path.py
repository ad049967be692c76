"""The ops' AutogradCUDA kernels: straight to the CUDA kernel when nothing needs autograd.

torch.library.register_autograd registers a Python kernel at the Autograd key
that, even when no input requires grad, builds a metadata object, enters
_AutoDispatchBelowAutograd and redispatches through the C++ dispatcher, which
converts the arguments again and calls the CUDA kernel as a second Python
function. That costs as much host time per call as the GEMM launch itself.

Here the kernel that register_autograd makes is kept (registered at Autograd,
as register_autograd would: it serves the other backends, meta and fake
tensors, and every call that needs a graph), and AutogradCUDA, which takes
precedence for CUDA tensors, gets a kernel that calls the CUDA kernel itself
when (a) grad mode is off or no argument requires grad, and (b) the dispatch
keys left below autograd lead straight to the CUDA kernel: no dispatch mode
(fake tensors, make_fx, torch.compile's tracing), no functionalization, no
functorch layer, no zero-tensor or other wrapper. Anything else goes through
register_autograd's kernel unchanged, so fake kernels, torch.compile, CUDA graph
capture and backward behave as before; the profiler still sees the op.

Thread safety: registration runs once, at import; the keyset memo is a dict
written with whole values (safe under the GIL).
"""

from __future__ import annotations

from typing import Callable, Dict

import torch

_C = torch._C
_grad_enabled = torch.is_grad_enabled

# What the shortcut needs from PyTorch's private bindings; without it the ops keep
# register_autograd's path.
_SUPPORTED = (hasattr(_C, "_after_autograd_keyset") and
              all(hasattr(_C.DispatchKeySet, m)
                  for m in ("raw_repr", "remove", "highestPriorityTypeId")))

# Keys below autograd that have no kernel of their own for a custom op (fallthroughs).
_FALLTHROUGH = ("ADInplaceOrView", "BackendSelect", "AutogradOther")
_after_autograd = _C._after_autograd_keyset if _SUPPORTED else None
for _name in _FALLTHROUGH if _SUPPORTED else ():
    _key = getattr(_C.DispatchKey, _name, None)
    if _key is not None:
        _after_autograd = _after_autograd.remove(_key)


def make_kernel(cuda_kernel: Callable, autograd_kernel: Callable,
                backend=_C.DispatchKey.CUDA) -> Callable:
    """The AutogradCUDA kernel (with_keyset=True) of an op taking (x, weight, bias=None,
    ...): register_autograd's kernel, or cuda_kernel itself where nothing needs autograd.
    (`backend` other than CUDA: the same kernel for another backend, for tests.)"""
    plain_keysets: Dict[int, bool] = {}  # raw keyset -> next kernel below autograd is ours

    def kernel(keyset, x, weight, *rest, **kwargs):
        plain = plain_keysets.get(keyset.raw_repr())
        if plain is None:
            plain = (keyset & _after_autograd).highestPriorityTypeId() == backend
            plain_keysets[keyset.raw_repr()] = plain
        # Written out rather than _any_requires_grad(*args): this runs on every call.
        if plain and not kwargs and not (_grad_enabled() and (
                x.requires_grad or weight.requires_grad or
                (rest and rest[0] is not None and rest[0].requires_grad))):
            return cuda_kernel(x, weight, *rest)
        return autograd_kernel(keyset, x, weight, *rest, **kwargs)
    return kernel


class AutogradKernels:
    """Passed as `lib` to torch.library.register_autograd: registers the kernel it makes
    on the real library, as register_autograd would, and keeps it for make_kernel."""

    def __init__(self, lib: torch.library.Library):
        self.lib = lib
        self.kernels: Dict[str, Callable] = {}

    def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False, **kwargs):
        self.lib.impl(op_name, fn, dispatch_key, with_keyset=with_keyset, **kwargs)
        if dispatch_key == "Autograd" and with_keyset:
            self.kernels[op_name] = fn


def register(lib: torch.library.Library, op_name: str, cuda_kernel: Callable, backward: Callable,
             setup_context: Callable, backend: str = "CUDA") -> None:
    """register_autograd for lib's op_name, plus the AutogradCUDA fast path when the
    autograd kernel could be kept (if a PyTorch release registers it otherwise, the op
    keeps register_autograd's path and only loses the shortcut)."""
    kept = AutogradKernels(lib)
    try:
        torch.library.register_autograd(f"{lib.ns}::{op_name}", backward,
                                        setup_context=setup_context, lib=kept)
    except (TypeError, AttributeError):  # a release that wants a real Library here
        torch.library.register_autograd(f"{lib.ns}::{op_name}", backward,
                                        setup_context=setup_context, lib=lib)
    autograd_kernel = kept.kernels.get(op_name)
    if autograd_kernel is not None and _SUPPORTED:
        kernel = make_kernel(cuda_kernel, autograd_kernel, getattr(_C.DispatchKey, backend))
        lib.impl(op_name, kernel, f"Autograd{backend}", with_keyset=True)
